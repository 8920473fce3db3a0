"""Cached query results in a :class:`~dpfast.Budget`'s ledger: :meth:`Budget.query
<dpfast.Budget.query>`.

``with budget.query(query_id, event, analyst="alice") as q:`` looks the query id up in
the ledger, in one write transaction (so across processes):

* a stored result: ``q.hit`` is True and ``q.payload`` the stored bytes; nothing is
  charged, a ``hit`` row (who, when) is recorded;
* no result and no one computing it: the event is charged (budget and analyst, as
  :meth:`~dpfast.Budget.spend`), ``q.hit`` is False; the block computes the release and
  calls ``q.store(payload)``, which records the result (a ``stored`` row whose digest is
  in the hash chain, the bytes in the ``payloads`` table).  An exception in the block,
  or a block that stores nothing, records the charge as failed (no refund, no result):
  the next ask charges again;
* a charge of that id still being computed (by a live process): the call waits, polling
  the ledger, until the result is stored (a hit) or the charge failed (then it charges
  and computes itself).  A computing process on this host that died is noticed and its
  charge recorded as failed.

Privacy
-------
Serving a stored result again is post-processing of a release already paid for: it
costs nothing and reveals nothing new.  Computing it again would draw fresh noise, and
several independent noisy answers to one question can be averaged (their noise shrinks
as 1/sqrt(k)); that is why a repeated query must be a cache hit, never a re-release.
The payload is opaque to the budget; ``dpfast ledger verify`` checks every payload
against the digest in the chain.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dpfast._core.validate import check_real

from . import schema
from .chain import to_row
from .records import CHARGED, FAILED, HIT, REFUSED, STORED, Charge, LedgerError, utc
from .sync import _LedgerSync, identity

if TYPE_CHECKING:
    from .usage import Usage

__all__ = ["Query", "Queries", "payload_digest"]

#: (ledger path, charge id) -> thread computing it in this process
_ACTIVE: dict[tuple[str | None, int], int] = {}
_ACTIVE_LOCK = threading.Lock()


def payload_digest(payload: bytes) -> str:
    """The ``event`` text of a ``stored`` row: the payload's SHA-256 and size."""
    return json.dumps({"sha256": hashlib.sha256(payload).hexdigest(), "size": len(payload)},
                      separators=(",", ":"))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


class Query:
    """One ask of a query id (see :meth:`Budget.query <dpfast.Budget.query>`).

    Attributes
    ----------
    query_id : str
    hit : bool
        True: the result was stored before; :attr:`payload` holds it, nothing was charged.
    payload : bytes or None
        The stored result (on a hit, or after :meth:`store`).
    charge : Charge or None
        On a miss, the committed charge of this computation.
    """

    def __init__(self, owner: Any, query_id: str, hit: bool, payload: bytes | None,
                 charge: Charge | None) -> None:
        self._owner = owner
        self.query_id = query_id
        self.hit = hit
        self.payload = payload
        self.charge = charge
        self.stored = hit

    def store(self, payload: bytes) -> None:
        """Record ``payload`` (bytes) as the result of this query, once, on a miss."""
        if self.hit:
            raise ValueError(f"query {self.query_id!r} was a cache hit: its result is "
                             "already stored")
        if self.stored:
            raise ValueError(f"the result of query {self.query_id!r} is already stored")
        if not isinstance(payload, (bytes, bytearray, memoryview)):
            raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
        data = bytes(payload)
        assert self.charge is not None
        self._owner._store_result(self.charge, data)
        self.payload = data
        self.stored = True

    def __repr__(self) -> str:
        return f"Query({self.query_id!r}, hit={self.hit})"


class Queries:
    """The query-cache methods of :class:`~dpfast.Budget` (a base class of it)."""

    _lock: threading.RLock
    _sync: _LedgerSync
    _filter: Any
    _ledger: Any

    if TYPE_CHECKING:
        def _prepare(self, event: Any, note: str, analyst: str, query_id: str
                     ) -> tuple[str, frozenset[str], tuple[float, ...]]: ...

        def _verdict(self, event: Any, costs: tuple[float, ...], rels: frozenset[str],
                     analyst: str) -> tuple[str, str | None]: ...

        def _refusal(self, event: Any, costs: tuple[float, ...], analyst: str,
                     why: str | None) -> Exception: ...

    @contextlib.contextmanager
    def query(self, query_id: str, event: Any, *, note: str = "", analyst: str = "",
              wait: float = 3600.0) -> Iterator[Query]:
        """Ask the query ``query_id``: its stored result, or a charge to compute it.

        Parameters
        ----------
        query_id : str
            Names the question (non-empty): the same id must mean the same release
            (same data, parameters and ``event``).
        event : event of :mod:`dpfast.accounting.events`
            What computing it costs (charged on a miss only).
        note, analyst : str, optional
            As :meth:`spend`; a hit is recorded with its own analyst and note.
        wait : float, default 3600
            Seconds to wait for a computation of the same id in progress elsewhere
            before :class:`LedgerError`.

        Yields
        ------
        Query
            ``hit`` and ``payload`` on a hit; on a miss the block computes the release
            and calls ``store(payload)``.

        Raises
        ------
        BudgetExceededError
            A miss that does not fit (budget or analyst); recorded as refused.
        ValueError
            ``query_id`` was asked before with another ``event``.
        TypeError, ValueError, LedgerError
            As :meth:`spend`; or the wait ran out; or a stored result does not match
            its digest in the hash chain (the ledger was tampered with).

        Privacy
        -------
        A hit is post-processing of the stored release (no cost); a miss is charged
        like :meth:`spend`.  Re-noising a repeated question would instead publish
        independent answers that can be averaged.

        Examples
        --------
        >>> import dpfast as dp
        >>> from dpfast.accounting import events
        >>> budget = dp.Budget(1.0)
        >>> with budget.query("q1", events.Epsilon(0.5)) as q:
        ...     if not q.hit:
        ...         q.store(b"42")
        >>> with budget.query("q1", events.Epsilon(0.5)) as q:
        ...     q.hit, q.payload
        (True, b'42')
        >>> budget.remaining().epsilon
        0.5
        """
        if not isinstance(query_id, str):
            raise TypeError(f"query_id must be a str, got {type(query_id).__name__}")
        if not query_id:
            raise ValueError("query_id must not be empty")
        event_json, rels, costs = self._prepare(event, note, analyst, query_id)
        tmo = check_real(wait, "wait")
        if not tmo >= 0.0:
            raise ValueError(f"wait must be >= 0, got {wait!r}")
        deadline = time.monotonic() + tmo
        delay = 0.01
        while True:
            kind, value = self._ask(query_id, event, event_json, rels, costs, note, analyst)
            if kind == "retry":
                continue
            if kind != "pending":
                break
            if time.monotonic() > deadline:
                raise LedgerError(f"query {query_id!r} is being computed by {value} for "
                                  f"longer than wait={tmo} s")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        if kind == "hit":
            yield Query(self, query_id, True, value, None)
            return
        charge: Charge = value
        key = (self._ledger.path, charge.id)  # registered by _ask, before its commit
        q = Query(self, query_id, False, None, charge)
        try:
            try:
                yield q
            except BaseException as exc:
                self._fail(charge, f"{type(exc).__name__}: {exc}"[:500])
                raise
            if not q.stored:
                self._fail(charge, "the query stored no result")
        finally:
            with _ACTIVE_LOCK:
                _ACTIVE.pop(key, None)

    # -- the steps, each one ledger transaction ----------------------------------------

    def _rows_of(self, conn: Any, query_id: str) -> list[schema.Row]:
        """The last ``stored`` row of the query if there is one, else its charges and
        failures (never its hits: asking costs the same after any number of them)."""
        where = self._ledger.where
        raw = conn.execute(f"SELECT {schema.COLUMNS} FROM charges WHERE query = ? AND "
                           "status = ? ORDER BY id DESC LIMIT 1", (query_id, STORED)
                           ).fetchone()
        if raw is not None:
            stored = to_row(raw, where)
            charge = conn.execute(f"SELECT {schema.COLUMNS} FROM charges WHERE id = ?",
                                  (stored.ref,)).fetchone()
            return ([] if charge is None else [to_row(charge, where)]) + [stored]
        raws = conn.execute(f"SELECT {schema.COLUMNS} FROM charges WHERE query = ? AND "
                            "status IN (?, ?) ORDER BY id", (query_id, CHARGED, FAILED)
                            ).fetchall()
        return [to_row(r, where) for r in raws]

    def _payload(self, conn: Any, stored: schema.Row) -> bytes:
        """The payload of a ``stored`` row, checked against the chain."""
        where = self._ledger.where
        nxt = conn.execute("SELECT prev FROM charges WHERE id = ?", (stored.id + 1,)).fetchone()
        got = conn.execute("SELECT data FROM payloads WHERE id = ?", (stored.id,)).fetchone()
        ok = schema.row_hash(stored.prev, schema.hashed(stored)) == stored.hash and (
            nxt is None or nxt[0] == stored.hash)
        if not ok:
            raise LedgerError(f"{where} has been tampered with: the record of the result of "
                              f"query {stored.query!r} does not match the hash chain")
        if got is None or not isinstance(got[0], bytes):
            raise LedgerError(f"{where} lost the stored result of query {stored.query!r} "
                              f"(record {stored.id}); it was charged, so it is not computed "
                              "again: restore the ledger from a backup")
        if payload_digest(got[0]) != stored.event:
            raise LedgerError(f"{where} has been tampered with: the stored result of query "
                              f"{stored.query!r} does not match its digest in the hash chain")
        return got[0]

    def _ask(self, query_id: str, event: Any, event_json: str, rels: frozenset[str],
             costs: tuple[float, ...], note: str, analyst: str) -> tuple[str, Any]:
        """One transaction: ``("hit", payload)``, ``("charged", Charge)``, ``("pending",
        who)`` or ``("retry", None)`` (an abandoned computation was recorded as failed)."""
        user, host, pid = identity()
        sync = self._sync
        out: dict[str, Any] = {}

        def same_event(row: schema.Row) -> None:
            if row.event != event_json:
                raise ValueError(
                    f"query id {query_id!r} was asked before with another privacy guarantee "
                    f"({row.event}); a query id names one release: use a new id")

        def make() -> list[Any] | None:
            conn = sync.connection()
            now = time.time()
            rows = self._rows_of(conn, query_id)
            by_id = {r.id: r for r in rows}
            stored = [r for r in rows if r.status == STORED]
            if stored:
                last = stored[-1]
                charge = by_id.get(last.ref)  # type: ignore[arg-type]
                if charge is not None:
                    same_event(charge)
                out["kind"], out["value"] = "hit", self._payload(conn, last)
                return [now, HIT, last.id, analyst, note, last.event, "[]", user, host, pid,
                        query_id]
            failed = {r.ref for r in rows if r.status == FAILED}
            open_ = [r for r in rows if r.status == CHARGED and r.id not in failed]
            if open_:
                c = open_[-1]
                same_event(c)
                with _ACTIVE_LOCK:
                    thread = _ACTIVE.get((self._ledger.path, c.id))
                mine = c.pid == pid and c.host == host
                if thread == threading.get_ident():
                    raise RuntimeError(f"query {query_id!r} is asked again inside its own "
                                       "computation (same thread)")
                if (mine and thread is None) or (c.host == host and not _alive(c.pid)):
                    out["kind"] = "retry"
                    return [now, FAILED, c.id, c.analyst, "abandoned: the computing process "
                            "ended without storing a result", c.event, "[]", user, host, pid,
                            query_id]
                out["kind"], out["value"] = "pending", f"process {c.pid} on {c.host}"
                return None
            status, why = self._verdict(event, costs, rels, analyst)
            out["kind"], out["why"] = status, why
            if status == CHARGED:  # another thread of this process must see it computing
                assert sync.chain is not None
                out["key"] = (self._ledger.path, sync.chain.last_id + 1)
                with _ACTIVE_LOCK:
                    _ACTIVE[out["key"]] = threading.get_ident()
            return [now, status, None, analyst, note, event_json, schema.encode_cost(costs),
                    user, host, pid, query_id]

        with self._lock:
            # a stored result never goes away: its hit is recorded without waiting for the
            # disk (it spends nothing); anything else is a durable commit
            known = sync.read("cannot read the ledger").execute(
                "SELECT 1 FROM charges WHERE query = ? AND status = ? LIMIT 1",
                (query_id, STORED)).fetchone() is not None
            try:
                row = sync.write(make, relations=rels, durable=not known)
            except BaseException:
                if "key" in out:
                    with _ACTIVE_LOCK:
                        _ACTIVE.pop(out["key"], None)
                raise
            kind = out["kind"]
            if kind == REFUSED:
                raise self._refusal(event, costs, analyst, out["why"])
        if kind == CHARGED:
            assert row is not None
            return "charged", Charge(row.id, utc(row.time), analyst, note, event, event_json,
                                     self._filter.cost_record(costs), CHARGED, user, host,
                                     pid, query_id)
        return kind, out.get("value")

    def _store_result(self, charge: Charge, payload: bytes) -> None:
        user, host, pid = identity()
        digest = payload_digest(payload)

        def extra(conn: Any, row: schema.Row) -> None:
            conn.execute("INSERT INTO payloads (id, data) VALUES (?, ?)", (row.id, payload))

        def make() -> list[Any]:
            return [time.time(), STORED, charge.id, charge.analyst, "", digest, "[]", user,
                    host, pid, charge.query_id]

        with self._lock:
            self._sync.write(make, extra=extra)

    def _fail(self, charge: Charge, why: str) -> None:
        user, host, pid = identity()

        def make() -> list[Any]:
            return [time.time(), FAILED, charge.id, charge.analyst, why, charge.event_json,
                    "[]", user, host, pid, charge.query_id]

        with self._lock:
            try:
                self._sync.write(make)
            except (LedgerError, ValueError, RuntimeError):
                pass  # the charge stays counted; never mask the computation's error

    def has_result(self, query_id: str) -> bool:
        """True if a result of ``query_id`` is stored (asking it again is a cache hit)."""
        with self._lock:
            conn = self._sync.read("cannot read the ledger")
            return conn.execute("SELECT 1 FROM charges WHERE query = ? AND status = ? "
                                "LIMIT 1", (query_id, STORED)).fetchone() is not None

    def result_id(self, part: str) -> str | None:
        """The query id under which an answer of ``part`` is stored: ``part`` itself, or a
        question's part ``<question>~<part>`` (a session's SQL query charges its
        aggregates so); the first stored, None if none.  A session asks it before its
        ledger query, so that one question asked twice -- by a method call and as part of
        an SQL query -- is answered from the cache, not charged twice."""
        with self._lock:
            conn = self._sync.read("cannot read the ledger")
            got = conn.execute("SELECT query FROM charges WHERE (query = ? OR query LIKE ?) "
                               "AND status = ? ORDER BY id LIMIT 1",
                               (part, f"%~{part}", STORED)).fetchone()
        return None if got is None else str(got[0])

    def usage(self, *, analyst: str | None = None) -> Usage:
        """The usage report (:class:`~dpfast.budget.usage.Usage`): total, spent,
        remaining and utilization, per analyst and per query (cost, cache hits).
        ``analyst``: only that analyst's analysts/queries rows."""
        from .usage import usage_of

        with self._lock:
            conn = self._sync.read("cannot read the ledger")
            rows = [schema.Row(*r) for r in conn.execute(
                f"SELECT {schema.COLUMNS} FROM charges ORDER BY id").fetchall()]
            return usage_of(self._filter, self._sync.state, self._sync.books, rows,
                            analyst=analyst)
