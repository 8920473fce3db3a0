"""Drives the kernels: per-call streams, fixed-size chunks, bulk keystream, slow path.

Every call that consumes a data-dependent number of random words takes fresh stream ids
from the generator's key allocator, one per chunk of ``CHUNK`` cells.  Each chunk's
buffer is pre-filled in bulk by the C keystream (in parallel threads; cffi releases the
GIL) and the kernel refills it from the same stream in numba if it runs dry.  Chunks are
processed in batches so that the buffers stay small (in-place noising of 10^8 cells
needs only a few tens of MiB beyond the array).  Output depends only on the key and the
call sequence, never on the number of threads.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator
from typing import Any

import numba
import numpy as np

from dpfast import _native
from dpfast._kernels import uniform as _uk

CHUNK = 1 << 16  # cells per chunk (fixed: part of the output definition for a key)
BATCH_WORDS = 1 << 21  # uint64 words of pre-filled keystream per batch (16 MiB)

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=max(1, numba.config.NUMBA_NUM_THREADS),
                thread_name_prefix="dpfast-keystream")
        return _pool


def _nonces(first: int, n: int) -> np.ndarray:
    ids = np.arange(n, dtype=object) + first
    out = np.empty((n, 3), np.uint32)
    for i, s in enumerate(ids):
        out[i] = (s & 0xFFFFFFFF, (s >> 32) & 0xFFFFFFFF, (s >> 64) & 0xFFFFFFFF)
    return out


def fill_streams(key_words: np.ndarray, nonces: np.ndarray, words: int) -> np.ndarray:
    """(n, words) uint64 keystream buffers, stream i from block 0, filled in parallel."""
    n = nonces.shape[0]
    nblocks = words // 8
    out = np.empty((n, words), np.uint64)
    counters = np.zeros(n, np.uint32)
    flat = out.reshape(-1).view(np.uint32)
    threads = min(numba.get_num_threads(), n)
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


def batches(gen: Any, n: int, words_per_cell: float, chunk: int = CHUNK
            ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Yield (first cell, end cell, buf, st, nonces) for batches of chunks covering n cells.

    ``words_per_cell`` is the expected consumption; buffers get some headroom and the
    kernels refill from the chunk's own stream when they run dry.
    """
    nchunks = max(1, -(-n // chunk))
    first_stream = gen._allocate_streams(nchunks)
    cells = min(chunk, max(n, 1))
    words = int(cells * words_per_cell * 1.25) + 64
    words = -(-words // 8) * 8
    per_batch = max(1, BATCH_WORDS // words)
    key_words = gen._key_words
    for c0 in range(0, nchunks, per_batch):
        c1 = min(nchunks, c0 + per_batch)
        nonces = _nonces(first_stream + c0, c1 - c0)
        buf = fill_streams(key_words, nonces, words)
        st = np.zeros((c1 - c0, 3), np.int64)
        st[:, 1] = words // 8
        yield c0 * chunk, min(n, c1 * chunk), buf, st, nonces


def check_wrap(st: np.ndarray) -> None:
    if np.any(st[:, 2]):
        raise RuntimeError("a chunk stream exhausted its 2**32 blocks; keystream is never reused")


def uniform_below(gen: Any, span: int, n: int) -> np.ndarray:
    """n exactly uniform uint64 values in [0, span), 1 <= span <= 2**64."""
    out = np.empty(n, np.uint64)
    s = np.uint64(span % (1 << 64))
    # expected words per draw: 1 / P(accept) <= 2; usually ~1
    for lo, hi, buf, st, nonces in batches(gen, n, 1.0):
        _uk.uniform_below(buf, st, gen._key_words, nonces, CHUNK, hi - lo, s, out[lo:hi])
        check_wrap(st)
    return out
