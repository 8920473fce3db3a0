"""Float outputs on a power-of-two grid, and the snapping mechanism's arithmetic."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels.chacha import next_u64


@nb.njit(cache=True, parallel=True, _nrt=False)
def grid_add(x, z, g, out):
    """out[i] = fl(rint(x[i]/g)*g + z[i]*g): both terms exact (g a power of two), one
    correctly rounded addition, i.e. the exact grid value (a + z) g rounded once."""
    for i in nb.prange(x.shape[0]):
        out[i] = np.rint(x[i] / g) * g + np.float64(z[i]) * g


@nb.njit(cache=True, _nrt=False, inline="always")
def uniform_double(buf, pos, st, key, nonce):
    """U* of Mironov 2012: the real uniform on (0, 1) rounded down to a double, i.e.
    each double d in (0, 1) with probability equal to its gap to the next double.

    The exponent is the number of leading zero bits of an unbounded bit string (read 64
    bits at a time), the 52-bit mantissa is a fresh word's top bits."""
    e = 1
    while True:
        w, pos = next_u64(buf, pos, st, key, nonce)
        if w != 0:
            lz = 0
            while (w >> np.uint64(63 - lz)) & np.uint64(1) == 0:
                lz += 1
            e += lz
            break
        e += 64
        if e > 1074:  # below the subnormal range: probability 2^-1074
            e = 1074
            break
    m, pos = next_u64(buf, pos, st, key, nonce)
    frac = np.float64(m >> np.uint64(12)) * 2.0 ** -52
    return math.ldexp(1.0 + frac, -e), pos


@nb.njit(cache=True, parallel=True, _nrt=False)
def snapping(buf, st, key, nonces, x, out, base, n, chunk, lam, Lam, bound):
    """out[i] = clamp_B(round_Lam(clamp_B(x[i]) + S * lam * ln(U*)))  (Mironov 2012)."""
    for c in nb.prange(buf.shape[0]):
        hi = min(base + n, base + (c + 1) * chunk)
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[0]
        for i in range(base + c * chunk, hi):
            u, pos = uniform_double(b, pos, s_, key, nonce)
            sb, pos = next_u64(b, pos, s_, key, nonce)
            sign = 1.0 if (sb >> np.uint64(63)) == np.uint64(0) else -1.0
            v = min(max(x[i], -bound), bound)
            v = v + sign * (lam * math.log(u))
            v = np.rint(v / Lam) * Lam
            out[i] = min(max(v, -bound), bound)
        s_[0] = pos
