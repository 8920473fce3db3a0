"""Contribution bounding over a value *matrix*: rows kept once, every column summed over them.

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.

:func:`bound_rows` is the summand-matrix launch of the one bounding core
(:func:`dpfast._kernels.tables._bound_block`): per privacy id and key at most ``c`` rows
are chosen, then at most ``k`` keys, by the same per-id streams, shuffles and policies as
every other bounded statistic, and *all* ``m`` columns of an ``(n, m)`` int64 matrix are
summed over the same kept rows (so, for a variance, ``x`` and ``x²`` come from one choice
of rows; with ``m = 1`` the kept rows are those ``bound_values`` keeps).  The rows of an id
are sorted by key, then by their value tuple lexicographically.  Optionally the kept rows
are marked (``mark``), for statistics that need the kept rows themselves (distinct values).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels import tables as _kt


def bound_rows(off, gkeys, gidx, vals, id_hash, subkey, k, c, gsum, gcnt, nkeep, mark, kept,
               distinct, policy, nthreads):
    """Bound each id's rows (grouped by :func:`dpfast._kernels.grouping.group_by_id` with
    ``gvals`` the row numbers ``gidx``) over the ``(n, m)`` int64 matrix ``vals``: the
    summand-matrix launch of the one bounding core
    (:func:`dpfast._kernels.tables._bound_block`).

    On exit, for id ``i``, ``gkeys[off[i]:off[i] + nkeep[i]]`` are its kept keys, ``gcnt``
    the numbers of kept rows and ``gsum[off[i] + t, :]`` the column sums over those rows
    (int64: the caller bounds ``c`` summands of a column below 2**63).  With ``mark``,
    ``kept[r]`` is set for every kept row ``r``.  With ``distinct``, rows of one id and key
    with equal value tuples count once (one of them is kept): at most ``c`` distinct tuples.
    ``policy``: the keys an id keeps when it has more than ``k`` -- uniformly (None), or the
    ``k`` with the most rows (1; rows counted before de-duplication, ties uniformly at
    random), exactly the choice of :func:`dpfast._kernels.tables.bound_counts`.
    """
    n = gkeys.shape[0]
    gst = np.empty(n, np.int64)
    graw = np.empty(n, np.int64)
    at = np.empty(n, np.bool_) if mark else None  # kept row positions
    _kt.bound(off, gkeys, gkeys, gidx, vals, bool(distinct), id_hash, subkey, k, c, gst, gcnt,
              graw, nkeep, None, gsum, at, policy, nthreads)
    if mark:
        kept[gidx[at]] = True  # positions -> the row numbers they hold


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
