"""``bounds="auto"``: clamping bounds chosen by private quantiles, at a stated share of ε.

:func:`auto_bounds` releases ``(lo, hi)`` alone (reusable by any bounded statistic);
:func:`run_auto` is what :func:`dpfast.tables.sum` / :func:`~dpfast.tables.mean` do with
``bounds="auto"``: ``AUTO_SHARE`` (10%) of ε picks the bounds, the rest releases the
statistic with them, and the composed event is charged once, before anything is drawn.

The bounds are the ``quantiles`` (default the 1st and 99th percentiles) of the pooled rows:
one row per person (with privacy ids: the release's keyed bounding at ``k = c = 1``, its
bounding policy; without: every row), so one person moves any rank by at most 1 (pooling
``k c`` rows per person instead gives ``k c`` times the rows but ``k c`` times the
sensitivity: never a better signal).  On a public grid: the signed powers of two
``0, ±2**e`` (``e`` in ``[-30, 62]`` for floats, ``[0, 40]`` for integers) unless
``candidates`` are given.  The mechanism (:mod:`dpfast.tables._bounds_em`): a private
*scale* (the median magnitude's octave, ε_b/6), which sets the candidates (0 and the grid
points of magnitude at least ``2**-8`` times it), a private *centre* interval of them (the
mid quantile, ε_b/6), then each bound by the exponential mechanism whose base measure
decays by at least ``λ = 1`` nat per candidate step away from the centre (ε_b/3 each).
The base measure is data-independent (it does not change the sensitivity); it makes the
candidates beyond the data, which all tie on rank, exponentially unlikely the farther out
they are, where the plain mechanism picked uniformly among them (measured before:
``lo = -1.8e13`` for N(50, 10) at 2·10⁵ rows).

Guarantee (:meth:`AutoBounds.steps_beyond`, :meth:`AutoBounds.rank_error`): with
probability ``1 - α`` each bound is at most ``j(α)`` candidate steps (``j = 5`` at
α = 0.05; on the default grid: octaves) farther from the centre than the candidate whose
rank is nearest the target, and its rank error exceeds that candidate's by at most
``r(α) + s·(steps it lies closer to the centre)`` (``s = ceil(2/ε_q)`` ranks per step,
``ε_q = ε_b / 3``).  The scale and the centre are right when ``n`` (people, or rows
without privacy ids) is well above ``(4/ε_s) ln(m/α)`` (``ε_s = ε_b / 6``: about 1,800 at
ε = 1); with fewer, a weak data-independent prior (0.1 nat a step towards 0) decides them
and the bounds fall near 0 (narrow: clamping bias; measured for N(50, 10) at 1,000 rows and
ε_b = 0.1: 74% near 0, 4.5% beyond 10⁴).  With a weak rank signal the base measure
pulls each bound towards the centre (tighter bounds, more clamping), never out to the far
plateau.  Pass public ``bounds`` when the range is known.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast._core.rounding import float_down
from dpfast._core.validate import check_real
from dpfast.accounting import events as _events
from dpfast.random import RngLike
from dpfast.tables import _bounds_em as _bem
from dpfast.tables import _inputs, _keys, _plan, _usecase, bounding, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables._charge import charged

__all__ = ["auto_bounds", "AutoBounds", "AUTO_SHARE", "default_grid"]

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
    event: Any
    sensitivity: int = 1  # pooled rows one person may hold (one)
    n_candidates: int = 1
    centre: tuple[float, float] = (0.0, 0.0)
    penalty: int = 1
    scale: tuple[float, float] = (0.0, 0.0)

    @property
    def bounds(self) -> tuple[Any, Any]:
        return (self.lo, self.hi)

    def rank_error(self, alpha: float = 0.05) -> int:
        """``r``: with probability ``1 - alpha`` (per bound) the bound's rank distance to
        ``floor(q n)`` among the pooled kept rows exceeds that of the grid point whose rank
        is nearest it by at most ``r + s·(steps the bound lies closer to the centre than that
        point)`` (McSherry & Talwar 2007, Thm 6, with the base measure: ``v_p = u_p - s d_p``
        is within ``r`` of its maximum).  Useful when it is well below ``q_lo n``."""
        return _em.rank_error(_bem.split(self.epsilon)[2], self.sensitivity,
                              self.n_candidates, alpha)

    def steps_beyond(self, alpha: float = 0.05) -> int:
        """``j``: with probability ``1 - alpha`` (per bound) the bound is at most ``j`` grid
        steps farther from :attr:`centre` than the grid point of largest rank utility
        nearest it (on the default grid a step is an octave: ``j = 5`` at 0.05).  Does not
        depend on ``n``, ``ε`` or the grid's size
        (:func:`dpfast.tables._bounds_em.steps_beyond`)."""
        return _bem.steps_beyond(alpha)


def _check_quantiles(quantiles: Any) -> tuple[float, float]:
    if not isinstance(quantiles, (tuple, list)) or len(quantiles) != 2:
        raise TypeError("quantiles must be a pair (q_lo, q_hi)")
    lo, hi = (check_real(q, f"quantiles[{j}]") for j, q in enumerate(quantiles))
    if not 0.0 <= lo < hi <= 1.0:
        raise ValueError(f"quantiles must satisfy 0 <= q_lo < q_hi <= 1, got {quantiles!r}")
    return float(lo), float(hi)


def _grid_for(candidates: Any, integer: bool) -> np.ndarray:
    g = default_grid(integer) if candidates is None else _em.grid(None, 1, candidates, False)
    if integer:
        g = np.unique(np.round(g))
    return g


def bounds_event(eps_b: float) -> Any:
    """Event of choosing the bounds with ``eps_b``: four exponential mechanisms, scale and
    centre at ``eps_b / 6``, lo and hi at ``eps_b / 3`` (rounded down)."""
    return _bem.event(eps_b)


def choose(data: _inputs._Data, g: np.ndarray, k: int, c: int, eps_b: float,
           qs: tuple[float, float], gen: _random.Generator, integer: bool,
           policy: int = 0) -> tuple[tuple[Any, Any], _bem.Choice]:
    """The private ``(lo, hi)`` of the validated rows (values clamped to the grid's range)
    and the mechanism's choice (scale and centre too).  Draws one release stream of
    ``gen``: call it after the charge."""
    assert data.values is not None
    h = _bem.magnitudes(g)
    slots = _em.slots_of(data.values, g)
    mags = _em.slots_of(np.clip(np.abs(data.values), h[0], h[-1]), h)
    both = slots * (2 * h.shape[0]) + mags  # one int64 per row: (slot, magnitude slot)
    # one row per person (k = c = 1: the same keyed choice as the release's bounding)
    _, kept = _em.bound_slots(data.codes, data.ids, 1, 1, bounding.subkey(gen), both,
                              policy)
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


def _prepare(values: Any, keys: Any, privacy_ids: Any, candidates: Any, domain: Any
             ) -> tuple[_inputs._Data, np.ndarray, bool]:
    if values is None:
        raise TypeError("values must be an array of numbers, got None")
    if keys is None:
        shape = np.shape(values)
        keys = np.zeros(shape[0] if len(shape) == 1 else 0, np.int64)
    # the NULL policy: rows with a missing key, id or value leave first
    keys, privacy_ids, (values,) = _keys.drop_nulls(keys, privacy_ids, values)
    raw = _inputs.as_numbers(values)
    integer = raw.dtype.kind in "iu"
    g = _grid_for(candidates, integer)
    wide: Any = (int(g[0]), int(g[-1])) if integer else (float(g[0]), float(g[-1]))
    values = raw
    data, _ = _inputs._validate(keys, privacy_ids, values, wide, domain)
    return data, g, integer


def auto_bounds(values: Any, keys: Any = None, privacy_ids: Any = None, *,
                epsilon: float, quantiles: tuple[float, float] = DEFAULT_QUANTILES,
                max_partitions: int = 1, max_per_partition: int = 1,
                candidates: Any = None, rng: RngLike = None, budget: Any = None,
                note: str = "") -> AutoBounds:
    """Choose clamping bounds privately: the ``quantiles`` of all rows (pooled).

    Parameters
    ----------
    values : array_like
        One number per row.
    keys, privacy_ids, max_partitions, max_per_partition
        The rows and bounding of the release the bounds are for (as in
        :func:`dpfast.tables.sum`); the pooled rows are one per person (``k = c = 1``
        of that bounding), whatever ``max_partitions`` / ``max_per_partition`` (still
        validated).  ``keys=None``: one key.
    epsilon : float
        Spent on the scale and the centre (``epsilon / 6`` each) and the two bounds
        (``epsilon / 3`` each).
    quantiles : (float, float)
        ``(q_lo, q_hi)`` with ``0 <= q_lo < q_hi <= 1``.
    candidates : array_like, optional
        The public grid (default :func:`default_grid`: signed powers of two).
    rng, budget, note
        As in :func:`dpfast.tables.count` (``budget`` charged with :attr:`AutoBounds.event`).

    Returns
    -------
    AutoBounds
        ``.lo <= .hi`` (``lo < hi``: a single chosen point is widened to the next grid
        point), ``.event``.

    Privacy
    -------
    ``epsilon``-DP under add/remove one person.  After bounding (one row per person) the
    pooled rows change by at most one, so ``n``, the rows below / at most any grid point
    or magnitude, and ``t = floor(q n)`` move by at most ``Δ = 1``, and every rank utility
    ``-max(a - t, t - b, 0)`` (of a point or an interval) by at most 1.  Steps 1 and 2
    (scale, centre) are exponential mechanisms at ``ε/6`` each (rounded down), their weak
    priors towards 0 public, the centre's candidates depending only on the released scale;
    given scale and centre, each bound is the exponential mechanism at ``ε_q = ε/3`` over
    the candidates with the base measure ``μ_p ∝ exp(-ε_q s d_p / 2)``, ``d_p`` the
    candidate steps from ``p`` to the centre: public values only (grid, ``ε``, scale,
    centre), so for neighbours ``x, x'``
    ``P(p | x) / P(p | x') = e^{c (u_p(x) - u_p(x'))} Z(x') / Z(x) <= e^{c} e^{c}
    = e^{ε_q}`` with ``c = ε_q / 2`` and ``Z = Σ_q μ_q e^{c u_q}`` (McSherry & Talwar
    2007, whose proof holds for any data-independent base measure).  Adaptive composition:
    ``2 ε/6 + 2 ε/3 <= ε``; event ``Composed((SelfComposed(Exponential(ε/6), 2),
    SelfComposed(Exponential(ε/3), 2)))`` (each also bounded-range at its ε).  Sorting
    and widening the pair is post-processing.

    Notes
    -----
    Accuracy, per bound, with probability ``1 - α``: at most :meth:`AutoBounds.steps_beyond`
    grid steps farther from the centre than the grid point of largest rank utility, and a
    rank error at most :meth:`AutoBounds.rank_error` beyond that point's, plus
    ``s`` per step it lies closer to the centre.
    """
    qs = _check_quantiles(quantiles)
    k = bounding.positive_int(max_partitions, "max_partitions")
    c = bounding.positive_int(max_per_partition, "max_per_partition")
    if privacy_ids is None:
        k = c = 1
    eps = check_real(epsilon, "epsilon")
    if not 0.0 < eps < float("inf"):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if not isinstance(note, str):
        raise TypeError(f"note must be a str, got {type(note).__name__}")
    gen, _rid = keynoise.release_generator(rng)
    data, g, integer = _prepare(values, keys, privacy_ids, candidates, None)
    event = _events.with_neighbouring(bounds_event(eps), _events.ADD_REMOVE)
    with charged(budget, event, note):
        (lo, hi), ch = choose(data, g, k, c, eps, qs, gen, integer)
    return AutoBounds(lo, hi, qs, float(eps), event, 1, int(g.shape[0]), ch.centre,
                      _bem.penalty(_bem.split(eps)[2], 1), ch.scale)


def split(epsilon: Any, share: Fraction = AUTO_SHARE) -> tuple[float, float]:
    """``(ε for the bounds, ε for the statistic)``, both rounded down (they sum to at most
    ``ε``)."""
    eps = Fraction(check_real(epsilon, "epsilon"))
    eps_b = float_down(eps * share)
    return eps_b, float_down(eps - Fraction(eps_b))


def run_auto(stat: str, keys: Any, privacy_ids: Any, values: Any, *, epsilon: Any,
             delta: Any, rho: Any, max_partitions: Any, max_per_partition: Any, domain: Any,
             noise: Any, rng: Any, budget: Any, note: Any, use_case: str | None,
             dropna: bool, selection: Any = "auto", bounding_policy: Any = "uniform") -> Any:
    """``tables.sum`` / ``tables.mean`` with ``bounds="auto"`` (see the module docstring):
    the release's event is ``Composed((bounds event, statistic event))``, charged once."""
    from dpfast.tables import groupby as aggregate  # the release pipeline (lazy: it imports this)

    if rho is not None:
        raise ValueError("bounds='auto' needs epsilon (its quantiles are pure-DP), not rho")
    if values is None:
        raise TypeError("values must be an array of numbers, got None")
    # the NULL policy (whatever dropna): rows with a missing key, id or value leave first
    keys, privacy_ids, (values,) = _keys.drop_nulls(keys, privacy_ids, values)
    k, c = aggregate._common(max_partitions, max_per_partition, privacy_ids)
    _plan.privacy(epsilon, delta, None, noise, select=domain is None)  # validates all
    eps_b, eps_rest = split(epsilon)
    priv = _plan.privacy(eps_rest, delta, None, noise, select=domain is None)
    aggregate._check_budget(budget, note)
    gen, rid = keynoise.release_generator(rng)
    data, g, integer = _prepare(values, keys, privacy_ids, None, domain)
    rest: Any = (_events.Epsilon(eps_rest) if priv.delta == 0.0
                 else _events.EpsilonDelta(eps_rest, priv.delta))
    event = _events.with_neighbouring(_events.Composed((bounds_event(eps_b), rest)),
                                      _events.ADD_REMOVE)
    _usecase.check(use_case, priv.epsilon, priv.delta, priv.rho)
    with charged(budget, event, note):
        bnd, _choice = choose(data, g, k, c, eps_b, DEFAULT_QUANTILES, gen, integer,
                              bounding.policy_code(bounding_policy))
        assert data.values is not None
        data.values = np.clip(data.values, bnd[0], bnd[1])  # our own array (validated copy)
        p = aggregate._make_plan(stat, k, c, priv, bnd, integer, selection, bounding_policy)
        agg = bounding.bound_codes(data.codes, data.n_codes, data.ids, k, c,
                                   bounding.subkey(gen), aggregate.summands(p, data.values),
                                   aggregate.fixed_exp(p), p.bounding)
        rel = aggregate.release(p, data, agg, gen, rid)
    rel.event = event  # the whole release: bounds and statistic
    # the chosen bounds (public: released) -- an attribute of this release only
    setattr(rel, "bounds", bnd)  # noqa: B010
    rel.sensitivity["bounds_lo"] = float(bnd[0])
    rel.sensitivity["bounds_hi"] = float(bnd[1])
    rel.sensitivity["bounds_epsilon"] = eps_b
    return rel
