"""What the HTTP app calls: one :class:`Service` per worker process, holding one
:class:`dpfast.Session` per private table (each with its budget on the one shared ledger,
bound to the one privacy unit), the state store (tokens, report aggregates) and the
collections' empty aggregators.  A query goes to the session whose private table its
FROM names (:func:`route`).

The service adds no privacy logic: a query is :meth:`dpfast.Session.sql` as the
registered analyst (the refusals, the budget split, the cache and the charge are the
session's and the ledger's); an answer is built only from the release (keys, noisy
values, their intervals, the events) -- never from rows.  Report batches are checked
whole by :meth:`dpfast.local.Aggregator.add` before anything is counted; estimates are
:func:`dpfast.local.monitor.monitor` of the stored aggregate.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .config import Config, PrivateTable
from .store import StateStore

__all__ = ["Service", "make_session", "open_budget", "prepare", "route"]


def open_budget(cfg: Config, *, in_memory: bool = False) -> Any:
    """The budget on the configured ledger (created if missing; reopened with the same
    definition otherwise); ``in_memory``: a budget of the same definition with no ledger
    file (what ``dpfast serve check`` uses when the ledger does not exist yet)."""
    from dpfast.budget import Budget
    from dpfast.session import _store

    return Budget(cfg.epsilon, cfg.delta or None, ledger=None if in_memory else cfg.ledger,
                  accounting=_store.default_accounting(cfg.delta))


def prepare(cfg: Config, *, dry_run: bool = False) -> None:
    """The budget owner's acts before serving: create or reopen the ledger, bind it to the
    privacy unit, register the configured analysts' shares (a ledger row each, once), and
    create the state file.  Raises ValueError (naming what) on a mismatch.  ``dry_run``
    (``dpfast serve check``): the same checks, writing nothing -- an existing ledger is
    checked read-only against the configuration, a missing one is not created."""
    if dry_run:
        _check_existing(cfg)
    with _sessions(cfg, in_memory=dry_run) as sessions:  # every table checked
        for name, (eps, dlt) in cfg.analysts.items():
            sessions[0].add_analyst(name, epsilon=eps, delta=dlt)
    if not dry_run:
        StateStore(cfg.state).close()


def _check_existing(cfg: Config) -> None:
    """An existing ledger must have the configured definition, privacy unit and analyst
    shares (read-only: :func:`dpfast.budget.inspect_ledger`)."""
    from dpfast.budget import inspect_ledger

    if not os.path.exists(cfg.ledger):
        return
    report = inspect_ledger(cfg.ledger)
    if not report.chain_ok:
        raise ValueError(f"ledger {cfg.ledger}: {report.problem}")
    d = report.definition
    if (d.get("epsilon"), d.get("delta") or 0.0) != (cfg.epsilon, cfg.delta):
        raise ValueError(f"ledger {cfg.ledger} has epsilon {d.get('epsilon')!r}, delta "
                         f"{d.get('delta')!r}; the configuration's budget is epsilon "
                         f"{cfg.epsilon!r}, delta {cfg.delta!r}")
    budget = open_budget(cfg)  # the ledger exists: opening it writes nothing new
    try:
        have = budget.analysts()
        unit = budget.privacy_unit()
    finally:
        budget.close()
    for name, (eps, _) in cfg.analysts.items():
        if name in have and eps is not None and have[name][0] != eps:
            raise ValueError(f"analysts.{name}.epsilon: the ledger registered {name} with "
                             f"epsilon {have[name][0]!r}, the configuration says {eps!r}")
    if unit is not None:
        want, got = cfg.privacy_unit, unit.get("column")
        if got != want:
            raise ValueError(f"{cfg.tables[0].key}.privacy_unit: the ledger is bound to "
                             f"{got!r}, the configuration says {want!r}")


def _source(t: PrivateTable) -> Any:
    if t.source.lower().endswith(".csv"):
        import pandas as pd

        return pd.read_csv(t.source)
    return t.source


@contextlib.contextmanager
def _sessions(cfg: Config, *, in_memory: bool = False) -> Iterator[list[Any]]:
    sessions: list[Any] = []
    try:
        for t in cfg.tables:
            sessions.append(make_session(cfg, t, in_memory=in_memory))
        yield sessions
    finally:
        for s in sessions:
            s.close()


def make_session(cfg: Config, table: PrivateTable, *, in_memory: bool = False) -> Any:
    """The session over one private ``table`` of ``cfg``, on its own connection to the
    configured budget (``in_memory``: see :func:`open_budget`)."""
    from dpfast.session import Session

    name = table.name
    if name is None and not table.source.lower().endswith((".duckdb", ".db")):
        stem = os.path.splitext(os.path.basename(table.source))[0]
        name = stem if stem.isidentifier() else None
    return Session(_source(table), privacy_unit=cfg.privacy_unit, bounds=table.bounds,
                   domains=table.domains, budget=open_budget(cfg, in_memory=in_memory),
                   table=table.table, name=name,
                   public=cfg.public or None, max_partitions=table.max_partitions,
                   max_per_partition=table.max_per_partition)


def route(sql: str, names: list[str]) -> int:
    """The index in ``names`` (the sessions' private tables' SQL names) of the table the
    query's FROM names, read with the sessions' own parser (:mod:`dpfast.session.sql`)
    and matched as the session matches it (exactly, else case-insensitively).  A query
    that does not parse, or whose FROM names none of them, goes to the first: that
    session refuses it with its reason (``syntax``, ``no_private_table``,
    ``unknown_table``, ...), before any charge.  Reads the text only."""
    if len(names) < 2 or not isinstance(sql, str):
        return 0
    from sqlglot import exp

    from dpfast.session import SqlRefusedError
    from dpfast.session import sql as _sql

    try:
        tree = _sql._parse(sql)
    except SqlRefusedError:
        return 0
    frm = tree.args.get("from_") or tree.args.get("from")
    t = getattr(frm, "this", None)
    if not isinstance(t, exp.Table) or not isinstance(t.this, exp.Identifier):
        return 0
    found = [i for i, n in enumerate(names) if n == t.name] or [
        i for i, n in enumerate(names) if n.casefold() == t.name.casefold()]
    return found[0] if len(found) == 1 else 0


class _Recorder:
    """Wraps a session's store: records each aggregate's ``(query_id, hit, charge,
    event)`` of the current call (the lock is held by the caller)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[tuple[str, bool, Any, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @contextlib.contextmanager
    def query(self, qid: str, event: Any, *, note: str, analyst: str) -> Iterator[Any]:
        with self._inner.query(qid, event, note=note, analyst=analyst) as q:
            self.calls.append((qid, bool(q.hit), q.charge, event))
            yield q


def _json_value(v: Any) -> Any:
    if isinstance(v, (np.generic,)):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _cost(charge: Any, event: Any) -> tuple[float, float]:
    cost = getattr(charge, "cost", None)
    eps = getattr(cost, "epsilon", None)
    dlt = getattr(cost, "delta", None)
    if eps is None:
        eps = getattr(event, "epsilon", None)
        dlt = getattr(event, "delta", 0.0)
    return float(eps if eps is not None else math.nan), float(dlt or 0.0)


class Service:
    """One worker's view of the service (see the module docstring)."""

    def __init__(self, cfg: Config) -> None:
        from dpfast.local.server import Aggregator

        self.cfg = cfg
        self.sessions: list[Any] = []
        self._recorders: list[_Recorder] = []
        try:
            for t in cfg.tables:
                s = make_session(cfg, t)
                self.sessions.append(s)
                self._recorders.append(_Recorder(s._store))
                s._store = self._recorders[-1]
        except BaseException:
            for s in self.sessions:
                s.close()
            raise
        self.session = self.sessions[0]  # usage and the ledger's history: any one will do
        self.names = [s._source.name for s in self.sessions]
        self.state = StateStore(cfg.state)
        self.lock = threading.Lock()        # the session (one release at a time here)
        self.state_lock = threading.Lock()  # the state store's connection
        self.empty = {name: Aggregator.from_params(c.protocol, c.params,
                                                   candidates=c.candidates)
                      for name, c in cfg.collections.items()}

    def close(self) -> None:
        for s in self.sessions:
            s.close()
        self.state.close()

    # ------------------------------------------------------------------ queries
    def query(self, analyst: str, sql: str, epsilon: float, delta: float) -> dict[str, Any]:
        """:meth:`dpfast.Session.sql` as ``analyst``; the answer as JSON-ready data.
        The session is the one whose private table the FROM names (:func:`route`).
        Raises what the session raises (SqlRefusedError, BudgetExceededError,
        ReleaseFailedError, ValueError before the charge)."""
        i = route(sql, self.names)
        with self.lock:
            recorder = self._recorders[i]
            recorder.calls = []
            who = self.sessions[i].analyst(analyst)
            rel = who.sql(sql, epsilon=epsilon, delta=delta)
            calls = list(recorder.calls)
        answer = self._answer(rel, calls)
        try:  # the dashboard's list of recent releases: best effort (the ledger has it all)
            with self.state_lock:
                self.state.add_release(analyst, sql, json.dumps(answer))
        except sqlite3.Error:
            pass
        return answer

    def _answer(self, rel: Any, calls: list[tuple[str, bool, Any, Any]]) -> dict[str, Any]:
        releases = rel.releases
        first = next(iter(releases.values()))
        keys = first.keys if isinstance(first.keys, tuple) else (first.keys,)
        key_names = [n for n in rel.key_names if not n.startswith("__")]
        cols: dict[str, Any] = {n: np.asarray(k) for n, k in zip(rel.key_names, keys)
                                if not n.startswith("__")}
        intervals: dict[str, Any] = {}
        for name, r in releases.items():
            cols[name] = np.asarray(r.values)
            ci = getattr(r, "confidence_interval", None)
            if callable(ci):
                lo, hi = ci(0.05)
                intervals[name] = (np.asarray(lo), np.asarray(hi))
        n = len(first)
        order = np.arange(n)
        if rel._order and n:
            import pandas as pd

            df = pd.DataFrame({c: cols[c] for c, _ in rel._order})
            order = df.sort_values([c for c, _ in rel._order],
                                   ascending=[not d for _, d in rel._order]).index.to_numpy()
        columns = key_names + list(releases)
        rows = [[_json_value(cols[c][i]) for c in columns] for i in order]
        ivals = {name: [[_json_value(lo[i]), _json_value(hi[i])] for i in order]
                 for name, (lo, hi) in intervals.items()}
        qids = [c[0] for c in calls]
        spent_eps = spent_dlt = 0.0
        for _, hit, charge, event in calls:
            if not hit:
                e, d = _cost(charge, event)
                spent_eps += e
                spent_dlt += d
        qid = hashlib.sha256("\n".join(qids).encode()).hexdigest()[:32]
        return {"columns": columns, "key_columns": key_names, "rows": rows,
                "intervals": ivals, "confidence": 0.95,
                "privacy_spent": {"epsilon": _json_value(spent_eps),
                                  "delta": _json_value(spent_dlt)},
                "cached": bool(calls) and all(c[1] for c in calls),
                "query_id": qid, "query_ids": qids, "rule": rel.rule}

    # ------------------------------------------------------------------ usage, ledger
    def usage(self, analyst: str | None) -> dict[str, Any]:
        """The usage report (all of it for ``analyst=None``, the admin; else the
        analyst's own line and the total's figures)."""
        with self.lock:
            u = self.session.usage()
        total = {"epsilon": u.epsilon, "delta": u.delta, "accounting": u.accounting,
                 "spent": {"epsilon": _json_value(u.spent.epsilon),
                           "delta": _json_value(u.spent.delta)},
                 "utilization": _json_value(u.utilization)}
        lines = [a for a in u.analysts if analyst is None or a.name == analyst]
        out: dict[str, Any] = {"analysts": [
            {"name": a.name, "epsilon": _json_value(a.epsilon), "delta": _json_value(a.delta),
             "spent_epsilon": _json_value(a.spent_epsilon),
             "spent_delta": _json_value(a.spent_delta),
             "remaining_epsilon": _json_value(a.remaining_epsilon),
             "utilization": _json_value(a.utilization), "charges": a.charges,
             "refused": a.refused, "failed": a.failed, "queries": a.queries, "hits": a.hits}
            for a in lines]}
        if analyst is None:
            out["total"] = total
            out["charges"], out["refused"], out["failed"], out["hits"] = (
                u.charges, u.refused, u.failed, u.hits)
        else:
            out["analyst"] = analyst
        return out

    def history(self, analyst: str | None = None) -> list[dict[str, Any]]:
        """The ledger's records (all, or one analyst's) as JSON-ready rows."""
        with self.lock:
            records = self.session.budget.history(include_refused=True)
        return [{"id": c.id, "time": c.time.isoformat(), "analyst": c.analyst,
                 "note": c.note, "status": c.status, "query_id": c.query_id,
                 "epsilon": _json_value(_cost(c, c.event)[0]),
                 "delta": _json_value(_cost(c, c.event)[1]), "event": c.event_json}
                for c in records if analyst is None or c.analyst == analyst]

    def verify(self) -> dict[str, Any]:
        from dpfast.budget import inspect_ledger

        report = inspect_ledger(self.cfg.ledger)
        return {"ok": bool(report.chain_ok), "records": len(report.records),
                "head": report.head, "problem": report.problem or ""}

    # ------------------------------------------------------------------ collections
    def add_reports(self, collection: str, batch_id: str, client_id: str,
                    reports: str) -> tuple[int, bool]:
        """Check the batch whole (ValueError/TypeError: refused, nothing counted), then
        count it once (:meth:`StateStore.add_batch`)."""
        from dpfast.local.reports import ReportBatch

        batch = ReportBatch.from_json(reports)
        partial = self.empty[collection].copy()
        partial.add(batch)
        # the batch's canonical bytes: a retry is the same batch however its JSON is spaced
        with self.state_lock:
            return self.state.add_batch(collection, batch_id, client_id, batch.to_bytes(),
                                        partial, self.empty[collection])

    def estimates(self, collection: str) -> dict[str, Any]:
        """The collection's estimates with 95% intervals and the utility monitor."""
        from dpfast.local.monitor import estimates, monitor
        from dpfast.local.server import Aggregator

        c = self.cfg.collections[collection]
        with self.state_lock:
            blob, _ = self.state.aggregate(collection)
            batches, reports = self.state.batch_totals(collection)
        agg = Aggregator.from_bytes(blob) if blob else self.empty[collection].copy()
        est = estimates(agg, alpha=0.05)
        mon = monitor(agg, target=c.target)
        n = max(agg.n, 1)
        grid = sorted({int(x) for x in np.unique(np.geomspace(
            max(1, n // 100), max(n * 100, 100), 25).round())})
        curve = [np.asarray(est.std_error_at(float(g))) for g in grid]
        worst = [float(np.nanmax(row)) if np.isfinite(row).any() else None for row in curve]
        return {
            "collection": collection, "protocol": agg.protocol, "params": agg.params,
            "n": agg.n, "batches": batches, "epsilon_per_report": agg.epsilon,
            "items": [_json_value(i) for i in est.items],
            "counts": [_json_value(x) for x in est.counts],
            "frequencies": [_json_value(x) for x in est.frequencies],
            "std_error": [_json_value(x) for x in est.std_error],
            "low": [_json_value(x) for x in est.low],
            "high": [_json_value(x) for x in est.high], "confidence": 0.95,
            "monitor": {"target": mon.target, "threshold": mon.threshold,
                        "flagged": [_json_value(i) for i in mon.flagged],
                        "reports_needed": {str(r[0]): _json_value(r[6]) for r in mon.rows},
                        "curve": {"reports": grid,
                                  "max_std_error": [_json_value(w) for w in worst]}},
            "consistent": reports == agg.n,
        }
