"""The usage report of a session's budget: total, spent, remaining, utilisation, per
analyst, per query, cache hits (:meth:`dpfast.Session.usage`)."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

__all__ = ["Usage", "usage_of"]


def _pct(spent: float, total: float) -> float:
    return 100.0 * spent / total if total > 0 else 0.0


@dataclasses.dataclass(frozen=True)
class Usage:
    """A budget's usage.

    Attributes
    ----------
    epsilon, delta : float
        The total budget.
    spent_epsilon, spent_delta : float
        What the accounting certifies for the accepted charges (rounded up).
    remaining_epsilon : float
        The largest epsilon of a next pure-DP release that fits.
    utilization : float
        ``100 * spent_epsilon / epsilon`` (percent).
    analysts : list of dict
        Per analyst: ``analyst``, ``epsilon`` (their share), ``spent_epsilon``,
        ``remaining_epsilon``, ``utilization``, ``queries``, ``cache_hits``.
    queries : list of dict
        Per stored query: ``query_id``, ``description``, ``analyst``, ``epsilon``, ``delta``
        (its charge), ``created`` (UTC), ``cache_hits``.
    cache_hits : int
        Answers served from the cache (nothing charged).
    """

    epsilon: float
    delta: float
    spent_epsilon: float
    spent_delta: float
    remaining_epsilon: float
    utilization: float
    analysts: list[dict[str, Any]]
    queries: list[dict[str, Any]]
    cache_hits: int

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data."""
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        lines = [f"budget: epsilon {self.epsilon:g}, delta {self.delta:g}; spent epsilon "
                 f"{self.spent_epsilon:.4g} (delta {self.spent_delta:.3g}), remaining "
                 f"{self.remaining_epsilon:.4g}, utilization {self.utilization:.1f}%; "
                 f"{len(self.queries)} queries, {self.cache_hits} cache hits"]
        for a in self.analysts:
            lines.append(f"  analyst {a['analyst']}: epsilon {a['epsilon']:g}, spent "
                         f"{a['spent_epsilon']:.4g}, remaining {a['remaining_epsilon']:.4g} "
                         f"({a['utilization']:.1f}%), {a['queries']} queries, "
                         f"{a['cache_hits']} cache hits")
        for q in self.queries:
            eps = "?" if q["epsilon"] is None else f"{q['epsilon']:.4g}"
            lines.append(f"  query {q['query_id'][:12]} ({q['analyst'] or '-'}): "
                         f"{q['description']}; epsilon {eps}, {q['cache_hits']} cache hits")
        return "\n".join(lines)


def usage_of(budget: Any, raw: dict[str, Any]) -> Usage:
    """Assemble the report from the budget and the store's figures."""
    spent, left = budget.spent(), budget.remaining()
    queries = [{"query_id": qid, "description": d, "analyst": a, "epsilon": e, "delta": dl,
                "created": datetime.datetime.fromtimestamp(t, datetime.timezone.utc),
                "cache_hits": int(h)} for qid, d, a, e, dl, t, h in raw["queries"]]
    analysts = []
    for name, eps, _dlt, sub in raw["analysts"]:
        s = sub.spent().epsilon or 0.0
        analysts.append({
            "analyst": name, "epsilon": eps, "spent_epsilon": s,
            "remaining_epsilon": sub.remaining().epsilon, "utilization": _pct(s, eps),
            "queries": sum(1 for q in queries if q["analyst"] == name),
            "cache_hits": int(raw["hits"].get(name, 0))})
    se = spent.epsilon or 0.0
    return Usage(budget.epsilon, budget.delta, se, spent.delta or 0.0, left.epsilon,
                 _pct(se, budget.epsilon), analysts, queries,
                 int(sum(raw["hits"].values())))
