"""Bound step over a value matrix: choose each person's rows once, aggregate every column.

:func:`bound_matrix` keeps, per privacy id, at most ``max_partitions`` keys and
``max_per_partition`` rows per key -- the keyed choice of :mod:`dpfast.tables.bounding`
under either bounding policy (``"uniform"`` or ``"frequent"``; the same per-id streams, so
the same (id, key) pairs, and with one column the same rows, as
:func:`~dpfast.tables.bounding.bound_codes`) -- and sums *all* columns of an ``(n, m)`` int64
matrix over the same kept rows (:func:`dpfast._kernels.rows.bound_rows`).  Per key it
returns the number of kept rows, the number of privacy ids that kept the key and the exact
column totals (two int64 words each, :class:`~dpfast.tables._fixed.FixedSums`), and on
request which rows were kept.  Used by the many-metric release
(:mod:`dpfast.tables.multi`), variances and distinct counts.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from dpfast._kernels import rows as _kr
from dpfast.tables import _grouped, _keys, bounding
from dpfast.tables._fixed import FixedSums

__all__ = ["RowsBounded", "bound_matrix"]

_OVERFLOW = ("a per-key total exceeds 2**94 units (two int64 words); use smaller bounds or "
             "fewer rows per key")


@dataclasses.dataclass(frozen=True)
class RowsBounded:
    """Per-key aggregates of the kept rows: ``counts`` (rows), ``ids`` (privacy ids that
    kept the key), ``hi`` / ``lo`` (``(n_keys, m)`` two-word column totals) and, if asked
    for, ``kept`` (a boolean mask of the kept rows)."""

    counts: np.ndarray
    ids: np.ndarray
    hi: np.ndarray
    lo: np.ndarray
    kept: np.ndarray | None = None
    weighted: np.ndarray | None = None  # weighted unit counts (unit_weights given)

    def column(self, j: int, exp: int) -> FixedSums:
        """Column ``j``'s totals as fixed-point sums in units of ``2**exp``."""
        return FixedSums(np.ascontiguousarray(self.hi[:, j]),
                         np.ascontiguousarray(self.lo[:, j]), exp)


def bound_matrix(key_codes: np.ndarray, n_keys: int, ids: np.ndarray | None, k: int, c: int,
                 skey: np.ndarray, vals: np.ndarray, mark: bool = False,
                 distinct: bool = False, policy: int = 0,
                 unit_weights: np.ndarray | None = None) -> RowsBounded:
    """Bound validated rows (key codes, an id column or None, an ``(n, m)`` int64 matrix).

    ``ids=None``: every row is its own person (one row, one key each); nothing is dropped.
    The caller guarantees that ``c`` summands of any column fit int64 (the fixed-point
    grids of :mod:`dpfast.tables._fixed` do; integer bounds below ``2**53`` do).
    ``distinct``: per id and key, rows with equal value tuples are one row (at most ``c``
    distinct tuples are kept); with ``ids=None`` every row is kept.
    ``policy``: :func:`dpfast.tables.bounding.policy_code` of the bounding policy (the same
    per-id key choice as :func:`~dpfast.tables.bounding.bound_codes`).
    ``unit_weights``: also the weighted unit counts per key (``RowsBounded.weighted``, as
    :func:`~dpfast.tables.bounding.bound_codes`).
    """
    n = key_codes.shape[0]
    m = vals.shape[1]
    counts = np.zeros(n_keys, np.int64)
    hi = np.zeros((n_keys, m), np.int64)
    lo = np.zeros((n_keys, m), np.int64)
    if ids is None:
        if _kr.accumulate_rows(key_codes, vals, counts, hi, lo):
            raise OverflowError(_OVERFLOW)
        kept = np.ones(n, np.bool_) if mark else None
        return RowsBounded(counts, counts.copy(), hi, lo, kept,
                           bounding.weighted_rows(counts, unit_weights))
    off, gkeys, gidx, id_uniques, _ = _grouped.group_ids(
        ids, key_codes, np.arange(n, dtype=np.int64), _keys._threads(), n_keys=n_keys)
    n_ids = len(id_uniques)
    hashes = _keys.id_hashes(id_uniques)
    nkeep = np.empty(n_ids, np.int64)
    gcnt = np.empty(n, np.int64)
    gsum = np.empty((n, m), np.int64)
    # the values in grouped order (the kernel's reads stay inside each id's segment); the
    # kernel permutes slot numbers into them
    gv = np.ascontiguousarray(vals[gidx], np.int64)
    slots = np.arange(n, dtype=np.int64)
    kept = np.zeros(n if mark else 0, np.bool_)
    _kr.bound_rows(off, gkeys, slots, gv, hashes, skey, k, c, gsum, gcnt, nkeep, mark, kept,
                   distinct, None if policy == 0 else np.int64(policy),
                   _keys._threads())
    pairs = np.zeros(n_keys, np.int64)
    if _kr.accumulate_pairs(off, nkeep, gkeys, gcnt, gsum, counts, pairs, hi, lo):
        raise OverflowError(_OVERFLOW)
    rows_kept = None
    if mark:
        rows_kept = np.zeros(n, np.bool_)
        rows_kept[gidx[kept]] = True  # kept slots -> the caller's rows
    return RowsBounded(counts, pairs, hi, lo, rows_kept,
                       bounding.accumulate_weighted(off, nkeep, gkeys, n_keys, unit_weights))
