"""Keystream words for the selection kernels and the exact path's word source."""

from __future__ import annotations

import numpy as np

from dpfast import _native
from dpfast import random as _random
from dpfast._kernels import selection as _ks
from dpfast.noise import _drive, _exact
from dpfast.selection import _small
from dpfast.selection._validate import _NUM_THREADS


def _draw_words(gen: _random.Generator, n: int) -> np.ndarray:
    """n uint64 keystream words, one per cell, from fresh per-chunk streams of ``gen``.

    Cells are split into chunks of ``dpfast.noise._drive.CHUNK``; chunk ``j`` reads its words
    from block 0 of a fresh stream id (the same layout as :func:`dpfast.noise._drive.batches`),
    written in place by the C keystream in parallel threads (cffi releases the GIL).
    The result depends only on the key and the call sequence, never on the thread count.
    """
    chunk = _drive.CHUNK
    if n <= _small.SMALL_CELLS:  # one stream's prefix, fewer steps (same words)
        return _small.draw_words(_drive.source_of(gen), n)
    full, tail = divmod(n, chunk)
    nchunks = full + (tail > 0)
    streams = _drive.source_of(gen)
    first = streams.allocate(nchunks)
    tail_blocks = -(-tail // 8)
    out = np.empty(full * chunk + 8 * tail_blocks, np.uint64)
    flat = out.view(np.uint32)
    nonces = _drive._nonces(first, nchunks)
    key_words = streams.key_words
    per = 2 * chunk  # uint32 words per full chunk

    def work(a: int, b: int, nblocks: int) -> None:
        _native.chacha20_streams(key_words, nonces[a:b].copy(), np.zeros(b - a, np.uint32),
                                 nblocks, flat[a * per:])

    if tail:  # the last chunk needs only the prefix of its stream
        work(full, full + 1, tail_blocks)
    threads = min(_NUM_THREADS(), full)
    if threads <= 1:
        if full:
            work(0, full, chunk // 8)
    else:
        bounds = np.linspace(0, full, threads + 1).astype(int)
        futures = [_drive._executor().submit(work, int(a), int(b), chunk // 8)
                   for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        for f in futures:
            f.result()
    return out[:n]


def _uniform_spans(gen: _random.Generator, spans: np.ndarray) -> np.ndarray:
    """Exactly uniform integers in [0, spans[i]) (uint64 spans >= 1)."""
    if spans.shape[0] <= _small.SMALL_CELLS:  # one chunk, fewer steps (same words)
        return _small.uniform_spans(_drive.source_of(gen), spans, _ks.uniform_spans)
    out = np.empty(spans.shape[0], np.uint64)
    key_words = _drive.source_of(gen).key_words
    for lo, hi, buf, st, nonces in _drive.batches(gen, spans.shape[0], 1.0):
        _ks.uniform_spans(buf, st, key_words, nonces, _drive.CHUNK, hi - lo,
                          spans[lo:hi], out[lo:hi])
        _drive.check_wrap(st)
    return out


class _LazySource:
    """The exact path's word source, allocated on first use (a fresh stream of ``gen``)."""

    def __init__(self, gen: _random.Generator) -> None:
        self._gen = gen
        self._src: _exact.WordSource | None = None

    def __call__(self) -> _exact.WordSource:
        if self._src is None:
            self._src = _drive._SlowStream(self._gen).exact.src
        return self._src



