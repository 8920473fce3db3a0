"""Private quantile kernels: contribution bounding that keeps the rows, rank utilities.

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.

Bounding (:func:`bound_rows`) is the kept-row-mask launch of the one bounding core
(:func:`dpfast._kernels.tables._bound_block`): per privacy id, rows sorted by (key, value),
at most ``c`` rows per key, then at most ``k`` keys, by the draws of every other bounded
statistic; instead of summing the kept rows it marks them, so a quantile can rank them.
What an id keeps depends only on (key, its canonical value, its own rows).

Utilities (:func:`fill_utilities`): a key's kept rows are given as a sparse histogram over
*slots* of the public candidate grid ``g_0 < ... < g_{m-1}`` (slot ``2p + 1``: a value
equal to ``g_p``; slot ``2p``: a value strictly between ``g_{p-1}`` and ``g_p``).  For
candidate ``p`` let ``a_p`` = #rows ``< g_p`` (slots ``<= 2p``) and ``b_p`` = #rows
``<= g_p`` (slots ``<= 2p + 1``); for the scaled target ``T`` and the units per rank ``D``
the utility is ``-min(max(D a_p - T, T - D b_p, 0), 2**53)``: minus ``D`` times the distance
of the target rank ``T / D`` to ``[a_p, b_p]`` (an integer, exact in float64; the cap is
1-Lipschitz, so it never raises the sensitivity).  The caller picks ``(T, D)``
(:func:`dpfast.tables._quantile_em.targets`) and keeps ``D a_p``, ``T`` below ``2**62``.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels import tables as _kt
from dpfast._kernels._launch import guarded
from dpfast._kernels.grouping import _sort_pairs


def bound_rows(off, gkeys, gvals, id_hash, subkey, k, c, gk2, gst, gcn, graw, keep, policy,
               nthreads):
    """Bound each id's rows (grouped by :func:`~dpfast._kernels.grouping.group_by_id`) and
    mark the kept ones: on exit ``keep[j]`` says whether row ``j`` of the (sorted in place)
    ``gkeys`` / ``gvals`` is kept.  ``gk2`` / ``gst`` / ``gcn`` / ``graw`` are scratch
    (length n).  ``policy``: the keys kept when an id has more than ``k`` -- uniformly (None)
    or the ``k`` with the most rows (1, ties uniformly at random).  The kept-row-mask
    launch of the one bounding core (:func:`dpfast._kernels.tables._bound_block`)."""
    nkeep = np.empty(off.shape[0] - 1, np.int64)
    _kt.bound(off, gkeys, gk2, gvals, None, False, id_hash, subkey, k, c, gst, gcn, graw,
              nkeep, None, None, keep, policy, nthreads)


@guarded
@nb.njit(cache=True, parallel=True)
def fill_utilities(starts, ends, slots, cnts, t, den, m, out):
    """Rank utilities of keys ``0 .. rows-1``: key ``r``'s sparse histogram is
    ``slots[starts[r]:ends[r]]`` (increasing) with counts ``cnts``; ``out[r, p]`` is
    ``-min(max(den a_p - t[r], t[r] - den b_p, 0), 2**53)`` (see the module docstring)."""
    rows = out.shape[0]
    cap = np.int64(1) << 53
    for r in nb.prange(rows):
        e = starts[r]
        end = ends[r]
        below = 0  # rows in the slots consumed so far (<= 2p: the rows < g_p)
        tr = t[r]
        for p in range(m):
            while e < end and slots[e] <= 2 * p:
                below += cnts[e]
                e += 1
            a = below
            b = a
            if e < end and slots[e] == 2 * p + 1:
                b = a + cnts[e]
            d = 0
            if den * a - tr > d:
                d = den * a - tr
            if tr - den * b > d:
                d = tr - den * b
            if d > cap:
                d = cap
            out[r, p] = -np.float64(d)


@guarded
@nb.njit(cache=True, parallel=True)
def grid_slots(v, g, lo0, inv, guess, out):
    """out[i] = the slot of v[i] on the increasing grid g: ``2p + 1`` if ``v[i] == g[p]``,
    else ``2p`` with ``p`` the number of grid points ``< v[i]``.  ``guess``: start from
    ``ceil((v - lo0) inv)`` (an evenly spaced grid) and walk to the exact ``p`` by
    comparisons; otherwise binary search.  Exact either way (the guess only saves
    steps)."""
    m = g.shape[0]
    for i in nb.prange(v.shape[0]):
        x = v[i]
        if guess:
            f = (x - lo0) * inv
            p = 0
            if f > 0:
                p = min(m, np.int64(math.ceil(f)))
            while p > 0 and g[p - 1] >= x:
                p -= 1
            while p < m and g[p] < x:
                p += 1
        else:
            p = 0
            hi = m
            while p < hi:  # first p with g[p] >= x
                mid = (p + hi) >> 1
                if g[mid] < x:
                    p = mid + 1
                else:
                    hi = mid
        out[i] = 2 * p + 1 if p < m and g[p] == x else 2 * p


@guarded
@nb.njit(cache=True, parallel=True)
def key_slot_counts(codes, slots, weights, use_w, n_codes, n_slots, ocode, oslot, ocnt):
    """Sparse (key code, slot) -> rows table without a global sort; returns its size.

    A counting sort by code (one linear pass) puts every code's rows together; each
    code's run is then counted per slot -- with a dense histogram of ``n_slots`` cells
    when the run is long, by sorting it when it is short -- and written with its slots
    increasing.  Rows count ``weights[i]`` each when ``use_w`` (merging partial tables),
    else 1.  Output ``ocode`` / ``oslot`` / ``ocnt`` (length >= n), sorted by (code,
    slot)."""
    n = codes.shape[0]
    off = np.zeros(n_codes + 1, np.int64)
    for i in range(n):
        off[codes[i] + 1] += 1
    for j in range(n_codes):
        off[j + 1] += off[j]
    pos = off[:n_codes].copy()
    ts = np.empty(n, np.int64)
    tw = np.empty(n, np.int64)
    for i in range(n):
        c = codes[i]
        p = pos[c]
        ts[p] = slots[i]
        tw[p] = weights[i] if use_w else 1
        pos[c] = p + 1
    nent = np.zeros(n_codes, np.int64)
    nblk = 64
    step = (n_codes + nblk - 1) // nblk
    for b in nb.prange(nblk):
        hist = np.zeros(n_slots, np.int64)
        for j in range(b * step, min(n_codes, (b + 1) * step)):
            lo = off[j]
            hi = off[j + 1]
            e = lo
            if 16 * (hi - lo) >= n_slots:  # long run: dense histogram, scanned in order
                for r in range(lo, hi):
                    hist[ts[r]] += tw[r]
                for s_ in range(n_slots):
                    if hist[s_] != 0:
                        ts[e] = s_
                        tw[e] = hist[s_]
                        hist[s_] = 0
                        e += 1
            elif hi > lo:  # short run: sort, then sum equal slots
                _sort_pairs(ts, tw, lo, hi)
                r = lo
                while r < hi:
                    s_ = ts[r]
                    tot = 0
                    while r < hi and ts[r] == s_:
                        tot += tw[r]
                        r += 1
                    ts[e] = s_
                    tw[e] = tot
                    e += 1
            nent[j] = e - lo
    d = 0
    for j in range(n_codes):
        lo = off[j]
        for r in range(lo, lo + nent[j]):
            ocode[d] = j
            oslot[d] = ts[r]
            ocnt[d] = tw[r]
            d += 1
    return d


@guarded
@nb.njit(cache=True, parallel=True)
def key_slot_dense(codes, slots, weights, use_w, n_codes, n_slots, shift, ocode, oslot,
                   ocnt):
    """:func:`key_slot_counts` for small grids: rows are first scattered into buckets of
    ``2**shift`` consecutive codes (a cache-friendly pass), then each bucket is counted in
    a dense ``(2**shift, n_slots)`` histogram (parallel over buckets) and scanned in
    (code, slot) order.  Returns the table's size."""
    n = codes.shape[0]
    nbk = (n_codes >> shift) + 1
    width = np.int64(1) << shift
    mask = width - 1
    start = np.zeros(nbk + 1, np.int64)
    for i in range(n):
        start[(codes[i] >> shift) + 1] += 1
    for b in range(nbk):
        start[b + 1] += start[b]
    pos = start[:nbk].copy()
    cell = np.empty(n, np.int64)
    tw = np.empty(n, np.int64)
    for i in range(n):
        b = codes[i] >> shift
        p = pos[b]
        cell[p] = (codes[i] & mask) * n_slots + slots[i]
        tw[p] = weights[i] if use_w else 1
        pos[b] = p + 1
    nent = np.zeros(nbk, np.int64)
    nblk = min(nbk, 64)
    step = (nbk + nblk - 1) // nblk
    for blk in nb.prange(nblk):
        hist = np.zeros(width * n_slots, np.int64)
        for b in range(blk * step, min(nbk, (blk + 1) * step)):
            lo = start[b]
            hi = start[b + 1]
            if hi == lo:
                continue
            for r in range(lo, hi):
                hist[cell[r]] += tw[r]
            e = lo
            for x in range(width * n_slots):
                if hist[x] != 0:
                    cell[e] = x
                    tw[e] = hist[x]
                    hist[x] = 0
                    e += 1
            nent[b] = e - lo
    d = 0
    for b in range(nbk):
        lo = start[b]
        for r in range(lo, lo + nent[b]):
            x = cell[r]
            ocode[d] = (b << shift) + x // n_slots
            oslot[d] = x % n_slots
            ocnt[d] = tw[r]
            d += 1
    return d
