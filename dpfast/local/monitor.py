"""Estimates with confidence intervals and the utility monitor of a streaming server.

:func:`estimates` turns an :class:`~dpfast.local.server.Aggregator`'s tallies into
unbiased count estimates, plug-in standard errors and normal confidence intervals;
:func:`monitor` adds, per estimate, the number of reports needed to reach a target
standard error at the current epsilon and a flag when the error is above a threshold
(``dpfast ldp report FILE`` prints it).

How the reports needed are computed: at fixed item fractions every protocol's count
variance is ``A s + B s^2`` when the number of reports is scaled by ``s`` (``B = 0`` for
randomized response, OUE and OLH; ``B > 0`` for the count-mean sketches, whose hash
collisions add an error of the *frequency* that more reports do not remove).  ``A`` and
``B`` come from the protocol's own variance formula with the plug-in counts (for the
sketches: the noise and the collision parts of the fixed-hash mean squared error,
:mod:`dpfast.local._collisions`); the frequency's standard error at ``n'`` reports is
``sqrt(A / (n n') + B / n^2)``, and the reports needed for a target ``t`` are
``ceil(A / (n t^2 - B / n))`` (``inf`` when ``t`` is below the collision floor).  RAPPOR's
regression standard errors are scaled as ``1 / sqrt(n)``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpfast.local._validate import _domain_values
from dpfast.local.rappor_reports import RapporCounts
from dpfast.local.sketch import Sketch


@dataclasses.dataclass(frozen=True)
class Estimates:
    """Count estimates of candidate items with ``1 - alpha`` confidence intervals.

    Attributes
    ----------
    protocol : str
        Wire name of the protocol.
    items : list
        The candidates, in order.
    counts, std_error : numpy.ndarray
        Unbiased count estimates and their plug-in standard errors (``nan`` with no
        reports, and for RAPPOR candidates the regression did not select).
    low, high : numpy.ndarray
        Normal confidence interval ``counts -/+ z_(1 - alpha/2) std_error``.
    n : int
        Reports aggregated.
    alpha : float
    """

    protocol: str
    items: list[Any]
    counts: np.ndarray
    std_error: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n: int
    alpha: float
    _model: tuple[np.ndarray, np.ndarray] = dataclasses.field(repr=False, compare=False)

    @property
    def frequencies(self) -> np.ndarray:
        """Estimated fractions ``counts / n``."""
        return self.counts / max(self.n, 1)

    def heavy_hitters(self, *, alpha: float | None = None, min_count: float = 0.0,
                      top: int | None = None) -> list[tuple[Any, float, float]]:
        """Candidates whose count is significantly above ``min_count``.

        One-sided test at level ``alpha / len(items)`` (Bonferroni over the candidates):
        ``count - z_(1 - alpha/len) std_error > min_count``.  Returns ``(item, count,
        std_error)`` by decreasing count, at most ``top`` of them.

        The guarantee is a bound (conservative): with probability at least ``1 - alpha``
        no candidate whose true count is at most ``min_count`` is returned (the
        family-wise error; up to each estimate's normal approximation with its plug-in
        standard error, as for the intervals).  Its coverage is measured in
        ``tests/test_coverage.py`` in the least favourable case, every candidate at
        ``min_count``.
        """
        a = self.alpha if alpha is None else float(alpha)
        if not 0 < a < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        z = _z(a / max(len(self.items), 1))
        with np.errstate(invalid="ignore"):
            keep = np.flatnonzero(self.counts - z * self.std_error > float(min_count))
        keep = keep[np.argsort(-self.counts[keep], kind="stable")]
        if top is not None:
            keep = keep[:max(0, int(top))]
        return [(self.items[i], float(self.counts[i]), float(self.std_error[i])) for i in keep]

    def std_error_at(self, n: float) -> np.ndarray:
        """Predicted standard error of the *frequencies* after ``n`` reports (same item
        fractions, same epsilon)."""
        a, b = self._model
        if self.n == 0:
            return np.sqrt(a / n)
        return np.sqrt(a / (self.n * float(n)) + b / self.n ** 2)

    def reports_needed(self, target: float) -> np.ndarray:
        """Reports needed for a frequency standard error ``<= target`` (float; ``inf``
        where the target is below what any number of reports reaches)."""
        t2 = float(target) ** 2
        a, b = self._model
        n = max(self.n, 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.n == 0:
                need = a / t2
            else:
                den = n * t2 - b / n
                need = np.where(den > 0, a / np.where(den > 0, den, 1.0), np.inf)
        need = np.where(np.isnan(need), np.nan, np.ceil(np.maximum(need, 1.0)))
        return np.asarray(need, np.float64)


def _z(p: float) -> float:
    """``z_(1 - p)``, the standard normal's upper ``p`` quantile (``scipy.stats.norm.isf``,
    the same float, without its per-call argument checks)."""
    from scipy import special

    return float(-special.ndtri(p)) + 0.0


def _alpha(alpha: Any) -> float:
    a = float(alpha)
    if not 0 < a < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return a


def estimates(agg: Any, candidates: Sequence[Any] | None = None, *, alpha: float = 0.05
              ) -> Estimates:
    """Estimates of an aggregator's candidates now (see :class:`Estimates`)."""
    a = _alpha(alpha)
    name, proto, st, n = agg.protocol, agg.protocol_object, agg._state, agg.n
    if name in ("cms", "hcms", "rappor"):
        cands = candidates if candidates is not None else agg.candidates
        if cands is None:
            raise ValueError(f"{name} estimates need candidates (none stored with the state)")
        items = list(np.asarray(cands).tolist() if isinstance(cands, np.ndarray) else cands)
        if not items:
            raise ValueError("candidates must not be empty")
        if name == "rappor":
            counts, se, model = _rappor(proto, st, n, items, a)
        else:
            sk = proto._sketch_of(Sketch(st["counts"], st["totals"], n), name == "hcms")
            counts, noise, coll = proto._parts(proto.matrix(sk), n, items)
            with np.errstate(over="ignore"):
                se = np.sqrt(noise + coll)
            model = (noise, coll)
    else:
        counted = agg._items if agg._items is not None else np.arange(proto.k)
        fe = proto._rates.estimate(st["counts"], n)
        if candidates is None:
            sel = np.arange(counted.size)
        else:
            want = _domain_values(np.asarray(list(candidates)), proto.k, "candidates")
            pos = {int(v): i for i, v in enumerate(counted)}
            missing = [int(v) for v in want if int(v) not in pos]
            if missing:
                raise ValueError(f"candidates {missing[:5]} were not counted by this "
                                 "aggregator (OLH counts its candidates only)")
            sel = np.array([pos[int(v)] for v in want], np.int64)
        items = [int(v) for v in counted[sel]]
        counts, se = fe.counts[sel], fe.std_error[sel]
        model = (fe.variance[sel], np.zeros(sel.size))
    if n == 0:
        per_report = _per_report(name, proto, len(items))
        se = np.full(len(items), np.nan)
        model = (per_report, np.zeros(len(items)))
    z = _z(a / 2)
    counts = np.asarray(counts, np.float64)
    se = np.asarray(se, np.float64)
    return Estimates(name, items, counts, se, counts - z * se, counts + z * se, int(n), a,
                     (np.asarray(model[0], np.float64), np.asarray(model[1], np.float64)))


def _per_report(name: str, proto: Any, size: int) -> np.ndarray:
    """Frequency variance of one report for an item nobody holds (no data yet)."""
    if name in ("cms", "hcms"):
        return np.full(size, float(proto.variance(1.0, 0.0, 1.0)))
    if name == "rappor":
        return np.full(size, np.nan)
    return np.full(size, float(proto._rates.variance(1, 0)))


def _rappor(proto: Any, st: dict[str, np.ndarray], n: int, items: list[Any], alpha: float
            ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
    if n == 0:
        z = np.zeros(len(items))
        return z, z, (z, z)
    dec = proto.decode(RapporCounts(st["counts"], st["totals"]), items, alpha=alpha)
    se = np.asarray(dec.std_errors, np.float64)
    return np.asarray(dec.counts, np.float64), se, (se * se, np.zeros(len(items)))


@dataclasses.dataclass(frozen=True)
class UtilityReport:
    """The utility monitor's view of an aggregate (see :func:`monitor`).

    ``rows``: per estimate ``(item, count, frequency, std_error, low, high,
    reports_needed, flagged)`` with ``std_error`` the standard error of the frequency.
    """

    protocol: str
    epsilon: float
    n: int
    target: float
    threshold: float
    alpha: float
    rows: list[tuple[Any, float, float, float, float, float, float, bool]]

    @property
    def flagged(self) -> list[Any]:
        """Items whose standard error is above the threshold (or unknown)."""
        return [r[0] for r in self.rows if r[7]]

    def format(self) -> str:
        """A plain-text table."""
        lines = [f"protocol {self.protocol}, epsilon {self.epsilon:g} per report, "
                 f"{self.n} reports; target std error {self.target:g} (frequency), "
                 f"flag above {self.threshold:g}; {100 * (1 - self.alpha):g}% intervals",
                 f"{'item':>16} {'count':>12} {'freq':>9} {'std err':>9} "
                 f"{'interval':>25} {'needed':>12}  flag"]
        for item, c, f, se, lo, hi, need, flag in self.rows:
            nd = "inf" if math.isinf(need) else ("?" if math.isnan(need) else f"{need:.0f}")
            lines.append(f"{str(item)[:16]:>16} {c:12.1f} {f:9.5f} {se:9.5f} "
                         f"[{lo:11.1f}, {hi:11.1f}] {nd:>12}  {'ABOVE' if flag else 'ok'}")
        lines.append(f"{len(self.flagged)} of {len(self.rows)} estimates above the threshold")
        return "\n".join(lines)


def monitor(agg: Any, *, target: float = 0.01, threshold: float | None = None,
            candidates: Sequence[Any] | None = None, alpha: float = 0.05,
            top: int | None = None) -> UtilityReport:
    """Per estimate: its standard error now, the reports needed for ``target`` at the
    current epsilon, and a flag when the error exceeds ``threshold``.

    Parameters
    ----------
    agg : Aggregator
        The streaming server's state.
    target : float
        Target standard error of an item's estimated *frequency* (fraction of reports).
    threshold : float, optional
        Flag an estimate whose frequency standard error is above this (default
        ``target``); an unknown error (no reports yet) is flagged.
    candidates : sequence, optional
        Items to monitor (default the aggregator's).
    alpha : float
        Confidence level ``1 - alpha`` of the printed intervals.
    top : int, optional
        Keep the ``top`` largest estimates only.
    """
    t = float(target)
    if not t > 0 or not math.isfinite(t):
        raise ValueError(f"target must be a positive standard error, got {target!r}")
    thr = t if threshold is None else float(threshold)
    if not thr > 0:
        raise ValueError(f"threshold must be > 0, got {threshold!r}")
    est = estimates(agg, candidates, alpha=alpha)
    n = max(est.n, 1)
    freq_se = est.std_error / n
    need = est.reports_needed(t)
    order = np.argsort(-est.counts, kind="stable")
    if top is not None:
        order = order[:max(0, int(top))]
    rows = []
    for i in order:
        se = float(freq_se[i])
        rows.append((est.items[i], float(est.counts[i]), float(est.counts[i]) / n, se,
                     float(est.low[i]), float(est.high[i]), float(need[i]),
                     bool(math.isnan(se) or se > thr)))
    return UtilityReport(agg.protocol, agg.epsilon, est.n, t, thr, est.alpha, rows)
