"""The error model of :func:`dpfast.tables.tune`: for each candidate
``(max_partitions, max_per_partition)``, each statistic's predicted error, split into the
bias of the dropped contributions (from the contribution summary,
:mod:`dpfast.tables._tune_summary`) and the variance (the noise exactly, from the noise
laws of the very plan the release would run: :func:`dpfast.tables.multi.plan_of` of the
spec at that candidate, then the sampling of the kept rows), and the recommendation (the
candidate of least weighted relative error).

With ``K`` keys, ``N`` rows and ``T(k, c)`` the rows uniform bounding keeps
(:meth:`Summary.rows`), key ``j`` holds ``F_j = a_j N / K`` rows and keeps
``n_j = a_j T / K``: every key keeps the same fraction ``T / N`` of its rows, ``a_j`` its
size relative to the mean (``Summary.key_shares``: a public sample's own key sizes, or the
log-normal of the DP summary's spread).  The variance of a mean or a quantile is averaged
over the keys (the prediction is the root mean square error over the keys):

* ``count``: bias ``-(N - T) / K`` (the mean over the keys of ``n_j - F_j``), variance
  ``Var(noise of the count)``; relative to ``N / K``;
* ``privacy_id_count``: bias ``-(Σ L0 - Σ min(L0, k)) / K``, variance of its noise;
  relative to ``Σ L0 / K``;
With public bounds ``(lo, hi)`` (taken as holding the values):

* ``sum``: bias ``-(N - T) / K · |mid|`` (the dropped rows valued at the bounds'
  midpoint), variance of its noise; relative to ``N / K · max(|lo|, |hi|)``;
* ``mean``: bias 0 (rows are dropped without regard to their values), variance ``v_j``
  saturating at ``5σ²/2``, ``v_j = (Var(s)/4 + σ² Var(n)) / n_j² + σ² (1/n_j - 1/F_j)``
  (first order in the noisy centred sum ``s`` and count; then the sampling of the kept
  rows), ``σ = (hi - lo)/4`` the values' typical spread (and the truth's distance from
  the midpoint); the cap (:data:`DROWNED`): a key drowned in noise releases the midpoint
  (its noisy count ``<= 0``, about half the time), ``σ`` from the truth, or a clamped
  bound, about ``2σ`` from it; relative to ``σ``;
* ``median`` / ``quantile`` / ``min`` / ``max``: in quantiles (fractions of the key's
  rows), bias 0, variance ``(r/n_j)² + q(1-q) (1/n_j - 1/F_j)`` saturating at
  :data:`DROWNED_Q` (a release near uniform over the bounds): ``r`` the median rank error
  of the exponential mechanism (:func:`dpfast.tables._quantile_em.rank_error` at
  ``α = 1/2``, its ``ε`` per key and sensitivity ``c``) over the key's kept rows, then
  their sampling; relative to ``1/2``.

A column without public bounds has a value histogram (:mod:`dpfast.tables._tune_values`:
DP, or a public sample's), and at each ``(k, c)`` the tuning picks its bounds among the
histogram's candidates ``[g_a, g_b]`` (:meth:`Values.candidates`) to minimise the weighted
relative error of the column's metrics, each predicted in values, relative to the values'
standard deviation ``sd`` (the histogram's; the same for every candidate), with ``μ`` the
values' mean and ``μ_c``, ``σ_c²`` the mean and variance of the values clamped to the
candidate:

* ``mean``: bias ``|μ_c - μ|`` (the clamping's), variance as above with the noise of the
  centred sum scaled to the candidate's width (its sensitivity ``k c (hi - lo)``), ``σ_c²``
  for the sampling and ``(μ_c - mid)²`` for the noisy count's term, saturating at the
  drowned key's ``((mid - μ)² + ((lo - μ)² + (hi - μ)²)/2) / 2``;
* ``sum``: bias ``-(N - T) / K · |μ| - T / K · |μ_c - μ|``, its noise scaled to
  ``max(|lo|, |hi|)``; relative to ``N / K · (|μ| + sd)``;
* a rank metric: the variance in quantiles above times the squared slope of the clamped
  values' quantile function at ``q`` (a difference over ``q ± 0.1``), saturating at
  ``E (U - m)²``, ``U`` uniform on ``[lo, hi]`` (the mechanism on a drowned key), ``m`` the
  values' ``q`` quantile; bias ``m``'s distance to the candidate.

The candidates' keys are not told apart: the clamping bias and the quantile's slope are
the pooled values', every key taken as drawn from them.

``error = sqrt(bias² + variance)``; the score of a candidate is the metrics' weighted mean
relative error.  The model is a prediction, not a guarantee: the summary is noisy (private)
or a sample, a person's number of keys and the rows of their keys are taken independent,
and every key keeps the same share of its rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfast.tables import _metrics, _rank_metrics, multi
from dpfast.tables import _quantile_em as _em
from dpfast.tables._tune_summary import Summary
from dpfast.tables._tune_values import Values

if TYPE_CHECKING:
    from dpfast.tables.run import Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["Prediction", "Candidate", "K_GRID", "C_GRID", "TUNABLE", "DROWNED", "predict",
           "DROWNED_Q", "search", "check_metrics", "over_keys", "with_bounds"]

#: the default candidates
K_GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
C_GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128)
#: a drowned key's mean squared error of the mean, in ``σ²`` (``(1 + 4) / 2``: the
#: midpoint or a clamped bound, equally likely)
DROWNED = 2.5
#: a drowned key's mean squared error of a quantile, in quantiles: the exponential
#: mechanism's output near uniform over the bounds ``[m - 2σ, m + 2σ]``, the values
#: ``N(m, σ²)``: ``E (Φ(Z) - 1/2)²``, ``Z`` uniform on ``[-2, 2]`` (quadrature)
DROWNED_Q = 0.113147
#: the half-width (in quantiles) of the difference that gives a quantile's slope
SLOPE_STEP = 0.1
#: the metric kinds the model predicts
TUNABLE = ("count", "privacy_id_count", "sum", "mean", "median", "quantile", "min", "max")


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One statistic's predicted error over the keys: ``bias`` (signed, their mean),
    ``variance`` (the noise and sampling, their mean), ``error = sqrt(bias² + variance)``
    (the root mean square), in ``unit``; ``relative``: the error over the statistic's
    typical size (see the module docstring)."""

    bias: float
    variance: float
    unit: str
    reference: float

    @property
    def error(self) -> float:
        return math.sqrt(self.bias * self.bias + self.variance)

    @property
    def relative(self) -> float:
        return self.error / self.reference if self.reference > 0 else math.inf


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One candidate's predictions (by metric name) and score."""

    max_partitions: int
    max_per_partition: int
    predictions: dict[str, Prediction]
    score: float
    #: the value bounds chosen at this candidate (the columns without public bounds)
    bounds: dict[str, tuple[Any, Any]] = dataclasses.field(default_factory=dict)


def check_metrics(spec: ReleaseSpec, where: str = "metrics") -> None:
    """ValueError unless every metric of ``spec`` is one the model predicts."""
    bad = sorted({s.statistic for s in spec.statistics if s.statistic not in TUNABLE})
    if bad:
        raise ValueError(f"{where}: the tuning predicts {', '.join(TUNABLE)}; not {bad}")


def _var(plan: multi.MultiPlan, part: str) -> float:
    return plan.metrics.parts[part].part.law.std() ** 2


def _tuned(m: _metrics.Metric, plan: multi.MultiPlan, vals: Values, ab: tuple[int, int],
           k: int, c: int, n_key: np.ndarray, n_full: np.ndarray, n_all: float,
           n_kept: float, kk: float, at: np.ndarray) -> Prediction:
    """One metric's prediction on a column whose bounds are chosen: at the grid indices
    ``ab`` of the column's value histogram ``vals`` (the plan's laws at its placeholder
    bounds, the noise of the sums scaled by the bounds' sensitivity), in values, relative
    to the values' standard deviation."""
    assert m.column is not None
    a, b = ab
    mp = plan.metrics
    col = mp.columns[m.column]
    lo, hi = (float(x) for x in vals.bounds(a, b))
    mu, sd = vals.spread
    if vals.empty:  # nothing above the noise: bounds that say nothing of the data
        return Prediction(math.inf, 0.0, "value", sd)
    if m.kind in ("sum", "mean"):
        mc, vc = vals.moments(a, b)
        e = abs(mc - mu)  # the clamping's bias of a value (the keys' mean taken as all's)
        if m.kind == "sum":
            width0 = max(abs(float(col.lo)), abs(float(col.hi)))
            ratio = (max(abs(lo), abs(hi)) / width0) ** 2
            return Prediction(0.0 - (n_all - n_kept) / kk * abs(mu) - n_kept / kk * e,
                              _var(plan, f"sum:{m.column}") * ratio, "value",
                              n_all / kk * (abs(mu) + sd))
        ratio = ((hi - lo) / (float(col.hi) - float(col.lo))) ** 2
        mid = (lo + hi) / 2
        vj = ((_var(plan, f"csum:{m.column}") * ratio / 4 + (mc - mid) ** 2
               * _var(plan, "count")) / n_key ** 2 + vc * sampled(n_key, n_full))
        drowned = ((mid - mu) ** 2 + ((lo - mu) ** 2 + (hi - mu) ** 2) / 2) / 2
        return Prediction(e, over_keys(vj, at, max(drowned, 1e-300)), "value", sd)
    rp = mp.ranks[_metrics.part_name("quantile", m.column, m.q)]
    r = _em.rank_error(rp.eps_q, c, int(mp.grids[m.column].shape[0]), 0.5, rp.q)
    vq = (r / n_key) ** 2 + rp.q * (1 - rp.q) * sampled(n_key, n_full)
    h = min(SLOPE_STEP, rp.q, 1.0 - rp.q) or SLOPE_STEP
    slope = ((vals.quantile(min(rp.q + h, 1.0), a, b) - vals.quantile(max(rp.q - h, 0.0), a, b))
             / (min(rp.q + h, 1.0) - max(rp.q - h, 0.0)))
    m0 = vals.quantile(rp.q)  # the unclamped quantile
    drowned = ((hi - m0) ** 3 - (lo - m0) ** 3) / (3.0 * (hi - lo))  # E(U - m0)², U on [lo, hi]
    return Prediction(abs(m0 - min(max(m0, lo), hi)),
                      over_keys(vq * slope ** 2, at, max(drowned, 1e-300)), "value", sd)


def predict(spec: ReleaseSpec, source: Source, summary: Summary, k: int, c: int,
            values: Mapping[str, Values] | None = None) -> Candidate:
    """The predictions of the release ``spec`` at ``(k, c)`` (its plan's laws);
    ``values``: the value histograms of the columns whose bounds are chosen (each gets the
    candidate bounds of least weighted relative error of its metrics at ``(k, c)``)."""
    values = values or {}
    plan = multi.plan_of(dataclasses.replace(spec, max_partitions=k, max_per_partition=c),
                         source, _statistics_parts())
    mp = plan.metrics
    kk = max(summary.n_keys, 1.0)
    n_all, n_kept = summary.rows(), summary.rows(k, c)
    shares, at = summary.key_shares, summary.key_weights
    n_key = np.maximum(shares * (n_kept / kk), 1.0)  # kept rows of each key (at least 1)
    n_full = np.maximum(shares * (n_all / kk), n_key)
    out: dict[str, Prediction] = {}
    weights = _metrics.parse_weights(None if spec.option("weights") is None
                                     else list(spec.option("weights")), mp.metrics)
    score = 0.0
    tuned: dict[str, list[tuple[_metrics.Metric, float]]] = {}
    for m, w in zip(mp.metrics, weights, strict=True):
        if m.column is not None and m.column in values:
            tuned.setdefault(m.column, []).append((m, float(w)))
            continue
        if m.kind == "count":
            p = Prediction(0.0 - (n_all - n_kept) / kk, _var(plan, "count"), "rows",
                           n_all / kk)
        elif m.kind == "privacy_id_count":
            pairs = summary.pairs()
            p = Prediction(0.0 - (pairs - summary.pairs(k)) / kk, _var(plan, "ids"),
                           "people", pairs / kk)
        elif m.kind in ("sum", "mean"):
            assert m.column is not None
            col = mp.columns[m.column]
            lo, hi = float(col.lo), float(col.hi)
            if m.kind == "sum":
                p = Prediction(0.0 - (n_all - n_kept) / kk * abs((lo + hi) / 2),
                               _var(plan, f"sum:{m.column}"), "value",
                               n_all / kk * max(abs(lo), abs(hi)))
            else:
                sd = (hi - lo) / 4  # the values' typical spread
                vj = ((_var(plan, f"csum:{m.column}") / 4 + sd ** 2 * _var(plan, "count"))
                      / n_key ** 2 + sd ** 2 * sampled(n_key, n_full))
                p = Prediction(0.0, over_keys(vj, at, DROWNED * sd ** 2), "value", sd)
        else:  # a rank metric: in quantiles (fractions of the key's rows)
            assert m.column is not None
            rp = mp.ranks[_metrics.part_name("quantile", m.column, m.q)]
            g = mp.grids[m.column]
            r = _em.rank_error(rp.eps_q, c, int(g.shape[0]), 0.5, rp.q)
            vj = (r / n_key) ** 2 + rp.q * (1 - rp.q) * sampled(n_key, n_full)
            p = Prediction(0.0, over_keys(vj, at, DROWNED_Q), "quantile", 0.5)
        out[m.name] = p
        score += float(w) * min(p.relative, 1e12)
    chosen: dict[str, tuple[int, int]] = {}
    for name, mets in tuned.items():
        best: tuple[float, tuple[int, int], dict[str, Prediction]] | None = None
        for ab in values[name].candidates():
            preds = {m.name: _tuned(m, plan, values[name], ab, k, c, n_key, n_full, n_all,
                                    n_kept, kk, at) for m, _ in mets}
            s = sum(w * min(preds[m.name].relative, 1e12) for m, w in mets)
            if best is None or s < best[0]:
                best = (s, ab, preds)
        assert best is not None  # (candidates() is never empty)
        chosen[name] = best[1]
        out.update(best[2])
        score += best[0]
    out = {m.name: out[m.name] for m in mp.metrics}
    bounds = {n: values[n].bounds(*ab) for n, ab in chosen.items()}
    return Candidate(k, c, out, score / float(sum(weights)), bounds)


def sampled(n: np.ndarray, full: np.ndarray) -> np.ndarray:
    """The sampling factor of keeping ``n`` of a key's ``full`` rows at random:
    ``1/n - 1/full`` (a mean's variance is ``σ²`` times it, a quantile's ``q(1-q)``)."""
    return np.maximum(0.0, 1.0 / n - 1.0 / full)


def over_keys(v: np.ndarray, weights: np.ndarray, cap: float) -> float:
    """The mean over the keys (``weights``: their shares) of each key's variance ``v``
    saturating at ``cap`` (a key drowned in noise): ``v cap / (v + cap)``, ``v`` where
    ``v << cap`` and ``cap`` where ``v >> cap``."""
    return float(np.dot(v * cap / (v + cap), weights))


def _statistics_parts() -> dict[str, tuple[str, ...]]:
    from dpfast.tables import statistics  # lazy: the registry loads on first use

    return statistics.metric_parts()


def uses_rows(spec: ReleaseSpec) -> bool:
    """Whether ``max_per_partition`` matters to any metric (not for privacy_id_count)."""
    return any(s.statistic != "privacy_id_count" for s in spec.statistics)


def search(spec: ReleaseSpec, source: Source, summary: Summary, ks: Sequence[int],
           cs: Sequence[int], values: Mapping[str, Values] | None = None
           ) -> tuple[Candidate, list[Candidate]]:
    """Every candidate's predictions and the recommended one (least score; ties: the
    smaller ``k``, then the smaller ``c``).  A candidate the release could not run (its
    plan refuses it: e.g. ``c`` times a privately chosen bound beyond exact int64 sums) is
    left out -- a function of the public parameters and the DP histograms only."""
    table = []
    for k in ks:
        for c in (cs if uses_rows(spec) else cs[:1]):
            try:
                table.append(predict(spec, source, summary, k, c, values))
            except ValueError:
                continue
    for best in sorted(table, key=lambda t: (t.score, t.max_partitions, t.max_per_partition)):
        try:  # the release's own plan at the chosen value bounds (their sums' range)
            multi.plan_of(dataclasses.replace(with_bounds(spec, best.bounds),
                                              max_partitions=best.max_partitions,
                                              max_per_partition=best.max_per_partition),
                          source, _statistics_parts())
        except ValueError:
            continue
        return best, table
    raise ValueError("no candidate bounds can be released with these value bounds")


def with_bounds(spec: ReleaseSpec, chosen: Mapping[str, tuple[Any, Any]]) -> ReleaseSpec:
    """``spec`` with the ``chosen`` bounds added to its own (replacing them)."""
    assert not isinstance(spec.bounds, str)
    have = {c: (lo, hi) for c, lo, hi in spec.bounds or ()}
    have.update(chosen)
    return dataclasses.replace(spec, bounds=tuple(sorted((c, lo, hi)
                                                         for c, (lo, hi) in have.items())))


def rank_kinds() -> tuple[str, ...]:
    """The rank metrics' kinds (their bounds matter only through the grid)."""
    return tuple(_rank_metrics.RANK_KINDS)
