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
import re
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
    spent : Cost or None
        What :meth:`Budget.spent <dpfast.Budget.spent>` says of the analyst's charges
        alone, with the accounting's own figures (RDP per order, rho).
    questions, question_hits : int
        ``charges`` and ``hits`` counting a SQL query charged in parts (one per
        aggregate) once: the questions charged, the questions answered from the cache.
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
    spent: Cost | None = None
    questions: int = 0
    question_hits: int = 0


@dataclasses.dataclass(frozen=True)
class QueryUsage:
    """One query id's line of the usage report.

    Attributes
    ----------
    query_id : str
    analyst : str
        Who was charged for it (the last accepted charge).
    cost : Cost
        What one computation costs: ``epsilon``/``delta`` (the event's own, or the
        accounting's figures converted at the budget's delta), and the accounting's own
        figures (for a question in parts: the parts' ``(epsilon, delta)`` summed).
    status : str
        What its last record left it in: ``"charged"`` (computed and charged),
        ``"cached"`` (its last ask was served from the cache: a hit, no charge),
        ``"failed"`` (charged, the computation failed), ``"refused"``.
    charges : int
        Accepted charges for it (more than one only after failures).
    hits : int
        Times the stored result was served again without a charge.
    first, last : datetime.datetime
        Its first record and its last one (a hit, usually).
    stored : bool
        A result is stored: asking again is a cache hit.
    parts : int
        The ledger queries it was charged as (a session's SQL query: one per aggregate).
    """

    query_id: str
    analyst: str
    cost: Cost
    status: str
    charges: int
    hits: int
    first: Any
    last: Any
    stored: bool = False
    parts: int = 1


def _n(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _eps_delta(c: Cost) -> str:
    """A cost as ``eps=... delta=...`` (``-``: none recorded)."""
    if c.epsilon is None:
        return "-"
    from dpfast.budget.display import up

    return f"eps={up(c.epsilon)}" + (f" delta={up(c.delta, 3)}" if c.delta else "")


def figures(c: Cost | None) -> str:
    """The accounting's own figures of a cost: RDP per order, zCDP rho (``-``: none)."""
    if c is None:
        return "-"
    out = []
    if c.rho is not None:
        out.append(f"rho={c.rho:.6g}")
    if c.rdp is not None and c.orders is not None:
        parts = [f"a={a:g}:{r:.4g}" for a, r in zip(c.orders, c.rdp, strict=False)
                 if math.isfinite(r) and r > 0]
        out.append("rdp " + (" ".join(parts) if parts else "0"))
    return "; ".join(out) or "-"


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
        Over the whole ledger: its records (a SQL query with several aggregates is
        charged, and answered from the cache, once per aggregate).
    analysts : tuple of AnalystUsage
    queries : tuple of QueryUsage
        One line per question (a SQL query's parts merged).
    questions, question_hits : int
        ``charges`` and ``hits`` counting each question once: what a person asked.
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
    questions: int = 0
    question_hits: int = 0

    def lines(self, by: str = "analyst", *, detail: bool = False) -> list[str]:
        """The report as text lines, a table ``by`` ``"analyst"`` or ``"query"``; every
        figure is an ``(epsilon, delta)`` (at the budget's delta); ``detail=True`` adds
        the accounting's own figures (RDP per order, zCDP rho)."""
        if by not in ("analyst", "query"):
            raise ValueError(f"by must be 'analyst' or 'query', got {by!r}")
        out = [f"budget (epsilon={self.epsilon:g}, delta={self.delta:g}), {self.accounting} "
               f"accounting: spent (epsilon={self.spent.epsilon:.6g}, delta="
               f"{self.spent.delta:.3g}); a next pure release fits up to epsilon="
               f"{self.remaining.epsilon:.6g}; utilization {self.utilization:.1f}%",
               self._counts()]
        head: tuple[str, ...]
        rows: list[tuple[str, ...]]
        row: tuple[str, ...]
        if by == "analyst":
            head = ("analyst", "sub-budget (eps/delta)", "spent eps", "spent delta",
                    "left eps", "used %", "charges", "refused", "queries", "hits")
            rows = [head]
            for a in self.analysts:
                sub = "-" if a.epsilon is None else f"{a.epsilon:g}/{a.delta:g}"
                used = "-" if a.utilization is None else f"{a.utilization:.1f}"
                row = (a.name, sub, f"{a.spent_epsilon:.4g}", f"{a.spent_delta:.3g}",
                       f"{a.remaining_epsilon:.4g}", used, str(a.charges),
                       str(a.refused), str(a.queries), str(a.hits))
                rows.append(row + ((figures(a.spent),) if detail else ()))
            rows = [rows[0]] + [r[:6] + (str(a.questions),) + r[7:9] + (str(a.question_hits),)
                                + r[10:] for r, a in zip(rows[1:], self.analysts, strict=True)]
        else:
            head = ("query id", "analyst", "cost (eps, delta)", "status", "charges", "hits",
                    "last (UTC)")
            rows = [head]
            for q in self.queries:
                row = (q.query_id, q.analyst, _eps_delta(q.cost), q.status, str(q.charges),
                       str(q.hits), f"{q.last:%Y-%m-%d %H:%M:%S}")
                rows.append(row + ((figures(q.cost),) if detail else ()))
        if detail:
            head = head + ("accounting's figures",)
            rows[0] = head
            out.append(f"accounting's figures of what was spent: {figures(self.spent)}")
        rows = [tuple(shown(v) for v in r) for r in rows]  # stored text, escaped
        widths = [min(32 if k < 7 else 400, max(len(r[k]) for r in rows))
                  for k in range(len(head))]
        for r in rows:
            out.append("  ".join((v if len(v) <= w else v[: w - 1] + "…").ljust(w)
                                 for v, w in zip(r, widths, strict=True)).rstrip())
        return out

    def _counts(self) -> str:
        """The counts line: questions (a SQL query's aggregates as one), then the ledger's
        records when they differ."""
        text = (f"{_n(self.questions, 'charge')}, {self.refused} refused, {self.failed} "
                f"failed, {_n(self.question_hits, 'cache hit')} (a question asked again: no "
                "charge)")
        if (self.questions, self.question_hits) != (self.charges, self.hits):
            text += (f"; in the ledger: {_n(self.charges, 'charge')} and "
                     f"{_n(self.hits, 'cache hit')}, one per aggregate of a SQL query")
        return text

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
            cols = [f.name for f in dataclasses.fields(AnalystUsage) if f.name != "spent"]
            return pd.DataFrame([{k: getattr(a, k) for k in cols} for a in self.analysts],
                                columns=cols)
        if by == "query":
            recs = []
            for q in self.queries:
                d = dataclasses.asdict(q)
                cost = d.pop("cost")
                d["epsilon"], d["delta"], d["rho"] = cost["epsilon"], cost["delta"], cost["rho"]
                recs.append(d)
            cols = ["query_id", "analyst", "epsilon", "delta", "rho", "status", "charges",
                    "hits", "first", "last", "stored", "parts"]
            return pd.DataFrame(recs, columns=cols)
        raise ValueError(f"by must be 'analyst' or 'query', got {by!r}")


#: A query id made of a question's id and one part's (``<32 hex>~<32 hex>``): a session's
#: SQL query with several aggregates charges one part per aggregate; the report counts
#: the question once.
_PART = re.compile(r"^([0-9a-f]{32})~[0-9a-f]{32}$")


def question_of(query_id: str) -> str:
    """The question a query id belongs to (itself unless it is a part of one)."""
    m = _PART.match(query_id)
    return m.group(1) if m else query_id


def _query_lines(filt: Filter, rows: Sequence[schema.Row], failed_ids: set[Any]
                 ) -> dict[str, dict[str, Any]]:
    """Per query id: who, what one computation costs, its status (the state its last
    record left it in), its charges, hits, whether a result is stored, first and last."""
    queries: dict[str, dict[str, Any]] = {}
    for r in rows:
        if not r.query or r.status not in (CHARGED, REFUSED, STORED, HIT, FAILED):
            continue
        q = queries.setdefault(r.query, {"analyst": r.analyst, "cost": None, "status": "",
                                         "charges": 0, "refused": 0, "hits": 0,
                                         "stored": False, "first": r.time, "last": r.time})
        q["last"] = r.time
        if r.status == CHARGED:
            q["charges"] += 1
            q["analyst"] = r.analyst
            q["cost"] = filt.cost_record(filt.row_costs(schema.decode_cost(r.cost)))
            q["status"] = "failed" if r.id in failed_ids else "charged"
        elif r.status == REFUSED:
            q["refused"] += 1
            if q["cost"] is None:
                q["cost"] = filt.cost_record(filt.row_costs(schema.decode_cost(r.cost)))
            if not q["charges"]:
                q["status"] = "refused"
        elif r.status == STORED:
            q["stored"] = True
        elif r.status == HIT:
            q["hits"] += 1
            q["status"] = "cached"
    return queries


def _sum_costs(costs: Sequence[Cost]) -> Cost:
    """The parts' ``(epsilon, delta)`` summed (basic composition, rounded up)."""
    from fractions import Fraction

    from dpfast._core.rounding import float_up

    if any(c.epsilon is None or math.isinf(c.epsilon) for c in costs):
        return Cost(epsilon=math.inf, delta=max((c.delta or 0.0) for c in costs))
    eps = float_up(sum((Fraction(c.epsilon or 0.0) for c in costs), Fraction(0)))
    dlt = float_up(sum((Fraction(c.delta or 0.0) for c in costs), Fraction(0)))
    return Cost(epsilon=eps, delta=min(dlt, 1.0))


def _questions(queries: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The query lines with the parts of one question merged: charged once (the most
    charges of a part), served from the cache when every part was (the fewest hits of a
    part), refused or failed when a part was."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for qid, q in queries.items():
        groups.setdefault(question_of(qid), []).append(q)
    out = {}
    for qid, parts in groups.items():
        if len(parts) == 1:
            out[qid] = dict(parts[0], parts=1)
            continue
        last = max(parts, key=lambda q: q["last"])
        statuses = {q["status"] for q in parts}
        status = next((s for s in ("refused", "failed", "charged") if s in statuses),
                      "cached")
        out[qid] = {"analyst": last["analyst"], "status": status,
                    "cost": _sum_costs([q["cost"] or Cost() for q in parts]),
                    "charges": max(q["charges"] for q in parts),
                    "refused": max(q["refused"] for q in parts),
                    "hits": min(q["hits"] for q in parts),
                    "stored": all(q["stored"] for q in parts),
                    "first": min(q["first"] for q in parts), "last": last["last"],
                    "parts": len(parts)}
    return out


def usage_of(filt: Filter, state: Any, books: Books, rows: Sequence[schema.Row], *,
             analyst: str | None = None) -> Usage:
    """The :class:`Usage` of a ledger: ``state`` / ``books`` its verified totals, ``rows``
    its records (every kind); ``analyst`` restricts the analysts and queries listed.

    ``charges`` and ``hits`` count ledger records; ``questions`` and ``question_hits``
    count a question charged in parts (a session's SQL query with several aggregates:
    query ids ``<question>~<part>``) once: one charge when its parts were charged, one
    cache hit when every part was served from the cache."""
    failed_ids = {r.ref for r in rows if r.status == FAILED}
    zero = {"charges": 0, "refused": 0, "failed": 0, "hits": 0}
    count: dict[str, dict[str, int]] = {}  # ledger records, per analyst
    asked: dict[str, dict[str, int]] = {}  # questions (a SQL query's parts as one)
    qids: dict[str, set[str]] = {}
    totals, qtotals = dict(zero), dict(zero)
    for r in rows:
        name = r.analyst
        c = count.setdefault(name, dict(zero))
        a = asked.setdefault(name, dict(zero))
        if r.status == CHARGED and r.query:
            qids.setdefault(name, set()).add(question_of(r.query))
        key = {CHARGED: "charges", REFUSED: "refused", HIT: "hits"}.get(r.status)
        if key is None:
            continue
        failed = r.status == CHARGED and r.id in failed_ids
        c[key] += 1
        totals[key] += 1
        c["failed"] += failed
        totals["failed"] += failed
        if not (r.query and _PART.match(r.query)):
            a[key] += 1
            qtotals[key] += 1
            a["failed"] += failed
            qtotals["failed"] += failed
    queries = _questions(_query_lines(filt, rows, failed_ids))
    for qid in {question_of(r.query) for r in rows if r.query and _PART.match(r.query)}:
        q = queries[qid]
        a = asked.setdefault(q["analyst"], dict(zero))
        for key, n in (("charges", q["charges"]), ("refused", q["refused"]),
                       ("hits", q["hits"]), ("failed", 1 if q["status"] == "failed" else 0)):
            a[key] += n
            qtotals[key] += n
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
        c = count.get(name, dict(zero))
        a = asked.get(name, dict(zero))
        lim = books.limits.get(name)
        lines.append(AnalystUsage(
            name, None if lim is None else lim[0], None if lim is None else lim[1],
            float(sp.epsilon or 0.0), float(sp.delta or 0.0), left,
            None if sub is None else _pct(left, sub.epsilon),
            c["charges"], c["refused"], c["failed"], len(qids.get(name, ())), c["hits"],
            sp, a["charges"], a["hits"]))
    qlines = []
    for qid, q in queries.items():
        if analyst is not None and q["analyst"] != analyst:
            continue
        qlines.append(QueryUsage(qid, q["analyst"], q["cost"] or Cost(),
                                 q["status"] or "charged", q["charges"], q["hits"],
                                 utc(q["first"]), utc(q["last"]), q["stored"], q["parts"]))
    remaining = filt.remaining(state)
    eps_left = remaining.epsilon if math.isfinite(remaining.epsilon) else filt.epsilon
    return Usage(filt.accounting, filt.epsilon, filt.delta, filt.spent(state), remaining,
                 _pct(eps_left, filt.epsilon), totals["charges"], totals["refused"],
                 totals["failed"], totals["hits"], tuple(lines), tuple(qlines),
                 qtotals["charges"], qtotals["hits"])
