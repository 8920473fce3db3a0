"""Upgrades of old ledger files, one function per format version.

``MIGRATIONS[v]`` brings a ledger of format ``v`` to format ``v + 1``; it runs inside
the caller's ``BEGIN IMMEDIATE`` transaction (all or nothing) and records itself in the
``migrations`` table (keyed by the format version it produced).  Reopening a ledger
of an older format applies the missing steps in order -- unless it bears a mark of a newer
format (:func:`check_genuine`): rewriting a hash-chained ledger as format 1 would
otherwise launder any edit into a freshly computed chain.
"""

from __future__ import annotations

import datetime
import json
import os
import sqlite3
from collections.abc import Callable
from typing import Any

from . import schema
from .records import LedgerError

__all__ = ["MIGRATIONS", "check_genuine", "migrate"]

#: the columns of ``charges`` in format 1
_V1_COLUMNS = {"id", "time", "analyst", "note", "event", "epsilon", "delta", "rho", "rdp"}
#: ... and in format 2
_V2_COLUMNS = {"id", "time", "status", "ref", "analyst", "note", "event", "cost", "user",
               "host", "pid", "prev", "hash"}

#: the ``charges`` table of format 2 (format 3 added ``query`` and three row kinds)
CHARGES_TABLE_V2 = """CREATE TABLE charges (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    time    REAL NOT NULL,
    status  TEXT NOT NULL CHECK (status IN ('charged', 'refused', 'failed')),
    ref     INTEGER,
    analyst TEXT NOT NULL,
    note    TEXT NOT NULL,
    event   TEXT NOT NULL,
    cost    TEXT NOT NULL,
    user    TEXT NOT NULL,
    host    TEXT NOT NULL,
    pid     INTEGER NOT NULL,
    prev    TEXT NOT NULL,
    hash    TEXT NOT NULL
)"""


def check_genuine(conn: sqlite3.Connection, meta: dict[str, str], anchor_path: str,
                  where: str) -> None:
    """LedgerError if a ledger that says it is of an old format shows a mark of a newer
    one: an anchor file, an ``anchor`` meta key, a ``migrations`` or ``checkpoints``
    table, or columns of a newer ``charges`` table.  Such a file is a newer ledger
    rewritten as an old one; it is refused, never migrated (nothing is written)."""
    marks = []
    version = meta.get("version")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    columns = {r[1] for r in conn.execute("PRAGMA table_info(charges)")}
    if version == "1":
        if os.path.lexists(anchor_path):
            marks.append(f"an anchor file ({anchor_path!r})")
        if "anchor" in meta:
            marks.append("an 'anchor' entry in its metadata")
        marks += [f"a {t!r} table" for t in sorted(tables & {"migrations", "checkpoints"})]
        known = _V1_COLUMNS
    else:
        known = _V2_COLUMNS
    marks += [f"a {t!r} table" for t in sorted(tables & {"payloads"})]
    if columns - known:
        marks.append(f"columns of a newer format in charges "
                     f"({', '.join(sorted(columns - known))})")
    if marks:
        raise LedgerError(
            f"{where} says it is of format {meta.get('version')} but has {'; '.join(marks)}: "
            "it looks like a newer ledger rewritten in an old format, which would discard "
            "its hash chain. dpfast refuses to migrate it (it was left untouched). If it is "
            "really an old ledger, move the anchor file (and anything else listed) away "
            "deliberately and open it again."
        )


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _v1_to_v2(conn: sqlite3.Connection, meta: dict[str, str]) -> None:
    """Format 1 -> 2: costs as one JSON column, statuses, user/host/pid, hash chain.

    Format 1 rows were all accepted charges with the cost in ``epsilon, delta``
    (basic), ``rho`` (zcdp) or ``rdp`` (a JSON array); their user, host and pid were
    not recorded (stored as ``""``/``0``).  The chain is computed over the migrated rows.
    """
    definition = json.loads(meta["definition"])
    accounting = definition.get("accounting")
    rows = conn.execute(
        "SELECT id, time, analyst, note, event, epsilon, delta, rho, rdp FROM charges ORDER BY id"
    ).fetchall()
    for stmt in ("DROP TRIGGER IF EXISTS charges_no_update",
                 "DROP TRIGGER IF EXISTS charges_no_delete",
                 "DROP TRIGGER IF EXISTS meta_no_update",
                 "DROP TRIGGER IF EXISTS meta_no_delete",
                 "ALTER TABLE charges RENAME TO charges_v1",
                 CHARGES_TABLE_V2,
                 schema.MIGRATIONS_TABLE):
        conn.execute(stmt)
    prev = schema.genesis_hash(meta["definition"], meta["created"])
    for expected, (row_id, t, analyst, note, event, eps, dlt, rho, rdp) in enumerate(rows, 1):
        if row_id != expected:
            raise ValueError(f"format-1 charges are not numbered 1, 2, ... (found {row_id})")
        if accounting == "basic":
            costs: Any = [eps, dlt]
        elif accounting == "zcdp":
            costs = [rho]
        else:
            costs = json.loads(rdp)
        cost = schema.encode_cost(costs)
        fields = [row_id, float(t), "charged", None, analyst, note, event, cost, "", "", 0]
        digest = schema.row_hash(prev, fields)
        conn.execute(
            f"INSERT INTO charges ({schema.COLUMNS_V2}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (*fields, prev, digest),
        )
        prev = digest
    conn.execute("DROP TABLE charges_v1")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'version'")
    for stmt in (*schema.CHARGES_TRIGGERS, *schema.META_TRIGGERS, *schema.MIGRATIONS_TRIGGERS):
        conn.execute(stmt)
    conn.executemany(
        "INSERT INTO migrations (version, applied, description) VALUES (?, ?, ?)",
        [
            (1, meta["created"], "created in format 1"),
            (2, _now(), f"migrated {len(rows)} charges from format 1: hash chain, status, "
                        "user/host/pid (unknown for migrated rows), costs as JSON"),
        ],
    )


def _v2_to_v3(conn: sqlite3.Connection, meta: dict[str, str]) -> None:
    """Format 2 -> 3: the ``query`` column, the row kinds ``analyst``/``stored``/``hit``
    and the ``payloads`` table (analysts, query ids and cached results).

    The rows are copied as they are (same ids, contents and hashes: a row's hash covers
    ``query`` only when it is not empty) and SQLite's sequence keeps its value, so a
    ledger whose last rows were deleted still shows it after the migration.
    """
    (seq,) = conn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM sqlite_sequence WHERE name = 'charges'"
    ).fetchone()
    (count,) = conn.execute("SELECT COUNT(*) FROM charges").fetchone()
    for stmt in ("DROP TRIGGER IF EXISTS charges_no_update",
                 "DROP TRIGGER IF EXISTS charges_no_delete",
                 "ALTER TABLE charges RENAME TO charges_v2",
                 schema.CHARGES_TABLE):
        conn.execute(stmt)
    conn.execute(f"INSERT INTO charges ({schema.COLUMNS_V2}) SELECT {schema.COLUMNS_V2} "
                 "FROM charges_v2 ORDER BY id")
    conn.execute("DROP TABLE charges_v2")
    conn.execute("DELETE FROM sqlite_sequence WHERE name IN ('charges', 'charges_v2')")
    if seq:
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('charges', ?)", (seq,))
    conn.execute("DROP TRIGGER IF EXISTS meta_no_update")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'version'")
    for stmt in (*schema.CHARGES_TRIGGERS, schema.META_TRIGGERS[0], *schema.PAYLOADS):
        conn.execute(stmt)
    conn.execute(
        "INSERT INTO migrations (version, applied, description) VALUES (?, ?, ?)",
        (3, _now(), f"{count} records kept as they are; added query ids, analysts' "
                    "sub-budgets and cached query results"),
    )


#: format version -> function bringing a ledger of that version to the next one
MIGRATIONS: dict[int, Callable[[sqlite3.Connection, dict[str, str]], None]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
}


def migrate(conn: sqlite3.Connection, version: int) -> int:
    """Apply every step from ``version`` to :data:`schema.FORMAT_VERSION` (in the
    caller's transaction); returns the number of steps."""
    steps = 0
    while version < schema.FORMAT_VERSION:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        MIGRATIONS[version](conn, meta)
        version += 1
        steps += 1
    return steps
