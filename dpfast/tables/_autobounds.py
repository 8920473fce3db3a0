"""The plans of ``bounds="auto"`` (:mod:`dpfast.tables.autobounds`): private clamping
bounds, alone (:class:`BoundsPlan`, :func:`dpfast.tables.auto_bounds`) or as the first
phase of a ``sum`` / ``mean`` release (:class:`AutoPlan`, :func:`plan_auto`), both run by
:func:`dpfast.tables.run.release`.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import TYPE_CHECKING, cast

import numpy as np

from dpfast import random as _random
from dpfast._core.rounding import float_down
from dpfast._core.validate import check_real
from dpfast.accounting import events as _events
from dpfast.tables import _bounds_em as _bem
from dpfast.tables import _inputs, _keys, _plan, _select, bounding, groupby, keynoise
from dpfast.tables import _quantile_em as _em

if TYPE_CHECKING:
    import numpy.typing as npt

    from dpfast.tables.release import TableRelease
    from dpfast.tables.run import Rows, Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["AutoBounds", "AUTO_SHARE", "default_grid", "BoundsPlan", "AutoPlan", "plan_auto",
           "split", "bounds_event", "choose", "pooled"]

#: share of ε that ``bounds="auto"`` spends on choosing the bounds
AUTO_SHARE = Fraction(1, 10)
DEFAULT_QUANTILES = (0.01, 0.99)


def default_grid(integer: bool) -> np.ndarray:
    """The public grid of signed powers of two (see the module docstring)."""
    e = np.arange(0, 41) if integer else np.arange(-30, 63)
    pos = np.ldexp(1.0, e)
    return np.concatenate([-pos[::-1], [0.0], pos])


@dataclasses.dataclass(frozen=True)
class AutoBounds:
    """Privately chosen clamping bounds ``(lo, hi)`` and the event that paid for them.

    ``scale``: the released interval of the median magnitude; ``centre``: the released
    centre interval (consecutive candidates); ``penalty``: ``s``, the ranks per candidate
    step of the base measure."""

    lo: float
    hi: float
    quantiles: tuple[float, float]
    epsilon: float
    event: _events.DpEvent
    sensitivity: int = 1  # pooled rows one person may hold (one)
    n_candidates: int = 1
    centre: tuple[float, float] = (0.0, 0.0)
    penalty: int = 1
    scale: tuple[float, float] = (0.0, 0.0)

    @property
    def bounds(self) -> tuple[float, float]:
        return (self.lo, self.hi)

    def rank_error(self, alpha: float = 0.05) -> int:
        """``r``: with probability ``1 - alpha`` (per bound) the bound's rank distance to
        ``floor(q n)`` among the pooled kept rows exceeds that of the grid point whose rank
        is nearest it by at most ``r + s·(steps the bound lies closer to the centre than that
        point)`` (McSherry & Talwar 2007, Thm 6, with the base measure: ``v_p = u_p - s d_p``
        is within ``r`` of its maximum).  Useful when it is well below ``q_lo n``.

        A worst-case bound (conservative): it holds whatever the data, a union bound over
        all ``n_candidates`` grid points (docs/benchmarks.md, "Interval coverage")."""
        return _em.rank_error(_bem.split(self.epsilon)[2], self.sensitivity,
                              self.n_candidates, alpha)

    def steps_beyond(self, alpha: float = 0.05) -> int:
        """``j``: with probability ``1 - alpha`` (per bound) the bound is at most ``j`` grid
        steps farther from :attr:`centre` than the grid point of largest rank utility
        nearest it (on the default grid a step is an octave: ``j = 5`` at 0.05).  Does not
        depend on ``n``, ``ε`` or the grid's size
        (:func:`dpfast.tables._bounds_em.steps_beyond`)."""
        return _bem.steps_beyond(alpha)


def _check_quantiles(quantiles: object) -> tuple[float, float]:
    if not isinstance(quantiles, (tuple, list)) or len(quantiles) != 2:
        raise TypeError("quantiles must be a pair (q_lo, q_hi)")
    lo, hi = (check_real(q, f"quantiles[{j}]") for j, q in enumerate(quantiles))
    if not 0.0 <= lo < hi <= 1.0:
        raise ValueError(f"quantiles must satisfy 0 <= q_lo < q_hi <= 1, got {quantiles!r}")
    return float(lo), float(hi)


def _grid_for(candidates: object, integer: bool) -> np.ndarray:
    g = default_grid(integer) if candidates is None else _em.grid(None, 1, candidates, False)
    if integer:
        g = np.unique(np.round(g))
    return g


def bounds_event(eps_b: float) -> _events.DpEvent:
    """Event of choosing the bounds with ``eps_b``: four exponential mechanisms, scale and
    centre at ``eps_b / 6``, lo and hi at ``eps_b / 3`` (rounded down)."""
    return _bem.event(eps_b)


def pooled(data: _inputs._Data, g: np.ndarray, subkey: np.ndarray, policy: int = 0
           ) -> np.ndarray:
    """The pooled rows the bounds are chosen from, before the charge: one row per person
    (``k = c = 1``: the same keyed choice as the release's bounding, ``subkey`` its
    bounding sub-key), each as one int64 ``(grid slot, magnitude slot)``."""
    assert data.values is not None
    h = _bem.magnitudes(g)
    slots = _em.slots_of(data.values, g)
    mags = _em.slots_of(np.clip(np.abs(data.values), h[0], h[-1]), h)
    both = slots * (2 * h.shape[0]) + mags  # one int64 per row: (slot, magnitude slot)
    _, kept = _em.bound_slots(data.codes, data.ids, 1, 1, subkey, both, policy)
    return kept


def choose(kept: np.ndarray, g: np.ndarray, eps_b: float, qs: tuple[float, float],
           gen: _random.Generator, integer: bool
           ) -> tuple[tuple[int | float, int | float], _bem.Choice]:
    """The private ``(lo, hi)`` of the pooled rows ``kept`` (:func:`pooled`) and the
    mechanism's choice (scale and centre too).  Draws one release stream of ``gen``:
    call it after the charge."""
    h = _bem.magnitudes(g)
    rkey = keynoise.release_key(gen._key, keynoise.release_stream(gen))
    ch = _bem.choose(kept // (2 * h.shape[0]), kept % (2 * h.shape[0]), g, 1, eps_b, qs,
                     rkey)
    a, b = sorted((ch.lo, ch.hi))  # post-processing: an ordered pair
    if a == b:  # a point: widen to the next grid point (never zero sensitivity)
        if b + 1 < g.shape[0]:
            b += 1
        elif a > 0:
            a -= 1
    lo, hi = float(g[a]), float(g[b])
    return ((int(lo), int(hi)) if integer else (lo, hi)), ch


def _prepare(values: npt.ArrayLike | None, keys: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None,
             privacy_ids: object, candidates: object, domain: object
             ) -> tuple[_inputs._Data, np.ndarray, bool]:
    if values is None:
        raise TypeError("values must be an array of numbers, got None")
    if keys is None:
        shape = np.shape(values)
        keys = np.zeros(shape[0] if len(shape) == 1 else 0, np.int64)
    # the NULL policy: rows with a missing key, id or value leave first
    keys_in, ids_in, (values_in,) = _keys.drop_nulls(keys, privacy_ids, values)
    keys = cast("npt.ArrayLike", keys_in)  # the same kinds, NULL rows dropped
    privacy_ids = ids_in
    raw = _inputs.as_numbers(values_in)
    integer = raw.dtype.kind in "iu"
    g = _grid_for(candidates, integer)
    wide: tuple[int, int] | tuple[float, float] = (
        (int(g[0]), int(g[-1])) if integer else (float(g[0]), float(g[-1])))
    values = raw
    data, _ = _inputs._validate(keys, privacy_ids, values, wide, domain)
    return data, g, integer


def split(epsilon: object, share: Fraction = AUTO_SHARE) -> tuple[float, float]:
    """``(ε for the bounds, ε for the statistic)``, both rounded down (they sum to at most
    ``ε``)."""
    eps = Fraction(check_real(epsilon, "epsilon"))
    eps_b = float_down(eps * share)
    return eps_b, float_down(eps - Fraction(eps_b))


# ----------------------------------------------------------------------------- plans
Pooled = tuple[_inputs._Data, np.ndarray, bool, np.ndarray]


def _pooled_partials(rows: Rows, subkey: np.ndarray, candidates: object, domain: object,
                     policy: int) -> Pooled:
    """Validate the rows (values clamped to the grid's range) and pool one row per
    person (before the charge)."""
    data, g, integer = _prepare(rows.values, rows.keys, rows.privacy_ids, candidates,
                                domain)
    return data, g, integer, pooled(data, g, subkey, policy)


@dataclasses.dataclass(frozen=True)
class BoundsPlan:
    """The plan of :func:`auto_bounds` (:class:`dpfast.tables.run.Plan`): its event is
    the bounds' alone (four exponential mechanisms at ``epsilon``)."""

    epsilon: float
    quantiles: tuple[float, float]
    candidates: np.ndarray | None = None

    @property
    def event(self) -> _events.DpEvent:
        return _events.with_neighbouring(bounds_event(self.epsilon), _events.ADD_REMOVE)

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> Pooled:
        return _pooled_partials(rows, subkey, self.candidates, None, 0)

    def finish(self, partials: Pooled, gen: _random.Generator, release_id: int | None
               ) -> AutoBounds:
        _data, g, integer, kept = partials
        eps = self.epsilon
        (lo, hi), ch = choose(kept, g, eps, self.quantiles, gen, integer)
        return AutoBounds(lo, hi, self.quantiles, eps, self.event, 1, int(g.shape[0]),
                          ch.centre, _bem.penalty(_bem.split(eps)[2], 1), ch.scale)


@dataclasses.dataclass(frozen=True)
class AutoPlan:
    """The plan of ``tables.sum`` / ``tables.mean`` with ``bounds="auto"``
    (:class:`dpfast.tables.run.Plan`), two phases under one event: ``AUTO_SHARE`` of ε
    chooses the bounds, the rest releases the statistic with them.  The event is
    ``Composed((bounds event, statistic event))``, known before any row is read; the
    pooled rows are computed before the charge (:meth:`local_partials`), both phases run
    after it (:meth:`finish`: the bounds, then the statistic on the rows clamped to
    them)."""

    stat: str
    k: int
    c: int
    eps_b: float
    priv: _plan.Privacy
    event: _events.DpEvent
    selection: str
    bounding: str
    policy: int

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> Pooled:
        return _pooled_partials(rows, subkey, None, rows.domain, self.policy)

    def finish(self, partials: Pooled, gen: _random.Generator, release_id: int | None
               ) -> TableRelease:
        data, g, integer, kept = partials
        bnd, _choice = choose(kept, g, self.eps_b, DEFAULT_QUANTILES, gen, integer)
        assert data.values is not None
        data.values = np.clip(data.values, bnd[0], bnd[1])  # our own array (validated copy)
        k, c = self.k, self.c
        p = groupby._make_plan(self.stat, k, c, self.priv, bnd, integer, self.selection,
                               self.bounding)
        agg = bounding.bound_codes(data.codes, data.n_codes, data.ids, k, c,
                                   bounding.subkey(gen), groupby.summands(p, data.values),
                                   groupby.fixed_exp(p), p.bounding,
                                   _select.unit_weights(p.select))
        rel = groupby.release(p, data, agg, gen, release_id)
        rel.event = self.event  # the whole release: bounds and statistic
        # the chosen bounds (public: released) -- an attribute of this release only
        setattr(rel, "bounds", bnd)  # noqa: B010
        rel.sensitivity["bounds_lo"] = float(bnd[0])
        rel.sensitivity["bounds_hi"] = float(bnd[1])
        rel.sensitivity["bounds_epsilon"] = self.eps_b
        return rel


def plan_auto(stat: str, spec: ReleaseSpec, rows: Source) -> AutoPlan:
    """The plan of a ``sum`` / ``mean`` ``spec`` with ``bounds="auto"`` over ``rows``
    (see :class:`AutoPlan`); ValueError / TypeError naming the parameter."""
    if spec.rho is not None:
        raise ValueError("bounds='auto' needs epsilon (its quantiles are pure-DP), not rho")
    if not hasattr(rows, "values"):  # a cluster's rows: no bounds="auto" (as before)
        raise TypeError("bounds must be a pair (lo, hi)")
    if rows.values is None:
        raise TypeError("values must be an array of numbers, got None")
    k, c = groupby._common(spec.max_partitions, spec.max_per_partition,
                           True if rows.has_privacy_ids() else None)
    eps_b, eps_rest = split(spec.epsilon)
    select = spec.domain is None
    priv = _plan.privacy(eps_rest, spec.delta, None, spec.noise, select=select)
    _select.resolve(spec.selection)  # checked before the charge (the statistic's plan)
    policy = bounding.policy_code(spec.bounding)
    rest: _events.DpEvent = (_events.Epsilon(eps_rest) if priv.delta == 0.0
                 else _events.EpsilonDelta(eps_rest, priv.delta))
    event = _events.with_neighbouring(_events.Composed((bounds_event(eps_b), rest)),
                                      _events.ADD_REMOVE)
    return AutoPlan(stat, k, c, eps_b, priv, event, spec.selection, spec.bounding, policy)
