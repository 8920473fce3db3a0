"""Per-call streams, fixed-size chunks and bulk keystream: how the kernels get bits.

Every call that consumes a data-dependent number of random words takes fresh stream ids
from the generator's stream source (:class:`dpfast.random._streams.StreamSource`), one
per chunk of ``CHUNK`` cells.  A chunk reads its stream through a small buffer that the
kernel refills, when it runs dry, by calling the C keystream (16-lane AVX-512 where the
CPU has it) through ``st[:, ST_FILL]``, moving to the stream's extension ids rather than
wrapping its block counter.  The exact samplers' batches start empty (``prefill=False``:
a ``REFILL_WORDS`` buffer per chunk that stays in the core's cache, one parallel region
per batch); the other drivers' buffers are pre-filled in bulk (in parallel threads; cffi
releases the GIL) with what a chunk is expected to use.  Either way a chunk reads the
same words: output depends only on the key and the call sequence, never on the buffer
sizes or the number of threads.  Chunks are processed in batches so that memory stays
small (in-place noising of 10^8 cells needs only a few tens of MiB beyond the array).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any, Literal

import numba
import numpy as np

from dpfast import _native, _parallel
from dpfast._kernels import chacha as _ck
from dpfast._kernels import pages as _pk
from dpfast._kernels import uniform as _uk
from dpfast.random import _streams

CHUNK = 1 << 16  # cells per chunk (fixed: part of the output definition for a key)
BATCH_WORDS = 1 << 21  # uint64 words of pre-filled keystream per batch (16 MiB)
REFILL_WORDS = 2048  # words of a chunk's refilled buffer (16 KiB: 256 blocks per refill)
#: chunks per batch without prefill: 512 x 16 KiB of buffers (8 MiB); a call of up to
#: 2^25 cells is one launch (each launch costs a thread hand-off and an uneven last chunk)
REFILL_BATCH = 512

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                # numba's stubs do not declare its config attributes
                max_workers=max(1, numba.config.NUMBA_NUM_THREADS),  # type: ignore[attr-defined]
                thread_name_prefix="dpfast-keystream")
        return _pool


def _reset_after_fork() -> None:
    """A forked child inherits the pool object but not its worker threads (and maybe a
    held lock): start over with a fresh lock and no pool."""
    global _pool, _pool_lock
    _pool_lock = threading.Lock()
    _pool = None


_parallel.register_after_fork(_reset_after_fork)


@contextlib.contextmanager
def _threads(n: int) -> Iterator[None]:
    old = numba.get_num_threads()
    if n >= old:
        yield
        return
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(old)


class _OneThread:
    """``threads_for`` of a one-chunk batch, as a plain context manager (a small call's
    fixed cost: no generator frame)."""

    __slots__ = ("_old",)

    def __enter__(self) -> None:
        self._old = numba.get_num_threads()
        if self._old != 1:
            numba.set_num_threads(1)

    def __exit__(self, *exc: object) -> None:
        if self._old != 1:
            numba.set_num_threads(self._old)


def threads_for(nchunks: int, per_task: int = 0) -> contextlib.AbstractContextManager[None]:
    """Run a batch of one chunk on the calling thread: a parallel launch costs more than
    a small batch's work.  Output never depends on the thread count.

    ``per_task`` > 0: the parallel loop's iterations are handed to the threads
    ``per_task`` at a time as they become free (``numba.parallel_chunksize``), instead of
    one equal share per thread fixed in advance, so a thread slowed down (by another
    process, or by a chunk with more rejections) does not hold up the others.  The
    exact samplers' drivers use 1 (an iteration is a chunk of ``CHUNK`` cells).

    A parallel batch uses at most :func:`dpfast._parallel.thread_cap` threads (a
    container's CPU quota)."""
    _parallel.check_fork_safe()
    if nchunks > 1:
        return _threads_parallel(per_task)
    return _OneThread()


@contextlib.contextmanager
def _threads_parallel(per_task: int) -> Iterator[None]:
    """The parallel case of :func:`threads_for`."""
    cap = _parallel.thread_cap()
    with _threads(numba.get_num_threads() if cap is None else cap):
        if per_task > 0:
            with numba.parallel_chunksize(per_task):
                yield
        else:
            yield


#: a new output of at least this many bytes has its pages touched first on the call's
#: threads (:func:`new_output`); smaller ones are mostly reused heap memory
TOUCH_BYTES = 1 << 24


def new_output(shape: tuple[int, ...], dtype: Any,
               order: Literal["C", "F"] = "C") -> np.ndarray:
    """``np.empty(shape, dtype, order=order)`` for a sampler's result, its pages touched
    first on the threads the call's batches will use, each a contiguous range of whole
    2 MiB regions (:mod:`dpfast._kernels.pages`).  The samplers' threads take 512 KiB
    chunks in turn, so without it both fault in the same regions of the new array and
    wait for each other (grid Laplace, 10^7 cells, two threads: 1.61-1.66x one thread's
    speed allocating against 1.83-1.91x into an existing output; 1.87-1.95x with the pages
    touched first).  One thread, or under :data:`TOUCH_BYTES`: just ``np.empty``."""
    out = np.empty(shape, dtype, order=order)
    if out.nbytes < TOUCH_BYTES:
        return out
    cap = _parallel.thread_cap()
    threads = numba.get_num_threads() if cap is None else min(cap, numba.get_num_threads())
    if threads > 1:
        _parallel.check_fork_safe()
        _pk.touch_pages(out.reshape(-1, order="A").view(np.uint8), threads)
    return out


@functools.lru_cache(maxsize=1)
def _fill_address() -> int:
    """The C refill's address (``ST_FILL``), looked up once."""
    return _native.blocks_address()


def _nonces(first: int, n: int) -> np.ndarray:
    return _streams.nonce_words(first, n)


def source_of(gen: Any) -> _streams.StreamSource:
    """The stream source of a generator (or a stream source itself)."""
    return gen.streams if hasattr(gen, "streams") else gen


def fill_streams(key_words: np.ndarray, nonces: np.ndarray, words: int) -> np.ndarray:
    """(n, words) uint64 keystream buffers, stream i from block 0, filled in parallel."""
    n = nonces.shape[0]
    nblocks = words // 8
    out = np.empty((n, words), np.uint64)
    counters = np.zeros(n, np.uint32)
    flat = out.reshape(-1).view(np.uint32)
    threads = min(numba.get_num_threads(), n, _parallel.thread_cap() or n)
    if threads <= 1 or n * words < (1 << 16):
        _native.chacha20_streams(key_words, nonces, counters, nblocks, flat)
        return out
    bounds = np.linspace(0, n, threads + 1).astype(int)
    per = nblocks * 16

    def work(a: int, b: int) -> None:
        _native.chacha20_streams(key_words, nonces[a:b].copy(), counters[a:b].copy(),
                                 nblocks, flat[a * per:b * per])

    futures = [_executor().submit(work, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])
               if b > a]
    for f in futures:
        f.result()
    return out


class Batch:
    """One batch of chunks of a call: cells [lo, hi), chunks c0 .. c0 + nchunks - 1."""

    __slots__ = ("lo", "hi", "c0", "buf", "st", "nonces")

    def __init__(self, lo: int, hi: int, c0: int, buf: np.ndarray, st: np.ndarray,
                 nonces: np.ndarray) -> None:
        self.lo, self.hi, self.c0 = lo, hi, c0
        self.buf, self.st, self.nonces = buf, st, nonces

    def streams(self, key_words: np.ndarray) -> tuple[np.ndarray, ...]:
        """The kernels' ``streams`` tuple (see dpfast._kernels.samplers)."""
        return (self.buf, self.st, key_words, self.nonces)

    def as_tuple(self) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
        return self.lo, self.hi, self.buf, self.st, self.nonces


class CallStreams:
    """The streams of one call: one fresh stream id per chunk of ``chunk`` cells,
    processed in batches.

    With ``prefill`` the keystream buffers are pre-filled in bulk with the expected
    consumption (``words_per_cell``) plus some headroom; without, each chunk gets an
    empty ``REFILL_WORDS`` buffer.  Either way the kernels refill from the chunk's own
    stream (C keystream) when they run dry, so the words a chunk reads are the same.  A
    batch can be regenerated bit for bit (:meth:`batch`), which is how an overflowing
    in-place call is undone.
    """

    def __init__(self, gen: Any, n: int, words_per_cell: float, chunk: int = CHUNK, *,
                 prefill: bool = True) -> None:
        src = source_of(gen)
        self.key_words = src.key_words
        self.n = n
        self.chunk = chunk
        self.nchunks = max(1, -(-n // chunk))
        self.first = src.allocate(self.nchunks)
        self.prefill = prefill
        if not prefill:
            self.words = REFILL_WORDS
            self.per_batch = REFILL_BATCH
            return
        cells = min(chunk, max(n, 1))
        # expected use + 5% + a little: the kernels refill if it runs dry
        words = int(cells * words_per_cell * 1.05) + 256
        self.words = -(-words // 8) * 8
        self.per_batch = max(1, BATCH_WORDS // self.words)

    def __len__(self) -> int:
        return -(-self.nchunks // self.per_batch)

    def batch(self, b: int) -> Batch:
        c0 = b * self.per_batch
        c1 = min(self.nchunks, c0 + self.per_batch)
        nonces = _nonces(self.first + c0, c1 - c0)
        st = np.zeros((c1 - c0, _ck.ST_COLS), np.int64)
        st[:, _ck.ST_FILL] = _fill_address()
        if self.prefill:
            buf = fill_streams(self.key_words, nonces, self.words)
            st[:, _ck.ST_BLOCK] = self.words // 8
        else:  # empty: the first word read refills from block 0
            buf = np.empty((c1 - c0, self.words), np.uint64)
            st[:, _ck.ST_POS] = self.words
        if c1 - c0 == 1:  # one chunk (every small call): scalar stores
            st[0, _ck.ST_CELL] = c0 * self.chunk
            st[0, _ck.ST_END] = min(c0 * self.chunk + self.chunk, self.n)
        else:
            starts = c0 * self.chunk + np.arange(c1 - c0, dtype=np.int64) * self.chunk
            st[:, _ck.ST_CELL] = starts
            st[:, _ck.ST_END] = np.minimum(starts + self.chunk, self.n)
        return Batch(c0 * self.chunk, min(self.n, c1 * self.chunk), c0, buf, st, nonces)

    def __iter__(self) -> Iterator[Batch]:
        for b in range(len(self)):
            yield self.batch(b)


def batches(gen: Any, n: int, words_per_cell: float, chunk: int = CHUNK
            ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Yield (first cell, end cell, buf, st, nonces) for batches of chunks covering n cells
    (the tuple form of :class:`CallStreams`, used by the local and selection drivers)."""
    for b in CallStreams(gen, n, words_per_cell, chunk):
        yield b.as_tuple()


def check_wrap(st: np.ndarray) -> None:
    if np.any(st[:, _ck.ST_WRAP]):  # unreachable: 2^64 blocks of one chunk
        raise RuntimeError("a chunk stream exhausted its 2**64 blocks; keystream is never "
                           "reused")


def uniform_below(gen: Any, span: int, n: int) -> np.ndarray:
    """n exactly uniform uint64 values in [0, span), 1 <= span <= 2**64."""
    out = np.empty(n, np.uint64)
    s = np.uint64(span % (1 << 64))
    calls = CallStreams(gen, n, 1.0)  # expected words per draw: 1 / P(accept) <= 2
    for b in calls:
        with threads_for(b.buf.shape[0], 1):
            _uk.uniform_below(b.buf, b.st, calls.key_words, b.nonces, CHUNK, b.hi - b.lo, s,
                              out[b.lo:b.hi])
        check_wrap(b.st)
    return out
