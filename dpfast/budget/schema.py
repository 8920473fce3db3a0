"""The ledger's SQLite schema (format 3) and the hash chain of its rows.

Row kinds (``status``): ``charged`` / ``refused`` (a charge, accepted or not; ``cost``
its cost tuple), ``failed`` (the release of charge ``ref`` failed after the charge),
``analyst`` (the sub-budget of analyst ``analyst``; ``event`` holds its definition as
JSON ``{"epsilon":..,"delta":..}``), ``stored`` (the result of the query ``query``
charged by row ``ref``; ``event`` holds ``{"sha256":..,"size":..}`` of the payload,
which lies in ``payloads`` under the same id) and ``hit`` (the stored result of
``query``, row ``ref``, was served again without a charge).  Format 3 added the
``query`` column, the last three kinds and the ``payloads`` table; a row's hash covers
``query`` only when it is not empty, so the rows of format 2 keep their hashes.

**Where to change the ledger schema:** bump :data:`FORMAT_VERSION`, change
:data:`SCHEMA` (new ledgers) and :func:`row_content` (what the hash covers), and add a
function to :mod:`dpfast.budget.migrations` that brings a ledger of the previous
version to the new one inside one transaction; docs/design.md has the checklist.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, NamedTuple

__all__ = [
    "APPLICATION_ID",
    "FORMAT",
    "FORMAT_VERSION",
    "SCHEMA",
    "Row",
    "genesis_hash",
    "row_hash",
]

# PRAGMA application_id = 'dpLg'; meta holds format, version, definition, created (and,
# once a session binds it, privacy_unit: ledger.bind_unit).
APPLICATION_ID = 0x64704C67
FORMAT = "dpfast-ledger"
FORMAT_VERSION = 3
SQLITE_MAGIC = b"SQLite format 3\x00"

CHARGES_TABLE = """CREATE TABLE charges (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    time    REAL NOT NULL,
    status  TEXT NOT NULL CHECK (status IN ('charged', 'refused', 'failed', 'analyst',
                                            'stored', 'hit')),
    ref     INTEGER,
    analyst TEXT NOT NULL,
    note    TEXT NOT NULL,
    event   TEXT NOT NULL,
    cost    TEXT NOT NULL,
    user    TEXT NOT NULL,
    host    TEXT NOT NULL,
    pid     INTEGER NOT NULL,
    query   TEXT NOT NULL DEFAULT '',
    prev    TEXT NOT NULL,
    hash    TEXT NOT NULL
)"""

CHARGES_TRIGGERS = (
    """CREATE TRIGGER charges_no_update BEFORE UPDATE ON charges
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
    """CREATE TRIGGER charges_no_delete BEFORE DELETE ON charges
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
)

META_TRIGGERS = (
    """CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger definition is immutable'); END""",
    """CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger definition is immutable'); END""",
)

MIGRATIONS_TABLE = """CREATE TABLE migrations (
    version     INTEGER PRIMARY KEY,
    applied     TEXT NOT NULL,
    description TEXT NOT NULL
)"""

MIGRATIONS_TRIGGERS = (
    """CREATE TRIGGER migrations_no_update BEFORE UPDATE ON migrations
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
    """CREATE TRIGGER migrations_no_delete BEFORE DELETE ON migrations
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
)

#: cached query results: ``id`` is the ``stored`` row whose ``event`` holds the digest
PAYLOADS = (
    """CREATE TABLE IF NOT EXISTS payloads (id INTEGER PRIMARY KEY, data BLOB NOT NULL)""",
    """CREATE TRIGGER IF NOT EXISTS payloads_no_update BEFORE UPDATE ON payloads
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS payloads_no_delete BEFORE DELETE ON payloads
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
    "CREATE INDEX IF NOT EXISTS charges_by_query ON charges (query, status) "
    "WHERE query != ''",
)

SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    CHARGES_TABLE,
    MIGRATIONS_TABLE,
    *CHARGES_TRIGGERS,
    *META_TRIGGERS,
    *MIGRATIONS_TRIGGERS,
    *PAYLOADS,
)

COLUMNS = ("id, time, status, ref, analyst, note, event, cost, user, host, pid, query, "
           "prev, hash")
#: the columns of format 2 (no ``query``)
COLUMNS_V2 = "id, time, status, ref, analyst, note, event, cost, user, host, pid, prev, hash"
#: ``SELECT`` list reading a format-2 table as format 3
COLUMNS_FROM_V2 = ("id, time, status, ref, analyst, note, event, cost, user, host, pid, "
                   "'' AS query, prev, hash")
PLACEHOLDERS = ",".join("?" * 14)


def select_columns(conn: Any) -> str:
    """The ``SELECT`` list of ``charges`` in this file (format 2 files have no query)."""
    cols = {r[1] for r in conn.execute("PRAGMA table_info(charges)")}
    return COLUMNS if "query" in cols else COLUMNS_FROM_V2


class Row(NamedTuple):
    """One row of ``charges`` (format 3)."""

    id: int
    time: float
    status: str
    ref: int | None
    analyst: str
    note: str
    event: str
    cost: str
    user: str
    host: str
    pid: int
    query: str
    prev: str
    hash: str


def hashed(fields: Sequence[Any]) -> list[Any]:
    """What a row's hash covers, from ``id .. query`` (or a whole row): ``id .. pid``,
    and ``query`` when it is not empty (so format-2 rows keep their hashes)."""
    head = list(fields[:11])
    query = fields[11] if len(fields) > 11 else ""
    return head + [query] if query else head


def genesis_hash(definition_text: str, created: str) -> str:
    """The ``prev`` of row 1: binds the chain to the ledger's definition."""
    data = f"dpfast-ledger\n{definition_text}\n{created}".encode()
    return hashlib.sha256(data).hexdigest()


def row_content(fields: Sequence[Any]) -> bytes:
    """The bytes a row's hash covers: ``id .. pid`` as canonical JSON."""
    return json.dumps(list(fields), separators=(",", ":"), ensure_ascii=False,
                      allow_nan=True).encode()


def row_hash(prev: str, fields: Sequence[Any]) -> str:
    """SHA-256 of the previous row's hash and this row's content (hex)."""
    h = hashlib.sha256(prev.encode())
    h.update(b"\n")
    h.update(row_content(fields))
    return h.hexdigest()


def encode_cost(costs: Sequence[float]) -> str:
    return json.dumps([float(c) for c in costs], allow_nan=True)


def decode_cost(text: str) -> list[float]:
    values = json.loads(text)
    if not isinstance(values, list) or not all(isinstance(v, (int, float)) for v in values):
        raise ValueError("cost must be a JSON array of numbers")
    return [float(v) for v in values]
