"""The usage report of a budget (:meth:`Budget.usage <dpfast.Budget.usage>`, ``dpfast ledger
show --by analyst`` / ``--by query``): total, spent, remaining and utilization, per analyst
and per query (cost, cache hits).

Utilization is ``100 * (1 - e / epsilon)``, where ``e`` is the largest epsilon of a next
pure-DP release that still fits (the budget's, or the analyst's sub-budget alone): the
share of the budget no longer available, in the same units whatever the accounting
(under basic composition it is the epsilon spent over the epsilon of the budget).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from . import schema
from .books import Books
from .filters import Filter
from .names import shown
from .records import CHARGED, FAILED, HIT, REFUSED, STORED, Cost, Remaining, utc

__all__ = ["AnalystUsage", "QueryUsage", "Usage", "usage_of"]


@dataclasses.dataclass(frozen=True)
class AnalystUsage:
    """One analyst's line of the usage report.

    Attributes
    ----------
    name : str
    epsilon, delta : float or None
        The sub-budget (None: the analyst has none; only the total limits them).
    spent_epsilon, spent_delta : float
        The ``(epsilon, delta)`` the accounting certifies for the analyst's charges alone.
    remaining_epsilon : float
        The largest epsilon of a next pure release of this analyst that fits the
        sub-budget alone (the total may allow less; :meth:`Analyst.remaining`).
    utilization : float or None
        Percent of the sub-budget used (None without a sub-budget).
    charges, refused, failed : int
        Accepted charges, refused charges, charges whose release failed.
    queries : int
        Distinct query ids the analyst was charged for.
    hits : int
        Cache hits served to the analyst (no charge).
    """

    name: str
    epsilon: float | None
    delta: float | None
    spent_epsilon: float
    spent_delta: float
    remaining_epsilon: float
    utilization: float | None
    charges: int
    refused: int
    failed: int
    queries: int
    hits: int


@dataclasses.dataclass(frozen=True)
class QueryUsage:
    """One query id's line of the usage report.

    Attributes
    ----------
    query_id : str
    analyst : str
        Who was charged for it (the last accepted charge).
    cost : Cost
        What one computation costs, in the budget's terms (``epsilon``/``delta`` when it
        has a pure or approximate bound).
    status : str
        ``"cached"`` (a result is stored), ``"charged"`` (charged, no result stored),
        ``"failed"`` (charged, the computation failed), ``"refused"``.
    charges : int
        Accepted charges for it (more than one only after failures).
    hits : int
        Times the stored result was served again without a charge.
    first, last : datetime.datetime
        Its first record and its last one (a hit, usually).
    """

    query_id: str
    analyst: str
    cost: Cost
    status: str
    charges: int
    hits: int
    first: Any
    last: Any


def _pct(left: float, total: float) -> float:
    return max(0.0, min(100.0, 100.0 * (1.0 - left / total))) + 0.0


@dataclasses.dataclass(frozen=True)
class Usage:
    """The usage report: the whole budget, per analyst, per query.

    Attributes
    ----------
    accounting : str
    epsilon, delta : float
        The budget.
    spent : Cost
        As :meth:`Budget.spent <dpfast.Budget.spent>`.
    remaining : Remaining
        As :meth:`Budget.remaining <dpfast.Budget.remaining>`.
    utilization : float
        Percent of the budget used (see :mod:`dpfast.budget.usage`).
    charges, refused, failed, hits : int
        Over the whole ledger.
    analysts : tuple of AnalystUsage
    queries : tuple of QueryUsage
    """

    accounting: str
    epsilon: float
    delta: float
    spent: Cost
    remaining: Remaining
    utilization: float
    charges: int
    refused: int
    failed: int
    hits: int
    analysts: tuple[AnalystUsage, ...]
    queries: tuple[QueryUsage, ...]

    def lines(self, by: str = "analyst") -> list[str]:
        """The report as text lines, a table ``by`` ``"analyst"`` or ``"query"``."""
        if by not in ("analyst", "query"):
            raise ValueError(f"by must be 'analyst' or 'query', got {by!r}")
        out = [f"budget (epsilon={self.epsilon:g}, delta={self.delta:g}), {self.accounting} "
               f"accounting: spent (epsilon={self.spent.epsilon:.6g}, delta="
               f"{self.spent.delta:.3g}); a next pure release fits up to epsilon="
               f"{self.remaining.epsilon:.6g}; utilization {self.utilization:.1f}%",
               f"{self.charges} charges, {self.refused} refused, {self.failed} failed, "
               f"{self.hits} cache hits"]
        head: tuple[str, ...]
        rows: list[tuple[str, ...]]
        if by == "analyst":
            head = ("analyst", "sub-budget", "spent eps", "left eps", "used %", "charges",
                    "refused", "queries", "hits")
            rows = [head]
            for a in self.analysts:
                sub = "-" if a.epsilon is None else f"{a.epsilon:g}/{a.delta:g}"
                used = "-" if a.utilization is None else f"{a.utilization:.1f}"
                rows.append((a.name, sub, f"{a.spent_epsilon:.4g}",
                             f"{a.remaining_epsilon:.4g}", used, str(a.charges),
                             str(a.refused), str(a.queries), str(a.hits)))
        else:
            head = ("query id", "analyst", "cost", "status", "charges", "hits", "last (UTC)")
            rows = [head]
            for q in self.queries:
                c = q.cost
                cost = (f"eps={c.epsilon:.4g}" + (f" delta={c.delta:.3g}" if c.delta else "")
                        if c.epsilon is not None else (f"rho={c.rho:.4g}" if c.rho is not None
                                                       else "rdp"))
                rows.append((q.query_id, q.analyst, cost, q.status, str(q.charges),
                             str(q.hits), f"{q.last:%Y-%m-%d %H:%M:%S}"))
        rows = [tuple(shown(v) for v in r) for r in rows]  # stored text, escaped
        widths = [min(32, max(len(r[k]) for r in rows)) for k in range(len(head))]
        for r in rows:
            out.append("  ".join((v if len(v) <= w else v[: w - 1] + "…").ljust(w)
                                 for v, w in zip(r, widths, strict=True)).rstrip())
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines("analyst"))

    def to_pandas(self, by: str = "analyst") -> Any:
        """A pandas DataFrame, one row per analyst (``by="analyst"``) or per query id
        (``by="query"``); needs pandas."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is in the test extra
            raise ImportError("to_pandas() needs pandas: pip install pandas") from exc
        if by == "analyst":
            return pd.DataFrame([dataclasses.asdict(a) for a in self.analysts],
                                columns=[f.name for f in dataclasses.fields(AnalystUsage)])
        if by == "query":
            recs = []
            for q in self.queries:
                d = dataclasses.asdict(q)
                cost = d.pop("cost")
                d["epsilon"], d["delta"], d["rho"] = cost["epsilon"], cost["delta"], cost["rho"]
                recs.append(d)
            cols = ["query_id", "analyst", "epsilon", "delta", "rho", "status", "charges",
                    "hits", "first", "last"]
            return pd.DataFrame(recs, columns=cols)
        raise ValueError(f"by must be 'analyst' or 'query', got {by!r}")


def usage_of(filt: Filter, state: Any, books: Books, rows: Sequence[schema.Row], *,
             analyst: str | None = None) -> Usage:
    """The :class:`Usage` of a ledger: ``state`` / ``books`` its verified totals, ``rows``
    its records (every kind); ``analyst`` restricts the analysts and queries listed."""
    count: dict[str, dict[str, int]] = {}
    qids: dict[str, set[str]] = {}
    failed_ids = {r.ref for r in rows if r.status == FAILED}
    queries: dict[str, dict[str, Any]] = {}
    totals = {"charges": 0, "refused": 0, "failed": 0, "hits": 0}
    for r in rows:
        name = r.analyst
        c = count.setdefault(name, {"charges": 0, "refused": 0, "failed": 0, "hits": 0})
        if r.status == CHARGED:
            c["charges"] += 1
            totals["charges"] += 1
            if r.id in failed_ids:
                c["failed"] += 1
                totals["failed"] += 1
            if r.query:
                qids.setdefault(name, set()).add(r.query)
        elif r.status == REFUSED:
            c["refused"] += 1
            totals["refused"] += 1
        elif r.status == HIT:
            c["hits"] += 1
            totals["hits"] += 1
        if not r.query or r.status not in (CHARGED, REFUSED, STORED, HIT, FAILED):
            continue
        q = queries.setdefault(r.query, {"analyst": r.analyst, "cost": None, "status": "",
                                         "charges": 0, "hits": 0, "first": r.time,
                                         "last": r.time})
        q["last"] = r.time
        if r.status == CHARGED:
            q["charges"] += 1
            q["analyst"] = r.analyst
            q["cost"] = filt.cost_record(filt.row_costs(schema.decode_cost(r.cost)))
            q["status"] = "failed" if r.id in failed_ids else "charged"
        elif r.status == REFUSED:
            if q["cost"] is None:
                q["cost"] = filt.cost_record(filt.row_costs(schema.decode_cost(r.cost)))
            if not q["status"]:
                q["status"] = "refused"
        elif r.status == STORED:
            q["status"] = "cached"
        elif r.status == HIT:
            q["hits"] += 1
        elif r.status == FAILED and q["status"] == "charged":
            q["status"] = "failed"
    names = sorted((set(count) | set(books.limits) | set(books.spent)) - {""})
    if analyst is not None:
        names = [n for n in names if n == analyst]
    lines = []
    for name in names:
        sub = books.filter_of(name)
        st = books.state_of(name)
        f = sub or filt
        sp = f.spent(st)
        left = f.largest_pure_epsilon(st)
        c = count.get(name, {"charges": 0, "refused": 0, "failed": 0, "hits": 0})
        lim = books.limits.get(name)
        lines.append(AnalystUsage(
            name, None if lim is None else lim[0], None if lim is None else lim[1],
            float(sp.epsilon or 0.0), float(sp.delta or 0.0), left,
            None if sub is None else _pct(left, sub.epsilon),
            c["charges"], c["refused"], c["failed"], len(qids.get(name, ())), c["hits"]))
    qlines = []
    for qid, q in queries.items():
        if analyst is not None and q["analyst"] != analyst:
            continue
        qlines.append(QueryUsage(qid, q["analyst"], q["cost"] or Cost(),
                                 q["status"] or "charged", q["charges"], q["hits"],
                                 utc(q["first"]), utc(q["last"])))
    remaining = filt.remaining(state)
    eps_left = remaining.epsilon if math.isfinite(remaining.epsilon) else filt.epsilon
    return Usage(filt.accounting, filt.epsilon, filt.delta, filt.spent(state), remaining,
                 _pct(eps_left, filt.epsilon), totals["charges"], totals["refused"],
                 totals["failed"], totals["hits"], tuple(lines), tuple(qlines))
