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
* ``sum``: bias ``-(N - T) / K · |mid| - T / K · e`` (the dropped rows valued at the
  bounds' midpoint; ``e`` the clamping's bias per row, below), variance of its noise;
  relative to ``N / K · max(|lo|, |hi|)``;
* ``mean``: bias ``e``, the clamping's (rows are dropped without regard to their values),
  variance ``v_j`` saturating at
  ``5σ²/2``, ``v_j = (Var(s)/4 + σ² Var(n)) / n_j² + σ² (1/n_j - 1/F_j)``
  (first order in the noisy centred sum ``s`` and count; then the sampling of the kept
  rows), ``σ = (hi - lo)/4`` the values' typical spread (and the truth's distance from
  the midpoint); the cap (:data:`DROWNED`): a key drowned in noise releases the midpoint
  (its noisy count ``<= 0``, about half the time), ``σ`` from the truth, or a clamped
  bound, about ``2σ`` from it; relative to ``σ``;
* ``median`` / ``quantile`` / ``min`` / ``max``: in quantiles (fractions of the key's
  rows), bias 0, variance ``(r/n_j)² + q(1-q) (1/n_j - 1/F_j)`` saturating at
  :data:`DROWNED_Q` (a release near uniform over the bounds): ``r`` the median rank error of the
  exponential mechanism (:func:`dpfast.tables._quantile_em.rank_error` at ``α = 1/2``,
  its ``ε`` per key and sensitivity ``c``) over the key's kept rows, then their sampling;
  relative to ``1/2``; bias ``max(0, p - min(q, 1 - q))``: the quantile clamped to a
  bound beyond it.

The clamping: bounds chosen privately (``bounds="auto"``'s mechanism) leave a fraction
``p`` of the people beyond each bound, predicted from what that mechanism states
(:func:`outside`): ``p = q_lo + r / n``, ``r`` its median rank error, ``n`` the summary's
people, and ``p = 1`` (the bounds may miss the data) where ``n`` is below the people its
scale and centre need; with the values normal and ``p`` beyond each bound, the values'
spread is ``σ_p = (hi - lo) / (2 z)``, ``z = Φ⁻¹(1 - p)``, and the clamping's bias is at
most one side's excess ``e = σ_p (φ(z) - z p)`` (its sign unknown: its size is given;
infinite where ``p >= 1/2``: bounds that carry no information).  Bounds the caller gives
are taken as holding the values (``p = 0``); a public sample's percentiles hold all but
``q_lo`` of it on each side.

``error = sqrt(bias² + variance)``; the score of a candidate is the metrics' weighted mean
relative error.  The model is a prediction, not a guarantee: the summary is noisy (private)
or a sample, a person's number of keys and the rows of their keys are taken independent,
and every key keeps the same share of its rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from dpfast.tables import _bounds_em as _bem
from dpfast.tables import _metrics, _rank_metrics, multi
from dpfast.tables import _quantile_em as _em
from dpfast.tables._tune_summary import Summary

if TYPE_CHECKING:
    from dpfast.tables.run import Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["Prediction", "Candidate", "K_GRID", "C_GRID", "TUNABLE", "DROWNED", "predict",
           "DROWNED_Q", "search", "check_metrics", "over_keys", "outside", "clamp_excess"]

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
_NORMAL = NormalDist()
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


def check_metrics(spec: ReleaseSpec, where: str = "metrics") -> None:
    """ValueError unless every metric of ``spec`` is one the model predicts."""
    bad = sorted({s.statistic for s in spec.statistics if s.statistic not in TUNABLE})
    if bad:
        raise ValueError(f"{where}: the tuning predicts {', '.join(TUNABLE)}; not {bad}")


def _var(plan: multi.MultiPlan, part: str) -> float:
    return plan.metrics.parts[part].part.law.std() ** 2


def outside(eps_b: float, n_candidates: int, people: float, q_lo: float) -> float:
    """``p``: the predicted fraction of the people beyond each bound chosen by
    ``bounds="auto"``'s mechanism at ``eps_b`` on a grid of ``n_candidates``, from what
    :mod:`dpfast.tables.autobounds` states: ``q_lo + r / n`` (``r`` its median rank error,
    :func:`dpfast.tables._quantile_em.rank_error` at ``ε_b / 3`` and ``α = 1/2``), and 1
    (the bounds may miss the data) when the people ``n`` are not above
    ``(4 / ε_s) ln(m / α)`` (``ε_s = ε_b / 6``), what its scale and centre need.  A
    function of DP outputs and public parameters only."""
    eps_s, _, eps_q = _bem.split(eps_b)
    n = max(float(people), 0.0)
    if eps_s <= 0.0 or n <= 4.0 / eps_s * math.log(n_candidates / 0.5):
        return 1.0
    r = _em.rank_error(eps_q, 1, n_candidates, 0.5)
    return min(1.0, q_lo + r / n)


def clamp_excess(p: float, lo: float, hi: float) -> float:
    """``e``: the clamping's bias of a mean (its size, in values) when a fraction ``p`` of
    normal values lies beyond each of the bounds ``(lo, hi)``: one side's excess
    ``σ_p (φ(z) - z p)``, ``z = Φ⁻¹(1 - p)``, ``σ_p = (hi - lo) / (2 z)``; 0 at ``p = 0``,
    infinite at ``p >= 1/2``."""
    if p <= 0.0:
        return 0.0
    if p >= 0.5:
        return math.inf
    z = _NORMAL.inv_cdf(1.0 - p)
    return (hi - lo) / (2.0 * z) * max(0.0, _NORMAL.pdf(z) - z * p)


def predict(spec: ReleaseSpec, source: Source, summary: Summary, k: int, c: int,
            beyond: dict[str, float] | None = None) -> Candidate:
    """The predictions of the release ``spec`` at ``(k, c)`` (its plan's laws);
    ``beyond``: per value column, the fraction ``p`` of the people beyond each bound
    (:func:`outside`; 0 where absent)."""
    beyond = beyond or {}
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
    for m, w in zip(mp.metrics, weights, strict=True):
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
            e = clamp_excess(beyond.get(m.column, 0.0), lo, hi)
            if m.kind == "sum":
                p = Prediction(0.0 - (n_all - n_kept) / kk * abs((lo + hi) / 2)
                               - (n_kept / kk * e if e > 0.0 else 0.0),
                               _var(plan, f"sum:{m.column}"), "value",
                               n_all / kk * max(abs(lo), abs(hi)))
            else:
                sd = (hi - lo) / 4  # the values' typical spread
                vj = ((_var(plan, f"csum:{m.column}") / 4 + sd ** 2 * _var(plan, "count"))
                      / n_key ** 2 + sd ** 2 * sampled(n_key, n_full))
                p = Prediction(e, over_keys(vj, at, DROWNED * sd ** 2), "value", sd)
        else:  # a rank metric: in quantiles (fractions of the key's rows)
            assert m.column is not None
            rp = mp.ranks[_metrics.part_name("quantile", m.column, m.q)]
            g = mp.grids[m.column]
            r = _em.rank_error(rp.eps_q, c, int(g.shape[0]), 0.5, rp.q)
            vj = (r / n_key) ** 2 + rp.q * (1 - rp.q) * sampled(n_key, n_full)
            pb = beyond.get(m.column, 0.0)
            p = Prediction(max(0.0, pb - min(rp.q, 1.0 - rp.q)), over_keys(vj, at, DROWNED_Q),
                           "quantile", 0.5)
        out[m.name] = p
        score += float(w) * min(p.relative, 1e12)
    return Candidate(k, c, out, score / float(sum(weights)))


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
           cs: Sequence[int], beyond: dict[str, float] | None = None
           ) -> tuple[Candidate, list[Candidate]]:
    """Every candidate's predictions and the recommended one (least score; ties: the
    smaller ``k``, then the smaller ``c``).  A candidate the release could not run (its
    plan refuses it: e.g. ``c`` times a privately chosen bound beyond exact int64 sums) is
    left out -- a function of the public parameters and the DP bounds only."""
    table = []
    for k in ks:
        for c in (cs if uses_rows(spec) else cs[:1]):
            try:
                table.append(predict(spec, source, summary, k, c, beyond))
            except ValueError:
                continue
    if not table:
        raise ValueError("no candidate bounds can be released with these value bounds")
    best = min(table, key=lambda t: (t.score, t.max_partitions, t.max_per_partition))
    return best, table


def rank_kinds() -> tuple[str, ...]:
    """The rank metrics' kinds (their bounds matter only through the grid)."""
    return tuple(_rank_metrics.RANK_KINDS)
