"""The many-metric plan: several statistics bounded once, selected once, charged once.

:func:`plan_of` turns a release spec of several statistics (``options["family"] ==
"aggregate"``: :func:`dpfast.tables.aggregate`) or of one statistic finished from the
many-metric parts (``variance``, ``std``, ``privacy_id_count``: each statistic class's
``parts``) into a :class:`MultiPlan` -- the noised parts, the budget split, the threshold
and one composed event (:mod:`dpfast.tables._metrics`), from the spec and the columns'
dtypes only.  Its steps are those of :func:`dpfast.tables.run.release`:
:meth:`MultiPlan.local_partials` bounds each person's rows once over a value matrix
(:mod:`dpfast.tables._rows`), before the charge; :meth:`MultiPlan.finish` noises every part
with its own per-key addressed streams, selects and finishes each metric
(:mod:`dpfast.tables._multi_release`).  On Dask the same bounding runs per partition
(:meth:`MultiPlan.partition_partials`) and :meth:`MultiPlan.merge` sums the partitions'
exact partials per key: the release is the same bit for bit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import numpy.typing as npt

from dpfast import random as _random
from dpfast.tables import (
    _inputs,
    _keys,
    _metrics,
    _rank_metrics,
    _rows,
    _select,
    bounding,
)
from dpfast.tables import _quantile_em as _em
from dpfast.tables._merge import checked_total, key_codes
from dpfast.tables._multi_release import AggregateRelease, release, summand_matrix
from dpfast.tables.groupby import _common, _take_keys
from dpfast.tables.release import TableRelease
from dpfast.tables.spec import ReleaseSpec, StatSpec

if TYPE_CHECKING:
    import pandas as pd
    from typing_extensions import Unpack

    from dpfast.accounting.events import DpEvent
    from dpfast.tables._keys import KeyColumns, Uniques
    from dpfast.tables.run import Columns, Rows, Source

__all__ = ["MultiPlan", "plan_of", "aggregate_spec", "stat_specs", "frame_columns",
           "frame_column", "clamped", "mets_spec"]

#: the share of ε that ``max_partitions="auto"`` spends on the tuning
#: (:mod:`dpfast.tables._tune_plan`)
TUNE_SHARE = Fraction(1, 20)

#: the one value column of a single statistic (``variance(values, ...)``)
VALUES = "values"

# the columns of a partition's partials (besides the key columns)
_COUNT, _IDS, _WEIGHTED = "__dpfast_count", "__dpfast_ids", "__dpfast_wunits"
_SLOT, _ROWS = "__dpfast_slot", "__dpfast_rows"


#: per rank column, the sparse ``(key code, slot) -> rows`` table ``(codes, slots, rows)``
SlotTables = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]
#: a metric as :func:`dpfast.tables._metrics.parse_metrics` reads it: a statistic's name,
#: ``(statistic, column)`` or ``(statistic, column, q)``
MetricSpec = str | tuple[str, str] | tuple[str, str, object]


class SpecArgs(TypedDict, total=False):
    """The rest of :meth:`ReleaseSpec.make`'s parameters (:func:`aggregate_spec`)."""

    by: tuple[str, ...]
    privacy_unit: str | None
    epsilon: float | None
    delta: float
    rho: float | None
    noise: str | None
    max_partitions: int | str
    max_per_partition: int | str
    domain: object
    selection: str
    bounding: str
    rows: str | None


def _key_frame(names: list[str], keys: Uniques) -> dict[str, np.ndarray]:
    """The key columns of a partial (``keys``: one array, or a tuple of them)."""
    return {n: (keys[j] if isinstance(keys, tuple) else keys) for j, n in enumerate(names)}


# ----------------------------------------------------------------------------- frames
def frame_columns(df: object) -> list[str]:
    """Column names of a pandas / Polars DataFrame or a pyarrow Table."""
    names = getattr(df, "column_names", None)  # pyarrow
    if names is None:
        names = getattr(df, "columns", None)
    if names is None or isinstance(df, (np.ndarray, dict)):
        raise TypeError("df must be a pandas or Polars DataFrame or a pyarrow Table, got "
                        f"{type(df).__name__}")
    return [str(n) for n in names]


def frame_column(df: Any, name: str) -> npt.ArrayLike:
    """One column: a pandas Series as it is, Polars / pyarrow columns as numpy arrays."""
    mod = type(df).__module__
    if mod.startswith("polars"):
        return df.get_column(name).to_numpy()
    if hasattr(df, "column_names"):  # pyarrow.Table
        return df.column(name).to_numpy()
    return df[name]


def clamped(raw: object, name: str, n: int, col: _metrics.Column) -> np.ndarray:
    """A value column (numbers, ``n`` rows; its NULL rows already dropped by
    :func:`dpfast.tables._keys.drop_nulls`) clamped to its planned bounds (a new array;
    ``±inf`` is clamped like any value out of range)."""
    arr = _inputs.as_numbers(raw, name)
    if arr.shape != (n,):
        raise ValueError(f"{name} has shape {arr.shape}, keys have {n} rows")
    if not col.integer and arr.dtype.kind in "iu":  # planned on its non-missing entries
        arr = arr.astype(np.float64)
    if col.integer and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} changed type between the plan and the rows")
    return _inputs.clamp(arr, (col.lo, col.hi))


def mets_spec(mets: list[_metrics.Metric]) -> dict[str, object]:
    """Parsed metrics back as a ``{name: spec}`` mapping (parsing it again is the
    identity)."""
    return {m.name: m.spec() for m in mets}


# ----------------------------------------------------------------------------- the spec
def stat_specs(mets: list[_metrics.Metric]) -> tuple[StatSpec, ...]:
    """The spec's statistics of parsed metrics (a quantile's ``q`` as its parameter)."""
    return tuple(StatSpec(m.kind, m.column, () if m.kind != "quantile" else (("q", m.q),),
                          m.name) for m in mets)


def _metric_of(s: StatSpec) -> MetricSpec:
    """A spec statistic as a metric spec of :func:`dpfast.tables._metrics.parse_metrics`."""
    if s.column is None:
        return s.statistic
    if s.statistic == "quantile":
        return (s.statistic, s.column, s.param("q"))
    return (s.statistic, s.column)


def aggregate_spec(metrics: object, parts: Mapping[str, tuple[str, ...]], *,
                   bounds: object, weights: object, candidates: object,
                   available: Collection[str], **kw: Unpack[SpecArgs]) -> ReleaseSpec:
    """The spec of an ``aggregate`` release (ValueError / TypeError naming the parameter):
    ``parts`` the statistics offered (:func:`dpfast.tables.statistics.metric_parts`),
    ``available`` the table's column names (public), ``kw`` the rest of
    :meth:`ReleaseSpec.make`'s parameters."""
    mets = _metrics.parse_metrics(metrics, parts)
    w = _metrics.parse_weights(weights, mets)
    bounds = {} if bounds is None else bounds
    if isinstance(bounds, str) and bounds == "auto":  # every value column: the tuning's
        bounds = {m.column: "auto" for m in mets if m.column is not None}
    if not isinstance(bounds, dict):
        raise TypeError(f"bounds must be a dict {{column: (lo, hi)}}, got "
                        f"{type(bounds).__name__}")
    if candidates is not None and not isinstance(candidates, dict):
        raise TypeError("candidates must be None or a dict {column: n_candidates or grid}, "
                        f"got {type(candidates).__name__}")
    used: dict[str, tuple[float, ...]] = {}
    chosen: list[str] = []  # the columns whose bounds the tuning chooses (_tune_plan.py)
    for name in sorted({m.column for m in mets if m.column is not None}):
        if name not in available:
            continue  # the plan names it (the table does not have it)
        if isinstance(bounds.get(name), str) and bounds[name] == "auto":
            chosen.append(name)
            used[name] = (0, 1)  # a placeholder: chosen after the charge
            continue
        if name not in bounds:
            raise ValueError(f"metrics use column {name!r}: give bounds={{{name!r}: (lo, "
                             "hi)}}")
        try:  # the pair's form here; its values against the column's dtype in the plan
            _inputs._bounds(bounds[name], False)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"bounds for column {name!r}: {exc}") from None
        used[name] = tuple(bounds[name])
    options: dict[str, object] = {"family": "aggregate", "weights": tuple(w),
                                  "candidates": candidates}
    auto = [kw.get(n) == "auto" for n in ("max_partitions", "max_per_partition")]
    if any(auto) or chosen:  # the bounds chosen by the tuning (tables/_tune_plan.py),
        options["tune"] = (TUNE_SHARE, auto[0], auto[1], tuple(chosen))  # one charge
        for n, a in zip(("max_partitions", "max_per_partition"), auto):
            if a:
                kw[n] = 1  # type: ignore[literal-required]  # chosen after the charge
    args: dict[str, Any] = dict(kw)  # (the bounds are integers now)
    return ReleaseSpec.make(stat_specs(mets), bounds=used, options=options, **args)


# ----------------------------------------------------------------------------- the plan
@dataclasses.dataclass
class MultiPlan:
    """A planned many-metric release (:class:`dpfast.tables.run.Plan`): the metric plan
    (:class:`dpfast.tables._metrics.MetricPlan`), the bounding policy, and ``single`` --
    the name of the one metric a single-statistic release returns (None: the whole
    :class:`~dpfast.tables.AggregateRelease`)."""

    metrics: _metrics.MetricPlan
    policy: int
    used: list[str]
    single: str | None
    values: str | None = None  # a single statistic's value column: the source's values

    @property
    def event(self) -> DpEvent:
        return self.metrics.event

    def _columns(self, rows: Rows) -> dict[str, object]:
        if self.values is not None:
            return {self.values: rows.values}
        return {} if rows.columns is None else dict(rows.columns)

    # ------------------------------------------------------------------ one process
    def local_partials(self, rows: Rows, subkey: np.ndarray
                       ) -> tuple[_inputs._Data, _rows.RowsBounded, SlotTables | None]:
        """Validate the rows (NULL policy: a row with a missing key, id or used value
        leaves; shapes; the public domain) and bound each person's rows once."""
        values = self._columns(rows)
        data, vals = self._validate(rows.keys, rows.privacy_ids,
                                    [values[name] for name in self.used], rows.domain)
        if rows.key_names is not None:
            data.key_names = rows.key_names
        return self._bound(data, vals, subkey)

    def _validate(self, keys: KeyColumns, ids: object,
                  raw: list[object], domain: object
                  ) -> tuple[_inputs._Data, dict[str, np.ndarray]]:
        """The NULL policy (listwise over the keys, the ids and the used columns), the
        used columns clamped, the keys factorized with the public domain (``data.values``:
        the indices of the rows the domain keeps)."""
        keys, ids, taken = _keys.drop_nulls(keys, ids, *raw)
        _, n, _ = _keys.keys_and_ids(keys, ids)
        vals = {name: clamped(col, f"column {name!r}", n, self.metrics.columns[name])
                for name, col in zip(self.used, taken)}
        index = np.arange(n, dtype=np.int64)  # which rows survive the domain filter
        data, _ = _inputs._validate_present(keys, ids, index, (0, max(n, 1)), domain)
        return data, vals

    def _bound(self, data: _inputs._Data, vals: dict[str, np.ndarray], subkey: np.ndarray
               ) -> tuple[_inputs._Data, _rows.RowsBounded, SlotTables | None]:
        """Bound the validated rows (``data.values``: the indices of the rows the domain
        kept among ``vals``' rows) over the value matrix; per rank column the sparse
        (key code, slot) -> rows table of the kept rows."""
        kept_rows = data.values
        assert kept_rows is not None
        data.values = None
        taken = {name: v[kept_rows] if kept_rows.shape[0] != v.shape[0] else v
                 for name, v in vals.items()}
        mp = self.metrics
        matrix = summand_matrix(mp, taken, kept_rows.shape[0])
        agg = _rows.bound_matrix(data.codes, data.n_codes, data.ids, mp.k, mp.c,
                                 subkey, matrix,
                                 mark=bool(mp.ranks) and data.ids is not None,
                                 policy=self.policy,
                                 unit_weights=_select.unit_weights(mp.select))
        tables = None
        if mp.ranks:  # the rank metrics' rows: those the one bounding kept
            tables = _rank_metrics.slot_tables(mp.grids, mp.slot_cols, data.codes, matrix,
                                               agg.kept)
        return data, agg, tables

    # ------------------------------------------------------------------ Dask
    def partition_partials(self, pdf: pd.DataFrame, cols: Columns, subkey: np.ndarray
                           ) -> tuple[tuple[pd.DataFrame, dict[str, pd.DataFrame]], int]:
        """One partition (every privacy id's rows in it): the steps of
        :meth:`local_partials`, then per kept key its key values, rows, people, weighted
        people and two-word column totals (a pandas DataFrame), and per rank column the
        sparse (key, slot) -> rows table of the kept rows; and the partition's rows."""
        import pandas as pd

        names = list(cols.by)
        keys = pdf[names[0]] if len(names) == 1 else tuple(pdf[b] for b in names)
        ids = None if cols.privacy_unit is None else pdf[cols.privacy_unit]
        nrows = int(len(keys if len(names) == 1 else keys[0]))
        data, vals = self._validate(keys, ids, [pdf[c] for c in self.used], cols.domain)
        data, agg, tables = self._bound(data, vals, subkey)
        nz = np.flatnonzero(agg.counts)
        out = _key_frame(names, _take_keys(data.uniques, nz))
        out[_COUNT] = agg.counts[nz]
        out[_IDS] = agg.ids[nz]  # every id's rows are in this partition: the people add up
        if agg.weighted is not None:  # so do the weighted ones (each id's t is its own)
            out[_WEIGHTED] = agg.weighted[nz]
        for j in range(self.metrics.n_value_parts()):
            out[f"__dpfast_hi{j}"] = agg.hi[nz, j]
            out[f"__dpfast_lo{j}"] = agg.lo[nz, j]
        frames = {}
        for col, (tc, ts, tn) in (tables or {}).items():
            t = _key_frame(names, _take_keys(data.uniques, tc))
            t[_SLOT] = ts
            t[_ROWS] = tn
            frames[col] = pd.DataFrame(t)
        return (pd.DataFrame(out), frames), nrows

    def merge(self, results: list[tuple[tuple[pd.DataFrame, dict[str, pd.DataFrame]], int]],
              cols: Columns
              ) -> tuple[_inputs._Data, _rows.RowsBounded, SlotTables | None]:
        """Sum the partitions' partials (:meth:`partition_partials`' results) per key --
        the keys coded as on one machine, the public domain's first -- in checked integer
        arithmetic: what :meth:`finish` takes, equal to :meth:`local_partials` of all the
        rows."""
        import pandas as pd

        _inputs.check_rows(sum(r[1] for r in results))  # the two-word totals' size
        partials = [r[0] for r in results]
        names = list(cols.by)
        parts = pd.concat([p[0] for p in partials], ignore_index=True)
        order = sorted(partials[0][1]) if partials else []
        frame = parts if not order else pd.concat(
            [parts[names]] + [p[1][col][names] for col in order for p in partials],
            ignore_index=True)
        fk, codes, domain_codes = key_codes(frame, names, cols.domain)
        codes = np.ascontiguousarray(codes, np.int64)
        data = _inputs._Data(codes, fk.size, fk.uniques, None, None, domain_codes,
                             tuple(names))
        tables: SlotTables | None = None
        at = len(parts)
        if order:
            tables = {}
            for col in order:
                t = pd.concat([p[1][col] for p in partials], ignore_index=True)
                tc = np.ascontiguousarray(codes[at:at + len(t)])
                at += len(t)
                tables[col] = _em.slot_table(tc, t[_SLOT].to_numpy(np.int64),
                                             _rank_metrics.n_slots(self.metrics.grids[col]),
                                             t[_ROWS].to_numpy(np.int64))
        pc = codes[:len(parts)]
        n, m = fk.size, self.metrics.n_value_parts()
        counts = np.zeros(n, np.int64)
        ids = np.zeros(n, np.int64)
        np.add.at(counts, pc, parts[_COUNT].to_numpy(np.int64))
        np.add.at(ids, pc, parts[_IDS].to_numpy(np.int64))
        hi = np.zeros((n, m), np.int64)
        lo = np.zeros((n, m), np.int64)
        for j in range(m):
            fs = _rows.RowsBounded(counts, ids, hi, lo).column(j, 0)
            fs.add_partials(pc, parts[f"__dpfast_hi{j}"].to_numpy(np.int64),
                            parts[f"__dpfast_lo{j}"].to_numpy(np.int64))
            hi[:, j], lo[:, j] = fs.hi, fs.lo
        weighted = (checked_total(pc, parts[_WEIGHTED], n) if _WEIGHTED in parts else None)
        return data, _rows.RowsBounded(counts, ids, hi, lo, weighted=weighted), tables

    def finish(self, partials: tuple[_inputs._Data, _rows.RowsBounded, SlotTables | None],
               gen: _random.Generator, release_id: int | None
               ) -> AggregateRelease | TableRelease | _rank_metrics.QuantileRelease:
        """Noise every part, select once, finish every metric (after the charge)."""
        data, agg, tables = partials
        rel = release(self.metrics, gen, release_id, data, agg, tables)
        return rel if self.single is None else rel.metrics[self.single]


def _candidates(spec: ReleaseSpec) -> dict[str, int | npt.ArrayLike] | None:
    cands = spec.option("candidates")
    if cands is None:
        return None
    return {name: np.asarray(v) if isinstance(v, tuple) else v for name, v in cands}


def plan_of(spec: ReleaseSpec, source: Source, parts: Mapping[str, tuple[str, ...]]
            ) -> MultiPlan:
    """The plan of ``spec`` over ``source`` (its schema only: whether it has privacy ids,
    its value columns' dtypes).  ``parts``: the statistics offered -> their parts."""
    single = None
    values = None
    if spec.option("family") != "aggregate" and len(spec.statistics) == 1:
        # one statistic (variance, std, privacy_id_count): bounds a pair for its column
        (s,) = spec.statistics
        single = s.name or s.statistic
        if s.column is None and _metrics.needs_column(parts.get(s.statistic, ())):
            values = VALUES  # a local release's values
            s = dataclasses.replace(s, column=VALUES)
        metrics: dict[str, MetricSpec] = {single: _metric_of(s)}
        bounds: dict[str, object] = {} if s.column is None else {s.column: spec.bounds}
    else:
        metrics = {s.name: _metric_of(s) for s in spec.statistics}
        assert not isinstance(spec.bounds, str)
        bounds = {c: (lo, hi) for c, lo, hi in spec.bounds or ()}
    mets = _metrics.parse_metrics(metrics, parts)
    w = _metrics.parse_weights(None if spec.option("weights") is None
                               else list(spec.option("weights")), mets)
    k, c = _common(spec.max_partitions, spec.max_per_partition,
                   True if source.has_privacy_ids() else None)
    policy = bounding.policy_code(spec.bounding)
    priv = spec.privacy()
    used = sorted({m.column for m in mets if m.column is not None})
    columns: dict[str, _metrics.Column] = {}
    for name in used:
        kind = _column_kind(source, name, values is not None)
        if name not in bounds:
            raise ValueError(f"metrics use column {name!r}: give bounds={{{name!r}: (lo, "
                             "hi)}}")
        integer = kind in "iu"
        try:
            lo, hi = _inputs._bounds(bounds[name], integer)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"bounds for column {name!r}: {exc}") from None
        columns[name] = _metrics.Column(lo, hi, integer)
    mp = _metrics.plan_metrics(mets, w, columns, k, c, priv, spec.selection,
                               _candidates(spec))
    return MultiPlan(mp, policy, used, single, values)


def _column_kind(source: Source, name: str, single: bool) -> str:
    """The dtype kind of a used value column (:meth:`dpfast.tables.run.Source.value_kind`:
    the public schema; ValueError when a local table lacks it -- a Dask frame's columns
    were checked when it was made)."""
    if single:  # a local single statistic's values
        return str(source.value_kind())
    local = getattr(source, "columns", None)
    if (local is None or isinstance(local, Mapping)) and name not in (local or {}):
        raise ValueError(f"metrics use column {name!r}, which is not in the table")
    return str(source.value_kind(name))
