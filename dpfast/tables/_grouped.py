"""Encode privacy ids and group the rows by them: the input of every bounding kernel.

:func:`group_ids` returns each id's rows contiguous (``off``), in canonical id order and in
input order inside an id, with the ids' distinct values (:func:`dpfast.tables._keys`'s
canonical order).  Integer ids whose range is at most the number of rows (the common case:
dense numeric person ids) are grouped by value in one sort, without a code per row first:
the grouping's counting pass is the encoding (an absent value is an empty range, dropped
afterwards).  That saves a pass that looked up every row's code in a table of the whole
id range -- a cache miss per row once the table outgrows the cache, the largest stage of a
count over 10^7 rows with 10^6 ids (issue 40).  Other ids are factorized first
(:func:`dpfast.tables._keys.factorize_column`) and grouped by code.  Both give the same
arrays.
"""

from __future__ import annotations

import numpy as np

from dpfast._core import scratch
from dpfast._kernels import grouping as _kg
from dpfast._kernels import sparse_group as _ks
from dpfast.tables import _keys

__all__ = ["group_ids", "by_value"]

_SAFE = 1 << 62  # raw values within (-2**62, 2**62): ``id - lo`` fits int64


def _id_range(ids: np.ndarray) -> tuple[int, int] | None:
    """``(lo, hi)`` of integer ids within ``(-2**62, 2**62)`` (``id - lo`` fits int64),
    else None."""
    if ids.dtype.kind not in "iu" or ids.shape[0] == 0:
        return None
    lo, hi = int(ids.min()), int(ids.max())
    return None if lo <= -_SAFE or hi >= _SAFE else (lo, hi)


def by_value(ids: np.ndarray, bounds: tuple[int, int] | None = None
             ) -> tuple[int, int] | None:
    """``(lo, span)`` when integer ids are grouped by value (their range is at most the
    number of rows), else None.  ``bounds``: :func:`_id_range` of ``ids`` if known."""
    r = _id_range(ids) if bounds is None else bounds
    if r is None or r[1] - r[0] + 1 > ids.shape[0]:
        return None
    return r[0], r[1] - r[0] + 1


def _sparse(ids: np.ndarray, n_keys: int, bounds: tuple[int, int] | None = None
            ) -> tuple[int, int, int] | None:
    """``(lo, span, shift)`` when integer ids too spread for :func:`by_value` are grouped
    by :func:`dpfast._kernels.sparse_group.group_sparse_ids` (a range of up to 2**42
    values, key codes known to fit 31 bits), else None (factorized first).  ``bounds``:
    :func:`_id_range` of ``ids`` if known."""
    n = ids.shape[0]
    if ids.dtype.kind not in "iu" or n < _keys.SERIAL_ROWS or not 0 < n_keys <= 1 << 31:
        return None
    r = _id_range(ids) if bounds is None else bounds
    if r is None:
        return None
    shift = _ks.sparse_shift(n, r[1] - r[0] + 1)
    return None if shift < 0 else (r[0], r[1] - r[0] + 1, shift)


def group_ids(ids: np.ndarray, key_codes: np.ndarray, values: np.ndarray | None,
              nthreads: int, loc: np.ndarray | None = None, n_keys: int = 0
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """``(off, gkeys, gvals, uniques, id_codes)``: the rows of the ``i``-th distinct id
    (``uniques[i]``) at ``[off[i], off[i+1])`` of ``gkeys`` (their key codes) and
    ``gvals`` (their values; empty without ``values``), in input order inside an id
    (:func:`dpfast._kernels.grouping.group_by_id`).  ``id_codes``: the per-row codes when
    they were made (None when the ids were grouped by value).  ``loc``: int32 scratch of at
    least ``len(ids)`` entries for the grouping (a caller lends a later array's memory).
    ``n_keys``: the key codes lie in ``[0, n_keys)`` (0: not known; see ``key_bound`` of
    :func:`~dpfast._kernels.grouping.group_by_id`).
    The grouped arrays are scratch (:mod:`dpfast._core.scratch`) under a caller's lease."""
    n = ids.shape[0]
    use_vals = values is not None
    gkeys = scratch.empty(n, np.int64)
    gvals = np.empty(n if values is not None else 0,
                     values.dtype if values is not None else np.int64)
    if loc is None:
        loc = scratch.empty(n, np.int32)
    bounds = _id_range(ids)  # one min and max for both rules below
    dense = None if bounds is None else by_value(ids, bounds)
    if dense is not None:
        lo, span = dense
        full = scratch.empty(span + 1, np.int64)
        _kg.group_by_id(ids.astype(np.int64, copy=False), span, key_codes,
                        values if use_vals else gvals, use_vals, full, gkeys, gvals, loc,
                        nthreads, lo, n_keys)
        present = np.flatnonzero(full[1:] != full[:-1])
        off = np.empty(present.shape[0] + 1, np.int64)
        off[:-1] = full[present]
        off[-1] = n
        return off, gkeys, gvals, (present + lo).astype(ids.dtype), None
    sparse = None if bounds is None else _sparse(ids, n_keys, bounds)
    if sparse is not None:  # a wide range of integer ids: radix-sorted by value
        lo, span, shift = sparse
        uniq = scratch.empty(n, np.int64)
        full = scratch.empty(n + 1, np.int64)
        u = _ks.group_sparse_ids(ids.astype(np.int64, copy=False), lo, span, shift,
                                 key_codes, values if use_vals else gvals, use_vals, gkeys,
                                 gvals, uniq, full, nthreads,
                                 loc[:n] if n < 1 << 31 else None)  # loc: free here
        return full[:u + 1], gkeys, gvals, uniq[:u].astype(ids.dtype), None
    id_codes, uniques = _keys.factorize_column(ids)
    off = scratch.empty(len(uniques) + 1, np.int64)
    _kg.group_by_id(id_codes, len(uniques), key_codes, values if use_vals else gvals,
                    use_vals, off, gkeys, gvals, loc, nthreads, 0, n_keys)
    return off, gkeys, gvals, uniques, id_codes
