"""Group-by count, sum and mean releases with bounded contributions.

Each public function runs the pipeline of :mod:`dpfast.tables`: validate (and factorize)
-> bound -> charge -> aggregate -> noise -> post-process (partition selection) -> report.
Each step is a function below (``_validate`` of :mod:`dpfast.tables._inputs`, ``_make_plan``,
:func:`dpfast.tables.bounding.bound_codes`, ``_charge``, :func:`release` with the per-key
addressed noise of :mod:`dpfast.tables.keynoise` and the selection,
:class:`~dpfast.tables.release.TableRelease`).  ``_make_plan`` / ``summands`` /
``release`` are shared with :mod:`dpfast.dask`, which aggregates on a cluster.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast.random import RngLike
from dpfast.tables import _fixed, _plan, _select, _usecase, bounding, keynoise
from dpfast.tables._charge import charged
from dpfast.tables._inputs import _Data, _validate, check_int_summands
from dpfast.tables.release import TableRelease

__all__ = ["count", "sum", "mean"]


# ----------------------------------------------------------------------------- charge
def _check_budget(budget: Any, note: Any) -> None:
    if not isinstance(note, str):
        raise TypeError(f"note must be a str, got {type(note).__name__}")
    if budget is not None and not callable(getattr(budget, "spend", None)):
        raise TypeError(f"budget must be a dpfast.Budget, got {type(budget).__name__}")


#: ``with _charge(budget, event, note): <release>``: the whole release is charged before
#: any noise is drawn (a refusal raises, nothing is returned); a failure after the charge
#: is recorded in the ledger as failed, the budget is not refunded
_charge = charged


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


def _take_keys(uniques: Any, codes: np.ndarray) -> Any:
    if isinstance(uniques, tuple):
        return tuple(u[codes] for u in uniques)
    return uniques[codes]


def _finish(data: _Data, cand: np.ndarray, keep: np.ndarray | None,
            arrays: list[np.ndarray]) -> tuple[Any, list[np.ndarray]]:
    """Post-process: apply the selection (``keep`` over ``cand``), or put the domain's keys
    back in the caller's order."""
    if data.domain_codes is not None:
        pos = np.searchsorted(cand, data.domain_codes)  # cand is the sorted domain
        return _take_keys(data.uniques, data.domain_codes), [a[pos] for a in arrays]
    if keep is None:
        keep = np.ones(cand.shape[0], np.bool_)
    return _take_keys(data.uniques, cand[keep]), [a[keep] for a in arrays]


# ----------------------------------------------------------------------------- pipeline
def _common(max_partitions: Any, max_per_partition: Any, privacy_ids: Any
            ) -> tuple[int, int]:
    k = bounding.positive_int(max_partitions, "max_partitions")
    c = bounding.positive_int(max_per_partition, "max_per_partition")
    if privacy_ids is None:
        return 1, 1  # every row is a different person: one row, one key
    return k, c


@dataclasses.dataclass
class Plan:
    """The data-independent part of a release: bounds, laws, threshold, event and the
    generator (whose allocator gives the release its stream id when the noise is drawn,
    after the charge: it addresses the per-key noise, :mod:`.keynoise`)."""

    stat: str
    k: int
    c: int
    bnd: Any
    count_part: _plan.Part | None
    sum_part: _plan.Part | None
    parts: list[_plan.Part]
    tau: int | None
    event: Any
    gen: _random.Generator
    release_id: int | None = None  # a raw key's fresh release id (keynoise.release_generator)
    fixed: _fixed.Fixed | None = None  # float values: the fixed-point grid of the summands
    select: _select.Selection | None = None  # private key selection (domain=None)
    bounding: int = 0  # bounding.policy_code of the bounding policy


def shares(stat_parts: int, select: bool) -> Fraction:
    """The budget share of each measurement: the ``stat_parts`` noised statistics (count:
    1, sum: 1, mean: 2) and, with private key selection, the selection, all equal
    (``1 / (stat_parts + 1)`` each with selection, PipelineDP's default split)."""
    return Fraction(1, stat_parts + (1 if select else 0))


def _make_plan(stat: str, k: int, c: int, priv: _plan.Privacy, bnd: Any, integer: bool,
               gen: _random.Generator, use_case: str | None,
               release_id: int | None = None, selection: Any = "auto",
               bounding_policy: Any = "uniform") -> Plan:
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
        lo, hi = bnd
        fixed = _fixed.fixed_grid(lo, hi, sum_part.law.granularity, c, stat == "mean")
    sel = None
    if priv.select:
        sel = _select.plan(sel_eps, sel_delta, k, policy)
    event = _plan.release_event(priv, parts, None if sel is None else sel.delta)
    _usecase.check(use_case, priv.epsilon, priv.delta, priv.rho)         # guidelines
    return Plan(stat, k, c, bnd, count_part, sum_part, parts,
                None if sel is None else sel.threshold, event, gen, release_id, fixed, sel,
                pol)


def summands(plan: Plan, vals: np.ndarray | None) -> np.ndarray | None:
    """The int64 values the bounding step sums: clamped integers (centred ``2x - lo - hi``
    for a mean), or float values' fixed-point units (:func:`dpfast.tables._fixed.to_units`,
    centred for a mean)."""
    return summands_of(plan.stat, plan.bnd, plan.fixed, vals)


def summands_of(stat: str, bnd: Any, fixed: _fixed.Fixed | None, vals: np.ndarray | None
                ) -> np.ndarray | None:
    """:func:`summands` from the plan's public parts only (what a cluster task gets)."""
    if vals is None:
        return None
    if fixed is not None:
        return _fixed.to_units(fixed, vals)
    if stat != "mean":
        return vals
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


def release(plan: Plan, data: _Data, agg: bounding.Bounded) -> TableRelease:
    """Noise, select and report the bounded aggregates ``agg`` (per key code of
    ``data.uniques``).  The budget has been charged."""
    cand = _candidates(data, agg.counts)                                  # aggregate
    stream = keynoise.release_stream(plan.gen)  # the release's id: after the charge
    rkey = keynoise.release_key(plan.gen._key, stream)
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
    sens: dict[str, Any] = {"l1": parts[-1].l1, "l2": parts[-1].l2, "max_partitions": k,
                            "max_per_partition": c}
    if plan.select is not None:  # the unit counts: one person changes k of them by 1
        sens["selection_l1"] = float(k)
    sel = plan.select
    if plan.stat == "count":
        assert count_part is not None and noisy_count is not None
        out_keys, (v,) = _finish(data, cand, keep, [noisy_count])
        return TableRelease(keys=out_keys, values=v, statistic="count", event=event,
                            law=count_part.law, threshold=tau, sensitivity=sens,
                            key_names=data.key_names, release_id=plan.release_id,
                            selection=sel)
    assert sum_part is not None and noisy_sum is not None
    if plan.stat == "sum":
        out_keys, (v,) = _finish(data, cand, keep, [noisy_sum])
        return TableRelease(keys=out_keys, values=v, statistic="sum", event=event,
                            law=sum_part.law, threshold=tau, sensitivity=sens,
                            key_names=data.key_names, release_id=plan.release_id,
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
                                    lo, hi), release_id=plan.release_id, selection=sel)


def _run(stat: str, keys: Any, privacy_ids: Any, values: Any, bounds: Any, *,
         epsilon: Any, delta: Any, rho: Any, max_partitions: Any, max_per_partition: Any,
         domain: Any, noise: Any, rng: Any, budget: Any, note: Any,
         use_case: str | None = None, dropna: bool = False, selection: Any = "auto",
         bounding_policy: Any = "uniform") -> TableRelease:
    if not isinstance(dropna, (bool, np.bool_)):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if isinstance(bounds, str):  # bounds="auto": private quantiles pick them
        if bounds != "auto":
            raise ValueError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        from dpfast.tables import autobounds  # lazy: autobounds imports this module

        return autobounds.run_auto(stat, keys, privacy_ids, values, epsilon=epsilon,
                                   delta=delta, rho=rho, max_partitions=max_partitions,
                                   max_per_partition=max_per_partition, domain=domain,
                                   noise=noise, rng=rng, budget=budget, note=note,
                                   use_case=use_case, dropna=dropna, selection=selection,
                                   bounding_policy=bounding_policy)
    k, c = _common(max_partitions, max_per_partition, privacy_ids)
    priv = _plan.privacy(epsilon, delta, rho, noise, select=domain is None)
    _check_budget(budget, note)
    gen, rid = keynoise.release_generator(rng)  # a raw key: a fresh release id
    data, bnd = _validate(keys, privacy_ids, values, bounds, domain)   # validate
    integer = data.values is None or data.values.dtype.kind == "i"
    plan = _make_plan(stat, k, c, priv, bnd, integer, gen, use_case, rid,  # plan
                      selection, bounding_policy)
    skey = bounding.subkey(gen)
    agg = bounding.bound_codes(data.codes, data.n_codes, data.ids, k, c, skey,  # bound
                               summands(plan, data.values), fixed_exp(plan), plan.bounding,
                               _select.unit_weights(plan.select))
    with _charge(budget, plan.event, note):                              # charge
        return release(plan, data, agg)


def count(keys: Any, privacy_ids: Any = None, *, epsilon: float | None = None,
          delta: float = 0.0, rho: float | None = None, max_partitions: int = 1,
          max_per_partition: int = 1, domain: Any = None, noise: str | None = None,
          rng: RngLike = None, budget: Any = None, note: str = "",
          use_case: str | None = None, dropna: bool = False, selection: str = "auto",
          bounding: str = "uniform") -> TableRelease:
    """Release the number of rows per key, with bounded contributions.

    Parameters
    ----------
    keys : array_like, pandas Series, tuple of arrays or DataFrame
        One key per row: ints, floats, str or bytes; several columns for multi-column keys.
    privacy_ids : array_like, optional
        The person (privacy unit) of each row.  None: every row is a different person.
    epsilon, delta : float
        ``(epsilon, delta)``-DP target.  ``delta`` is needed for ``domain=None`` (partition
        selection) and for Gaussian noise.  Supported range: ``epsilon <= 2**30`` and a
        noise scale (or σ) of every part in ``[2**-100, 2**50]`` -- outside it a
        ValueError naming the parameter, before the charge (docs/security.md,
        "Parameters and data").
    rho : float, optional
        zCDP target instead of ``epsilon`` (discrete Gaussian noise; needs ``domain``).
    max_partitions, max_per_partition : int
        Contribution bounds per privacy id: ``k`` keys, ``c`` rows per key (ignored, i.e.
        1, when ``privacy_ids`` is None).
    domain : array_like or tuple of arrays, optional
        The public keys: exactly these are released, in this order (keys without rows get
        a noisy zero; rows of other keys are dropped before bounding).  None: the keys are
        private and chosen by thresholding (needs ``delta > 0``).
    noise : {None, "laplace", "gaussian"}
        Default: discrete Laplace with ``epsilon``, discrete Gaussian with ``rho``.  With
        ``domain=None`` and ``"gaussian"`` (``epsilon, delta`` only): the statistics are
        calibrated at ``(ε (1 - s), δ/2)`` and the selection at ``(ε s, δ/2)``, ``s`` its
        share.
    rng : None, Generator or bytes
        The CSPRNG.  A raw 32-byte key gets a fresh release id per release (recorded as
        :attr:`TableRelease.release_id`): two releases with one key never share noise.  To
        replay a release (tests, audits) pass a generator rebuilt from the key,
        ``dpfast.default_rng(key)`` (its allocator numbers its releases), or the release
        generator of a raw key's release, ``keynoise.keyed_generator(key, release_id)``.
        Whoever holds the key can remove the noise.
    budget : dpfast.Budget, optional
        Charged with :attr:`TableRelease.event` before any noise is drawn; a refusal raises
        :class:`dpfast.BudgetExceededError` and nothing is returned.
    note : str
        Recorded in the budget's ledger.
    use_case : str, optional
        A use case of :mod:`dpfast.guidelines`: a ``UserWarning`` when the release's
        ``epsilon`` leaves its conventional range.
    dropna : bool
        Kept for compatibility: rows with a missing key (None, NaN, pandas NA/NaT, in any
        key column), privacy id or value are dropped first whatever its value (a per-row
        filter: the guarantee is unchanged; an error would depend on the private rows,
        docs/security.md "Parameters and data").  ``±inf`` values are clamped to the
        bounds; a ``±inf`` key is an ordinary float key.
    selection : {"auto", "geometric", "gaussian", "weighted_gaussian", "laplace"}
        With ``domain=None``: the rule that selects the keys on the noisy number of
        distinct privacy units per key (:mod:`dpfast.tables._select`).  ``"auto"``: the
        optimal truncated-geometric rule for ``max_partitions = 1``; otherwise the
        geometric rule or Gaussian thresholding, whichever keeps a key with probability
        1/2 at the fewer units (a data-independent choice: geometric for small
        ``max_partitions``, Gaussian from about 5), Gaussian thresholding in its weighted
        form (``"weighted_gaussian"``: a person with ``t`` kept keys adds ``sqrt(k/t)``
        to each, Gopi et al. 2020) whenever that keeps every key at least as often.
    bounding : {"uniform", "frequent"}
        Which keys a person keeps when they have more than ``max_partitions``: chosen
        uniformly, or the ones with the most rows (ties broken uniformly at random).
        ``max_per_partition`` rows per kept key are chosen uniformly either way.

    Returns
    -------
    TableRelease
        ``.keys``, ``.counts`` (int64), ``.event``, ``.confidence_interval(alpha)``,
        ``.accuracy(truth)``, ``.to_pandas()``.

    Raises
    ------
    ValueError, TypeError
        Bad public input (named): mismatched lengths, bad privacy parameters or a noise
        scale outside the supported range, ...  Never for the rows' contents: missing
        keys, ids and values drop their rows, ``±inf`` values are clamped.
    BudgetExceededError
        The budget refused the release.

    Privacy
    -------
    Neighbouring datasets differ by adding or removing one person (all rows of one privacy
    id; one row when ``privacy_ids`` is None).  After bounding, one person changes at most
    ``k`` counts by at most ``c`` each: L1 sensitivity ``Δ1 = k c``, L2 sensitivity
    ``Δ2 = sqrt(k) c``.  Discrete Laplace noise of scale ``t >= Δ1 / ε`` gives ε-DP
    (Ghosh et al. 2009; CKS20); discrete Gaussian noise of ``σ`` gives
    ``Δ2² / (2σ²)``-zCDP (CKS20).  With a public ``domain`` the released keys do not depend
    on the data.  With ``domain=None`` the keys are chosen by a separate measurement: the
    number of distinct privacy units per key after bounding (one person changes ``k`` of
    them by 1: sensitivity ``k``, whatever ``c``), decided by the ``selection`` rule at
    ``(ε/2, δ)`` -- ``"geometric"``: Desfontaines, Voss, Gipson, Mandayam,
    "Differentially private partition selection", PoPETs 2022 (at ``ε/2k, δ/k`` per key for
    ``k > 1``); ``"gaussian"`` / ``"weighted_gaussian"``: Gopi et al., "Differentially
    private set union", ICML 2020, ``δ = δ_noise + δ_threshold``; ``"laplace"``: Wilson
    et al. 2020 -- and the counts are noised with the other ``ε/2``.  The release is
    ``(ε, δ_sel)``-DP, ``δ_sel <= δ`` the selection's exact δ (rounded up;
    :attr:`TableRelease.event`).  Contribution bounding depends only on each person's own
    rows (and the key), so it does not change the sensitivity of the others'
    contributions.

    Numerics
    --------
    Exact integer aggregation and exact samplers; the noise scale and threshold are
    rounded to the safe side (scale up, δ up).
    """
    return _run("count", keys, privacy_ids, None, None, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, dropna=dropna, selection=selection,
                bounding_policy=bounding)


def sum(values: Any, keys: Any, privacy_ids: Any = None, *,  # noqa: A001
        bounds: tuple[float, float] | str,
        epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
        max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
        noise: str | None = None, rng: RngLike = None, budget: Any = None,
        note: str = "", use_case: str | None = None, dropna: bool = False,
        selection: str = "auto", bounding: str = "uniform") -> TableRelease:
    """Release the sum of ``values`` per key, values clamped to ``bounds``.

    Parameters are those of :func:`count` (``dropna`` too), plus ``values`` (one number
    per row) and
    ``bounds = (lo, hi)``: integer values need integer bounds and get exact discrete noise;
    float values are summed exactly in fixed point (see Privacy) and released on the secure
    grid of :func:`dpfast.laplace` / :func:`dpfast.gaussian`.  With ``domain=None`` half the
    budget goes to the key selection on the number of privacy units per key (not
    released; see :func:`count`) and half to the sums.
    ``bounds="auto"`` (``epsilon`` targets only): 10% of ε chooses the bounds by private
    quantiles (:mod:`dpfast.tables.autobounds`: the 1st and 99th percentiles of one row
    per person on a grid of signed powers of two, with a geometric base measure around a
    private centre), the other 90% releases the sums; the composed event is charged once
    and the bounds are :attr:`TableRelease.bounds`.

    Privacy
    -------
    As :func:`count`, with ``B = max(|lo|, |hi|)``: ``Δ1 = k c B``, ``Δ2 = sqrt(k) c B``
    (add/remove one person).  Float sums: the grid rounding adds one grid step per changed
    key to the sensitivity (``max_changed = k``; Google DP team, "Secure Noise Generation").
    The sensitivity holds in the arithmetic that computes the sum (Casacuberta et al.,
    "Widespread Underestimation of Sensitivity in DP Libraries", CCS 2022): each clamped
    float value is rounded once to the fixed-point grid ``q = 2**e`` (``q = g / 2**10``
    for the output grid ``g``, coarser only where the bounds need it), clamped again to
    ``[ceil(lo/q), floor(hi/q)] q`` so that ``|rounded value| <= B`` exactly, and summed
    exactly in integers (two words, sized so that no input reaches ``2**94 q``); the exact total is
    rounded once to ``g`` and noised.  One person therefore moves a key's exact total by at
    most ``c B`` and its grid value by at most ``c B + g``, whatever the other rows and
    their order (:mod:`dpfast.tables._fixed`).  ``bounds="auto"``: the bounds cost
    ``ε/10`` (four exponential mechanisms on one row per person, ``Δ = 1``, see
    :func:`dpfast.tables.auto_bounds`; McSherry & Talwar 2007), the sums ``9ε/10`` given
    them (sequential composition, ``ε`` in all); event ``Composed((bounds, statistic))``.

    Numerics
    --------
    Integer values: exact two-word sums, saturated at ``±2**62`` before the noise
    (1-Lipschitz: the sensitivity holds), so no input overflows; ``max_per_partition *
    max(|lo|, |hi|) >= 2**62`` is refused (ValueError) before the charge.  A release
    takes fewer than ``2**40`` rows.
    Float values: exact fixed-point sums as above, so a release does not depend on the row
    order, the thread count or a cluster's partitioning (bit for bit).
    """
    return _run("sum", keys, privacy_ids, values, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, dropna=dropna, selection=selection,
                bounding_policy=bounding)


def mean(values: Any, keys: Any, privacy_ids: Any = None, *,
         bounds: tuple[float, float] | str,
         epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
         max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
         noise: str | None = None, rng: RngLike = None, budget: Any = None,
         note: str = "", use_case: str | None = None, dropna: bool = False,
         selection: str = "auto", bounding: str = "uniform") -> TableRelease:
    """Release the mean of ``values`` per key: noisy centred sum / noisy count.

    The budget is split in half (``ε/2`` or ``ρ/2`` each) between the count and the sum of
    the centred values ``2x - lo - hi`` (range ``[-(hi - lo), hi - lo]``); the mean is
    ``(lo + hi + S / max(N, 1)) / 2`` clipped to the bounds (post-processing), the midpoint
    where the noisy count is not positive.  With ``domain=None`` the budget is split in
    three equal ``ε/3``: the key selection on the number of privacy units per key (see
    :func:`count`), the count and the centred sum.  Confidence intervals are conservative (see
    :meth:`TableRelease.confidence_interval`).
    ``bounds="auto"``: as in :func:`sum`.

    Privacy
    -------
    Composition of the count (``Δ1 = k c``) and the centred sum (``Δ1 = k c (hi - lo)``),
    each at half the budget: ``ε``-DP (or ``ρ``-zCDP) overall; with private key selection
    the three measurements at ``ε/3`` each, ``(ε, δ_sel)``-DP (``δ_sel <= δ`` the
    selection's exact δ).  Neighbouring relation: add/remove one person.  Float values: the
    centred summand is ``(2u - ceil(lo/q) - floor(hi/q)) q`` with ``u`` the value rounded
    once to the fixed-point grid ``q`` and clamped to ``[ceil(lo/q), floor(hi/q)]`` (see
    :func:`sum`), so ``|summand| <= hi - lo`` exactly and the sum is exact (Casacuberta et
    al., CCS 2022).
    """
    return _run("mean", keys, privacy_ids, values, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, dropna=dropna, selection=selection,
                bounding_policy=bounding)

