"""Bound step: per privacy id, at most ``max_partitions`` keys and ``max_per_partition``
rows per key, chosen with the CSPRNG, keyed per id.

Bounding policies (:data:`POLICIES`, ``bounding=`` of the releases): ``"uniform"`` keeps
``max_partitions`` of the id's keys chosen uniformly; ``"frequent"`` keeps the
``max_partitions`` keys in which the id has the most rows (ties broken in a uniformly
random order from the id's keyed stream).  Either way ``max_per_partition`` rows per kept
key are chosen uniformly, and the choice depends only on the id's own rows.  Besides the
kept rows per key (``counts``) and their sums, the step returns the number of distinct
ids kept per key (``units``): what private key selection measures
(:mod:`dpfast.tables._select`).

What an id keeps is a function of (the generator's key, the id's canonical value, the id's
own rows) only -- never of other ids, the row order, the thread count or how the data are
partitioned -- so the sensitivity of the aggregates is exactly what the bounds say, and a
distributed run can bound each id where its rows are (see :mod:`dpfast._kernels.tables`
for the derivation of the per-id streams).

The bounding randomness uses a sub-key of the generator's key,
``BLAKE2b(key=generator key, data=BOUNDING_TAG, digest_size=32)`` (a keyed PRF with its own
domain tag, so it shares no keystream with the generator's noise streams).  It is not secret
from whoever holds the key, and it need not be: bounding is not what makes the release
private, the noise is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
from typing import SupportsIndex, cast

import numpy as np
import numpy.typing as npt

from dpfast import random as _random
from dpfast._core import scratch
from dpfast._kernels import grouping as _kg
from dpfast._kernels import tables as _kt
from dpfast.random import RngLike
from dpfast.tables import _grouped, _keys
from dpfast.tables._fixed import FixedSums, saturated

__all__ = ["bound_contributions", "Bounded", "BOUNDING_TAG", "POLICIES"]

BOUNDING_TAG = b"dpfast.tables.bounding v1"
POLICIES = ("uniform", "frequent")


@dataclasses.dataclass(frozen=True)
class Bounded:
    """Per-key aggregates of the kept rows: ``counts`` (int64) and, for values, ``sums``
    (int64, or for fixed-point summands the exact :class:`~dpfast.tables._fixed.FixedSums`);
    ``units`` (int64): the number of distinct privacy ids with a kept row per key (the
    number of rows when every row is its own person)."""

    counts: np.ndarray
    sums: np.ndarray | FixedSums | None
    units: np.ndarray | None = None
    weighted: np.ndarray | None = None  # weighted unit counts (unit_weights given)


_WEIGHT_OVERFLOW = "a weighted unit count per key exceeds 2**62 grid units"
WEIGHT_SATURATION = 1 << 62  # weighted unit counts are saturated here (never an error)


def weighted_rows(counts: np.ndarray, unit_weights: np.ndarray | None) -> np.ndarray | None:
    """Every row its own person (one key): the weighted unit counts ``counts W[1]``,
    saturated at ``2**62`` (see :func:`accumulate_weighted`)."""
    if unit_weights is None:
        return None
    w1 = int(unit_weights[1])
    big = counts > (WEIGHT_SATURATION // w1)
    out = np.where(big, 0, counts) * np.int64(w1)
    out[big] = WEIGHT_SATURATION
    return out


def accumulate_weighted(off: np.ndarray, nkeep: np.ndarray, gkeys: np.ndarray,
                        n_keys: int, unit_weights: np.ndarray | None) -> np.ndarray | None:
    """Per key, the sum over the ids that kept it of ``unit_weights[t]``, ``t`` the id's
    number of kept keys (None without weights), saturated at ``2**62``.

    Saturation never depends on the order of the ids (the weights are >= 0: the exact
    total is computed, in two words, when the int64 pass would pass ``2**62``) and is
    1-Lipschitz per key, so one person still moves the vector of measures by at most the
    selection's L2 sensitivity; a key past ``2**62`` is far above any threshold.  An error
    here would depend on the private rows (issue 36)."""
    if unit_weights is None:
        return None
    w = np.ascontiguousarray(unit_weights, np.int64)
    out = np.zeros(n_keys, np.int64)
    if _kg.accumulate_weighted_units(off, nkeep, gkeys, w, out):
        lens = nkeep.astype(np.int64)
        starts = np.repeat(off[:-1].astype(np.int64) - (np.cumsum(lens) - lens), lens)
        pos = starts + np.arange(int(lens.sum()), dtype=np.int64)
        exact = FixedSums.zeros(n_keys, 0)
        exact.add_rows(np.ascontiguousarray(gkeys[pos], np.int64),
                       np.ascontiguousarray(np.repeat(w[lens], lens), np.int64))
        out = saturated_weights(exact)
    return out


def saturated_weights(totals: FixedSums) -> np.ndarray:
    """Exact non-negative two-word totals as int64, saturated at ``2**62``."""
    return np.minimum(saturated(totals), WEIGHT_SATURATION)


def policy_code(bounding: object) -> int:
    """0 for ``"uniform"``, 1 for ``"frequent"`` (ValueError naming ``bounding``)."""
    if not isinstance(bounding, str) or bounding not in POLICIES:
        raise ValueError(f"bounding must be one of {POLICIES}, got {bounding!r}")
    return POLICIES.index(bounding)


def positive_int(value: object, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        v = operator.index(cast(SupportsIndex, value))  # TypeError: not an integer
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if v < 1:
        raise ValueError(f"{name} must be >= 1, got {v}")
    return int(v)


def subkey(gen: _random.Generator) -> np.ndarray:
    """The bounding sub-key of ``gen``'s key (eight uint32 words)."""
    raw = hashlib.blake2b(BOUNDING_TAG, key=gen._key, digest_size=32).digest()
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32)


def bound_codes(key_codes: np.ndarray, n_keys: int, ids: np.ndarray | None, k: int, c: int,
                skey: np.ndarray, values: np.ndarray | None = None,
                fixed_exp: int | None = None, policy: int = 0,
                unit_weights: np.ndarray | None = None) -> Bounded:
    """Bound validated rows given as key codes (and an id column, and clamped values).

    ``ids=None``: every row is its own person (one row, one key each); nothing is dropped.
    ``policy``: :func:`policy_code` of the bounding policy.
    ``fixed_exp``: ``values`` are int64 fixed-point units of ``2**fixed_exp``
    (:func:`dpfast.tables._fixed.to_units`), summed per key exactly in two words
    (:class:`~dpfast.tables._fixed.FixedSums`; OverflowError, never a wrap).
    ``unit_weights``: also sum, per key, ``unit_weights[t]`` over the ids that kept it
    (``t`` the id's number of kept keys): ``Bounded.weighted``, the measure of the
    weighted-Gaussian key selection (:func:`dpfast.tables._select.unit_weights`).
    """
    n = key_codes.shape[0]
    small = n < _keys.SERIAL_ROWS
    if ids is None:
        counts = np.zeros(n_keys, np.int64)
        if n and small:
            counts += np.bincount(key_codes, minlength=n_keys)
        elif n:
            _kg.bincount_codes(key_codes, n_keys, counts, _keys._threads())
        sums: np.ndarray | FixedSums | None = None
        if values is not None and fixed_exp is not None:
            sums = FixedSums.zeros(n_keys, fixed_exp)
            sums.add_rows(key_codes, values)
        elif values is not None:
            sums = np.zeros(n_keys, values.dtype)
            np.add.at(sums, key_codes, values)
        return Bounded(counts, sums, counts, weighted_rows(counts, unit_weights))
    use_vals = values is not None
    graw = scratch.empty(n, np.int64)  # scratch: raw rows per (id, key)
    if small:  # sorted by (id, key[, value]) in numpy; serial kernels (little to compile)
        id_codes, id_uniques = _keys.factorize_column(ids)
        off, gkeys, gvals = _sorted_by_id(id_codes, len(id_uniques), key_codes, n_keys,
                                          values)
        gcnt = np.empty(n, np.int64)
    else:  # encoded and grouped in parallel; the parallel kernels sort each id's rows
        # (graw's memory holds the grouping's int32 scratch until bounding writes it)
        off, gkeys, gvals, id_uniques, made = _grouped.group_ids(
            ids, key_codes, values, _keys._threads(), graw.view(np.int32), n_keys)
        # id codes made here are no longer needed: reuse their memory (fresh pages cost
        # the kernel a zeroing pass, a third of the bounding time at 10^7 rows)
        reuse = made is not None and made.dtype == np.int64 and \
            made.flags.c_contiguous and made.flags.writeable and made.base is None
        gcnt = made if reuse and made is not None else scratch.empty(n, np.int64)
    n_ids = len(id_uniques)
    hashes = _keys.id_hashes(id_uniques)
    nkeep = scratch.empty(n_ids, np.int64)
    counts = scratch.zeros(n_keys, np.int64)  # a lease's holder copies what it keeps
    units = scratch.zeros(n_keys, np.int64)
    # uniform: None, so numba prunes the frequent branch (its sort) at compile time and a
    # first uniform release does not compile it; frequent: the policy code
    pol = None if policy == 0 else np.int64(policy)
    if not use_vals:
        if small:
            _kt.bound_counts_sorted(off, gkeys, hashes, skey, k, c, gcnt, nkeep, pol, graw)
        else:
            _kt.bound_counts(off, gkeys, hashes, skey, k, c, gcnt, nkeep, pol, graw,
                             _keys._threads())
        _kg.accumulate(off, nkeep, gkeys, gcnt, counts)
        _kg.accumulate_units(off, nkeep, gkeys, units)
        return Bounded(counts, None, units,
                       accumulate_weighted(off, nkeep, gkeys, n_keys, unit_weights))
    gsum = np.empty(n, gvals.dtype)
    if small:
        _kt.bound_values_sorted(off, gkeys, gvals, hashes, skey, k, c, gsum, gcnt, nkeep, pol,
                                graw)
    else:
        _kt.bound_values(off, gkeys, gvals, hashes, skey, k, c, gsum, gcnt, nkeep, pol, graw,
                         _keys._threads())
    _kg.accumulate(off, nkeep, gkeys, gcnt, counts)
    _kg.accumulate_units(off, nkeep, gkeys, units)
    weighted = accumulate_weighted(off, nkeep, gkeys, n_keys, unit_weights)
    if fixed_exp is not None:  # c units of one (id, key) fit int64 (by the grid's choice)
        fixed = FixedSums.zeros(n_keys, fixed_exp)
        fixed.add_kept(off, nkeep, gkeys, gsum)
        return Bounded(counts, fixed, units, weighted)
    sums = np.zeros(n_keys, gvals.dtype)
    _kg.accumulate(off, nkeep, gkeys, gsum, sums)
    return Bounded(counts, sums, units, weighted)


def _sorted_by_id(id_codes: np.ndarray, n_ids: int, key_codes: np.ndarray, n_keys: int,
                  values: np.ndarray | None
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(off, keys, values)``: the rows stably sorted by (id, key[, value]), id ``i``'s
    rows at ``[off[i], off[i+1])`` -- the order :func:`dpfast._kernels.grouping.group_by_id`
    followed by the kernels' per-id sort gives (on one block of rows, rows in input order
    inside an id; a stable sort either way).  Least significant first: a stable numpy
    sort by value, then counting sorts by key and by id (serial, linear)."""
    n = id_codes.shape[0]
    off = np.zeros(n_ids + 1, np.int64)
    np.cumsum(np.bincount(id_codes, minlength=n_ids), out=off[1:])
    order = (np.arange(n, dtype=np.int64) if values is None
             else np.argsort(values, kind="stable").astype(np.int64, copy=False))
    by_key = np.empty(n, np.int64)
    if n_keys <= 4 * n + 1024:
        _kg.counting_order(key_codes, n_keys, order, by_key)
    else:  # a wide key domain: a comparison sort beats counting over it
        by_key = order[np.argsort(key_codes[order], kind="stable")]
    _kg.counting_order(id_codes, n_ids, by_key, order)
    if values is None:
        return off, key_codes[order], np.empty(0, np.int64)
    return off, key_codes[order], values[order]


def bound_contributions(keys: npt.ArrayLike | tuple[npt.ArrayLike, ...],
                        privacy_ids: npt.ArrayLike | None = None, *, max_partitions: int = 1,
                        max_per_partition: int = 1, values: npt.ArrayLike | None = None,
                        rng: RngLike = None, bounding: str = "uniform", units: bool = False
                        ) -> (tuple[np.ndarray | tuple[np.ndarray, ...], np.ndarray,
                                    np.ndarray | None]
                              | tuple[np.ndarray | tuple[np.ndarray, ...], np.ndarray,
                                      np.ndarray | None, np.ndarray | None]):
    """Contribution bounding alone (no noise: the output is NOT private).

    Returns ``(keys, counts, sums)``: the distinct keys in canonical order, the number of
    kept rows per key, and (with ``values``) the sum of the kept values per key; with
    ``units=True`` ``(keys, counts, sums, units)``, ``units`` the number of distinct privacy
    ids kept per key (what private key selection measures).  Useful to
    inspect what a release will aggregate, and as the exact "truth" of a bounded release.

    Parameters
    ----------
    keys, privacy_ids
        As in :func:`dpfast.tables.count`.
    max_partitions, max_per_partition : int
        Per privacy id: at most this many keys, and this many rows per key.
    values : array_like, optional
        Values to sum (not clamped here; float values are added in float64, for
        inspection -- a release sums its clamped float values exactly in fixed point,
        :mod:`dpfast.tables._fixed`).
    rng : None, Generator or bytes
        Keys the random choices (a 32-byte key replays them).
    bounding : {"uniform", "frequent"}
        Which keys an id keeps when it has more than ``max_partitions``: chosen uniformly,
        or those with the most rows (ties broken uniformly at random).
    units : bool
        Also return the distinct ids kept per key.
    """
    k = positive_int(max_partitions, "max_partitions")
    c = positive_int(max_per_partition, "max_per_partition")
    cols, n, ids = _keys.keys_and_ids(keys, privacy_ids)
    vals = None
    if values is not None:
        vals = np.asarray(values)
        if vals.shape != (n,):
            raise ValueError(f"values has shape {vals.shape}, keys have {n} rows")
    fk = _keys.factorize(cols)
    pol = policy_code(bounding)
    if not isinstance(units, (bool, np.bool_)):
        raise TypeError(f"units must be True or False, got {type(units).__name__}")
    gen = _random.as_generator(rng)
    b = bound_codes(fk.codes, fk.size, ids, k, c, subkey(gen), vals, policy=pol)
    assert not isinstance(b.sums, FixedSums)  # float64 sums here (no fixed_exp)
    if units:
        return fk.uniques, b.counts, b.sums, b.units
    return fk.uniques, b.counts, b.sums
