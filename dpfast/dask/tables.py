"""Group-by count, sum and mean releases of dask DataFrames (see :mod:`dpfast.dask`).

Pipeline: validate and plan on the driver -> charge the budget (before anything is
computed) -> hash-partition the rows by privacy id (each input partition split by a hash
of the id's canonical value mod P into P pieces, output partition j the
concatenation of the pieces j: every id's rows in one partition; when every column used
has a numpy number dtype -- decided once per graph from the metadata -- the pieces are
compact numpy columns, int64 ones that fit int32 narrowed, not DataFrames:
:func:`dpfast.dask._shuffle.split_arrays`) -> per partition,
validate, bound per id and aggregate per key
(:func:`dpfast.tables._inputs._validate`, :func:`dpfast.tables.bounding.bound_codes`:
the rows an id keeps depend only on the key, the id and its own rows) -> reduce the
per-key partials on the driver (checked integer additions: ``OverflowError``, never a
wrap) -> per-key addressed noise, selection and report
(:func:`dpfast.tables.groupby.release`).  Every aggregate is an exact integer (float
values are summed as fixed-point units, :mod:`dpfast.tables._fixed`), so the release
equals :func:`dpfast.tables.count` / ``sum`` / ``mean`` on the same rows with the same
release generator bit for bit, integer and float values alike.

Keys: a raw key (32 bytes, or a :class:`~dpfast.dask.WorkerKey`) gets a fresh release id
on the driver for every release (:func:`dpfast.tables.keynoise.fresh_release_id`); the
tasks carry that id, never a reusable key, and derive the release's bounding sub-key
from (key, id) -- so two releases with one key never share noise or bounding streams,
while a retried task recomputes its own partition exactly.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast._kernels import fixed as _kf
from dpfast.dask import _shuffle as shuffle
from dpfast.dask.keys import WorkerKey
from dpfast.tables import _fixed, _inputs, _keys, _plan, _select, _usecase, bounding, keynoise
from dpfast.tables import _scratch as scratch
from dpfast.tables import groupby as aggregate  # the count / sum / mean pipeline

__all__ = ["count", "sum", "mean"]

_COUNT = "__dpfast_count"
_UNITS = "__dpfast_units"  # distinct privacy ids kept per key (key selection)
_WEIGHTED = "__dpfast_wunits"  # weighted unit counts (weighted-Gaussian key selection)
_SUM_HI = "__dpfast_sum_hi"  # fixed-point totals of float values: two int64 words
_SUM_LO = "__dpfast_sum_lo"


def _columns(ddf: Any, key: Any, privacy_id: Any, value: Any) -> tuple[list[str], Any, Any]:
    cols = getattr(ddf, "columns", None)
    if cols is None or not hasattr(ddf, "map_partitions"):
        raise TypeError(f"ddf must be a dask DataFrame, got {type(ddf).__name__}")
    names = [key] if isinstance(key, str) else list(key) if isinstance(key, (list, tuple)) \
        else None
    if not names or not all(isinstance(k, str) for k in names):
        raise TypeError("key must be a column name or a list of column names")
    for label, cs in (("key", names), ("privacy_id", [privacy_id] if privacy_id else []),
                      ("value", [value] if value else [])):
        for c in cs:
            if not isinstance(c, str):
                raise TypeError(f"{label} must be a column name (str), got {c!r}")
            if c not in cols:
                raise ValueError(f"{label} column {c!r} is not in the DataFrame "
                                 f"(columns: {list(cols)})")
    return names, privacy_id, value


def _generator(rng: Any) -> tuple[_random.Generator, int | None, Any]:
    """The driver's release generator, its release id (None: numbered by a generator's
    allocator) and what the workers get to derive the bounding sub-key: the sub-key words
    themselves, or ``(WorkerKey, release id)`` (each worker loads the key)."""
    if isinstance(rng, WorkerKey):
        wid = keynoise.fresh_release_id()
        return keynoise.keyed_generator(rng.load(), wid), wid, (rng, wid)
    gen, rid = keynoise.release_generator(rng)
    return gen, rid, bounding.subkey(gen)


def _subkey(src: Any) -> np.ndarray:
    if isinstance(src, tuple):
        wk, rid = src
        return bounding.subkey(keynoise.keyed_generator(wk.load(), rid))
    return src


def _partials(pdf: Any, names: list[str], id_col: str | None, val_col: str | None,
              bounds: Any, domain: Any, k: int, c: int, stat: str, fixed: Any, key_src: Any,
              policy: int = 0, unit_weights: Any = None) -> tuple[Any, int]:
    """One partition (a pandas DataFrame, or a dict of equal-length numpy columns):
    validate, bound per id, aggregate per key (rows with no key kept are dropped).  Returns
    a pandas DataFrame (the key columns, count and, for values, the exact sum: int64, or
    two int64 words for float values) and the partition's row count."""
    with scratch.lease():  # temporaries on this thread's kept pages; what returns is copied
        return _partials_leased(pdf, names, id_col, val_col, bounds, domain, k, c, stat,
                                fixed, key_src, policy, unit_weights)


def _partials_leased(pdf: Any, names: list[str], id_col: str | None, val_col: str | None,
                     bounds: Any, domain: Any, k: int, c: int, stat: str, fixed: Any,
                     key_src: Any, policy: int, unit_weights: Any) -> tuple[Any, int]:
    import pandas as pd

    keys = pdf[names[0]] if len(names) == 1 else tuple(pdf[n] for n in names)
    ids = None if id_col is None else pdf[id_col]
    vals = None if val_col is None else pdf[val_col]
    data, bnd = _inputs._validate(keys, ids, vals, bounds, domain)
    v = aggregate.summands_of(stat, bnd, fixed, data.values)
    fexp = None if v is None else (0 if fixed is None else fixed.exp)  # two-word totals
    agg = bounding.bound_codes(data.codes, data.n_codes, data.ids, k, c, _subkey(key_src), v,
                               fexp, policy, unit_weights)
    nz = np.flatnonzero(agg.counts)
    uk = aggregate._take_keys(data.uniques, nz)
    out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
    out[_COUNT] = agg.counts[nz]  # fancy indexing: copies, off the lease's scratch
    assert agg.units is not None
    out[_UNITS] = agg.units[nz]  # an id's rows are all in this partition: units add up
    if agg.weighted is not None:  # so do the weighted ones (each id's t is its own)
        out[_WEIGHTED] = agg.weighted[nz]
    if isinstance(agg.sums, _fixed.FixedSums):
        out[_SUM_HI] = agg.sums.hi[nz]
        out[_SUM_LO] = agg.sums.lo[nz]
    return pd.DataFrame(out), int(len(keys if len(names) == 1 else keys[0]))


def key_codes(parts: Any, names: list[str], domain: Any) -> tuple[Any, np.ndarray, Any]:
    """The merged partials' key columns ``names`` factorized as on one machine:
    ``(factorized keys, a code per partial row, the domain's codes or None)`` -- with a
    public ``domain`` its keys come first, so the codes are those of the domain's keys."""
    cols = [_keys.column(parts[n], f"key {n!r}") for n in names]
    if domain is None:
        fk = _keys.factorize(cols)
        return fk, fk.codes, None
    dcols = _keys.columns(domain, "domain")
    nd = len(dcols[0])
    fk = _keys.factorize(_keys.joint(dcols, cols))
    return fk, fk.codes[nd:], fk.codes[:nd]


def checked_total(codes: np.ndarray, col: Any, n: int) -> np.ndarray:
    """Per key code, the sum of the partials' int64 column ``col`` -- the weighted unit
    counts of the weighted-Gaussian key selection -- saturated at ``2**62`` as on one
    machine (:func:`dpfast.tables.bounding.accumulate_weighted`: the partials are >= 0 and
    saturated themselves, so the saturated total does not depend on the partitioning)."""
    out = np.zeros(n, np.int64)
    codes = np.ascontiguousarray(codes, np.int64)
    vals = np.ascontiguousarray(np.asarray(col), np.int64)
    if _kf.add_checked(codes, vals, out):  # past int64: exact in two words, then saturated
        exact = _fixed.FixedSums.zeros(n, 0)
        exact.add_rows(codes, vals)
        out = bounding.saturated_weights(exact)
    return out


def _reduce(parts: Any, names: list[str], domain: Any, has_sum: bool, key_names: Any,
            fixed: Any = None) -> tuple[_inputs._Data, bounding.Bounded]:
    """Sum the per-partition partials per key (canonical codes, as on one machine), in
    checked integer arithmetic (OverflowError, never a wrap)."""
    fk, codes, domain_codes = key_codes(parts, names, domain)
    counts = np.zeros(fk.size, np.int64)
    np.add.at(counts, codes, parts[_COUNT].to_numpy(np.int64))
    units = np.zeros(fk.size, np.int64)
    np.add.at(units, codes, parts[_UNITS].to_numpy(np.int64))
    codes = np.ascontiguousarray(codes, np.int64)
    sums: Any = None
    if has_sum:  # exact two-word totals (integer values: units of 2**0)
        sums = _fixed.FixedSums.zeros(fk.size, 0 if fixed is None else fixed.exp)
        sums.add_partials(codes, parts[_SUM_HI].to_numpy(np.int64),
                          parts[_SUM_LO].to_numpy(np.int64))
    weighted = (checked_total(codes, parts[_WEIGHTED], fk.size) if _WEIGHTED in parts
                else None)
    data = _inputs._Data(codes, fk.size, fk.uniques, None, None, domain_codes, key_names)
    return data, bounding.Bounded(counts, sums, units, weighted)


def _run(stat: str, ddf: Any, key: Any, privacy_id: Any, value: Any, bounds: Any, *,
         epsilon: Any, delta: Any, rho: Any, max_partitions: Any, max_per_partition: Any,
         domain: Any, noise: Any, rng: Any, budget: Any, note: Any, use_case: Any,
         npartitions: Any, selection: Any = "auto", bounding_policy: Any = "uniform") -> Any:
    names, id_col, val_col = _columns(ddf, key, privacy_id, value)
    k, c = aggregate._common(max_partitions, max_per_partition, id_col)
    priv = _plan.privacy(epsilon, delta, rho, noise, select=domain is None)
    aggregate._check_budget(budget, note)
    if npartitions is not None and (not isinstance(npartitions, int)
                                    or isinstance(npartitions, bool) or npartitions < 1):
        raise ValueError(f"npartitions must be a positive int, got {npartitions!r}")
    integer = True
    bnd = None
    if val_col is not None:
        dt = ddf[val_col].dtype
        kind = dt.kind if isinstance(dt, np.dtype) else "O"
        if kind not in "iuf":
            raise TypeError(f"value column {val_col!r} must hold numbers, got dtype "
                            f"{ddf[val_col].dtype}")
        integer = kind in "iu"
        bnd = _inputs._bounds(bounds, integer)
    if domain is not None:
        dcols = _keys.columns(domain, "domain")
        if len(dcols) != len(names):
            raise ValueError(f"domain has {len(dcols)} key columns, key names {len(names)}")
    gen, rid, key_src = _generator(rng)
    plan = aggregate._make_plan(stat, k, c, priv, bnd, integer, selection, bounding_policy)
    _usecase.check(use_case, priv.epsilon, priv.delta, priv.rho)
    cols = names + ([id_col] if id_col else []) + ([val_col] if val_col else [])
    with aggregate._charge(budget, plan.event, note):  # charged before anything is computed
        parts, nrows = _compute(shuffle.columns_of(ddf, cols), names, id_col, val_col, bnd, domain,
                                k, c, stat,
                                plan.fixed, key_src, npartitions, plan.bounding,
                                _select.unit_weights(plan.select))
        _inputs.check_rows(nrows)  # the two-word totals are sized for this many rows
        data, agg = _reduce(parts, names, domain, stat != "count", tuple(names), plan.fixed)
        return aggregate.release(plan, data, agg, gen, rid)


def _compute(frame: Any, names: list[str], id_col: str | None, val_col: str | None,
             bnd: Any, domain: Any, k: int, c: int, stat: str, fixed: Any, key_src: Any,
             npartitions: int | None, policy: int = 0, unit_weights: Any = None
             ) -> tuple[Any, int]:
    """Build and compute the graph: [hash-partition by id ->] per partition bound and
    aggregate -> the per-key partials of every partition, concatenated (pandas), and the
    number of rows."""
    import dask
    import pandas as pd

    args = (names, id_col, val_col, bnd, domain, k, c, stat, fixed, key_src, policy,
            unit_weights)
    parts = frame.to_delayed()
    if id_col is None:  # one row, one person: no need to move rows
        outs = [dask.delayed(_partials)(p, *args) for p in parts]
    else:  # every id's rows in one output partition (all-to-all)
        cols = list(frame.columns)  # compact numpy pieces when every column is numeric
        outs = shuffle.by_id(parts, id_col, _partials, args, npartitions,
                             cols if shuffle.numeric(frame, cols) else None)
    results = dask.compute(*outs)
    return (pd.concat([r[0] for r in results], ignore_index=True),
            builtins.sum(r[1] for r in results))


_PARAMS_DOC = """
    ddf : dask.dataframe.DataFrame
        The rows.
    key : str or list of str
        The key column(s).
    privacy_id : str, optional
        The column of the privacy unit (None: every row is a different person).
    epsilon, delta, rho, max_partitions, max_per_partition, domain, noise, budget, note,
    use_case
        As in :func:`dpfast.tables.count`.  ``budget`` is charged once, on the driver,
        before the graph is computed (a refusal computes nothing).
    rng : None, Generator, 32-byte key or :class:`dpfast.dask.WorkerKey`
        As in :func:`dpfast.tables.count` (a raw key: a fresh release id per release); a
        :class:`~dpfast.dask.WorkerKey` (:func:`~dpfast.dask.key_from_file`,
        :func:`~dpfast.dask.key_from_env`) is loaded by the driver and by each worker, so
        no key material is in the task graph, and gets a fresh release id per release too
        (the graph carries it: a retried task recomputes its own partition).
    npartitions : int, optional
        Partitions after the shuffle by privacy id (default: as many as ``ddf`` up to 8, a
        third of them beyond, at least 8; under a distributed client or the synchronous
        scheduler at most twice the task threads, unless that puts more than three input
        partitions in one).
    selection, bounding
        As in :func:`dpfast.tables.count`: the key-selection rule on the number of distinct
        privacy units per key (each id's rows meet in one partition, so the per-partition
        unit counts add up exactly) and the bounding policy.
"""


def count(ddf: Any, key: Any, privacy_id: str | None = None, *,
          epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
          max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
          noise: str | None = None, rng: Any = None, budget: Any = None, note: str = "",
          use_case: str | None = None, npartitions: int | None = None,
          selection: str = "auto", bounding: str = "uniform") -> Any:
    """Release the number of rows per key of a dask DataFrame, with bounded contributions.

    Parameters
    ----------
    {params}
    Returns
    -------
    dpfast.tables.TableRelease
        Equal, bit for bit, to ``dpfast.tables.count`` on the same rows with the same key.

    Privacy
    -------
    That of :func:`dpfast.tables.count` (the same mechanism: add/remove one person,
    ``Δ1 = k c``, ``Δ2 = sqrt(k) c``; discrete Laplace / Gaussian noise, CKS20; private
    key selection on the distinct privacy units per key, sensitivity ``k``: Desfontaines
    et al. 2022, Gopi et al. 2020, :mod:`dpfast.tables._select`).  Distribution changes who
    computes, never what is computed: bounding depends only on each person's own rows.
    """
    return _run("count", ddf, key, privacy_id, None, None, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, npartitions=npartitions, selection=selection,
                bounding_policy=bounding)


def sum(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,  # noqa: A001
        bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
        rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
        domain: Any = None, noise: str | None = None, rng: Any = None, budget: Any = None,
        note: str = "", use_case: str | None = None, npartitions: int | None = None,
        selection: str = "auto", bounding: str = "uniform") -> Any:
    """Release the sum of the ``value`` column per key (clamped to ``bounds``).

    Parameters as in :func:`count`, plus ``value`` (a column name) and ``bounds``.

    Privacy
    -------
    That of :func:`dpfast.tables.sum`: ``Δ1 = k c max(|lo|, |hi|)`` (add/remove one
    person), float values summed exactly in fixed point (Casacuberta et al., CCS 2022).
    Integer and float values alike: bit-identical to one machine (integer partial sums are
    associative); the driver's total is checked (OverflowError, never a wrap).
    """
    return _run("sum", ddf, key, privacy_id, value, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, npartitions=npartitions, selection=selection,
                bounding_policy=bounding)


def mean(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
         bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
         rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
         domain: Any = None, noise: str | None = None, rng: Any = None, budget: Any = None,
         note: str = "", use_case: str | None = None, npartitions: int | None = None,
         selection: str = "auto", bounding: str = "uniform") -> Any:
    """Release the mean of the ``value`` column per key: noisy centred sum / noisy count.

    Parameters as in :func:`sum`.

    Privacy
    -------
    That of :func:`dpfast.tables.mean`: the budget split in half between the count
    (``Δ1 = k c``) and the centred sum (``Δ1 = k c (hi - lo)``); add/remove one person.
    """
    return _run("mean", ddf, key, privacy_id, value, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, npartitions=npartitions, selection=selection,
                bounding_policy=bounding)


count.__doc__ = (count.__doc__ or "").replace("{params}", _PARAMS_DOC.strip())
