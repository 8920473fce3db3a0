"""First touch of a new output's pages, on several threads in contiguous ranges.

Private (docs/design.md): numpy/numba only, validate nothing, cached.  The exact samplers'
threads take their chunks (512 KiB of float64 or int64 cells) one at a time from a shared
counter, so on two threads neighbouring chunks go to different threads and both fault in
the same 2 MiB region of a new output (a transparent huge page, or one page-table page of
4 KiB pages): one waits for the other's fault.  Touching the pages first, each thread a
contiguous range of whole 2 MiB regions, lets the faults run side by side.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import chunked

#: bytes of a region (x86-64 huge page, and the span of one page-table page)
REGION = 1 << 21
#: bytes between two touches (the smallest page)
PAGE = 1 << 12


@nb.njit(cache=True, nogil=True)
def _touch(buf, lo, hi):  # pragma: no cover - compiled
    # every PAGE bytes from lo, and the last byte: a range that does not start on a page
    # boundary would otherwise miss its last page when it ends before lo's offset in it
    for i in range(lo, hi, PAGE):
        buf[i] = 0
    if hi > lo:
        buf[hi - 1] = 0


def _regions(args: tuple) -> int:
    buf, head = args
    n = buf.shape[0]
    return 1 + -(-max(0, n - head) // REGION)


def _region_range(args: tuple, a: int, b: int) -> tuple:
    buf, head = args
    n = buf.shape[0]

    def edge(k: int) -> int:
        return 0 if k == 0 else min(n, head + (k - 1) * REGION)

    return buf, edge(a), edge(b)


_TOUCH = chunked(_touch, _regions, _region_range)


def touch_pages(buf: np.ndarray, threads: int) -> None:
    """Write a zero byte to every 4 KiB page of ``buf`` (a contiguous uint8 view of a new
    array, its contents not yet defined) on up to ``threads`` threads, in ranges of whole
    2 MiB regions of the address space (region 0: the bytes before the first boundary;
    one thread: a single range from the first byte)."""
    head = (-buf.ctypes.data) % REGION
    _TOUCH.launch((buf, head), threads)
