"""Input edges refused clearly, never changed silently (issue 22, item 13).

Strings as parameters (snapping took them), masked arrays (their mask was dropped),
longdouble (rounded to float64), a histogram with 10^9 bins and a bad epsilon (the bins
were filled first), a granularity so fine that formatting the error overflowed.
"""

from __future__ import annotations

import decimal
import tracemalloc
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpfast

from .helpers import KEY

INT_FUNCS = [dpfast.discrete_laplace, dpfast.discrete_gaussian]
FLOAT_FUNCS = [dpfast.laplace, dpfast.gaussian]

not_a_number = st.one_of(st.text(max_size=5), st.binary(max_size=4),
                         st.sampled_from(["1.0", "inf", "10", " 2 "]),
                         st.decimals(allow_nan=False, allow_infinity=False,
                                     min_value=1, max_value=100),
                         st.lists(st.floats(1, 2), min_size=2, max_size=3), st.just(None))


@given(bad=not_a_number, which=st.sampled_from(["scale", "bound"]))
def test_snapping_refuses_what_the_other_samplers_refuse(bad, which) -> None:
    kwargs = {"scale": 1.0, "bound": 10.0, which: bad}
    with pytest.raises(TypeError, match=which):
        dpfast.snapping(np.zeros(3), rng=KEY, **kwargs)
    with pytest.raises(TypeError):  # the same value as another sampler's parameter
        dpfast.laplace(np.zeros(3), bad, rng=KEY)


def test_snapping_still_takes_every_kind_of_real() -> None:
    for scale in (1, 1.0, np.float32(1.0), np.int64(1), Fraction(1), np.array(1.0)):
        out = dpfast.snapping(np.zeros(4), scale, 10.0, rng=KEY)
        assert out.shape == (4,)
    with pytest.raises(TypeError, match="scale"):
        dpfast.snapping(np.zeros(3), decimal.Decimal(1), 10.0, rng=KEY)


@given(data=st.lists(st.integers(-100, 100), min_size=1, max_size=20),
       mask=st.lists(st.booleans(), min_size=20, max_size=20))
def test_masked_arrays_are_refused(data, mask) -> None:
    m = np.ma.array(data, mask=mask[:len(data)])
    for fn in INT_FUNCS:
        with pytest.raises(TypeError, match="x is a masked array"):
            fn(m, 2.0, rng=KEY)
        with pytest.raises(TypeError, match="out is a masked array"):
            fn(m.data, 2.0, rng=KEY, out=np.ma.array(m.data.copy()))
    for fn in FLOAT_FUNCS:
        with pytest.raises(TypeError, match="x is a masked array"):
            fn(m.astype(np.float64), 2.0, rng=KEY)
    with pytest.raises(TypeError, match="x is a masked array"):
        dpfast.snapping(m.astype(np.float64), 1.0, 10.0, rng=KEY)
    with pytest.raises(TypeError, match="scale is a masked array"):
        dpfast.discrete_laplace(m.data, np.ma.array(np.full(m.shape, 2.0)), rng=KEY)
    with pytest.raises(TypeError, match="a is a masked array"):
        dpfast.histogram(m, bins=4, range=(-100, 100), epsilon=1.0, rng=KEY)
    with pytest.raises(TypeError, match="weights is a masked array"):
        dpfast.histogram(m.data, bins=4, range=(-100, 100), weights=m, weight_bounds=(0, 1),
                         epsilon=1.0, rng=KEY)


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8,
                    reason="longdouble is float64 on this platform")
def test_longdouble_is_refused_not_rounded() -> None:
    x = np.full(3, 1 + np.finfo(np.longdouble).eps, np.longdouble)  # not a float64
    for fn in FLOAT_FUNCS:
        with pytest.raises(TypeError, match="x has dtype .*longdouble"):
            fn(x, 1.0, rng=KEY)
        with pytest.raises(TypeError, match="scale|sigma"):
            fn(np.zeros(3), np.longdouble(1) + np.finfo(np.longdouble).eps, rng=KEY)
    with pytest.raises(TypeError, match="x has dtype .*longdouble"):
        dpfast.snapping(x, 1.0, 10.0, rng=KEY)
    with pytest.raises(TypeError, match="scale has dtype .*longdouble"):
        dpfast.snapping(np.zeros(3), np.longdouble(1), 10.0, rng=KEY)
    for fn in INT_FUNCS:
        with pytest.raises(TypeError, match="longdouble"):
            fn(np.zeros(3, np.int64), np.full(3, 2, np.longdouble), rng=KEY)


@given(k=st.integers(900, 1074), scale=st.floats(1e-3, 1e6), fn=st.sampled_from(FLOAT_FUNCS))
def test_a_too_fine_granularity_is_the_documented_value_error(k, scale, fn) -> None:
    t = Fraction(scale) / Fraction(2.0 ** -k)
    if t <= 2**50:
        return  # a valid grid: nothing to refuse
    with pytest.raises(ValueError, match=r"granularity = .* exceeds 2\*\*50"):
        fn(np.zeros(2), scale, granularity=2.0 ** -k, rng=KEY)


def test_the_issue_examples() -> None:
    with pytest.raises(ValueError, match=r"scale / granularity = about 2\*\*1076 exceeds"):
        dpfast.laplace(np.zeros(2), 5.0, granularity=2 ** -1074, rng=KEY)
    with pytest.raises(ValueError, match="below 2"):
        dpfast.laplace(np.zeros(2), 2.0 ** -1000, granularity=2.0 ** 960, rng=KEY)


@pytest.mark.parametrize("kwargs", [dict(epsilon=-1.0), dict(epsilon=0.0),
                                    dict(epsilon=1.0, delta=2.0), dict(rho=1.0, epsilon=1.0),
                                    dict(epsilon=1.0, noise="cauchy"), dict()])
def test_histogram_validates_privacy_before_touching_the_bins(kwargs) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ValueError):
            dpfast.histogram(np.zeros(3), bins=10**9, range=(0, 1), **kwargs)
        with pytest.raises(ValueError):
            dpfast.histogramdd(np.zeros((3, 2)), bins=10**5, range=[(0, 1), (0, 1)],
                               **kwargs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # 10^9 edges would be 8 GB


def test_dask_float_noise_message_does_not_overflow() -> None:
    da = pytest.importorskip("dask.array")
    from dpfast import dask as dpdask

    with pytest.raises(ValueError, match=r"about 2\*\*1076 is outside"):
        dpdask.laplace(da.zeros(4, chunks=2), 5.0, granularity=2 ** -1074, rng=KEY)
