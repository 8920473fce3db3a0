"""The mechanism of ``bounds="auto"``: a private scale and centre, then each bound by the
exponential mechanism with a data-independent geometric base measure around the centre.

On a public grid ``g_0 < ... < g_{m-1}`` (the pooled rows given by their *slots*, as in
:mod:`dpfast.tables._quantile_em`: ``a_p`` rows ``< g_p``, ``b_p`` rows ``<= g_p``, ``n``
rows), with ``Δ`` the rows one person may hold and ``t(q) = floor(q n)``; the rank
utility of an interval ``[x, y]`` of a grid is ``-max(a(x) - t, t - b(y), 0)`` and of a
point ``-max(a_p - t, t - b_p, 0)`` (minus the rank distance of ``t`` to its rows):

1. **Scale** (``ε_b / 6``): an interval ``[h_i, h_{i+1}]`` of the magnitudes
   ``h = unique(|g|)``: the exponential mechanism on the rank utility of the median of
   ``|x|`` minus ``ceil(2 λ_0 Δ / ε_s)`` ranks per step ``i`` from the smallest magnitude
   (``λ_0 = PRIOR_NATS``: a weak prior for smaller scales, which decides only when the
   rank signal is weak).  Its upper end ``S`` sets the *candidates* of the next steps
   (:func:`kept`): 0 and the grid points with ``|g_p| >= 2**-FLOOR_OCTAVES S``.  This
   drops the many tiny magnitudes of the float grid far below the data's scale, where
   integer-valued data has no rows: they would all tie.
2. **Centre** (``ε_b / 6``): an interval of consecutive candidates, by the exponential
   mechanism on the rank utility of the mid quantile ``q_c = (q_lo + q_hi) / 2`` minus
   ``ceil(2 λ_0 Δ / ε_c)`` ranks per candidate step between the interval and the
   candidate nearest 0 (the same weak prior).  With few rows (below the stated ``n``)
   these priors make the bounds fall near 0 (narrow: clamping bias) instead of anywhere
   on the grid (out to ``±2**62``: noise without bound).
3. **Each bound** (``ε_b / 3`` each): a candidate ``p`` by the exponential mechanism with
   utility ``v_p = u_p - s d_p``: ``u_p`` the rank utility of ``q``, ``d_p`` the candidate
   steps from ``p`` to the centre interval and ``s = ceil(2 λ Δ / ε_q)`` an integer number
   of ranks per step (``λ = NATS_PER_STEP``).  So ``P(p) ∝ μ_p exp(ε_q u_p / (2Δ))`` with
   the base measure ``μ_p ∝ exp(-κ d_p)``, ``κ = ε_q s / (2Δ) >= λ``: it depends on public
   values only (the grid, ε, Δ and the released scale and centre), so the sensitivity of
   ``v`` is that of ``u``.

Without the base measure every candidate beyond the data ties (same ``u``) and the
mechanism picks uniformly over that plateau (bounds of ``±1e13`` on data in ``[0, 100]``);
with it a candidate ``j`` steps farther out than the best one has probability at most
``exp(-λ j)`` of it (:func:`steps_beyond`).  Each step towards the centre is worth ``s``
ranks, so where the rank signal is weak (few rows) a bound is pulled inwards (more
clamping), never outwards.  Every utility is an integer below ``2**53``, sampled exactly
by Gumbel-max (:func:`dpfast.selection.gumbel.exponential`) from the key
``BLAKE2b(key=release key, data=TAG || step)``, step 0, 1, 2, 3 for scale, centre, lo, hi.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.noise import _addressed
from dpfast.selection import gumbel as _gumbel

__all__ = ["TAG", "NATS_PER_STEP", "PRIOR_NATS", "FLOOR_OCTAVES", "Choice", "split",
           "event", "ranks", "penalty", "interval_scores", "magnitudes", "kept",
           "bound_scores", "choose", "steps_beyond"]

TAG = b"dpfast.tables.autobounds v2"
#: λ: the base measure's decay per candidate step away from the centre (at least, in nats)
NATS_PER_STEP = 1
#: λ_0: the scale's and the centre's weak prior towards 0, in nats per step (at least)
PRIOR_NATS = Fraction(1, 10)
#: the candidates: 0 and the grid points of magnitude at least 2**-FLOOR_OCTAVES times
#: the released scale
FLOOR_OCTAVES = 8
_EXACT_INT = 1 << 53


class Choice(NamedTuple):
    """Grid indices of the bounds, and the released scale and centre intervals (values)."""

    lo: int
    hi: int
    scale: tuple[float, float]
    centre: tuple[float, float]


def split(eps_b: float | Fraction) -> tuple[float, float, float]:
    """``(ε_s, ε_c, ε_q)``: ``ε_b / 6`` for the scale and for the centre, ``ε_b / 3`` for
    each bound, rounded down (``ε_s + ε_c + 2 ε_q <= ε_b`` exactly)."""
    e = Fraction(eps_b)
    return float_down(e / 6), float_down(e / 6), float_down(e / 3)


def event(eps_b: float | Fraction) -> _events.Composed:
    """``Composed((SelfComposed(Exponential(ε_b/6), 2), SelfComposed(Exponential(ε_b/3),
    2)))`` (rounded down)."""
    eps_s, _, eps_q = split(eps_b)
    return _events.Composed((_events.SelfComposed(_events.Exponential(eps_s), 2),
                             _events.SelfComposed(_events.Exponential(eps_q), 2)))


def ranks(slots: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``(a, b)`` int64 of length ``m``: rows ``< g_p`` and rows ``<= g_p`` (slots as in
    :func:`dpfast.tables._quantile_em.slots_of`, all in ``[1, 2m - 1]``)."""
    cs = np.cumsum(np.bincount(np.asarray(slots, np.int64), minlength=2 * m)[:2 * m])
    return cs[0::2].astype(np.int64), cs[1::2].astype(np.int64)


def _target(n: int, q: float | Fraction) -> int:
    fq = Fraction(q)
    return (fq.numerator * n) // fq.denominator


def penalty(eps_q: float | Fraction, sensitivity: int,
            nats: float | Fraction = NATS_PER_STEP) -> int:
    """``s = ceil(2 λ Δ / ε_q)``: ranks per candidate step, so ``κ = ε_q s / (2Δ) >= λ``."""
    f = Fraction(2) * Fraction(nats) * sensitivity / Fraction(eps_q)
    return max(1, -((-f.numerator) // f.denominator))


def _checked(v: np.ndarray) -> np.ndarray:
    if v.size and int(np.abs(v).max()) >= _EXACT_INT:
        raise ValueError("bounds='auto': the utilities exceed 2**53 (epsilon too small "
                         "for this sensitivity); pass public bounds")
    return v.astype(np.float64)


def interval_scores(a: np.ndarray, b: np.ndarray, q: float | Fraction, zero: int, n: int, step: int
                    ) -> np.ndarray:
    """Scores of the intervals ``[x_j, x_{j+1}]`` of a grid ``x`` (ranks ``a``, ``b`` of
    the ``n`` rows), ``j = 0 .. len - 2`` (int64): the rank utility of ``q`` minus ``step``
    ranks per step from the interval to index ``zero``."""
    m = a.shape[0]
    t = _target(n, q)
    u = -np.maximum(np.maximum(a[:-1] - t, t - b[1:]), 0)
    j = np.arange(m - 1)
    return u - step * np.maximum(np.maximum(j - zero, zero - (j + 1)), 0)


def magnitudes(g: np.ndarray) -> np.ndarray:
    """The scale's grid: the distinct ``|g_p|``, increasing."""
    return np.unique(np.abs(g))


def kept(g: np.ndarray, scale_top: float) -> np.ndarray:
    """Mask of the candidates given the released scale's upper end: 0 and the grid
    points with ``|g_p| >= 2**-FLOOR_OCTAVES scale_top`` (public values only)."""
    return (g == 0) | (np.abs(g) >= np.ldexp(scale_top, -FLOOR_OCTAVES))


def bound_scores(a: np.ndarray, b: np.ndarray, q: float | Fraction, centre: int, s: int, n: int
                 ) -> np.ndarray:
    """Scores of the candidates (int64; ranks ``a``, ``b`` of the ``n`` rows on the
    candidates): the rank utility of ``q`` minus ``s`` per step from the candidate to the
    centre interval ``[centre, centre + 1]`` (candidate indices)."""
    t = _target(n, q)
    u = -np.maximum(np.maximum(a - t, t - b), 0)
    p = np.arange(a.shape[0])
    return u - s * np.maximum(np.maximum(centre - p, p - (centre + 1)), 0)


def _draw(v: np.ndarray, eps: float, sensitivity: int, rkey: bytes, step: int) -> int:
    if v.shape[0] == 1:
        return 0
    key = _addressed.derive_key(rkey, TAG, step)
    return int(_gumbel.exponential(_checked(v), eps, sensitivity, rng=key))


def zero_index(g: np.ndarray) -> int:
    """Index of the grid point nearest 0 (the first such)."""
    return int(np.argmin(np.abs(g)))


def choose(slots: np.ndarray, mag_slots: np.ndarray, g: np.ndarray, sensitivity: int,
           eps_b: float, qs: tuple[float, float], rkey: bytes) -> Choice:
    """The bounds of the kept rows (their ``slots`` on ``g`` and ``mag_slots``, the slots
    of their magnitudes on :func:`magnitudes`); ``eps_b``: the whole share."""
    m = g.shape[0]
    h = magnitudes(g)
    eps_s, eps_c, eps_q = split(eps_b)
    s = penalty(eps_q, sensitivity)
    ss, sc = penalty(eps_s, sensitivity, PRIOR_NATS), penalty(eps_c, sensitivity, PRIOR_NATS)
    n = int(slots.shape[0])
    if n + max(s, ss, sc) * m >= _EXACT_INT:
        raise ValueError("bounds='auto': the utilities would exceed 2**53 (epsilon too "
                         "small for this sensitivity); pass public bounds")
    # 1. scale: the median magnitude's interval of h
    ah, bh = ranks(mag_slots, h.shape[0])
    js = _draw(interval_scores(ah, bh, Fraction(1, 2), 0, n, ss), eps_s, sensitivity,
               rkey, 0) if h.shape[0] > 1 else 0
    scale = (float(h[js]), float(h[min(js + 1, h.shape[0] - 1)]))
    # 2. centre: an interval of consecutive candidates
    idx = np.flatnonzero(kept(g, scale[1]))
    a, b = ranks(slots, m)
    ak, bk, gk = a[idx], b[idx], g[idx]
    qc = (Fraction(qs[0]) + Fraction(qs[1])) / 2
    mk = idx.shape[0]
    jc = _draw(interval_scores(ak, bk, qc, zero_index(gk), n, sc), eps_c, sensitivity,
               rkey, 1) if mk > 1 else 0
    centre = (float(gk[jc]), float(gk[min(jc + 1, mk - 1)]))
    # 3. each bound: rank utility minus s per candidate step from the centre
    out = [int(idx[_draw(bound_scores(ak, bk, q, jc, s, n), eps_q, sensitivity, rkey,
                         step)]) for step, q in ((2, qs[0]), (3, qs[1]))]
    return Choice(out[0], out[1], scale, centre)


def steps_beyond(alpha: float, nats: float | Fraction = NATS_PER_STEP) -> int:
    """Smallest ``j >= 1`` with ``2 exp(-λ j) / (1 - exp(-λ)) <= alpha``: with probability
    at least ``1 - alpha`` a bound is at most ``j`` candidate steps farther from the centre
    than the best candidate ``p*`` (of largest rank utility, the nearest the centre among
    those).  Whatever ``n``, ``ε`` and the number of candidates.

    Proof: with ``p*`` that point, ``P(p) = μ_p e^{c u_p} / Z <= e^{c (v_p - v_{p*})} <=
    e^{-κ (d_p - d_{p*})}`` (``Z >= e^{c v_{p*}}``, ``u_p <= u_{p*}``), at most two
    candidates lie at each distance from the centre interval, so
    ``P(d >= d_{p*} + j) <= Σ_{i >= j} 2 e^{-κ i}``, and ``κ >= λ``.  Computed with a
    margin (rounded up)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    lam = float(nats)
    j = max(1, math.ceil(math.log(2.0 / (alpha * (1.0 - math.exp(-lam)))) / lam
                         * (1 + 1e-12)))
    return j
