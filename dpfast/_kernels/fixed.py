"""Exact-sum kernels of the release tables (:mod:`dpfast.tables._fixed`): float values as
fixed-point units, per-key totals in two int64 words, checked int64 additions.

Private (docs/design.md): numpy/numba only, validate nothing, cached.  A two-word total is
``hi * 2**32 + lo`` with ``lo`` in ``[0, 2**32)`` and ``|hi| < 2**62`` (else the overflow
flag): totals up to ``2**94`` units, never a wrap.
"""

from __future__ import annotations

import numba as nb
import numpy as np

W_LIMIT = np.int64(1) << np.int64(62)
M32I = np.int64(0xFFFFFFFF)


@nb.njit(cache=True, inline="always")
def _unit(v, scale, scale2, lo_u, hi_u, centre):
    u = np.int64(np.rint((v * scale) * scale2))
    if u < lo_u:
        u = lo_u
    elif u > hi_u:
        u = hi_u
    return 2 * u - (lo_u + hi_u) if centre else u


@nb.njit(cache=True, parallel=True)
def to_units(vals, scale, scale2, lo_u, hi_u, centre, out):
    """out[i] = clamp(rint(vals[i] * scale * scale2), lo_u, hi_u) (powers of two, two
    factors when one double cannot hold the scaling; the products are exact unless they
    underflow), minus ``lo_u + hi_u`` after doubling when ``centre`` (a mean's centred
    summand ``2u - lo_u - hi_u``)."""
    for i in nb.prange(vals.shape[0]):
        out[i] = _unit(vals[i], scale, scale2, lo_u, hi_u, centre)


@nb.njit(cache=True)
def to_units_serial(vals, scale, scale2, lo_u, hi_u, centre, out):
    """:func:`to_units` in one thread (small inputs: no parallel kernel to compile)."""
    for i in range(vals.shape[0]):
        out[i] = _unit(vals[i], scale, scale2, lo_u, hi_u, centre)


@nb.njit(cache=True, inline="always")
def _add2(hi, lo, k, h, low):
    """hi[k], lo[k] += (h, low) (two-word; low in [0, 2**33)); True on overflow."""
    s = lo[k] + low
    c = s >> np.int64(32)
    lo[k] = s & M32I
    t = hi[k] + h + c
    hi[k] = t
    return t >= W_LIMIT or t <= -W_LIMIT


@nb.njit(cache=True)
def accumulate_rows2(codes, units, hi, lo):
    """Two-word totals[codes[i]] += units[i]; True if a total reached 2**94 units."""
    bad = False
    for i in range(codes.shape[0]):
        v = units[i]
        bad |= _add2(hi, lo, codes[i], v >> np.int64(32), v & M32I)
    return bad


@nb.njit(cache=True)
def accumulate2(off, nkeep, gkeys, gval, hi, lo):
    """Two-word totals[key] += gval for every kept (id, key) pair (as
    :func:`dpfast._kernels.tables.accumulate`); True on overflow."""
    bad = False
    for i in range(nkeep.shape[0]):
        a = off[i]
        for j in range(a, a + nkeep[i]):
            v = gval[j]
            bad |= _add2(hi, lo, gkeys[j], v >> np.int64(32), v & M32I)
    return bad


@nb.njit(cache=True)
def add_two_word(codes, src_hi, src_lo, hi, lo):
    """Two-word totals[codes[i]] += (src_hi[i], src_lo[i]) (partial totals of a cluster);
    True on overflow."""
    bad = False
    for i in range(codes.shape[0]):
        bad |= _add2(hi, lo, codes[i], src_hi[i], src_lo[i])
    return bad


@nb.njit(cache=True)
def add_checked(codes, src, totals):
    """totals[codes[i]] += src[i] in int64; True (and that addition skipped) if it would
    overflow: never wraps."""
    big = np.int64(0x7FFFFFFFFFFFFFFF)
    for i in range(codes.shape[0]):
        a = totals[codes[i]]
        b = src[i]
        if (b > 0 and a > big - b) or (b < 0 and a < -big - 1 - b):
            return True
        totals[codes[i]] = a + b
    return False


@nb.njit(cache=True)
def round_units(hi, lo, j, r, big):
    """r[i] = the two-word total (hi[i], lo[i]) times 2**-j rounded to the nearest integer,
    ties to even (j may be negative: times 2**-j exactly).  ``big[i] = True`` where the
    total or the result does not fit this fast path (the caller finishes it in Python)."""
    lim = np.int64(1) << np.int64(29)
    for i in range(hi.shape[0]):
        h = hi[i]
        if h >= lim or h < -lim:
            big[i] = True
            continue
        s = (h << np.int64(32)) + lo[i]  # |s| < 2**61
        if j == 0:
            r[i] = s
        elif j < 0:
            if -j >= 62 or (s != 0 and (s >= (np.int64(1) << np.int64(62 + j))
                                        or s <= -(np.int64(1) << np.int64(62 + j)))):
                big[i] = True
            else:
                r[i] = s << np.int64(-j)
        elif j >= 62:
            r[i] = 0  # |s| < 2**61 < half of 2**j
        else:
            f = s >> np.int64(j)  # floor
            rem = s - (f << np.int64(j))
            half = np.int64(1) << np.int64(j - 1)
            if rem > half or (rem == half and (f & 1) == 1):
                f += 1
            r[i] = f
