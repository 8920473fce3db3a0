"""The float mechanisms' fused grid output: the samplers' kernels write the exact grid value
``(rint(x/g) + Z) g`` rounded once straight into the output (MODE_GRID), with no noise
buffer.  Checked against the two-step reference: the same key's integer noise ``Z`` (the
same stream layout) followed by the grid addition (``grid_add`` + the exact fix-up)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpfast
from dpfast import noise
from dpfast._kernels import grid as _gk
from dpfast._kernels import samplers as _sk
from dpfast.noise import _chunks, _drive, _exact

KEY = bytes(range(32))
DBL_MAX = float(np.finfo(np.float64).max)


def _reference(x: np.ndarray, z: np.ndarray, g: float) -> np.ndarray:
    res = np.empty(x.size)
    nbig = np.zeros(-(-x.size // _gk.GRID_BLOCK), np.int64)
    _gk.grid_add(x, z, g, DBL_MAX, res, nbig)
    if nbig.any():
        noise._grid_fix(x, z, g, DBL_MAX, res, nbig)
    return res


def _inputs(n: int) -> np.ndarray:
    r = np.random.default_rng(5)
    x = r.normal(0.0, 1e3, n)
    x[::7] = np.round(x[::7])  # integers, halves (rint ties to even) and negatives
    x[1::11] = np.floor(x[1::11]) + 0.5
    return x


@pytest.mark.parametrize("fn,law,scale", [(dpfast.laplace, "discrete_laplace", 10.0),
                                          (dpfast.gaussian, "discrete_gaussian", 3.0)])
def test_fused_grid_output_equals_noise_then_grid_addition(monkeypatch, fn, law,
                                                          scale) -> None:
    """Over two batches of chunks (128 chunks of 2^16 cells, then a part of one), with
    the default grid: out of place, into ``out`` and in place (``out=x``)."""
    monkeypatch.setattr(_chunks, "REFILL_BATCH", 128)
    n = 128 * 65536 + 70_001
    x = _inputs(n)
    g = noise.granularity(scale)
    z = getattr(dpfast, law)(np.zeros(n, np.int64), Fraction(scale) / Fraction(g), rng=KEY)
    expect = _reference(x, z, g)
    got = fn(x, scale, rng=KEY)
    assert np.array_equal(got, expect)
    out = np.full(n, np.nan)
    assert fn(x, scale, rng=KEY, out=out) is out and np.array_equal(out, expect)
    y = x.copy()
    fn(y, scale, rng=KEY, out=y)
    assert np.array_equal(y, expect)


@pytest.mark.parametrize("forced", [1, 3])
@pytest.mark.parametrize("fn,scale,gran", [(dpfast.laplace, 0.3, 1.0),  # geometric kernel
                                           (dpfast.laplace, 40.0, 1.0),  # envelope table
                                           (dpfast.gaussian, 2.5, 0.5)])
def test_pending_cells_get_the_same_grid_value(fn, scale, gran, forced) -> None:
    """Cells finished exactly in Python (every cell, in the forced modes) are written by
    the driver's exact grid store: the output equals the reference built from the
    integer noise drawn under the same forced mode, in place and out of place."""
    n = 4000
    x = _inputs(n)
    law = "discrete_laplace" if fn is dpfast.laplace else "discrete_gaussian"
    t = Fraction(scale) / Fraction(gran)
    with _exact.force_exact(forced):
        z = getattr(dpfast, law)(np.zeros(n, np.int64), t, rng=KEY)
        y = x.copy()
        fn(y, scale, rng=KEY, granularity=gran, out=y)
        got = fn(x, scale, rng=KEY, granularity=gran)
    expect = _reference(x, z, gran)
    assert np.array_equal(got, expect) and np.array_equal(y, expect)
    free = fn(x, scale, rng=KEY, granularity=gran)  # kernel-written cells, same reference
    zf = getattr(dpfast, law)(np.zeros(n, np.int64), t, rng=KEY)
    assert np.array_equal(free, _reference(x, zf, gran))


def test_huge_noise_of_the_geometric_kernel_becomes_pending() -> None:
    """Per-cell scales (the geometric kernel) of 2^50: cells with |Z| >= 2^53 are handed
    to the exact addition (status PENDING_GRID_BIG), the others written by the kernel."""
    n = 30_000
    parsed, _ = _drive.parse_param(np.full(n, 2.0**50), "scale")
    p = _drive.make_param(parsed, (n,))
    z = np.empty(n, np.int64)
    _drive.run_discrete(dpfast.default_rng(KEY), _drive.LAPLACE, p, n, z)
    assert np.count_nonzero(np.abs(z) >= 2**53) >= 3  # the test has power
    x = _inputs(n)
    out = np.full(n, np.nan)
    _drive.run_discrete(dpfast.default_rng(KEY), _drive.LAPLACE, p, n, out, x,
                        grid=(1.0, DBL_MAX, -1.0))
    assert np.array_equal(out, _reference(x, z, 1.0))
    exact = [float(int(np.rint(a)) + int(b)) for a, b in zip(x, z)]  # Python: rounded once
    assert out.tolist() == exact


def test_grid_mode_saturates_at_the_largest_double() -> None:
    """x near the top of the range: the exact grid value beyond DBL_MAX gives ±DBL_MAX."""
    x = np.array([DBL_MAX, -DBL_MAX, DBL_MAX / 2, 0.0] * 500)
    g = 2.0**960
    y = dpfast.laplace(x, 2.0**990, rng=KEY, granularity=g)
    assert np.all(np.isfinite(y)) and np.all(np.abs(y) <= DBL_MAX)
    assert np.all(np.mod(y, g) == 0)  # on the grid (DBL_MAX is a multiple of g)
    assert np.any(y[0::4] == DBL_MAX) and np.any(y[1::4] == -DBL_MAX)
    assert np.all(y[0::4] > DBL_MAX / 2) and np.all(y[1::4] < -DBL_MAX / 2)


def test_grid_contract_constants() -> None:
    assert _sk.MODE_GRID not in (_sk.MODE_WRITE, _sk.MODE_ADD, _sk.MODE_SUB)
    assert _sk.PENDING_GRID_BIG not in (_sk.PENDING_INVERSION, _sk.PENDING_REJECTION,
                                        _sk.PENDING_BERNOULLI, _sk.PENDING_ENV_ACCEPT,
                                        _sk.PENDING_ENV_TAIL)


@pytest.mark.parametrize("fn, param", [(dpfast.gaussian, 1.5), (dpfast.laplace, 0.75)])
def test_float32_out_is_the_float64_result_rounded(fn, param) -> None:
    """A float32 ``out`` gets the float64 result rounded to float32, by the kernel itself
    (float32 x read as it is, also in place; the pending path agrees, forced exact)."""
    x32 = np.linspace(-4, 4, 50_001, dtype=np.float32)
    ref = fn(x32.astype(np.float64), param, rng=KEY)
    out = np.empty_like(x32)
    assert fn(x32, param, rng=KEY, out=out) is out
    np.testing.assert_array_equal(out, ref.astype(np.float32))
    inplace = x32.copy()
    fn(inplace, param, rng=KEY, out=inplace)
    np.testing.assert_array_equal(inplace, out)
    with _exact.force_exact(3):  # every cell through the driver's exact grid store
        forced_ref = fn(x32[:2000].astype(np.float64), param, rng=KEY)
        forced = np.empty(2000, np.float32)
        fn(x32[:2000], param, rng=KEY, out=forced)
    np.testing.assert_array_equal(forced, forced_ref.astype(np.float32))
    big = np.full(3, 3e38, np.float32)
    fn(big, 2.0**110, rng=KEY, out=big)
    assert np.all(np.isfinite(big))  # saturated at the float32 range


def test_addressed_float32_out_is_the_float64_result_rounded() -> None:
    from dpfast.noise import addressed

    x = np.linspace(-2, 2, 3001)
    ref = addressed.gaussian(x, 1.25, rng=KEY, stream=3)
    out = np.empty(x.size, np.float32)
    assert addressed.gaussian(x, 1.25, rng=KEY, stream=3, out=out) is out
    np.testing.assert_array_equal(out, ref.astype(np.float32))
