"""Keyed BLAKE2b (RFC 7693) of many short messages, in numba.

Private (docs/design.md): numpy/numba only, validates nothing.  Equal to
``hashlib.blake2b(tag || message, key=key, digest_size=nn)`` (tested), for messages
given as a flat uint8 buffer with offsets; used to address per-key noise streams without
a Python loop over the keys.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded

IV = np.array([0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B,
               0xA54FF53A5F1D36F1, 0x510E527FADE682D1, 0x9B05688C2B3E6C1F,
               0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179], dtype=np.uint64)
SIGMA = np.array([
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3]], dtype=np.int64)


@nb.njit(cache=True, inline="always")
def _rotr(x, n):
    return (x >> np.uint64(n)) | (x << np.uint64(64 - n))


@nb.njit(cache=True, inline="always")
def _g(v, a, b, c, d, x, y):
    v[a] = v[a] + v[b] + x
    v[d] = _rotr(v[d] ^ v[a], 32)
    v[c] = v[c] + v[d]
    v[b] = _rotr(v[b] ^ v[c], 24)
    v[a] = v[a] + v[b] + y
    v[d] = _rotr(v[d] ^ v[a], 16)
    v[c] = v[c] + v[d]
    v[b] = _rotr(v[b] ^ v[c], 63)


@nb.njit(cache=True)
def compress(h, m, t, last, v, iv, sigma):
    """One compression of the 16-word block ``m`` at byte count ``t`` into ``h``."""
    for i in range(8):
        v[i] = h[i]
        v[i + 8] = iv[i]
    v[12] ^= np.uint64(t)
    if last:
        v[14] = ~v[14]
    for r in range(12):
        s = sigma[r]
        _g(v, 0, 4, 8, 12, m[s[0]], m[s[1]])
        _g(v, 1, 5, 9, 13, m[s[2]], m[s[3]])
        _g(v, 2, 6, 10, 14, m[s[4]], m[s[5]])
        _g(v, 3, 7, 11, 15, m[s[6]], m[s[7]])
        _g(v, 0, 5, 10, 15, m[s[8]], m[s[9]])
        _g(v, 1, 6, 11, 12, m[s[10]], m[s[11]])
        _g(v, 2, 7, 8, 13, m[s[12]], m[s[13]])
        _g(v, 3, 4, 9, 14, m[s[14]], m[s[15]])
    for i in range(8):
        h[i] ^= v[i] ^ v[i + 8]


@nb.njit(cache=True)
def _one(h0, tag, buf, lo, hi, out_row, h, v, m, iv, sigma):
    for j in range(8):
        h[j] = h0[j]
    mlen = hi - lo + 1
    t = 128  # the key block
    pos = 0  # bytes of the message consumed
    while True:
        take = min(128, mlen - pos)
        for j in range(16):
            m[j] = 0
        for j in range(take):
            q = pos + j
            b = tag if q == 0 else buf[lo + q - 1]
            m[j >> 3] |= np.uint64(b) << np.uint64(8 * (j & 7))
        pos += take
        t += take
        last = pos >= mlen
        compress(h, m, t, last, v, iv, sigma)
        if last:
            break
    for j in range(out_row.shape[0]):
        out_row[j] = np.uint8((h[j >> 3] >> np.uint64(8 * (j & 7))) & np.uint64(0xFF))


@guarded
@nb.njit(cache=True, parallel=True)
def keyed_many(h0, tag, buf, off, out, iv, sigma):
    """``out[i] = BLAKE2b(key, tag || buf[off[i]:off[i+1]])`` (first ``out.shape[1]``
    bytes), ``h0`` the state after the key block (see :func:`keyed_state`).  Messages are
    never empty (``tag`` is one byte)."""
    n = off.shape[0] - 1
    nblk = min(n, 64)
    step = (n + nblk - 1) // nblk if nblk else 0
    for blk_ in nb.prange(nblk):
        h = np.empty(8, np.uint64)
        v = np.empty(16, np.uint64)
        m = np.empty(16, np.uint64)
        for i in range(blk_ * step, min(n, (blk_ + 1) * step)):
            _one(h0, tag, buf, off[i], off[i + 1], out[i], h, v, m, iv, sigma)


def keyed_state(key: bytes, nn: int) -> np.ndarray:
    """The state after compressing the key block of keyed BLAKE2b-``nn`` (not last)."""
    h = IV.copy()
    h[0] ^= np.uint64(0x01010000 ^ (len(key) << 8) ^ nn)
    blk = np.zeros(128, np.uint8)
    blk[:len(key)] = np.frombuffer(key, np.uint8)
    compress(h, blk.view("<u8").astype(np.uint64), 128, False, np.empty(16, np.uint64), IV,
             SIGMA)
    return h
