"""Upward-rounded float arithmetic for privacy parameters (epsilon, rho, delta go up)."""

from __future__ import annotations

import math
from fractions import Fraction

ULP = 2.0**-52


def up(x: float, ulps: int = 2) -> float:
    """Round ``x >= 0`` up by ``ulps`` relative ulps plus one ulp."""
    if x == 0.0 or math.isinf(x):
        return x
    return math.nextafter(x * (1.0 + ulps * ULP), math.inf)


def exact_up(x: float, exact: Fraction) -> float:
    """``x`` if it is >= ``exact``, else the next float above (x is a rounded ``exact``)."""
    while Fraction(x) < exact:
        x = math.nextafter(x, math.inf)
    return x


def mul_up(a: float, b: float) -> float:
    """Smallest float >= ``a * b`` (exact product)."""
    if math.isinf(a) or math.isinf(b):
        return a * b
    return exact_up(a * b, Fraction(a) * Fraction(b))


def recip_up(b: float) -> float:
    """Smallest float >= ``1 / b`` for ``b > 0``."""
    return exact_up(1.0 / b, 1 / Fraction(b))


def sum_up(values: list[float]) -> float:
    """Smallest float >= the exact sum (``math.fsum`` is correctly rounded)."""
    if any(math.isinf(v) for v in values):
        return math.fsum(values)
    return exact_up(math.fsum(values), sum((Fraction(v) for v in values), Fraction(0)))
