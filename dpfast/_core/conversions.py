"""The DP conversions, written once: RDP and zCDP to ``(epsilon, delta)``-DP.

Canonne, Kamath & Steinke 2020 (CKS20), "The Discrete Gaussian for Differential Privacy":

* Prop. 12: ``(a, tau)``-RDP implies ``(eps, delta)``-DP with
  ``eps = tau + log(1 - 1/a) - (log delta + log a) / (a - 1)``, equivalently
  ``log delta = (a - 1)(tau - eps + log(1 - 1/a)) - log a``;
* Cor. 13: ``rho``-zCDP is ``(a, a rho)``-RDP for every ``a > 1``, so the infimum over
  ``a`` of the Prop. 12 bound applies.

Every value returned is the bound at one particular order (any order gives a valid bound),
rounded up by a bound on its floating-point error; the order is chosen close to optimal.
The zCDP conversions never fail for a valid input: they return the bound, ``0`` or
``inf`` / ``1`` where that is the correct value.

The RDP functions take validated float64 arrays (the accountants validate); the zCDP
functions validate their arguments.

The budget's caps go the other way (the largest RDP value / ``rho`` that still implies a
given ``(epsilon, delta)``): :func:`rdp_cap` and :func:`zcdp_cap` evaluate Prop. 12 at 200
bits (mpmath, imported on first use) and round down through :func:`mp_float_down`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfast._core.rounding import ULP, up
from dpfast._core.validate import check_nonneg, check_probability

if TYPE_CHECKING:
    from fractions import Fraction

    import mpmath

__all__ = [
    "up_array",
    "rdp_to_epsilon",
    "rdp_to_delta",
    "zcdp_epsilon",
    "zcdp_delta",
    "rdp_cap",
    "zcdp_cap",
    "mp_float_down",
    "mp_float_up",
    "mp_fraction_up",
]

_TINY_REL = 1e-15  # floor of the relative rounding margin of up_array
_T_LO, _T_HI = -745.0, 709.0  # log(a - 1) range searched (exp stays finite)


def up_array(x: np.ndarray | float, rel: np.ndarray | float = 0.0) -> np.ndarray:
    """Round ``x`` (>= 0 or inf, elementwise) up by a relative margin ``rel`` plus one ulp."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        y = x * (1.0 + np.maximum(rel, _TINY_REL))
    y = np.where(np.isnan(y), x, y)  # 0 * inf
    return np.nextafter(y, np.inf)


# --------------------------------------------------------------------------- RDP (Prop. 12)


def rdp_to_epsilon(a: np.ndarray, r: np.ndarray, d: float) -> tuple[float, float]:
    """``(epsilon, order)``: the smallest Prop. 12 bound over the orders ``a``.

    ``a`` (orders > 1) and ``r`` (RDP values >= 0 or inf) are float64 arrays of one shape;
    ``0 <= d <= 1``.  ``delta^2 >= 1 - exp(-tau)`` gives ``epsilon = 0`` (total variation
    via Bretagnolle-Huber, ``D_1 <= D_a``).  ``order`` is ``nan`` when no order gives a
    finite bound.
    """
    if d == 1.0:
        return 0.0, float(a[0])
    if d == 0.0:
        if np.all(r == 0):
            return 0.0, float(a[0])
        return math.inf, math.nan
    logd = math.log(d)
    with np.errstate(over="ignore", invalid="ignore"):
        t1 = np.log1p(-1.0 / a)
        t2 = (logd + np.log(a)) / (a - 1.0)
        eps = r + t1 - t2
        err = 8.0 * ULP * (np.abs(r) + np.abs(t1) + np.abs(t2) + 1.0)
        eps = np.nextafter(eps + err, np.inf)
        # total-variation case: delta^2 >= 1 - exp(-r)  =>  epsilon = 0
        tv = (d * d) * (1.0 - 4 * ULP) > -np.expm1(-r) * (1.0 + 4 * ULP)
    eps = np.where(tv, 0.0, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    i = int(np.argmin(eps))
    e = float(eps[i])
    if e == math.inf:
        return math.inf, math.nan
    return max(0.0, e), float(a[i])


def rdp_to_delta(a: np.ndarray, r: np.ndarray, e: float) -> tuple[float, float]:
    """``(delta, order)``: the smallest Prop. 12 bound (or the TV bound) over the orders."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        tv = 0.5 * np.log1p(-np.exp(-r))
        tv = tv + 8 * ULP * (np.abs(tv) + 1.0)
        t = (a - 1.0) * (r - e + np.log1p(-1.0 / a)) - np.log(a)
        t = t + 8 * ULP * ((a - 1.0) * (np.abs(r) + e + 1.0) + np.abs(np.log(a)) + 1.0)
        logd = np.minimum(np.where(np.isnan(tv), np.inf, tv), np.where(np.isnan(t), np.inf, t))
    i = int(np.argmin(logd))
    ld = float(logd[i])
    dlt = 1.0 if ld >= 0 else float(np.nextafter(math.exp(ld) * (1 + 4 * ULP), np.inf))
    return min(dlt, 1.0), float(a[i])


# --------------------------------------------------------------------------- zCDP (Cor. 13)
#
# Both searches run over t = log(a - 1), so a = 1 + e^t never rounds to 1 and
# log(1 - 1/a) = t - log1p(e^t) is never log(0).  Each objective is unimodal in a (its
# derivative changes sign once), so bisection on the sign of the derivative finds the
# optimal order; the bound is then evaluated there with a rigorous rounding margin.


def _log1p_exp(t: float) -> float:
    """``log(1 + e^t)`` for any finite ``t``."""
    return t + math.log1p(math.exp(-t)) if t > 0 else math.log1p(math.exp(t))


def _log1m_inv(t: float) -> float:
    """``log(1 - 1/a)`` at ``a = 1 + e^t``, without cancellation: ``-log1p(e^-t)``."""
    return -math.log1p(math.exp(-t)) if t > -700.0 else t - math.log1p(math.exp(t))


def _bisect_sign(g, lo: float, hi: float) -> float:
    """A point where the increasing function ``g`` changes sign in ``[lo, hi]``."""
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if g(mid) < 0.0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _zcdp_eps_at(rho: float, logd: float, t: float) -> float:
    """Cor. 13's epsilon at the order ``a = 1 + e^t``, rounded up (``inf`` if it overflows)."""
    et = math.exp(t)
    la = _log1p_exp(t)  # log a
    em = math.exp(-t) if t > -700.0 else math.inf  # 1 / (a - 1)
    lm = _log1m_inv(t)  # log(1 - 1/a)
    arho = (1.0 + et) * rho
    tail = (logd + la) * em  # (log delta + log a) / (a - 1)
    v = arho + lm - tail
    err = 16 * ULP * (arho + abs(lm) + (abs(logd) + la) * em) + 4 * ULP * abs(v)
    if math.isnan(v) or math.isnan(err):
        return math.inf
    return math.nextafter(v + err, math.inf)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ``epsilon`` (CKS20 Cor. 13) with ``rho``-zCDP => ``(epsilon, delta)``-DP.

    ``eps = inf_{a > 1} a rho + log(1 - 1/a) - (log delta + log a) / (a - 1)``, never
    worse than the classical ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016,
    Prop. 1.3).  ``rho >= 0`` (``inf`` allowed: returns ``inf``), ``0 < delta < 1``.

    Numerics
    --------
    The optimal order solves ``rho (a-1)^2 + log delta + log a = 0`` (the derivative of the
    bound in ``a``, increasing); it is located by bisection in ``log(a - 1)`` and the bound
    evaluated there, rounded up by a bound on its rounding error.
    """
    rho = check_nonneg(rho, "rho", allow_inf=True)
    d = check_probability(delta, "delta")
    if rho == 0.0:
        return 0.0
    if math.isinf(rho):
        return math.inf
    logd = math.log(d)

    def slope(t: float) -> float:  # sign of d eps / d a at a = 1 + e^t
        return (rho * math.exp(2.0 * t) if t < 354.0 else math.inf) + logd + _log1p_exp(t)

    t_star = _bisect_sign(slope, _T_LO, _T_HI)
    best = min(_zcdp_eps_at(rho, logd, t) for t in (t_star, _T_LO, _T_HI))
    classic = up(rho + 2.0 * math.sqrt(rho * -logd), 8)
    return max(0.0, min(best, classic))


def _zcdp_logdelta_at(rho: float, eps: float, t: float) -> float:
    """Log of Cor. 13's delta at the order ``a = 1 + e^t``, rounded up."""
    et = math.exp(t)
    la = _log1p_exp(t)
    a = 1.0 + et
    arho = a * rho
    lm = _log1m_inv(t)
    inner = arho - eps + lm  # a rho - eps + log(1 - 1/a)
    v = et * inner - la
    if math.isnan(v):
        return 0.0  # inf - inf: no information, the trivial bound delta <= 1
    if math.isinf(v):
        return v
    err = (16 * ULP * et) * (arho + eps + abs(lm)) + 16 * ULP * la + 4 * ULP * abs(v)
    return v + err


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest ``delta`` (CKS20 Cor. 13) with ``rho``-zCDP => ``(epsilon, delta)``-DP.

    ``delta = inf_{a > 1} exp((a - 1)(a rho - eps)) (1 - 1/a)^(a - 1) / a``, at most 1.
    ``rho >= 0`` and ``epsilon >= 0`` (either may be ``inf``).

    Numerics
    --------
    The log of the bound is convex in ``a`` with derivative
    ``2 a rho - rho - eps + log(1 - 1/a)``; its root is found by bisection in
    ``log(a - 1)`` and the bound evaluated there, rounded up.
    """
    rho = check_nonneg(rho, "rho", allow_inf=True)
    eps = check_nonneg(epsilon, "epsilon", allow_inf=True)
    if rho == 0.0 or eps == math.inf:
        return 0.0
    if rho == math.inf:
        return 1.0

    def slope(t: float) -> float:
        et = math.exp(t)
        return (2.0 * (1.0 + et) - 1.0) * rho - eps + _log1m_inv(t)

    t_star = _bisect_sign(slope, _T_LO, _T_HI)
    best = min(_zcdp_logdelta_at(rho, eps, t) for t in (t_star, _T_LO, _T_HI))
    if best >= 0.0:
        return 1.0
    return min(1.0, math.nextafter(math.exp(best) * (1 + 4 * ULP), math.inf))


# --------------------------------------------------------------------------- caps (200 bits)
#
# A value computed with mpmath at 200 bits is within a relative 2**-150 of the real number
# it approximates (the few operations below lose far fewer bits); the margins cover that.

_MP_PREC = 200


def mp_float_down(value: mpmath.mpf) -> float:
    """A double certainly ``<=`` the real number approximated by ``value`` (200 bits).

    A relative margin of ``2**-150`` (plus ``2**-1100``) covers ``value``'s error, then the
    conversion is rounded down.
    """
    import mpmath

    with mpmath.workprec(_MP_PREC):
        safe = value - abs(value) * mpmath.mpf(2) ** -150 - mpmath.mpf(2) ** -1100
        f = float(safe)
        if mpmath.mpf(f) > safe:
            f = math.nextafter(f, -math.inf)
    return f


def mp_float_up(value: mpmath.mpf) -> float:
    """A double certainly ``>=`` the real number approximated by ``value`` (200 bits)."""
    return -mp_float_down(-value)


def mp_fraction_up(value: mpmath.mpf) -> Fraction:
    """An exact rational certainly ``>=`` the real number approximated by ``value``
    (computed at 200 bits; a relative margin of ``2**-150`` covers its error)."""
    from fractions import Fraction

    import mpmath

    with mpmath.workprec(_MP_PREC):
        safe = value + abs(value) * mpmath.mpf(2) ** -150 + mpmath.mpf(2) ** -1100
        man, exp = safe.man_exp
        return Fraction(int(man)) * (Fraction(2) ** int(exp))


def rdp_cap(epsilon: float, delta: Any, alpha: float) -> mpmath.mpf:
    """``B`` with ``(alpha, B)``-RDP => ``(epsilon, delta)``-DP (CKS20 Prop. 12), 200 bits.

    ``B = epsilon + (log(delta) + log(alpha)) / (alpha - 1) - log(1 - 1/alpha)``; ``delta``
    may be a float or an mpf (a share of a delta).  Round it with :func:`mp_float_down`.
    """
    import mpmath

    with mpmath.workprec(_MP_PREC):
        a = mpmath.mpf(alpha)
        return (
            mpmath.mpf(epsilon)
            + (mpmath.log(mpmath.mpf(delta)) + mpmath.log(a)) / (a - 1)
            - mpmath.log(1 - 1 / a)
        )


def zcdp_cap(epsilon: float, delta: float) -> tuple[float, float]:
    """Largest certified ``rho`` with ``rho``-zCDP => ``(epsilon, delta)``-DP, and its order.

    ``rho``-zCDP is ``(alpha, alpha*rho)``-RDP at every order, so by CKS20 Prop. 12 any
    ``alpha > 1`` certifies ``rho = B_alpha(epsilon, delta)/alpha`` (Cor. 13 solved for
    ``rho``).  The best ``alpha`` is found in floating point; the value at that ``alpha``
    is evaluated at 200 bits and rounded down, so the result is valid whatever ``alpha``
    was found.
    """
    import mpmath

    def f(u: float) -> float:  # -B_alpha/alpha at alpha = 1 + exp(u), floats
        a = 1.0 + math.exp(u)
        b = epsilon + (math.log(delta) + math.log(a)) / (a - 1.0) - math.log1p(-1.0 / a)
        return -b / a

    grid = [-12.0 + 0.01 * i for i in range(5601)]  # alpha - 1 in [6e-6, 2.6e19]
    vals = [f(u) for u in grid]
    i = min(range(len(grid)), key=vals.__getitem__)
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    for _ in range(80):
        if f(c) < f(d):
            hi = d
        else:
            lo = c
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    alpha = 1.0 + math.exp((lo + hi) / 2.0)
    with mpmath.workprec(_MP_PREC):
        rho = mp_float_down(rdp_cap(epsilon, delta, alpha) / mpmath.mpf(alpha))
    return rho, alpha
