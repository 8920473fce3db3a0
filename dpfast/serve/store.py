"""The service's own durable state: one SQLite file beside the ledger (``server.state``,
default ``LEDGER.serve.db``), shared by every worker process.

* ``tokens``: the SHA-256 of each token (never the token), its kind (``analyst``,
  ``admin``, ``ingest``), whom it names, when it was made and revoked
  (:mod:`dpfast.serve.tokens`);
* ``aggregates``: per local-DP collection, the :class:`dpfast.local.Aggregator` state
  (its versioned bytes) and its number of reports;
* ``releases``: the answers served (DP outputs only: the JSON the analyst received), for
  the dashboard's recent releases;
* ``batches``: every accepted report batch (collection, batch id, client id, reports, the
  SHA-256 of its content, when).

Durability: a batch is counted in one ``BEGIN IMMEDIATE`` transaction that reads the
aggregate, adds the batch's tallies (exact integer addition,
:meth:`~dpfast.local.Aggregator.merge`), writes the aggregate back and inserts the batch
row; WAL mode with ``synchronous=FULL``, so a commit is on disk before the 202 is sent and
a process killed at any point leaves the aggregate and the batch table consistent (both
or neither).  A batch id already in ``batches`` is not counted again (a retry after a lost
response); the same id with other content is a conflict.  SQLite's lock serialises the
transactions of all worker processes.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

__all__ = ["BatchConflictError", "StateStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    hash TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT NOT NULL,
    created TEXT NOT NULL, revoked TEXT);
CREATE TABLE IF NOT EXISTS aggregates (
    collection TEXT PRIMARY KEY, state BLOB NOT NULL, n INTEGER NOT NULL,
    updated TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS batches (
    collection TEXT NOT NULL, batch_id TEXT NOT NULL, client_id TEXT NOT NULL,
    n INTEGER NOT NULL, digest TEXT NOT NULL, at TEXT NOT NULL,
    PRIMARY KEY (collection, batch_id));
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT, analyst TEXT NOT NULL, at TEXT NOT NULL,
    sql TEXT NOT NULL, answer TEXT NOT NULL);
"""


class BatchConflictError(ValueError):
    """A batch id already counted with other content."""


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


class StateStore:
    """The service's SQLite file (see the module docstring); one connection per
    instance, used by one thread at a time (the app holds a lock)."""

    def __init__(self, path: str) -> None:
        self.path = path
        if not os.path.exists(path):
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)  # private, like the ledger
            os.close(fd)
        self._conn = sqlite3.connect(path, timeout=60.0, isolation_level=None,
                                     check_same_thread=False)
        self._conn.execute("PRAGMA busy_timeout = 60000")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = FULL")
        self._conn.executescript(_SCHEMA)  # idempotent (IF NOT EXISTS)

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: committed on exit, rolled back on error."""
        c = self._conn
        c.execute("BEGIN IMMEDIATE")
        try:
            yield c
        except BaseException:
            c.execute("ROLLBACK")
            raise
        c.execute("COMMIT")

    def read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return self._conn.execute(sql, args).fetchall()

    def close(self) -> None:
        self._conn.close()

    # ------------------------------------------------------------------ tokens
    def add_token(self, digest: str, kind: str, name: str) -> None:
        with self.write() as c:
            c.execute("INSERT INTO tokens (hash, kind, name, created) VALUES (?, ?, ?, ?)",
                      (digest, kind, name, now()))

    def token(self, digest: str) -> tuple[str, str, str, str | None] | None:
        """``(hash, kind, name, revoked)`` of a token's digest, or None."""
        rows = self.read("SELECT hash, kind, name, revoked FROM tokens WHERE hash = ?",
                         (digest,))
        return rows[0] if rows else None

    def revoke(self, kind: str, name: str) -> int:
        """Revoke every live token of ``(kind, name)``; returns how many."""
        with self.write() as c:
            cur = c.execute("UPDATE tokens SET revoked = ? WHERE kind = ? AND name = ? "
                            "AND revoked IS NULL", (now(), kind, name))
            return cur.rowcount

    # ------------------------------------------------------------------ reports
    def aggregate(self, collection: str) -> tuple[bytes | None, int]:
        rows = self.read("SELECT state, n FROM aggregates WHERE collection = ?", (collection,))
        return (rows[0][0], rows[0][1]) if rows else (None, 0)

    def add_batch(self, collection: str, batch_id: str, client_id: str, content: bytes,
                  partial: Any, empty: Any) -> tuple[int, bool]:
        """Count ``partial`` (an Aggregator holding the batch's reports alone) into the
        collection's stored aggregate (``empty``: its aggregator with no reports), once
        per ``batch_id``.  Returns ``(reports, duplicate)``."""
        from dpfast.local.server import Aggregator

        digest = hashlib.sha256(content).hexdigest()
        with self.write() as c:
            row = c.execute("SELECT n, digest FROM batches WHERE collection = ? AND "
                            "batch_id = ?", (collection, batch_id)).fetchone()
            if row is not None:
                if row[1] != digest:
                    raise BatchConflictError(f"batch id {batch_id!r} was counted with other "
                                             "content; a new batch needs a new id")
                return int(row[0]), True
            got = c.execute("SELECT state FROM aggregates WHERE collection = ?",
                            (collection,)).fetchone()
            agg = Aggregator.from_bytes(got[0]) if got else empty.copy()
            agg.merge(partial)
            t = now()
            c.execute("INSERT OR REPLACE INTO aggregates (collection, state, n, updated) "
                      "VALUES (?, ?, ?, ?)", (collection, agg.to_bytes(), agg.n, t))
            c.execute("INSERT INTO batches (collection, batch_id, client_id, n, digest, at) "
                      "VALUES (?, ?, ?, ?, ?, ?)",
                      (collection, batch_id, client_id, partial.n, digest, t))
        return int(partial.n), False

    def batch_totals(self, collection: str) -> tuple[int, int]:
        """``(batches, reports)`` recorded in ``batches`` for ``collection``."""
        rows = self.read("SELECT COUNT(*), COALESCE(SUM(n), 0) FROM batches WHERE "
                         "collection = ?", (collection,))
        return int(rows[0][0]), int(rows[0][1])

    # ------------------------------------------------------------------ releases
    def add_release(self, analyst: str, sql: str, answer: str) -> None:
        with self.write() as c:
            c.execute("INSERT INTO releases (analyst, at, sql, answer) VALUES (?, ?, ?, ?)",
                      (analyst, now(), sql, answer))

    def releases(self, analyst: str | None, limit: int = 10) -> list[tuple[Any, ...]]:
        """The last ``limit`` answers ``(analyst, at, sql, answer)`` (of ``analyst``, or
        everyone's for None), newest first."""
        if analyst is None:
            return self.read("SELECT analyst, at, sql, answer FROM releases ORDER BY id DESC "
                             "LIMIT ?", (limit,))
        return self.read("SELECT analyst, at, sql, answer FROM releases WHERE analyst = ? "
                         "ORDER BY id DESC LIMIT ?", (analyst, limit))
