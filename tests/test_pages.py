"""A sampler's new output has its pages touched first on the call's threads, each a
contiguous range of whole 2 MiB regions (dpfast._kernels.pages, _chunks.new_output).

The samplers' threads take 512 KiB chunks in turn, so on two threads both faulted in the
same 2 MiB regions of a new output and waited for each other: allocating grid Laplace on
10^7 cells scaled 1.61-1.66x on two threads against 1.83-1.91x into an existing output
(issue 40; timings are in docs/benchmarks.md, not here).  These tests check what is
touched and that the outputs are unchanged.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import dpfast
from dpfast._kernels import pages
from dpfast.noise import _chunks

from .helpers import KEY


@pytest.mark.parametrize("head", [0, 1, 4095, 4096, pages.REGION - 16, pages.REGION - 1])
@pytest.mark.parametrize("size", [0, 1, 5000, pages.REGION, 3 * pages.REGION + 12345])
def test_regions_cover_the_buffer_in_order_at_region_boundaries(head, size) -> None:
    buf = np.empty(size, np.uint8)
    args = (buf, min(head, size))
    n = pages._regions(args)
    edges = [pages._region_range(args, k, k + 1)[1:] for k in range(n)]
    assert edges[0][0] == 0 and edges[-1][1] == size
    assert all(edges[k][1] == edges[k + 1][0] for k in range(n - 1))
    # every range but the first starts on a region boundary of the buffer (head + j REGION)
    assert all((lo - args[1]) % pages.REGION == 0 for lo, _ in edges[1:] if lo < size)
    assert all(hi - lo <= pages.REGION for lo, hi in edges[1:])


@pytest.mark.parametrize("threads", [1, 2, 5])
@pytest.mark.parametrize("start", [0, 333, 4095])
@pytest.mark.parametrize("tail", [0, 1, 777, 4095])
def test_every_page_is_touched_and_nothing_else(threads, start, tail) -> None:
    """A zero byte in every 4 KiB page the buffer reaches, about one a page (a range's
    first byte, every 4 KiB from it and its last byte), no other byte changed, wherever
    the buffer starts and ends within its pages.  Failed before the range's last byte
    was touched: one thread runs one range from an unaligned first byte, which missed
    the buffer's last page when the buffer ended before that offset in it."""
    raw = np.full(5 * pages.REGION + 2 * pages.PAGE, 0xAB, np.uint8)
    off = (-raw.ctypes.data) % pages.PAGE + start  # the first byte at `start` in its page
    end = off + 5 * pages.REGION - start + tail  # the last page holds `tail` bytes (or all)
    buf = raw[off:end]
    pages.touch_pages(buf, threads)
    assert set(np.unique(buf).tolist()) == {0, 0xAB}
    zeros = np.flatnonzero(buf == 0)
    addr = buf.ctypes.data
    first_page = addr // pages.PAGE
    last_page = (addr + buf.size - 1) // pages.PAGE
    touched = {(addr + int(z)) // pages.PAGE for z in zeros}
    assert touched == set(range(first_page, last_page + 1))
    assert zeros.size <= (last_page - first_page + 1) + pages._regions(
        (buf, (-addr) % pages.REGION))


@pytest.mark.parametrize("shape,dtype,order", [((3 * 10**6,), np.float64, "C"),
                                               ((2000, 3000), np.int64, "C"),
                                               ((3000, 1500), np.float32, "F"),
                                               ((1000,), np.float64, "C")])
def test_new_output_is_an_empty_array_of_the_shape_and_layout(shape, dtype, order) -> None:
    out = _chunks.new_output(shape, dtype, order)
    assert out.shape == shape and out.dtype == dtype
    assert out.flags.c_contiguous if order == "C" else out.flags.f_contiguous
    assert out.flags.writeable and out.flags.owndata


def test_new_output_touches_only_on_threads_and_large_arrays(monkeypatch) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(pages, "touch_pages", lambda buf, t: calls.append((buf.size, t)))
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        _chunks.new_output((_chunks.TOUCH_BYTES,), np.uint8)
        assert calls == []
        if old > 1:
            numba.set_num_threads(2)
            _chunks.new_output((_chunks.TOUCH_BYTES // 8 - 1,), np.float64)
            assert calls == []
            _chunks.new_output((_chunks.TOUCH_BYTES // 8,), np.float64)
            assert calls == [(_chunks.TOUCH_BYTES, 2)]
    finally:
        numba.set_num_threads(old)


@pytest.mark.parametrize("fn,dtype", [(dpfast.laplace, np.float64),
                                      (dpfast.gaussian, np.float32),
                                      (dpfast.discrete_laplace, np.int64)])
def test_allocating_calls_give_the_same_output_as_into_an_out(fn, dtype) -> None:
    """A new output (touched first, on every thread) holds what the same call writes
    into an existing array."""
    n = _chunks.TOUCH_BYTES // np.dtype(dtype).itemsize + 4321
    x = (np.arange(n) % 1000).astype(dtype)
    new = fn(x, 3.0, rng=KEY)
    into = np.full(n, 7, dtype)
    fn(x, 3.0, rng=KEY, out=into)
    assert new.dtype == dtype and np.array_equal(new, into)
