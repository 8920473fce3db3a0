"""The plans of the tuning (:class:`dpfast.tables.run.Plan`): :class:`TunePlan`
(:func:`dpfast.tables.tune` alone) and :class:`AutoTunePlan`
(``aggregate(..., max_partitions="auto")``: the tuning and the release under one event,
two phases as ``bounds="auto"``'s :class:`~dpfast.tables._autobounds.AutoPlan`).

Both events are known before any row is read (the shares are fixed fractions of the
stated ε, whatever bounds the tuning picks); the exact histograms are computed before the
charge (:meth:`local_partials`), the noise and every choice after it (:meth:`finish`).
"""

from __future__ import annotations

import copy
import dataclasses
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.tables import _autobounds, _inputs, _keys, bounding, multi
from dpfast.tables import _bounds_em as _bem
from dpfast.tables import _tune_predict as _pred
from dpfast.tables import _tune_summary as _sum
from dpfast.tables import _tune_values as _val
from dpfast.tables._multi_release import AggregateRelease
from dpfast.tables._tune_result import TuneResult
from dpfast.tables.spec import ReleaseSpec

if TYPE_CHECKING:
    from dpfast import random as _random
    from dpfast.tables.run import Rows, Source

__all__ = ["TUNE_SHARE", "TunePlan", "AutoTunePlan", "plan_auto", "domain_size",
           "release_event", "split_tuning", "parts", "BOUNDS_PARTS", "tuning_event",
           "default_share", "result", "noisy_values", "pooled_counts", "check_widest",
           "grid_range"]

TUNE_SHARE = multi.TUNE_SHARE


def release_event(eps: float, delta: float) -> _events.DpEvent:
    """The release's part of a composed event: its stated target."""
    return _events.Epsilon(eps) if delta == 0.0 else _events.EpsilonDelta(eps, delta)


#: the parts of the tuning's ε each column without bounds takes (its value histogram,
#: :mod:`dpfast.tables._tune_values`: one cell per person, its bulk far above the floor)
BOUNDS_PARTS = 1


#: the parts of the tuning's ε the contribution summary takes (its histograms' tails --
#: the few people with many rows, who hold most rows -- need them above the floor)
SUMMARY_PARTS = 2


def parts(n_bounds: int) -> int:
    """The parts the tuning's ε is split into: :data:`SUMMARY_PARTS` for the contribution
    summary, :data:`BOUNDS_PARTS` for each of ``n_bounds`` columns' value histograms."""
    return SUMMARY_PARTS + BOUNDS_PARTS * n_bounds


def split_tuning(eps_t: float, n_bounds: int) -> tuple[float, float]:
    """``(ε of the summary, ε of each column's value histogram)``: :data:`SUMMARY_PARTS`
    and :data:`BOUNDS_PARTS` parts of ``eps_t / parts(n_bounds)``, rounded down."""
    e = Fraction(eps_t) / parts(n_bounds)
    return float_down(e * SUMMARY_PARTS), float_down(e * BOUNDS_PARTS)


def domain_size(domain: object) -> int | None:
    """The number of public keys (None: the keys are selected privately)."""
    if domain is None:
        return None
    return len(_keys.columns(domain, "domain")[0])


def _local(source: object) -> Rows:
    """The local rows of a source; ValueError for a cluster's (before any charge)."""
    if not hasattr(source, "keys") or not hasattr(source, "privacy_ids"):
        raise ValueError("max_partitions='auto' / max_per_partition='auto' (and tune) run on "
                         "one machine: call dpfast.tables.tune on a sample, then give its "
                         "bounds to dpfast.dask.aggregate")
    return source  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True)
class TunePlan:
    """The plan of :func:`dpfast.tables.tune` on the private rows: ``eps_h`` on the
    histograms, ``eps_b`` on each of ``unbounded``'s bounds (``bounds="auto"``'s
    mechanism), then the search over ``ks`` x ``cs`` for the release ``spec`` (at the ε
    left to it; its unbounded columns' bounds filled after the charge)."""

    spec: ReleaseSpec
    source: Any
    eps_h: float
    eps_b: float
    unbounded: tuple[str, ...]
    ks: tuple[int, ...]
    cs: tuple[int, ...]
    n_keys: int | None
    spent: float
    policy: int

    @property
    def event(self) -> _events.DpEvent:
        return tuning_event(self.eps_h, self.eps_b, len(self.unbounded))

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> tuple[_sum.Exact, list[Hist]]:
        cols = dict(rows.columns or {})
        used = sorted({s.column for s in self.spec.statistics if s.column is not None})
        keys, ids, taken = _keys.drop_nulls(rows.keys, rows.privacy_ids,
                                            *[cols[c] for c in used])
        data, _ = _inputs._validate(keys, ids, None, None, rows.domain)
        hists = []
        for name in self.unbounded:
            one = type(rows)(cast(Any, keys), cast(Any, ids),
                             cast(Any, taken[used.index(name)]))
            _d, g, integer, kept = _autobounds._pooled_partials(one, subkey, None,
                                                                rows.domain, self.policy)
            hists.append((pooled_counts(kept, g), g, integer))
        return _sum.exact(data, subkey), hists

    def finish(self, partials: tuple[_sum.Exact, list[Hist]], gen: _random.Generator,
               release_id: int | None) -> TuneResult:
        ex, hists = partials
        summary = _sum.noisy(ex, self.eps_h, gen, self.n_keys)
        values = noisy_values(self.unbounded, hists, self.eps_b, gen)
        return result(self.spec, self.source, summary, self.ks, self.cs, self.spent,
                      self.event, values)


#: a value column's exact histogram before the charge: (cells, grid, integer column)
Hist = tuple[np.ndarray, np.ndarray, bool]


def tuning_event(eps_h: float, eps_b: float, n_bounds: int) -> _events.DpEvent:
    """The tuning's event: the contribution summary at ``eps_h``, then one value histogram
    at ``eps_b`` per column without bounds (pure DP, add/remove one person)."""
    parts = tuning_parts(eps_h, eps_b, n_bounds)
    one = parts[0] if len(parts) == 1 else _events.Composed(parts)
    return _events.with_neighbouring(one, _events.ADD_REMOVE)


def tuning_parts(eps_h: float, eps_b: float, n_bounds: int) -> tuple[_events.DpEvent, ...]:
    """The parts of :func:`tuning_event`."""
    return (_events.Epsilon(eps_h), *(_events.Epsilon(eps_b) for _ in range(n_bounds)))


def pooled_counts(kept: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The exact value histogram of the pooled rows of
    :func:`dpfast.tables._autobounds.pooled` (one per person; their grid slots decoded)."""
    h = _bem.magnitudes(g)
    return _val.exact(kept // (2 * h.shape[0]), int(g.shape[0]))


def noisy_values(names: tuple[str, ...], hists: list[Hist], eps_b: float,
                 gen: _random.Generator) -> dict[str, _val.Values]:
    """The DP value histograms of the columns ``names`` (after the charge)."""
    return {name: _val.noisy(counts, g, integer, eps_b, gen)
            for name, (counts, g, integer) in zip(names, hists, strict=True)}


def result(spec: ReleaseSpec, source: Source, summary: _sum.Summary, ks: tuple[int, ...],
           cs: tuple[int, ...], spent: float, event: _events.DpEvent | None,
           values: dict[str, _val.Values] | None = None) -> TuneResult:
    """The search and its result (post-processing of the summary and the value
    histograms): the bounds of ``values``' columns are chosen with ``(k, c)``."""
    values = values or {}
    best, table = _pred.search(spec, source, summary, ks, cs, values)
    full = _pred.with_bounds(spec, best.bounds)
    assert not isinstance(full.bounds, str)
    bounds = {c: (lo, hi) for c, lo, hi in full.bounds or ()}
    beyond, edge = {}, []
    for name, v in values.items():
        lo, hi = best.bounds[name]
        a, b = int(np.searchsorted(v.grid, lo)), int(np.searchsorted(v.grid, hi))
        beyond[name] = v.beyond(a, b)
        if v.at_edge(a, b):
            edge.append(name)
    return TuneResult(best.max_partitions, best.max_per_partition, bounds,  # type: ignore[arg-type]
                      best.predictions, table, spent, float(spec.epsilon or 0.0), event,
                      summary, beyond, dict(values), sorted(edge))


def grid_range(integer: bool) -> tuple[int | float, int | float]:
    """The widest bounds the tuning can choose for a column: its value grid's range."""
    g = _autobounds._grid_for(None, integer)
    return (int(g[0]), int(g[-1])) if integer else (float(g[0]), float(g[-1]))


def check_widest(spec: ReleaseSpec, source: Source, check: multi.MultiPlan,
                 names: tuple[str, ...], ks: tuple[int, ...], cs: tuple[int, ...]) -> None:
    """The public checks the search relies on, before any charge (a function of the public
    parameters and the columns' types only; ValueError naming the parameters).

    The release's plan at its largest candidate ``(max(ks), max(cs))`` at the caller's
    bounds (``c`` times a bound beyond exact int64 sums); and, with the columns ``names``
    (bounds chosen after the charge; ``check``: the release's plan at any bounds) at
    :func:`grid_range`, the widest bounds the tuning can choose for them, at the smallest
    candidate ``(min(ks), min(cs))``.  Every check of the plan grows with ``k``, ``c`` and
    the bounds' width (a bound beyond exact int64 sums, a noise scale beyond the
    samplers'), so the smallest candidate passes at whatever bounds the tuning chooses:
    the search (:func:`dpfast.tables._tune_predict.search`, after the charge) always has
    a candidate to recommend and never refuses."""
    parts = _pred._statistics_parts()
    multi.plan_of(dataclasses.replace(spec, max_partitions=max(ks), max_per_partition=max(cs)),
                  source, parts)
    if not names:
        return
    wide = {n: grid_range(bool(check.metrics.columns[n].integer)) for n in names}
    k, c = min(ks), min(cs)
    try:
        multi.plan_of(dataclasses.replace(_pred.with_bounds(spec, wide), max_partitions=k,
                                          max_per_partition=c),
                      source, parts)
    except ValueError as e:
        raise ValueError(f"the smallest candidate (max_partitions={k}, max_per_partition="
                         f"{c}) with the bounds the tuning may choose for "
                         f"{', '.join(names)} (up to {wide}) cannot be released: {e}; "
                         "pass public bounds for them, or a larger epsilon") from None


def _wide(check: multi.MultiPlan, names: tuple[str, ...]) -> multi.MultiPlan:
    """``check`` with the columns ``names`` clamped only to their value grid's range
    (their bounds are chosen after the charge)."""
    cols = dict(check.metrics.columns)
    for name in names:
        col = cols[name]
        lo, hi = grid_range(bool(col.integer))
        cols[name] = dataclasses.replace(col, lo=lo, hi=hi)
    return dataclasses.replace(check, metrics=dataclasses.replace(check.metrics,
                                                                  columns=cols))


@dataclasses.dataclass(frozen=True)
class AutoTunePlan:
    """The plan of ``aggregate(..., max_partitions="auto")`` (or ``max_per_partition``, or
    a value column's bounds ``"auto"``): ``eps_h`` on the contribution summary, ``eps_b``
    on each ``"auto"`` column's value histogram, the rest on the release ``spec`` at the
    bounds the tuning recommends; the event ``Composed((Epsilon(eps_h), Epsilon(eps_b)...,
    (ε - share·ε, δ)))`` is known before any row is read.  The rows are validated (by the
    release's own plan, at any bounds: the checks do not depend on them; the ``"auto"``
    columns clamped to their grid's range only) before the charge."""

    spec: ReleaseSpec
    source: Any
    eps_h: float
    eps_b: float
    auto: tuple[str, ...]
    ks: tuple[int, ...]
    cs: tuple[int, ...]
    n_keys: int | None
    event: _events.DpEvent
    check: multi.MultiPlan
    spent: float

    def local_partials(self, rows: Rows, subkey: np.ndarray
                       ) -> tuple[Any, Any, _sum.Exact, list[Hist]]:
        cols = dict(rows.columns or {})
        check = _wide(self.check, self.auto)
        data, vals = check._validate(rows.keys, rows.privacy_ids,
                                     [cols[n] for n in check.used], rows.domain)
        if rows.key_names is not None:
            data.key_names = rows.key_names
        hists = []
        for name in self.auto:  # one value per person, as bounds="auto" pools them
            one = copy.copy(data)
            assert data.values is not None  # the rows the domain kept
            one.values = vals[name][data.values]
            integer = bool(check.metrics.columns[name].integer)
            g = _autobounds._grid_for(None, integer)
            kept = _autobounds.pooled(one, g, subkey, check.policy)
            hists.append((pooled_counts(kept, g), g, integer))
        return data, vals, _sum.exact(data, subkey), hists

    def finish(self, partials: tuple[Any, Any, _sum.Exact, list[Hist]],
               gen: _random.Generator, release_id: int | None) -> AggregateRelease:
        data, vals, ex, hists = partials
        summary = _sum.noisy(ex, self.eps_h, gen, self.n_keys)
        values = noisy_values(self.auto, hists, self.eps_b, gen)
        tuning = result(self.spec, self.source, summary, self.ks, self.cs, self.spent, None,
                        values)
        spec = dataclasses.replace(_pred.with_bounds(self.spec, {n: tuning.bounds[n]
                                                                 for n in self.auto}),
                                   max_partitions=tuning.max_partitions,
                                   max_per_partition=tuning.max_per_partition)
        plan = multi.plan_of(spec, self.source, _pred._statistics_parts())
        for name in self.auto:  # clamped to the chosen bounds (our own validated arrays)
            col = plan.metrics.columns[name]
            vals[name] = _inputs.clamp(vals[name], (col.lo, col.hi))
        rel = plan.finish(plan._bound(data, vals, bounding.subkey(gen)), gen, release_id)
        assert isinstance(rel, AggregateRelease)  # (an aggregate spec's plan: single None)
        rel.event = self.event  # the whole release: the tuning and the statistics
        for name, m in list(rel.metrics.items()):  # every metric states the whole event
            if dataclasses.is_dataclass(m):  # a QuantileRelease (frozen)
                rel.metrics[name] = dataclasses.replace(m, event=self.event)
            else:
                m.event = self.event
        tuning.event = self.event
        setattr(rel, "tuning", tuning)  # noqa: B010  (the bounds used: public, released)
        return rel


def default_share(n_bounds: int, share: Fraction = TUNE_SHARE) -> Fraction:
    """The tuning's share of ε by default: ``share`` per part (:func:`parts`);
    ValueError naming ``bounds`` when that reaches ε."""
    total = share * parts(n_bounds)
    if total >= 1:
        raise ValueError(f"{n_bounds} value columns without bounds: choosing their "
                         f"bounds would take {parts(n_bounds)} x {float(share)} of epsilon; "
                         "pass public bounds for some of them, or an explicit share")
    return total


def plan_auto(spec: ReleaseSpec, source: Source) -> AutoTunePlan:
    """The plan of an ``aggregate`` spec with ``max_partitions`` / ``max_per_partition``
    or a column's bounds ``"auto"`` (``spec.option("tune")``: ``(share per part, k auto,
    c auto, the "auto" columns)``); ValueError / TypeError naming the parameter, before
    any charge."""
    share, auto_k, auto_c, auto = spec.option("tune")
    if spec.rho is not None or spec.epsilon is None:
        raise ValueError("max_partitions='auto' (or bounds 'auto') needs epsilon (the "
                         "tuning is pure-DP), not rho")
    rows = _local(source)
    _pred.check_metrics(spec)
    eps_t, eps_rest = _autobounds.split(spec.epsilon, default_share(len(auto), share))
    eps_h, eps_b = split_tuning(eps_t, len(auto))
    options = tuple((n, v) for n, v in spec.options if n != "tune")
    rest = dataclasses.replace(spec, epsilon=eps_rest, options=options)
    check = multi.plan_of(rest, rows, _pred._statistics_parts())  # every public check
    if check.single is not None:
        raise ValueError("max_partitions='auto' is for dpfast.tables.aggregate")
    ks = _pred.K_GRID if auto_k else (spec.max_partitions,)
    cs = _pred.C_GRID if auto_c else (spec.max_per_partition,)
    # the candidates' plans too, the "auto" columns at their widest bounds (c times a bound
    # beyond exact int64 sums: refused now, not after the charge)
    check_widest(rest, rows, check, tuple(auto), ks, cs)
    event = _events.with_neighbouring(
        _events.Composed((*tuning_parts(eps_h, eps_b, len(auto)),
                          release_event(eps_rest, spec.delta))), _events.ADD_REMOVE)
    return AutoTunePlan(rest, rows, eps_h, eps_b, tuple(auto), ks, cs,
                        domain_size(rows.public_domain()), event, check, eps_t)
