"""Public noising API: shapes, dtypes, orders, overflow, determinism, attack regression."""

from __future__ import annotations

import contextlib
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
from .helpers import assert_partly_written

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
        dpfast.laplace(np.zeros(4), 1.0, out=np.zeros(4, np.float16))


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


# ----------------------------------------------------------------------------- hardening
@pytest.mark.parametrize("fn,law", [(dpfast.laplace, "discrete_laplace")])
def test_grid_adds_huge_noise_exactly(fn, law) -> None:
    """Item 1: with scale/granularity = 2^50 some |Z| >= 2^53; the output must still be
    the exact grid value (round(x/g) + Z) g rounded once, for odd and even round(x/g)."""
    n = 60_000
    scale = 2.0**50
    z = getattr(dpfast.default_rng(KEY), law)(scale, n)  # the same draws as fn(..., KEY)
    assert np.count_nonzero(np.abs(z) >= 2**53) >= 3  # the test has power
    for a in (0, 1, 2, 3, -7):
        y = fn(np.full(n, float(a)), scale, rng=KEY, granularity=1.0)
        expect = np.array([float(a + int(v)) for v in z])  # Python: rounded once
        assert np.array_equal(y, expect), a


def test_grid_kernel_hands_huge_noise_to_exact_addition() -> None:
    """The grid kernel shared by laplace and gaussian: cells with |z| >= 2^53 (rare for
    the Gaussian: 8 sigma at the largest sigma / g) are added exactly."""
    from dpfast._kernels import grid

    x = np.array([1.0, 2.0, 3.0, -1.0, 0.5, 7.0])
    z = np.array([2**53 + 1, 2**53 + 1, 2**60 - 1, -(2**62) - 3, 5, -(2**53) - 1], np.int64)
    out = np.full(6, np.nan)
    nbig = np.zeros(1, np.int64)
    grid.grid_add(x, z, 1.0, np.finfo(np.float64).max, out, nbig)
    assert nbig[0] == 5 and out[4] == 5.0  # rint(0.5) = 0
    noise._grid_fix(x, z, 1.0, np.finfo(np.float64).max, out, nbig)
    assert list(out) == [float(int(np.rint(a)) + int(b)) for a, b in zip(x, z)]


def test_grid_reachable_set_does_not_depend_on_x() -> None:
    n = 60_000
    y0 = dpfast.laplace(np.zeros(n), 2.0**50, rng=KEY, granularity=1.0)
    y1 = dpfast.laplace(np.ones(n), 2.0**50, rng=KEY, granularity=1.0)
    big = np.abs(y0) >= 2.0**53
    assert big.any()
    # above 2^53 the outputs are doubles spaced 2, 4, ...: they must be the same
    # doubles whether round(x/g) is odd or even (the old code had y1 = y0 + 1 rounded
    # after an already rounded product)
    assert set(np.abs(y1[big]) % 4) <= {0.0, 2.0}
    assert set(np.abs(y0[big]) % 4) <= {0.0, 2.0}


BE_DTYPES = [">i8", ">i4", ">i2", ">u8", ">u4", ">u2", "<i8", "<u8"]


@pytest.mark.parametrize("dt", BE_DTYPES)
@pytest.mark.parametrize("fn", [dpfast.discrete_laplace, dpfast.discrete_gaussian])
def test_non_native_byte_orders_never_wrap(dt, fn) -> None:
    """Item 2: every byte order of every integer dtype raises OverflowError at its
    limits and otherwise equals the native-dtype result."""
    info = np.iinfo(np.dtype(dt))
    for edge in (info.max - 1, info.min + 1):
        x = np.full(2000, edge, dtype=dt)
        before = x.copy()
        with pytest.raises(OverflowError):
            fn(x, 5.0, rng=KEY)
        with pytest.raises(OverflowError):
            fn(x, 5.0, rng=KEY, out=x)
        assert np.array_equal(x, before)
    mid = np.full(500, info.max // 2, dtype=dt)
    native = mid.astype(np.dtype(dt).newbyteorder("="))
    assert np.array_equal(fn(mid, 5.0, rng=KEY), fn(native, 5.0, rng=KEY))


@pytest.mark.parametrize("call,match", [
    (lambda: dpfast.discrete_laplace(np.zeros(3, np.int64), 5e-312), "scale"),
    (lambda: dpfast.discrete_laplace(np.zeros(3, np.int64), 2.0**51), "scale"),
    (lambda: dpfast.discrete_gaussian(np.zeros(3, np.int64), 1e-160), "sigma"),
    (lambda: dpfast.discrete_gaussian(np.zeros(3, np.int64), np.array([1.0, 1e-40, 2.0])),
     "sigma"),
    (lambda: dpfast.laplace(np.zeros(3), 5e-312), "scale"),
    (lambda: dpfast.laplace(np.zeros(3), 1.7e308), "scale"),
    (lambda: dpfast.gaussian(np.zeros(3), 1e-310), "sigma"),
    (lambda: dpfast.laplace(np.zeros(3), 1.0, granularity=2.0**1000), "granularity"),
    (lambda: dpfast.laplace(np.zeros(3), 1.0, granularity=2.0**200), "granularity"),
    (lambda: dpfast.default_rng(KEY).discrete_laplace(1e-40, 3), "scale"),
])
def test_scales_outside_the_supported_range(call, match) -> None:
    """Item 5: a ValueError naming the parameter (never ZeroDivisionError, a
    misleading OverflowError or a non-finite output)."""
    with pytest.raises(ValueError, match=match):
        call()


def test_extreme_but_supported_scales_stay_finite_and_on_grid() -> None:
    for scale in (2.0**-1000, 2.0**-100, 2.0**999):
        g = noise.granularity(scale)
        y = dpfast.laplace(np.array([0.0, scale, -3.0 * scale]), scale, rng=KEY)
        assert np.all(np.isfinite(y)) and np.all(y / g == np.rint(y / g))
    top = dpfast.laplace(np.full(4000, np.finfo(np.float64).max), 1e300, rng=KEY)
    assert np.all(np.isfinite(top)) and top.max() == np.finfo(np.float64).max
    for s in (2.0**-100, 2.0**50):
        assert np.all(np.isfinite(dpfast.gaussian(np.zeros(100), s, rng=KEY)))
        dpfast.discrete_laplace(np.zeros(100, np.int64), s, rng=KEY)
        dpfast.discrete_gaussian(np.zeros(100, np.int64), s, rng=KEY)


@pytest.mark.parametrize("fn,scale", [(dpfast.discrete_laplace, 3.0),
                                      (dpfast.discrete_laplace, 100.0),
                                      (dpfast.discrete_gaussian, 4.0)])
@pytest.mark.parametrize("forced", [0, 1, 3])
def test_in_place_overflow_leaves_x_unchanged(fn, scale, forced) -> None:
    """Item 6: an OverflowError in an in-place call (after other chunks, in parallel,
    already wrote) restores every written cell; a separate out holds, cell by cell, what
    it held or the cell's noisy value (numpy's ``out=`` semantics), and x is unchanged.
    (The first overflow is in the second of six chunks: with the exact continuation
    forced, the chunks before it are drawn one sample at a time in Python.)"""
    from dpfast.noise import _exact

    chunk = dpfast.noise._drive.CHUNK
    n = 5 * chunk + 123
    x = np.arange(n, dtype=np.int64) * 7 - 1000
    x[chunk + 10] = np.iinfo(np.int64).max  # overflows with probability ~1/2
    x[chunk + 11:chunk + 60] = np.iinfo(np.int64).max
    x[-5:] = np.iinfo(np.int64).min
    before = x.copy()
    ctx = _exact.force_exact(forced) if forced else contextlib.nullcontext()
    with ctx:
        with pytest.raises(OverflowError):
            fn(x, scale, rng=KEY, out=x)
        assert np.array_equal(x, before)
        other = np.full(n, 7, np.int64)
        with pytest.raises(OverflowError):
            fn(x, scale, rng=KEY, out=other)
        assert np.array_equal(x, before)
        assert_partly_written(other, 7, x, fn(np.zeros(n, np.int64), scale, rng=KEY))
        assert np.any(other[:chunk] != 7)  # written in one pass, up to the overflow


@pytest.mark.parametrize("fn,dtype", [(dpfast.discrete_laplace, np.int64),
                                      (dpfast.discrete_gaussian, np.int32),
                                      (dpfast.laplace, np.float64)])
def test_partially_overlapping_out(fn, dtype) -> None:
    """Item 6: out overlapping x in part gives the result of a copy of x."""
    base = np.arange(300_000).astype(dtype)
    x = base[:200_000]
    expect = fn(x.copy(), 2.0, rng=KEY)
    out = base[100_000:]
    got = fn(x, 2.0, rng=KEY, out=out)
    assert got is out and np.array_equal(base[100_000:], expect)


# ----------------------------------------------------------------------------- snapping edges
def test_snapping_calibration_close_to_the_bound() -> None:
    """Item 19: the smallest admissible scale may lie just below B (the old search
    tested scale = B, which always fails scale < B)."""
    m = dpfast.SnappingMechanism(0.5, 1.0, 3.0)
    assert m.scale < 3.0 and dpfast.snapping_epsilon(m.scale, 3.0, 1.0) <= 0.5
    assert dpfast.snapping_epsilon(math.nextafter(m.scale, 0), 3.0, 1.0) > 0.5
    b = 1000.0
    eps_min = dpfast.snapping_epsilon(math.nextafter(b, 0), b, 1.0)
    tight = dpfast.SnappingMechanism(eps_min, 1.0, b)
    assert tight.scale < b and dpfast.snapping_epsilon(tight.scale, b, 1.0) <= eps_min
    assert tight.scale > b * (1 - 1e-12)
    with pytest.raises(ValueError, match="bound or epsilon"):
        dpfast.SnappingMechanism(math.nextafter(eps_min, 0), 1.0, b)


@pytest.mark.parametrize("call,match", [
    (lambda: dpfast.snapping_epsilon(1e-320, 1e-318), "scale"),  # denormal
    (lambda: dpfast.snapping_epsilon(2.0**-1000, 2.0**-990), "scale"),
    (lambda: dpfast.snapping_epsilon(1.5 * 2.0**1023, 1.7e308), "scale"),
    (lambda: dpfast.snapping_epsilon(1.0, 10**400), "bound"),
    (lambda: dpfast.snapping(np.zeros(2), 1.0, 10**400), "bound"),
    (lambda: dpfast.SnappingMechanism(1.0, 1.0, 10**400), "bound"),
    (lambda: dpfast.SnappingMechanism(1.0, 1.0, 1e-320), "bound"),
    (lambda: dpfast.snapping_epsilon(2.0**-950, 2.0**-940, sensitivity=1e300), "sensitivity"),
    (lambda: dpfast.snapping(np.zeros(2), 1.0, 2.0**46), "bound"),
])
def test_snapping_parameter_edges(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_snapping_epsilon_checks_before_dividing_by_sensitivity() -> None:
    eps = dpfast.snapping_epsilon(1e10, 1e12, sensitivity=1e-300)
    assert math.isfinite(eps) and eps >= (1e-300 + 2.0**-49 * 1e12) / 1e10
    # the B = 2^46 lambda boundary: strict
    assert dpfast.snapping_epsilon(1.0, math.nextafter(2.0**46, 0)) > 0
    y = dpfast.snapping(np.zeros(10), 1.0, math.nextafter(2.0**46, 0), rng=KEY)
    assert np.all(np.isfinite(y))


def test_snapping_guarantee_is_stated_honestly() -> None:
    assert noise.snapping_delta(1.0, 372.0) == 0.0
    d = noise.snapping_delta(1.0, 1000.0)
    assert 0 < d <= 2.0**-1069
    assert isinstance(dpfast.SnappingMechanism(1.0, 1.0, 100.0).event, dpfast.events.Snapping)
    wide = dpfast.SnappingMechanism(1.0, 1.0, 1e4)
    assert wide.delta > 0 and wide.event.delta == wide.delta


def _snap_kernel(words, x, lam, big_lam, bound):
    from dpfast._kernels import chacha, grid

    buf = np.zeros((1, 64), np.uint64)
    buf[0, :len(words)] = words
    st_ = np.zeros((1, chacha.ST_COLS), np.int64)
    st_[0, chacha.ST_BLOCK] = 8
    out = np.zeros(1)
    grid.snapping(buf, st_, np.zeros(8, np.uint32), np.zeros((1, 3), np.uint32),
                  np.array([x]), out, 0, 1, 65536, lam, big_lam, bound)
    return float(out[0])


def test_snapping_tie_rule_is_round_half_even() -> None:
    """Constructed U* with fl(ln U*) = -1/2 exactly: x ± 1/2 is a tie on the grid Λ = 1,
    and ties go to the even neighbour (numpy's rint), as the analysis assumes."""
    u = 0.6065306597126334
    assert math.log(u) == -0.5
    mant = int((2 * u - 1) * 2**52) << 12  # U* = (1 + mant/2^64) / 2 = u
    first = 1 << 63  # no leading zeros: exponent -1
    plus, minus = 0, 1 << 63  # sign words
    assert _snap_kernel([first, mant, plus], 0.0, 1.0, 1.0, 100.0) == 0.0  # -0.5 -> -0
    assert _snap_kernel([first, mant, plus], 1.0, 1.0, 1.0, 100.0) == 0.0  # 0.5 -> 0
    assert _snap_kernel([first, mant, minus], 2.0, 1.0, 1.0, 100.0) == 2.0  # 2.5 -> 2
    assert _snap_kernel([first, mant, minus], 3.0, 1.0, 1.0, 100.0) == 4.0  # 3.5 -> 4


def test_snapping_u_star_distribution() -> None:
    """U* of Mironov 2012: each double d in (0, 1) with probability equal to its gap to
    the next double, i.e. binade [2^-k, 2^-k+1) with probability 2^-k and a uniform
    52-bit mantissa inside it."""
    from dpfast import random as dr
    from dpfast._kernels import chacha, grid

    # constructed: 128 zero bits then a set bit -> exponent -(1 + 128)
    buf = np.zeros(64, np.uint64)
    buf[2], buf[3] = 1 << 63, 5 << 12
    st_ = np.zeros(chacha.ST_COLS, np.int64)
    st_[chacha.ST_BLOCK] = 8
    u, pos = grid.uniform_double(buf, 0, st_, np.zeros(8, np.uint32), np.zeros(3, np.uint32))
    assert u == math.ldexp(1 + 5 * 2.0**-52, -129) and pos == 4
    # keyed: 100k draws
    key = np.frombuffer(KEY, "<u4").astype(np.uint32)
    nonce = dr._nonce_words([11])[0]
    buf = np.zeros(4096, np.uint64)
    st_ = np.zeros(chacha.ST_COLS, np.int64)
    pos = 4096
    n = 100_000
    us = np.empty(n)
    for i in range(n):
        us[i], pos = grid.uniform_double(buf, pos, st_, key, nonce)
    assert us.min() > 0 and us.max() < 1
    k = -np.floor(np.log2(us)).astype(np.int64)  # binade index: u in [2^-k, 2^-k+1)
    counts = np.bincount(np.minimum(k, 12), minlength=13)[1:]
    probs = np.array([2.0**-j for j in range(1, 12)] + [2.0**-11])
    from scipy import stats

    assert stats.chisquare(counts, probs * n).pvalue > 1e-4
    mant = (us * 2.0 ** (k + 52)).astype(np.int64)  # integer mantissa in [2^52, 2^53)
    assert np.all(mant == us * 2.0 ** (k + 52))
    assert stats.chisquare(np.bincount(mant % 16, minlength=16)).pvalue > 1e-4


def test_snapping_grid_for_non_power_of_two_scale_and_clamp() -> None:
    y = dpfast.snapping(np.linspace(-20, 20, 20_000), 3.0, 60.0, rng=KEY)  # Λ = 4
    inner = np.abs(y) < 60.0
    assert np.all(y[inner] % 4.0 == 0.0) and inner.mean() > 0.5
    # the input clamp alone: x beyond B behaves exactly as x = ±B (same keystream)
    for far, edge in ((1e300, 60.0), (-1e300, -60.0), (61.0, 60.0)):
        a = dpfast.snapping(np.full(3000, far), 3.0, 60.0, rng=KEY)
        b = dpfast.snapping(np.full(3000, edge), 3.0, 60.0, rng=KEY)
        assert np.array_equal(a, b)


# ----------------------------------------------------------------------------- first use
def test_scalars_in_scalars_out() -> None:
    y = dpfast.discrete_laplace(5, 2.0, rng=KEY)
    assert isinstance(y, np.integer) and not isinstance(y, np.ndarray)
    assert isinstance(dpfast.discrete_gaussian(np.int32(5), 2.0, rng=KEY), np.int32)
    z = dpfast.laplace(2.5, 1.0, rng=KEY)
    assert isinstance(z, np.floating) and not isinstance(z, np.ndarray)
    assert isinstance(dpfast.snapping(1.0, 1.0, 10.0, rng=KEY), np.floating)
    zero_d = dpfast.discrete_laplace(np.array(5), 2.0, rng=KEY)  # an ndarray stays one
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == ()
    assert int(y) == int(zero_d)


def test_pandas_in_pandas_out() -> None:
    pd = pytest.importorskip("pandas")
    s = pd.Series([10, 20, 30], index=["a", "b", "c"], name="counts")
    y = dpfast.discrete_laplace(s, 2.0, rng=KEY)
    assert isinstance(y, pd.Series) and list(y.index) == ["a", "b", "c"] and y.name == "counts"
    assert np.array_equal(y.to_numpy(), dpfast.discrete_laplace(s.to_numpy(), 2.0, rng=KEY))
    df = pd.DataFrame({"x": [1, 2], "y": [3, 4]}, index=[7, 9])
    d = dpfast.discrete_gaussian(df, 1.0, rng=KEY)
    assert isinstance(d, pd.DataFrame) and list(d.index) == [7, 9] and list(d.columns) == ["x", "y"]
    f = dpfast.laplace(pd.Series([0.5, 1.5], index=[3, 4]), 1.0, rng=KEY)
    assert isinstance(f, pd.Series) and list(f.index) == [3, 4]
    nullable = pd.Series([1, 2, 3], dtype="Int64")
    assert dpfast.discrete_laplace(nullable, 1.0, rng=KEY).dtype == np.int64
    with pytest.raises(ValueError, match="x contains missing values"):
        dpfast.discrete_laplace(pd.Series([1, None, 3], dtype="Int64"), 1.0)
    with pytest.raises(ValueError, match="x contains missing values"):
        dpfast.laplace(pd.Series([1.0, np.nan]), 1.0)


def test_import_dpfast_does_not_import_pandas() -> None:
    import subprocess
    import sys

    code = ("import sys, numpy as np, dpfast; dpfast.discrete_laplace(np.zeros(3, np.int64), 1.0);"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("fn,x", [(dpfast.discrete_laplace, np.zeros(300_000, np.int64)),
                                  (dpfast.discrete_gaussian, np.zeros(300_000, np.int64)),
                                  (dpfast.laplace, np.zeros(1_500_000)),
                                  (dpfast.snapping, np.zeros(300_000))])
def test_progress_reports_every_cell(fn, x) -> None:
    seen = []
    args = (1.0, 10.0) if fn is dpfast.snapping else (3.0,)
    y = fn(x, *args, rng=KEY, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (x.size, x.size)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:]))
    assert np.array_equal(y, fn(x, *args, rng=KEY))  # progress does not change the output
    with pytest.raises(TypeError, match="progress"):
        fn(x[:10], *args, progress="yes")


def test_progress_bar_on_stderr(capsys) -> None:
    dpfast.discrete_laplace(np.zeros(200_000, np.int64), 3.0, rng=KEY, progress=True)
    assert "dpfast" in capsys.readouterr().err


def test_grid_kernel_in_place_keeps_x_for_huge_noise() -> None:
    """grid_add with out=x: a cell left to the exact addition keeps x[i] (the exact
    addition reads it afterwards)."""
    from dpfast._kernels import grid

    x = np.array([1.0, 2.0, 0.5, -3.0])
    z = np.array([2**53 + 1, 4, -(2**60), 7], np.int64)
    orig = x.copy()
    nbig = np.zeros(1, np.int64)
    grid.grid_add(x, z, 1.0, np.finfo(np.float64).max, x, nbig)
    assert nbig[0] == 2 and x[0] == 1.0 and x[2] == 0.5 and list(x[[1, 3]]) == [6.0, 4.0]
    noise._grid_fix(orig, z, 1.0, np.finfo(np.float64).max, x, nbig)
    assert list(x) == [float(int(np.rint(a)) + int(b)) for a, b in zip(orig, z)]


@pytest.mark.parametrize("n", [10, 3 * (1 << 16) + 5])  # numpy's max/min; the parallel pass
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_float_noise_refuses_non_finite_x_of_any_size(n, bad) -> None:
    x = np.zeros(n)
    x[n - 2] = bad
    for fn in (dpfast.laplace, dpfast.gaussian):
        with pytest.raises(ValueError, match="x must be finite"):
            fn(x, 1.0, rng=KEY)
    x[n - 2] = 1e300
    with pytest.raises(ValueError, match="overflows"):
        dpfast.laplace(x, 2.0**-40, rng=KEY, granularity=2.0**-60)
    from dpfast.noise import _inputs

    x[n - 2] = -5.0
    assert _inputs.max_abs(x) == 5.0 and _inputs.max_abs(x[::2]) == 5.0 * (n % 2 == 0)
