"""The plans of the tuning (:class:`dpfast.tables.run.Plan`): :class:`TunePlan`
(:func:`dpfast.tables.tune` alone) and :class:`AutoTunePlan`
(``aggregate(..., max_partitions="auto")``: the tuning and the release under one event,
two phases as ``bounds="auto"``'s :class:`~dpfast.tables._autobounds.AutoPlan`).

Both events are known before any row is read (the shares are fixed fractions of the
stated ε, whatever bounds the tuning picks); the exact histograms are computed before the
charge (:meth:`local_partials`), the noise and every choice after it (:meth:`finish`).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.tables import _autobounds, _inputs, _keys, bounding, multi
from dpfast.tables import _tune_predict as _pred
from dpfast.tables import _tune_summary as _sum
from dpfast.tables._multi_release import AggregateRelease
from dpfast.tables._tune_result import TuneResult
from dpfast.tables.spec import ReleaseSpec

if TYPE_CHECKING:
    from dpfast import random as _random
    from dpfast.tables.run import Rows, Source

__all__ = ["TUNE_SHARE", "TunePlan", "AutoTunePlan", "plan_auto", "domain_size",
           "release_event", "split_tuning", "parts", "BOUNDS_PARTS"]

TUNE_SHARE = multi.TUNE_SHARE


def release_event(eps: float, delta: float) -> _events.DpEvent:
    """The release's part of a composed event: its stated target."""
    return _events.Epsilon(eps) if delta == 0.0 else _events.EpsilonDelta(eps, delta)


#: the parts of the tuning's ε each column without bounds takes (the histograms take one):
#: ``bounds="auto"``'s mechanism needs about ``(4 / ε_s) ln(m / α)`` people
#: (:mod:`dpfast.tables.autobounds`), far more than the histograms
BOUNDS_PARTS = 2


def parts(n_bounds: int) -> int:
    """The parts the tuning's ε is split into: one for the histograms,
    :data:`BOUNDS_PARTS` for each of ``n_bounds`` columns' bounds."""
    return 1 + BOUNDS_PARTS * n_bounds


def split_tuning(eps_t: float, n_bounds: int) -> tuple[float, float]:
    """``(ε of the histograms, ε of each column's bounds)``: one part and
    :data:`BOUNDS_PARTS` parts of ``eps_t / parts(n_bounds)``, rounded down."""
    e = Fraction(eps_t) / parts(n_bounds)
    return float_down(e), float_down(e * BOUNDS_PARTS)


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
        parts: list[_events.DpEvent] = [_events.Epsilon(self.eps_h)]
        parts += [_autobounds.bounds_event(self.eps_b) for _ in self.unbounded]
        one = parts[0] if len(parts) == 1 else _events.Composed(tuple(parts))
        return _events.with_neighbouring(one, _events.ADD_REMOVE)

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> tuple[_sum.Exact, list[Any]]:
        cols = dict(rows.columns or {})
        used = sorted({s.column for s in self.spec.statistics if s.column is not None})
        keys, ids, taken = _keys.drop_nulls(rows.keys, rows.privacy_ids,
                                            *[cols[c] for c in used])
        data, _ = _inputs._validate(keys, ids, None, None, rows.domain)
        pools = []
        for name in self.unbounded:
            one = type(rows)(cast(Any, keys), cast(Any, ids),
                             cast(Any, taken[used.index(name)]))
            pools.append(_autobounds._pooled_partials(one, subkey, None, rows.domain,
                                                      self.policy))
        return _sum.exact(data, subkey), pools

    def finish(self, partials: tuple[_sum.Exact, list[Any]], gen: _random.Generator,
               release_id: int | None) -> TuneResult:
        ex, pools = partials
        summary = _sum.noisy(ex, self.eps_h, gen, self.n_keys)
        chosen: dict[str, tuple[Any, Any]] = {}
        beyond: dict[str, float] = {}
        for name, (_d, g, integer, kept) in zip(self.unbounded, pools, strict=True):
            chosen[name], _ = _autobounds.choose(kept, g, self.eps_b,
                                                 _autobounds.DEFAULT_QUANTILES, gen, integer)
            # the clamping the mechanism states, from its ε, its grid and the DP people
            beyond[name] = _pred.outside(self.eps_b, int(g.shape[0]), summary.people,
                                         _autobounds.DEFAULT_QUANTILES[0])
        return result(self.spec, self.source, summary, chosen, self.ks, self.cs,
                      self.spent, self.event, beyond)


def with_bounds(spec: ReleaseSpec, chosen: dict[str, tuple[Any, Any]]) -> ReleaseSpec:
    """``spec`` with the ``chosen`` bounds added to its own."""
    assert not isinstance(spec.bounds, str)
    have = {c: (lo, hi) for c, lo, hi in spec.bounds or ()}
    have.update(chosen)
    return dataclasses.replace(spec, bounds=tuple(sorted((c, lo, hi)
                                                         for c, (lo, hi) in have.items())))


def result(spec: ReleaseSpec, source: Source, summary: _sum.Summary,
           chosen: dict[str, tuple[Any, Any]], ks: tuple[int, ...], cs: tuple[int, ...],
           spent: float, event: _events.DpEvent | None,
           beyond: dict[str, float] | None = None) -> TuneResult:
    """The search and its result (post-processing of the summary and the bounds;
    ``beyond``: the fraction of the people predicted beyond each chosen bound)."""
    full = with_bounds(spec, chosen)
    best, table = _pred.search(full, source, summary, ks, cs, beyond)
    assert not isinstance(full.bounds, str)
    bounds = {c: (lo, hi) for c, lo, hi in full.bounds or ()}
    return TuneResult(best.max_partitions, best.max_per_partition, bounds,  # type: ignore[arg-type]
                      best.predictions, table, spent, float(spec.epsilon or 0.0), event,
                      summary, dict(beyond or {}))


@dataclasses.dataclass(frozen=True)
class AutoTunePlan:
    """The plan of ``aggregate(..., max_partitions="auto")``: ``eps_h`` (:data:`TUNE_SHARE`
    of ε) on the contribution summary, the rest on the release ``spec`` at the bounds the
    summary recommends; the event ``Composed((Epsilon(eps_h), (ε - eps_h, δ)))`` is known
    before any row is read.  The rows are validated (by the release's own plan, at any
    bounds: the checks do not depend on them) before the charge."""

    spec: ReleaseSpec
    source: Any
    eps_h: float
    ks: tuple[int, ...]
    cs: tuple[int, ...]
    n_keys: int | None
    event: _events.DpEvent
    check: multi.MultiPlan

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> tuple[Any, Any, _sum.Exact]:
        cols = dict(rows.columns or {})
        data, vals = self.check._validate(rows.keys, rows.privacy_ids,
                                          [cols[n] for n in self.check.used], rows.domain)
        if rows.key_names is not None:
            data.key_names = rows.key_names
        return data, vals, _sum.exact(data, subkey)

    def finish(self, partials: tuple[Any, Any, _sum.Exact], gen: _random.Generator,
               release_id: int | None) -> AggregateRelease:
        data, vals, ex = partials
        summary = _sum.noisy(ex, self.eps_h, gen, self.n_keys)
        tuning = result(self.spec, self.source, summary, {}, self.ks, self.cs, self.eps_h,
                        None)
        spec = dataclasses.replace(self.spec, max_partitions=tuning.max_partitions,
                                   max_per_partition=tuning.max_per_partition)
        plan = multi.plan_of(spec, self.source, _pred._statistics_parts())
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


def plan_auto(spec: ReleaseSpec, source: Source) -> AutoTunePlan:
    """The plan of an ``aggregate`` spec with ``max_partitions`` / ``max_per_partition``
    ``"auto"`` (``spec.option("tune")``: ``(share, k auto, c auto)``); ValueError /
    TypeError naming the parameter, before any charge."""
    share, auto_k, auto_c = spec.option("tune")
    if spec.rho is not None or spec.epsilon is None:
        raise ValueError("max_partitions='auto' needs epsilon (the tuning is pure-DP), "
                         "not rho")
    rows = _local(source)
    _pred.check_metrics(spec)
    eps_h, eps_rest = _autobounds.split(spec.epsilon, Fraction(share))
    options = tuple((n, v) for n, v in spec.options if n != "tune")
    rest = dataclasses.replace(spec, epsilon=eps_rest, options=options)
    check = multi.plan_of(rest, rows, _pred._statistics_parts())  # every public check
    if check.single is not None:
        raise ValueError("max_partitions='auto' is for dpfast.tables.aggregate")
    ks = _pred.K_GRID if auto_k else (spec.max_partitions,)
    cs = _pred.C_GRID if auto_c else (spec.max_per_partition,)
    # the largest candidate's plan too (c times a bound beyond exact int64 sums: refused
    # now, not after the charge)
    multi.plan_of(dataclasses.replace(rest, max_partitions=max(ks), max_per_partition=max(cs)),
                  rows, _pred._statistics_parts())
    event = _events.with_neighbouring(
        _events.Composed((_events.Epsilon(eps_h), release_event(eps_rest, spec.delta))),
        _events.ADD_REMOVE)
    return AutoTunePlan(rest, rows, eps_h, ks, cs, domain_size(rows.public_domain()),
                        event, check)
