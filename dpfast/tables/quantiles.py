"""Per-key quantile, median, min and max releases (exponential mechanism on a public grid).

Pipeline (as :mod:`dpfast.tables.groupby`): validate -> plan (grid, per-key ε, event;
data-independent) -> bound (rows kept per person: ``k`` keys, ``c`` rows per key) ->
aggregate (the sparse ``(key, grid slot)`` table and the number of people per key) -> charge
-> select keys (``domain=None``: :func:`select_keys`, the unit-count rules of
:mod:`dpfast.tables._select`) ->
sample (:func:`dpfast.tables._quantile_em.sample`) -> :class:`QuantileRelease`.
:func:`plan` / :func:`table_of` / :func:`release` are shared with :mod:`dpfast.dask`.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from dpfast import random as _random
from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.random import RngLike
from dpfast.tables import _keys, _plan, _select, bounding, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables import bounding as bounding_mod
from dpfast.tables._charge import charged
from dpfast.tables._inputs import _Data, _validate
from dpfast.tables.quantile_release import QuantileRelease

__all__ = ["quantile", "median", "min", "max", "QuantileRelease"]

#: share of ε spent on selecting the keys when ``domain=None`` (the rest on the quantiles)
SELECTION_SHARE = Fraction(1, 2)


# ----------------------------------------------------------------------------- plan
def _quantiles(q: Any) -> tuple[tuple[float, ...], bool]:
    """(the quantiles as floats, scalar input)."""
    scalar = np.ndim(q) == 0
    arr = np.atleast_1d(np.asarray(q))
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"q must be a number or a sequence of numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"q must be a number or a non-empty 1-D sequence, got shape {arr.shape}")
    f = arr.astype(np.float64)
    if not ((f >= 0) & (f <= 1)).all():
        raise ValueError(f"q must be in [0, 1], got {q!r}")
    return tuple(float(x) for x in f), scalar


@dataclasses.dataclass
class Plan:
    """The data-independent part of a quantile release."""

    qs: tuple[float, ...]
    scalar: bool
    k: int
    c: int
    bnd: Any
    grid: np.ndarray
    priv: _plan.Privacy
    eps_q: float  # ε of one (key, quantile) exponential mechanism
    select: _select.Selection | None  # the key selection on unit counts (domain=None)
    event: Any
    gen: _random.Generator
    release_id: int | None
    integer: bool
    policy: int = 0  # bounding.policy_code of the bounding policy


def plan(qs: tuple[float, ...], scalar: bool, k: int, c: int, bnd: Any, integer: bool,
         n_candidates: Any, candidates: Any, epsilon: Any, delta: Any, select: bool,
         gen: _random.Generator, release_id: int | None, selection: Any = "auto",
         bounding_policy: Any = "uniform") -> Plan:
    """Grid, budget split and event (nothing here looks at the data)."""
    pol = bounding.policy_code(bounding_policy)
    priv = _plan.privacy(epsilon, delta, None, None, select)
    assert priv.epsilon is not None
    g = _em.grid(bnd, n_candidates, candidates, integer)
    eps = Fraction(priv.epsilon)
    sel = None
    if select:
        sel_eps = float_down(eps * SELECTION_SHARE)
        sel = _select.plan(sel_eps, priv.delta, k, selection)
        eps = eps - Fraction(sel_eps)
    m = k * len(qs)
    eps_q = float_down(eps / m)
    by_zcdp = False
    if not select and priv.delta > 0 and m > 1:  # delta to spend: zCDP composition
        eps_z = zcdp_share(float(eps), priv.delta, m)
        if eps_z > eps_q:
            eps_q, by_zcdp = eps_z, True
    if not eps_q > 0:
        raise ValueError(f"epsilon {epsilon!r} split over {k} keys x {len(qs)} quantiles "
                         "underflows")
    if select:
        assert sel is not None
        event: Any = _events.EpsilonDelta(priv.epsilon, sel.delta)
    elif by_zcdp:
        event = _events.EpsilonDelta(priv.epsilon, priv.delta)
    else:
        event = _events.SelfComposed(_events.Exponential(eps_q), m)
    event = _events.with_neighbouring(event, _events.ADD_REMOVE)
    return Plan(qs, scalar, k, c, bnd, g, priv, eps_q, sel, event, gen, release_id, integer,
                pol)


def zcdp_share(epsilon: float, delta: float, m: int) -> float:
    """The largest ``ε_q`` (rounded down) such that ``m`` exponential mechanisms at ``ε_q``
    are ``(epsilon, delta)``-DP together by zCDP composition: each is ``ε_q``-bounded-range,
    hence ``ε_q²/8``-zCDP (Durfee & Rogers, NeurIPS 2019; Cesar & Rogers, ALT 2021, Lemma
    3.2); ``m`` of them ``ρ = m ε_q²/8``-zCDP, which is ``(ρ + 2 sqrt(ρ ln(1/δ)), δ)``-DP
    (Bun & Steinke, TCC 2016, Prop. 1.3).  Checked at 200 bits on the float returned
    (and lowered until it holds)."""
    with mpmath.workprec(200):
        big_l = mpmath.log(1 / mpmath.mpf(delta))
        root = mpmath.sqrt(big_l + epsilon) - mpmath.sqrt(big_l)
        e_q = float(mpmath.sqrt(8 * root * root / m) * (1 - mpmath.mpf(2) ** -60))

        def ok(x: float) -> bool:
            rho = m * mpmath.mpf(x) ** 2 / 8
            return rho + 2 * mpmath.sqrt(rho * big_l) <= epsilon

        while e_q > 0 and not ok(e_q):
            e_q = math.nextafter(e_q, 0.0)
    return e_q


# ----------------------------------------------------------------------------- aggregate
def table_of(p: Plan, data: _Data, skey: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bound the validated rows and build their sparse ``(key, slot)`` table."""
    assert data.values is not None
    slots = _em.slots_of(data.values, p.grid)
    kc, ks = _em.bound_slots(data.codes, data.ids, p.k, p.c, skey, slots, p.policy)
    return _em.slot_table(kc, ks, 2 * p.grid.shape[0])


# ----------------------------------------------------------------------------- select
def units_of(p: Plan, data: _Data, skey: np.ndarray) -> np.ndarray:
    """The number of privacy units (people) holding each key code after bounding (the
    same keyed per-person choice of ``k`` keys as the quantile table, for either bounding
    policy): the selection's measure (weighted unit counts for ``"weighted_gaussian"``,
    :func:`dpfast.tables._select.measure`)."""
    b = bounding.bound_codes(data.codes, data.n_codes, data.ids, p.k, p.c, skey,
                             policy=p.policy, unit_weights=_select.unit_weights(p.select))
    if p.select is None:
        assert b.units is not None  # bound_codes always counts the units
        return b.units
    return _select.measure(p.select, b.units, b.weighted)


def select_keys(p: Plan, data: _Data, units: np.ndarray, rkey: bytes) -> np.ndarray:
    """Key codes that may be released, sorted.  A public domain: all of them.
    ``domain=None``: the keys held by at least one person after bounding that the
    selection rule of :mod:`dpfast.tables._select` keeps (on the number of people per
    key, at ``SELECTION_SHARE`` of ε, per-key addressed, never released)."""
    if data.domain_codes is not None:
        return np.sort(data.domain_codes)
    cand = np.flatnonzero(units > 0)
    assert p.select is not None
    keep = _select.apply(p.select, units[cand], rkey, _take(data.uniques, cand))
    return cand[keep]


def _take(uniques: Any, codes: np.ndarray) -> Any:
    if isinstance(uniques, tuple):
        return tuple(u[codes] for u in uniques)
    return uniques[codes]


# ----------------------------------------------------------------------------- release
def release(p: Plan, data: _Data, table: tuple[np.ndarray, np.ndarray, np.ndarray],
            units: np.ndarray | None = None) -> QuantileRelease:
    """Select, sample and report (the budget has been charged).  ``units``: people per
    key code after bounding (:func:`units_of`; needed when ``domain=None``)."""
    if units is None:
        units = np.zeros(data.n_codes, np.int64)
        assert data.domain_codes is not None, "domain=None needs the unit counts"
    stream = keynoise.release_stream(p.gen)  # after the charge
    rkey = keynoise.release_key(p.gen._key, stream)
    cand = select_keys(p, data, units, rkey)
    keys = _take(data.uniques, cand)
    idx = _em.sample(table, cand, keys, p.qs, p.eps_q, p.c, p.grid.shape[0], rkey)
    vals = p.grid[idx]
    if p.integer:
        vals = vals.astype(np.int64)
    if data.domain_codes is not None:  # the domain's order
        pos = np.searchsorted(cand, data.domain_codes)
        keys = _take(data.uniques, data.domain_codes)
        vals = vals[pos]
    return QuantileRelease(keys=keys, values=vals[:, 0] if p.scalar else vals, q=p.qs,
                           grid=p.grid, epsilon_per_key=p.eps_q, sensitivity=p.c,
                           max_partitions=p.k, event=p.event,
                           threshold=None if p.select is None else p.select.threshold,
                           selection=p.select,
                           key_names=data.key_names, release_id=p.release_id)


def _check_budget(budget: Any, note: Any) -> None:
    if not isinstance(note, str):
        raise TypeError(f"note must be a str, got {type(note).__name__}")
    if budget is not None and not callable(getattr(budget, "spend", None)):
        raise TypeError(f"budget must be a dpfast.Budget, got {type(budget).__name__}")


def common(max_partitions: Any, max_per_partition: Any, has_ids: bool) -> tuple[int, int]:
    k = bounding.positive_int(max_partitions, "max_partitions")
    c = bounding.positive_int(max_per_partition, "max_per_partition")
    return (k, c) if has_ids else (1, 1)


def grid_bounds(bounds: Any, candidates: Any) -> Any:
    """The clamping bounds: ``bounds``, or the ends of a given grid."""
    if candidates is None:
        if bounds is None:
            raise ValueError("give bounds=(lo, hi) (or a public candidates grid)")
        return bounds
    if bounds is not None:
        raise ValueError("give bounds or candidates, not both (candidates fix the bounds)")
    g = _em.grid(None, 1, candidates, False)
    lo, hi = float(g[0]), float(g[-1])
    if lo.is_integer() and hi.is_integer() and np.all(g == np.round(g)):
        return int(lo), int(hi)
    return lo, hi


def _values_for(values: Any, bnd: Any) -> Any:
    """Integer values with a fractional grid are ranked as floats."""
    if isinstance(bnd[0], float) or isinstance(bnd[1], float):
        to_numpy = getattr(values, "to_numpy", None)
        raw = to_numpy() if callable(to_numpy) else np.asarray(values)
        if raw.dtype.kind in "iu":
            return raw.astype(np.float64)
    return values


def quantile(values: Any, keys: Any, privacy_ids: Any = None, *, q: Any,
             bounds: tuple[float, float] | None = None, epsilon: float,
             delta: float = 0.0, max_partitions: int = 1, max_per_partition: int = 1,
             n_candidates: int = 256, candidates: Any = None, domain: Any = None,
             rng: RngLike = None, budget: Any = None, note: str = "",
             dropna: bool = False, selection: str = "auto", bounding: str = "uniform"
             ) -> QuantileRelease:
    """Release the ``q``-quantile(s) of ``values`` per key (exponential mechanism).

    Parameters
    ----------
    values : array_like
        One number per row (clamped to the grid's range).
    keys, privacy_ids, max_partitions, max_per_partition, domain, rng, budget, note, dropna
        As in :func:`dpfast.tables.count`.
    selection : {"auto", "geometric", "gaussian", "weighted_gaussian", "laplace"}
        The key-selection rule on the number of people per key (``domain=None``), as in
        :func:`dpfast.tables.count`.
    bounding : {"uniform", "frequent"}
        Which keys a person keeps when they have more than ``max_partitions``: chosen
        uniformly, or the ones with the most rows (ties broken uniformly at random), as in
        :func:`dpfast.tables.count`; ``max_per_partition`` rows per kept key uniformly.
    q : float or sequence of float
        Quantile(s) in ``[0, 1]``; several quantiles split ε evenly.
    bounds : (lo, hi)
        The public range: the grid is ``n_candidates`` evenly spaced points of it
        (integer values: the distinct nearest integers).  Not with ``candidates``.
    epsilon, delta : float
        ``epsilon``-DP with a public ``domain`` and ``delta=0``; ``(epsilon, delta)``-DP with
        ``domain=None`` (half of ε selects the keys, see Privacy), or with a public domain
        and ``delta > 0`` (then each mechanism's ε comes from zCDP composition when that
        gives more than ``ε / (k len(q))``, see Privacy).
    n_candidates : int
        Grid size (1 to 2**16, default 256).  More points: finer values, slightly larger
        rank error (``ln m``).
    candidates : array_like, optional
        A public grid (strictly increasing) instead of ``bounds`` / ``n_candidates``.

    Returns
    -------
    QuantileRelease
        ``.keys``, ``.values`` (one per key; ``(keys, len(q))`` for several quantiles),
        ``.event``, ``.rank_error(alpha)``, ``.accuracy(alpha)``, ``.to_pandas()``.

    Raises
    ------
    ValueError, TypeError
        Bad input (named): ``q`` outside ``[0, 1]``, a bad grid, bad privacy parameters...

    Privacy
    -------
    Neighbouring datasets: add/remove one person (all rows of one privacy id; one row with
    ``privacy_ids=None``).  After bounding (at most ``k`` keys and ``c`` rows per key per
    person, chosen by the person's own keyed stream under either ``bounding`` policy: a
    function of that person's rows only, so the sensitivity below holds for both), each
    (key, quantile) runs the exponential mechanism over the public grid
    ``g_0 < ... < g_{m-1}`` with a rank utility of ``a_p = #{x < g_p}``,
    ``b_p = #{x <= g_p}`` and ``n`` (the key's kept rows).  ``q = num / den`` exactly with
    ``den <= 2**16`` (0, 1/2, 1/4, 3/4, 1/8...: min, max, median, quartiles):
    ``u(g_p) = -max(den a_p - num n, num n - den b_p, 0)`` (``-den`` times the distance of
    the rank ``q n`` to ``[a_p, b_p]``; OpenDP's quantile score where ``a_p = b_p``); one
    row added or removed moves both terms by at most ``S = max(num, den - num)`` (below
    ``g_p``: ``±(den - num)``; at ``g_p``: ``-num``, ``num - den``; above: ``∓num``, ``±num``),
    so ``Δu = S c``.  Any other ``q``: Smith's ``u(g_p) = -max(a_p - t, t - b_p, 0)``,
    ``t = floor(q n)``, ``Δu = c``.  ``P(g_p) ∝ exp(ε_q u(g_p) / (2 Δu))`` is ``ε_q``-DP
    (McSherry & Talwar 2007; the quantile utility of Smith 2011 on a finite grid, as
    Gillenwater, Joseph, Kulesza 2021).  A rank step is worth ``den`` (1 for Smith's)
    against ``Δu``: for the median twice the resolution of Smith's utility at the same ε.
    ``ε_q = ε / (k · len(q))`` (rounded down): a person touches at most ``k`` keys,
    keys they do not touch are unchanged (parallel composition), so the release is
    ``ε``-DP by basic composition; event ``SelfComposed(Exponential(ε_q), k · len(q))``
    (also ``k len(q) ε_q² / 8``-zCDP, bounded range).  With a public domain and
    ``delta > 0``, ``ε_q`` is the larger of that and :func:`zcdp_share`: the largest ``ε_q``
    whose ``ρ = k len(q) ε_q² / 8`` converts to at most ``(ε, δ)`` (Durfee & Rogers 2019;
    Cesar & Rogers 2021; Bun & Steinke 2016); the event is then ``EpsilonDelta(ε, δ)``.
    ``domain=None``: a key is released
    iff the selection rule of :mod:`dpfast.tables._select` (``selection=``) keeps it, on
    the number of people holding it after bounding (sensitivity ``k``, whatever ``c``;
    ``(ε/2, δ_sel)``-DP, ``δ_sel <= δ`` its exact δ; Desfontaines et al. 2022, Gopi et al.
    2020); the quantiles get the other ``ε/2``; ``(ε, δ_sel)``-DP in all (event
    ``EpsilonDelta``).

    Numerics
    --------
    Integer utilities (exact ``num``, ``den``, ``t`` of the exact ``q``; capped at ``2**53``,
    exact in float64; a key with more than ``2**46`` rows raises OverflowError), exact
    Gumbel-max sampling (:func:`dpfast.exponential`: no candidate's probability is rounded
    to 0), per-key addressed randomness (:mod:`dpfast.tables._quantile_em`).  Min/max are
    rank statements: with no data between ``lo`` and the minimum, ``q = 0`` is uniform
    over the grid points below the minimum (every one of them has rank 0).

    References
    ----------
    F. McSherry, K. Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.
    A. Smith, "Privacy-preserving statistical estimation with optimal convergence rates",
    STOC 2011.  J. Gillenwater, M. Joseph, A. Kulesza, "Differentially Private
    Quantiles", ICML 2021.
    """
    if not isinstance(dropna, (bool, np.bool_)):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if values is None:
        raise TypeError("values must be an array of numbers, got None")
    # the NULL policy (whatever dropna): rows with a missing key, id or value leave first
    keys, privacy_ids, (values,) = _keys.drop_nulls(keys, privacy_ids, values)
    qs, scalar = _quantiles(q)
    k, c = common(max_partitions, max_per_partition, privacy_ids is not None)
    _check_budget(budget, note)
    bounds = grid_bounds(bounds, candidates)
    gen, rid = keynoise.release_generator(rng)
    data, bnd = _validate(keys, privacy_ids, _values_for(values, bounds), bounds, domain)
    assert data.values is not None
    integer = data.values.dtype.kind == "i"
    p = plan(qs, scalar, k, c, bnd, integer, n_candidates, candidates, epsilon, delta,
             domain is None, gen, rid, selection, bounding)
    skey = bounding_mod.subkey(gen)
    table = table_of(p, data, skey)
    units = units_of(p, data, skey) if domain is None else None
    with charged(budget, p.event, note):
        return release(p, data, table, units)


def median(values: Any, keys: Any, privacy_ids: Any = None, **kwargs: Any
           ) -> QuantileRelease:
    """Release the median of ``values`` per key: :func:`quantile` with ``q = 0.5``.

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person, exponential mechanism with
    the rank utility ``u(g) = -max(2 #{x < g} - n, n - 2 #{x <= g}, 0)``, ``Δu = c``;
    McSherry & Talwar 2007, Smith 2011).
    """
    return quantile(values, keys, privacy_ids, q=0.5, **kwargs)


def min(values: Any, keys: Any, privacy_ids: Any = None, **kwargs: Any  # noqa: A001
        ) -> QuantileRelease:
    """Release the minimum of ``values`` per key: :func:`quantile` with ``q = 0``.

    The release is a grid point of rank 0 up to the rank error (no more than
    ``rank_error(alpha)`` rows below it, with probability ``1 - alpha``); where the grid
    has several points below the minimum, it is uniform over them (they all have rank 0).

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person; McSherry & Talwar 2007).
    """
    return quantile(values, keys, privacy_ids, q=0.0, **kwargs)


def max(values: Any, keys: Any, privacy_ids: Any = None, **kwargs: Any  # noqa: A001
        ) -> QuantileRelease:
    """Release the maximum of ``values`` per key: :func:`quantile` with ``q = 1``.

    The mirror of :func:`min`: no more than ``rank_error(alpha)`` rows above the released
    grid point, with probability ``1 - alpha``.

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person; McSherry & Talwar 2007).
    """
    return quantile(values, keys, privacy_ids, q=1.0, **kwargs)
