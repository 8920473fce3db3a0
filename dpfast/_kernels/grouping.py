"""Release-table kernels, part 1: dense key codes, grouping and sorting rows by privacy id,
per-key totals.

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.  The grouping is
a stable sort of the rows by id code (one counting pass for few ids; above
:data:`GROUP_ONE_PASS_IDS` ids two passes, a partition by the id's high bits into
cache-sized parts and a counting sort inside each), so the bounding kernels of
:mod:`dpfast._kernels.tables` see each id's rows contiguous and in input order.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import chunked, guarded

SMALL = 24  # segments up to this length are sorted by insertion


@nb.njit(cache=True, nogil=True)
def _mark_rows(a, b, x, lo, present):
    for i in range(a, b):
        present[x[i] - lo] = 1


@nb.njit(cache=True, nogil=True)
def _take_rows(a, b, x, lo, remap, out):
    for i in range(a, b):
        out[i] = remap[x[i] - lo]


def _rows(args):
    return args[0].shape[0]


def _row_range(args, a, b):
    return (a, b, *args)


_MARK = chunked(_mark_rows, _rows, _row_range)
_TAKE = chunked(_take_rows, _rows, _row_range)


def mark_present(x, lo, present, nthreads):
    """present[x[i] - lo] = 1 (int64 x; benign identical writes), on up to ``nthreads``
    threads over ranges of rows (:func:`dpfast._kernels._launch.chunked`)."""
    _MARK.launch((x, lo, present), nthreads)


def take_codes(x, lo, remap, out):
    """out[i] = remap[x[i] - lo], on ``numba.get_num_threads()`` threads over ranges of
    rows."""
    _TAKE(x, lo, remap, out)


@nb.njit(cache=True)
def dense_remap(present, lo, remap, uniques):
    """The dense codes of marked values: ``remap[v]`` = the number of marked ``v' < v``
    (the code of ``v + lo`` when ``present[v]``), ``uniques[c]`` = the ``c``-th marked value
    plus ``lo``; returns the number of marked values.  One pass (a cumulative sum and a
    nonzero without their temporaries)."""
    c = 0
    for v in range(present.shape[0]):
        remap[v] = c
        if present[v]:
            uniques[c] = v + lo
            c += 1
    return c


@nb.njit(cache=True, nogil=True)
def _combine_rows(a_, b_, a, b, nb_, out):
    for i in range(a_, b_):
        out[i] = a[i] * nb_ + b[i]


_COMBINE = chunked(_combine_rows, _rows, _row_range)


def combine_codes(a, b, nb_, out):
    """out[i] = a[i] * nb_ + b[i] (mixed radix; the caller checked it fits int64), on
    ``numba.get_num_threads()`` threads over ranges of rows."""
    _COMBINE(a, b, nb_, out)


@guarded
@nb.njit(cache=True, parallel=True)
def select_rows(codes, keep_code, out_mask):
    """out_mask[i] = keep_code[codes[i]] (filter rows whose key is in the domain)."""
    for i in nb.prange(codes.shape[0]):
        out_mask[i] = keep_code[codes[i]] >= 0


# ----------------------------------------------------------------------------- grouping
#: above this many ids, :func:`group_by_id` sorts in two cache-sized passes
GROUP_ONE_PASS_IDS = 1 << 16
#: rows per partition of the two-pass grouping (its rows, keys and values fit in L2)
GROUP_PART_ROWS = 1 << 14
#: at most this many partitions (the first pass's write frontier stays in cache)
GROUP_MAX_PARTS = 1 << 12


def group_by_id(ids, n_ids, keys, vals, use_vals, off, gkeys, gvals, loc, nthreads, lo=0,
                key_bound=0):
    """Counting sort of rows by id code: the rows of id ``i`` go to
    ``[off[i], off[i+1])`` of ``gkeys``/``gvals`` (``off`` has ``n_ids + 1`` entries),
    in input order inside every id (a stable sort; the bounding kernels sort each
    segment canonically afterwards anyway).

    Few ids (at most :data:`GROUP_ONE_PASS_IDS`): one pass, each thread counting and
    scattering its own block of rows.  Many ids: a scatter over ``n_ids`` counters is a
    random write per row over the whole output, a cache miss per row once the output
    outgrows the cache (the time per row grew 5x from 10^5 to 10^7 rows).  Then two
    passes (an MSD radix sort on the id code): the rows are first partitioned by
    ``id >> shift`` into contiguous id ranges of about :data:`GROUP_PART_ROWS` rows (a
    write frontier of a few thousand cache lines), straight into ``gkeys``/``gvals``,
    then each partition is counting-sorted by id inside its own region of the output,
    through scratch that stays in cache.  Same output as one pass.  ``loc`` (int32, at
    least ``n`` entries; the callers lend the memory of a later scratch array) holds each
    row's id inside its partition between the passes.

    Each pass runs serial ``nogil`` kernels over blocks of rows (or of partitions) on up
    to ``nthreads`` threads (:func:`dpfast._kernels._launch.chunked`): no parallel region
    to compile, and the output does not depend on the threads.

    ``lo``: the ids are ``ids - lo`` (raw integer ids in ``[lo, lo + n_ids)`` grouped by
    value, without a dense code per row first: an absent value has an empty range).
    ``key_bound``: the keys are known to lie in ``[0, key_bound)``; up to ``2**31`` the
    first pass writes each row's key and its id inside its part as one int64 word (one
    write stream per part instead of two; ``loc`` unused).
    """
    n = ids.shape[0]
    nthr = max(1, nthreads)
    if n_ids <= GROUP_ONE_PASS_IDS or n <= 4 * GROUP_PART_ROWS:
        # one count row per thread: at most ~2^25 counters in all (memory stays bounded)
        nt1 = max(1, min(nthr, (n + 65535) // 65536, (1 << 25) // max(n_ids, 1)))
        step1 = (n + nt1 - 1) // nt1
        cnt1 = np.zeros((nt1, n_ids), np.int64)
        _COUNT.launch((step1, ids, lo, 0, cnt1), nthr)
        _offsets(cnt1, off)  # id-major, thread-minor; off[n_ids] = n
        _SCATTER.launch((step1, ids, lo, 0, 0, keys, vals, use_vals, cnt1, gkeys, gvals,
                         loc, False, False), nthr)
        return
    want = min(GROUP_MAX_PARTS, max(2, n // GROUP_PART_ROWS))
    shift = 0
    while ((n_ids - 1) >> shift) + 1 > want:
        shift += 1
    n_parts = ((n_ids - 1) >> shift) + 1
    mask = (1 << shift) - 1
    pack = 0 < key_bound <= (1 << 31) and gkeys.dtype == np.int64 and shift < 32
    pstart = partition_rows(ids, lo, shift, n_parts, keys, vals, use_vals, gkeys, gvals,
                            loc, pack, nthr)
    biggest = int(np.diff(pstart).max())
    nblk = min(n_parts, 4 * nthr)
    pstep = (n_parts + nblk - 1) // nblk
    _SORT.launch((pstep, shift, n_ids, pstart, loc, off, gkeys, gvals, use_vals, biggest,
                  mask, pack), nthr)
    off[n_ids] = n


def partition_rows(ids, lo, shift, n_parts, keys, vals, use_vals, gkeys, gvals, loc, pack,
                   nthr):
    """The rows scattered into ``n_parts`` parts of ``2**shift`` consecutive ids each
    (``(ids[i] - lo) >> shift``), stable, on up to ``nthr`` threads: a count per block of
    rows, the parts' offsets, then the scatter of ``keys`` (and ``vals`` when
    ``use_vals``) into ``gkeys`` / ``gvals`` with each row's id bits in ``loc`` (packed
    into ``gkeys`` when ``pack``).  Returns the parts' first rows ``pstart`` (int64,
    ``n_parts + 1``; ``pstart[-1]`` = the number of rows).  Shared by the dense grouping
    and :mod:`dpfast._kernels.sparse_group`."""
    n = ids.shape[0]
    mask = (1 << shift) - 1
    nt = max(1, min(nthr, (n + 65535) // 65536))
    step = (n + nt - 1) // nt
    cnt = np.zeros((nt, n_parts), np.int64)
    _COUNT.launch((step, ids, lo, shift, cnt), nthr)
    pstart = np.empty(n_parts + 1, np.int64)
    _offsets(cnt, pstart)
    _SCATTER.launch((step, ids, lo, shift, mask, keys, vals, use_vals, cnt, gkeys, gvals,
                     loc, True, pack), nthr)
    return pstart


@nb.njit(cache=True, nogil=True)
def _count_blocks(b0, b1, step, ids, lo, shift, cnt):
    """``cnt[b, (ids[i] - lo) >> shift] += 1`` over the rows of blocks ``[b0, b1)`` (block
    ``b``: rows ``[b step, (b + 1) step)``)."""
    n = ids.shape[0]
    for b in range(b0, b1):
        for i in range(b * step, min(n, (b + 1) * step)):
            cnt[b, (ids[i] - lo) >> shift] += 1


@nb.njit(cache=True)
def _offsets(cnt, starts):
    """Exclusive offsets of the counts ``cnt[b, j]``, column-major (``j``, then ``b``):
    ``starts[j]`` the first row of column ``j``, ``cnt[b, j]`` block ``b``'s first row in
    it; ``starts[-1]`` the total."""
    total = 0
    for j in range(cnt.shape[1]):
        starts[j] = total
        for b in range(cnt.shape[0]):
            c = cnt[b, j]
            cnt[b, j] = total
            total += c
    starts[cnt.shape[1]] = total


@nb.njit(cache=True, nogil=True)
def _scatter_blocks(b0, b1, step, ids, lo, shift, mask, keys, vals, use_vals, cnt, gkeys,
                    gvals, loc, with_loc, pack):
    """Move the rows of blocks ``[b0, b1)`` to their places (``cnt`` from
    :func:`_offsets`), in input order; ``with_loc``: each row's id inside its part to
    ``loc`` (``pack``: to the low 32 bits of ``gkeys``, the key to the high ones)."""
    n = ids.shape[0]
    for b in range(b0, b1):
        for i in range(b * step, min(n, (b + 1) * step)):
            j = ids[i] - lo
            p = j >> shift
            q = cnt[b, p]
            if pack:
                gkeys[q] = (keys[i] << 32) | (j & mask)
            else:
                gkeys[q] = keys[i]
                if with_loc:
                    loc[q] = j & mask
            if use_vals:
                gvals[q] = vals[i]
            cnt[b, p] = q + 1


@nb.njit(cache=True, nogil=True)
def _sort_blocks(b0, b1, pstep, shift, n_ids, pstart, loc, off, gkeys, gvals, use_vals,
                 biggest, mask, pack):
    """:func:`_sort_partition` of the partitions of blocks ``[b0, b1)`` (block ``b``:
    partitions ``[b pstep, (b + 1) pstep)``), with scratch of ``biggest`` rows."""
    n_parts = pstart.shape[0] - 1
    sk = np.empty(biggest, gkeys.dtype)
    sv = np.empty(biggest if use_vals else 0, gvals.dtype)
    lc = np.empty(mask + 2, np.int64)
    for p in range(b0 * pstep, min(n_parts, b1 * pstep)):
        _sort_partition(p, shift, n_ids, pstart[p], pstart[p + 1], loc, off, gkeys, gvals,
                        use_vals, sk, sv, lc, pack)


def _row_blocks(args):
    """The blocks of rows of a counting or scattering pass: ``cnt``'s rows."""
    return args[4].shape[0] if len(args) == 5 else args[8].shape[0]


def _part_blocks(args):
    """The blocks of partitions of the sorting pass: ``ceil(n_parts / pstep)``."""
    return -(-(args[3].shape[0] - 1) // args[0])


def _block_range(args, a, b):
    return (a, b, *args)


# the passes of group_by_id over blocks [a, b) on threads
_COUNT = chunked(_count_blocks, _row_blocks, _block_range)
_SCATTER = chunked(_scatter_blocks, _row_blocks, _block_range)
_SORT = chunked(_sort_blocks, _part_blocks, _block_range)


@nb.njit(cache=True)
def _sort_partition(p, shift, n_ids, a, e, loc, off, gkeys, gvals, use_vals, sk, sv, lc,
                    pack):
    """Counting sort of partition ``p`` (rows ``[a, e)`` of ``gkeys``/``gvals``, ids
    ``loc`` inside it, or with ``pack`` in the low 32 bits of ``gkeys``) by id, in place
    through the scratch ``sk``/``sv``; fills ``off`` for the partition's ids."""
    low = np.int64(0xFFFFFFFF)
    first = p << shift
    m = min(1 << shift, n_ids - first)
    for j in range(m + 1):
        lc[j] = 0
    for q in range(a, e):
        if pack:
            lc[(gkeys[q] & low) + 1] += 1
        else:
            lc[loc[q] + 1] += 1
    pos = a
    for j in range(m):
        c = lc[j + 1]
        off[first + j] = pos
        lc[j] = pos - a
        pos += c
    r = e - a
    for t in range(r):
        sk[t] = gkeys[a + t]
    if use_vals:
        for t in range(r):
            sv[t] = gvals[a + t]
    for t in range(r):
        x = sk[t]
        if pack:
            j = x & low
            x = x >> 32
        else:
            j = loc[a + t]
        d = lc[j]
        gkeys[a + d] = x
        if use_vals:
            gvals[a + d] = sv[t]
        lc[j] = d + 1


def counting_order(codes, n_codes, order, out):
    """``out``: ``order`` stably sorted by ``codes[order]`` (a serial counting sort, codes
    in ``[0, n_codes)``): two passes make a lexicographic order, small to compile.  At
    most one row is its own order (no kernel to compile for a probe's one row)."""
    if order.shape[0] <= 1:
        out[:order.shape[0]] = order
        return
    _counting_order(codes, n_codes, order, out)


@nb.njit(cache=True)
def _counting_order(codes, n_codes, order, out):
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
@nb.njit(cache=True, _nrt=False)
def _less(a, v, vals, i, j, pairs):
    """Row i strictly before row j: by key ``a``, then (``vals`` given) by the value tuple
    of the rows ``v[i]``, ``v[j]`` of ``vals`` (lexicographic), else (``pairs``) by value
    ``v``.  (``vals`` None prunes the tuple branch at compile time.)"""
    if a[i] != a[j]:
        return a[i] < a[j]
    if vals is not None:
        ri = v[i]
        rj = v[j]
        for col in range(vals.shape[1]):
            if vals[ri, col] != vals[rj, col]:
                return vals[ri, col] < vals[rj, col]
        return False
    return pairs and v[i] < v[j]


@nb.njit(cache=True, _nrt=False)
def sort_rows(a, v, vals, lo, hi, pairs, ta, tv):
    """The one sort of an id's rows: a stable sort of rows [lo, hi) by :func:`_less` (key
    ``a``, then the value tuple ``vals[v]`` or, with ``pairs``, the value ``v``; ``v``
    permuted along unless ``pairs`` is False and ``vals`` None).  Insertion sort of runs of
    :data:`SMALL` rows, then bottom-up merges through the caller's scratch ``ta``, ``tv``
    (at least ``hi - lo`` entries when ``hi - lo > SMALL``; ``tv`` unused without
    values).  Plain loops (no ``np.sort``/``np.argsort``: much less for numba to compile on
    first use) and no allocation (``_nrt=False``: a call costs no reference counting of
    its arrays).  Every stable sort by the same order gives the same output."""
    along = pairs or vals is not None
    m = hi - lo
    for s in range(lo, hi, SMALL):
        e = min(s + SMALL, hi)
        if vals is None:  # by key, or (key, value): shift the larger rows up one slot
            for i in range(s + 1, e):
                ka = a[i]
                kv = v[i]
                j = i - 1
                while j >= s and (a[j] > ka or (pairs and a[j] == ka and v[j] > kv)):
                    a[j + 1] = a[j]
                    if pairs:
                        v[j + 1] = v[j]
                    j -= 1
                a[j + 1] = ka
                if pairs:
                    v[j + 1] = kv
            continue
        for i in range(s + 1, e):  # by (key, value tuple): swaps
            j = i
            while j > s and _less(a, v, vals, j, j - 1, pairs):
                t = a[j]
                a[j] = a[j - 1]
                a[j - 1] = t
                if along:
                    u = v[j]
                    v[j] = v[j - 1]
                    v[j - 1] = u
                j -= 1
    if m <= SMALL:
        return
    width = SMALL
    while width < m:
        for s in range(0, m, 2 * width):
            i = lo + s
            mid = lo + min(s + width, m)
            end = lo + min(s + 2 * width, m)
            j = mid
            t = s
            while i < mid and j < end:
                if _less(a, v, vals, j, i, pairs):  # strictly smaller on the right: stable
                    ta[t] = a[j]
                    if along:
                        tv[t] = v[j]
                    j += 1
                else:
                    ta[t] = a[i]
                    if along:
                        tv[t] = v[i]
                    i += 1
                t += 1
            while i < mid:
                ta[t] = a[i]
                if along:
                    tv[t] = v[i]
                i += 1
                t += 1
            while j < end:
                ta[t] = a[j]
                if along:
                    tv[t] = v[j]
                j += 1
                t += 1
        for t in range(m):
            a[lo + t] = ta[t]
            if along:
                v[lo + t] = tv[t]
        width *= 2


@nb.njit(cache=True)
def _sort_keys(a, lo, hi):
    """Sort rows [lo, hi) by key ``a`` (:func:`sort_rows` with its own scratch)."""
    sort_rows(a, a, None, lo, hi, False, np.empty(hi - lo if hi - lo > SMALL else 0, a.dtype),
              a[:0])


@nb.njit(cache=True)
def _sort_pairs(a, v, lo, hi):
    """Sort rows [lo, hi) by (key a, value v) (:func:`sort_rows` with its own scratch)."""
    m = hi - lo if hi - lo > SMALL else 0
    sort_rows(a, v, None, lo, hi, True, np.empty(m, a.dtype), np.empty(m, v.dtype))


# ----------------------------------------------------------------------------- per-key totals
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


# ----------------------------------------------------------------------------- shuffle
@nb.njit(cache=True)
def id_buckets(ids, nout, bucket, bounds):
    """The dask shuffle's output partition of every row: ``bucket[i]`` (any integer
    dtype holding ``nout - 1``) = the high 32 bits of SplitMix64's finalizer of the id's
    64 bits (int64 ``ids``) scaled to ``[0, nout)`` by a multiply and a shift (Lemire's
    range reduction: no division per row; ``nout >= 2**32``: mod ``nout``); ``bounds``
    (``nout + 1`` entries) the buckets' offsets in bucket order.  A function of the id
    value only, so an id's rows meet in one output partition."""
    m1 = np.uint64(0xBF58476D1CE4E5B9)
    m2 = np.uint64(0x94D049BB133111EB)
    q = np.uint64(nout)
    s32 = np.uint64(32)
    wide = nout >= (1 << 32)
    bounds[:] = 0
    for i in range(ids.shape[0]):
        z = np.uint64(ids[i])
        z = (z ^ (z >> np.uint64(30))) * m1
        z = (z ^ (z >> np.uint64(27))) * m2
        z = z ^ (z >> np.uint64(31))
        b = np.int64(z % q) if wide else np.int64(((z >> s32) * q) >> s32)
        bucket[i] = b
        bounds[b + 1] += 1
    for b in range(nout):
        bounds[b + 1] += bounds[b]


@nb.njit(cache=True)
def scatter_rows(x, bucket, bounds, out):
    """``out``: the rows of ``x`` grouped by ``bucket`` (bucket ``b`` at
    ``bounds[b]:bounds[b+1]``), in input order inside each bucket (a stable counting
    sort; ``out`` may be a narrower integer type whose range the caller checked)."""
    pos = bounds[:-1].copy()
    for i in range(x.shape[0]):
        b = bucket[i]
        out[pos[b]] = x[i]
        pos[b] += 1
