"""Public noising API: shapes, dtypes, orders, overflow, determinism, attack regression."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dpfast
from dpfast import noise

from .conftest import KEY

INT_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
              ">i4", ">i8", "<i2"]


@given(arr=hnp.arrays(dtype=st.sampled_from(INT_DTYPES), shape=hnp.array_shapes(min_dims=0,
                      max_dims=3, min_side=0, max_side=5),
                      elements=st.integers(0, 100)),
       scale=st.sampled_from([0.5, 3.0, 40.0]),
       order=st.sampled_from(["C", "F", "strided"]),
       fn=st.sampled_from([dpfast.discrete_laplace, dpfast.discrete_gaussian]))
def test_discrete_shapes_dtypes_orders(arr, scale, order, fn) -> None:
    if order == "F":
        arr = np.asfortranarray(arr)
    elif order == "strided" and arr.ndim >= 1:
        arr = np.repeat(arr, 2, axis=0)[::2]
    before = arr.copy()
    try:
        out = fn(arr, scale, rng=KEY)
    except OverflowError:
        # only legitimate when the dtype is narrow (e.g. uint8 near 0)
        assert np.dtype(arr.dtype).itemsize <= 2 or np.dtype(arr.dtype).kind == "u"
        return
    assert out.shape == arr.shape
    assert out.dtype == arr.dtype
    assert np.array_equal(arr, before)  # input never mutated
    # same key and logical content -> same values whatever the memory layout
    again = fn(np.array(arr, order="C", copy=True), scale, rng=KEY)
    assert np.array_equal(out, again)


def test_zero_dim_and_empty() -> None:
    y = dpfast.discrete_laplace(np.int64(5), 1.0, rng=KEY)
    assert y.shape == () and y.dtype == np.int64
    assert dpfast.discrete_gaussian(np.zeros((0, 3), np.int32), 1.0).shape == (0, 3)
    assert dpfast.laplace(np.zeros(0), 1.0).shape == (0,)
    assert dpfast.laplace(2.5, 1.0, rng=KEY).shape == ()


def test_in_place_out_and_separate_out() -> None:
    x = np.arange(1000, dtype=np.int64)
    expect = dpfast.discrete_laplace(x, 2.0, rng=KEY)
    y = x.copy()
    r = dpfast.discrete_laplace(y, 2.0, rng=KEY, out=y)
    assert r is y and np.array_equal(y, expect)
    o = np.empty_like(x)
    r2 = dpfast.discrete_laplace(x, 2.0, rng=KEY, out=o)
    assert r2 is o and np.array_equal(o, expect)
    assert np.array_equal(x, np.arange(1000))


@pytest.mark.parametrize("fn", [dpfast.laplace, dpfast.gaussian])
def test_float_in_place_and_separate_out(fn) -> None:
    x = np.linspace(-3, 3, 1001)
    expect = fn(x, 1.5, rng=KEY)
    y = x.copy()
    assert fn(y, 1.5, rng=KEY, out=y) is y and np.array_equal(y, expect)
    o = np.empty((1001, 2))[:, 0]  # non-contiguous out
    assert fn(x, 1.5, rng=KEY, out=o) is o and np.array_equal(o, expect)
    assert np.array_equal(x, np.linspace(-3, 3, 1001))


def test_overflow_raises_never_wraps() -> None:
    big = np.full(1000, np.iinfo(np.int64).max - 2, dtype=np.int64)
    with pytest.raises(OverflowError):
        dpfast.discrete_laplace(big, 10.0, rng=KEY)
    with pytest.raises(OverflowError):
        dpfast.discrete_gaussian(np.full(1000, 127, np.int8), 5.0, rng=KEY)
    with pytest.raises(OverflowError):
        dpfast.discrete_laplace(np.zeros(1000, np.uint64), 5.0, rng=KEY)
    with pytest.raises(OverflowError):
        dpfast.discrete_laplace(np.full(1000, 2**64 - 2, np.uint64), 5.0, rng=KEY)


def test_unsigned_64_results_exact() -> None:
    x = np.full(2000, 2**63 + 12345, dtype=np.uint64)
    y = dpfast.discrete_laplace(x, 3.0, rng=KEY)
    noise_i = dpfast.discrete_laplace(np.zeros(2000, np.int64), 3.0, rng=KEY)
    assert np.array_equal(y.astype(object) - x.astype(object), noise_i.astype(object))


@pytest.mark.parametrize("bad,exc,match", [
    (np.array([1.5, 2.0]), TypeError, "x"),
    (np.array([True, False]), TypeError, "x"),
    (np.array(["a"], dtype=object), TypeError, "x"),
    (np.array([1 + 2j]), TypeError, "x"),
])
def test_discrete_rejects_non_integers(bad, exc, match) -> None:
    with pytest.raises(exc, match=match):
        dpfast.discrete_laplace(bad, 1.0)
    with pytest.raises(exc, match=match):
        dpfast.discrete_gaussian(bad, 1.0)


@pytest.mark.parametrize("scale", [0, -1.0, math.nan, math.inf, "1"])
def test_bad_scale(scale) -> None:
    with pytest.raises((ValueError, TypeError), match="scale"):
        dpfast.discrete_laplace(np.zeros(3, np.int64), scale)
    with pytest.raises((ValueError, TypeError), match="scale"):
        dpfast.laplace(np.zeros(3), scale)
    with pytest.raises((ValueError, TypeError), match="sigma"):
        dpfast.gaussian(np.zeros(3), scale)


def test_out_mismatch() -> None:
    x = np.zeros(4, np.int64)
    with pytest.raises(ValueError, match="out"):
        dpfast.discrete_laplace(x, 1.0, out=np.zeros(5, np.int64))
    with pytest.raises(TypeError, match="out"):
        dpfast.discrete_laplace(x, 1.0, out=np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="out"):
        dpfast.laplace(np.zeros(4), 1.0, out=np.zeros(4, np.float32))


def test_float_rejects_nan_inf() -> None:
    for bad in (np.array([0.0, np.nan]), np.array([np.inf]), [1.0, -np.inf]):
        with pytest.raises(ValueError, match="x"):
            dpfast.laplace(bad, 1.0)
        with pytest.raises(ValueError, match="x"):
            dpfast.gaussian(bad, 1.0)
    with pytest.raises(TypeError, match="x"):
        dpfast.laplace(np.array([True]), 1.0)


def test_rng_argument_forms() -> None:
    x = np.zeros(10, np.int64)
    a = dpfast.discrete_laplace(x, 5.0, rng=KEY)
    b = dpfast.discrete_laplace(x, 5.0, rng=dpfast.default_rng(KEY))
    assert np.array_equal(a, b)
    with pytest.raises(TypeError, match="rng"):
        dpfast.discrete_laplace(x, 5.0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="rng"):
        dpfast.discrete_laplace(x, 5.0, rng=b"short")


def test_same_output_with_one_and_all_threads() -> None:
    x = np.zeros(300_000, np.int64)
    xf = np.zeros(300_000)
    n0 = numba.get_num_threads()
    outs = []
    try:
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            outs.append((dpfast.discrete_laplace(x, 7.0, rng=KEY),
                         dpfast.discrete_gaussian(x, 7.0, rng=KEY),
                         dpfast.laplace(xf, 1.0, rng=KEY),
                         dpfast.gaussian(xf, 1.0, rng=KEY),
                         dpfast.snapping(xf, 1.0, 100.0, rng=KEY)))
    finally:
        numba.set_num_threads(n0)
    for a, b in zip(*outs):
        assert np.array_equal(a, b)


def test_per_cell_scale_broadcast() -> None:
    x = np.zeros((100_000, 2), np.int64)
    y = dpfast.discrete_laplace(x, np.array([1.0, 100.0]), rng=KEY)
    assert y[:, 0].std() < 3 and 100 < y[:, 1].std() < 180
    with pytest.raises(ValueError, match="scale"):
        dpfast.discrete_laplace(x, np.ones(3))


# ----------------------------------------------------------------------------- float grid
def test_granularity_choice() -> None:
    for s in (1.0, 0.3, 1e6, 2.0**-20, 3.0):
        g = noise.granularity(s)
        assert math.frexp(g)[0] == 0.5
        assert 2.0**39 < s / g <= 2.0**40
    with pytest.raises(ValueError, match="power of two"):
        dpfast.laplace(np.zeros(2), 1.0, granularity=0.3)
    y = dpfast.laplace(np.zeros(1000), 1.0, granularity=2.0**-10, rng=KEY)
    assert np.all(y * 2**10 == np.rint(y * 2**10))


@pytest.mark.parametrize("fn", [dpfast.laplace, dpfast.gaussian])
def test_floating_point_attack_regression(fn) -> None:
    """Mironov 2012: with textbook float noise the set of reachable outputs depends on x
    (so one output can reveal x).  dpfast's outputs lie on the grid g Z for every x, and
    for the same randomness the output for x = 1 is exactly the output for x = 0 shifted
    by 1: the support does not depend on x."""
    n = 200_000
    scale = 1.0
    g = noise.granularity(scale)
    y0 = fn(np.zeros(n), scale, rng=KEY)
    y1 = fn(np.ones(n), scale, rng=KEY)
    for y in (y0, y1):
        assert np.all(y / g == np.rint(y / g))  # on the grid
    assert np.array_equal(y1 - 1.0, y0)  # identical supports, shifted exactly
    # the textbook sampler fails the same test (so the test has power)
    r = np.random.default_rng(0)
    lap = r.laplace(0.0, scale, n)
    t0, t1 = 0.0 + lap, 1.0 + lap
    assert not np.all(t0 / g == np.rint(t0 / g))
    assert not np.array_equal(t1 - 1.0, t0)


def test_float_noise_distribution() -> None:
    y = dpfast.laplace(np.full(500_000, 3.0), 2.0, rng=KEY)
    assert abs(np.mean(y) - 3.0) < 5 * math.sqrt(8 / 500_000)
    assert abs(np.var(y) / 8.0 - 1) < 0.02
    z = dpfast.gaussian(np.zeros(500_000), 2.0, rng=KEY)
    assert abs(np.var(z) / 4.0 - 1) < 0.02


def test_large_values_round_once() -> None:
    x = np.array([1e18, -3e17, 12345.678])
    y = dpfast.laplace(x, 1.0, rng=KEY)
    assert np.all(np.abs(y - x) < 100)


# ----------------------------------------------------------------------------- snapping
def test_snapping_output_grid_and_clamp() -> None:
    y = dpfast.snapping(np.array([0.0, 50.0, 1e9, -1e9] * 5000), 1.0, 100.0, rng=KEY)
    assert np.all(np.abs(y) <= 100.0)
    assert np.all((y == np.rint(y)) | (np.abs(y) == 100.0))  # Λ = 1
    assert abs(np.mean(y[0::4])) < 0.1
    assert abs(np.var(y[0::4]) / 2.0 - 1) < 0.1


def test_snapping_epsilon() -> None:
    eps = dpfast.snapping_epsilon(2.0, 1000.0, sensitivity=1.0)
    assert eps >= (1.0 + 2.0**-49 * 1000.0) / 2.0
    assert eps < 0.5 + 1e-12
    with pytest.raises(ValueError, match="bound"):
        dpfast.snapping_epsilon(2.0, 1.0)
    with pytest.raises(ValueError, match="scale"):
        dpfast.snapping(np.zeros(2), -1.0, 10.0)
