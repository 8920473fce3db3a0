"""Server-side local-DP kernels: OLH support counting and bit counts of sketches and
RAPPOR reports (parallel, per-thread partial counts)."""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.local import ONE, S32, bucket, mas_hash


@guarded
@nb.njit(cache=True, parallel=True)
def olh_support(seeds, y, g, item0, nitems, parts, counts):
    """counts[p, j] = number of users in part p whose report supports item ``item0 + j``
    for j in [0, nitems), i.e. ``bucket(mas_hash(seed, item0 + j), g) == y``; users split
    into ``parts``.  Items are below 2^32.

    For the items 0, 1, 2, ... (fingerprint high word 0) the hash argument
    ``a0 j + b mod 2^64`` is an arithmetic progression, and ``bucket(h, g) == y`` iff
    ``ceil(y 2^32 / g) <= h < ceil((y + 1) 2^32 / g)``, one unsigned comparison of the
    progression: three integer operations per (user, item).
    """
    n = y.shape[0]
    gg = np.uint64(g)
    first = np.uint64(item0)
    for p in nb.prange(parts):
        a = n * p // parts
        e = n * (p + 1) // parts
        cnt = counts[p]
        for i in range(a, e):
            a0 = seeds[i, 0]
            acc = seeds[i, 2] + a0 * first
            yi = np.uint64(y[i])
            lo = ((yi << S32) + gg - ONE) // gg
            hi = (((yi + ONE) << S32) + gg - ONE) // gg
            start = lo << S32
            width = (hi - lo) << S32
            for j in range(nitems):
                cnt[j] += np.int64((acc - start) < width)
                acc += a0


@guarded
@nb.njit(cache=True, parallel=True)
def olh_support_items(seeds, y, g, items, parts, counts):
    """counts[p, j] = number of users in part p whose report supports ``items[j]``."""
    n = y.shape[0]
    gg = np.uint64(g)
    for p in nb.prange(parts):
        a = n * p // parts
        e = n * (p + 1) // parts
        cnt = counts[p]
        for i in range(a, e):
            a0 = seeds[i, 0]
            a1 = seeds[i, 1]
            b = seeds[i, 2]
            yi = np.int64(y[i])
            for j in range(items.shape[0]):
                h = mas_hash(a0, a1, b, np.uint64(items[j]))
                cnt[j] += np.int64(np.int64(bucket(h, gg)) == yi)


@guarded
@nb.njit(cache=True, parallel=True)
def count_bits(rows, bits, nrows, m, parts, counts, totals):
    """counts[p, r, t] += bit t of bits[i] for the users i of part p with rows[i] == r;
    totals[p, r] += 1.  ``bits`` is (n, ceil(m / 64)) uint64, little-endian bit order."""
    n = rows.shape[0]
    nw = (m + 63) // 64
    for p in nb.prange(parts):
        a = n * p // parts
        e = n * (p + 1) // parts
        for i in range(a, e):
            r = rows[i]
            totals[p, r] += 1
            acc = counts[p, r]
            for w in range(nw):
                x = bits[i, w]
                lo = 64 * w
                mw = min(64, m - lo)
                for t in range(mw):
                    acc[lo + t] += np.int64((x >> np.uint64(t)) & ONE)
