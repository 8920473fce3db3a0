"""A separate preallocated ``out`` is written in one pass, like ``out=x`` (issue 40).

Into a separate ``out`` the integer samplers used to draw every cell's noise twice (a
checking pass, then a replay that writes), so ``out=`` ran slower than allocating.  Then
x's range was read first, to keep ``out`` untouched on an overflow (one more pass over x,
the one cost ``out=`` kept over ``out=x``).  Now a separate ``out`` is written in one pass,
as numpy's ``out=`` is: bit for bit what allocating gives, and on an overflow each cell
holds what it held or its noisy value (x itself is never changed).
"""

from __future__ import annotations

import numpy as np
import pytest

import dpfast
from dpfast.noise import _drive, _windows, addressed

from .helpers import KEY, assert_partly_written


def _count(monkeypatch, owner, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(owner, name)

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, spy)
    return calls


@pytest.mark.parametrize("fn,param", [(dpfast.discrete_laplace, 3.0),
                                      (dpfast.discrete_laplace, np.full(200_000, 0.4)),
                                      (dpfast.discrete_gaussian, 2.5)])
@pytest.mark.parametrize("dtype", ["i8", "i4", ">i8", "u2", "i2"])
def test_separate_out_is_written_in_one_pass(monkeypatch, fn, param, dtype) -> None:
    """Fails on the old code: a separate out drew the noise twice (replay) for every
    dtype.  The result is bit for bit the allocating call's."""
    n = 200_000
    info = np.iinfo(dtype)
    mid = (int(info.min) + int(info.max)) // 2
    x = (np.arange(n) % 20 + mid).astype(dtype)
    want = fn(x, param, rng=KEY)
    out = np.full_like(x, 7)
    runs = _count(monkeypatch, _drive, "run_discrete")
    replays = _count(monkeypatch, _windows.WindowedNoise, "replay")
    got = fn(x, param, rng=KEY, out=out)
    assert got is out
    assert np.array_equal(out, want)
    assert not replays
    if np.dtype(dtype) == np.int64 and np.dtype(dtype).isnative:
        assert len(runs) == 1  # straight into out, no window buffer


@pytest.mark.parametrize("dtype", ["i2", "i8", ">i8", "u1"])
def test_near_the_limits_out_is_written_in_one_pass(monkeypatch, dtype) -> None:
    """x next to its dtype's limit: still one pass (no x range read, no replay), bit for
    bit the allocating call; when it overflows, x is unchanged and out partly written."""
    info = np.iinfo(dtype)
    n = 100_000
    x = np.full(n, (int(info.min) + int(info.max)) // 2, dtype)
    x[-1] = info.max - 1
    replays = _count(monkeypatch, _windows.WindowedNoise, "replay")
    out = np.empty_like(x)
    for k in range(60):  # a key whose last noise fits, and one where it overflows
        key = bytes([k]) * 32
        z = dpfast.discrete_laplace(np.zeros(n, np.int64), 3.0, rng=key)
        if z[-1] <= 1:
            dpfast.discrete_laplace(x, 3.0, rng=key, out=out)
            assert np.array_equal(out, dpfast.discrete_laplace(x, 3.0, rng=key))
        else:
            keep = x.copy()
            out[:] = 5
            with pytest.raises(OverflowError):
                dpfast.discrete_laplace(x, 3.0, rng=key, out=out)
            assert np.array_equal(x, keep)
            assert_partly_written(out, 5, x, z)
    assert not replays
    assert any(dpfast.discrete_laplace(np.zeros(n, np.int64), 3.0, rng=bytes([k]) * 32)[-1]
               > 1 for k in range(60))  # the overflow branch ran


# --- every sampler with out=: the three ways of writing agree bit for bit ---------------

_INT_DTYPES = ["i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", ">i8", "<i4"]


def _int_x(dtype: str, n: int) -> np.ndarray:
    info = np.iinfo(dtype)
    mid = (int(info.min) + int(info.max)) // 2
    return (np.arange(n) % 7 + mid).astype(dtype)


@pytest.mark.parametrize("fn,param", [(dpfast.discrete_laplace, 3.0),
                                      (dpfast.discrete_laplace, 0.4),
                                      (dpfast.discrete_laplace, "cells"),
                                      (dpfast.discrete_gaussian, 2.5),
                                      (dpfast.discrete_gaussian, "cells")])
@pytest.mark.parametrize("dtype", _INT_DTYPES)
def test_integer_samplers_out_separate_in_place_and_allocating_agree(fn, param, dtype) -> None:
    """For every integer sampler path (envelope table, geometric inversion, per-cell
    parameters) and dtype: ``out=`` into a separate array, ``out=x`` and a new array give
    the same values bit for bit, and a separate ``out`` never touches x."""
    n = 3 * _drive.CHUNK // 2 + 17  # two chunks, the second partial
    if param == "cells":
        param = np.linspace(0.3, 4.0, n)
    x = _int_x(dtype, n)
    keep = x.copy()
    want = fn(x, param, rng=KEY)
    assert np.array_equal(x, keep)
    out = np.full_like(x, 3)
    assert fn(x, param, rng=KEY, out=out) is out
    assert np.array_equal(out, want) and out.dtype == x.dtype
    assert np.array_equal(x, keep)  # the input is never mutated
    strided = np.zeros(2 * n, x.dtype)[::2]
    fn(x, param, rng=KEY, out=strided)
    assert np.array_equal(strided, want)
    y = x.copy()
    assert fn(y, param, rng=KEY, out=y) is y
    assert np.array_equal(y, want)


@pytest.mark.parametrize("fn", [dpfast.laplace, dpfast.gaussian])
@pytest.mark.parametrize("xdt,odt", [("f8", "f8"), ("f4", "f4"), ("f8", "f4"), ("i4", "f8"),
                                     (">f8", "f8"), ("f4", "f8")])
def test_grid_samplers_out_separate_in_place_and_allocating_agree(fn, xdt, odt) -> None:
    """The grid samplers, every input / output dtype pair: a separate ``out`` holds what
    allocating gives (rounded once more when ``out`` is float32 and the new array is not),
    ``out=x`` the same, and x is never mutated."""
    n = 3 * _drive.CHUNK // 2 + 17
    x = (np.linspace(-50.0, 50.0, n) * 1.37).astype(xdt)
    keep = x.copy()
    new = fn(x, 1.5, rng=KEY)
    assert np.array_equal(x, keep)
    # the float64 grid values (x widens exactly), rounded once more for a float32 out
    want = fn(x.astype(np.float64), 1.5, rng=KEY).astype(odt)
    if new.dtype == np.dtype(odt):
        assert np.array_equal(new, want)
    out = np.full(n, 9.0, odt)
    assert fn(x, 1.5, rng=KEY, out=out) is out
    assert np.array_equal(out, want)
    assert np.array_equal(x, keep)
    strided = np.zeros(2 * n, odt)[::2]
    fn(x, 1.5, rng=KEY, out=strided)
    assert np.array_equal(strided, want)
    if np.dtype(xdt) == np.dtype(odt):
        y = x.copy()
        assert fn(y, 1.5, rng=KEY, out=y) is y
        assert np.array_equal(y, want)


@pytest.mark.parametrize("fn", [addressed.laplace, addressed.gaussian])
@pytest.mark.parametrize("xdt,odt", [("f8", "f8"), ("f4", "f4"), ("f8", "f4"), ("i4", "f8")])
def test_addressed_grid_out_is_written_in_place_of_a_temporary(monkeypatch, fn, xdt,
                                                               odt) -> None:
    """The addressed grid samplers wrote every value into a new full-size float64 array
    and then copied it into ``out`` (so ``out=`` cost more than allocating); now a
    C-contiguous float64 ``out`` is written by the kernel itself and a float32 one slice by
    slice.  Fails on the old code (the kernel's output is not ``out``).  Values: the same
    bit for bit as allocating, in several slices, with out separate, strided or x itself;
    x never mutated."""
    monkeypatch.setattr(addressed, "_SLICE", 1 << 14)
    n = 3 * (1 << 14) + 11
    x = (np.linspace(-50.0, 50.0, n) * 1.37).astype(xdt)
    keep = x.copy()
    want = fn(x, 1.5, rng=KEY, stream=4, offset=5).astype(odt)
    targets: list[np.ndarray] = []
    real = addressed._gk.grid_add

    def spy(xs, z, g, sat, res, nbig):  # type: ignore[no-untyped-def]
        targets.append(res)
        return real(xs, z, g, sat, res, nbig)

    monkeypatch.setattr(addressed._gk, "grid_add", spy)
    out = np.full(n, 9.0, odt)
    assert fn(x, 1.5, rng=KEY, stream=4, offset=5, out=out) is out
    assert np.array_equal(out, want)
    assert np.array_equal(x, keep)
    if np.dtype(odt) == np.float64:
        assert all(np.shares_memory(t, out) for t in targets)
    else:
        assert all(t.size <= 1 << 14 for t in targets)  # one slice, never the whole array
    strided = np.zeros(2 * n, odt)[::2]
    fn(x, 1.5, rng=KEY, stream=4, offset=5, out=strided)
    assert np.array_equal(strided, want)
    if np.dtype(xdt) == np.dtype(odt):
        y = x.copy()
        assert fn(y, 1.5, rng=KEY, stream=4, offset=5, out=y) is y
        assert np.array_equal(y, want)
