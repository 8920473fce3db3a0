"""The plan of the rank statistics (quantile, median, min, max) for the one pipeline,
:func:`dpfast.tables.run.release`.

:func:`plan_of` makes the data-independent part (grid, per-key ε, key selection, event)
from the spec and the source's schema; :class:`Plan` then bounds the rows and builds the
sparse ``(key, grid slot) -> rows`` table (:meth:`Plan.local_partials`, one process;
:meth:`Plan.partition_partials` and :meth:`Plan.merge`, a cluster's partitions) and,
after the charge, selects the keys and samples the per-key addressed exponential
mechanisms (:meth:`Plan.finish`, :func:`release`).  The public functions
(``dpfast.tables.quantile`` ..., ``dpfast.dask.quantile`` ...) are generated from the
registry (:mod:`dpfast.tables.statistics.ranks`, whose ``make_spec`` builds the spec).
"""

from __future__ import annotations

import builtins
import dataclasses
import math
from fractions import Fraction
from typing import TYPE_CHECKING

import mpmath
import numpy as np
import numpy.typing as npt

from dpfast import random as _random
from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.tables import _inputs, _keys, _merge, _plan, _select, bounding, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables._inputs import _Data, _validate_present
from dpfast.tables.quantile_release import QuantileRelease

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd

    from dpfast.tables.run import Columns, Rows, Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["Plan", "plan_of", "zcdp_share", "quantiles", "grid_bounds", "common",
           "float_grid", "release"]

#: share of ε spent on selecting the keys when ``domain=None`` (the rest on the quantiles)
SELECTION_SHARE = Fraction(1, 2)

#: the quantile of the rank statistics that fix it
FIXED_Q = {"median": 0.5, "min": 0.0, "max": 1.0}

_SLOT = "__dpfast_slot"
_ROWS = "__dpfast_rows"

Table = tuple[np.ndarray, np.ndarray, np.ndarray]


# ----------------------------------------------------------------------------- public checks
def quantiles(q: npt.ArrayLike) -> tuple[tuple[float, ...], bool]:
    """(the quantiles as floats, scalar input); TypeError / ValueError naming ``q``."""
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


def common(max_partitions: object, max_per_partition: object, has_ids: bool) -> tuple[int, int]:
    """The contribution bounds ``(k, c)`` (``(1, 1)`` without privacy ids)."""
    k = bounding.positive_int(max_partitions, "max_partitions")
    c = bounding.positive_int(max_per_partition, "max_per_partition")
    return (k, c) if has_ids else (1, 1)


def grid_bounds(bounds: object, candidates: object) -> object:
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


def float_grid(bounds: object) -> bool:
    """Whether integer values are ranked as floats: a bound is a float (a fractional
    grid; decided on the caller's bounds, before a spec turns numpy scalars into
    Python ones)."""
    return isinstance(bounds, (tuple, list)) and len(bounds) == 2 and (
        isinstance(bounds[0], float) or isinstance(bounds[1], float))


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


# ----------------------------------------------------------------------------- plan
@dataclasses.dataclass
class Plan:
    """The data-independent part of a quantile release (:class:`dpfast.tables.run.Plan`).
    ``bounds``: the clamping bounds the rows are validated against; ``integer``: the
    values are ranked as integers."""

    qs: tuple[float, ...]
    scalar: bool
    k: int
    c: int
    bnd: tuple[int, int] | tuple[float, float]
    grid: np.ndarray
    priv: _plan.Privacy
    eps_q: float  # ε of one (key, quantile) exponential mechanism
    select: _select.Selection | None  # the key selection on unit counts (domain=None)
    event: _events.DpEvent
    integer: bool
    policy: int = 0  # bounding.policy_code of the bounding policy
    bounds: object = None

    # ------------------------------------------------------------------ one process
    def local_partials(self, rows: Rows, subkey: np.ndarray
                       ) -> tuple[_Data, Table, np.ndarray | None]:
        """Validate the rows, bound them and build the ``(key, slot)`` table (and the
        people per key, for the key selection)."""
        keys, ids, values = self._inputs(rows.keys, rows.privacy_ids, rows.values)
        data, _ = _validate_present(keys, ids, values, self.bounds, rows.domain)
        assert data.values is not None
        if (data.values.dtype.kind == "i") != self.integer:
            raise TypeError("values changed type between the plan and the rows")
        table = table_of(self, data, subkey)
        units = units_of(self, data, subkey) if data.domain_codes is None else None
        return data, table, units

    def _inputs(self, keys: _keys.KeyColumns, ids: object, values: object
                ) -> tuple[_keys.KeyColumns, object, object]:
        """The rows without the NULL ones (the NULL policy, first: a nullable integer
        column's missing entries do not make its numbers objects), the values as
        :meth:`_values` ranks them; the validation that follows does not scan again."""
        keys, ids, (values,) = _keys.drop_nulls(keys, ids, values)
        return keys, ids, self._values(values)

    def _values(self, values: object) -> object:
        """Integer values with a fractional grid are ranked as floats."""
        if self.integer:
            return values
        to_numpy = getattr(values, "to_numpy", None)
        raw = to_numpy() if callable(to_numpy) else np.asarray(values)
        return raw.astype(np.float64) if raw.dtype.kind in "iu" else values

    def finish(self, partials: tuple[_Data, Table, np.ndarray | None],
               gen: _random.Generator, release_id: int | None) -> QuantileRelease:
        data, table, units = partials
        return release(self, data, table, units, gen, release_id)

    # ------------------------------------------------------------------ a cluster
    def partition_partials(self, pdf: pd.DataFrame | Mapping[str, np.ndarray],
                           cols: Columns, subkey: np.ndarray) -> tuple[pd.DataFrame, int]:
        """One partition: validate, bound, its sparse ``(key, slot)`` table keyed by key
        values (a pandas DataFrame; the people per key as slot ``-1`` rows)."""
        import pandas as pd

        names = list(cols.by)
        keys = pdf[names[0]] if len(names) == 1 else tuple(pdf[n] for n in names)
        ids = None if cols.privacy_unit is None else pdf[cols.privacy_unit]
        keys, ids, values = self._inputs(keys, ids, pdf[cols.values[0]])
        data, _ = _validate_present(keys, ids, values, self.bounds, cols.domain)
        tc, ts, tn = table_of(self, data, subkey)
        if self.select is not None:  # people per key after bounding, as slot -1 rows
            units = units_of(self, data, subkey)
            uc = np.flatnonzero(units > 0)
            tc = np.concatenate([tc, uc])
            ts = np.concatenate([ts, np.full(uc.shape[0], -1, ts.dtype)])
            tn = np.concatenate([tn, units[uc].astype(tn.dtype)])
        uk = _take(data.uniques, tc)
        out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
        out[_SLOT] = ts
        out[_ROWS] = tn
        n_rows = len(pdf[names[0]]) if isinstance(pdf, dict) else len(pdf)
        return pd.DataFrame(out), int(n_rows)

    def merge(self, results: list[tuple[pd.DataFrame, int]], cols: Columns
              ) -> tuple[_Data, Table, np.ndarray | None]:
        """The partitions' tables summed per (key, slot), keys coded as on one machine,
        and the people per key (checked: OverflowError, never a wrap)."""
        import pandas as pd

        _inputs.check_rows(builtins.sum(r[1] for r in results))
        names = list(cols.by)
        parts = pd.concat([r[0] for r in results], ignore_index=True)
        fk, codes, domain_codes = _merge.key_codes(parts, names, cols.domain)
        codes = np.ascontiguousarray(codes, np.int64)
        slots = parts[_SLOT].to_numpy(np.int64)
        rows = parts[_ROWS].to_numpy(np.int64)
        is_unit = slots < 0
        # each person is in one partition (weighted unit counts: checked, never a wrap)
        units = _merge.checked_total(codes[is_unit], rows[is_unit], fk.size)
        keep = ~is_unit
        table = _em.slot_table(np.ascontiguousarray(codes[keep]),
                               np.ascontiguousarray(slots[keep]), 2 * self.grid.shape[0],
                               np.ascontiguousarray(rows[keep]))
        data = _Data(codes, fk.size, fk.uniques, None, None, domain_codes, tuple(names))
        return data, table, (units if domain_codes is None else None)


def plan_of(spec: ReleaseSpec, source: Source) -> Plan:
    """The plan of a rank statistic's ``spec`` (``quantile``: its ``q``; ``median``,
    ``min``, ``max``: 0.5, 0, 1) over ``source`` (whose value dtype is the only thing read:
    whether the values are integers).  Grid, budget split and event."""
    st = spec.statistics[0]
    qs: tuple[float, ...]
    if st.statistic in FIXED_Q:
        qs, scalar = (FIXED_Q[st.statistic],), True
    else:
        qs, scalar = quantiles(st.param("q"))
    k, c = common(spec.max_partitions, spec.max_per_partition, source.has_privacy_ids())
    candidates = spec.option("candidates")
    bounds = grid_bounds(spec.bounds, candidates)
    kind = source.value_kind()
    by = getattr(getattr(source, "columns", None), "by", None)  # a cluster's key columns
    domain = getattr(getattr(source, "columns", None), "domain", None)
    if by is not None and domain is not None:
        dcols = _keys.columns(domain, "domain")
        if len(dcols) != len(by):
            raise ValueError(f"domain has {len(dcols)} key columns, key names {len(by)}")
    integer = kind in "iu" and not spec.option("float_grid", False)
    bnd = _inputs._bounds(bounds, integer)
    return _make(qs, scalar, k, c, bnd, integer, spec.option("n_candidates", 256),
                 None if candidates is None else np.asarray(candidates, np.float64),
                 spec.privacy(), spec.selection, spec.bounding, bounds)


def _make(qs: tuple[float, ...], scalar: bool, k: int, c: int,
          bnd: tuple[int, int] | tuple[float, float], integer: bool, n_candidates: int,
          candidates: np.ndarray | None, priv: _plan.Privacy, selection: str,
          bounding_policy: str, bounds: object) -> Plan:
    """Grid, budget split and event (nothing here looks at the data)."""
    pol = bounding.policy_code(bounding_policy)
    select = priv.select
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
        raise ValueError(f"epsilon {priv.epsilon!r} split over {k} keys x {len(qs)} "
                         "quantiles underflows")
    if select:
        assert sel is not None
        event: _events.DpEvent = _events.EpsilonDelta(priv.epsilon, sel.delta)
    elif by_zcdp:
        event = _events.EpsilonDelta(priv.epsilon, priv.delta)
    else:
        event = _events.SelfComposed(_events.Exponential(eps_q), m)
    event = _events.with_neighbouring(event, _events.ADD_REMOVE)
    return Plan(qs, scalar, k, c, bnd, g, priv, eps_q, sel, event, integer, pol, bounds)


# ----------------------------------------------------------------------------- aggregate
def table_of(p: Plan, data: _Data, skey: np.ndarray) -> Table:
    """Bound the validated rows and build their sparse ``(key, slot)`` table."""
    assert data.values is not None
    slots = _em.slots_of(data.values, p.grid)
    kc, ks = _em.bound_slots(data.codes, data.ids, p.k, p.c, skey, slots, p.policy)
    return _em.slot_table(kc, ks, 2 * p.grid.shape[0])


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


# ----------------------------------------------------------------------------- select
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


def _take(uniques: np.ndarray | tuple[np.ndarray, ...], codes: np.ndarray
          ) -> np.ndarray | tuple[np.ndarray, ...]:
    if isinstance(uniques, tuple):
        return tuple(u[codes] for u in uniques)
    return uniques[codes]


# ----------------------------------------------------------------------------- release
def release(p: Plan, data: _Data, table: Table, units: np.ndarray | None,
            gen: _random.Generator, release_id: int | None) -> QuantileRelease:
    """Select, sample and report (the budget has been charged).  ``units``: people per
    key code after bounding (:func:`units_of`; needed when ``domain=None``)."""
    if units is None:
        units = np.zeros(data.n_codes, np.int64)
        assert data.domain_codes is not None, "domain=None needs the unit counts"
    stream = keynoise.release_stream(gen)  # after the charge
    rkey = keynoise.release_key(gen._key, stream)
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
                           key_names=data.key_names, release_id=release_id)
