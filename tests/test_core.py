"""The bottom layer dpfast._core: checks, directed rounding, 200-bit caps."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpfast._core.conversions import mp_float_down, mp_float_up, mp_fraction_up
from dpfast._core.rounding import sqrt_up
from dpfast._core.validate import check_finite

rationals = st.fractions(min_value=0, max_value=10**40, max_denominator=10**30)


@given(rationals)
def test_sqrt_up_is_the_smallest_float_above(q: Fraction) -> None:
    s = sqrt_up(q)
    assert Fraction(s) ** 2 >= q
    if s > 0:
        assert Fraction(math.nextafter(s, 0.0)) ** 2 < q


def test_sqrt_up_extremes() -> None:
    assert sqrt_up(4) == 2.0 and sqrt_up(0) == 0.0
    assert sqrt_up(Fraction(10) ** 700) == math.inf
    tiny = Fraction(1, 10**700)
    s = sqrt_up(tiny)
    assert Fraction(s) ** 2 >= tiny and Fraction(math.nextafter(s, 0.0)) ** 2 < tiny
    with pytest.raises(ValueError, match="q >= 0"):
        sqrt_up(Fraction(-1))


def test_check_finite_names_the_parameter() -> None:
    assert check_finite(3, "x") == 3.0
    with pytest.raises(ValueError, match="x must be finite"):
        check_finite(math.inf, "x")
    with pytest.raises(ValueError, match="x must not be NaN"):
        check_finite(math.nan, "x")
    with pytest.raises(TypeError, match="x must be a real number"):
        check_finite(True, "x")


@given(st.floats(-1e300, 1e300, allow_nan=False))
def test_mp_rounding_brackets_the_value(x: float) -> None:
    with mpmath.workprec(200):
        v = mpmath.mpf(x) / 3
        exact = Fraction(x) / 3
    assert Fraction(mp_float_down(v)) <= exact <= Fraction(mp_float_up(v))
    assert mp_fraction_up(v) >= exact


@given(st.floats(1e-300, 1e300), st.floats(0.0, 1e300))
def test_float_boundary_is_the_exact_switch(t: float, lo: float) -> None:
    from dpfast._core.rounding import float_boundary

    if lo >= t:
        return
    a, b = float_boundary(lambda x: x >= t, lo, 2.0 * t)
    assert b == t and a == math.nextafter(t, 0.0)
