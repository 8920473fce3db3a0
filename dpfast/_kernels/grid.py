"""Float outputs on a power-of-two grid, and the snapping mechanism's arithmetic."""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels._launch import claimed, guarded, next_chunk
from dpfast._kernels.chacha import next_u64
from dpfast._kernels.samplers import abs_bits_max

GRID_BLOCK = 4096  # cells per parallel work item of grid_add
EXACT_Z = 2.0 ** 53  # |z| below this converts to float64 exactly


@guarded
@nb.njit(cache=True, parallel=True, _nrt=False)
def grid_add(x, z, g, sat, out, nbig):
    """out[i] = fl((rint(x[i]/g) + z[i]) g), the exact grid value rounded once.

    ``rint(x/g) g`` and ``z g`` are exact doubles when |z| < 2^53 (g a power of two;
    multiples of g >= 2^-1074 with <= 53 significant bits are representable), so one
    correctly rounded addition gives the exact sum rounded once.  A cell with
    |z| >= 2^53 is left to the caller (``float64(z)`` would round first): it is counted
    in ``nbig[block]`` and its ``out`` gets ``x[i]`` (so ``out`` may be ``x``).  Results
    beyond the largest grid value ``sat`` saturate at ``±sat`` (a function of the exact
    grid value only).  Branch-free, so the loop vectorizes.
    """
    n = x.shape[0]
    nblk = (n + GRID_BLOCK - 1) // GRID_BLOCK
    # x / g = x * (1 / g) exactly (both scale by the same power of two, rounded once)
    # when 1 / g is a normal double; a multiplication is several times cheaper
    ginv = 1.0 / g if g >= 2.0 ** -1022 else 0.0
    for b in nb.prange(nblk):
        cnt = 0
        lo = b * GRID_BLOCK
        hi = min(n, lo + GRID_BLOCK)
        # views from lo: indices from 0 up, so the loop has no negative-index wraparound
        # (which would turn its loads into gathers)
        xs, zs, os_ = x[lo:hi], z[lo:hi], out[lo:hi]
        if ginv != 0.0:
            for i in range(hi - lo):
                xi = xs[i]
                zf = np.float64(zs[i])
                big = abs(zf) >= EXACT_Z
                cnt += np.int64(big)
                r = min(max(np.rint(xi * ginv) * g + zf * g, -sat), sat)
                os_[i] = xi if big else r
        else:
            for i in range(hi - lo):
                xi = xs[i]
                zf = np.float64(zs[i])
                big = abs(zf) >= EXACT_Z
                cnt += np.int64(big)
                r = min(max(np.rint(xi / g) * g + zf * g, -sat), sat)
                os_[i] = xi if big else r
        nbig[b] = cnt


MAXABS_BLOCK = 1 << 16  # cells per work item of max_abs_bits


def _blocks(args):
    """The blocks of ``MAXABS_BLOCK`` cells of a reduction's input (its first argument)."""
    return -(-args[0].shape[0] // MAXABS_BLOCK)


@nb.njit(cache=True, nogil=True, _nrt=False)
def _max_abs_blocks(x, part, claim):
    """``part[k]`` = the largest bit pattern of ``|x|`` in block ``k``
    (:func:`dpfast._kernels.samplers.abs_bits_max`), for the blocks this call claims
    (:func:`dpfast._kernels._launch.next_chunk`)."""
    n = x.shape[0]
    nblk = -(-n // MAXABS_BLOCK)
    k = next_chunk(claim, -1)
    while k < nblk:
        part[k] = abs_bits_max(x, k * MAXABS_BLOCK, min(n, (k + 1) * MAXABS_BLOCK))
        k = next_chunk(claim, k)


# the blocks on ``numba.get_num_threads()`` threads, each claiming blocks as it becomes
# free (one serial compilation, no ``parallel=True`` kernel to compile at a first large
# call)
_MAX_ABS = claimed(_max_abs_blocks, _blocks)


def max_abs_bits(x, part):
    """The bit pattern of max |x| for a 1-D C-contiguous float64 or float32 ``x`` (a uint64
    holding x's format; a NaN or an inf gives a pattern >= that of inf).  ``part``
    (uint64, >= ceil(n / MAXABS_BLOCK) entries) is scratch.  Blocks of ``MAXABS_BLOCK``
    cells run on ``numba.get_num_threads()`` threads."""
    nblk = _blocks((x,))
    _MAX_ABS(x, part)
    return part[:nblk].max()


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


@guarded
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
