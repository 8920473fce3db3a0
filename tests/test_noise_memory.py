"""Integer noising in bounded memory, bit for bit as before (issue 22, item 11).

Noising an int8 / int32 / big-endian array (or any array into a separate ``out``) used to
build the whole call's int64 noise and several int64 temporaries: ~40 bytes per cell
beyond the data (4 GiB for a 95 MiB int8 array).  The noise now comes window by window
(:mod:`dpfast.noise._windows`); the peak extra allocation is a few windows, whatever n.
numpy's allocations are traced by tracemalloc, so the peak is measured, not estimated.
"""

from __future__ import annotations

import contextlib
import tracemalloc

import numpy as np
import pytest

import dpfast
from dpfast.noise import _chunks, _exact, _windows

from .helpers import KEY, assert_partly_written

MiB = 1 << 20


def _data(n: int, dtype: str) -> np.ndarray:
    return (np.arange(n) % 20 + 50).astype(dtype)  # far from every dtype's limits


@pytest.mark.parametrize("dtype", ["i1", "i4", ">i8", "u2"])
@pytest.mark.parametrize("mode", ["new", "out=x", "out"])
def test_peak_extra_memory_is_a_few_windows(dtype: str, mode: str) -> None:
    n = 1 << 22  # 4 Mi cells: the old path needed ~40 bytes per cell (160 MiB) here
    x = _data(n, dtype)
    out = np.empty_like(x) if mode == "out" else None

    def noise(x: np.ndarray) -> np.ndarray:
        if mode == "new":
            return dpfast.discrete_laplace(x, 3.0, rng=KEY)
        return dpfast.discrete_laplace(x, 3.0, rng=KEY, out=x if mode == "out=x" else out)

    noise(x.copy())  # the same path once before tracing: every kernel it uses is compiled
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        res = noise(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    extra = peak - (res.nbytes if mode == "new" else 0)  # the result itself is not extra
    assert extra < 4 * _windows.window_bytes(), f"{extra / MiB:.1f} MiB beyond the data"
    ref = dpfast.discrete_laplace(np.zeros(n, np.int64), 3.0, rng=KEY)
    assert np.array_equal(res.astype(np.int64), _data(n, dtype).astype(np.int64) + ref)


@contextlib.contextmanager
def _small_batches(monkeypatch, batch: int, window: int):
    """Batches and windows of a few chunks, so small calls cross both boundaries."""
    monkeypatch.setattr(_chunks, "REFILL_BATCH", batch)
    monkeypatch.setattr(_windows, "WINDOW_CHUNKS", window)
    yield


# envelope tables (Laplace scale >= 1, Gaussian) and geometric inversion (scale < 1)
LAWS = [(dpfast.discrete_laplace, 3.0), (dpfast.discrete_gaussian, 2.5),
        (dpfast.discrete_laplace, 0.4)]


@pytest.mark.parametrize("fn,param", LAWS)
@pytest.mark.parametrize("dtype", ["i1", "i4", ">i8", "u8", ">u4"])
def test_windowed_noise_equals_the_int64_drivers(monkeypatch, fn, param, dtype) -> None:
    """The windowed noise of every dtype equals the noise the int64 path (run_discrete,
    unchanged) adds to zeros: same streams, batches, order of the exact continuation."""
    n = 5 * 65536 + 123  # 6 chunks: 3 batches of 2, windows of 1 chunk
    with _small_batches(monkeypatch, 2, 1):
        ref = fn(np.zeros(n, np.int64), param, rng=KEY)
        x = _data(n, dtype)
        got = fn(x, param, rng=KEY)
        y = x.copy()
        fn(y, param, rng=KEY, out=y)
        o = np.empty_like(x)
        fn(x, param, rng=KEY, out=o)
    want = x.astype(np.int64) + ref
    assert got.dtype == x.dtype
    for res in (got, y, o):
        assert np.array_equal(res.astype(np.int64), want)


def test_default_windows_and_per_cell_scales_equal_the_int64_drivers() -> None:
    n = 3 * (1 << 20) + 77  # several default windows in one batch
    scale = np.linspace(0.5, 2.5, n)
    ref = dpfast.discrete_laplace(np.zeros(n, np.int64), scale, rng=KEY)
    got = dpfast.discrete_laplace(_data(n, "i2"), scale, rng=KEY)
    assert np.array_equal(got.astype(np.int64), _data(n, "i2").astype(np.int64) + ref)
    sig = np.linspace(0.5, 3.0, 70001)
    ref = dpfast.discrete_gaussian(np.zeros(sig.size, np.int64), sig, rng=KEY)
    assert np.array_equal(dpfast.discrete_gaussian(_data(sig.size, ">i4"), sig, rng=KEY),
                          _data(sig.size, ">i4") + ref)


def _spy_finish(monkeypatch) -> list[int]:
    finished: list[int] = []
    real = _windows.WindowedNoise._finish

    def spy(self, i, ints, u64s):
        finished.append(i)
        return real(self, i, ints, u64s)

    monkeypatch.setattr(_windows.WindowedNoise, "_finish", spy)
    return finished


@pytest.mark.parametrize("mode,fn,param,n", [
    # geometric inversion, per-cell scales: ~6% of the cells forced undecided
    (_exact.ForceMode.REJECTION, dpfast.discrete_laplace, "40", 3 * 65536 + 5),
    # envelope table: every acceptance forced undecided
    (_exact.ForceMode.ACCEPT, dpfast.discrete_laplace, 3.0, 65536 + 100),
])
def test_pending_cells_are_finished_in_the_drivers_order(monkeypatch, mode, fn, param,
                                                         n) -> None:
    """Forced through the exact continuation, undecided cells of several windows and
    batches share the call's continuation stream: the order they are finished in is the
    driver's (batch, round, chunk, cell), or the values would differ."""
    finished = _spy_finish(monkeypatch)
    scale = np.full(n, 40.0) if param == "40" else param
    with _small_batches(monkeypatch, 1, 1), _exact.force_exact(mode):
        ref = fn(np.zeros(n, np.int64), scale, rng=KEY)
        got = fn(_data(n, ">i4"), scale, rng=KEY)
    assert len(finished) > 100 and finished == sorted(finished)
    assert len({i // 65536 for i in finished}) >= 2  # in several batches and windows
    assert np.array_equal(got, _data(n, ">i4") + ref)


@pytest.mark.parametrize("dtype,base,param,forced", [
    ("i1", 0, 3.0, False),
    (">i8", 0, "40", True),  # with undecided cells finished (and undone) one by one
    ("u2", 30000, "40", True),
])
def test_overflow_late_in_the_call_leaves_out_unchanged(monkeypatch, dtype, base, param,
                                                        forced) -> None:
    """An overflow after several windows were written: out=x is restored (the written
    ranges and cells undone from a replay); a separate out, written in one pass, holds
    what it held or the noisy value, cell by cell."""
    n = 3 * 65536
    info = np.iinfo(dtype)
    x = np.full(n, base, dtype)
    x[-3] = info.max  # overflows upward when the key's noise there is > 0
    scale = np.full(n, 40.0) if param == "40" else param
    force = _exact.force_exact(_exact.ForceMode.REJECTION) if forced else \
        contextlib.nullcontext()
    finished = _spy_finish(monkeypatch)
    with _small_batches(monkeypatch, 1, 1), force:
        for k in range(40):
            key = bytes([k]) * 32
            z = dpfast.discrete_laplace(np.zeros(n, np.int64), scale, rng=key)
            if z[-3] > 0:
                break
        else:  # pragma: no cover - probability below 1e-10
            pytest.fail("no key found")
        y = x.copy()
        with pytest.raises(OverflowError, match=f"dtype {np.dtype(dtype)}"):
            dpfast.discrete_laplace(y, scale, rng=key, out=y)
        assert np.array_equal(y, x)
        o = np.full_like(x, 7)
        with pytest.raises(OverflowError):
            dpfast.discrete_laplace(x, scale, rng=key, out=o)
        assert_partly_written(o, 7, x, z)
        assert np.any(o[:65536] != 7)  # the first window was written
    assert bool(finished) == forced


def test_non_contiguous_and_fortran_layouts() -> None:
    base = _data(600 * 1000, ">i4").reshape(600, 1000)
    x = base[:, ::2]
    ref = dpfast.discrete_laplace(np.zeros(x.size, np.int64), 3.0, rng=KEY).reshape(x.shape)
    want = x.astype(np.int64) + ref
    assert np.array_equal(dpfast.discrete_laplace(x, 3.0, rng=KEY), want)
    y = np.asfortranarray(x)
    dpfast.discrete_laplace(y, 3.0, rng=KEY, out=y)
    assert np.array_equal(y, want)
    o = np.empty(x.shape, x.dtype, order="F")
    dpfast.discrete_laplace(x, 3.0, rng=KEY, out=o)
    assert np.array_equal(o, want)
    z = base.copy()
    v = z[:, ::2]
    dpfast.discrete_laplace(v, 3.0, rng=KEY, out=v)  # in place through a strided view
    assert np.array_equal(v, want) and np.array_equal(z[:, 1::2], base[:, 1::2])


@pytest.mark.parametrize("dtype", ["i1", "f4", "noncontiguous"])
def test_float_noise_of_other_inputs_converts_into_the_output(dtype: str) -> None:
    """laplace / gaussian / snapping of int8, float32 or strided x: x is converted into
    the output and noised there (no float64 copy of x), bit for bit as from a float64
    copy."""
    n = 1 << 23
    if dtype == "noncontiguous":
        x = np.linspace(-100.0, 100.0, 2 * n)[::2]
    else:
        x = _data(n, dtype)
    for fn in (dpfast.laplace, dpfast.gaussian):
        fn(x, 1.5, rng=KEY)  # the same path once before tracing (compiling allocates)
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            res = fn(x, 1.5, rng=KEY)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak - res.nbytes < 4 * _windows.window_bytes()
        # a float32 x gives float32: the float64 result rounded once more
        want = fn(np.array(x, np.float64), 1.5, rng=KEY)
        assert res.dtype == (np.float32 if dtype == "f4" else np.float64)
        assert np.array_equal(res, want.astype(res.dtype))
    dpfast.snapping(x, 1.5, 200.0, rng=KEY)  # the same path once before tracing
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        res = dpfast.snapping(x, 1.5, 200.0, rng=KEY)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak - res.nbytes < 4 * _windows.window_bytes()
    assert np.array_equal(res, dpfast.snapping(np.array(x, np.float64), 1.5, 200.0, rng=KEY))
    o = np.empty(n, np.float64)
    assert dpfast.laplace(x, 1.5, rng=KEY, out=o) is o
    assert np.array_equal(o, dpfast.laplace(np.array(x, np.float64), 1.5, rng=KEY))
