"""Small-call fast path of the selection mechanisms (few cells, one chunk).

A call with at most ``SMALL_CELLS`` cells (or rows) is dominated by fixed costs (the
batch machinery of :mod:`dpfast.noise._chunks`, parallel fills, nonce arrays).  The
helpers here read exactly the same keystream words, in the same order, as the general
path (:func:`dpfast.selection._bits._draw_words` and
:func:`~dpfast.selection._bits._uniform_spans` for a single chunk): the fast path is
bit-identical for a given key, only cheaper.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from dpfast import _native
from dpfast._kernels import chacha as _ck
from dpfast.noise import _drive

SMALL_CELLS = 4096  # rows * candidates at most (and rows at most) for the fast path


@functools.lru_cache(maxsize=1)
def _fill_address() -> int:
    return _native.blocks_address()


def draw_words(src: Any, n: int) -> np.ndarray:
    """:func:`~dpfast.selection._bits._draw_words` for ``n <= CHUNK``: the first ``n``
    words of one fresh stream."""
    first = src.allocate(1)
    nblocks = -(-n // 8)
    out = np.empty(8 * nblocks, np.uint64)
    _native.chacha20_stream_head(src.key_words, first, nblocks, out.view(np.uint32))
    return out[:n]


def uniform_spans(src: Any, spans: np.ndarray, kernel: Any) -> np.ndarray:
    """:func:`~dpfast.selection._bits._uniform_spans` for ``spans.size <= CHUNK``: one
    chunk on one fresh stream, its buffer pre-filled as
    :class:`dpfast.noise._chunks.CallStreams` does (the kernel refills past it)."""
    n = spans.shape[0]
    words = -(-(int(n * 1.05) + 256) // 8) * 8
    first = src.allocate(1)
    nonces = np.array([[first & 0xFFFFFFFF, first >> 32, 0]], np.uint32)
    buf = np.empty((1, words), np.uint64)
    _native.chacha20_stream_head(src.key_words, first, words // 8, buf.reshape(-1).view(np.uint32))
    st = np.zeros((1, _ck.ST_COLS), np.int64)
    st[0, _ck.ST_FILL] = _fill_address()
    st[0, _ck.ST_BLOCK] = words // 8
    st[0, _ck.ST_END] = n
    out = np.empty(n, np.uint64)
    kernel(buf, st, src.key_words, nonces, _drive.CHUNK, n, spans, out)
    if st[0, _ck.ST_WRAP]:
        _drive.check_wrap(st)  # raises
    return out
