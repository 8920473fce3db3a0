"""Contribution bounding over a value *matrix*: rows kept once, every column summed over them.

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.

:func:`bound_rows` is :func:`dpfast._kernels.tables.bound_values` generalised from one value
column to an ``(n, m)`` int64 matrix: per privacy id and key at most ``c`` rows are chosen,
then at most ``k`` keys, and *all* ``m`` columns are summed over the same kept rows (so, for
a variance, ``x`` and ``x²`` come from one choice of rows).  The randomness is that of
``bound_values`` -- the same per-id ChaCha20 streams (nonce ``(h mod 2^32, h >> 32, j + 1)``
for the rows of the id's ``j``-th key, ``0`` for the choice of keys), the same partial
Fisher-Yates shuffles on the same canonical order (rows sorted by key, then by their value
tuple lexicographically), and the same bounding policies (``policy`` 1, ``"frequent"``: the
``k`` keys with the most rows, ties by the shuffle of
:func:`dpfast._kernels.tables._most_frequent`) -- so with ``m = 1`` the kept rows are those
``bound_values`` keeps, and what an id keeps is a function of (key, its canonical value,
its own rows) only.
Optionally the kept rows are marked (``mark``), for statistics that need the kept rows
themselves (distinct values).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.grouping import SMALL
from dpfast._kernels.tables import _most_frequent, _set_nonce, _shuffle_prefix
from dpfast._kernels.uniform import below


@nb.njit(cache=True, inline="always")
def _before(a, ix, vals, i, j):
    """Row slot i strictly before slot j: by key ``a``, then by the value tuple of the rows
    ``ix[i]``, ``ix[j]`` of ``vals`` (lexicographic)."""
    if a[i] != a[j]:
        return a[i] < a[j]
    ri = ix[i]
    rj = ix[j]
    for col in range(vals.shape[1]):
        if vals[ri, col] != vals[rj, col]:
            return vals[ri, col] < vals[rj, col]
    return False


@nb.njit(cache=True)
def _sort_slots(a, ix, vals, lo, hi):
    """Stable sort of slots [lo, hi) of (a, ix) by (key, value tuple): insertion sort of runs
    of ``SMALL`` slots, then bottom-up merges through one scratch buffer (plain loops, as
    :func:`dpfast._kernels.tables._sort_rows`)."""
    m = hi - lo
    for s in range(lo, hi, SMALL):
        e = min(s + SMALL, hi)
        for i in range(s + 1, e):
            j = i
            while j > s and _before(a, ix, vals, j, j - 1):
                t = a[j]
                a[j] = a[j - 1]
                a[j - 1] = t
                u = ix[j]
                ix[j] = ix[j - 1]
                ix[j - 1] = u
                j -= 1
    if m <= SMALL:
        return
    ta = np.empty(m, a.dtype)
    tx = np.empty(m, ix.dtype)
    width = SMALL
    while width < m:
        for s in range(0, m, 2 * width):
            i = lo + s
            mid = lo + min(s + width, m)
            end = lo + min(s + 2 * width, m)
            j = mid
            t = s
            while i < mid and j < end:
                if _before(a, ix, vals, j, i):  # strictly smaller on the right: stable
                    ta[t] = a[j]
                    tx[t] = ix[j]
                    j += 1
                else:
                    ta[t] = a[i]
                    tx[t] = ix[i]
                    i += 1
                t += 1
            while i < mid:
                ta[t] = a[i]
                tx[t] = ix[i]
                i += 1
                t += 1
            while j < end:
                ta[t] = a[j]
                tx[t] = ix[j]
                j += 1
                t += 1
        for t in range(m):
            a[lo + t] = ta[t]
            ix[lo + t] = tx[t]
        width *= 2


@nb.njit(cache=True)
def _bound_block(first, end, off, gkeys, gidx, vals, id_hash, subkey, k, c, gsum, gcnt,
                 nkeep, mark, kept, distinct, policy):
    buf = np.empty(8, np.uint64)
    st = np.zeros(3, np.int64)
    nonce = np.zeros(3, np.uint32)
    ncol = vals.shape[1]
    start = np.empty(0, np.int64)
    raw = np.empty(0, np.int64)
    for i in range(first, end):
        lo = off[i]
        hi = off[i + 1]
        if hi == lo:
            nkeep[i] = 0
            continue
        _sort_slots(gkeys, gidx, vals, lo, hi)
        if start.shape[0] < hi - lo:
            start = np.empty(hi - lo, np.int64)
            raw = np.empty(hi - lo, np.int64)
        d = 0
        j = lo
        while j < hi:
            kk = gkeys[j]
            e = j + 1
            while e < hi and gkeys[e] == kk:
                e += 1
            m = e - j
            raw[d] = m  # the id's rows of the key (before de-duplication): "frequent"
            if distinct:  # one row per distinct value tuple (sorted: duplicates adjacent)
                w = j + 1
                for q in range(j + 1, e):
                    if _before(gkeys, gidx, vals, w - 1, q):
                        gidx[w] = gidx[q]
                        w += 1
                m = w - j
            if m > c:
                _set_nonce(nonce, id_hash[i], d + 1)
                _shuffle_prefix(gidx, gidx[:0], gidx[:0], j, m, c, subkey, nonce, buf, st)
                m = c
            gkeys[lo + d] = kk
            start[d] = j
            gcnt[lo + d] = m
            d += 1
            j = e
        if d > k:
            _set_nonce(nonce, id_hash[i], 0)
            # the rows' run starts ride along with the keys and counts
            if policy is None:  # uniform (frequent branch pruned at compile time)
                _shuffle_keys(gkeys, start, gcnt, lo, d, k, subkey, nonce, buf, st)
            else:  # the draws and order of bound_counts / bound_values (local views)
                _most_frequent(gkeys[lo:hi], start, gcnt[lo:hi], raw, 0, d, k, True, subkey,
                               nonce, buf, st)
            d = k
        for t in range(d):
            s0 = start[t]
            for col in range(ncol):
                acc = np.int64(0)
                for q in range(s0, s0 + gcnt[lo + t]):
                    acc += vals[gidx[q], col]
                gsum[lo + t, col] = acc
            if mark:
                for q in range(s0, s0 + gcnt[lo + t]):
                    kept[gidx[q]] = True
        nkeep[i] = d


@nb.njit(cache=True)
def _shuffle_keys(gkeys, start, gcnt, lo, d, k, key32, nonce, buf, st):
    """The key choice of :func:`dpfast._kernels.tables._shuffle_prefix` of keys, sums and
    counts (same draws, same permutation) on ``gkeys[lo:]``, ``start[0:]`` (local
    positions) and ``gcnt[lo:]``."""
    st[0] = 0
    st[1] = 0
    st[2] = 0
    pos = buf.shape[0]
    for j in range(k):
        r, pos = below(buf, pos, st, key32, nonce, np.uint64(d - j))
        r = j + np.int64(r)
        if r != j:
            t = gkeys[lo + j]
            gkeys[lo + j] = gkeys[lo + r]
            gkeys[lo + r] = t
            u = start[j]
            start[j] = start[r]
            start[r] = u
            w = gcnt[lo + j]
            gcnt[lo + j] = gcnt[lo + r]
            gcnt[lo + r] = w


@guarded
@nb.njit(cache=True, parallel=True)
def bound_rows(off, gkeys, gidx, vals, id_hash, subkey, k, c, gsum, gcnt, nkeep, mark, kept,
               distinct, policy, nthreads):
    """Bound each id's rows (grouped by :func:`dpfast._kernels.tables.group_by_id` with
    ``gvals`` the row numbers ``gidx``) over the ``(n, m)`` int64 matrix ``vals``.

    On exit, for id ``i``, ``gkeys[off[i]:off[i] + nkeep[i]]`` are its kept keys, ``gcnt``
    the numbers of kept rows and ``gsum[off[i] + t, :]`` the column sums over those rows
    (int64: the caller bounds ``c`` summands of a column below 2**63).  With ``mark``,
    ``kept[r]`` is set for every kept row ``r``.  With ``distinct``, rows of one id and key
    with equal value tuples count once (one of them is kept): at most ``c`` distinct tuples.
    ``policy``: the keys an id keeps when it has more than ``k`` -- uniformly (0), or the
    ``k`` with the most rows (1; rows counted before de-duplication, ties uniformly at
    random), exactly the choice of :func:`dpfast._kernels.tables.bound_counts`.
    """
    n_ids = off.shape[0] - 1
    nt = max(1, nthreads)
    nblk = min(n_ids, 4 * nt) if n_ids > 0 else 0
    step = (n_ids + nblk - 1) // nblk if nblk else 0
    for blk in nb.prange(nblk):
        _bound_block(blk * step, min(n_ids, (blk + 1) * step), off, gkeys, gidx, vals,
                     id_hash, subkey, k, c, gsum, gcnt, nkeep, mark, kept, distinct, policy)


@nb.njit(cache=True)
def accumulate_pairs(off, nkeep, gkeys, gcnt, gsum, counts, pairs, sums_hi, sums_lo):
    """Per key: ``counts`` += kept rows, ``pairs`` += 1 per kept (id, key) pair (the number
    of privacy ids), and per column ``j`` the kept sums as exact two-word totals
    (``sums_hi[key, j] 2**32 + sums_lo[key, j]``, ``sums_lo`` in ``[0, 2**32)``).  True if a
    total reached ``2**94`` (then the totals are not to be used): never a wrap."""
    bad = False
    w_limit = np.int64(1) << np.int64(62)
    m32 = np.int64(0xFFFFFFFF)
    ncol = gsum.shape[1]
    for i in range(nkeep.shape[0]):
        lo = off[i]
        for t in range(lo, lo + nkeep[i]):
            key = gkeys[t]
            counts[key] += gcnt[t]
            pairs[key] += 1
            for col in range(ncol):
                v = gsum[t, col]
                s = sums_lo[key, col] + (v & m32)
                sums_lo[key, col] = s & m32
                h = sums_hi[key, col] + (v >> np.int64(32)) + (s >> np.int64(32))
                sums_hi[key, col] = h
                if h >= w_limit or h <= -w_limit:
                    bad = True
    return bad


@nb.njit(cache=True)
def accumulate_rows(codes, vals, counts, sums_hi, sums_lo):
    """Every row its own privacy id: per key ``counts`` += 1 and the two-word column totals
    += the row (as :func:`accumulate_pairs`); True on overflow."""
    bad = False
    w_limit = np.int64(1) << np.int64(62)
    m32 = np.int64(0xFFFFFFFF)
    for r in range(codes.shape[0]):
        key = codes[r]
        counts[key] += 1
        for col in range(vals.shape[1]):
            v = vals[r, col]
            s = sums_lo[key, col] + (v & m32)
            sums_lo[key, col] = s & m32
            h = sums_hi[key, col] + (v >> np.int64(32)) + (s >> np.int64(32))
            sums_hi[key, col] = h
            if h >= w_limit or h <= -w_limit:
                bad = True
    return bad
