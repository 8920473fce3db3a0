"""The session's store: the result cache, the cache hits, the analysts' sub-budgets and the
usage report -- the one adapter between :class:`dpfast.Session` and the budget layer.

The budget (:class:`dpfast.Budget`) charges and refuses; this module keeps, beside it:

* **the result cache** -- ``query id -> serialised release`` -- and every hit (who: analyst,
  OS user, host, pid; when).  For a budget with a ledger file ``L`` it lives in the SQLite
  file ``L.session`` (created 0600 next to the ledger, WAL), so every process that uses the
  budget sees the same answers; for an in-memory budget, in memory.  A miss is one
  ``BEGIN IMMEDIATE`` transaction from the cache check to the stored answer: two processes
  asking the same new question are serialised, the second finds the first's answer (one
  charge, one noisy answer, never two independent ones);
* **analysts**: ``analyst(name, epsilon, delta)`` is a sub-budget, a :class:`dpfast.Budget`
  of the total's accounting with its own ledger ``L.analyst-NAME`` (in memory for an
  in-memory budget).  A release by an analyst is charged to the sub-budget, then to the
  total (each an atomic check-and-charge), both rows naming the analyst: whatever the
  processes do, neither the sub-budget nor the total is exceeded (a charge the total refuses
  after the sub-budget accepted it stays counted there, as failed: the safe side).

When the budget layer offers the same (``budget.query`` / ``budget.analyst``), this module
is the only place to switch.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from typing import Any

__all__ = ["Store", "default_accounting"]

_ANALYST = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (query_id TEXT PRIMARY KEY, payload BLOB NOT NULL,
    description TEXT NOT NULL, analyst TEXT NOT NULL, epsilon REAL, delta REAL,
    created REAL NOT NULL, user TEXT, host TEXT, pid INTEGER);
CREATE TABLE IF NOT EXISTS hits (id INTEGER PRIMARY KEY AUTOINCREMENT,
    query_id TEXT NOT NULL, analyst TEXT NOT NULL, time REAL NOT NULL, user TEXT,
    host TEXT, pid INTEGER);
CREATE TABLE IF NOT EXISTS analysts (name TEXT PRIMARY KEY, epsilon REAL NOT NULL,
    delta REAL NOT NULL, created REAL NOT NULL);
"""


def default_accounting(delta: float) -> str:
    """The accounting of a budget the session creates: the budget layer's ``"mixed"``
    filter (every kind of event in one ledger) where it exists, else ``"basic"``
    (pure and approximate DP: what the default Laplace releases and key selection spend)."""
    from dpfast.budget import FILTERS

    return "mixed" if "mixed" in FILTERS else "basic"


def _identity() -> tuple[str, str, int]:
    from dpfast.budget.session import identity

    return identity()


class _Query:
    """What :meth:`Store.query` yields: ``hit``, ``payload``, ``store(bytes)``."""

    def __init__(self, payload: bytes | None) -> None:
        self.hit = payload is not None
        self.payload = payload
        self.stored: bytes | None = None
        self.cost: Any = None

    def store(self, payload: bytes) -> None:
        if self.hit:
            raise RuntimeError("a cache hit stores nothing")
        if not isinstance(payload, bytes):
            raise TypeError("payload must be bytes")
        self.stored = payload


class Store:
    """The cache, hits and analysts of one budget (see the module docstring)."""

    def __init__(self, budget: Any) -> None:
        self.budget = budget
        path = getattr(budget, "ledger", None)
        self.path = None if path is None else os.fspath(path) + ".session"
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        self._subs: dict[str, Any] = {}

    # ---------------------------------------------------------------- connection
    def _db(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        if self.path is None:
            if self._conn is not None:
                raise RuntimeError("an in-memory session store belongs to its process")
            conn = sqlite3.connect(":memory:", check_same_thread=False,
                                   isolation_level=None)
        else:
            if not os.path.exists(self.path):
                fd = os.open(self.path, os.O_CREAT | os.O_WRONLY, 0o600)
                os.close(fd)
            conn = sqlite3.connect(self.path, timeout=600.0, check_same_thread=False,
                                   isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(_SCHEMA)
        self._conn, self._pid = conn, os.getpid()
        return conn

    # ---------------------------------------------------------------- cache
    def lookup(self, qid: str, analyst: str) -> bytes | None:
        """The stored answer of ``qid`` (recording the hit), or None."""
        with self._lock:
            db = self._db()
            row = db.execute("SELECT payload FROM results WHERE query_id = ?",
                             (qid,)).fetchone()
            if row is None:
                return None
            self._hit(db, qid, analyst)
            return bytes(row[0])

    def _hit(self, db: sqlite3.Connection, qid: str, analyst: str) -> None:
        user, host, pid = _identity()
        db.execute("INSERT INTO hits (query_id, analyst, time, user, host, pid) "
                   "VALUES (?, ?, ?, ?, ?, ?)", (qid, analyst, time.time(), user, host, pid))

    @contextlib.contextmanager
    def query(self, qid: str, event: Any, *, note: str, analyst: str, description: str
              ) -> Iterator[_Query]:
        """Atomically: the stored answer of ``qid`` (``q.hit``, ``q.payload``, the hit
        recorded, nothing charged), or the charge of ``event`` (sub-budget, then total),
        the ``with`` block (the release, which calls ``q.store(payload)``) and the stored
        answer.  A block that raises stores nothing (the charge stays, as failed)."""
        with self._lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT payload FROM results WHERE query_id = ?",
                                 (qid,)).fetchone()
                if row is not None:
                    self._hit(db, qid, analyst)
                    q = _Query(bytes(row[0]))
                    yield q
                else:
                    q = _Query(None)
                    with contextlib.ExitStack() as stack:
                        if analyst:
                            stack.enter_context(self._sub(analyst).charge(
                                event, note=note, analyst=analyst))
                        charge = stack.enter_context(self.budget.charge(
                            event, note=note, analyst=analyst))
                        yield q
                        if q.stored is None:
                            raise RuntimeError("the release stored no answer")
                    cost = getattr(charge, "cost", None)
                    user, host, pid = _identity()
                    db.execute(
                        "INSERT INTO results (query_id, payload, description, analyst, "
                        "epsilon, delta, created, user, host, pid) VALUES "
                        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (qid, q.stored, description, analyst,
                         getattr(cost, "epsilon", None), getattr(cost, "delta", None),
                         time.time(), user, host, pid))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    # ---------------------------------------------------------------- analysts
    def analyst(self, name: str, epsilon: float | None, delta: float | None) -> Any:
        """Register (or reopen) analyst ``name``'s sub-budget; returns it."""
        if not isinstance(name, str) or not _ANALYST.match(name):
            raise ValueError("analyst must be 1-64 letters, digits or . _ @ -, got "
                             f"{name!r}")
        with self._lock:
            db = self._db()
            row = db.execute("SELECT epsilon, delta FROM analysts WHERE name = ?",
                             (name,)).fetchone()
            if row is None:
                if epsilon is None:
                    raise ValueError(f"analyst {name!r} is new: give their epsilon")
                eps, dlt = self._share(name, epsilon, delta)
                db.execute("INSERT OR IGNORE INTO analysts VALUES (?, ?, ?, ?)",
                           (name, eps, dlt, time.time()))
                row = db.execute("SELECT epsilon, delta FROM analysts WHERE name = ?",
                                 (name,)).fetchone()
            eps, dlt = float(row[0]), float(row[1])
            if epsilon is not None and (float(epsilon) != eps or (
                    delta is not None and float(delta) != dlt)):
                raise ValueError(f"analyst {name!r} already has a sub-budget of "
                                 f"epsilon={eps!r}, delta={dlt!r}")
            return self._open_sub(name, eps, dlt)

    def _share(self, name: str, epsilon: Any, delta: Any) -> tuple[float, float]:
        from dpfast._core import validate

        eps = validate.check_positive(epsilon, "epsilon")
        total = self.budget
        if eps > total.epsilon:
            raise ValueError(f"analyst {name!r}: epsilon={eps!r} exceeds the session's "
                             f"total epsilon={total.epsilon!r}")
        dlt = total.delta if delta is None else validate.check_nonneg(delta, "delta")
        if dlt > total.delta:
            raise ValueError(f"analyst {name!r}: delta must be in [0, {total.delta!r}], "
                             f"got {delta!r}")
        return eps, dlt

    def _open_sub(self, name: str, eps: float, dlt: float) -> Any:
        if name in self._subs and self._subs[name][1] == os.getpid():
            return self._subs[name][0]
        from dpfast.budget import Budget

        total = self.budget
        ledger = None if total.ledger is None else f"{total.ledger}.analyst-{name}"
        delta = dlt if total.accounting != "basic" or dlt > 0 else None
        sub = Budget(eps, delta, ledger=ledger, accounting=total.accounting)
        self._subs[name] = (sub, os.getpid())
        return sub

    def _sub(self, name: str) -> Any:
        if name not in self._subs or self._subs[name][1] != os.getpid():
            return self.analyst(name, None, None)
        return self._subs[name][0]

    # ---------------------------------------------------------------- usage
    def usage(self) -> dict[str, Any]:
        """The usage report's raw figures (see :class:`dpfast.session.Usage`)."""
        with self._lock:
            db = self._db()
            analysts = db.execute("SELECT name, epsilon, delta FROM analysts "
                                  "ORDER BY name").fetchall()
            queries = db.execute(
                "SELECT r.query_id, r.description, r.analyst, r.epsilon, r.delta, r.created, "
                "(SELECT count(*) FROM hits h WHERE h.query_id = r.query_id) FROM results r "
                "ORDER BY r.created").fetchall()
            hits = db.execute("SELECT analyst, count(*) FROM hits GROUP BY analyst"
                              ).fetchall()
        return {"analysts": [(n, float(e), float(d), self._open_sub(n, float(e), float(d)))
                             for n, e, d in analysts],
                "queries": queries, "hits": dict(hits)}

    def close(self) -> None:
        with self._lock:
            for sub, pid in self._subs.values():
                if pid == os.getpid():
                    sub.close()
            self._subs.clear()
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
