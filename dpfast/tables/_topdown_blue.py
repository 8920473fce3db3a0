"""TopDown's best linear unbiased estimate (``estimator="blue"``): exact noise variances,
the normal quantile of its intervals.

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
from fractions import Fraction

import mpmath

from dpfast._core.rounding import float_up

__all__ = ["discrete_gaussian_variance", "level_variance", "normal_quantile"]

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


def normal_quantile(alpha: float) -> float:
    """``z`` with ``P(|N(0, 1)| <= z) = 1 - alpha`` (the two-sided normal quantile)."""
    return statistics.NormalDist().inv_cdf(1.0 - float(alpha) / 2.0)
