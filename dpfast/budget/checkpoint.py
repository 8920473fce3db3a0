"""Verified checkpoints: the filter's exact state at a row of the hash chain, so that
opening a ledger verifies only the rows after the last checkpoint (constant time at any
length) instead of every row.

A checkpoint at row ``N`` stores the hash of row ``N`` (the chain's head there), the
filter's exact running state after rows ``1..N``, the neighbouring relation they
fixed and the analysts' books (:mod:`.books`; state format 2), under a digest --
SHA-256, or HMAC-SHA256 with the operator's key -- that also
covers the ledger's genesis hash.  dpfast writes one inside the transaction of every
:data:`EVERY`-th row (and when an open had to verify more rows than that), computed from
rows it had verified.  Opening trusts the state of the last checkpoint whose digest
checks and whose row still has that hash, and verifies the chain from there; editing a
row before a checkpoint cannot change the budget an open computes, and
:func:`dpfast.budget.inspect_ledger` (``dpfast ledger verify``) still verifies every row
and recomputes every checkpoint's state from the rows.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, NamedTuple

from .anchor import mac
from .records import LedgerError

__all__ = ["EVERY", "Checkpoint", "dump_state", "latest", "load_state", "write"]

#: a checkpoint every this many rows
EVERY = 1024
STATE_VERSION = 2

TABLE = """CREATE TABLE IF NOT EXISTS checkpoints (
    id     INTEGER PRIMARY KEY,
    head   TEXT NOT NULL,
    state  TEXT NOT NULL,
    digest TEXT NOT NULL
)"""
TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS checkpoints_no_update BEFORE UPDATE ON checkpoints
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS checkpoints_no_delete BEFORE DELETE ON checkpoints
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
)
SCHEMA = (TABLE, *TRIGGERS)


class Checkpoint(NamedTuple):
    id: int
    head: str
    state: str
    digest: str


def _fields(state: Any) -> list[str]:
    names = getattr(type(state), "__slots__", None)
    return list(names) if names is not None else sorted(vars(state))


def state_fields(state: Any) -> dict[str, Any]:
    """A filter state's fields (ints, bools and lists of them) as a dict."""
    return {k: getattr(state, k) for k in _fields(state)}


def fill_state(values: Any, fresh: Any) -> bool:
    """Set ``fresh``'s fields from :func:`state_fields` output; False when it does not fit."""
    names = _fields(fresh)
    if (not isinstance(values, dict) or set(values) != set(names)
            or not all(_same_shape(values[k], getattr(fresh, k)) for k in names)):
        return False
    for k in names:
        setattr(fresh, k, values[k])
    return True


def dump_state(state: Any, relation: str | None, books: Any = None) -> str:
    """Canonical JSON of a filter state (ints, bools and lists of them), the relation
    and the analysts' books."""
    return json.dumps({"v": STATE_VERSION, "relation": relation,
                       "state": state_fields(state),
                       "books": None if books is None else books.dump()},
                      sort_keys=True, separators=(",", ":"))


def _same_shape(value: Any, like: Any) -> bool:
    if isinstance(like, bool):
        return isinstance(value, bool)
    if isinstance(like, int):
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if isinstance(like, list):
        return (isinstance(value, list) and len(value) == len(like)
                and all(_same_shape(v, w) for v, w in zip(value, like, strict=True)))
    return False


def load_state(text: str, fresh: Any, where: str, books: Any = None
               ) -> tuple[Any, str | None] | None:
    """``(state, relation)`` of a checkpoint (filled into ``fresh``, and its books into
    ``books``); None if it was written by another version of the state format (then it is
    not used)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LedgerError(f"{where} has a damaged checkpoint ({exc})") from exc
    if not isinstance(data, dict) or data.get("v") != STATE_VERSION:
        return None
    relation = data.get("relation")
    ok = fill_state(data.get("state"), fresh) and (relation is None or isinstance(relation, str))
    if ok and books is not None:
        ok = books.load(data.get("books"))
    if not ok:
        raise LedgerError(f"{where} has a damaged checkpoint (its state does not fit the "
                          "budget's filter)")
    return fresh, relation


def digest(key: bytes | None, genesis: str, row_id: int, head: str, state: str) -> str:
    return mac(key, f"dpfast-checkpoint\n{genesis}\n{row_id}\n{head}\n{state}")


def exists(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                        "name = 'checkpoints'").fetchone() is not None


def latest(conn: sqlite3.Connection) -> Checkpoint | None:
    """The last checkpoint (None when there is none or no checkpoint table)."""
    if not exists(conn):
        return None
    row = conn.execute("SELECT id, head, state, digest FROM checkpoints "
                       "ORDER BY id DESC LIMIT 1").fetchone()
    if row is None:
        return None
    if not (isinstance(row[0], int) and all(isinstance(v, str) for v in row[1:])):
        raise LedgerError("the ledger has a damaged checkpoint (wrong column types)")
    return Checkpoint(*row)


def check(cp: Checkpoint, key: bytes | None, genesis: str, where: str) -> None:
    """LedgerError unless ``cp``'s digest is right."""
    if digest(key, genesis, cp.id, cp.head, cp.state) != cp.digest:
        raise LedgerError(f"{where} has been tampered with: the checkpoint at charge {cp.id} "
                          "does not match its digest (or was written with another key)")


def write(conn: sqlite3.Connection, key: bytes | None, genesis: str, row_id: int, head: str,
          state: Any, relation: str | None, books: Any = None) -> None:
    """Insert the checkpoint of row ``row_id`` (in the caller's write transaction)."""
    text = dump_state(state, relation, books)
    conn.execute("INSERT OR IGNORE INTO checkpoints (id, head, state, digest) "
                 "VALUES (?, ?, ?, ?)", (row_id, head, text, digest(key, genesis, row_id,
                                                                    head, text)))
