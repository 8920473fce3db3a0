"""The mechanism of ``bounds="auto"``: a private centre, then each bound by the exponential
mechanism with a data-independent geometric base measure around it.

On a public grid ``g_0 < ... < g_{m-1}`` (the pooled rows given by their *slots*, as in
:mod:`dpfast.tables._quantile_em`: ``a_p`` rows ``< g_p``, ``b_p`` rows ``<= g_p``, ``n``
rows), with ``Δ`` the rows one person may hold and ``t(q) = floor(q n)``:

1. **Centre** (``ε_c = ε_b / 5``): an interval ``[g_j, g_{j+1}]`` by the exponential
   mechanism with utility ``-max(a_j - t(q_c), t(q_c) - b_{j+1}, 0)`` (the rank distance of
   the mid quantile ``q_c = (q_lo + q_hi) / 2`` to the interval) minus ``CENTRE_STEP`` (one
   rank) per grid step between the interval and the grid point nearest 0: a tie-breaker
   only.
2. **Each bound** (``ε_q = 2 ε_b / 5`` each): a grid point ``p`` by the exponential
   mechanism with utility ``v_p = u_p - s d_p``: ``u_p = -max(a_p - t(q), t(q) - b_p, 0)``
   the rank utility, ``d_p`` the number of grid steps from ``p`` to the centre interval and
   ``s = ceil(2 λ Δ / ε_q)`` an integer number of ranks per step (``λ = NATS_PER_STEP``).
   So ``P(p) ∝ μ_p exp(ε_q u_p / (2Δ))`` with the base measure ``μ_p ∝ exp(-κ d_p)``,
   ``κ = ε_q s / (2Δ) >= λ``: it depends on public values only (the grid, ε, Δ and the
   released centre), so the sensitivity of ``v`` is that of ``u``.

Without the base measure every candidate beyond the data ties (same ``u``) and the
mechanism picks uniformly over that plateau (bounds of ``±1e13`` on data in ``[0, 100]``);
with it a candidate ``j`` steps farther out than the best one has probability at most
``exp(-λ j)`` of it (:func:`steps_beyond`).  Every utility is an integer below ``2**53``,
sampled exactly by Gumbel-max (:func:`dpfast.selection.gumbel.exponential`) from a key
``BLAKE2b(key=release key, data=TAG || step)``, step 0, 1, 2 for centre, lo, hi.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.noise import _addressed
from dpfast.selection import gumbel as _gumbel

__all__ = ["TAG", "NATS_PER_STEP", "CENTRE_STEP", "split", "event", "ranks", "penalty",
           "centre_scores", "bound_scores", "choose", "steps_beyond"]

TAG = b"dpfast.tables.autobounds v2"
#: λ: the base measure's decay per grid step away from the centre (at least, in nats)
NATS_PER_STEP = 1
#: ranks per grid step of the centre's tie-breaker (towards the grid point nearest 0)
CENTRE_STEP = 1
_EXACT_INT = 1 << 53


def split(eps_b: Any) -> tuple[float, float]:
    """``(ε_c, ε_q)``: ``ε_b / 5`` for the centre, ``2 ε_b / 5`` for each bound, rounded
    down (``ε_c + 2 ε_q <= ε_b`` exactly)."""
    e = Fraction(eps_b)
    return float_down(e / 5), float_down(2 * e / 5)


def event(eps_b: Any) -> Any:
    """``Composed((Exponential(ε_c), SelfComposed(Exponential(ε_q), 2)))``."""
    eps_c, eps_q = split(eps_b)
    return _events.Composed((_events.Exponential(eps_c),
                             _events.SelfComposed(_events.Exponential(eps_q), 2)))


def ranks(slots: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` int64 of length ``m``: rows ``< g_p`` and rows ``<= g_p`` (slots as in
    :func:`dpfast.tables._quantile_em.slots_of`, all in ``[1, 2m - 1]``)."""
    cs = np.cumsum(np.bincount(np.asarray(slots, np.int64), minlength=2 * m)[:2 * m])
    return cs[0::2].astype(np.int64), cs[1::2].astype(np.int64)


def _target(n: int, q: Any) -> int:
    fq = Fraction(q)
    return (fq.numerator * n) // fq.denominator


def penalty(eps_q: Any, sensitivity: int, nats: Any = NATS_PER_STEP) -> int:
    """``s = ceil(2 λ Δ / ε_q)``: ranks per grid step, so ``κ = ε_q s / (2Δ) >= λ``."""
    f = Fraction(2) * Fraction(nats) * sensitivity / Fraction(eps_q)
    return max(1, -((-f.numerator) // f.denominator))


def _checked(v: np.ndarray, name: str) -> np.ndarray:
    if v.size and int(np.abs(v).max()) >= _EXACT_INT:
        raise ValueError(f"{name}: the utilities exceed 2**53 (epsilon too small for "
                         "bounds='auto' with this sensitivity); pass public bounds")
    return v.astype(np.float64)


def centre_scores(a: np.ndarray, b: np.ndarray, q: Any, zero: int) -> np.ndarray:
    """Scores of the intervals ``[g_j, g_{j+1}]``, ``j = 0 .. m-2`` (int64): rank utility
    of ``q`` minus ``CENTRE_STEP`` per step from the interval to grid index ``zero``."""
    m = a.shape[0]
    t = _target(int(b[-1]), q)
    j = np.arange(m - 1)
    u = -np.maximum(np.maximum(a[:-1] - t, t - b[1:]), 0)
    d = np.maximum(np.maximum(j - zero, zero - (j + 1)), 0)
    return u - CENTRE_STEP * d


def bound_scores(a: np.ndarray, b: np.ndarray, q: Any, centre: int, s: int) -> np.ndarray:
    """Scores of the grid points (int64): rank utility of ``q`` minus ``s`` per step from
    the point to the centre interval ``[g_centre, g_{centre+1}]``."""
    m = a.shape[0]
    t = _target(int(b[-1]), q)
    p = np.arange(m)
    u = -np.maximum(np.maximum(a - t, t - b), 0)
    d = np.maximum(np.maximum(centre - p, p - (centre + 1)), 0)
    return u - s * d


def _draw(v: np.ndarray, eps: float, sensitivity: int, rkey: bytes, step: int) -> int:
    key = _addressed.derive_key(rkey, TAG, step)
    return int(_gumbel.exponential(v, eps, sensitivity, rng=key))


def zero_index(g: np.ndarray) -> int:
    """Index of the grid point nearest 0 (the first such)."""
    return int(np.argmin(np.abs(g)))


def choose(slots: np.ndarray, g: np.ndarray, sensitivity: int, eps_b: float,
           qs: tuple[float, float], rkey: bytes) -> tuple[int, int, int]:
    """``(centre, lo, hi)`` grid indices for the kept rows' ``slots`` (centre: the interval
    ``[g_centre, g_{centre+1}]``).  ``eps_b``: the whole share (see :func:`split`)."""
    m = g.shape[0]
    if m == 1:
        return 0, 0, 0
    a, b = ranks(slots, m)
    eps_c, eps_q = split(eps_b)
    qc = (Fraction(qs[0]) + Fraction(qs[1])) / 2
    cv = _checked(centre_scores(a, b, qc, zero_index(g)), "centre")
    centre = 0 if m == 2 else _draw(cv, eps_c, sensitivity, rkey, 0)
    s = penalty(eps_q, sensitivity)
    out = [centre]
    for step, q in enumerate(qs, start=1):
        v = _checked(bound_scores(a, b, q, centre, s), "bounds")
        out.append(_draw(v, eps_q, sensitivity, rkey, step))
    return out[0], out[1], out[2]


def steps_beyond(alpha: float, nats: Any = NATS_PER_STEP) -> int:
    """Smallest ``j >= 1`` with ``2 exp(-λ j) / (1 - exp(-λ)) <= alpha``: with probability
    at least ``1 - alpha`` a bound is at most ``j`` grid steps farther from the centre than
    the best candidate (the point of largest rank utility nearest the centre).

    Proof: with ``p*`` that point, ``P(p) = μ_p e^{c u_p} / Z <= e^{c (v_p - v_{p*})} <=
    e^{-κ (d_p - d_{p*})}`` (``u_p <= u_{p*}``), at most two points lie at each distance
    from the centre interval, so ``P(d >= d_{p*} + j) <= Σ_{i >= j} 2 e^{-κ i}``, and
    ``κ >= λ``.  Computed with a margin (rounded up)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    lam = float(nats)
    j = max(1, math.ceil(math.log(2.0 / (alpha * (1.0 - math.exp(-lam)))) / lam
                         * (1 + 1e-12)))
    return j
