"""Rank metrics of a many-metric release: ``median``, ``quantile``, ``min``, ``max``.

A rank metric of column ``x`` at ``q`` is one exponential mechanism per released key over
the column's public candidate grid ``g_0 < ... < g_{m-1}`` (the grid rules of
:func:`dpfast.tables._quantile_em.grid`: ``candidates={x: n}`` evenly spaced points of the
column's bounds, 256 by default, integer columns the distinct nearest integers; or
``candidates={x: array}`` a public grid), with the rank utility of
:mod:`dpfast._kernels.quantile` over the rows that the release's *one* contribution
bounding kept (the kept-row mask of :func:`dpfast.tables._rows.bound_matrix`: the same
(person, key) pairs and rows as every other metric).  Values are clamped to the column's
bounds first; each row's grid slot is also a column of the bounding matrix, so the rows a
person keeps are a function of their own (key, value) rows only, in any row order or
partitioning (the dask release is bit-identical).

Budget (the rule of :mod:`dpfast.tables._metrics`): a rank part gets its metric's share
``s`` of ``ε`` (or ``ρ``).  One person changes at most ``k`` keys and each key's utility by
at most ``Δu = S c`` (``S`` of :func:`dpfast.tables._quantile_em.scale`: 1 for the median,
min and max, ``max(num, den - num)`` for ``q = num / den``), so per key ``ε_q``-DP with
``P(g_p) ∝ exp(ε_q u_p / (2 Δu))`` (McSherry & Talwar 2007), and the part is
``SelfComposed(Exponential(ε_q), k)``:

* pure ``ε`` (Laplace parts): ``ε_q = ε s / k`` (rounded down; basic composition);
* zCDP (Gaussian parts, ``ρ`` given or the ``ρ`` implied by ``(ε, δ)``): ``ε_q`` the
  largest with ``k ε_q² / 8 <= ρ s`` (an ``ε_q``-DP exponential mechanism is
  ``ε_q``-bounded-range, hence ``ε_q²/8``-zCDP: Cesar & Rogers 2021, Lemma 3.2);
* pure ``ε`` with ``δ > 0`` and a public domain (``δ`` unused otherwise): the rank parts
  together, ``ε_S = ε Σ s``, may instead be ``(ε_S, δ)``-DP by zCDP composition (as
  :func:`dpfast.tables.quantiles.zcdp_share`): part ``i`` gets ``ρ_i = ρ_S s_i / Σ s``
  with ``ρ_S + 2 sqrt(ρ_S ln(1/δ)) <= ε_S`` (Bun & Steinke 2016, Prop. 1.3) -- used when
  it gives every rank part a larger ``ε_q``; the group's event is then
  ``EpsilonDelta(ε_S, δ)``.

Randomness: rank part ``j`` (in plan order) samples with
:func:`dpfast.tables._quantile_em.sample` under the key
``BLAKE2b(key=release key, RANK_TAG || j)`` (per key addressed; independent of the noised
parts' streams), only for the published keys.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, TypedDict

import mpmath
import numpy as np

from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.mechanisms.gaussian import _largest_rho
from dpfast.noise import _addressed
from dpfast.tables import _plan
from dpfast.tables import _quantile_em as _em
from dpfast.tables.quantile_release import QuantileRelease

if TYPE_CHECKING:
    import numpy.typing as npt

    from dpfast.tables._metrics import Column
    from dpfast.tables._select import Selection

__all__ = ["RANK_KINDS", "RANK_TAG", "DEFAULT_CANDIDATES", "RankPlan", "grids",
           "plan_ranks", "slot_tables", "finish"]

#: metric kind -> its fixed quantile (``quantile`` takes its own)
RANK_KINDS: dict[str, float | None] = {"median": 0.5, "min": 0.0, "max": 1.0,
                                       "quantile": None}
RANK_TAG = b"dpfast.tables.aggregate-rank v1"
DEFAULT_CANDIDATES = 256


class ReleaseCommon(TypedDict):
    """What every metric of a many-metric release shares (keyword arguments of its
    release objects)."""

    event: _events.DpEvent
    threshold: int | None
    selection: Selection | None
    key_names: tuple[str, ...] | None
    release_id: int | None


@dataclasses.dataclass(frozen=True)
class RankPlan:
    """One rank part: its column, quantile, ε per (key) mechanism, its index (randomness
    address) and its event (None when a group event covers it)."""

    column: str
    q: float
    eps_q: float
    index: int
    event: _events.DpEvent | None


@dataclasses.dataclass(frozen=True)
class _Evented:
    """An event in the list the release event composes (:func:`_plan.release_event`)."""

    event: _events.DpEvent


# ----------------------------------------------------------------------------- grids
def grids(rank_columns: list[str], columns: Mapping[str, Column],
          candidates: dict[str, int | npt.ArrayLike] | None
          ) -> dict[str, np.ndarray]:
    """The public grid of every column a rank metric uses.  ``candidates``: None, or
    ``{column: n_candidates (int) | a strictly increasing public grid}``."""
    if candidates is None:
        candidates = {}
    if not isinstance(candidates, dict):
        raise TypeError("candidates must be None or a dict {column: n_candidates or grid}, "
                        f"got {type(candidates).__name__}")
    extra = sorted(str(c) for c in candidates if c not in rank_columns)
    if extra:
        raise ValueError(f"candidates names columns no median/quantile/min/max metric uses: "
                         f"{extra}")
    out: dict[str, np.ndarray] = {}
    for name in rank_columns:
        col = columns[name]
        spec = candidates.get(name, DEFAULT_CANDIDATES)
        if not isinstance(spec, (int, np.integer)) and np.ndim(spec) == 0:
            raise TypeError(f"candidates[{name!r}] must be a number of points (int) or a "
                            f"1-D grid, got {spec!r}")
        try:
            if isinstance(spec, (int, np.integer)) or isinstance(spec, bool):
                g = _em.grid((col.lo, col.hi), spec, None, col.integer)
            else:
                g = _em.grid(None, 1, spec, False)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"candidates[{name!r}]: {exc}") from None
        out[name] = g
    return out


def n_slots(grid: np.ndarray) -> int:
    """Slots of a grid of ``m`` points: ``0 .. 2m`` (``2m``: above the last point, possible
    with a public grid narrower than the bounds)."""
    return 2 * int(grid.shape[0]) + 1


# ----------------------------------------------------------------------------- budget
def _zcdp_eps(rho: Fraction, k: int) -> float:
    """The largest float ``e`` with ``k e² / 8 <= rho`` (exact check)."""
    if rho <= 0:
        return 0.0
    e = float_down(Fraction(math.sqrt(float(8 * rho / k))))
    while e > 0 and k * Fraction(e) ** 2 / 8 > rho:
        e = math.nextafter(e, 0.0)
    return e


def _group_zcdp(eps_s: float, delta: float, k: int, shares: list[Fraction]
                ) -> list[float]:
    """Per part ``ε_q`` when the rank parts together are ``(eps_s, delta)``-DP by zCDP
    composition (``ρ_i ∝ s_i``); checked at 200 bits on the floats returned."""
    total = sum(shares, Fraction(0))
    with mpmath.workprec(200):
        big_l = mpmath.log(1 / mpmath.mpf(delta))
        root = mpmath.sqrt(big_l + eps_s) - mpmath.sqrt(big_l)
        rho_s = root * root * (1 - mpmath.mpf(2) ** -60)
        out = []
        for s in shares:
            ri = rho_s * mpmath.mpf(s.numerator) / s.denominator * total.denominator \
                / total.numerator
            out.append(float(mpmath.sqrt(8 * ri / k) * (1 - mpmath.mpf(2) ** -60)))

        def ok(es: list[float]) -> bool:
            rho = mpmath.fsum(k * mpmath.mpf(e) ** 2 / 8 for e in es)
            return bool(rho + 2 * mpmath.sqrt(rho * big_l) <= eps_s)

        while not ok(out):
            out = [math.nextafter(e, 0.0) for e in out]
    return out


def plan_ranks(parts: list[tuple[str, str, float, Fraction]], k: int, priv: _plan.Privacy,
               stat_priv: _plan.Privacy, slack: Fraction
               ) -> tuple[dict[str, RankPlan], list[_Evented]]:
    """``parts``: ``(part name, column, q, share)`` of the rank parts, in plan order.
    Returns the rank plans by name and the events they add to the release's composition
    (see the module docstring).  ``priv``: the caller's target; ``stat_priv``: the
    statistics' part of it (:func:`dpfast.tables._plan.split_for_selection`)."""
    plans: dict[str, RankPlan] = {}
    if not parts:
        return plans, []
    if stat_priv.noise == "gaussian":  # zCDP shares, as the Gaussian parts get theirs
        if stat_priv.rho is not None:
            rho_total = Fraction(stat_priv.rho)
        else:
            assert stat_priv.epsilon is not None
            rho_total = Fraction(_largest_rho(float_down(Fraction(stat_priv.epsilon)),
                                              stat_priv.delta))
        eps_qs = [_zcdp_eps(Fraction(float_down(rho_total * s * slack)), k)
                  for _, _, _, s in parts]
    else:
        assert stat_priv.epsilon is not None
        eps_qs = [float_down(Fraction(float_down(Fraction(stat_priv.epsilon) * s * slack))
                             / k) for _, _, _, s in parts]
    group: _events.DpEvent | None = None
    if stat_priv.noise == "laplace" and not priv.select and priv.delta > 0 \
            and k * len(parts) > 1:
        assert stat_priv.epsilon is not None
        eps_s = float_down(Fraction(stat_priv.epsilon)
                           * sum((s for _, _, _, s in parts), Fraction(0)) * slack)
        zq = _group_zcdp(eps_s, priv.delta, k, [s for _, _, _, s in parts])
        if all(z > e for z, e in zip(zq, eps_qs)):
            eps_qs = zq
            group = _events.with_neighbouring(_events.EpsilonDelta(eps_s, priv.delta),
                                              _events.ADD_REMOVE)
    events: list[_Evented] = [] if group is None else [_Evented(group)]
    for j, ((name, col, q, _), e) in enumerate(zip(parts, eps_qs)):
        if not e > 0:
            raise ValueError(f"the budget (epsilon or rho) split over {k} keys underflows "
                             f"for metric part {name}")
        ev = None
        if group is None:
            one: _events.DpEvent = _events.Exponential(e)
            ev = _events.with_neighbouring(one if k == 1 else _events.SelfComposed(one, k),
                                           _events.ADD_REMOVE)
            events.append(_Evented(ev))
        plans[name] = RankPlan(col, q, e, j, ev)
    return plans, events


# ----------------------------------------------------------------------------- aggregate
def slot_tables(grid_of: dict[str, np.ndarray], slot_cols: dict[str, int],
                codes: np.ndarray, matrix: np.ndarray, kept: np.ndarray | None
                ) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The sparse ``(key code, slot) -> rows`` table of each rank column over the kept
    rows (``kept``: the mask of :func:`dpfast.tables._rows.bound_matrix`; None: all)."""
    out = {}
    kc = codes if kept is None else codes[kept]
    for name, g in grid_of.items():
        sl = matrix[:, slot_cols[name]]
        out[name] = _em.slot_table(np.ascontiguousarray(kc, np.int64),
                                   np.ascontiguousarray(sl if kept is None else sl[kept]),
                                   n_slots(g))
    return out


# ----------------------------------------------------------------------------- release
def finish(rank: RankPlan, grid: np.ndarray, integer: bool,
           table: tuple[np.ndarray, np.ndarray, np.ndarray], codes: np.ndarray,
           keys: np.ndarray | tuple[np.ndarray, ...], c: int, k: int, rkey: bytes,
           common: ReleaseCommon
           ) -> QuantileRelease:
    """Sample the rank part for the published key codes ``codes`` (values ``keys``, the
    release's order): a :class:`~dpfast.tables.QuantileRelease` (post-processing of the
    per-key exponential mechanisms)."""
    sub = _addressed.derive_key(rkey, RANK_TAG, rank.index)
    idx = _em.sample(table, np.ascontiguousarray(codes, np.int64), keys, (rank.q,),
                     rank.eps_q, c, grid.shape[0], sub)[:, 0]
    vals = grid[idx]
    if integer and bool(np.all(grid == np.round(grid))):
        vals = vals.astype(np.int64)
    return QuantileRelease(keys=keys, values=vals, q=(rank.q,), grid=grid,
                           epsilon_per_key=rank.eps_q, sensitivity=c, max_partitions=k,
                           **common)
