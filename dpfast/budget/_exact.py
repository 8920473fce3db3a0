"""Exact arithmetic for the budget filters: sums of doubles kept as integers, safe rounding.

Every finite double is an integer multiple of ``2**-1074`` and every product of two
doubles an integer multiple of ``2**-2148``, so the filters keep their running sums as
Python integers in those units and compare them with their caps without rounding.
Irrational caps (logarithms) are evaluated with mpmath at 200 bits and rounded to
the safe side by :mod:`dpfast._core.conversions` (``rdp_cap``, ``zcdp_cap``,
``mp_float_down``, ``mp_fraction_up``).
"""

from __future__ import annotations

from fractions import Fraction

from dpfast._core import rounding as _rounding

__all__ = ["UNIT_EXP", "exact", "float_down", "float_up"]

UNIT_EXP = 1074


def exact(x: float) -> int:
    """``x`` (finite) as an exact integer multiple of ``2**-1074``."""
    num, den = x.as_integer_ratio()
    return num << (UNIT_EXP + 1 - den.bit_length())


def float_down(n: int, unit_exp: int = UNIT_EXP) -> float:
    """Largest double ``<=`` the exact value ``n * 2**-unit_exp``."""
    return _rounding.float_down(Fraction(n, 1 << unit_exp))


def float_up(n: int, unit_exp: int = UNIT_EXP) -> float:
    """Smallest double ``>=`` the exact value ``n * 2**-unit_exp``."""
    return _rounding.float_up(Fraction(n, 1 << unit_exp))
