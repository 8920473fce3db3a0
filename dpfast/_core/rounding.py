"""Directed rounding for privacy arithmetic (standard library only).

Privacy parameters round toward the safe side: epsilon, rho, delta and noise scales up
(a cost is never understated), budgets and noise multipliers down.  The exact helpers
(:func:`float_up`, :func:`float_down`, :func:`exact_up`, :func:`mul_up`, :func:`sum_up`)
return the nearest float on the requested side of the exact rational result; :func:`up`
adds a relative margin for results of libm functions (log, exp), whose error is a few ulps.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from fractions import Fraction

__all__ = [
    "ULP",
    "up",
    "exact_up",
    "float_up",
    "float_down",
    "mul_up",
    "recip_up",
    "sum_up",
    "sqrt_up",
    "ceil_sqrt",
    "float_boundary",
]

#: unit in the last place of 1.0 (2^-52)
ULP = 2.0**-52


def up(x: float, ulps: int = 2) -> float:
    """Round ``x >= 0`` up by ``ulps`` relative ulps plus one ulp (0 and inf unchanged)."""
    if x == 0.0 or math.isinf(x):
        return x
    return math.nextafter(x * (1.0 + ulps * ULP), math.inf)


def exact_up(x: float, exact: Fraction) -> float:
    """``x`` if it is ``>= exact``, else the next float above (``x`` is a rounded ``exact``)."""
    while Fraction(x) < exact:
        x = math.nextafter(x, math.inf)
    return x


def float_up(q: Fraction | int) -> float:
    """Smallest float ``>= q`` (``inf`` beyond the float range)."""
    q = Fraction(q)
    try:
        f = float(q)
    except OverflowError:
        return math.inf if q > 0 else -math.nextafter(math.inf, 0.0)
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def float_down(q: Fraction | int) -> float:
    """Largest float ``<= q`` (``-inf`` beyond the float range)."""
    return -float_up(-Fraction(q))


def mul_up(a: float, b: float) -> float:
    """Smallest float ``>= a * b`` (exact product)."""
    if math.isinf(a) or math.isinf(b):
        return a * b
    return exact_up(a * b, Fraction(a) * Fraction(b))


def recip_up(b: float) -> float:
    """Smallest float ``>= 1 / b`` for ``b > 0``."""
    return float_up(1 / Fraction(b))


def sum_up(values: list[float]) -> float:
    """Smallest float ``>= `` the exact sum (``math.fsum`` is correctly rounded)."""
    if any(math.isinf(v) for v in values):
        return math.fsum(values)
    return exact_up(math.fsum(values), sum((Fraction(v) for v in values), Fraction(0)))


def sqrt_up(q: Fraction | int) -> float:
    """Smallest float ``>= sqrt(q)`` for a rational ``q >= 0`` (``inf`` beyond the range)."""
    q = Fraction(q)
    if q < 0:
        raise ValueError(f"sqrt_up needs q >= 0, got {q}")
    if q == 0:
        return 0.0
    k = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    try:  # sqrt(q) = 2^k sqrt(q / 4^k), q / 4^k in [1/4, 16): no overflow, no underflow
        s = math.ldexp(math.sqrt(float(q / Fraction(4) ** k)), k)
    except OverflowError:
        return math.inf
    while s < math.inf and Fraction(s) ** 2 < q:
        s = math.nextafter(s, math.inf)
    if s == math.inf:
        return s
    while s > 0 and Fraction(math.nextafter(s, 0.0)) ** 2 >= q:
        s = math.nextafter(s, 0.0)
    return s


def ceil_sqrt(n: int) -> int:
    """Smallest integer ``r`` with ``r * r >= n`` (``n >= 0``)."""
    r = math.isqrt(n)
    return r if r * r == n else r + 1


def _bits(x: float) -> int:
    return int(struct.unpack("<q", struct.pack("<d", x))[0])


def _from_bits(b: int) -> float:
    return float(struct.unpack("<d", struct.pack("<q", b))[0])


def float_boundary(pred: Callable[[float], bool], lo: float, hi: float) -> tuple[float, float]:
    """The adjacent floats ``(a, b)`` where a monotone ``pred`` turns from false to true.

    ``0 <= lo < hi`` with ``pred(lo)`` false and ``pred(hi)`` true (neither is evaluated
    again); returns ``lo <= a < b <= hi``, ``b = nextafter(a, inf)``, with ``pred(a)``
    false and ``pred(b)`` true.  Bisection on the bit patterns (non-negative floats are
    ordered like them): at most 64 evaluations, and the answer is the exact boundary on
    the float grid whatever the scale.
    """
    a, b = _bits(lo), _bits(hi)
    while b - a > 1:
        mid = (a + b) // 2
        if pred(_from_bits(mid)):
            b = mid
        else:
            a = mid
    return _from_bits(a), _from_bits(b)
