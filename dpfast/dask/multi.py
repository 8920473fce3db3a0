"""Many-metric, variance, privacy-id and distinct-count releases of dask DataFrames.

The pipeline of :mod:`dpfast.dask.tables` (plan and charge on the driver, rows
hash-partitioned by privacy id, every id bounded where its rows are, per-key partials
reduced exactly on the driver, noise and selection there) for the releases of
:mod:`dpfast.tables.multi`: the partials are the exact per-key aggregates of
:func:`dpfast.tables._rows.bound_matrix` (row counts, privacy-id counts, two-word column
totals), so each release equals the one-machine release on the same rows with the same
release generator, bit for bit.  :func:`count_distinct` runs the one release pipeline
(:func:`dpfast.tables.run.release` with :class:`dpfast.dask.backend.DaskBackend`): its
partition step and merge are its plan's
(:class:`dpfast.tables.statistics.distinct.DistinctPlan`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast.dask import _shuffle as shuffle
from dpfast.dask import tables as _dt
from dpfast.dask.backend import DaskBackend, Frame
from dpfast.tables import (
    _inputs,
    _keys,
    _metrics,
    _plan,
    _rank_metrics,
    _rows,
    _select,
    _usecase,
    multi,
)
from dpfast.tables import _quantile_em as _em
from dpfast.tables import bounding as bounding_mod
from dpfast.tables import run as _run_mod
from dpfast.tables import spec as _spec
from dpfast.tables._multi_release import AggregateRelease, release, summand_matrix
from dpfast.tables.groupby import _charge, _check_budget, _common, _take_keys
from dpfast.tables.release import TableRelease

__all__ = ["aggregate", "variance", "std", "privacy_id_count", "count_distinct"]

_COUNT, _IDS = "__dpfast_count", "__dpfast_ids"
_SLOT, _ROWS = "__dpfast_slot", "__dpfast_rows"


def _by(by: Any) -> list[str]:
    names = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) \
        else None
    if not names or not all(isinstance(b, str) for b in names):
        raise TypeError("by must be a column name or a list of column names")
    return names


def _keys_of(pdf: Any, names: list[str]) -> Any:
    return pdf[names[0]] if len(names) == 1 else tuple(pdf[n] for n in names)


def _filtered(pdf: Any, names: list[str], id_col: str | None, domain: Any
              ) -> tuple[_inputs._Data, np.ndarray]:
    """Validate a partition's keys and ids; the rows the domain keeps."""
    n = len(pdf)
    data, _ = _inputs._validate(_keys_of(pdf, names), None if id_col is None else pdf[id_col],
                                np.arange(n, dtype=np.int64), (0, max(n, 1)), domain)
    rows = data.values
    assert rows is not None
    data.values = None
    return data, rows


def _matrix_partials(pdf: Any, names: list[str], id_col: str | None, domain: Any,
                     plan: _metrics.MetricPlan, bounds: dict[str, Any], key_src: Any,
                     policy: int = 0) -> tuple[Any, int, dict[str, Any]]:
    """One partition: bound per id over the value matrix, aggregate per key; per rank
    column the sparse (key, slot) -> rows table of the kept rows."""
    import pandas as pd

    # the NULL policy (as tables.aggregate): rows with a missing key, id or used value leave
    drop = _keys.null_mask(_keys_of(pdf, names), None if id_col is None else pdf[id_col],
                           *(pdf[c] for c in plan.columns))
    if drop is not None:
        pdf = pdf[~drop]
    data, rows = _filtered(pdf, names, id_col, domain)
    vals = {c: multi.clamped(pdf[c], f"column {c!r}", len(pdf), bounds[c])[0][rows]
            for c in plan.columns}
    matrix = summand_matrix(plan, vals, rows.shape[0])
    agg = _rows.bound_matrix(data.codes, data.n_codes, data.ids, plan.k, plan.c,
                             _dt._subkey(key_src), matrix,
                             mark=bool(plan.ranks) and data.ids is not None, policy=policy,
                             unit_weights=_select.unit_weights(plan.select))
    nz = np.flatnonzero(agg.counts)
    uk = _take_keys(data.uniques, nz)
    out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
    out[_COUNT] = agg.counts[nz]
    out[_IDS] = agg.ids[nz]
    if agg.weighted is not None:  # weighted-Gaussian selection: each id in one partition
        out[_dt._WEIGHTED] = agg.weighted[nz]
    for j in range(plan.n_value_parts()):
        out[f"__dpfast_hi{j}"] = agg.hi[nz, j]
        out[f"__dpfast_lo{j}"] = agg.lo[nz, j]
    tables = {}
    if plan.ranks:
        for col, (tc, ts, tn) in _rank_metrics.slot_tables(
                plan.grids, plan.slot_cols, data.codes, matrix, agg.kept).items():
            tk = _take_keys(data.uniques, tc)
            t = {n: (tk[j] if isinstance(tk, tuple) else tk) for j, n in enumerate(names)}
            t[_SLOT] = ts
            t[_ROWS] = tn
            tables[col] = pd.DataFrame(t)
    return pd.DataFrame(out), int(len(pdf)), tables


def _reduce_codes(parts: Any, names: list[str], domain: Any, key_names: Any
                  ) -> tuple[_inputs._Data, np.ndarray]:
    fk, codes, domain_codes = _dt.key_codes(parts, names, domain)
    codes = np.ascontiguousarray(codes, np.int64)
    data = _inputs._Data(codes, fk.size, fk.uniques, None, None, domain_codes, key_names)
    return data, codes


def _compute(frame: Any, fn: Any, names: list[str], id_col: str | None, args: tuple,
             npartitions: int | None) -> tuple[Any, ...]:
    """``(the partials concatenated, the rows)``, and, when ``fn`` returns a third item
    (a dict of frames), those frames concatenated per name."""
    import builtins

    import dask
    import pandas as pd

    parts = frame.to_delayed()
    if id_col is None:
        outs = [dask.delayed(fn)(p, *args) for p in parts]
    else:
        outs = shuffle.by_id(parts, id_col, fn, args, npartitions)
    results = dask.compute(*outs)
    first = (pd.concat([r[0] for r in results], ignore_index=True),
             builtins.sum(r[1] for r in results))
    if len(results[0]) < 3:
        return first
    extra = {name: pd.concat([r[2][name] for r in results], ignore_index=True)
             for name in results[0][2]}
    return (*first, extra)


def _checks(ddf: Any, names: list[str], privacy_id: Any, extra: list[str],
            npartitions: Any) -> None:
    _dt._columns(ddf, names, privacy_id, None)
    for c in extra:
        if c not in ddf.columns:
            raise ValueError(f"value column {c!r} is not in the DataFrame "
                             f"(columns: {list(ddf.columns)})")
    if npartitions is not None and (not isinstance(npartitions, int)
                                    or isinstance(npartitions, bool) or npartitions < 1):
        raise ValueError(f"npartitions must be a positive int, got {npartitions!r}")


def aggregate(ddf: Any, by: Any, privacy_id: str | None = None, *, metrics: Any,
              epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
              bounds: dict[str, tuple[float, float]] | None = None, weights: Any = None,
              max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
              noise: str | None = None, rng: Any = None, budget: Any = None, note: str = "",
              use_case: str | None = None, npartitions: int | None = None,
              selection: str = "auto", bounding: str = "uniform",
              candidates: dict[str, Any] | None = None) -> AggregateRelease:
    """:func:`dpfast.tables.aggregate` of a dask DataFrame (rank metrics included: each
    worker sends the sparse (key, grid slot) -> rows table of the rows it kept, the driver
    sums them).

    Parameters are those of :func:`dpfast.tables.aggregate` (``df`` a dask DataFrame),
    ``rng`` and ``npartitions`` as in :func:`dpfast.dask.count`.

    Returns
    -------
    AggregateRelease
        Equal, bit for bit, to :func:`dpfast.tables.aggregate` on the same rows with the
        same release generator.

    Privacy
    -------
    That of :func:`dpfast.tables.aggregate` (the same mechanism: add/remove one person,
    the budget split over the metrics' parts, the rank metrics' exponential mechanisms on
    the same kept rows, one composed event charged once on the driver before the graph is
    computed).  Bounding (either ``bounding`` policy) depends
    only on each person's rows, all of which one worker holds.
    """
    names = _by(by)
    mets = _metrics.parse_metrics(metrics)
    w = _metrics.parse_weights(weights, mets)
    k, c = _common(max_partitions, max_per_partition, privacy_id)
    pol = bounding_mod.policy_code(bounding)
    priv = _plan.privacy(epsilon, delta, rho, noise, select=domain is None)
    _check_budget(budget, note)
    bounds = {} if bounds is None else bounds
    if not isinstance(bounds, dict):
        raise TypeError(f"bounds must be a dict {{column: (lo, hi)}}, got "
                        f"{type(bounds).__name__}")
    used = sorted({m.column for m in mets if m.column is not None})
    _checks(ddf, names, privacy_id, used, npartitions)
    columns: dict[str, _metrics.Column] = {}
    for col in used:
        if col not in bounds:
            raise ValueError(f"metrics use column {col!r}: give bounds={{{col!r}: (lo, hi)}}")
        dt = ddf[col].dtype
        kind = dt.kind if isinstance(dt, np.dtype) else "O"
        if kind not in "iuf":
            raise TypeError(f"column {col!r} must hold numbers, got dtype {dt}")
        lo, hi = _inputs._bounds(bounds[col], kind in "iu")
        columns[col] = _metrics.Column(lo, hi, kind in "iu")
    gen, rid, key_src = _dt._generator(rng)
    plan = _metrics.plan_metrics(mets, w, columns, k, c, priv, selection, candidates)
    _usecase.check(use_case, priv.epsilon, priv.delta, priv.rho)
    cols = names + ([privacy_id] if privacy_id else []) + used
    with _charge(budget, plan.event, note):  # charged before anything is computed
        parts, nrows, tabs = _compute(shuffle.columns_of(ddf, cols), _matrix_partials,
                                      names, privacy_id,
                                      (names, privacy_id, domain, plan, bounds, key_src,
                                       pol), npartitions)
        _inputs.check_rows(nrows)  # the two-word totals are sized for this many rows
        data, tables = _reduce_tables(parts, tabs, names, domain, plan)
        codes = data.codes[:len(parts)]
        m = plan.n_value_parts()
        counts = np.zeros(data.n_codes, np.int64)
        ids = np.zeros(data.n_codes, np.int64)
        np.add.at(counts, codes, parts[_COUNT].to_numpy(np.int64))
        np.add.at(ids, codes, parts[_IDS].to_numpy(np.int64))
        hi = np.zeros((data.n_codes, m), np.int64)
        lo = np.zeros((data.n_codes, m), np.int64)
        for j in range(m):
            fs = _rows.RowsBounded(counts, ids, hi, lo).column(j, 0)
            fs.add_partials(codes, parts[f"__dpfast_hi{j}"].to_numpy(np.int64),
                            parts[f"__dpfast_lo{j}"].to_numpy(np.int64))
            hi[:, j], lo[:, j] = fs.hi, fs.lo
        weighted = (_dt.checked_total(codes, parts[_dt._WEIGHTED], data.n_codes)
                    if _dt._WEIGHTED in parts else None)
        return release(plan, gen, rid, data,
                       _rows.RowsBounded(counts, ids, hi, lo, weighted=weighted), tables)


def _reduce_tables(parts: Any, tabs: dict[str, Any], names: list[str], domain: Any,
                   plan: _metrics.MetricPlan) -> tuple[_inputs._Data, dict[str, Any]]:
    """Key codes of the partials and of the rank columns' partial tables (one coding:
    every key of a table is a key of the partials), and the merged tables."""
    import pandas as pd

    order = sorted(tabs)
    frame = parts if not order else pd.concat(
        [parts[names]] + [tabs[col][names] for col in order], ignore_index=True)
    data, codes = _reduce_codes(frame, names, domain, tuple(names))
    tables = {}
    at = len(parts)
    for col in order:
        t = tabs[col]
        tc = np.ascontiguousarray(codes[at:at + len(t)])
        at += len(t)
        tables[col] = _em.slot_table(tc, t[_SLOT].to_numpy(np.int64),
                                     _rank_metrics.n_slots(plan.grids[col]),
                                     t[_ROWS].to_numpy(np.int64))
    return data, tables


def _single(kind: str, ddf: Any, key: Any, value: str | None, privacy_id: Any,
            bounds: Any, **kw: Any) -> TableRelease:
    spec = kind if value is None else (kind, value)
    rel = aggregate(ddf, key, privacy_id, metrics={kind: spec},
                    bounds=None if value is None else {value: bounds}, **kw)
    return rel.metrics[kind]


def variance(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
             bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
             rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
             domain: Any = None, noise: str | None = None, rng: Any = None,
             budget: Any = None, note: str = "", use_case: str | None = None,
             npartitions: int | None = None, bounding: str = "uniform",
             selection: str = "auto") -> TableRelease:
    """:func:`dpfast.tables.variance` of the ``value`` column per key (bit-identical).

    Privacy
    -------
    That of :func:`dpfast.tables.variance` (count, centred sum, centred sum of squares at
    a third of the budget each; add/remove one person).
    """
    return _single("variance", ddf, key, value, privacy_id, bounds, epsilon=epsilon,
                   delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                   budget=budget, note=note, use_case=use_case, npartitions=npartitions,
                   bounding=bounding, selection=selection)


def std(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
        bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
        rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
        domain: Any = None, noise: str | None = None, rng: Any = None, budget: Any = None,
        note: str = "", use_case: str | None = None, npartitions: int | None = None,
        bounding: str = "uniform", selection: str = "auto") -> TableRelease:
    """:func:`dpfast.tables.std` of the ``value`` column per key (bit-identical).

    Privacy
    -------
    That of :func:`dpfast.tables.std` (the square root of the variance release).
    """
    return _single("std", ddf, key, value, privacy_id, bounds, epsilon=epsilon,
                   delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                   budget=budget, note=note, use_case=use_case, npartitions=npartitions,
                   bounding=bounding, selection=selection)


def privacy_id_count(ddf: Any, key: Any, privacy_id: str | None = None, *,
                     epsilon: float | None = None, delta: float = 0.0,
                     rho: float | None = None, max_partitions: int = 1, domain: Any = None,
                     noise: str | None = None, rng: Any = None, budget: Any = None,
                     note: str = "", use_case: str | None = None,
                     npartitions: int | None = None, bounding: str = "uniform",
                     selection: str = "auto") -> TableRelease:
    """:func:`dpfast.tables.privacy_id_count` of a dask DataFrame (bit-identical, also
    with ``bounding="l2"``: every id's rows meet in one partition, so its number of keys,
    hence its weight, is known there and the integer partial totals add up).

    Privacy
    -------
    That of :func:`dpfast.tables.privacy_id_count`: ``Δ1 = k`` under add/remove one person
    (``bounding="l2"``: ``Δ2 = sqrt(k)``, Gaussian noise).
    """
    if bounding == "l2":
        return _privacy_id_count_l2(ddf, key, privacy_id, epsilon=epsilon, delta=delta,
                                    rho=rho, max_partitions=max_partitions, domain=domain,
                                    noise=noise, rng=rng, budget=budget, note=note,
                                    use_case=use_case, npartitions=npartitions,
                                    selection=selection)
    return _single("privacy_id_count", ddf, key, None, privacy_id, None, epsilon=epsilon,
                   delta=delta, rho=rho, max_partitions=max_partitions, max_per_partition=1,
                   domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                   use_case=use_case, npartitions=npartitions, bounding=bounding,
                   selection=selection)


def count_distinct(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
                   epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                   max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
                   noise: str | None = None, rng: Any = None, budget: Any = None,
                   note: str = "", use_case: str | None = None,
                   npartitions: int | None = None, selection: str = "auto",
                   bounding: str = "uniform") -> TableRelease:
    """:func:`dpfast.tables.count_distinct` of the ``value`` column per key (bit-identical:
    the workers send the distinct (key, value) pairs each person keeps; the driver takes
    their union and counts it).

    Privacy
    -------
    That of :func:`dpfast.tables.count_distinct`: ``Δ1 = k c`` under add/remove one person.
    The partials are computed (the rows validated) before the charge, as on one machine.
    """
    if not isinstance(value, str):
        raise TypeError(f"value must be a column name (str), got {value!r}")
    frame = Frame.make(ddf, key, privacy_id, [value], domain)
    back = DaskBackend(npartitions)
    spec = _spec.ReleaseSpec.make(
        [_spec.StatSpec("count_distinct", value)], by=frame.columns.by,
        privacy_unit=privacy_id, epsilon=epsilon, delta=delta, rho=rho, noise=noise,
        max_partitions=max_partitions, max_per_partition=max_per_partition, domain=domain,
        selection=selection, bounding=bounding)
    return _run_mod.release(spec, frame, backend=back, budget=budget, note=note, rng=rng,
                            use_case=use_case)


def _l2_partials(pdf: Any, names: list[str], id_col: str, domain: Any, p: Any,
                 key_src: Any) -> tuple[Any, int]:
    """One partition of ``privacy_id_count(bounding="l2")``: weighted totals, people and
    the selection's measure per key (every id's rows are in this partition)."""
    import pandas as pd

    from dpfast.tables import _ids_l2

    data, _ = _filtered(pdf, names, id_col, domain)
    totals, people, measure = _ids_l2.partials(p, data, _dt._subkey(key_src))
    nz = np.flatnonzero(people)
    uk = _take_keys(data.uniques, nz)
    out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
    out["__dpfast_wtotal"] = totals[nz]
    out[_IDS] = people[nz]
    if measure is not None:
        out[_dt._WEIGHTED] = measure[nz]
    return pd.DataFrame(out), int(len(pdf))


def _privacy_id_count_l2(ddf: Any, key: Any, privacy_id: Any, *, epsilon: Any, delta: Any,
                         rho: Any, max_partitions: Any, domain: Any, noise: Any, rng: Any,
                         budget: Any, note: Any, use_case: Any, npartitions: Any,
                         selection: Any) -> TableRelease:
    from dpfast.tables import _ids_l2

    names = _by(key)
    p = _ids_l2.plan(epsilon, delta, rho, max_partitions, domain, noise, selection,
                     privacy_id is not None)
    _check_budget(budget, note)
    _checks(ddf, names, privacy_id, [], npartitions)
    _usecase.check(use_case, p.priv.epsilon, p.priv.delta, p.priv.rho)
    gen, rid, key_src = _dt._generator(rng)
    with _charge(budget, p.event, note):  # charged before anything is computed
        parts, _ = _compute(ddf[names + [privacy_id]], _l2_partials, names, privacy_id,
                            (names, privacy_id, domain, p, key_src), npartitions)
        data, codes = _reduce_codes(parts, names, domain, tuple(names))
        totals = _dt.checked_total(codes, parts["__dpfast_wtotal"], data.n_codes)
        people = _dt.checked_total(codes, parts[_IDS], data.n_codes)
        measure = (_dt.checked_total(codes, parts[_dt._WEIGHTED], data.n_codes)
                   if p.select is not None else None)
        return _ids_l2.release(p, gen, rid, data, totals, people, measure)
