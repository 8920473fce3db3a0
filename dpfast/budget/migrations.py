"""Upgrades of old ledger files, one function per format version.

``MIGRATIONS[v]`` brings a ledger of format ``v`` to format ``v + 1``; it runs inside
the caller's ``BEGIN IMMEDIATE`` transaction (all or nothing) and records itself in the
``migrations`` table (keyed by the format version it produced).  Reopening a ledger
of an older format applies the missing steps in order.
"""

from __future__ import annotations

import datetime
import json
import sqlite3
from collections.abc import Callable
from typing import Any

from . import schema

__all__ = ["MIGRATIONS", "migrate"]


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
                 schema.CHARGES_TABLE,
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
            f"INSERT INTO charges ({schema.COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
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


#: format version -> function bringing a ledger of that version to the next one
MIGRATIONS: dict[int, Callable[[sqlite3.Connection, dict[str, str]], None]] = {
    1: _v1_to_v2,
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
