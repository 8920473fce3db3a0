"""Many-metric, variance, privacy-id and distinct-count releases of dask DataFrames.

``aggregate``, ``variance``, ``std`` and ``privacy_id_count`` build the release spec and a
:class:`~dpfast.dask.backend.Frame` and run :func:`dpfast.tables.run.release` with the
:class:`~dpfast.dask.backend.DaskBackend`: rows hash-partitioned by privacy id, the plan's
own per-partition step (:class:`dpfast.tables.multi.MultiPlan`; ``privacy_id_count(bounding=
"l2")``: its own plan) where every id's rows are, the partials merged exactly on the driver,
*then* the one charge, then noise and selection there -- so each release equals the
one-machine release on the same rows with the same release generator, bit for bit, and a
failure of the inputs charges nothing.  ``count_distinct`` sends the distinct (key, value)
pairs each person keeps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from dpfast.dask import _shuffle as shuffle
from dpfast.dask import tables as _dt
from dpfast.dask.backend import DaskBackend, Frame
from dpfast.tables import (
    _distinct as statistics,
)
from dpfast.tables import _inputs, _keys, _plan, _usecase, multi
from dpfast.tables import bounding as bounding_mod
from dpfast.tables import run as _run
from dpfast.tables import statistics as _statistics
from dpfast.tables.groupby import _charge, _check_budget, _common, _take_keys
from dpfast.tables.release import TableRelease
from dpfast.tables.spec import ReleaseSpec, StatSpec

if TYPE_CHECKING:
    from dpfast.tables import AggregateRelease

__all__ = ["aggregate", "variance", "std", "privacy_id_count", "count_distinct"]


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


def _reduce_codes(parts: Any, names: list[str], domain: Any, key_names: Any
                  ) -> tuple[_inputs._Data, np.ndarray]:
    fk, codes, domain_codes = _dt.key_codes(parts, names, domain)
    codes = np.ascontiguousarray(codes, np.int64)
    data = _inputs._Data(codes, fk.size, fk.uniques, None, None, domain_codes, key_names)
    return data, codes


def _compute(frame: Any, fn: Any, names: list[str], id_col: str | None, args: tuple,
             npartitions: int | None) -> tuple[Any, ...]:
    """``(the partials concatenated, the rows)`` of ``fn`` over the partitions (shuffled
    by id)."""
    import builtins

    import dask
    import pandas as pd

    parts = frame.to_delayed()
    if id_col is None:
        outs = [dask.delayed(fn)(p, *args) for p in parts]
    else:
        outs = shuffle.by_id(parts, id_col, fn, args, npartitions)
    results = dask.compute(*outs)
    return (pd.concat([r[0] for r in results], ignore_index=True),
            builtins.sum(r[1] for r in results))


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
    the same kept rows, one composed event charged once on the driver, after the partials are
    computed and merged, before any noise).  Bounding (either ``bounding`` policy) depends
    only on each person's rows, all of which one worker holds.
    """
    names = _by(by)
    frame = Frame.make(ddf, names, privacy_id, (), domain)  # a dask frame, its key and id
    back = DaskBackend(npartitions)
    spec = multi.aggregate_spec(
        metrics, _statistics.metric_parts(), bounds=bounds, weights=weights,
        candidates=candidates, available=[str(c) for c in ddf.columns], by=tuple(names),
        privacy_unit=privacy_id, epsilon=epsilon, delta=delta, rho=rho, noise=noise,
        max_partitions=max_partitions, max_per_partition=max_per_partition, domain=domain,
        selection=selection, bounding=bounding)
    used = sorted({s.column for s in spec.statistics if s.column is not None})
    frame = Frame.make(ddf, names, privacy_id, used, domain)
    return _run.release(spec, frame, backend=back, budget=budget, note=note, rng=rng,
                        use_case=use_case)


def _single(kind: str, ddf: Any, key: Any, value: str | None, privacy_id: Any,
            npartitions: Any, *, budget: Any, note: Any, rng: Any, use_case: Any,
            **kw: Any) -> TableRelease:
    """One statistic of the many-metric plan (``value``: its column, or None)."""
    frame = Frame.make(ddf, key, privacy_id, [] if value is None else [value],
                       kw.get("domain"))
    back = DaskBackend(npartitions)
    spec = ReleaseSpec.make([StatSpec(kind, value)], by=frame.columns.by,
                            privacy_unit=privacy_id, **kw)
    return _run.release(spec, frame, backend=back, budget=budget, note=note, rng=rng,
                        use_case=use_case)


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
    return _single("variance", ddf, key, value, privacy_id, npartitions, bounds=bounds,
                   epsilon=epsilon, delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                   budget=budget, note=note, use_case=use_case, bounding=bounding,
                   selection=selection)


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
    return _single("std", ddf, key, value, privacy_id, npartitions, bounds=bounds,
                   epsilon=epsilon, delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                   budget=budget, note=note, use_case=use_case, bounding=bounding,
                   selection=selection)


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
    return _single("privacy_id_count", ddf, key, None, privacy_id, npartitions,
                   epsilon=epsilon, delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=1, domain=domain, noise=noise, rng=rng, budget=budget,
                   note=note, use_case=use_case, bounding=bounding, selection=selection)


def _distinct_partials(pdf: Any, names: list[str], id_col: str | None, value: str,
                       domain: Any, k: int, c: int, key_src: Any, policy: int = 0,
                       sel: Any = None) -> tuple[Any, int]:
    import pandas as pd

    data, rows = _filtered(pdf, names, id_col, domain)
    vals = _keys.column(pdf[value], "values")[rows]
    kc, vv, units = statistics.distinct_pairs(data, vals, k, c, _dt._subkey(key_src), policy,
                                              sel)
    uk = _take_keys(data.uniques, kc)
    out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
    out["__dpfast_value"] = vv
    # the people per key ride on the key's first pair (a key kept by someone has a pair)
    per_row = np.zeros(kc.shape[0], np.int64)
    _, first = np.unique(kc, return_index=True)
    per_row[first] = units[kc[first]]
    out["__dpfast_units"] = per_row
    return pd.DataFrame(out), int(len(pdf))


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
    """
    names = _by(key)
    if not isinstance(value, str):
        raise TypeError(f"value must be a column name (str), got {value!r}")
    k, c = _common(max_partitions, max_per_partition, privacy_id)
    pol = bounding_mod.policy_code(bounding)
    priv = _plan.privacy(epsilon, delta, rho, noise, select=domain is None)
    _check_budget(budget, note)
    _checks(ddf, names, privacy_id, [value], npartitions)
    gen, rid, key_src = _dt._generator(rng)
    part, sel, event = statistics.distinct_plan(priv, k, c, selection)
    _usecase.check(use_case, priv.epsilon, priv.delta, priv.rho)
    cols = names + ([privacy_id] if privacy_id else []) + [value]
    with _charge(budget, event, note):
        parts, _ = _compute(shuffle.columns_of(ddf, cols), _distinct_partials, names, privacy_id,
                            (names, privacy_id, value, domain, k, c, key_src, pol, sel),
                            npartitions)
        data, codes = _reduce_codes(parts, names, domain, tuple(names))
        vcodes, vuniq = _keys.factorize_column(_keys.column(parts["__dpfast_value"],
                                                            "values"))
        nv = max(len(vuniq), 1)
        up = np.unique(codes * np.int64(nv) + vcodes)  # the union over partitions
        counts = np.bincount(up // nv, minlength=data.n_codes).astype(np.int64)
        units = _dt.checked_total(codes, parts["__dpfast_units"], data.n_codes)
        return statistics.distinct_release(part, sel, event, gen, rid, data, counts, k, c,
                                           units)
