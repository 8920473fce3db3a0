"""Private quantile kernels: contribution bounding that keeps the rows, rank utilities.

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.

Bounding (:func:`bound_rows`) draws exactly what :func:`dpfast._kernels.tables.bound_values`
draws: per privacy id, rows sorted by (key, value), at most ``c`` rows per key by a keyed
partial Fisher-Yates shuffle on the id's stream ``(h, key index + 1)``, then at most ``k``
keys on the stream ``(h, 0)``; but instead of summing the kept rows it marks them, so a
quantile can rank them.  What an id keeps depends only on (key, its canonical value, its
own rows).

Utilities (:func:`fill_utilities`): a key's kept rows are given as a sparse histogram over
*slots* of the public candidate grid ``g_0 < ... < g_{m-1}`` (slot ``2p + 1``: a value
equal to ``g_p``; slot ``2p``: a value strictly between ``g_{p-1}`` and ``g_p``).  For
candidate ``p`` let ``a_p`` = #rows ``< g_p`` (slots ``<= 2p``) and ``b_p`` = #rows
``<= g_p`` (slots ``<= 2p + 1``); the utility for the target rank ``t`` is
``-max(a_p - t, t - b_p, 0)``: minus the distance of ``t`` to ``[a_p, b_p]`` (an integer).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.tables import _set_nonce, _shuffle3, _shuffle_prefix, _sort_pairs


@guarded
@nb.njit(cache=True, parallel=True)
def bound_rows(off, gkeys, gvals, id_hash, subkey, k, c, gk2, gst, gcn, keep, nthreads):
    """Bound each id's rows (grouped by :func:`~dpfast._kernels.tables.group_by_id`) and
    mark the kept ones: on exit ``keep[j]`` says whether row ``j`` of the (sorted in place)
    ``gkeys`` / ``gvals`` is kept.  ``gk2`` / ``gst`` / ``gcn`` are scratch (length n)."""
    n_ids = off.shape[0] - 1
    nt = max(1, nthreads)
    nblk = min(n_ids, 4 * nt) if n_ids > 0 else 0
    step = (n_ids + nblk - 1) // nblk if nblk else 0
    for blk in nb.prange(nblk):
        buf = np.empty(8, np.uint64)
        st = np.zeros(3, np.int64)
        nonce = np.zeros(3, np.uint32)
        for i in range(blk * step, min(n_ids, (blk + 1) * step)):
            lo = off[i]
            hi = off[i + 1]
            for j in range(lo, hi):
                keep[j] = False
            if hi == lo:
                continue
            _sort_pairs(gkeys, gvals, lo, hi)
            d = 0
            j = lo
            while j < hi:
                kk = gkeys[j]
                e = j + 1
                while e < hi and gkeys[e] == kk:
                    e += 1
                m = e - j
                if m > c:
                    _set_nonce(nonce, id_hash[i], d + 1)
                    _shuffle_prefix(gvals, gvals[:0], j, m, c, subkey, nonce, buf, st)
                    m = c
                gk2[lo + d] = kk
                gst[lo + d] = j
                gcn[lo + d] = m
                d += 1
                j = e
            if d > k:
                _set_nonce(nonce, id_hash[i], 0)
                _shuffle3(gk2, gst, gcn, lo, d, k, subkey, nonce, buf, st)
                d = k
            for g in range(lo, lo + d):
                for r in range(gst[g], gst[g] + gcn[g]):
                    keep[r] = True


@guarded
@nb.njit(cache=True, parallel=True)
def fill_utilities(starts, ends, slots, cnts, t, m, out):
    """Rank utilities of keys ``0 .. rows-1``: key ``r``'s sparse histogram is
    ``slots[starts[r]:ends[r]]`` (increasing) with counts ``cnts``; ``out[r, p]`` is
    ``-max(a_p - t[r], t[r] - b_p, 0)`` (see the module docstring)."""
    rows = out.shape[0]
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
            if a - tr > d:
                d = a - tr
            if tr - b > d:
                d = tr - b
            out[r, p] = -np.float64(d)
