"""Release-table kernels, part 2: contribution bounding (grouping: `dpfast._kernels.grouping`).

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

from dpfast._kernels._launch import chunked
from dpfast._kernels.chacha import first_blocks
from dpfast._kernels.grouping import _sort_keys, _sort_pairs
from dpfast._kernels.uniform import below

M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
#: ids per batch of the parallel bounding kernels: the first keystream block of every
#: stream the batch's ids need is computed in one SIMD call, 16 streams per ChaCha20 run
#: (:func:`dpfast._kernels.chacha.first_blocks`), instead of one scalar block per id
BATCH = 64
#: at most this many streams per batch (an id whose streams do not fit draws its own)
BATCH_STREAMS = 4 * BATCH


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
    _shuffle_from(a, b, e, lo, d, k, key32, nonce, buf, st, False)


@nb.njit(cache=True)
def _shuffle_from(a, b, e, lo, d, k, key32, nonce, buf, st, filled):
    """:func:`_shuffle_prefix`; with ``filled``, ``buf`` (eight words) already holds block 0
    of the stream (computed in a batch): the same draws, that block not recomputed."""
    st[0] = 0
    st[1] = 1 if filled else 0  # the block after the buffer, as a refill leaves it
    st[2] = 0
    pos = 0 if filled else buf.shape[0]  # empty: the first draw computes block 0
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


def _one_row_each(off, k, c):
    """Whether every id has exactly one row and ``k``, ``c`` >= 1: nothing to bound (each
    id keeps its row), nothing drawn."""
    n_ids = off.shape[0] - 1
    return k >= 1 and c >= 1 and off[n_ids] == n_ids and bool(np.all(np.diff(off) == 1))


def bound_counts_sorted(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw):
    """:func:`bound_counts` (serial) for rows already sorted by (id, key).  One row per id
    (e.g. the one synthetic row on which a session probes a release's charge) keeps every
    row, in numpy: the kernel's output without compiling it."""
    if _one_row_each(off, k, c):
        n = off.shape[0] - 1
        nkeep[:n] = 1
        gcnt[:n] = 1
        graw[:n] = 1
        return
    _bound_counts_serial(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw)


@nb.njit(cache=True)
def _bound_counts_serial(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw):
    _bound_counts_sorted(0, off.shape[0] - 1, off, gkeys, id_hash, subkey, k, c, gcnt,
                         nkeep, policy, graw, np.empty(8, np.uint64), np.zeros(3, np.int64),
                         np.zeros(3, np.uint32))


@nb.njit(cache=True)
def _distinct_counts(lo, hi, gkeys, c, gcnt, graw):
    """The distinct keys of rows ``[lo, hi)`` (sorted by key) compacted to ``gkeys[lo:]``,
    their contributions ``min(rows, c)`` to ``gcnt`` and rows to ``graw``; returns their
    number (:func:`_bound_counts_sorted`'s first step)."""
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
    return d


@nb.njit(cache=True, inline="always")
def _want(nonces, m, h, purpose):
    """Append the stream (id value ``h``, ``purpose``) to a batch's ``nonces``."""
    nonces[m, 0] = np.uint32(h & M32)
    nonces[m, 1] = np.uint32(h >> S32)
    nonces[m, 2] = np.uint32(purpose)
    return m + 1


@nb.njit(cache=True, inline="always")
def _load(buf, pre, t):
    for w in range(8):
        buf[w] = pre[t, w]


@nb.njit(cache=True, nogil=True)
def _bound_counts_block(first, end, off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy,
                        graw):
    """:func:`_bound_counts_sorted` for ids ``[first, end)`` (each id's rows sorted here,
    while they are in cache), in batches of :data:`BATCH` ids: first every id's distinct
    keys, then block 0 of the key-choice stream of every id with more than ``k`` of them in
    one SIMD call, then the choices (same draws as one id at a time)."""
    buf = np.empty(8, np.uint64)
    st = np.zeros(3, np.int64)
    nonce = np.zeros(3, np.uint32)
    nonces = np.zeros((BATCH, 3), np.uint32)
    ctr = np.zeros(BATCH, np.uint32)
    pre = np.empty((BATCH, 8), np.uint64)
    for b0 in range(first, end, BATCH):
        b1 = min(end, b0 + BATCH)
        m = 0
        for i in range(b0, b1):
            _sort_keys(gkeys, off[i], off[i + 1])
            d = _distinct_counts(off[i], off[i + 1], gkeys, c, gcnt, graw)
            nkeep[i] = d
            if d > k and policy is None:
                m = _want(nonces, m, id_hash[i], 0)
        first_blocks(subkey, nonces, ctr, pre, m)
        t = 0
        for i in range(b0, b1):
            d = nkeep[i]
            if d <= k:
                continue
            lo = off[i]
            _set_nonce(nonce, id_hash[i], 0)
            if policy is None:  # uniform (pruned at compile time: _most_frequent not built)
                _load(buf, pre, t)
                t += 1
                _shuffle_from(gkeys, gcnt, gcnt[:0], lo, d, k, subkey, nonce, buf, st, True)
            else:
                _most_frequent(gkeys, gcnt, gcnt, graw, lo, d, k, False, subkey, nonce, buf,
                               st)
            nkeep[i] = k


def bound_counts(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw, nthreads):
    """Bound each id's rows (grouped by :func:`group_by_id`) for a count.

    For id ``i``: its distinct keys (sorted) with row counts; if it has more than ``k``
    distinct keys, ``k`` of them chosen (keyed, see module docstring): uniformly
    (``policy`` 0), or the ``k`` with the most rows, ties in a uniformly random order
    (``policy`` 1, :func:`_most_frequent`).  ``graw`` is scratch (the raw row counts).  On exit
    ``gkeys[off[i]:off[i] + nkeep[i]]`` are the kept keys and ``gcnt[...]`` their
    contributions ``min(rows, c)``.  Blocks of ids run :func:`_bound_counts_block` on up
    to ``nthreads`` threads (the ids are independent: the same output; no parallel region
    to compile).
    """
    _COUNTS_BLOCKS.launch((off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw),
                          nthreads)


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


def bound_values_sorted(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep, policy,
                        graw):
    """:func:`bound_values` (serial) for rows already sorted by (id, key, value); one row
    per id in numpy, as :func:`bound_counts_sorted`."""
    if _one_row_each(off, k, c):
        n = off.shape[0] - 1
        nkeep[:n] = 1
        gsum[:n] = gvals[:n]
        gcnt[:n] = 1
        graw[:n] = 1
        return
    _bound_values_serial(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep, policy,
                         graw)


@nb.njit(cache=True)
def _bound_values_serial(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep,
                         policy, graw):
    _bound_values_sorted(0, off.shape[0] - 1, off, gkeys, gvals, id_hash, subkey, k, c,
                         gsum, gcnt, nkeep, policy, graw, np.empty(8, np.uint64),
                         np.zeros(3, np.int64), np.zeros(3, np.uint32))


@nb.njit(cache=True, nogil=True)
def _bound_values_block(first, end, off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt,
                        nkeep, policy, graw):
    """:func:`_bound_values_sorted` for ids ``[first, end)`` (each id's rows sorted here),
    in batches of :data:`BATCH` ids: first every id's distinct keys (their rows counted in
    ``graw``), then block 0 of every stream the batch needs (the rows of a key with more
    than ``c``, the keys of an id with more than ``k``) in one SIMD call, then the choices
    and sums (same draws as one id at a time).  An id whose streams do not fit in the
    batch's :data:`BATCH_STREAMS` draws its own (``pre`` not used for it)."""
    buf = np.empty(8, np.uint64)
    st = np.zeros(3, np.int64)
    nonce = np.zeros(3, np.uint32)
    nonces = np.zeros((BATCH_STREAMS, 3), np.uint32)
    ctr = np.zeros(BATCH_STREAMS, np.uint32)
    pre = np.empty((BATCH_STREAMS, 8), np.uint64)
    own = np.zeros(BATCH, np.bool_)
    for b0 in range(first, end, BATCH):
        b1 = min(end, b0 + BATCH)
        m = 0
        for i in range(b0, b1):
            lo = off[i]
            hi = off[i + 1]
            _sort_pairs(gkeys, gvals, lo, hi)
            d = 0
            need = 0
            j = lo
            while j < hi:
                kk = gkeys[j]
                e = j + 1
                while e < hi and gkeys[e] == kk:
                    e += 1
                gkeys[lo + d] = kk
                graw[lo + d] = e - j
                if e - j > c:
                    need += 1
                d += 1
                j = e
            nkeep[i] = d
            if d > k and policy is None:
                need += 1
            own[i - b0] = m + need > BATCH_STREAMS
            if need and not own[i - b0]:
                h = id_hash[i]
                for q in range(d):
                    if graw[lo + q] > c:
                        m = _want(nonces, m, h, q + 1)
                if d > k and policy is None:
                    m = _want(nonces, m, h, 0)
        first_blocks(subkey, nonces, ctr, pre, m)
        t = 0
        for i in range(b0, b1):
            d = nkeep[i]
            lo = off[i]
            filled = not own[i - b0]
            j = lo
            for q in range(d):
                r = graw[lo + q]
                mm = r
                if r > c:
                    _set_nonce(nonce, id_hash[i], q + 1)
                    if filled:
                        _load(buf, pre, t)
                        t += 1
                    _shuffle_from(gvals, gsum[:0], gcnt[:0], j, r, c, subkey, nonce, buf, st,
                                  filled)
                    mm = c
                sm = gvals[j]
                for u in range(j + 1, j + mm):
                    sm += gvals[u]
                gsum[lo + q] = sm
                gcnt[lo + q] = mm
                j += r
            if d > k:
                _set_nonce(nonce, id_hash[i], 0)
                if policy is None:  # uniform (pruned at compile time)
                    if filled:
                        _load(buf, pre, t)
                        t += 1
                    _shuffle_from(gkeys, gsum, gcnt, lo, d, k, subkey, nonce, buf, st, filled)
                else:
                    _most_frequent(gkeys, gsum, gcnt, graw, lo, d, k, True, subkey, nonce,
                                   buf, st)
                nkeep[i] = k


def bound_values(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep, policy, graw,
                 nthreads):
    """Bound each id's rows for a sum / mean: per distinct key at most ``c`` rows (chosen
    uniformly among the id's rows of that key, sorted by value), then at most ``k`` keys
    (uniformly, ``policy`` 0; the ``k`` with the most rows, ``policy`` 1).

    On exit ``gkeys[off[i]:off[i] + nkeep[i]]`` are the kept keys, ``gsum`` the sums of the
    kept (already clamped) values and ``gcnt`` the numbers of kept rows.  Blocks of ids
    run :func:`_bound_values_block` on up to ``nthreads`` threads (as
    :func:`bound_counts`).
    """
    _VALUES_BLOCKS.launch((off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep,
                           policy, graw), nthreads)


def _ids(args):
    return args[0].shape[0] - 1


def _id_range(args, a, b):
    return (a, b, *args)


# the bounding of blocks of ids [a, b) (``off`` first among the arguments) on threads
_COUNTS_BLOCKS = chunked(_bound_counts_block, _ids, _id_range)
_VALUES_BLOCKS = chunked(_bound_values_block, _ids, _id_range)


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
