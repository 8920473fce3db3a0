"""The weighted-Gaussian key selection of :mod:`dpfast.tables._select` (its arithmetic).

Gopi, Gulhane, Kulkarni, Shen, Shokouhi, Yekhanin, "Differentially private set union"
(ICML 2020), the *weighted Gaussian* policy: a person who keeps ``t <= k`` keys after
bounding spreads an L2 norm of ``sqrt(k)`` over them, ``sqrt(k / t)`` each (the paper's
``1 / sqrt(t)`` scaled by ``sqrt(k)``), so a person with few keys counts more there; the
per-key weighted sums get Gaussian noise and a key is published iff its noisy sum reaches a
threshold.  Exact here on a fixed-point grid of the weights:

* weights: ``W(t) = floor(2**G sqrt(k / t))`` (``G =`` :data:`WEIGHT_BITS`), computed in
  integers (``isqrt(k 4**G // t)``), so ``t W(t)**2 <= k 4**G`` holds exactly and
  ``W(k) = 2**G``: a person's vector of added weights has L2 norm ``<= sqrt(k) 2**G``
  whatever ``t``;
* the weighted sums are exact int64 totals (``OverflowError`` past ``2**62``), the noise an
  exact discrete Gaussian of ``σ = 2**G σ_1`` (CKS20), ``σ_1`` the unit-sensitivity σ of
  the ``"gaussian"`` rule: ``ρ = k 4**G / (2 σ**2) = k / (2 σ_1**2)``-zCDP, the largest
  ``ρ`` implying ``(ε, δ/2)``-DP (CKS20, Cor. 13);
* the threshold ``τ`` (grid units; within a thousandth of a unit of the smallest) has
  ``δ_thr(τ) = max_t 1 - (1 - P(Z >= τ - W(t)))**t <= δ/2``: a key only the added person
  holds has the weighted sum ``W(t)``, and they hold at most ``t`` such keys.  Each tail is
  an upper bound (256-bit Euler-Maclaurin with its remainder,
  :mod:`dpfast.mechanisms._tails`); for ``t > 32`` the ``t`` are taken in buckets
  ``[a, b]`` bounded by ``1 - (1 - P(Z >= τ - W(a)))**b`` (``W`` decreasing, the exponent
  increasing): an upper bound, so ``δ`` is never understated.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np

from dpfast._core.rounding import float_down, float_up
from dpfast._core.search import smallest_true_int
from dpfast.mechanisms import DiscreteGaussianMechanism
from dpfast.mechanisms._calibrate import zcdp_delta
from dpfast.mechanisms._tails import _dg_normalizer_lower, _dg_tail_sum
from dpfast.mechanisms.gaussian import _largest_rho

__all__ = ["WEIGHT_BITS", "MAX_K", "weights", "plan_parts", "threshold_delta",
           "keep_probability"]

#: the weights' fixed-point grid ``2**-WEIGHT_BITS`` (a weight of 1 is ``2**16`` units)
WEIGHT_BITS = 16
#: largest ``max_partitions`` of the rule (``W(1) <= 2**(16 + 12)``: int64 totals of up
#: to ``2**34`` people per key)
MAX_K = 1 << 24
_PREC = 256
_EXACT_T = 32  # t <= this: every t on its own; above, geometric buckets


def weights(k: int) -> np.ndarray:
    """``W[t] = floor(2**G sqrt(k / t))`` for ``t = 0..k`` (``W[0] = 0``), int64."""
    big = k << (2 * WEIGHT_BITS)
    w = np.zeros(k + 1, np.int64)
    for t in range(1, k + 1):
        w[t] = math.isqrt(big // t)  # floor(sqrt(floor(x))) = floor(sqrt(x))
    return w


def _buckets(k: int) -> list[tuple[int, int]]:
    """``[(a, b)]`` covering ``1..k``: singletons up to 32, then ratio ~2**(1/8)."""
    out = [(t, t) for t in range(1, min(k, _EXACT_T) + 1)]
    a = _EXACT_T + 1
    while a <= k:
        b = min(k, max(a, int(a * 2 ** 0.125)))
        out.append((a, b))
        a = b + 1
    return out


class _Tail:
    """Upper bounds on ``P(Z >= m)`` for one discrete Gaussian (normalizer computed once)."""

    def __init__(self, sigma: Fraction) -> None:
        with mpmath.workprec(_PREC):
            self.s = mpmath.mpf(sigma.numerator) / sigma.denominator
            self.z = _dg_normalizer_lower(self.s)

    def upper(self, m: int) -> mpmath.mpf:
        """``>= P(Z >= m)`` (1 for ``m <= 0``)."""
        if m <= 0:
            return mpmath.mpf(1)
        with mpmath.workprec(_PREC):
            return min(_dg_tail_sum(m, self.s) / self.z, mpmath.mpf(1))


def _delta_of(tail: _Tail, tau: int, w: np.ndarray, buckets: list[tuple[int, int]],
              stop: float = math.inf) -> float:
    """``δ_thr(tau)`` rounded up; ``math.inf`` as soon as one bucket exceeds ``stop``
    (buckets from the largest ``t``, usually the worst, down)."""
    worst = mpmath.mpf(0)
    with mpmath.workprec(_PREC):
        for a, b in reversed(buckets):
            p = tail.upper(tau - int(w[a]))
            if p >= 1:
                return 1.0 if stop == math.inf else math.inf
            worst = max(worst, -mpmath.expm1(b * mpmath.log1p(-p)))
            if worst > stop:
                return math.inf
        dd = worst * (1 + mpmath.mpf(2) ** -200)
        f = float(dd)
        return f if f >= dd else math.nextafter(f, math.inf)


def threshold_delta(sigma: float, tau: int, k: int) -> float:
    """``δ_thr`` of threshold ``tau`` (grid units) for discrete Gaussian noise of ``sigma``
    (grid units): an upper bound on the chance that a key only the added person holds is
    published, maximised over their number of kept keys ``t <= k``; rounded up."""
    return _delta_of(_Tail(Fraction(sigma)), int(tau), weights(k), _buckets(k))


def _threshold(tail: _Tail, d: float, w: np.ndarray, k: int, sigma: float) -> int:
    """A threshold ``tau`` with ``δ_thr(tau) <= d``, within ``2**(G - 10)`` (a thousandth of
    a unit) of the smallest: gallop from a Gaussian-tail guess, then bisect."""
    bk = _buckets(k)

    def ok(tau: int) -> bool:
        return _delta_of(tail, tau, w, bk, d) <= d

    res = 1 << (WEIGHT_BITS - 10)
    step = max(res, int(sigma) // 16)
    guess = int(w[1]) + int(sigma * math.sqrt(2 * max(0.0, math.log(k) - math.log(d))))
    floor_ = int(w[1])  # tau <= W(1): a one-key person's lone key is kept w.p. >= 1/2
    return smallest_true_int(ok, guess, floor=floor_, step=step, res=res)


def plan_parts(e: float, d: float, k: int) -> tuple[float, int, float, np.ndarray]:
    """``(sigma, tau, delta, weights)`` of the weighted-Gaussian rule at ``(e, d)`` (all in
    grid units; ``delta = δ_noise + δ_thr``, rounded up, ``<= d``)."""
    if k > MAX_K:
        raise ValueError(f"max_partitions must be <= {MAX_K} for selection="
                         f"'weighted_gaussian', got {k}")
    d_noise = float_down(Fraction(d) / 2)
    d_thr = float_down(Fraction(d) - Fraction(d_noise))
    rho = _largest_rho(e, d_noise)
    unit = DiscreteGaussianMechanism(rho=float_down(Fraction(rho) / k), sensitivity=1)
    sigma = math.ldexp(unit.sigma, WEIGHT_BITS)  # exact: a power-of-two multiple
    s1 = Fraction(unit.sigma)
    dn = zcdp_delta(float_up(Fraction(k) / (2 * s1 * s1)), e)
    w = weights(k)
    w.flags.writeable = False
    tail = _Tail(Fraction(sigma))
    tau = _threshold(tail, d_thr, w, k, sigma)
    dt = _delta_of(tail, tau, w, _buckets(k))
    dd = float_up(Fraction(dn) + Fraction(dt))
    if dd > d:  # pragma: no cover - dn <= d_noise and dt <= d_thr by construction
        raise ValueError(f"weighted_gaussian key selection could not reach delta={d!r}")
    return sigma, tau, dd, w


def keep_probability(sigma: float, tau: int, measure: int) -> mpmath.mpf:
    """``P(measure + Z >= tau)`` for a key of weighted sum ``measure`` (grid units): an
    upper bound below the threshold (the tails that make δ), a lower bound at and above it
    (both within the tail bound's ``1e-13`` relative remainder)."""
    tail = _Tail(Fraction(sigma))
    m = int(tau) - int(measure)
    with mpmath.workprec(_PREC):
        if m >= 1:
            return tail.upper(m)
        return 1 - tail.upper(1 - m)  # P(Z >= m) = 1 - P(Z <= m - 1) = 1 - P(Z >= 1 - m)
