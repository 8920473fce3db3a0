"""Exact confidence-interval half-widths of discrete Laplace and discrete Gaussian noise."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath

from dpfast.mechanisms._common import _PREC, _mpf

# below this sigma the discrete Gaussian tail is summed term by term
_DIRECT_SIGMA = 32


def _integer_search(tail: Any, alpha: mpmath.mpf, guess: int) -> int:
    """Smallest integer ``w >= 0`` with ``tail(w) <= alpha`` for a decreasing ``tail``.

    Ties within the evaluation error are resolved towards the larger ``w`` by the caller's
    ``tail`` (which returns an upper bound).
    """
    guess = max(guess, 0)
    if tail(guess) <= alpha:
        hi = guess
        step = 1
        lo = hi - step
        while lo >= 0 and tail(lo) <= alpha:
            hi = lo
            step *= 2
            lo = hi - step
        lo = max(lo, -1)
    else:
        lo = guess
        step = 1
        hi = lo + step
        while tail(hi) > alpha:
            lo = hi
            step *= 2
            hi = lo + step
    # invariant: tail(lo) > alpha (or lo == -1), tail(hi) <= alpha
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tail(mid) <= alpha:
            hi = mid
        else:
            lo = mid
    return hi


def _discrete_laplace_halfwidth(t: Fraction, alpha: Fraction) -> int:
    """Smallest integer w with P(|K| > w) <= alpha, P(k) ~ exp(-|k|/t).

    ``P(|K| > w) = 2 p^(w+1) / (1 + p)`` with ``p = exp(-1/t)``.
    """
    with mpmath.workprec(_PREC):
        tt = _mpf(t)
        a = _mpf(alpha)
        p = mpmath.exp(-1 / tt)
        # relative slack far above the evaluation error, resolving ties upwards
        slack = 1 + mpmath.mpf(2) ** (-_PREC // 2)

        def tail(w: int) -> mpmath.mpf:
            return 2 * mpmath.exp(-(w + 1) / tt) / (1 + p) * slack

        guess = int(mpmath.floor(tt * mpmath.log(2 / (a * (1 + p))))) - 1
        return _integer_search(tail, a, guess)


def _dg_tail_sum(a: int, s: mpmath.mpf) -> mpmath.mpf:
    """Upper bound on ``T(a) = sum_{k >= a} exp(-k^2 / 2 s^2)`` for an integer ``a >= 0``.

    Term by term for ``s < 32`` (the neglected tail bounded by a geometric series);
    otherwise the Euler-Maclaurin formula through ``f^(5)`` plus a rigorous bound on its
    remainder, ``|R| <= 2 zeta(6) / (2 pi)^6 * int_a^inf |f^(6)|`` with
    ``f^(n)(x) = (-1/s)^n He_n(x/s) f(x)`` (probabilists' Hermite polynomials); the
    remainder is below ``1e-13`` relative for ``s >= 32``.
    """
    two_s2 = 2 * s * s
    if s < _DIRECT_SIGMA:
        total = mpmath.mpf(0)
        k = mpmath.mpf(a)
        term = mpmath.exp(-k * k / two_s2)
        ratio = mpmath.exp(-(2 * k + 1) / two_s2)  # term(k+1) / term(k), decreasing in k
        step = mpmath.exp(-2 / two_s2)
        eps = mpmath.mpf(2) ** (-_PREC + 16)
        while True:
            total += term
            term *= ratio
            ratio *= step
            if term <= eps * total * (1 - ratio):
                # the remaining terms sum to <= term / (1 - ratio)
                return total + term / (1 - ratio)
    u = mpmath.mpf(a) / s
    f = mpmath.exp(-u * u / 2)
    he1 = u
    he3 = u**3 - 3 * u
    he5 = u**5 - 10 * u**3 + 15 * u
    integral = s * mpmath.sqrt(mpmath.pi / 2) * mpmath.erfc(u / mpmath.sqrt(2))
    value = integral + f * (
        mpmath.mpf(1) / 2 + he1 / (12 * s) - he3 / (720 * s**3) + he5 / (30240 * s**5)
    )
    # int_u^inf t^k phi(t) dt for k = 0..6 (phi the standard normal density)
    phi = f / mpmath.sqrt(2 * mpmath.pi)
    moments = [mpmath.erfc(u / mpmath.sqrt(2)) / 2, phi]
    for k in range(2, 7):
        moments.append(u ** (k - 1) * phi + (k - 1) * moments[k - 2])
    # |He_6(t)| <= t^6 + 15 t^4 + 45 t^2 + 15 for t >= 0
    he6_abs = moments[6] + 15 * moments[4] + 45 * moments[2] + 15 * moments[0]
    remainder = mpmath.mpf(1) / 30000 * mpmath.sqrt(2 * mpmath.pi) * he6_abs / s**5
    return value + remainder


def _dg_normalizer_lower(s: mpmath.mpf) -> mpmath.mpf:
    """Lower bound on ``Z = sum_k exp(-k^2 / 2 s^2)``.

    Poisson summation: ``Z = s sqrt(2 pi) (1 + 2 sum_{j>=1} exp(-2 pi^2 s^2 j^2))``; the
    dual series is summed while it matters (``s >= 1/2``), else ``Z`` directly.
    """
    if s < mpmath.mpf(1) / 2:
        return 1 + 2 * _dg_tail_sum(1, s) * (1 - mpmath.mpf(2) ** (-_PREC // 2))
    c = 2 * mpmath.pi**2 * s * s
    theta = mpmath.mpf(1)
    j = 1
    eps = mpmath.mpf(2) ** (-_PREC)
    while True:
        term = 2 * mpmath.exp(-c * j * j)
        if term < eps:
            break
        theta += term
        j += 1
    return s * mpmath.sqrt(2 * mpmath.pi) * theta * (1 - mpmath.mpf(2) ** (-_PREC // 2))


def _discrete_gaussian_halfwidth(sigma: Fraction, alpha: Fraction) -> int:
    """Smallest integer w with P(|K| > w) <= alpha for K ~ N_Z(0, sigma^2) (up to ties)."""
    with mpmath.workprec(_PREC):
        s = _mpf(sigma)
        a = _mpf(alpha)
        z = _dg_normalizer_lower(s)

        def tail(w: int) -> mpmath.mpf:
            return 2 * _dg_tail_sum(w + 1, s) / z

        if a > mpmath.mpf(10) ** -30:
            guess = int(mpmath.floor(s * mpmath.sqrt(2) * mpmath.erfinv(1 - a)))
        else:  # 1 - a is not representable: start from the sub-Gaussian bound
            guess = int(mpmath.floor(s * mpmath.sqrt(2 * mpmath.log(2 / a))))
        return _integer_search(tail, a, guess)
