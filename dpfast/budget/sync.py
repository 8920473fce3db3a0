"""Per-process access to a budget's ledger: the connection (reopened after ``fork``),
the lock, and the verified running state (hash chain + the filter's exact totals).

Opening reads the anchor, then -- in one read snapshot -- the last checkpoint, the rows
after it and SQLite's sequence, and verifies them (:meth:`_LedgerSync.load`); a charge
syncs, decides and appends in one write transaction, writes a checkpoint every
:data:`.checkpoint.EVERY` rows, and moves the anchor forward after the commit
(:meth:`_LedgerSync.append`)."""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

from dpfast.accounting import events as _events

from . import checkpoint, ledger, schema
from .anchor import Pending
from .books import Books, absorb_row
from .chain import (
    Chain,
    behind,
    check_anchor,
    check_tail,
    continuation,
    row_at,
    rows_after,
    sequence,
    snapshot,
)
from .filters import Filter
from .records import ANALYST, CHARGED, LedgerError, deserialize_event

__all__ = ["_LedgerSync", "identity", "relations_of_json"]


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


class _LedgerSync:
    """A filter's state kept in step with a ledger, safe across threads and processes.

    Each process opens its own SQLite connection: a sync inherited through ``fork``
    abandons the parent's (never closing it in the child) and reconnects; an in-memory
    ledger cannot cross ``fork``.  Threads share the connection under :attr:`lock`
    (held by the caller of every method but :meth:`dispose`).
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
        #: the analysts' sub-budgets and totals (:mod:`.books`)
        self.books = Books(filt)
        #: the neighbouring relation fixed by the charges so far (None: not fixed yet)
        self.relation: str | None = None
        self.chain: Chain | None = None
        #: the row of the last checkpoint (0: none), and rows verified since at open
        self._checkpoint = 0
        self._open()

    # -- opening ------------------------------------------------------------------

    def _open(self) -> None:
        self._conn = self.ledger_file.connect(self.load)
        try:
            self._after_open(self._conn)
        except BaseException:
            self._conn.close()
            self._conn = None
            raise

    def load(self, conn: sqlite3.Connection) -> None:
        """Read and verify the ledger in one snapshot (LedgerError if it fails)."""
        lf = self.ledger_file
        if self.chain is not None:  # a reconnect (fork): continue from what was verified
            with snapshot(conn):
                self.sync(conn)
                check_tail(sequence(conn), self.chain)
            return
        where = lf.where
        # the anchor first: a commit after this read can only add rows to the snapshot
        anchor = lf.anchor.read() if lf.anchor is not None else None
        state, relation, books = self.filter.new_state(), None, Books(self.filter)
        with snapshot(conn):
            cp = checkpoint.latest(conn) if lf.anchor is not None else None
            if cp is not None:
                checkpoint.check(cp, lf.key, lf.genesis, where)
                loaded = checkpoint.load_state(cp.state, self.filter.new_state(), where,
                                               books)
                if loaded is None:
                    cp = None  # another state format: verify from the start
                    books = Books(self.filter)
                else:
                    state, relation = loaded
            base = 0 if cp is None else cp.id
            start = base if anchor is None else min(base, anchor.rows)
            first = None if start == 0 else row_at(conn, start, where)
            rows = rows_after(conn, start, where)
            seq = sequence(conn)
        if start and first is None:
            last = rows[-1].id if rows else 0
            if anchor is not None and anchor.rows == start:
                raise behind(where, last, anchor)
            raise LedgerError(f"{where} has been tampered with or lost charges: its "
                              f"checkpoint at charge {start} is past its last record")
        chain = Chain(lf.genesis if first is None else first.hash, where, start)
        marks: dict[int, list[tuple[str, str]]] = {}
        if cp is not None:
            marks.setdefault(cp.id, []).append((cp.head, "checkpoint"))
        if anchor is not None:
            marks.setdefault(anchor.rows, []).append((anchor.head, "anchor"))
        self._check_mark(marks, start, chain.last_hash, anchor)
        for row in rows:
            chain.verify(row)
            self._check_mark(marks, row.id, row.hash, anchor)
            if row.id > base:
                relation = self._absorb(state, relation, row, books)
        if anchor is not None and anchor.rows > chain.last_id:
            # one row ahead: the charge being committed now, or one whose commit a crash
            # or a lost -wal undid (completed under the write lock, in _after_open)
            continuation(where, anchor, chain, seq)
        if cp is not None and cp.id > chain.last_id:
            raise LedgerError(f"{where} lost charges: it ends at {chain.last_id} but has a "
                              f"checkpoint at charge {cp.id}")
        check_tail(seq, chain)
        if anchor is None and lf.anchor_required and chain.last_id > 0:
            raise LedgerError(
                f"{where} has lost its anchor ({lf.anchor.path if lf.anchor else ''!s}): "
                "without it, charges lost with the -wal file cannot be detected; dpfast "
                "refuses to open it (restore the anchor file)."
            )
        self.chain, self.state, self.relation, self._checkpoint = chain, state, relation, base
        self.books = books

    def _check_mark(self, marks: dict[int, list[tuple[str, str]]], row_id: int,
                    digest: str, anchor: Any) -> None:
        """Row ``row_id`` (hash ``digest``) must have the hash its anchor / checkpoint say."""
        for head, what in marks.get(row_id, ()):
            if head == digest:
                continue
            if what == "anchor":
                check_anchor(self.ledger_file.where, anchor, digest)
            raise LedgerError(f"{self.ledger_file.where} has been tampered with: charge "
                              f"{row_id} does not have the hash its checkpoint recorded")

    def _after_open(self, conn: sqlite3.Connection) -> None:
        """Under the write lock: complete a ledger one row behind its anchor with the
        anchor's row, create the anchor or move it forward, write a checkpoint if the open
        verified many rows."""
        lf = self.ledger_file
        if lf.anchor is None:
            return
        assert self.chain is not None
        seen = lf.anchor.read()
        if (seen is not None and seen.rows == self.chain.last_id
                and self.chain.last_id - self._checkpoint < checkpoint.EVERY):
            return  # nothing to do: no need for the write lock
        pending: Pending | None = None
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                self.sync(conn)
                assert self.chain is not None
                chain, state, relation = self.chain, self.state.copy(), self.relation
                books = self.books.copy()
                anchor = lf.anchor.read()  # now: no writer is between write and commit
                restored = None
                if anchor is not None and anchor.rows > chain.last_id:
                    restored = continuation(lf.where, anchor, chain, sequence(conn))
                    ledger.insert(conn, restored)
                    relation = self._absorb(state, relation, restored, books)
                    chain = Chain(restored.hash, chain.where, restored.id)
                unchecked = chain.last_id - self._checkpoint >= checkpoint.EVERY
                if unchecked:
                    checkpoint.write(conn, lf.key, lf.genesis, chain.last_id, chain.last_hash,
                                     state, relation, books)
                if anchor is None and not lf.anchor.create(chain.last_id, chain.last_hash):
                    anchor = lf.anchor.read()  # created meanwhile by an old-format opener
                if anchor is not None and (restored is not None or anchor.rows < chain.last_id):
                    pending = lf.anchor.write(chain.last_id, chain.last_hash,
                                              None if restored is None else tuple(restored))
                conn.execute("COMMIT")
            finally:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            if pending is not None:
                pending.wait()
        except sqlite3.Error as exc:
            raise lf.error(exc, "cannot open the ledger") from exc
        except OSError as exc:
            raise LedgerError(f"cannot write the anchor of {lf.where}: {exc}") from exc
        self.chain, self.state, self.relation, self.books = chain, state, relation, books
        if unchecked:
            self._checkpoint = chain.last_id

    # -- running ------------------------------------------------------------------

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
            self._open()
        assert self._conn is not None
        return self._conn

    def _absorb(self, state: Any, relation: str | None, row: schema.Row,
                books: Books) -> str | None:
        """Add a verified row to ``state`` and ``books``; returns the relation fixed so far."""
        try:
            absorb_row(self.filter, state, books, row)
        except (TypeError, ValueError) as exc:
            raise LedgerError(
                f"record {row.id} of {self.ledger_file.where} is damaged: {exc}"
            ) from exc
        if row.status == CHARGED and relation is None:
            rels = relations_of_json(row.event)
            if len(rels) == 1:
                relation = next(iter(rels))
        return relation

    def sync(self, conn: sqlite3.Connection) -> None:
        """Verify and add the rows committed since the last sync (all or nothing)."""
        assert self.chain is not None
        rows = rows_after(conn, self.chain.last_id, self.ledger_file.where)
        if not rows:
            return
        chain = Chain(self.chain.last_hash, self.chain.where, self.chain.last_id)
        state = self.state.copy()
        relation = self.relation
        books = self.books.copy()
        for row in rows:
            chain.verify(row)
            relation = self._absorb(state, relation, row, books)
        self.chain, self.state, self.relation, self.books = chain, state, relation, books

    def read(self, action: str) -> sqlite3.Connection:
        conn = self.connection()
        try:
            self.sync(conn)
        except sqlite3.Error as exc:
            raise self.ledger_file.error(exc, action) from exc
        return conn

    def append(self, fields: list[Any], decide: Callable[[], str],
               costs: Sequence[float] = (), relations: frozenset[str] = frozenset()
               ) -> schema.Row:
        """Sync, decide the row's status, append it, in one transaction (lock held).

        ``fields``: ``time, ref, analyst, note, event, cost, user, host, pid`` and
        optionally ``query``.  A ``"charged"`` row adds its cost to the state and fixes the
        relation (the one of ``relations``, if not fixed yet).  See :meth:`write`.
        """
        def make() -> list[Any]:
            return [fields[0], decide(), *fields[1:]]

        row = self.write(make, relations=relations)
        assert row is not None
        return row

    def write(self, make: Callable[[], list[Any] | None], *,
              relations: frozenset[str] = frozenset(),
              extra: Callable[[sqlite3.Connection, schema.Row], None] | None = None,
              durable: bool = True) -> schema.Row | None:
        """Sync, then ``make()`` the row (``time, status, ref, analyst, note, event, cost,
        user, host, pid[, query]``; None: write nothing) and append it, in one transaction
        (lock held); ``extra(conn, row)`` writes more in the same transaction (a cached
        payload).  ``make`` runs with the state synced and may read the ledger.  After the
        commit the anchor is moved forward (LedgerError if that fails: the row is committed
        and counts).  The anchor is written before the commit and flushed while SQLite
        flushes it.  ``durable=False`` (a cache hit's record, which spends nothing) does
        not wait for either flush: a power loss may forget the record, never a charge
        (the next durable commit flushes it, and a record the anchor has but the ledger
        lost is restored from the anchor).
        """
        lf = self.ledger_file
        conn = self.connection()
        if not durable:
            conn.execute("PRAGMA synchronous = NORMAL")
        try:
            try:
                return self._write(conn, make, relations, extra, durable)
            finally:
                if not durable:
                    conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise lf.error(exc, "cannot record the charge") from exc

    def _write(self, conn: sqlite3.Connection, make: Callable[[], list[Any] | None],
               relations: frozenset[str],
               extra: Callable[[sqlite3.Connection, schema.Row], None] | None,
               durable: bool) -> schema.Row | None:
        lf = self.ledger_file
        pending: Pending | None = None
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise lf.error(exc, "cannot lock the ledger") from exc
        try:
            self.sync(conn)
            full = make()
            if full is None:
                conn.execute("COMMIT")
                return None
            assert self.chain is not None
            row = ledger.append(conn, self.chain, full)
            if extra is not None:
                extra(conn, row)
            state, relation, books = self.state, self.relation, self.books
            if row.status in (CHARGED, ANALYST):
                state, books = state.copy(), books.copy()
                relation = self._absorb(state, relation, row, books)
                if row.status == CHARGED and relations and relation is None:
                    relation = next(iter(relations))
            if lf.anchor is not None:
                if row.id % checkpoint.EVERY == 0:
                    checkpoint.write(conn, lf.key, lf.genesis, row.id, row.hash, state,
                                     relation, books)
                try:  # the anchor first, flushed while SQLite flushes the commit
                    pending = lf.anchor.write(row.id, row.hash, tuple(row))
                except OSError as exc:
                    raise LedgerError(f"cannot record the charge: the anchor of {lf.where} "
                                      f"cannot be written ({exc}); nothing was recorded"
                                      ) from exc
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                try:
                    conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if pending is not None and lf.anchor is not None and self.chain is not None:
                with contextlib.suppress(OSError):  # not committed: put the anchor back
                    pending.wait()
                    lf.anchor.write(self.chain.last_id, self.chain.last_hash, None).wait()
            if isinstance(exc, sqlite3.Error):
                raise lf.error(exc, "cannot record the charge") from exc
            raise
        self.chain = Chain(row.hash, self.chain.where, row.id)
        self.state, self.relation, self.books = state, relation, books
        if pending is not None and durable:
            try:
                pending.wait()
            except OSError as exc:
                raise LedgerError(
                    f"record {row.id} was committed to {lf.where} (it counts) but its anchor "
                    f"could not be flushed: {exc}"
                ) from exc
        return row

    def close(self) -> None:
        """Close this process's connection; the sync refuses further use."""
        if self.closed:
            return
        self.closed = True
        conn, self._conn = self._conn, None
        if self.ledger_file.anchor is not None:
            self.ledger_file.anchor.close()
        if conn is not None and self._pid == os.getpid():
            conn.close()

    def dispose(self) -> None:
        """Best-effort close at garbage collection (never in a forked child)."""
        try:
            if not self.closed and self._pid == os.getpid() and self._conn is not None:
                self._conn.close()
            if self.ledger_file.anchor is not None:
                self.ledger_file.anchor.close()
        except Exception:
            pass
