"""Per-process access to a budget's ledger: the connection (reopened after ``fork``),
the lock, and the verified running state (hash chain + the filter's exact totals)."""

from __future__ import annotations

import functools
import os
import socket
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

from dpfast.accounting import events as _events

from . import ledger, schema
from .filters import Filter
from .records import CHARGED, LedgerError, deserialize_event

__all__ = ["Session", "identity", "relations_of_json"]


@functools.lru_cache(maxsize=256)
def relations_of_json(event_json: str) -> frozenset[str]:
    """The neighbouring relations a stored event fixes (empty when unreadable or none)."""
    try:
        return _events.relations_of(deserialize_event(event_json))
    except (TypeError, ValueError, KeyError):
        return frozenset()

_IDENTITY: dict[int, tuple[str, str]] = {}


def identity() -> tuple[str, str, int]:
    """OS user (from the effective uid, not the environment), host, pid."""
    pid = os.getpid()
    if pid not in _IDENTITY:
        try:
            import pwd

            user = pwd.getpwuid(os.geteuid()).pw_name
        except (ImportError, KeyError, AttributeError):
            import getpass

            try:
                user = getpass.getuser()
            except Exception:  # pragma: no cover - no user database at all
                user = "?"
        _IDENTITY.clear()
        _IDENTITY[pid] = (user, socket.gethostname())
    user, host = _IDENTITY[pid]
    return user, host, pid


class Session:
    """A filter's state kept in step with a ledger, safe across threads and processes.

    Each process opens its own SQLite connection: a session inherited through
    ``fork`` abandons the parent's (never closing it in the child) and reconnects;
    an in-memory ledger cannot cross ``fork``.  Threads share the connection under
    :attr:`lock` (held by the caller of every method but :meth:`dispose`).
    """

    def __init__(self, filt: Filter, ledger_file: ledger.LedgerFile) -> None:
        self.filter = filt
        self.ledger_file = ledger_file
        self.lock = threading.RLock()
        self._pid = os.getpid()
        self.closed = False
        self._conn: sqlite3.Connection | None = None
        self._abandoned: list[sqlite3.Connection] = []
        self.state = filt.new_state()
        #: the neighbouring relation fixed by the charges so far (None: not fixed yet)
        self.relation: str | None = None
        self.chain: ledger.Chain | None = None
        self._conn = ledger_file.connect(self.load)

    def load(self, conn: sqlite3.Connection, genesis: str) -> None:
        if self.chain is None:
            self.chain = ledger.Chain(genesis, self.ledger_file.where)
        self.sync(conn)
        ledger.check_tail(conn, self.chain)

    def connection(self) -> sqlite3.Connection:
        """This process's connection (call with the lock held)."""
        if self.closed:
            raise ValueError("operation on a closed Budget")
        if self._pid != os.getpid():
            # Inherited through fork: SQLite connections must not cross fork.
            if self.ledger_file.path is None:
                raise RuntimeError(
                    "an in-memory Budget cannot be used in a forked child process: the "
                    "copy would be a second, independent budget. Use Budget(..., "
                    "ledger=path) to share a budget across processes."
                )
            if self._conn is not None:
                self._abandoned.append(self._conn)  # never closed in the child
            self._conn = None
            self._pid = os.getpid()
        if self._conn is None:
            self._conn = self.ledger_file.connect(self.load)
        return self._conn

    def sync(self, conn: sqlite3.Connection) -> None:
        """Verify and add the rows committed since the last sync (all or nothing)."""
        assert self.chain is not None
        rows = ledger.rows_after(conn, self.chain.last_id)
        if not rows:
            return
        chain = ledger.Chain(self.chain.last_hash, self.chain.where)
        chain.last_id = self.chain.last_id
        state = self.state.copy()
        relation = self.relation
        for row in rows:
            chain.verify(row)
            if row.status == CHARGED:
                try:
                    costs = self.filter.row_costs(schema.decode_cost(row.cost))
                except (TypeError, ValueError) as exc:
                    raise LedgerError(
                        f"charge {row.id} of {self.ledger_file.where} is damaged: {exc}"
                    ) from exc
                self.filter.add(state, costs)
                if relation is None:
                    rels = relations_of_json(row.event)
                    if len(rels) == 1:
                        relation = next(iter(rels))
        self.chain, self.state, self.relation = chain, state, relation

    def read(self, action: str) -> sqlite3.Connection:
        conn = self.connection()
        try:
            self.sync(conn)
        except sqlite3.Error as exc:
            raise self.ledger_file.error(exc, action) from exc
        return conn

    def append(self, fields: list[Any], decide: Callable[[], str],
                on_commit: Callable[[], None]) -> schema.Row:
        """Sync, decide the row's status, append it, in one transaction (lock held).

        ``fields``: ``time, ref, analyst, note, event, cost, user, host, pid``;
        ``on_commit`` runs after the commit of a ``"charged"`` row.
        """
        conn = self.connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self.ledger_file.error(exc, "cannot lock the ledger") from exc
        try:
            self.sync(conn)
            status = decide()
            assert self.chain is not None
            row = ledger.append(conn, self.chain, [fields[0], status, *fields[1:]])
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(exc, sqlite3.Error):
                raise self.ledger_file.error(exc, "cannot record the charge") from exc
            raise
        self.chain.last_id, self.chain.last_hash = row.id, row.hash
        if row.status == CHARGED:
            on_commit()
        return row

    def close(self) -> None:
        """Close this process's connection; the session refuses further use."""
        if self.closed:
            return
        self.closed = True
        conn, self._conn = self._conn, None
        if conn is not None and self._pid == os.getpid():
            conn.close()

    def dispose(self) -> None:
        """Best-effort close at garbage collection (never in a forked child)."""
        try:
            if not self.closed and self._pid == os.getpid() and self._conn is not None:
                self._conn.close()
        except Exception:
            pass
