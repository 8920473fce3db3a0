"""Release-table kernels, part 2: contribution bounding (grouping: `dpfast._kernels.grouping`).

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.

One core
--------
Every bounded statistic keeps rows through the one per-id choice of this module:
:func:`_bound_block` walks each privacy id's rows (sorted by key, then value), takes its
distinct keys, keeps at most ``c`` rows per key (:func:`_choose_rows`) and at most ``k``
keys (:func:`_choose_keys`), and hands the choice to small accumulators.  What a statistic
needs decides only which arrays it passes (numba compiles one specialisation per
combination; an absent output is ``None``, pruned at compile time):

* the count (``rows`` None): kept keys and ``min(rows, c)`` per key, no row drawn;
* the value sums (``vsum``): the sum of the kept values per kept key;
* the summand matrix (``mat``, ``msum``): column sums over the kept rows, optionally one
  row per distinct value tuple (``distinct``);
* the kept-row mask (``mark``, by row position) and the run starts (``gst``).

:func:`bound_counts`, :func:`bound_values` (and their serial ``*_sorted`` twins),
:func:`dpfast._kernels.rows.bound_rows` and :func:`dpfast._kernels.quantile.bound_rows`
are launches of it.  The distinct (id, key) pairs are the kept keys themselves
(``nkeep`` per id).

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
from dpfast._kernels.grouping import SMALL, _less, sort_rows
from dpfast._kernels.uniform import below

M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)
#: ids per batch of the bounding kernel: the first keystream block of every stream the
#: batch's ids need is computed in one SIMD call, 16 streams per ChaCha20 run
#: (:func:`dpfast._kernels.chacha.first_blocks`), instead of one scalar block per id
BATCH = 64
#: at most this many streams per batch (an id whose streams do not fit draws its own)
BATCH_STREAMS = 4 * BATCH


# ----------------------------------------------------------------------------- PRF streams
@nb.njit(cache=True, _nrt=False)
def _set_nonce(nonce, h, purpose):
    """The id's stream for ``purpose``: nonce = (h mod 2^32, h >> 32, purpose)."""
    nonce[0] = np.uint32(h & M32)
    nonce[1] = np.uint32(h >> S32)
    nonce[2] = np.uint32(purpose)


@nb.njit(cache=True, _nrt=False)
def _want(nonces, m, h, purpose):
    """Append the stream (id value ``h``, ``purpose``) to a batch's ``nonces``."""
    nonces[m, 0] = np.uint32(h & M32)
    nonces[m, 1] = np.uint32(h >> S32)
    nonces[m, 2] = np.uint32(purpose)
    return m + 1


@nb.njit(cache=True, _nrt=False)
def _shuffle_from(a, b, e, lo, d, k, key32, nonce, buf, st, filled):
    """Partial Fisher-Yates: a uniformly random ordered k-subset of slots [lo, lo + d)
    moves to [lo, lo + k) (arrays ``a`` and, if not empty, ``b`` and ``e`` permuted
    together).  With ``filled``, ``buf`` (eight words) already holds block 0 of the stream
    (computed in a batch): the same draws, that block not recomputed.  Compiled without
    numba's reference counting (``_nrt=False``: it allocates nothing), so a call costs no
    atomic reference-count updates of its arrays -- inlined at numba's level it cost about
    forty per id (each inlined argument is a new reference), the bounding's largest cost
    (issue 40), and on two threads their shared counters bounced between the cores."""
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


@nb.njit(cache=True, _nrt=False)
def _most_frequent(a, s, n, raw, lo, d, k, key32, nonce, buf, st, w, ta, ts):
    """Move the ``k`` entries of ``[lo, lo + d)`` with the largest ``raw`` (row counts) to
    ``[lo, lo + k)`` (``a``, ``n`` and, if not empty, ``s`` moved together): the entries in
    a uniformly random order (a full Fisher-Yates shuffle of positions on the id's stream),
    then stably sorted by ``raw`` descending -- so ties are broken uniformly at random.
    ``w`` (int64, ``(5, >= d)``), ``ta`` (``a``'s dtype) and ``ts`` (``s``'s): the
    caller's scratch (no allocation, no reference counting)."""
    st[0] = 0
    st[1] = 0
    st[2] = 0
    pos = buf.shape[0]
    perm = w[0]
    neg = w[1]
    rank = w[2]
    for i in range(d):
        perm[i] = i
    for j in range(d - 1):
        r, pos = below(buf, pos, st, key32, nonce, np.uint64(d - j))
        r = j + np.int64(r)
        t = perm[j]
        perm[j] = perm[r]
        perm[r] = t
    for i in range(d):
        neg[i] = -raw[lo + perm[i]]
        rank[i] = i
    # by (-rows, random position): the ranks are distinct
    sort_rows(neg, rank, None, 0, d, True, w[3], w[4])
    has_s = s.shape[0] > 0
    tn = w[3]  # (the sort's scratch is free again)
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


# ----------------------------------------------------------------------------- the choice
@nb.njit(cache=True, _nrt=False)
def _choose_rows(rows, j, m, c, h, q, key32, nonce, buf, st, pre, t, filled):
    """The rows the id keeps of its ``q``-th key (canonical order) when it has ``m > c``
    candidates ``rows[j:j + m]``: ``c`` chosen uniformly move to the front (stream
    ``(h, q + 1)``; ``filled``: its block 0 is ``pre[t]``).  Returns the next ``t``.  (A
    count keeps ``min(m, c)`` rows and draws none: it needs only how many.)  No reference
    counting (``_nrt=False``, as :func:`_shuffle_from`)."""
    _set_nonce(nonce, h, q + 1)
    if filled:
        for w in range(8):
            buf[w] = pre[t, w]
        t += 1
    _shuffle_from(rows, rows[:0], rows[:0], j, m, c, key32, nonce, buf, st, filled)
    return t


@nb.njit(cache=True, _nrt=False)
def _choose_keys(ukeys, pay, gcn, graw, lo, d, k, h, policy, key32, nonce, buf, st, pre, t,
                 filled, wk, wa, wp):
    """The keys the id keeps: of its ``d`` keys ``ukeys[lo:lo + d]`` (with their payload
    ``pay`` -- value sums or run starts, if not empty -- and kept rows ``gcn``), ``k``
    move to the front (called when ``d > k``; stream ``(h, 0)``): uniformly (``policy``
    None), or the ``k`` with the most rows ``graw`` (ties uniformly: :func:`_most_frequent`,
    which computes its own block 0; ``wk``, ``wa``, ``wp`` its scratch).  Returns (kept
    keys, next ``t``).  No reference counting (``_nrt=False``); ``policy`` None prunes the
    frequent branch at compile time."""
    _set_nonce(nonce, h, 0)
    if policy is None:  # uniform (pruned at compile time: _most_frequent not built)
        if filled:
            for w in range(8):
                buf[w] = pre[t, w]
            t += 1
        _shuffle_from(ukeys, pay, gcn, lo, d, k, key32, nonce, buf, st, filled)
    else:
        _most_frequent(ukeys, pay, gcn, graw, lo, d, k, key32, nonce, buf, st, wk, wa, wp)
    return k, t


@nb.njit(cache=True, nogil=True)
def _bound_block(first, end, off, gkeys, ukeys, rows, mat, distinct, id_hash, subkey, k, c,
                 gst, gcn, graw, nkeep, vsum, msum, mark, policy, sort):
    """Bound ids ``[first, end)``: the one per-id choice and its accumulators (module
    docstring).  In batches of :data:`BATCH` ids: first every id's rows sorted (``sort``
    not None: by key, by (key, ``rows``), or with ``mat`` by (key, value tuple of
    ``mat[rows]``); None: sorted already) and its distinct keys, then block 0 of every
    stream the batch needs (the rows of a key with more than ``c`` candidates, the keys of
    an id with more than ``k``) in one SIMD call, then per id the choice (same draws as
    one id at a time; an id whose streams do not fit in :data:`BATCH_STREAMS` draws its
    own) and the accumulators.

    On exit, for id ``i``: ``ukeys[off[i]:off[i] + nkeep[i]]`` its kept keys, ``gcn`` their
    kept rows; ``vsum`` the sums of the kept ``rows`` values; ``gst`` the starts of the
    kept rows' runs (``rows[gst:gst + gcn]``); ``msum[off[i] + t, :]`` the column sums of
    ``mat`` over them; ``mark[r]`` whether row position ``r`` is kept.  ``gst`` is empty
    for a count and for value sums (their kept keys carry no run start)."""
    buf = np.empty(8, np.uint64)
    st = np.zeros(3, np.int64)
    nonce = np.zeros(3, np.uint32)
    nonces = np.zeros((BATCH_STREAMS, 3), np.uint32)
    ctr = np.zeros(BATCH_STREAMS, np.uint32)
    pre = np.empty((BATCH_STREAMS, 8), np.uint64)
    own = np.zeros(BATCH, np.bool_)
    # scratch for the whole block, sized by its longest id (the sort's merges, the most
    # frequent keys' order): the helpers allocate nothing and count no references
    big = 0
    for i in range(first, end):
        big = max(big, off[i + 1] - off[i])
    wide = big if big > SMALL else 0
    sa = np.empty(wide, gkeys.dtype)
    if rows is not None:  # (a variable of its own: rows' dtype is not gkeys')
        sv = np.empty(wide, rows.dtype)
    nf = big if policy is not None else 0  # the most frequent keys' scratch
    wk = np.empty((5, nf), np.int64)
    wa = np.empty(nf, ukeys.dtype)
    wg = np.empty(nf, gst.dtype)  # their payload: run starts (empty for a count)
    if vsum is not None:  # or value sums (of the values' dtype)
        wv = np.empty(nf, vsum.dtype)
    for b0 in range(first, end, BATCH):
        b1 = min(end, b0 + BATCH)
        m = 0
        for i in range(b0, b1):
            lo = off[i]
            hi = off[i + 1]
            if sort is not None:
                if rows is not None:  # by (key, value tuple of mat[rows]) or (key, rows)
                    sort_rows(gkeys, rows, mat, lo, hi, True, sa, sv)
                else:
                    sort_rows(gkeys, gkeys, None, lo, hi, False, sa, sa)
            d = 0  # the distinct keys: key q to ukeys[lo + q], its rows to graw[lo + q],
            j = lo  # its candidate rows to gcn[lo + q]
            while j < hi:
                kk = gkeys[j]
                e = j + 1
                while e < hi and gkeys[e] == kk:
                    e += 1
                r = e - j
                if mat is not None:
                    if distinct:  # one row per distinct value tuple (duplicates adjacent)
                        w = j + 1
                        for q in range(j + 1, e):
                            if _less(gkeys, rows, mat, w - 1, q, True):
                                rows[w] = rows[q]
                                w += 1
                        r = w - j
                ukeys[lo + d] = kk
                graw[lo + d] = e - j
                if rows is None:  # a count: how many rows it keeps, none drawn
                    r = min(r, c)
                gcn[lo + d] = r
                d += 1
                j = e
            nkeep[i] = d
            need = 0
            if rows is not None:
                for q in range(d):
                    if gcn[lo + q] > c:
                        need += 1
            if d > k and policy is None:
                need += 1
            own[i - b0] = m + need > BATCH_STREAMS
            if need and not own[i - b0]:
                h = id_hash[i]
                if rows is not None:
                    for q in range(d):
                        if gcn[lo + q] > c:
                            m = _want(nonces, m, h, q + 1)
                if d > k and policy is None:
                    m = _want(nonces, m, h, 0)
        # the lanes past m of the last SIMD run of 16 streams are computed and ignored: one
        # more run costs less than the scalar blocks of a remainder of 3 or more
        first_blocks(subkey, nonces, ctr, pre, m + (-m % 16 if m % 16 >= 3 else 0))
        t = 0
        for i in range(b0, b1):
            d = nkeep[i]
            lo = off[i]
            h = id_hash[i]
            filled = not own[i - b0]
            if rows is not None:  # the rows of each key, in canonical key order
                j = lo
                for q in range(d):
                    r = graw[lo + q]
                    cnt = gcn[lo + q]
                    if cnt > c:  # (tested here: a call costs its arrays' reference counts)
                        t = _choose_rows(rows, j, cnt, c, h, q, subkey, nonce, buf, st, pre, t,
                                         filled)
                        cnt = c
                        gcn[lo + q] = c
                    if vsum is not None:
                        sm = rows[j]
                        for u in range(j + 1, j + cnt):
                            sm += rows[u]
                        vsum[lo + q] = sm
                    if vsum is None:  # (the kinds that read the kept rows again)
                        gst[lo + q] = j
                    j += r
            if d > k:  # then the keys (their payload moved along)
                if vsum is not None:
                    d, t = _choose_keys(ukeys, vsum, gcn, graw, lo, d, k, h, policy, subkey,
                                        nonce, buf, st, pre, t, filled, wk, wa, wv)
                else:
                    d, t = _choose_keys(ukeys, gst, gcn, graw, lo, d, k, h, policy, subkey,
                                        nonce, buf, st, pre, t, filled, wk, wa, wg)
                nkeep[i] = d
            if mark is not None:
                for u in range(lo, off[i + 1]):
                    mark[u] = False
                for g in range(lo, lo + d):
                    for u in range(gst[g], gst[g] + gcn[g]):
                        mark[u] = True
            if msum is not None:
                for g in range(lo, lo + d):
                    s0 = gst[g]
                    for col in range(mat.shape[1]):
                        acc = np.int64(0)
                        for u in range(s0, s0 + gcn[g]):
                            acc += mat[rows[u], col]
                        msum[g, col] = acc


def _ids(args):
    return args[0].shape[0] - 1


def _id_range(args, a, b):
    return (a, b, *args)


# the bounding of blocks of ids [a, b) (``off`` first among the arguments) on threads
_BLOCKS = chunked(_bound_block, _ids, _id_range)


def bound(off, gkeys, ukeys, rows, mat, distinct, id_hash, subkey, k, c, gst, gcn, graw,
          nkeep, vsum, msum, mark, policy, nthreads, sort=True):
    """The launch of :func:`_bound_block` over every id, blocks of ids on up to
    ``nthreads`` threads (the ids are independent: the same output; no parallel region to
    compile).  ``sort=False``: the rows are sorted already (one serial call, the sort not
    compiled)."""
    if gst is None:  # (not read by a count or a value sum)
        gst = np.empty(0, np.int64)
    args = (off, gkeys, ukeys, rows, mat, distinct, id_hash, subkey, k, c, gst, gcn, graw,
            nkeep, vsum, msum, mark, policy, True if sort else None)
    _BLOCKS.launch(args, nthreads if sort else 1)


# ----------------------------------------------------------------------------- launches
def _one_row_each(off, k, c):
    """Whether every id has exactly one row and ``k``, ``c`` >= 1: nothing to bound (each
    id keeps its row), nothing drawn."""
    n_ids = off.shape[0] - 1
    return k >= 1 and c >= 1 and off[n_ids] == n_ids and bool(np.all(np.diff(off) == 1))


def bound_counts(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw, nthreads):
    """Bound each id's rows (grouped by :func:`group_by_id`) for a count.

    For id ``i``: its distinct keys (sorted) with row counts; if it has more than ``k``
    distinct keys, ``k`` of them chosen (keyed, see module docstring): uniformly
    (``policy`` None), or the ``k`` with the most rows, ties in a uniformly random order
    (``policy`` 1, :func:`_most_frequent`).  ``graw`` is scratch (the raw row counts).  On exit
    ``gkeys[off[i]:off[i] + nkeep[i]]`` are the kept keys and ``gcnt[...]`` their
    contributions ``min(rows, c)``.
    """
    bound(off, gkeys, gkeys, None, None, False, id_hash, subkey, k, c, None, gcnt, graw,
          nkeep, None, None, None, policy, nthreads)


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


def _bound_counts_serial(off, gkeys, id_hash, subkey, k, c, gcnt, nkeep, policy, graw):
    bound(off, gkeys, gkeys, None, None, False, id_hash, subkey, k, c, None, gcnt, graw,
          nkeep, None, None, None, policy, 1, sort=False)


def bound_values(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep, policy, graw,
                 nthreads):
    """Bound each id's rows for a sum / mean: per distinct key at most ``c`` rows (chosen
    uniformly among the id's rows of that key, sorted by value), then at most ``k`` keys
    (uniformly, ``policy`` None; the ``k`` with the most rows, ``policy`` 1).

    On exit ``gkeys[off[i]:off[i] + nkeep[i]]`` are the kept keys, ``gsum`` the sums of the
    kept (already clamped) values and ``gcnt`` the numbers of kept rows.
    """
    bound(off, gkeys, gkeys, gvals, None, False, id_hash, subkey, k, c, None, gcnt, graw,
          nkeep, gsum, None, None, policy, nthreads)


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


def _bound_values_serial(off, gkeys, gvals, id_hash, subkey, k, c, gsum, gcnt, nkeep,
                         policy, graw):
    bound(off, gkeys, gkeys, gvals, None, False, id_hash, subkey, k, c, None, gcnt, graw,
          nkeep, gsum, None, None, policy, 1, sort=False)
