"""The result of :func:`dpfast.tables.tune`: the recommended bounds, the predicted error of
each statistic with its bias / variance split, every candidate, the event, and a plot."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from dpfast.tables._tune_predict import Candidate, Prediction
from dpfast.tables._tune_summary import Summary
from dpfast.tables._tune_values import Values

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from dpfast.accounting.events import DpEvent

__all__ = ["TuneResult"]


@dataclasses.dataclass
class TuneResult:
    """Bounds chosen for a release (:func:`dpfast.tables.tune`).

    Attributes
    ----------
    max_partitions, max_per_partition : int
        The recommended contribution bounds.
    bounds : dict
        ``{column: (lo, hi)}``: the value bounds the predictions assume (the caller's, or
        chosen by private quantiles -- or read from the public sample -- where missing).
    predicted : dict of str to Prediction
        Per statistic: ``bias``, ``variance``, ``error`` (the root mean square over the
        keys, in ``unit``) and ``relative``.
    candidates : list of Candidate
        Every candidate considered (:meth:`to_pandas` as a table).
    epsilon : float
        What the tuning spent (0.0 with a public sample).
    release_epsilon : float
        What is left for the release (the predictions are at this ε).
    event : DpEvent or None
        The tuning's event (None with a public sample: nothing charged).
    summary : Summary
        The contribution summary the predictions come from (DP, or the sample's).
    beyond : dict of str to float
        Per column whose bounds the tuning chose: the larger fraction of the people its
        value histogram puts below or above the bounds (the clamping the predictions
        include; 1.0: the histogram is empty, too few people for its ε, and the bounds say
        nothing of the data -- give public ``bounds`` or a larger ``share``).
    values : dict of str to Values
        Per column whose bounds the tuning chose: its value histogram (DP, or the public
        sample's), from which the bounds and their clamping were predicted.
    at_edge : list of str
        The columns whose chosen bounds reach the value grid's edge (``±2**40`` for an
        integer column, ``±2**62`` for floats) with people in the edge cell: their values
        beyond the grid are clamped to its edge (e.g. epoch milliseconds, about ``2**40.6``),
        so the bounds may miss the data -- give them public ``bounds``.
    """

    max_partitions: int
    max_per_partition: int
    bounds: dict[str, tuple[float, float]]
    predicted: dict[str, Prediction]
    candidates: list[Candidate]
    epsilon: float
    release_epsilon: float
    event: DpEvent | None
    summary: Summary
    beyond: dict[str, float] = dataclasses.field(default_factory=dict)
    values: dict[str, Values] = dataclasses.field(default_factory=dict)
    at_edge: list[str] = dataclasses.field(default_factory=list)

    @property
    def params(self) -> dict[str, object]:
        """The keyword arguments to give :func:`dpfast.tables.aggregate`."""
        out: dict[str, object] = {"max_partitions": self.max_partitions,
                                  "max_per_partition": self.max_per_partition}
        if self.bounds:
            out["bounds"] = dict(self.bounds)
        return out

    def to_dict(self) -> dict[str, object]:
        """JSON-able plain values (the CLI's output)."""
        return {
            "max_partitions": self.max_partitions,
            "max_per_partition": self.max_per_partition,
            "bounds": {c: list(b) for c, b in self.bounds.items()},
            "predicted": {n: {"bias": p.bias, "variance": p.variance, "error": p.error,
                              "relative": p.relative, "unit": p.unit}
                          for n, p in self.predicted.items()},
            "epsilon": self.epsilon, "release_epsilon": self.release_epsilon,
            "event": None if self.event is None else str(self.event),
            "summary": self.summary.to_dict(),
            "beyond": dict(self.beyond),
            "at_edge": list(self.at_edge),
            "values": {c: v.to_dict() for c, v in self.values.items()},
        }

    def to_pandas(self) -> pd.DataFrame:
        """One row per candidate: ``max_partitions``, ``max_per_partition``, ``score`` and
        per statistic its ``error``, ``bias`` and ``std`` of the noise."""
        import pandas as pd

        rows = []
        for cand in self.candidates:
            row: dict[str, float] = {"max_partitions": cand.max_partitions,
                                     "max_per_partition": cand.max_per_partition,
                                     "score": cand.score}
            for name, p in cand.predictions.items():
                row[f"{name}_error"] = p.error
                row[f"{name}_bias"] = p.bias
                row[f"{name}_std"] = p.variance ** 0.5
            rows.append(row)
        return pd.DataFrame(rows)

    @property
    def uninformative(self) -> list[str]:
        """The columns whose chosen bounds may miss the data (half or more of the people
        beyond a bound, or an empty value histogram: too few people for their share of ε);
        give them public ``bounds`` or a larger ``share``."""
        return sorted(c for c, p in self.beyond.items() if p >= 0.5)

    def __repr__(self) -> str:
        errs = ", ".join(f"{n}: {p.error:.4g} {p.unit}" for n, p in self.predicted.items())
        bad = self.uninformative
        note = (f"; the bounds of {', '.join(bad)} may miss the data: pass bounds or a larger "
                "share" if bad else "")
        if self.at_edge:
            note += (f"; {', '.join(self.at_edge)} clamped at the value grid's edge: pass "
                     "bounds")
        return (f"TuneResult(max_partitions={self.max_partitions}, max_per_partition="
                f"{self.max_per_partition}, bounds={self.bounds}, predicted error per key: "
                f"{errs}; tuning epsilon={self.epsilon}{note})")

    def plot(self, ax: Axes | None = None) -> Axes:
        """The score (weighted mean relative error) of every candidate against
        ``max_partitions``, one line per ``max_per_partition``, the recommendation marked.
        Needs matplotlib (``pip install 'dpfast[plot]'``)."""
        from dpfast.tables import _plot

        ax = _plot.axes(ax)
        cs = sorted({c.max_per_partition for c in self.candidates})
        for c in cs:
            pts = sorted((t.max_partitions, t.score) for t in self.candidates
                         if t.max_per_partition == c)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3,
                    label=f"max_per_partition={c}")
        best = next(t for t in self.candidates if t.max_partitions == self.max_partitions
                    and t.max_per_partition == self.max_per_partition)
        ax.plot([best.max_partitions], [best.score], marker="*", markersize=14,
                color="black", linestyle="none", label="recommended")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("max_partitions")
        ax.set_ylabel("predicted relative error (weighted mean)")
        ax.set_title(f"tuning: recommended ({self.max_partitions}, "
                     f"{self.max_per_partition})")
        ax.legend(fontsize="small", ncol=2)
        return ax
