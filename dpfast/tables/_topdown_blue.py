"""TopDown's best linear unbiased estimate (``estimator="blue"``): exact noise variances,
and its intervals (normal, or with the own measurement's lattice where the noise is small).

The least squares of :mod:`dpfast.tables._wls` is the tree GLS (hence, by Gauss--Markov,
the BLUE) for independent measurements whose variances are the ones it is given: the
BLUE needs the measurements' *true* variances.  Level ``j``'s noise is the discrete
Gaussian ``N_Z(0, sigma_j^2)``, whose variance is slightly *below* ``sigma_j^2`` (by a
relative ``~ 4 pi^2 sigma^2 exp(-2 pi^2 sigma^2)``: about ``1e-3`` at ``sigma = 0.7``,
below float64's resolution from ``sigma ~ 1.9``).  :func:`discrete_gaussian_variance`
gives the exact variance (rounded up to a float), which ``estimator="blue"`` uses both
as the weights and for the standard errors.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from fractions import Fraction

import mpmath
import numpy as np

from dpfast._core.rounding import float_up
from dpfast._kernels import topdown as _k

__all__ = ["ESTIMATORS", "estimator_weights", "discrete_gaussian_variance", "level_variance",
           "normal_quantile", "gls_weights", "scale_up", "halfwidths", "lattice_halfwidth",
           "LATTICE_SIGMA"]

#: the estimators of :func:`dpfast.tables.topdown`: the default's least squares weighted by
#: ``sigma_j^2`` (then rounded), and the BLUE
ESTIMATORS = ("topdown", "blue")

#: below this per-level sigma the BLUE's intervals use the lattice-corrected law
#: (:func:`lattice_halfwidth`); from it on, normal (the lattice's steps in the error's
#: CDF are then below about ``2 phi(1.96) / sigma < 0.75%``)
LATTICE_SIGMA = 16.0

#: above this sigma the variance equals sigma^2 to far below float64's resolution
#: (relative gap < 4 pi^2 sigma^2 exp(-2 pi^2 sigma^2) < 1e-500)
_FLAT = 8.0


@functools.lru_cache(maxsize=256)
def discrete_gaussian_variance(sigma: float) -> float:
    """The exact variance of the discrete Gaussian ``P(k) ∝ exp(-k^2 / (2 sigma^2))`` on
    the integers, rounded up to a float64 (the safe side: intervals only widen).

    ``sigma`` is read as the exact binary rational it encodes.  For ``sigma <= 8`` the
    series ``sum k^2 p(k) / sum p(k)`` over ``|k| <= 40 sigma + 1`` (the remaining mass is
    below ``exp(-800)`` relative) in 60-digit arithmetic, widened by ``1e-50`` relative
    before rounding up, and capped at ``sigma^2`` rounded up (the variance is below
    ``sigma^2``: Canonne, Kamath, Steinke 2020, Sec. 2).  Above, the variance is
    ``sigma^2`` minus a relative ``< 1e-500`` (Poisson summation), so ``sigma^2`` computed
    exactly and rounded up is the variance rounded up.
    """
    s = float(sigma)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"sigma must be a finite number > 0, got {sigma!r}")
    if s > _FLAT:
        return float_up(Fraction(s) ** 2)
    with mpmath.workdps(60):
        two_s2 = 2 * mpmath.mpf(s) ** 2  # exact: 106 bits of mantissa
        kmax = int(math.ceil(40 * s)) + 1
        num = mpmath.mpf(0)
        den = mpmath.mpf(1)  # k = 0
        for k in range(1, kmax + 1):
            p = mpmath.exp(-mpmath.mpf(k * k) / two_s2)
            num += 2 * k * k * p
            den += 2 * p
        v = num / den * (1 + mpmath.mpf(10) ** -50)
        f = float(v)
        if mpmath.mpf(f) < v:
            f = math.nextafter(f, math.inf)
    # the variance is below sigma^2 (CKS20, Sec. 2): the margin never needs to pass it
    return min(f, float_up(Fraction(s) ** 2))


#: the smallest variance the least squares is given (see level_variance)
_FLOOR = 2.0 ** -200


def level_variance(sigma: float) -> float:
    """The variance the BLUE weights a level of noise ``sigma`` with:
    :func:`discrete_gaussian_variance`, raised to ``2^-200`` where it is smaller (``sigma``
    below about 0.06: the noise is then 0 with probability ``> 1 - 2^-200``, and float64
    weights of ``1 / variance`` would overflow).  Raising a variance is the safe side for
    the standard errors and moves the estimate by a relative ``< 2^-150``."""
    return max(discrete_gaussian_variance(sigma), _FLOOR)


def gls_weights(sigma: list[float], var: list[float]) -> tuple[list[float], float]:
    """The variances the BLUE's least squares is run with, and the factor ``c`` that turns
    its error variances into the exact ones: ``(var, 1.0)``, or ``([sigma_j^2], c)`` where
    the exact variances ``var`` are proportional to ``sigma_j^2`` (the same ``c = v_j /
    sigma_j^2`` at every measured level, to within ``2^-50`` relative, ``c`` the largest
    rounded up; every ``sigma_j^2 >= 2^-200``).

    The GLS depends on the variances only up to a common factor (the estimate is the same,
    its error variances scale with the factor), so there the BLUE *is* the default's least
    squares: computing it with the default's arithmetic makes it equal bit for bit (and its
    rounding the default release), where exact variances differing from ``sigma^2`` by
    float rounding alone would move it by ``~1e-13`` -- enough to break the many exact
    ties of the largest-remainder rounding differently (siblings share one correction
    and so one remainder)."""
    ratios = [Fraction(v) / Fraction(s) ** 2 for s, v in zip(sigma, var) if s > 0.0]
    sq = [s * s for s in sigma]
    if ratios and max(ratios) <= min(ratios) * (1 + Fraction(1, 2 ** 50)) and \
            min(q for q in sq if q > 0.0) >= _FLOOR:
        return sq, float_up(max(ratios))
    return list(var), 1.0


def estimator_weights(sigma: Sequence[float], estimator: str) -> tuple[list[float], float]:
    """The variances the least squares weights the levels with, and the factor that turns
    its error variances into the stated ones: ``([sigma_j^2], 1.0)`` for the default;
    for the BLUE the noise's exact variances, up to a common factor
    (:func:`gls_weights`)."""
    if estimator == "blue":
        return gls_weights(list(sigma), [0.0 if s == 0.0 else level_variance(s)
                                         for s in sigma])
    return [s * s for s in sigma], 1.0


_SPLIT = 134217729.0  # 2^27 + 1: Veltkamp's split of a float64 into two 26-bit halves


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = _SPLIT * a
    hi = c - (c - a)
    return hi, a - hi


def scale_up(F: np.ndarray, c: float) -> np.ndarray:
    """``F * c`` elementwise, each product rounded up (the smallest float ``>=`` the exact
    product): :func:`gls_weights`'s factor applied to the least squares' error variances
    without rounding them down.  The rounding error of each product is computed exactly
    (Dekker's two-product); where it cannot be (a product beyond about ``1e290`` or
    below about ``1e-271``, non-finite aside) a non-zero product is raised by one ulp
    regardless (the safe side)."""
    F = np.asarray(F, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        p = F * c
        fh, fl = _split(F)
        ch, cl = _split(np.asarray(c, dtype=np.float64))
        err = ((fh * ch - p) + fh * cl + fl * ch) + fl * cl  # F * c - p, exactly
        # Dekker's error is exact away from overflow and underflow
        a = np.abs(p)
        exact = np.isfinite(err) & (a < 2.0 ** 966) & (a > 2.0 ** -900)
        up = np.where(exact, err > 0, np.isfinite(p) & ((F != 0.0) & (c != 0.0)))
    return np.where(up, np.nextafter(p, np.inf), p)


def normal_quantile(alpha: float) -> float:
    """``z`` with ``P(|N(0, 1)| <= z) = 1 - alpha`` (the two-sided normal quantile)."""
    return statistics.NormalDist().inv_cdf(1.0 - float(alpha) / 2.0)


def _pmf(sigma: float) -> np.ndarray:
    """``P(Z = k)`` for ``k = 0 .. K`` of the discrete Gaussian ``N_Z(0, sigma^2)``,
    ``K = ceil(8 sigma) + 2`` (the mass beyond is below ``1e-14`` relative), normalised
    over ``|k| <= K``."""
    K = int(math.ceil(8.0 * sigma)) + 2
    k = np.arange(K + 1, dtype=np.float64)
    w = np.exp(-k * k / (2.0 * sigma * sigma))
    return w / (w[0] + 2.0 * w[1:].sum())


def _distinct(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(x, return_inverse=True)``, sorting only the runs' values (siblings are
    usually adjacent and share one variance: a census tree's 8.1M blocks are 84,414 runs)."""
    if x.shape[0] < 2:
        return np.unique(x, return_inverse=True)
    starts = np.flatnonzero(np.concatenate([[True], x[1:] != x[:-1]]))
    u, inv = np.unique(x[starts], return_inverse=True)
    return u, np.repeat(inv, np.diff(np.append(starts, x.shape[0])))


def lattice_halfwidth(F: np.ndarray, sigma: float, v: float, alpha: float) -> np.ndarray:
    """Per unit of a level measured with noise ``N_Z(0, sigma^2)`` of exact variance ``v``,
    the half-width ``h`` of the BLUE's ``1 - alpha`` interval under the *lattice-corrected*
    law of its error ``e``: the unit's own measurement exactly, the rest normal.

    The BLUE is linear, ``e = sum_k a_k Z_k`` over every measurement's noise, and the
    coefficient of the unit's own measurement is ``a = Cov(x_u, y_u) / v = F / v`` (GLS:
    the coefficient of ``y_k`` in ``x_u`` is ``Cov(x_u, x_k) / v_k``, here ``k = u``),
    so ``e = a Z + R`` with ``Z ~ N_Z(0, sigma^2)`` independent of ``R`` and ``Var R = F -
    a^2 v``.  The law used: ``Z`` exact (its lattice, which the normal law misses where
    ``a Z`` dominates: small ``sigma``, wide fan-out), ``R ~ N(0, F - a^2 v)``; it is the
    normal law where ``a Z`` is small and exact where ``R`` is.  ``h`` is the smallest
    with ``P(|aZ + R| > h) <= alpha`` under it, i.e. ``sum_z P(Z = z) [Phi(-(h - a z) / s)
    + Phi(-(h + a z) / s)] <= alpha``, per distinct ``F``: safeguarded Newton from the
    normal half-width inside ``(0, sqrt(2 (a^2 sigma^2 + s^2) ln(2/alpha))]`` (the
    sub-Gaussian bound, where that sum is at most ``alpha``), the safe end kept
    (:func:`dpfast._kernels.topdown.lattice_halfwidth`).
    An approximation
    (``R`` is itself a sum of discrete Gaussians), not a bound: its coverage is measured
    in the tests.
    """
    F = np.asarray(F, dtype=np.float64)
    out = np.zeros(F.shape, np.float64)
    pos = F > 0
    if not pos.any():
        return out
    u, inv = _distinct(F[pos])
    a = np.minimum(u / v, 1.0)
    s2 = np.maximum(u - a * a * v, 0.0)
    p = _pmf(float(sigma))
    w = np.concatenate([p[:1], 2.0 * p[1:]])  # z and -z give the same miss probability
    hi = np.sqrt(2.0 * (a * a * float(sigma) ** 2 + s2) * math.log(2.0 / alpha))
    hi = hi * (1.0 + 1e-9) + 1e-300
    h = np.empty_like(hi)
    x0 = normal_quantile(alpha) * np.sqrt(u)  # the normal interval: Newton's start
    _k.lattice_halfwidth(a, np.sqrt(s2), hi, w, float(alpha), x0, h)
    out[pos] = h[inv]
    return out


def halfwidths(variances: list[np.ndarray], sigma: list[float], alpha: float
               ) -> list[np.ndarray]:
    """Per level, the BLUE's ``1 - alpha`` half-widths: :func:`lattice_halfwidth` where the
    level's ``0 < sigma_j < LATTICE_SIGMA`` (a data-independent rule: the noise
    parameters only), else normal ``z_(1 - alpha/2) sqrt(F)`` (0 for an exact root)."""
    z = normal_quantile(alpha)
    out = []
    for F, s in zip(variances, sigma):
        if 0.0 < s < LATTICE_SIGMA:
            out.append(lattice_halfwidth(F, s, level_variance(s), alpha))
        else:
            out.append(np.sqrt(F) * z)
    return out
