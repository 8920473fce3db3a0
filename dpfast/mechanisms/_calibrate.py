"""Calibration math for mechanisms: noise scales from privacy parameters.

Pure functions of floats (numpy/scipy and :mod:`dpfast._core` only).
Every function rounds to the safe side: a returned ``sigma`` is never smaller than
the exact smallest ``sigma`` that gives the guarantee, and a returned ``delta`` is
never smaller than the exact ``delta``.

Functions
---------
analytic_gaussian_delta, analytic_gaussian_sigma
    Exact (epsilon, delta) of the Gaussian mechanism (Balle & Wang 2018, Thm. 8).
gaussian_sigma_zcdp
    ``sigma`` for ``rho``-zCDP (Bun & Steinke 2016); also valid for the discrete
    Gaussian (CKS20, Thm. 4).
discrete_gaussian_delta, discrete_gaussian_sigma
    Exact (epsilon, delta) of the 1-D discrete Gaussian mechanism (CKS20, Thm. 7).
zcdp_delta
    (epsilon, delta) implied by ``rho``-zCDP (CKS20, Cor. 13): the conservative
    route for multivariate discrete Gaussian noise.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import special

from dpfast._core import conversions as _conversions
from dpfast._core.rounding import ULP as _ULP
from dpfast._core.search import smallest_true
from dpfast._core.validate import check_nonneg, check_positive, check_probability, check_whole

__all__ = [
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "gaussian_sigma_zcdp",
    "discrete_gaussian_delta",
    "discrete_gaussian_sigma",
    "zcdp_delta",
]

def _int_sensitivity(x: object) -> int:
    if isinstance(x, float) and not x.is_integer():
        raise TypeError(f"sensitivity must be an integer, got {x!r}")
    return check_whole(x, "sensitivity", minimum=1)


def _bisect_sigma(ok, guess: float, rtol: float = 1e-12, what: str = "calibration") -> float:
    """Smallest ``sigma`` (up to ``rtol``, rounded up) with ``ok(sigma)``; ok is monotone.

    Bounded (:func:`dpfast._core.search.smallest_true`): ``ValueError`` naming ``what``
    when no finite ``sigma`` meets the target."""
    return smallest_true(ok, guess, rtol=rtol, what=what)


def _log_ratio(dl: float) -> float:
    """``log(1.25 / delta)`` without overflow for subnormal ``delta``."""
    return math.log(1.25) - math.log(dl)


# --------------------------------------------------------------------------- Gaussian


def analytic_gaussian_delta(epsilon: float, sigma: float, sensitivity: float = 1.0) -> float:
    """Exact ``delta`` of the Gaussian mechanism at ``epsilon`` (rounded up).

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    sigma : float
        Standard deviation of the noise (> 0).
    sensitivity : float
        L2 sensitivity ``Delta`` (> 0).

    Returns
    -------
    float
        ``delta(eps) = Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``.

    Privacy
    -------
    Balle & Wang 2018, Theorem 8: ``f(x) + N(0, s^2 I)`` with
    ``||f(x) - f(x')||_2 <= D`` is ``(eps, delta)``-DP iff ``delta >= delta(eps)``;
    the neighbouring relation is whichever ``D`` was computed for.

    Numerics
    --------
    Written as ``Phi(a) * (-expm1(eps + log Phi(b) - log Phi(a)))`` with
    ``scipy.special.log_ndtr`` (no cancellation), then inflated by a bound on the
    rounding error.
    """
    e = check_nonneg(epsilon, "epsilon")
    s = check_positive(sigma, "sigma")
    d = check_positive(sensitivity, "sensitivity")
    return _agauss_delta(e, s, d)


def _agauss_delta(e: float, s: float, d: float) -> float:
    a = d / (2.0 * s) - e * s / d
    b = -d / (2.0 * s) - e * s / d
    la = float(special.log_ndtr(a))
    lb = float(special.log_ndtr(b))
    x = e + lb - la  # < 0
    if x >= 0.0:
        return 0.0
    val = math.exp(la) * -math.expm1(x)
    err = 16 * _ULP * (abs(e) + abs(la) + abs(lb) + a * a + b * b + 4.0)
    rel = err / min(abs(x), 1.0) + err + 8 * _ULP
    return min(1.0, math.nextafter(val * (1.0 + rel), math.inf))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest ``sigma`` for which the Gaussian mechanism is ``(epsilon, delta)``-DP.

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    delta : float
        In ``(0, 1)``.
    sensitivity : float
        L2 sensitivity (> 0).

    Returns
    -------
    float
        ``sigma`` with ``analytic_gaussian_delta(epsilon, sigma) <= delta``, within
        ``1e-12`` relative of the exact smallest one and never below it.

    Privacy
    -------
    Balle & Wang 2018, "Improving the Gaussian Mechanism", Theorem 8 / Algorithm 1
    (analytic Gaussian mechanism); bisection on the exact ``delta(eps, sigma)``, which
    decreases in ``sigma``.

    Numerics
    --------
    The bracket's upper end is returned, so the guarantee holds for the returned float.
    """
    e = check_nonneg(epsilon, "epsilon")
    dl = check_probability(delta, "delta")
    d = check_positive(sensitivity, "sensitivity")
    guess = d * math.sqrt(2.0 * _log_ratio(dl)) / max(e, 1e-3)
    return _bisect_sigma(lambda s: _agauss_delta(e, s, d) <= dl, guess,
                         what=f"Gaussian calibration at epsilon={epsilon!r}, delta={delta!r}")


def gaussian_sigma_zcdp(rho: float, sensitivity: float = 1.0) -> float:
    """``sigma = sensitivity / sqrt(2 rho)``, rounded up: Gaussian noise for ``rho``-zCDP.

    Privacy
    -------
    Bun & Steinke 2016, Proposition 1.6: ``N(0, s^2)`` noise on an L2-sensitivity-``D``
    query is ``D^2 / (2 s^2)``-zCDP.  The same holds for the discrete Gaussian with an
    integer sensitivity (CKS20, Theorem 4).
    """
    r = check_positive(rho, "rho")
    d = check_positive(sensitivity, "sensitivity")
    s = d / math.sqrt(2.0 * r) if 2.0 * r < math.inf else 0.0
    if not math.isfinite(s):
        raise ValueError(f"rho={rho!r} is too small for sensitivity {sensitivity!r}: sigma "
                         f"= sensitivity / sqrt(2 rho) overflows")
    if s < 2.0 ** -1022:  # 0 or subnormal: no normal float sigma is certified
        raise ValueError(f"rho={rho!r} is too large for sensitivity {sensitivity!r}: sigma "
                         f"= sensitivity / sqrt(2 rho) is below 2**-1022")
    # certify: D^2 / (2 s^2) <= rho in exact arithmetic
    while Fraction(d) ** 2 / (2 * Fraction(s) ** 2) > Fraction(r):
        s = math.nextafter(s, math.inf)
    return s


# --------------------------------------------------------------------------- discrete Gaussian


def _dg_normalizer_lower(s: float) -> float:
    """Lower bound on ``Z = sum_y exp(-y^2 / (2 s^2))``."""
    if s >= 1.0:
        # Poisson summation: Z = s sqrt(2 pi) (1 + 2 sum_k exp(-2 pi^2 s^2 k^2))
        th = 1.0 + 2.0 * sum(math.exp(-2.0 * math.pi**2 * s * s * k * k) for k in range(1, 4))
        z = s * math.sqrt(2.0 * math.pi) * th
    else:
        y = np.arange(-60, 61, dtype=np.float64)
        z = math.fsum(np.exp(-y * y / (2.0 * s * s)))
    return z * (1.0 - 16 * _ULP)


_DG_EXACT_MAX_SIGMA = 1e5


def discrete_gaussian_delta(epsilon: float, sigma: float, sensitivity: int = 1) -> float:
    """``delta`` of the 1-D discrete Gaussian mechanism at ``epsilon`` (rounded up).

    Parameters
    ----------
    epsilon : float
        ``>= 0``.
    sigma : float
        Parameter of ``N_Z(0, sigma^2)``, ``P(y) ~ exp(-y^2 / (2 sigma^2))`` (> 0).
    sensitivity : int
        Integer sensitivity ``D >= 1`` of the (scalar) query.

    Returns
    -------
    float
        ``delta = P[Y > eps s^2/D - D/2] - e^eps P[Y > eps s^2/D + D/2]``, ``Y ~ N_Z(0, s^2)``.

    Privacy
    -------
    CKS20 Theorem 7 (exact for one dimension, neighbours differ by at most ``D``).  For
    ``sigma > 1e5`` the sum is replaced by the conservative zCDP route
    (``rho = D^2/(2 s^2)``, CKS20 Cor. 13), which is an upper bound.  For vector queries
    use :func:`zcdp_delta` with ``rho = D_2^2 / (2 sigma^2)``.

    Numerics
    --------
    The two tails are combined term by term,
    ``sum_{y > t} p(y) (1 - exp(eps - (2 y D + D^2)/(2 s^2)))`` with ``t = eps s^2/D - D/2``,
    whose terms are all positive; the sum runs over ``t < y <= max(t, 0) + 10 s + 2`` (the
    rest is below ``exp(-50)`` relative and covered by a relative margin).  The
    normaliser is bounded below, the sum rounded up.
    """
    e = check_nonneg(epsilon, "epsilon")
    s = check_positive(sigma, "sigma")
    d = _int_sensitivity(sensitivity)
    return _dg_delta(e, s, d)


def _dg_delta(e: float, s: float, d: int) -> float:
    if s > _DG_EXACT_MAX_SIGMA:
        return _zcdp_delta(d * d / (2.0 * s * s) * (1.0 + 8 * _ULP), e)
    s2 = s * s
    t = e * s2 / d - d / 2.0
    y0 = max(math.floor(t) + 1, -math.ceil(10.0 * s) - 2)
    y1 = math.ceil(max(t, 0.0) + 10.0 * s) + 2
    if y1 < y0:
        return 0.0
    y = np.arange(y0, y1 + 1, dtype=np.float64)
    w = np.exp(-y * y / (2.0 * s2)) * -np.expm1(e - (2.0 * y * d + d * d) / (2.0 * s2))
    w = np.maximum(w, 0.0)
    tot = math.fsum(w)
    z = _dg_normalizer_lower(s)
    val = tot / z
    # rounding of the terms, plus the truncated tails (< exp(-50) relative, see docstring)
    margin = val * (64 * _ULP * (1.0 + e + (abs(t) + 10 * s) ** 2 / (2.0 * s2))
                    + 1e-20 * (1.0 + s))
    return min(1.0, math.nextafter(val + margin, math.inf))


def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: int = 1) -> float:
    """Smallest ``sigma`` (to ``1e-9`` relative, rounded up) for ``(epsilon, delta)``-DP.

    Privacy
    -------
    Bisection on :func:`discrete_gaussian_delta` (CKS20 Theorem 7, 1-D, integer
    sensitivity), which decreases in ``sigma``.
    """
    e = check_nonneg(epsilon, "epsilon")
    dl = check_probability(delta, "delta")
    d = _int_sensitivity(sensitivity)
    guess = d * math.sqrt(2.0 * _log_ratio(dl)) / max(e, 1e-3)
    return _bisect_sigma(lambda s: _dg_delta(e, s, d) <= dl, guess, rtol=1e-9,
                         what=f"discrete Gaussian calibration at epsilon={epsilon!r}, "
                              f"delta={delta!r}")


# --------------------------------------------------------------------------- zCDP


def _zcdp_delta(rho: float, eps: float) -> float:
    return _conversions.zcdp_delta(rho, eps)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """``delta`` such that ``rho``-zCDP implies ``(epsilon, delta)``-DP (rounded up).

    Privacy
    -------
    CKS20 Corollary 13 (:func:`dpfast._core.conversions.zcdp_delta`, the one copy).
    """
    return _conversions.zcdp_delta(check_nonneg(rho, "rho"), check_nonneg(epsilon, "epsilon"))
