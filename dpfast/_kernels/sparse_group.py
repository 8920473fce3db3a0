"""Grouping rows by *sparse* integer privacy ids without a code per row (issue 40).

Private (docs/design.md): numpy/numba/math only, validate nothing, cached.

:func:`group_sparse_ids` gives what :func:`dpfast.tables._keys.factorize_column` followed by
:func:`dpfast._kernels.grouping.group_by_id` gives for integer ids whose range is wider than
their number of rows (6*10^6 rows of 6*10^5 ids spread over 10^8 values, a combine of the
Dask shuffle at 10^9 rows): the rows stably sorted by id value, each id's rows at
``[off[u], off[u+1])`` in input order, and the distinct ids ascending.  Instead of a hash
table (a cache miss per row) or a lookup in a table of the whole range, it is an MSD radix
sort on the raw value ``id - lo``:

1. the rows are partitioned by ``(id - lo) >> shift`` into contiguous ranges of ids, each
   row's key and its id's low ``shift`` bits packed into one int64 word (the passes of
   :func:`dpfast._kernels.grouping.group_by_id`, reused);
2. each part -- about :data:`dpfast._kernels.grouping.GROUP_PART_ROWS` rows, in cache -- is
   sorted by those low bits with a stable LSD radix sort (digits of at most
   :data:`DIGIT_BITS` bits), then scanned once: its distinct ids and their offsets are
   written compactly (the output is sized by the rows, never by the range).

Parts are independent: step 2 runs over blocks of parts on up to ``nthreads`` threads
(:func:`dpfast._kernels._launch.chunked`), each call's scratch sized by the largest part of
its blocks; the output does not depend on the threads.  Parts are ranges of id *values*:
ids clustered far from one outlier put most rows in one part, sorted by one thread out of
cache in a few streaming passes -- still no hash lookup per row, so such ids stay here
rather than go to the factorization, whose hashing pass is serial as well.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from dpfast._kernels._launch import chunked
from dpfast._kernels.grouping import GROUP_MAX_PARTS, GROUP_PART_ROWS, partition_rows

__all__ = ["DIGIT_BITS", "MAX_SHIFT", "sparse_shift", "group_sparse_ids"]

#: bits per digit of the in-cache LSD radix sort of a part (2048 counters per digit)
DIGIT_BITS = 11
#: a part's ids fit the low half of the packed word, and the digits (at most three of
#: :data:`DIGIT_BITS`, ``nd * db <= 32``) never reach the key: ranges up to
#: ``GROUP_MAX_PARTS * 2**MAX_SHIFT`` (2**42) ids are grouped here
MAX_SHIFT = 30


def sparse_shift(n: int, span: int) -> int:
    """The bits of an id inside its part for ``n`` rows over ``span`` id values: parts of
    about :data:`GROUP_PART_ROWS` rows when the ids are spread evenly, at most
    :data:`GROUP_MAX_PARTS` of them; -1 when a part would need more than
    :data:`MAX_SHIFT` bits (the caller factorizes instead)."""
    want = min(GROUP_MAX_PARTS, max(2, n // GROUP_PART_ROWS))
    shift = 0
    while ((span - 1) >> shift) + 1 > want:
        shift += 1
    return shift if shift <= MAX_SHIFT else -1


@nb.njit(cache=True, nogil=True, _nrt=False)
def _digit_pass(src, dst, sv, dv, a_src, a_dst, r, sh, m, c, use_vals):
    """One stable LSD pass: ``src[a_src:a_src + r]`` to ``dst[a_dst:]`` by the digit
    ``(x >> sh) & m`` (``c``: the digit's exclusive offsets, advanced); values along."""
    for q in range(r):
        x = src[a_src + q]
        k = (x >> sh) & m
        t = c[k]
        dst[a_dst + t] = x
        if use_vals:
            dv[a_dst + t] = sv[a_src + q]
        c[k] = t + 1


@nb.njit(cache=True, nogil=True)
def _sort_parts(b0, b1, pstep, shift, pstart, gkeys, gvals, use_vals, uniq, first, nuniq,
                lo):
    """Parts of blocks ``[b0, b1)`` (block ``b``: parts ``[b pstep, (b + 1) pstep)``): each
    part's packed words ``gkeys[a:e]`` (key << 32 | id's low bits) stably sorted by the low
    ``shift`` bits (LSD in ``nd`` digits of ``db`` bits, ``nd * db <= 32``, ping-pong
    through scratch sized by the largest of these parts), unpacked to the key, and its
    distinct ids written to ``uniq[a:]`` (values) and ``first[a:]`` (their first rows),
    their number to ``nuniq[p]``."""
    n_parts = pstart.shape[0] - 1
    p0 = b0 * pstep
    p1 = min(n_parts, b1 * pstep)
    biggest = 0
    for p in range(p0, p1):
        biggest = max(biggest, pstart[p + 1] - pstart[p])
    low = np.int64(0xFFFFFFFF)
    nd = (shift + DIGIT_BITS - 1) // DIGIT_BITS
    db = (shift + nd - 1) // nd if nd else 0
    nb_ = 1 << db
    m = np.int64(nb_ - 1)
    sk = np.empty(biggest, gkeys.dtype)
    sv = np.empty(biggest if use_vals else 0, gvals.dtype)
    c0 = np.zeros(nb_ + 1, np.int64)
    c1 = np.zeros(nb_ + 1, np.int64)
    c2 = np.zeros(nb_ + 1, np.int64)
    for p in range(p0, p1):
        a = pstart[p]
        e = pstart[p + 1]
        r = e - a
        if r > 1 and nd:
            c0[:] = 0
            c1[:] = 0
            c2[:] = 0
            for q in range(a, e):  # every digit's counts in one pass
                x = gkeys[q]
                c0[(x & m) + 1] += 1
                if nd > 1:
                    c1[((x >> db) & m) + 1] += 1
                if nd > 2:
                    c2[((x >> (2 * db)) & m) + 1] += 1
            for j in range(nb_):
                c0[j + 1] += c0[j]
                c1[j + 1] += c1[j]
                c2[j + 1] += c2[j]
            _digit_pass(gkeys, sk, gvals, sv, a, 0, r, 0, m, c0, use_vals)
            if nd > 1:
                _digit_pass(sk, gkeys, sv, gvals, 0, a, r, db, m, c1, use_vals)
            if nd > 2:
                _digit_pass(gkeys, sk, gvals, sv, a, 0, r, 2 * db, m, c2, use_vals)
            if nd != 2:  # an odd number of passes: the sorted rows are in the scratch
                for q in range(r):
                    gkeys[a + q] = sk[q]
                if use_vals:
                    for q in range(r):
                        gvals[a + q] = sv[q]
        base = lo + (np.int64(p) << shift)
        u = a
        prev = np.int64(-1)
        for q in range(a, e):
            x = gkeys[q]
            j = x & low
            if j != prev:
                uniq[u] = base + j
                first[u] = q
                u += 1
                prev = j
            gkeys[q] = x >> 32
        nuniq[p] = u - a


@nb.njit(cache=True)
def _compact(pstart, nuniq, uniq, first, off):
    """Move each part's distinct ids (at ``uniq[pstart[p]:]``) together, ascending;
    ``off`` their first rows and, last, the number of rows.  Returns their number."""
    u = 0
    for p in range(pstart.shape[0] - 1):
        a = pstart[p]
        for t in range(nuniq[p]):
            uniq[u] = uniq[a + t]
            off[u] = first[a + t]
            u += 1
    off[u] = pstart[pstart.shape[0] - 1]
    return u


def _part_blocks(args):
    """The blocks of parts of the sorting pass, ``ceil(n_parts / pstep)`` (``args``: the
    launch's tuple, ``pstep`` first and ``pstart`` third)."""
    return -(-(args[2].shape[0] - 1) // args[0])


def _block_range(args, a, b):
    return (a, b, *args)


_SORT = chunked(_sort_parts, _part_blocks, _block_range)


def group_sparse_ids(ids, lo, span, shift, keys, vals, use_vals, gkeys, gvals, uniq, off,
                     nthreads, first=None):
    """Group the rows by id value (module docstring): ``ids`` int64 in ``[lo, lo + span)``,
    ``shift`` from :func:`sparse_shift` (>= 0), ``keys`` int64 in ``[0, 2**31)``.  Fills
    ``gkeys`` (int64, ``n``) with the keys and ``gvals`` (``n`` when ``use_vals``) with the
    values in the order of (id, input position); ``uniq`` (int64, ``n``) and ``off``
    (int64, ``n + 1``) get the distinct ids ascending and their first rows (``off[u]`` =
    the number of rows after the last).  Returns the number of distinct ids ``u``:
    ``uniq[:u]``, ``off[:u + 1]``.  ``first``: scratch of at least ``n`` entries (int64,
    or int32 when ``n < 2**31``) for the parts' first rows (None: allocated here)."""
    n = ids.shape[0]
    nthr = max(1, nthreads)
    n_parts = ((span - 1) >> shift) + 1
    pstart = partition_rows(ids, lo, shift, n_parts, keys, vals, use_vals, gkeys, gvals,
                            gkeys[:0].view(np.int32), True, nthr)
    nblk = min(n_parts, 4 * nthr)
    pstep = (n_parts + nblk - 1) // nblk
    if first is None:
        first = np.empty(n, np.int64)
    nuniq = np.zeros(n_parts, np.int64)
    _SORT.launch((pstep, shift, pstart, gkeys, gvals, use_vals, uniq, first, nuniq,
                  np.int64(lo)), nthr)
    return int(_compact(pstart, nuniq, uniq, first, off))
