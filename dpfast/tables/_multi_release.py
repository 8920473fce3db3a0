"""Noise, select and finish a many-metric release; the release object.

The finish step of the many-metric plan (:meth:`dpfast.tables.multi.MultiPlan.finish`:
:func:`dpfast.tables.aggregate` and the single statistics finished from its parts,
:func:`~dpfast.tables.variance`, :func:`~dpfast.tables.std`,
:func:`~dpfast.tables.privacy_id_count`, on one machine or on Dask): both backends supply
the same per-key exact aggregates (:class:`~dpfast.tables._rows.RowsBounded`), so the
release is the same bit for bit.  Every part is noised on its own per-key addressed
streams (:mod:`dpfast.tables.keynoise`, the part's address), the keys are selected once,
and each metric is post-processing of the noisy parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy as np

from dpfast.tables import _fixed, _metrics, _rank_metrics, _select, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables._inputs import _Data
from dpfast.tables._intervals import VarianceInterval, variance_estimate
from dpfast.tables._metrics import Metric, MetricPlan, PartPlan
from dpfast.tables._rows import RowsBounded
from dpfast.tables.groupby import _candidates, _finish, _take_keys
from dpfast.tables.quantile_release import QuantileRelease
from dpfast.tables.release import TableRelease

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

    from dpfast.accounting.events import DpEvent
    from dpfast.random import Generator
    from dpfast.tables._select import Selection

__all__ = ["AggregateRelease", "summand_matrix", "release"]


class _MetricCommon(TypedDict):
    """What every :class:`TableRelease` metric of a release shares."""

    keys: np.ndarray | tuple[np.ndarray, ...]
    event: DpEvent
    threshold: int | None
    key_names: tuple[str, ...] | None
    value_name: str
    release_id: int | None
    selection: Selection | None


# ----------------------------------------------------------------------------- summands
def summand_matrix(plan: MetricPlan, values: dict[str, np.ndarray], n: int) -> np.ndarray:
    """The ``(n, m)`` int64 summands of the value parts (clamped ``values`` per column):
    integers as they are (centred ``2x - lo - hi`` for ``csum``), floats as fixed-point
    units (:func:`dpfast.tables._fixed.to_units`), centred squares ``(x - mid)²`` as units
    clamped to ``[0, ((hi - lo)/2)²]``; then, per rank column, each row's slot on the
    column's grid (:func:`dpfast.tables._quantile_em.slots_of`: part of every row's
    canonical order in bounding, and what the rank utilities count)."""
    vparts = [p for p in plan.parts.values() if p.matrix_col is not None]
    out = np.empty((n, len(vparts) + len(plan.slot_cols)), np.int64)
    for name, j in plan.slot_cols.items():
        out[:, j] = _em.slots_of(values[name], plan.grids[name])
    for p in vparts:
        assert p.column is not None
        col = plan.columns[p.column]
        x = values[p.column]
        if p.kind == "csq":
            mid = (float(col.lo) + float(col.hi)) / 2
            y = np.square(x.astype(np.float64) - mid)
            assert p.fixed is not None
            out[:, p.matrix_col] = _fixed.to_units(p.fixed, y)
        elif p.fixed is not None:
            out[:, p.matrix_col] = _fixed.to_units(p.fixed, x)
        elif p.kind == "csum":
            out[:, p.matrix_col] = 2 * x - (int(col.lo) + int(col.hi))
        else:
            out[:, p.matrix_col] = x
    return out


def _totals(p: PartPlan, agg: RowsBounded, cand: np.ndarray
            ) -> np.ndarray | _fixed.FixedSums:
    if p.kind == "count":
        return agg.counts[cand]
    if p.kind == "ids":
        return agg.ids[cand]
    assert p.matrix_col is not None
    if p.fixed is not None:
        return agg.column(p.matrix_col, p.fixed.exp)[cand]
    return _fixed.saturated(agg.column(p.matrix_col, 0)[cand])  # exact, then ±2**62


# ----------------------------------------------------------------------------- release
def release(plan: MetricPlan, gen: Generator, release_id: int | None, data: _Data,
            agg: RowsBounded,
            tables: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
            ) -> AggregateRelease:
    """Noise every part, select the keys once, finish every metric.  The budget has been
    charged.  ``tables``: each rank column's sparse ``(key code, slot) -> rows`` table of
    the kept rows (:func:`dpfast.tables._rank_metrics.slot_tables`), needed when the plan
    has rank metrics."""
    cand = _candidates(data, agg.counts)
    stream = keynoise.release_stream(gen)  # the release's id: after the charge
    rkey = keynoise.release_key(gen._key, stream)
    cand_keys = _take_keys(data.uniques, cand)
    names = list(plan.parts)
    noisy = [keynoise.noise_keys(plan.parts[n].part.law, _totals(plan.parts[n], agg, cand),
                                 rkey, cand_keys, plan.parts[n].address) for n in names]
    keep = None
    if plan.select is not None:  # its own measurement, on the people per key
        measure = _select.measure(plan.select, agg.ids, agg.weighted)
        keep = _select.apply(plan.select, measure[cand], rkey, cand_keys)
    out_keys, arrays = _finish(data, cand, keep, noisy)
    parts = dict(zip(names, arrays))
    ranks: dict[str, QuantileRelease] = {}
    if plan.ranks:  # sampled for the published keys only (per-key addressed)
        assert tables is not None, "rank metrics need the slot tables"
        out_codes = data.domain_codes if data.domain_codes is not None else (
            cand if keep is None else cand[keep])
        common: _rank_metrics.ReleaseCommon = {
            "event": plan.event, "threshold": plan.tau, "selection": plan.select,
            "key_names": data.key_names, "release_id": release_id}
        for pname, rp in plan.ranks.items():
            ranks[pname] = _rank_metrics.finish(
                rp, plan.grids[rp.column], plan.columns[rp.column].integer,
                tables[rp.column], out_codes, out_keys, plan.c, plan.k, rkey, common)
    metrics = {m.name: (ranks[_metrics.part_name("quantile", m.column, m.q)]
                        if m.kind in _rank_metrics.RANK_KINDS else
                        _finish_metric(m, plan, parts, out_keys, data.key_names, release_id))
               for m in plan.metrics}
    return AggregateRelease(out_keys, metrics, plan, parts, data.key_names, release_id)


def _sens(plan: MetricPlan, p: PartPlan) -> dict[str, float]:
    return {"l1": p.part.l1, "l2": p.part.l2, "max_partitions": plan.k,
            "max_per_partition": plan.c}


def _finish_metric(m: Metric, plan: MetricPlan, parts: dict[str, np.ndarray],
                   keys: np.ndarray | tuple[np.ndarray, ...],
                   key_names: tuple[str, ...] | None, release_id: int | None
                   ) -> TableRelease:
    common: _MetricCommon = {
        "keys": keys, "event": plan.event, "threshold": plan.tau, "key_names": key_names,
        "value_name": m.name, "release_id": release_id, "selection": plan.select}
    if len(m.parts) == 1:  # count, privacy_id_count, sum: one noised part, as it is
        name = _metrics.part_name(m.parts[0],
                                  m.column if _metrics.needs_column(m.parts) else None)
        p = plan.parts[name]
        return TableRelease(values=parts[name], statistic=m.kind, law=p.part.law,
                            sensitivity=_sens(plan, p), **common)
    assert m.column is not None
    col = plan.columns[m.column]
    lo, hi = float(col.lo), float(col.hi)
    pc, ps = plan.parts["count"], plan.parts[f"csum:{m.column}"]
    n = parts["count"]
    s = parts[f"csum:{m.column}"].astype(np.float64)
    if m.kind == "mean":
        means = np.clip(((lo + hi) + s / np.maximum(n, 1)) / 2, lo, hi)
        means[n <= 0] = (lo + hi) / 2
        return TableRelease(values=means.astype(np.float64), statistic="mean",
                            law=ps.part.law, sensitivity=_sens(plan, ps),
                            mean_parts=(s, n, ps.part.law, pc.part.law, lo, hi), **common)
    pq = plan.parts[f"csq:{m.column}"]
    s2 = parts[f"csq:{m.column}"].astype(np.float64)
    cap = _metrics.csq_bound(col)
    var = variance_estimate(n, s, s2, cap)
    laws = (pc.part.law, ps.part.law, pq.part.law)
    interval = VarianceInterval(n, s, s2, cap, laws, m.kind == "std")
    values = np.sqrt(var) if m.kind == "std" else var
    return TableRelease(values=values, statistic=m.kind, law=pq.part.law,
                        sensitivity=_sens(plan, pq), interval=interval, **common)


# ----------------------------------------------------------------------------- object
class AggregateRelease:
    """Several statistics of one table, released together (:func:`dpfast.tables.aggregate`).

    Attributes
    ----------
    keys : ndarray or tuple of ndarray
        The released keys (one selection for every metric).
    metrics : dict of str to TableRelease or QuantileRelease
        Each metric as its own :class:`~dpfast.tables.TableRelease` (values, noise law,
        confidence intervals, accuracy), a rank metric (median / quantile / min / max) as a
        :class:`~dpfast.tables.QuantileRelease` (values on its public grid,
        ``rank_error(alpha)``, ``accuracy(alpha)``); all share the keys and the event.
    event : DpEvent
        The one composed event of the whole release (what the budget was charged).
    threshold : int or None
        The threshold of a thresholding selection rule on the noisy number of people per
        key (None: public domain, or the geometric rule).
    selected_on : str or None
        The key-selection rule (:meth:`dpfast.tables._select.Selection.describe`; None:
        public domain).
    shares : dict of str to Fraction
        The share of the budget each part got (see :mod:`dpfast.tables.multi`), the rank
        parts' (``"quantile:x@0.5"``) included.
    laws : dict of str to NoiseLaw
        The noise law of each noised part (the rank parts add no noise: they sample).
    noisy_parts : dict of str to ndarray
        The noisy per-key parts (``"count"``, ``"ids"``, ``"sum:x"``, ``"csum:x"``,
        ``"csq:x"``) every metric was finished from (post-processing only).
    release_id : int or None
        As :attr:`TableRelease.release_id`.
    """

    def __init__(self, keys: np.ndarray | tuple[np.ndarray, ...],
                 metrics: dict[str, TableRelease | QuantileRelease], plan: MetricPlan,
                 parts: dict[str, np.ndarray], key_names: tuple[str, ...] | None,
                 release_id: int | None) -> None:
        self.keys = keys
        self.metrics = metrics
        self.event = plan.event
        self.threshold = plan.tau
        self.selected_on = None if plan.select is None else plan.select.describe()
        self.shares = {n: p.share for n, p in plan.parts.items()}
        self.shares.update(plan.rank_shares)
        self.laws = {n: p.part.law for n, p in plan.parts.items()}
        self.noisy_parts = parts
        self.release_id = release_id
        self._key_names = key_names

    def __getitem__(self, name: str) -> TableRelease | QuantileRelease:
        try:
            return self.metrics[name]
        except KeyError:
            raise KeyError(f"no metric {name!r}; released: {list(self.metrics)}") from None

    def __len__(self) -> int:
        k = self.keys[0] if isinstance(self.keys, tuple) else self.keys
        return int(len(k))

    def __repr__(self) -> str:
        return (f"AggregateRelease({list(self.metrics)}, {len(self)} keys, "
                f"event={self.event}, threshold={self.threshold})")

    def _repr_html_(self) -> str:
        """Jupyter's view: the privacy spent, every metric with its interval, the rows."""
        from dpfast.tables import _plot

        return _plot.aggregate_html(self)

    def __str__(self) -> str:
        """The whole table as text (every metric and interval column, every row; pandas'
        own print of :meth:`to_pandas` elides columns to fit the terminal)."""
        cols = self.to_columns()
        names = list(cols)
        text = [[str(c) for c in names]] + [
            [_text(v) for v in row]
            for row in zip(*(np.asarray(cols[c]).tolist() for c in names))]
        widths = [max(len(r[k]) for r in text) for k in range(len(names))]
        return "\n".join("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True))
                         for r in text)

    def confidence_interval(self, name: str, alpha: float = 0.05
                            ) -> tuple[np.ndarray, np.ndarray]:
        """The ``1 - alpha`` interval of metric ``name`` (see its TableRelease).  A rank
        metric has a rank-error statement instead (ValueError)."""
        rel = self[name]
        if isinstance(rel, QuantileRelease):
            raise ValueError(f"metric {name!r} is a quantile: its accuracy is a statement "
                             f"on ranks, rel[{name!r}].rank_error(alpha) / .accuracy(alpha)")
        return rel.confidence_interval(alpha)

    def to_columns(self, alpha: float = 0.05) -> dict[str, np.ndarray]:
        """``{column: array}``: the key columns, then per metric ``name``, ``name_ci_low``
        and ``name_ci_high`` (a rank metric: ``name`` and ``name_rank_error``, the rank
        error at ``1 - alpha`` of :meth:`QuantileRelease.rank_error`)."""
        first = next(iter(self.metrics.values()))
        cols: dict[str, np.ndarray] = {}
        keys = self.keys if isinstance(self.keys, tuple) else (self.keys,)
        for kname, k in zip(first._names(), keys):
            cols[kname] = k
        for name, rel in self.metrics.items():
            if isinstance(rel, QuantileRelease):
                cols[name] = rel.values
                cols[f"{name}_rank_error"] = np.full(len(rel), rel.rank_error(alpha),
                                                     np.int64)
                continue
            lo, hi = rel.confidence_interval(alpha)
            cols[name] = rel.values
            cols[f"{name}_ci_low"] = lo
            cols[f"{name}_ci_high"] = hi
        return cols

    def to_pandas(self, alpha: float = 0.05) -> pd.DataFrame:
        """A DataFrame indexed by the key (a MultiIndex for several key columns), one
        column per metric plus its ``_ci_low`` / ``_ci_high``.  Needs pandas."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is in the test extra
            raise ImportError("to_pandas needs pandas: pip install 'dpfast[pandas]'") from exc
        cols = self.to_columns(alpha)
        names = next(iter(self.metrics.values()))._names()
        keys = [cols.pop(n) for n in names]
        if len(keys) == 1:
            index = pd.Index(keys[0], name=names[0])
        else:
            index = pd.MultiIndex.from_arrays(keys, names=list(names))
        return pd.DataFrame(cols, index=index)

    def to_polars(self, alpha: float = 0.05) -> pl.DataFrame:
        """A Polars DataFrame: the key columns, then the metrics and their intervals.
        Needs polars (``pip install 'dpfast[polars]'``)."""
        try:
            import polars as pl
        except ImportError as exc:  # pragma: no cover - polars is in the test extra
            raise ImportError("to_polars needs polars: pip install 'dpfast[polars]'") from exc
        return pl.DataFrame({k: np.asarray(v) for k, v in self.to_columns(alpha).items()})


def _text(v: object) -> str:
    """A cell of :meth:`AggregateRelease.__str__`: floats to 6 significant digits."""
    return f"{v:.6g}" if isinstance(v, float) else str(v)
