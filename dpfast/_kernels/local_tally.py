"""Server-side tallies of packed local-DP report bits: byte histograms.

A report's bits arrive packed (``np.packbits(..., bitorder="little")``).  Instead of
testing every bit, the kernels count, per byte position, how often each of the 256 byte
values occurs (one increment per byte); the per-bit counts are then the histogram times
the 256 x 8 bit table (done by the caller).  Rowed reports (count-mean-sketch rows, RAPPOR
cohorts) are first ordered by row with a counting sort, so each row's histogram stays in
cache while its reports are counted, and rows are spread over the threads.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, parallel=True)
def byte_hist(bits, parts, hist):
    """hist[p, b, v] += #{reports i of part p : bits[i, b] == v}; reports split into
    ``parts`` contiguous ranges."""
    n = bits.shape[0]
    nbytes = bits.shape[1]
    for p in nb.prange(parts):
        a = n * p // parts
        e = n * (p + 1) // parts
        h = hist[p]
        for i in range(a, e):
            for b in range(nbytes):
                h[b, bits[i, b]] += 1


@nb.njit(cache=True)
def row_order(rows, nrows, starts, order):
    """Counting sort: ``order[starts[r]:starts[r + 1]]`` lists the reports of row r (in
    input order); ``starts`` has nrows + 1 entries (filled here)."""
    n = rows.shape[0]
    cnt = np.zeros(nrows + 1, np.int64)
    for i in range(n):
        cnt[np.int64(rows[i]) + 1] += 1
    for r in range(nrows):
        cnt[r + 1] += cnt[r]
    for r in range(nrows + 1):
        starts[r] = cnt[r]
    for i in range(n):
        r = np.int64(rows[i])
        order[cnt[r]] = i
        cnt[r] += 1


@nb.njit(cache=True, parallel=True)
def row_byte_hist(order, starts, bits, nrows, hist):
    """hist[r, b, v] += #{reports i of row r : bits[i, b] == v} (rows from row_order)."""
    nbytes = bits.shape[1]
    for r in nb.prange(nrows):
        h = hist[r]
        for t in range(starts[r], starts[r + 1]):
            i = order[t]
            for b in range(nbytes):
                h[b, bits[i, b]] += 1
