"""The CKS20 conversions the filters' caps are made of, evaluated at 200 bits and
rounded to the safe side."""

from __future__ import annotations

import math
from typing import Any

import mpmath

from . import _exact

__all__ = ["rdp_cap", "zcdp_cap"]


def zcdp_cap(epsilon: float, delta: float) -> tuple[float, float]:
    """Largest certified ``rho`` with ``rho``-zCDP => ``(epsilon, delta)``-DP, and its order.

    ``rho``-zCDP is ``(alpha, alpha*rho)``-RDP at every order, so by CKS20 Prop. 12 any
    ``alpha > 1`` certifies ``rho = B_alpha(epsilon, delta)/alpha`` (CKS20 Cor. 13 solved
    for ``rho``).  The best ``alpha`` is found in floating point; the value at that
    ``alpha`` is evaluated at 200 bits and rounded down, so the result is valid whatever
    ``alpha`` was found.
    """

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
    with mpmath.workprec(200):
        rho = _exact.mp_float_down(rdp_cap(epsilon, delta, alpha) / mpmath.mpf(alpha))
    return rho, alpha


def rdp_cap(epsilon: float, delta: Any, alpha: float) -> mpmath.mpf:
    """``B`` with ``(alpha, B)``-RDP => ``(epsilon, delta)``-DP (CKS20 Prop. 12), 200 bits.

    ``B = epsilon + (log(delta) + log(alpha)) / (alpha - 1) - log(1 - 1/alpha)``.
    """
    with mpmath.workprec(200):
        a = mpmath.mpf(alpha)
        return (
            mpmath.mpf(epsilon)
            + (mpmath.log(mpmath.mpf(delta)) + mpmath.log(a)) / (a - 1)
            - mpmath.log(1 - 1 / a)
        )
