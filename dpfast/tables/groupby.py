"""Group-by count, sum and mean releases with bounded contributions.

Each public function runs the pipeline of :mod:`dpfast.tables`: validate (and factorize)
-> bound -> charge -> aggregate -> noise -> post-process (partition selection) -> report.
Each step is a function below (``_validate`` of :mod:`dpfast.tables._inputs`, ``_make_plan``,
:func:`dpfast.tables.bounding.bound_codes`, the charge of :func:`dpfast.tables.run.release`,
:func:`release` with the per-key
addressed noise of :mod:`dpfast.tables.keynoise` and the selection,
:class:`~dpfast.tables.release.TableRelease`).  ``_make_plan`` / ``summands`` /
``release`` are shared with :mod:`dpfast.dask`, which aggregates on a cluster.
"""

from __future__ import annotations

import builtins
import dataclasses
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpfast import random as _random
from dpfast._core import scratch
from dpfast.tables import _fixed, _inputs, _merge, _plan, _select, bounding, keynoise
from dpfast.tables._inputs import _Data, _validate, check_int_summands
from dpfast.tables.bounding import Bounded
from dpfast.tables.release import TableRelease

if TYPE_CHECKING:
    import pandas as pd

    from dpfast.accounting.events import DpEvent
    from dpfast.tables._keys import Uniques
    from dpfast.tables.run import Columns, Rows, Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["Plan", "plan_of", "release"]

# the partials' columns of one partition (besides its key columns)
_COUNT = "__dpfast_count"
_UNITS = "__dpfast_units"  # distinct privacy ids kept per key (key selection)
_WEIGHTED = "__dpfast_wunits"  # weighted unit counts (weighted-Gaussian key selection)
_SUM_HI = "__dpfast_sum_hi"  # exact totals: two int64 words
_SUM_LO = "__dpfast_sum_lo"



# ----------------------------------------------------------------------------- select
def _candidates(data: _Data, counts: np.ndarray) -> np.ndarray:
    """Codes of the keys that may be released, in canonical order: the domain's keys, or
    (partition selection) the keys of positive *bounded* measure -- ``counts`` is a
    measure of the kept contributions only (kept rows, people or weighted people after
    the ``max_partitions`` bounding), never of the raw data: a key is a candidate only if
    some person keeps it, so one person puts at most ``k`` keys of their own in front of
    the selection, whatever their number of keys (the one rule of every release)."""
    if data.domain_codes is not None:
        return np.sort(data.domain_codes)
    return np.flatnonzero(counts > 0)


def _take_keys(uniques: Uniques, codes: np.ndarray) -> Uniques:
    if isinstance(uniques, tuple):
        return tuple(u[codes] for u in uniques)
    return uniques[codes]


def _finish(data: _Data, cand: np.ndarray, keep: np.ndarray | None,
            arrays: list[np.ndarray]) -> tuple[Uniques, list[np.ndarray]]:
    """Post-process: apply the selection (``keep`` over ``cand``), or put the domain's keys
    back in the caller's order."""
    if data.domain_codes is not None:
        pos = np.searchsorted(cand, data.domain_codes)  # cand is the sorted domain
        return _take_keys(data.uniques, data.domain_codes), [a[pos] for a in arrays]
    if keep is None:
        keep = np.ones(cand.shape[0], np.bool_)
    return _take_keys(data.uniques, cand[keep]), [a[keep] for a in arrays]


# ----------------------------------------------------------------------------- pipeline
def _common(max_partitions: int, max_per_partition: int, privacy_ids: object
            ) -> tuple[int, int]:
    k = bounding.positive_int(max_partitions, "max_partitions")
    c = bounding.positive_int(max_per_partition, "max_per_partition")
    if privacy_ids is None:
        return 1, 1  # every row is a different person: one row, one key
    return k, c


@dataclasses.dataclass
class Plan:
    """The data-independent part of a count / sum / mean release: bounds, laws,
    threshold and event (:class:`dpfast.tables.run.Plan`).  ``integer``: the values are
    integers (exact discrete noise on their sums); ``bounds``: the caller's bounds, checked
    again against each partition's values."""

    stat: str
    k: int
    c: int
    bnd: tuple[float, float] | None
    count_part: _plan.Part | None
    sum_part: _plan.Part | None
    parts: list[_plan.Part]
    tau: int | None
    event: DpEvent
    fixed: _fixed.Fixed | None = None  # float values: the fixed-point grid of the summands
    select: _select.Selection | None = None  # private key selection (domain=None)
    bounding: int = 0  # bounding.policy_code of the bounding policy
    integer: bool = True
    bounds: object = None

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> tuple[_Data, Bounded]:
        """Validate the rows (:func:`dpfast.tables._inputs._validate`) and bound them."""
        values = None if self.stat == "count" else rows.values  # a count reads no values
        data, _ = _validate(rows.keys, rows.privacy_ids, values, self.bounds, rows.domain)
        if data.values is not None and (data.values.dtype.kind == "i") != self.integer:
            raise TypeError("values changed type between the plan and the rows")
        agg = bounding.bound_codes(data.codes, data.n_codes, data.ids, self.k, self.c,
                                   subkey, summands(self, data.values), fixed_exp(self),
                                   self.bounding, _select.unit_weights(self.select))
        return data, agg

    def finish(self, partials: tuple[_Data, Bounded], gen: _random.Generator,
               release_id: int | None) -> TableRelease:
        data, agg = partials
        return release(self, data, agg, gen, release_id)

    # ------------------------------------------------------------- one partition of many
    def partition_partials(self, pdf: pd.DataFrame, cols: Columns, subkey: np.ndarray
                           ) -> tuple[pd.DataFrame, int]:
        """One partition (a pandas DataFrame, or a dict of equal-length numpy columns)
        holding every row of its privacy ids: validate, bound per id, aggregate per key.
        Returns a pandas DataFrame (the key columns, count, units and, for values, the
        exact sum in two int64 words) and the partition's row count."""
        with scratch.lease():  # temporaries on this thread's kept pages; what returns is copied
            return self._partition(pdf, cols, subkey)

    def _partition(self, pdf: pd.DataFrame, cols: Columns, subkey: np.ndarray
                   ) -> tuple[pd.DataFrame, int]:
        import pandas as pd

        names = list(cols.by)
        keys = pdf[names[0]] if len(names) == 1 else tuple(pdf[n] for n in names)
        ids = None if cols.privacy_unit is None else pdf[cols.privacy_unit]
        vals = pdf[cols.values[0]] if cols.values and self.stat != "count" else None
        data, _ = _validate(keys, ids, vals, self.bounds, cols.domain)
        agg = bounding.bound_codes(data.codes, data.n_codes, data.ids, self.k, self.c, subkey,
                                   summands(self, data.values),
                                   None if data.values is None else fixed_exp(self),
                                   self.bounding, _select.unit_weights(self.select))
        nz = np.flatnonzero(agg.counts)
        uk = _take_keys(data.uniques, nz)
        out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
        out[_COUNT] = agg.counts[nz]  # fancy indexing: copies, off the lease's scratch
        assert agg.units is not None
        out[_UNITS] = agg.units[nz]  # an id's rows are all in this partition: units add up
        if agg.weighted is not None:  # so do the weighted ones (each id's t is its own)
            out[_WEIGHTED] = agg.weighted[nz]
        if isinstance(agg.sums, _fixed.FixedSums):
            out[_SUM_HI] = agg.sums.hi[nz]
            out[_SUM_LO] = agg.sums.lo[nz]
        return pd.DataFrame(out), int(len(keys if len(names) == 1 else keys[0]))

    def merge(self, results: list[tuple[pd.DataFrame, int]], cols: Columns
              ) -> tuple[_Data, Bounded]:
        """Sum the partitions' partials per key (canonical codes, as on one machine), in
        checked integer arithmetic (OverflowError, never a wrap)."""
        import pandas as pd

        _inputs.check_rows(builtins.sum(r[1] for r in results))  # two-word totals' size
        parts = pd.concat([r[0] for r in results], ignore_index=True)
        names = list(cols.by)
        fk, codes, domain_codes = _merge.key_codes(parts, names, cols.domain)
        counts = np.zeros(fk.size, np.int64)
        np.add.at(counts, codes, parts[_COUNT].to_numpy(np.int64))
        units = np.zeros(fk.size, np.int64)
        np.add.at(units, codes, parts[_UNITS].to_numpy(np.int64))
        codes = np.ascontiguousarray(codes, np.int64)
        sums: _fixed.FixedSums | None = None
        if self.stat != "count":  # exact two-word totals (integer values: units of 2**0)
            sums = _fixed.FixedSums.zeros(fk.size, 0 if self.fixed is None else self.fixed.exp)
            sums.add_partials(codes, parts[_SUM_HI].to_numpy(np.int64),
                              parts[_SUM_LO].to_numpy(np.int64))
        weighted = (_merge.checked_total(codes, parts[_WEIGHTED], fk.size)
                    if _WEIGHTED in parts else None)
        data = _Data(codes, fk.size, fk.uniques, None, None, domain_codes, tuple(names))
        return data, bounding.Bounded(counts, sums, units, weighted)


def shares(stat_parts: int, select: bool) -> Fraction:
    """The budget share of each measurement: the ``stat_parts`` noised statistics (count:
    1, sum: 1, mean: 2) and, with private key selection, the selection, all equal
    (``1 / (stat_parts + 1)`` each with selection, PipelineDP's default split)."""
    return Fraction(1, stat_parts + (1 if select else 0))


def _make_plan(stat: str, k: int, c: int, priv: _plan.Privacy,
               bnd: tuple[float, float] | None, integer: bool, selection: str = "auto",
               bounding_policy: str = "uniform", bounds: object = None) -> Plan:
    parts: list[_plan.Part] = []
    count_part = sum_part = None
    pol = bounding.policy_code(bounding_policy)
    policy = _select.resolve(selection)  # validated whether or not keys are selected
    n_stat = 2 if stat == "mean" else 1
    share = shares(n_stat, priv.select)
    stat_priv, sel_eps, sel_delta = priv, 0.0, 0.0
    if priv.select:
        stat_priv, sel_eps, sel_delta = _plan.split_for_selection(priv, share)
        if stat_priv is not priv:  # Gaussian statistics: their own (epsilon, delta) share
            share = Fraction(1, n_stat)
    if stat == "count":
        count_part = _plan.part(stat_priv, share, Fraction(k * c), Fraction(k * c * c), k,
                                True)
        parts.append(count_part)
    else:
        assert bnd is not None  # (bounds are checked for sums and means)
        lo, hi = bnd
        if stat == "sum":
            mag = max(abs(Fraction(lo)), abs(Fraction(hi)))
        else:
            mag = Fraction(hi) - Fraction(lo)  # per row |2x - lo - hi| <= hi - lo
        if mag == 0:
            raise ValueError(f"bounds {bnd} give zero sensitivity: nothing to release "
                             "privately (use lo < hi)")
        if stat == "mean":
            count_part = _plan.part(stat_priv, share, Fraction(k * c), Fraction(k * c * c), k,
                                    True)
            parts.append(count_part)
        if integer:  # one person's partial sum is int64; the totals are two-word
            check_int_summands(c, mag, stat)
        sum_part = _plan.part(stat_priv, share, k * c * mag, k * c * c * mag * mag, k,
                              integer)
        parts.append(sum_part)
    fixed = None
    if sum_part is not None and not integer:  # exact fixed-point sums of float values
        assert bnd is not None
        lo, hi = bnd
        fixed = _fixed.fixed_grid(lo, hi, sum_part.law.granularity, c, stat == "mean")
    sel = None
    if priv.select:
        sel = _select.plan(sel_eps, sel_delta, k, policy)
    event = _plan.release_event(priv, parts, None if sel is None else sel.delta)
    return Plan(stat, k, c, bnd, count_part, sum_part, parts,
                None if sel is None else sel.threshold, event, fixed, sel, pol, integer,
                bounds)


def summands(plan: Plan, vals: np.ndarray | None) -> np.ndarray | None:
    """The int64 values the bounding step sums: clamped integers (centred ``2x - lo - hi``
    for a mean), or float values' fixed-point units (:func:`dpfast.tables._fixed.to_units`,
    centred for a mean)."""
    return summands_of(plan.stat, plan.bnd, plan.fixed, vals)


def summands_of(stat: str, bnd: tuple[float, float] | None, fixed: _fixed.Fixed | None,
                vals: np.ndarray | None) -> np.ndarray | None:
    """:func:`summands` from the plan's public parts only (what a cluster task gets)."""
    if vals is None:
        return None
    if fixed is not None:
        return _fixed.to_units(fixed, vals)
    if stat != "mean":
        return vals
    assert bnd is not None  # (a mean has bounds)
    lo, hi = bnd
    out = vals * 2  # a new array (then centred in place: one allocation, not two)
    out -= lo + hi
    return out


def fixed_exp(plan: Plan) -> int | None:
    """The exponent of the fixed-point units the bounding step sums exactly in two words
    (0 for integer values; None for a count, which sums no values)."""
    if plan.sum_part is None:
        return None
    return 0 if plan.fixed is None else plan.fixed.exp


def release(plan: Plan, data: _Data, agg: bounding.Bounded, gen: _random.Generator,
            release_id: int | None) -> TableRelease:
    """Noise, select and report the bounded aggregates ``agg`` (per key code of
    ``data.uniques``).  The budget has been charged."""
    cand = _candidates(data, agg.counts)                                  # aggregate
    stream = keynoise.release_stream(gen)  # the release's id: after the charge
    rkey = keynoise.release_key(gen._key, stream)
    cand_keys = _take_keys(data.uniques, cand)
    keep = None
    noisy_count = None
    count_part, sum_part, tau = plan.count_part, plan.sum_part, plan.tau
    if plan.select is not None:                                           # select
        measure = _select.measure(plan.select, agg.units, agg.weighted)
        keep = _select.apply(plan.select, measure[cand], rkey, cand_keys)
        # noise only the published keys (each key's noise is addressed: the same values)
        cand = cand[keep]
        cand_keys = _take_keys(data.uniques, cand)
        keep = None
    if count_part is not None:                                            # noise
        noisy_count = keynoise.noise_keys(count_part.law, agg.counts[cand], rkey, cand_keys,
                                          keynoise.COUNT_PART)
    noisy_sum = None
    if sum_part is not None:
        assert agg.sums is not None
        noisy_sum = keynoise.noise_keys(sum_part.law, agg.sums[cand], rkey, cand_keys,
                                        keynoise.SUM_PART)
    parts, k, c, event = plan.parts, plan.k, plan.c, plan.event
    sens: dict[str, float] = {"l1": parts[-1].l1, "l2": parts[-1].l2, "max_partitions": k,
                            "max_per_partition": c}
    if plan.select is not None:  # the unit counts: one person changes k of them by 1
        sens["selection_l1"] = float(k)
    sel = plan.select
    if plan.stat == "count":
        assert count_part is not None and noisy_count is not None
        out_keys, (v,) = _finish(data, cand, keep, [noisy_count])
        return TableRelease(keys=out_keys, values=v, statistic="count", event=event,
                            law=count_part.law, threshold=tau, sensitivity=sens,
                            key_names=data.key_names, release_id=release_id,
                            selection=sel)
    assert sum_part is not None and noisy_sum is not None
    if plan.stat == "sum":
        out_keys, (v,) = _finish(data, cand, keep, [noisy_sum])
        return TableRelease(keys=out_keys, values=v, statistic="sum", event=event,
                            law=sum_part.law, threshold=tau, sensitivity=sens,
                            key_names=data.key_names, release_id=release_id,
                            selection=sel)
    assert count_part is not None and noisy_count is not None and plan.bnd is not None
    out_keys, (s, n) = _finish(data, cand, keep, [noisy_sum, noisy_count])
    lo, hi = float(plan.bnd[0]), float(plan.bnd[1])
    means = np.clip(((lo + hi) + s / np.maximum(n, 1)) / 2, lo, hi)       # post-process
    means[n <= 0] = (lo + hi) / 2
    return TableRelease(keys=out_keys, values=means.astype(np.float64), statistic="mean",
                        event=event, law=sum_part.law, threshold=tau, sensitivity=sens,
                        key_names=data.key_names,
                        mean_parts=(s.astype(np.float64), n, sum_part.law, count_part.law,
                                    lo, hi), release_id=release_id, selection=sel)


def plan_of(stat: str, spec: ReleaseSpec, rows: Source) -> Plan:
    """The plan of a count / sum / mean ``spec`` over ``rows`` (its value dtype is the
    only thing read: whether the values are integers)."""
    priv = spec.privacy()
    k, c = _common(spec.max_partitions, spec.max_per_partition,
                   True if rows.has_privacy_ids() else None)
    bnd = None
    integer = True
    bounds = None
    if stat != "count":
        integer = rows.value_kind() in "iu"
        bounds = spec.bounds
        bnd = _inputs._bounds(bounds, integer)
    return _make_plan(stat, k, c, priv, bnd, integer, spec.selection, spec.bounding, bounds)
