"""Plan of a many-metric release: the metrics, their noised parts, the budget split.

A *metric* (``count``, ``privacy_id_count``, ``sum``, ``mean``, ``variance``, ``std``,
``median``, ``quantile``, ``min``, ``max`` of a column) is finished from one or more
*parts*, each a per-key vector aggregated over the rows that contribution bounding kept
(once, for all parts):

==================  ==============================================  =====================
part                per-key aggregate (``x`` clamped to [lo, hi])   bound per row (``B``)
==================  ==============================================  =====================
``count``           kept rows                                       1 (``c`` per person)
``ids``             privacy ids that kept the key                   1 per person and key
``sum:x``           ``Σ x``                                         ``max(|lo|, |hi|)``
``csum:x``          ``Σ (2x - lo - hi)``                            ``hi - lo``
``csq:x``           ``Σ (x - (lo + hi)/2)²``                        ``((hi - lo)/2)²``
``quantile:x@q``    (not noised) the kept rows' ranks on the grid   ``c`` per key (utility)
==================  ==============================================  =====================

A ``quantile`` part is an exponential mechanism per released key over a public grid
(:mod:`dpfast.tables._rank_metrics`: its ε per key, its event, the grid rules).

One person changes at most ``k`` keys and, per key, a part by at most ``c B`` (``1`` for
``ids``), so its sensitivities are ``Δ1 = k c B``, ``Δ2 = sqrt(k) c B`` (add/remove one
person).  Metrics share parts (``mean`` and ``count`` one noisy count).

Budget rule: metric ``i`` gets the share ``w_i / Σ w`` of ``ε`` (or ``ρ``) -- equal
weights unless the caller gives ``weights`` -- split equally over the parts it uses; a
part gets the sum of the shares of the metrics that use it.  The parts' mechanisms compose
to the release's event (one charge); each is calibrated at its share times ``1 - 2**-40``,
so that the parts' events, each rounded up, still compose to at most the target.  Private
key selection (no public domain) is a measurement of its own, with the weight of one more
metric (the mean weight): the rule of :mod:`dpfast.tables._select` (``selection=``) on the
exact number of privacy ids holding each key after bounding (``Δ1 = k``, whatever ``c``),
its own per-key stream; the released parts are not the ones that decided.  With Gaussian
parts the selection gets ``δ/2`` and the parts the other half
(:func:`dpfast.tables._plan.split_for_selection`).  The selection is planned in
:func:`_selection` only.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpfast._core.rounding import float_down
from dpfast.tables import _fixed, _plan, _rank_metrics, _select

if TYPE_CHECKING:
    import numpy.typing as npt

    from dpfast.accounting.events import DpEvent

__all__ = ["Metric", "MetricPlan", "parse_metrics", "plan_metrics", "kinds"]

#: the rank metrics' one part (their statistics are planned by the rank release; a
#: registered statistic that declares ``parts`` takes precedence)
_RANK_PARTS: dict[str, tuple[str, ...]] = {kind: ("quantile",)
                                           for kind in _rank_metrics.RANK_KINDS}
_UNVALUED = frozenset({"count", "ids"})  # the parts that read no value column


def kinds(parts: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """Metric kind -> the parts it is finished from: the statistics' own ``parts``
    (:func:`dpfast.tables.statistics.metric_parts`) and the rank metrics."""
    return {**_RANK_PARTS, **parts}


def needs_column(parts: tuple[str, ...]) -> bool:
    """Whether a metric finished from ``parts`` reads a value column."""
    return any(p not in _UNVALUED for p in parts)


COUNT_PART, IDS_PART, FIRST_VALUE_PART = 0, 2, 3  # the parts' noise addresses (uint8)
# each part is calibrated at its share times this: the parts' events, each rounded up,
# then still compose (basic composition, rounded up) to at most the target epsilon / rho
_SLACK = 1 - Fraction(1, 1 << 40)


@dataclasses.dataclass(frozen=True)
class Metric:
    """One released statistic: its output name, kind, value column (or None), for the
    rank metrics (median / quantile / min / max) its quantile ``q``, and the parts it is
    finished from (its statistic's ``parts``)."""

    name: str
    kind: str
    column: str | None
    q: float | None = None
    parts: tuple[str, ...] = ()

    def spec(self) -> str | tuple[str, str] | tuple[str, str, float | None]:
        """The metric's spec (``parse_metrics`` of it gives the metric back)."""
        if self.column is None:
            return self.kind
        if self.kind == "quantile":
            return (self.kind, self.column, self.q)
        return (self.kind, self.column)

    def default_name(self) -> str:
        """``"count"``, ``"mean_x"``, ``"median_x"``, ``"q0.9_x"``."""
        if self.column is None:
            return self.kind
        if self.kind == "quantile":
            return f"q{self.q:g}_{self.column}"
        return f"{self.kind}_{self.column}"


def _quantile_arg(q: object, where: str) -> float:
    if isinstance(q, (bool, np.bool_)) or not isinstance(q, (numbers.Real, np.number)):
        raise TypeError(f"{where}: the quantile q must be a number in [0, 1], got {q!r}")
    f = float(q)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"{where}: the quantile q must be in [0, 1], got {q!r}")
    return f


def _one(spec: object, where: str, table: dict[str, tuple[str, ...]]
         ) -> tuple[str, str | None, float | None]:
    q = None
    if isinstance(spec, str):
        kind, col = spec, None
    elif isinstance(spec, tuple) and len(spec) == 2 and all(isinstance(s, str) for s in spec):
        kind, col = spec
    elif (isinstance(spec, tuple) and len(spec) == 3 and all(isinstance(s, str)
                                                             for s in spec[:2])):
        kind, col = spec[0], spec[1]
        if kind != "quantile":
            raise TypeError(f"{where}: only ('quantile', column, q) takes a third entry, "
                            f"got {spec!r}")
        q = _quantile_arg(spec[2], where)
    else:
        raise TypeError(f"{where} must be a metric name (e.g. 'count'), a pair "
                        f"(kind, column) such as ('mean', 'x') or ('quantile', column, q), "
                        f"got {spec!r}")
    if kind not in table:
        raise ValueError(f"{where}: unknown metric {kind!r}; known: {sorted(table)}")
    valued = needs_column(table[kind])
    if valued and col is None:
        raise ValueError(f"{where}: metric {kind!r} needs a value column: ({kind!r}, 'col')")
    if not valued and col is not None:
        raise ValueError(f"{where}: metric {kind!r} takes no value column, got {col!r}")
    if kind == "quantile" and q is None:
        raise ValueError(f"{where}: metric 'quantile' needs q: ('quantile', {col!r}, 0.9)")
    if kind in _rank_metrics.RANK_KINDS and kind != "quantile":
        q = _rank_metrics.RANK_KINDS[kind]
    return kind, col, q


def parse_metrics(metrics: object, parts: Mapping[str, tuple[str, ...]]) -> list[Metric]:
    """``metrics``: a list of specs (``"count"``, ``("mean", "x")``, ``("median", "x")``,
    ``("quantile", "x", 0.9)``; named ``"count"``, ``"mean_x"``, ``"median_x"``,
    ``"q0.9_x"``) or a mapping ``{output name: spec}``.  ``parts``: the statistics a
    release offers -> their parts (:func:`dpfast.tables.statistics.metric_parts`; the
    rank metrics are added, :func:`kinds`).  ValueError/TypeError naming ``metrics``."""
    table = kinds(parts)
    out: list[Metric] = []
    one_spec = isinstance(metrics, tuple) and (
        (len(metrics) == 2 and metrics[0] in table and isinstance(metrics[1], str)
         and metrics[1] not in table)
        or (len(metrics) == 3 and metrics[0] == "quantile" and isinstance(metrics[1], str)
            and not isinstance(metrics[2], (str, tuple))))
    if isinstance(metrics, dict):
        for name, spec in metrics.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"metrics names must be non-empty str, got {name!r}")
            kind, col, q = _one(spec, f"metrics[{name!r}]", table)
            out.append(Metric(name, kind, col, q, table[kind]))
    elif isinstance(metrics, (list, tuple)) and not one_spec:
        for i, spec in enumerate(metrics):
            kind, col, q = _one(spec, f"metrics[{i}]", table)
            m = Metric("", kind, col, q, table[kind])
            out.append(dataclasses.replace(m, name=m.default_name()))
    elif isinstance(metrics, (str, tuple)):
        kind, col, q = _one(metrics, "metrics", table)
        m = Metric("", kind, col, q, table[kind])
        out.append(dataclasses.replace(m, name=m.default_name()))
    else:
        raise TypeError(f"metrics must be a list or a dict of metrics, got "
                        f"{type(metrics).__name__}")
    if not out:
        raise ValueError("metrics is empty")
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ValueError(f"metrics has duplicate output names: {names}")
    return out


def parse_weights(weights: object, metrics: list[Metric]) -> list[Fraction]:
    """Exact positive weights, one per metric (None: all 1).  A mapping by output name, or a
    sequence aligned with the metrics."""
    if weights is None:
        return [Fraction(1)] * len(metrics)
    if isinstance(weights, dict):
        missing = [m.name for m in metrics if m.name not in weights]
        extra = [w for w in weights if w not in {m.name for m in metrics}]
        if missing or extra:
            raise ValueError(f"weights must name every metric: missing {missing}, unknown "
                             f"{extra}")
        raw = [weights[m.name] for m in metrics]
    elif isinstance(weights, (list, tuple)):
        if len(weights) != len(metrics):
            raise ValueError(f"weights has {len(weights)} entries, metrics {len(metrics)}")
        raw = list(weights)
    else:
        raise TypeError(f"weights must be None, a dict or a list, got {type(weights).__name__}")
    out = []
    for w in raw:
        if isinstance(w, bool) or not isinstance(w, numbers.Real):
            raise TypeError(f"weights must be real numbers, got {w!r}")
        if not (math.isfinite(float(w)) and float(w) > 0):
            raise ValueError(f"weights must be finite and > 0, got {w!r}")
        out.append(Fraction(w) if isinstance(w, (int, Fraction)) else Fraction(float(w)))
    return out


@dataclasses.dataclass(frozen=True)
class Column:
    """A value column's bounds and kind (integers: integer bounds, discrete noise for its
    sums)."""

    lo: int | float
    hi: int | float
    integer: bool


@dataclasses.dataclass
class PartPlan:
    """One noised part: its name (``"count"``, ``"ids"``, ``"csum:x"``...), budget share,
    calibrated mechanism (:class:`dpfast.tables._plan.Part`), noise address, matrix column
    (None for count / ids) and fixed-point grid (float sums)."""

    name: str
    kind: str
    column: str | None
    share: Fraction
    part: _plan.Part
    address: int
    matrix_col: int | None = None
    fixed: _fixed.Fixed | None = None


@dataclasses.dataclass
class MetricPlan:
    """The data-independent part of a many-metric release.  ``ranks``: the rank parts
    (:mod:`dpfast.tables._rank_metrics`, by part name) with their ``rank_shares``;
    ``grids``: each rank column's public grid; ``slot_cols``: the matrix column of each
    rank column's grid slots (after the value parts' columns)."""

    metrics: list[Metric]
    parts: dict[str, PartPlan]
    columns: dict[str, Column]
    k: int
    c: int
    select: _select.Selection | None  # the key selection (None: public domain)
    tau: int | None
    event: DpEvent
    ranks: dict[str, _rank_metrics.RankPlan] = dataclasses.field(default_factory=dict)
    rank_shares: dict[str, Fraction] = dataclasses.field(default_factory=dict)
    grids: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    slot_cols: dict[str, int] = dataclasses.field(default_factory=dict)

    def n_value_parts(self) -> int:
        """Matrix columns that are noised value parts (the slot columns follow)."""
        return sum(1 for p in self.parts.values() if p.matrix_col is not None)


def part_name(kind: str, column: str | None, q: float | None = None) -> str:
    if kind == "quantile":
        return f"quantile:{column}@{q!r}"
    return kind if column is None else f"{kind}:{column}"


def _magnitude(kind: str, col: Column) -> Fraction:
    lo, hi = Fraction(col.lo), Fraction(col.hi)
    if kind == "sum":
        return max(abs(lo), abs(hi))
    if kind == "csum":
        return hi - lo
    return Fraction(csq_bound(col))


def csq_bound(col: Column) -> float:
    """The clamp of a centred square ``(x - mid)²``: ``((hi - lo)/2)²`` rounded down."""
    return float_down((Fraction(col.hi) - Fraction(col.lo)) ** 2 / 4)


def _selection(priv: _plan.Privacy, n_metrics: int, k: int, policy: str
               ) -> tuple[_plan.Privacy, Fraction, _select.Selection]:
    """``(the parts' Privacy, the parts' total share of it, the key selection)``: the
    selection gets the share of one more metric, ``1 / (n_metrics + 1)``."""
    share = Fraction(1, n_metrics + 1)
    stat_priv, e_sel, d_sel = _plan.split_for_selection(priv, share)
    parts_share = 1 - share if stat_priv is priv else Fraction(1)
    return stat_priv, parts_share, _select.plan(e_sel, d_sel, k, policy)


def plan_metrics(metrics: list[Metric], weights: list[Fraction], columns: dict[str, Column],
                 k: int, c: int, priv: _plan.Privacy, selection: str = "auto",
                 candidates: dict[str, int | npt.ArrayLike] | None = None) -> MetricPlan:
    """Shares, mechanisms, grids, threshold and event (see the module docstring)."""
    for m in metrics:
        if m.column is not None and m.column not in columns:
            raise ValueError(f"metric {m.name!r}: no bounds for column {m.column!r} "
                             "(bounds={column: (lo, hi)})")
    total = sum(weights, Fraction(0))
    shares: dict[str, Fraction] = {}
    order: list[tuple[str, str | None, float | None]] = []
    uses = [(list(m.parts), m.column, m.q, w) for m, w in zip(metrics, weights)]
    rank_cols = sorted({m.column for m in metrics if m.kind in _rank_metrics.RANK_KINDS
                        and m.column is not None})
    grid_of = _rank_metrics.grids(rank_cols, columns, candidates)
    policy = _select.resolve(selection)
    stat_priv, parts_share, sel = priv, Fraction(1), None
    if priv.select:
        stat_priv, parts_share, sel = _selection(priv, len(metrics), k, policy)
    for kinds, mcol, mq, w in uses:
        for kind in kinds:
            pcol = None if kind in ("count", "ids") else mcol
            name = part_name(kind, pcol, mq)
            if name not in shares:
                shares[name] = Fraction(0)
                order.append((kind, pcol, mq))
            shares[name] += parts_share * w / total / len(kinds)
    parts: dict[str, PartPlan] = {}
    rank_parts: list[tuple[str, str, float, Fraction]] = []
    nvalue = 0
    for kind, pcol, mq in order:
        name = part_name(kind, pcol, mq)
        if kind == "quantile":
            assert pcol is not None and mq is not None
            rank_parts.append((name, pcol, mq, shares[name]))
            continue
        if kind == "count":
            mag, integer = Fraction(1), True
        elif kind == "ids":
            mag, integer = Fraction(1), True
        else:
            assert pcol is not None
            col = columns[pcol]
            mag = _magnitude(kind, col)
            integer = col.integer and kind != "csq"
            if mag == 0:
                raise ValueError(f"bounds[{pcol!r}] = ({col.lo!r}, {col.hi!r}) give zero "
                                 f"sensitivity for {name}: use lo < hi")
        per = mag if kind == "ids" else c * mag  # one person's change of one key
        if integer and per >= 1 << 62:
            raise ValueError(f"max_per_partition * bound = {per} is too large for exact "
                             f"int64 sums of {name}")
        p = _plan.part(stat_priv, shares[name] * _SLACK, k * per, k * per * per, k, integer)
        if kind in ("count", "ids"):
            addr = COUNT_PART if kind == "count" else IDS_PART
            parts[name] = PartPlan(name, kind, None, shares[name], p, addr)
            continue
        if FIRST_VALUE_PART + nvalue > 255:
            raise ValueError("too many value metrics in one release (at most 250 parts)")
        fixed = None
        if not integer:
            assert pcol is not None
            col = columns[pcol]
            lo, hi = (0.0, csq_bound(col)) if kind == "csq" else (float(col.lo),
                                                                  float(col.hi))
            fixed = _fixed.fixed_grid(lo, hi, p.law.granularity, c, kind == "csum")
        parts[name] = PartPlan(name, kind, pcol, shares[name], p, FIRST_VALUE_PART + nvalue,
                               nvalue, fixed)
        nvalue += 1
    ranks, rank_events = _rank_metrics.plan_ranks(rank_parts, k, priv, stat_priv, _SLACK)
    slot_cols = {name: nvalue + j for j, name in enumerate(rank_cols)}
    evented: list[_plan.Evented] = [*(q.part for q in parts.values()), *rank_events]
    event = _plan.release_event(priv, evented,
                                None if sel is None else sel.delta)
    return MetricPlan(metrics, parts, columns, k, c, sel,
                      None if sel is None else sel.threshold, event, ranks,
                      {r[0]: r[3] for r in rank_parts}, grid_of, slot_cols)
