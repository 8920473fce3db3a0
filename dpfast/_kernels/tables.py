"""Release-table kernels: dense codes, grouping rows by privacy id, contribution bounding.

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.

Randomness of the bounding step
-------------------------------
Every privacy id draws from its own ChaCha20 streams under the release's bounding sub-key,
addressed by the id's 64-bit canonical value ``h``: nonce ``(h mod 2^32, h >> 32, 0)`` for
the choice of its ``max_partitions`` keys, nonce ``(h mod 2^32, h >> 32, j + 1)`` for the
rows kept in the id's ``j``-th key (its keys sorted canonically); block counters from 0.
The keys: uniformly (a partial shuffle), or (``bounding="frequent"``) the ``max_partitions``
with the most rows, ties in the order of a full shuffle on the same stream.
Each choice is a partial Fisher-Yates shuffle with exactly
uniform integers (Lemire), applied to the id's rows in canonical order, so what an id keeps
depends only on (key, its canonical value, its own rows): never on other ids, the row
order, the thread count or the partitioning of the data.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.uniform import below

M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
SMALL = 24  # segments up to this length are sorted by insertion


# ----------------------------------------------------------------------------- codes
@guarded
@nb.njit(cache=True, parallel=True)
def mark_present(x, lo, present, nthreads):
    """present[x[i] - lo] = 1 (int64 x; benign identical writes)."""
    n = x.shape[0]
    nb_ = max(1, nthreads)
    step = (n + nb_ - 1) // nb_
    for b in nb.prange(nb_):
        for i in range(b * step, min(n, (b + 1) * step)):
            present[x[i] - lo] = 1


@guarded
@nb.njit(cache=True, parallel=True)
def take_codes(x, lo, remap, out):
    """out[i] = remap[x[i] - lo]."""
    for i in nb.prange(x.shape[0]):
        out[i] = remap[x[i] - lo]


@guarded
@nb.njit(cache=True, parallel=True)
def combine_codes(a, b, nb_, out):
    """out[i] = a[i] * nb_ + b[i] (mixed radix; the caller checked it fits int64)."""
    for i in nb.prange(a.shape[0]):
        out[i] = a[i] * nb_ + b[i]


@guarded
@nb.njit(cache=True, parallel=True)
def select_rows(codes, keep_code, out_mask):
    """out_mask[i] = keep_code[codes[i]] (filter rows whose key is in the domain)."""
    for i in nb.prange(codes.shape[0]):
        out_mask[i] = keep_code[codes[i]] >= 0


# ----------------------------------------------------------------------------- grouping
@guarded
@nb.njit(cache=True, parallel=True)
def group_by_id(ids, n_ids, keys, vals, use_vals, off, gkeys, gvals, nthreads):
    """Counting sort of rows by id code: the rows of id ``i`` go to
    ``[off[i], off[i+1])`` of ``gkeys``/``gvals`` (``off`` has ``n_ids + 1`` entries).

    Parallel: each thread counts and scatters its own block of rows; blocks are placed in
    thread order inside every id's segment (the order inside a segment is irrelevant:
    segments are sorted canonically afterwards).
    """
    n = ids.shape[0]
    # one count row per thread: at most ~2^25 counters in all (memory stays bounded)
    nt = max(1, min(nthreads, (n + 65535) // 65536, (1 << 25) // max(n_ids, 1)))
    step = (n + nt - 1) // nt
    cnt = np.zeros((nt, n_ids), np.int64)
    for b in nb.prange(nt):
        for i in range(b * step, min(n, (b + 1) * step)):
            cnt[b, ids[i]] += 1
    # exclusive offsets: id-major, thread-minor
    total = 0
    for j in range(n_ids):
        off[j] = total
        for b in range(nt):
            c = cnt[b, j]
            cnt[b, j] = total
            total += c
    off[n_ids] = total
    for b in nb.prange(nt):
        for i in range(b * step, min(n, (b + 1) * step)):
            j = ids[i]
            p = cnt[b, j]
            gkeys[p] = keys[i]
            if use_vals:
                gvals[p] = vals[i]
            cnt[b, j] = p + 1


@nb.njit(cache=True)
def counting_order(codes, n_codes, order, out):
    """``out``: ``order`` stably sorted by ``codes[order]`` (a serial counting sort, codes
    in ``[0, n_codes)``): two passes make a lexicographic order, small to compile."""
    cnt = np.zeros(n_codes + 1, np.int64)
    for i in range(order.shape[0]):
        cnt[codes[order[i]] + 1] += 1
    for j in range(n_codes):
        cnt[j + 1] += cnt[j]
    for i in range(order.shape[0]):
        r = order[i]
        c = codes[r]
        out[cnt[c]] = r
        cnt[c] += 1


# ----------------------------------------------------------------------------- sorting
@nb.njit(cache=True)
def _less(a, v, i, j, pairs):
    """Row i before row j: by key ``a``, then (``pairs``) by value ``v``."""
    if a[i] != a[j]:
        return a[i] < a[j]
    return pairs and v[i] < v[j]


@nb.njit(cache=True)
def _sort_rows(a, v, lo, hi, pairs):
    """Stable sort of rows [lo, hi) by ``a`` (and ``v`` with ``pairs``; ``v`` permuted
    along): insertion sort of runs of ``SMALL`` rows, then bottom-up merges through one
    scratch buffer.  Plain loops (no ``np.sort``/``np.argsort``): much less for numba
    to compile on first use, and the same order as a stable sort by (a, v)."""
    m = hi - lo
    for s in range(lo, hi, SMALL):
        e = min(s + SMALL, hi)
        for i in range(s + 1, e):
            ka = a[i]
            kv = v[i] if pairs else v[0]
            j = i - 1
            while j >= s and (a[j] > ka or (pairs and a[j] == ka and v[j] > kv)):
                a[j + 1] = a[j]
                if pairs:
                    v[j + 1] = v[j]
                j -= 1
            a[j + 1] = ka
            if pairs:
                v[j + 1] = kv
    if m <= SMALL:
        return
    ta = np.empty(m, a.dtype)
    tv = np.empty(m if pairs else 0, v.dtype)
    width = SMALL
    while width < m:
        for s in range(0, m, 2 * width):
            i = lo + s
            mid = lo + min(s + width, m)
            end = lo + min(s + 2 * width, m)
            j = mid
            t = s
            while i < mid and j < end:
                if _less(a, v, j, i, pairs):  # strictly smaller on the right: stable
                    ta[t] = a[j]
                    if pairs:
                        tv[t] = v[j]
                    j += 1
                else:
                    ta[t] = a[i]
                    if pairs:
                        tv[t] = v[i]
                    i += 1
                t += 1
            while i < mid:
                ta[t] = a[i]
                if pairs:
                    tv[t] = v[i]
                i += 1
                t += 1
            while j < end:
                ta[t] = a[j]
                if pairs:
                    tv[t] = v[j]
                j += 1
                t += 1
        for t in range(m):
            a[lo + t] = ta[t]
            if pairs:
                v[lo + t] = tv[t]
        width *= 2


@nb.njit(cache=True)
def _sort_keys(a, lo, hi):
    _sort_rows(a, a, lo, hi, False)


@nb.njit(cache=True)
def _sort_pairs(a, v, lo, hi):
    """Sort rows [lo, hi) by (key a, value v)."""
    _sort_rows(a, v, lo, hi, True)


# ----------------------------------------------------------------------------- PRF streams
@nb.njit(cache=True, inline="always")
def _set_nonce(nonce, h, purpose):
    """The id's stream for ``purpose``: nonce = (h mod 2^32, h >> 32, purpose)."""
    nonce[0] = np.uint32(h & M32)
    nonce[1] = np.uint32(h >> S32)
    nonce[2] = np.uint32(purpose)


@nb.njit(cache=True)
def _shuffle_prefix(a, b, e, lo, d, k, key32, nonce, buf, st):
    """Partial Fisher-Yates: a uniformly random ordered k-subset of rows [lo, lo + d) moves
    to [lo, lo + k) (arrays ``a`` and, if not empty, ``b`` and ``e`` permuted together).

    One function for every use (a count's keys and contributions, a sum's rows of one key,
    a sum's keys with their sums and counts): one compilation per dtype of ``b``."""
    st[0] = 0
    st[1] = 0
    st[2] = 0
    pos = buf.shape[0]  # empty: the first draw computes block 0
    for j in range(k):
        r, pos = below(buf, pos, st, key32, nonce, np.uint64(d - j))
        r = j + np.int64(r)
        if r != j:
            t = a[lo + j]
            a[lo + j] = a[lo + r]
            a[lo + r] = t
            if b.shape[0]:
                u = b[lo + j]
                b[lo + j] = b[lo + r]
                b[lo + r] = u
            if e.shape[0]:
                w = e[lo + j]
                e[lo + j] = e[lo + r]
                e[lo + r] = w


# ----------------------------------------------------------------------------- bounding
# Each bounding kernel comes twice: a serial one over rows already sorted per id (the
# caller sorted them with numpy: small inputs, where a first call should compile little)
# and a parallel one over rows grouped by :func:`group_by_id`, which sorts each id's rows
# itself.  Both run the same per-id code (``_bound_*_sorted``) on the same sorted rows, so
# they keep the same rows.
@nb.njit(cache=True)
def _bound_counts_sorted(first, end, off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy,
                         graw, buf, st, nonce):
    """:func:`bound_counts` for ids ``[first, end)`` whose rows are sorted by key
    (``buf``, ``st``, ``nonce``: scratch of the bit source)."""
    for i in range(first, end):
        lo = off[i]
        hi = off[i + 1]
        if hi == lo:
            nkeep[i] = 0
            continue
        d = 0
        j = lo
        while j < hi:
            kk = gkeys[j]
            e = j + 1
            while e < hi and gkeys[e] == kk:
                e += 1
            gkeys[lo + d] = kk
            gcnt[lo + d] = min(e - j, c)
            graw[lo + d] = e - j
            d += 1
            j = e
        if d > k:
            _set_nonce(nonce, id_hash[i], 0)
            if policy is None:  # uniform (pruned at compile time: _most_frequent not built)
                _shuffle_prefix(gkeys, gcnt, gcnt[:0], lo, d, k, subkey, nonce, buf, st)
            else:
                _most_frequent(gkeys, gcnt, gcnt, graw, lo, d, k, False, subkey, nonce, buf,
                               st)
            d = k
        nkeep[i] = d


@nb.njit(cache=True)
def bound_counts_sorted(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw):
    """:func:`bound_counts` (serial) for rows already sorted by (id, key)."""
    _bound_counts_sorted(0, off.shape[0] - 1, off, gkeys, id_hash, subkey, k, c, gcnt,
                         nkeep, policy, graw, np.empty(8, np.uint64), np.zeros(3, np.int64),
                         np.zeros(3, np.uint32))


@nb.njit(cache=True)
def _bound_counts_block(first, end, off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy,
                        graw):
    buf = np.empty(8, np.uint64)
    st = np.zeros(3, np.int64)
    nonce = np.zeros(3, np.uint32)
    for i in range(first, end):  # each id sorted, then bounded (its rows stay in cache)
        _sort_keys(gkeys, off[i], off[i + 1])
        _bound_counts_sorted(i, i + 1, off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy,
                             graw, buf, st, nonce)


@guarded
@nb.njit(cache=True, parallel=True)
def bound_counts(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw, nthreads):
    """Bound each id's rows (grouped by :func:`group_by_id`) for a count.

    For id ``i``: its distinct keys (sorted) with row counts; if it has more than ``k``
    distinct keys, ``k`` of them chosen (keyed, see module docstring): uniformly
    (``policy`` 0), or the ``k`` with the most rows, ties in a uniformly random order
    (``policy`` 1, :func:`_most_frequent`).  ``graw`` is scratch (the raw row counts).  On exit
    ``gkeys[off[i]:off[i] + nkeep[i]]`` are the kept keys and ``gcnt[...]`` their
    contributions ``min(rows, c)``.  The parallel loop only hands blocks of ids to
    :func:`_bound_counts_block` (a small parallel body compiles much faster).
    """
    n_ids = off.shape[0] - 1
    nt = max(1, nthreads)
    nblk = min(n_ids, 4 * nt) if n_ids > 0 else 0
    step = (n_ids + nblk - 1) // nblk if nblk else 0
    for blk in nb.prange(nblk):
        _bound_counts_block(blk * step, min(n_ids, (blk + 1) * step), off, gkeys, id_hash,
                            subkey, k, c, gcnt, nkeep, policy, graw)


@nb.njit(cache=True)
def _bound_values_sorted(first, end, off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt,
                         nkeep, policy, graw, buf, st, nonce):
    """:func:`bound_values` for ids ``[first, end)`` whose rows are sorted by (key,
    value) (``buf``, ``st``, ``nonce``: scratch of the bit source)."""
    for i in range(first, end):
        lo = off[i]
        hi = off[i + 1]
        if hi == lo:
            nkeep[i] = 0
            continue
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
                _shuffle_prefix(gvals, gsum[:0], gcnt[:0], j, m, c, subkey, nonce, buf, st)
                m = c
            s = gvals[j]
            for q in range(j + 1, j + m):
                s += gvals[q]
            gkeys[lo + d] = kk
            gsum[lo + d] = s
            gcnt[lo + d] = m
            graw[lo + d] = e - j
            d += 1
            j = e
        if d > k:
            _set_nonce(nonce, id_hash[i], 0)
            if policy is None:  # uniform (pruned at compile time: _most_frequent not built)
                # permute keys, sums and counts together
                _shuffle_prefix(gkeys, gsum, gcnt, lo, d, k, subkey, nonce, buf, st)
            else:
                _most_frequent(gkeys, gsum, gcnt, graw, lo, d, k, True, subkey, nonce, buf,
                               st)
            d = k
        nkeep[i] = d


@nb.njit(cache=True)
def bound_values_sorted(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep, policy,
                        graw):
    """:func:`bound_values` (serial) for rows already sorted by (id, key, value)."""
    _bound_values_sorted(0, off.shape[0] - 1, off, gkeys, gvals, id_hash, subkey, k, c,
                         gsum, gcnt, nkeep, policy, graw, np.empty(8, np.uint64),
                         np.zeros(3, np.int64), np.zeros(3, np.uint32))


@nb.njit(cache=True)
def _bound_values_block(first, end, off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt,
                        nkeep, policy, graw):
    buf = np.empty(8, np.uint64)
    st = np.zeros(3, np.int64)
    nonce = np.zeros(3, np.uint32)
    for i in range(first, end):  # each id sorted, then bounded (its rows stay in cache)
        _sort_pairs(gkeys, gvals, off[i], off[i + 1])
        _bound_values_sorted(i, i + 1, off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt,
                             nkeep, policy, graw, buf, st, nonce)


@guarded
@nb.njit(cache=True, parallel=True)
def bound_values(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep, policy, graw,
                 nthreads):
    """Bound each id's rows for a sum / mean: per distinct key at most ``c`` rows (chosen
    uniformly among the id's rows of that key, sorted by value), then at most ``k`` keys
    (uniformly, ``policy`` 0; the ``k`` with the most rows, ``policy`` 1).

    On exit ``gkeys[off[i]:off[i] + nkeep[i]]`` are the kept keys, ``gsum`` the sums of the
    kept (already clamped) values and ``gcnt`` the numbers of kept rows.
    """
    n_ids = off.shape[0] - 1
    nt = max(1, nthreads)
    nblk = min(n_ids, 4 * nt) if n_ids > 0 else 0
    step = (n_ids + nblk - 1) // nblk if nblk else 0
    for blk in nb.prange(nblk):
        _bound_values_block(blk * step, min(n_ids, (blk + 1) * step), off, gkeys, gvals,
                            id_hash, subkey, k, c, gsum, gcnt, nkeep, policy, graw)


@nb.njit(cache=True)
def _most_frequent(a, s, n, raw, lo, d, k, has_s, key32, nonce, buf, st):
    """Move the ``k`` entries of ``[lo, lo + d)`` with the largest ``raw`` (row counts) to
    ``[lo, lo + k)`` (``a``, ``n`` and, with ``has_s``, ``s`` moved together): the entries in
    a uniformly random order (a full Fisher-Yates shuffle of positions on the id's stream),
    then stably sorted by ``raw`` descending -- so ties are broken uniformly at random."""
    st[0] = 0
    st[1] = 0
    st[2] = 0
    pos = buf.shape[0]
    perm = np.arange(d)
    for j in range(d - 1):
        r, pos = below(buf, pos, st, key32, nonce, np.uint64(d - j))
        r = j + np.int64(r)
        t = perm[j]
        perm[j] = perm[r]
        perm[r] = t
    neg = np.empty(d, np.int64)
    rank = np.empty(d, np.int64)
    for i in range(d):
        neg[i] = -raw[lo + perm[i]]
        rank[i] = i
    _sort_pairs(neg, rank, 0, d)  # by (-rows, random position): the ranks are distinct
    ta = np.empty(k, a.dtype)
    ts = np.empty(k, s.dtype)
    tn = np.empty(k, n.dtype)
    for j in range(k):
        q = lo + perm[rank[j]]
        ta[j] = a[q]
        tn[j] = n[q]
        if has_s:
            ts[j] = s[q]
    for j in range(k):
        a[lo + j] = ta[j]
        n[lo + j] = tn[j]
        if has_s:
            s[lo + j] = ts[j]


# ----------------------------------------------------------------------------- aggregation
@nb.njit(cache=True)
def accumulate(off, nkeep, gkeys, gval, totals):
    """totals[key] += gval for every kept (id, key) pair."""
    for i in range(nkeep.shape[0]):
        lo = off[i]
        for j in range(lo, lo + nkeep[i]):
            totals[gkeys[j]] += gval[j]


@nb.njit(cache=True)
def accumulate_units(off, nkeep, gkeys, totals):
    """totals[key] += 1 for every kept (id, key) pair: the distinct ids kept per key."""
    for i in range(nkeep.shape[0]):
        lo = off[i]
        for j in range(lo, lo + nkeep[i]):
            totals[gkeys[j]] += 1


@nb.njit(cache=True)
def accumulate_weighted_units(off, nkeep, gkeys, weights, totals):
    """totals[key] += weights[nkeep[i]] for every kept (id, key) pair of id ``i`` (the
    weighted-Gaussian selection's measure: an id holding ``t`` kept keys adds
    ``weights[t]`` to each).  True if a total would pass ``2**62`` (then the totals are
    not to be used): never a wrap."""
    limit = np.int64(1) << np.int64(62)
    for i in range(nkeep.shape[0]):
        lo = off[i]
        w = weights[nkeep[i]]
        for j in range(lo, lo + nkeep[i]):
            key = gkeys[j]
            if totals[key] > limit - w:
                return True
            totals[key] += w
    return False


@guarded
@nb.njit(cache=True, parallel=True)
def bincount_codes(codes, n_codes, totals, nthreads):
    """totals[k] = number of rows with code k (per-thread partial counts)."""
    n = codes.shape[0]
    nt = max(1, min(nthreads, (n + 65535) // 65536, (1 << 25) // max(n_codes, 1)))
    step = (n + nt - 1) // nt
    part = np.zeros((nt, n_codes), np.int64)
    for b in nb.prange(nt):
        for i in range(b * step, min(n, (b + 1) * step)):
            part[b, codes[i]] += 1
    for b in range(nt):
        for j in range(n_codes):
            totals[j] += part[b, j]

