"""ChaCha20 (RFC 8439) in numba: the kernels' own copy of the bit source.

Kernels cannot call the cffi keystream and stay cacheable, so each kernel receives a
buffer pre-filled in bulk by the C code and, should it run dry, refills it here from
the same (key, nonce, counter) stream.  Both implementations produce the identical
stream (tested).

Bit-source layout used by every kernel (one row per chunk):
    buf[c, :]   uint64 words of keystream (little-endian pairs of 32-bit words)
    st[c, 0]    index of the next unused word in buf[c]
    st[c, 1]    block counter of the block that follows the buffer
    st[c, 2]    set to 1 if a refill would wrap the 32-bit block counter
    nonce[c, :] the chunk's 96-bit nonce as three uint32 words
    key[:]      the 256-bit key as eight uint32 words
"""

from __future__ import annotations

import numba as nb
import numpy as np

M32 = np.uint64(0xFFFFFFFF)


@nb.njit(cache=True, inline="always")
def _rotl(x, n):
    return ((x << np.uint64(n)) | (x >> np.uint64(32 - n))) & M32


@nb.njit(cache=True, inline="always")
def _qr(x, a, b, c, d):
    x[a] = (x[a] + x[b]) & M32
    x[d] = _rotl(x[d] ^ x[a], 16)
    x[c] = (x[c] + x[d]) & M32
    x[b] = _rotl(x[b] ^ x[c], 12)
    x[a] = (x[a] + x[b]) & M32
    x[d] = _rotl(x[d] ^ x[a], 8)
    x[c] = (x[c] + x[d]) & M32
    x[b] = _rotl(x[b] ^ x[c], 7)


@nb.njit(cache=True)
def chacha_block(key, nonce, counter, out32):
    """Write the 16 words of block ``counter`` to ``out32`` (uint32[16])."""
    s = np.empty(16, np.uint64)
    s[0] = 0x61707865
    s[1] = 0x3320646E
    s[2] = 0x79622D32
    s[3] = 0x6B206574
    for i in range(8):
        s[4 + i] = np.uint64(key[i])
    s[12] = np.uint64(counter) & M32
    for i in range(3):
        s[13 + i] = np.uint64(nonce[i])
    x = s.copy()
    for _ in range(10):
        _qr(x, 0, 4, 8, 12)
        _qr(x, 1, 5, 9, 13)
        _qr(x, 2, 6, 10, 14)
        _qr(x, 3, 7, 11, 15)
        _qr(x, 0, 5, 10, 15)
        _qr(x, 1, 6, 11, 12)
        _qr(x, 2, 7, 8, 13)
        _qr(x, 3, 4, 9, 14)
    for i in range(16):
        out32[i] = np.uint32((x[i] + s[i]) & M32)


@nb.njit(cache=True)
def chacha_words(key, nonce, counter, out64):
    """Fill ``out64`` (uint64, length a multiple of 8) with blocks from ``counter`` on."""
    blk = np.empty(16, np.uint32)
    nblocks = out64.shape[0] // 8
    for b in range(nblocks):
        chacha_block(key, nonce, counter + b, blk)
        for i in range(8):
            out64[8 * b + i] = np.uint64(blk[2 * i]) | (np.uint64(blk[2 * i + 1]) << np.uint64(32))


@nb.njit(cache=True)
def refill(buf, st, key, nonce):
    """Refill a chunk's buffer from its stream, continuing after the last block used."""
    nblocks = buf.shape[0] // 8
    counter = st[1]
    if counter + nblocks > 4294967296:
        st[2] = 1  # would wrap: the caller raises; never reuse keystream
        counter = 0
    chacha_words(key, nonce, counter, buf)
    st[0] = 0
    st[1] = counter + nblocks


@nb.njit(cache=True, inline="always")
def next_u64(buf, pos, st, key, nonce):
    """(next unused 64-bit word of the chunk's keystream, new position).

    Kernels keep the position in a local variable (a register) and store it back to
    ``st[0]`` when they leave the chunk.
    """
    if pos >= buf.shape[0]:
        refill(buf, st, key, nonce)
        pos = 0
    return buf[pos], pos + 1
