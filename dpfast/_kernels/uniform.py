"""Exactly uniform integers (Lemire 2019) and 128-bit products."""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.chacha import next_u64

M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)


@nb.njit(cache=True, _nrt=False, inline="always")
def mul64(a, b):
    """(high, low) 64-bit halves of the 128-bit product of two uint64."""
    a_lo = a & M32
    a_hi = a >> S32
    b_lo = b & M32
    b_hi = b >> S32
    p0 = a_lo * b_lo
    p1 = a_lo * b_hi
    p2 = a_hi * b_lo
    p3 = a_hi * b_hi
    mid = (p0 >> S32) + (p1 & M32) + (p2 & M32)
    hi = p3 + (p1 >> S32) + (p2 >> S32) + (mid >> S32)
    return hi, a * b


@nb.njit(cache=True, _nrt=False, inline="always")
def below(buf, pos, st, key, nonce, span):
    """(uniform on [0, span), new pos) for 1 <= span < 2**64 (span == 0 means 2**64)."""
    x, pos = next_u64(buf, pos, st, key, nonce)
    if span == np.uint64(0):
        return x, pos
    hi, lo = mul64(x, span)
    if lo < span:
        thr = (np.uint64(0) - span) % span
        while lo < thr:
            x, pos = next_u64(buf, pos, st, key, nonce)
            hi, lo = mul64(x, span)
    return hi, pos


@guarded
@nb.njit(cache=True, parallel=True, _nrt=False)
def uniform_below(buf, st, key, nonces, chunk, n, span, out):
    """out[i] uniform on [0, span) for the cells of this batch of chunks."""
    for c in nb.prange(buf.shape[0]):
        lo = c * chunk
        hi = min(lo + chunk, n)
        b = buf[c]
        s = st[c]
        nonce = nonces[c]
        pos = s[0]
        for i in range(lo, hi):
            out[i], pos = below(b, pos, s, key, nonce, span)
        s[0] = pos
