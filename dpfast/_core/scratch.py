"""Scratch memory reused across calls by one thread: a lease of pre-touched pages.

A release's bounding allocates tens of megabytes of short-lived arrays (codes, grouped
rows, counts).  In a long-lived process that runs one such call after another -- a dask
worker running the combine tasks of a shuffle -- each call's temporaries land on fresh
pages: glibc serves large requests with ``mmap`` and returns them on ``free``, and dask's
nanny sets ``MALLOC_TRIM_THRESHOLD_=65536``, which also turns off glibc's adaptive
threshold, so no large block is ever reused.  The kernel zeroes every fresh page on first
touch (a page fault each): a quarter of a 1.25-million-row combine's CPU time on a worker.

:func:`lease` opens a region in which :func:`empty` / :func:`zeros` carve arrays from
blocks the calling thread keeps between leases (bump allocation: nothing is freed inside a
lease; everything is handed back when the outermost lease ends).  Outside a lease they are
``numpy.empty`` / ``numpy.zeros``.  The blocks all threads of the process keep total at
most :func:`limit` bytes (``DPFAST_SCRATCH_BYTES``, default 256 MiB; 0 turns the pool
off): a request that does not fit is an ordinary array, so a pool of many threads (dask's
threaded scheduler) keeps no more than one worker thread would.  A thread's blocks are
freed when the thread ends, or by :func:`release`.

Contract for callers: an array from :func:`empty` / :func:`zeros` must not be reachable
after the lease that made it ends (copy what is returned: fancy indexing, ``.copy()``).
Only call sites that know their arrays are temporaries use them; a function whose result
a caller may keep uses them only when that caller holds the lease (the dask combine
does, for its whole task, and returns only copies).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import cast

import numpy as np
import numpy.typing as npt

__all__ = ["lease", "empty", "zeros", "limit", "release", "active", "kept", "pages"]

_ALIGN = 64  # cache-line aligned views
_MIN_BLOCK = 1 << 22  # 4 MiB: small requests share a block


def limit() -> int:
    """Bytes of scratch all threads of the process may keep between leases
    (``DPFAST_SCRATCH_BYTES``: a non-negative integer; unset or empty: 256 MiB)."""
    raw = os.environ.get("DPFAST_SCRATCH_BYTES", "")
    try:
        v = int(raw) if raw.strip() else 256 << 20
    except ValueError:
        v = -1
    if v < 0:
        raise ValueError(f"DPFAST_SCRATCH_BYTES must be a non-negative integer number of "
                         f"bytes, got {raw!r}")
    return v


_kept_lock = threading.Lock()
_kept = 0  # bytes of blocks kept by all threads


def _keep(size: int, cap: int) -> bool:
    """Reserve ``size`` bytes of the process-wide budget ``cap``."""
    global _kept
    with _kept_lock:
        if _kept + size > cap:
            return False
        _kept += size
        return True


def _drop(size: int) -> None:
    global _kept
    with _kept_lock:
        _kept -= size


class _Arena:
    """One thread's blocks (uint8 arrays) and, during a lease, each block's cursor."""

    __slots__ = ("blocks", "used", "depth", "cap")

    def __init__(self) -> None:
        self.blocks: list[np.ndarray] = []
        self.used: list[int] = []
        self.depth = 0
        self.cap = 0

    def size(self) -> int:
        return sum(b.shape[0] for b in self.blocks)

    def clear(self) -> None:
        _drop(self.size())
        self.blocks, self.used = [], []

    def __del__(self) -> None:  # the thread ended: its blocks go, and their budget
        try:
            _drop(self.size())
        except Exception:  # pragma: no cover - interpreter shutdown
            pass

    def take(self, nbytes: int) -> np.ndarray | None:
        need = -(-max(nbytes, 1) // _ALIGN) * _ALIGN
        for j, blk in enumerate(self.blocks):  # first fit, in the order they were made
            u = self.used[j]
            if blk.shape[0] - u >= need:
                self.used[j] = u + need
                return blk[u:u + nbytes]
        size = max(need, _MIN_BLOCK)
        if not _keep(size, self.cap):
            return None
        blk = _aligned(size)
        self.blocks.append(blk)
        self.used.append(need)
        return blk[:nbytes]


def _aligned(size: int) -> np.ndarray:
    raw = np.empty(size + _ALIGN, np.uint8)
    start = (-raw.ctypes.data) % _ALIGN
    return raw[start:start + size]


_local = threading.local()


def _arena() -> _Arena:
    a = getattr(_local, "arena", None)
    if a is None:
        a = _local.arena = _Arena()
    return a


def kept() -> int:
    """Bytes of scratch all threads keep now."""
    return _kept


def active() -> bool:
    """Whether the calling thread holds a lease."""
    a = getattr(_local, "arena", None)
    return a is not None and a.depth > 0


@contextlib.contextmanager
def lease() -> Iterator[None]:
    """Hold the thread's scratch for the ``with`` block (nested leases share the outer
    one; the outermost hands every array back when it ends)."""
    a = _arena()
    if a.depth == 0:
        a.cap = limit()
        if a.cap == 0:  # off: the lease hands out plain arrays
            a.clear()
    a.depth += 1
    try:
        yield
    finally:
        a.depth -= 1
        if a.depth == 0:
            _settle(a)


def _settle(a: _Arena) -> None:
    """End of the outermost lease: hand every array back.  A lease that needed more than
    one block leaves one block of its peak plus a quarter (within the cap), so the next
    lease of the same shape bump-allocates from pages already touched."""
    if a.cap == 0:
        a.clear()
        return
    if len(a.blocks) > 1:
        peak = sum(a.used)
        a.clear()
        size = -(-(peak + peak // 4) // _MIN_BLOCK) * _MIN_BLOCK
        if _keep(size, a.cap) or _keep(size := peak, a.cap):
            a.blocks = [_aligned(size)]
    a.used = [0] * len(a.blocks)


def release() -> None:
    """Drop the calling thread's kept blocks (outside a lease; inside, a no-op)."""
    a = getattr(_local, "arena", None)
    if a is not None and a.depth == 0:
        a.clear()


def empty(shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
    """``numpy.empty(shape, dtype)``, from the thread's scratch inside a lease."""
    a = getattr(_local, "arena", None)
    if a is None or a.depth == 0:
        return np.empty(shape, dtype)
    dt = np.dtype(dtype)
    if np.ndim(shape) == 0:
        shp: tuple[int, ...] = (int(cast(int, shape)),)
    else:
        shp = tuple(int(s) for s in cast("tuple[int, ...]", shape))
    n = 1
    for s in shp:
        n *= s
    raw = a.take(n * dt.itemsize)
    if raw is None:
        return np.empty(shp, dt)
    return raw.view(dt).reshape(shp)


def zeros(shape: int | tuple[int, ...], dtype: npt.DTypeLike) -> np.ndarray:
    """``numpy.zeros(shape, dtype)``, from the thread's scratch inside a lease."""
    if not active():
        return np.zeros(shape, dtype)
    out = empty(shape, dtype)
    out.fill(0)
    return out


_HUGE = 1 << 21  # the x86-64 / arm64 transparent huge page


def pages(n: int, dtype: npt.DTypeLike) -> np.ndarray:
    """``numpy.empty(n, dtype)`` starting on a 2 MiB boundary: an array that outlives the
    call (not scratch) and is written once, such as a shuffle piece.  numpy asks the
    kernel for transparent huge pages on the aligned part of large allocations
    (``madvise``), so the array faults in as 2 MiB pages instead of 4 KiB ones (512 times
    fewer page faults); the head skipped for alignment is never touched, so it costs
    address space, not memory.  Below 4 MiB: a plain array."""
    dt = np.dtype(dtype)
    nbytes = int(n) * dt.itemsize
    if nbytes < 2 * _HUGE:
        return np.empty(int(n), dt)
    raw = np.empty(nbytes + _HUGE, np.uint8)
    start = (-raw.ctypes.data) % _HUGE
    return raw[start:start + nbytes].view(dt)
