"""Reading and verifying a ledger's rows: one read snapshot, rows checked column by column,
the hash chain, the tail (SQLite's largest id ever used) and the anchor.

Shared by the budget's opening (:mod:`.session`) and the read-only audit (:mod:`.audit`),
so both apply the same rules and raise the same :class:`~dpfast.budget.LedgerError`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from . import schema
from .anchor import Anchor
from .records import LedgerError

__all__ = ["Chain", "check_anchor", "check_tail", "continuation", "row_at", "rows_after",
           "snapshot"]

_TYPES: tuple[tuple[type, ...], ...] = (
    (int,), (float, int), (str,), (int, type(None)), (str,), (str,), (str,), (str,), (str,),
    (str,), (int,), (str,), (str,), (str,),
)


@contextlib.contextmanager
def snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction: every statement inside sees the same committed state (a
    commit by another process in between is seen by none of them)."""
    if conn.in_transaction:  # already inside the caller's transaction
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")  # nothing was written: this only ends the snapshot


def to_row(raw: tuple[object, ...], where: str) -> schema.Row:
    """A row of ``charges`` with every column of the type dpfast writes (LedgerError if not).

    A row of 13 columns (format 2, e.g. in an anchor written before format 3) gets an
    empty ``query``."""
    if len(raw) == 13:
        raw = (*raw[:11], "", *raw[11:])
    if len(raw) != 14:
        raise LedgerError(f"{where} is damaged: a record has {len(raw)} columns")
    for name, value, types in zip(schema.Row._fields, raw, _TYPES, strict=True):
        if not isinstance(value, types) or isinstance(value, bool):
            rid = raw[0]
            raise LedgerError(
                f"{where} is damaged: charge {rid!r} has a {type(value).__name__} in column "
                f"{name!r}; it was left untouched."
            )
    return schema.Row(*raw)  # type: ignore[arg-type]


def rows_after(conn: sqlite3.Connection, last_id: int, where: str) -> list[schema.Row]:
    rows = conn.execute(
        f"SELECT {schema.select_columns(conn)} FROM charges WHERE id > ? ORDER BY id",
        (last_id,)).fetchall()
    return [to_row(r, where) for r in rows]


def row_at(conn: sqlite3.Connection, row_id: int, where: str) -> schema.Row | None:
    raw = conn.execute(f"SELECT {schema.select_columns(conn)} FROM charges WHERE id = ?",
                       (row_id,)).fetchone()
    return None if raw is None else to_row(raw, where)


class Chain:
    """The verified end of a ledger's hash chain: the last row id and its hash."""

    __slots__ = ("last_id", "last_hash", "where")

    def __init__(self, genesis: str, where: str, last_id: int = 0) -> None:
        self.last_id = last_id
        self.last_hash = genesis
        self.where = where

    def verify(self, row: schema.Row) -> None:
        """Check that ``row`` continues the chain (LedgerError if not), then advance."""
        if row.id != self.last_id + 1:
            raise LedgerError(
                f"{self.where} has been tampered with: charge {self.last_id + 1} is missing "
                f"(found {row.id}); the hash chain is broken"
            )
        fields = schema.hashed(row)
        if row.prev != self.last_hash or schema.row_hash(row.prev, fields) != row.hash:
            raise LedgerError(
                f"{self.where} has been tampered with: charge {row.id} does not match its "
                "hash (edited, reordered or deleted rows); the hash chain is broken"
            )
        self.last_id, self.last_hash = row.id, row.hash


def sequence(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'charges'").fetchone()
    return 0 if row is None else int(row[0])


def check_tail(seq: int, chain: Chain) -> None:
    """Detect deleted *last* rows: AUTOINCREMENT remembers the largest id ever used
    (``seq``, read in the same snapshot as the rows)."""
    if seq != chain.last_id:
        raise LedgerError(
            f"{chain.where} has been tampered with: {seq} charges were recorded but "
            f"{chain.last_id} remain; the log was truncated"
        )


def behind(where: str, rows: int, anchor: Anchor) -> LedgerError:
    return LedgerError(
        f"{where} has been tampered with or damaged: it has {rows} records but its anchor "
        f"says {anchor.rows} were committed; committed charges are missing (a damaged, "
        "truncated or deleted -wal file, or deleted rows). dpfast refuses to use a ledger "
        "that lost charges; it was left untouched."
    )


def continuation(where: str, anchor: Anchor, chain: Chain, seq: int) -> schema.Row:
    """The anchor's row when the ledger (verified up to ``chain``, ``seq`` its sequence)
    is exactly that one row short and the row continues the chain; LedgerError if not."""
    if anchor.rows != chain.last_id + 1 or anchor.row is None or seq != chain.last_id:
        raise behind(where, chain.last_id, anchor)
    try:
        row = to_row(anchor.row, where)
    except (LedgerError, ValueError, TypeError):
        raise behind(where, chain.last_id, anchor) from None
    probe = Chain(chain.last_hash, where, chain.last_id)
    try:
        probe.verify(row)
    except LedgerError:
        raise behind(where, chain.last_id, anchor) from None
    if row.hash != anchor.head:
        raise behind(where, chain.last_id, anchor)
    return row


def check_anchor(where: str, anchor: Anchor, row_hash: str) -> None:
    """``row_hash``: the hash of row ``anchor.rows`` (the genesis hash when 0)."""
    if row_hash != anchor.head:
        raise LedgerError(
            f"{where} has been tampered with: it does not match its anchor, charge "
        f"{anchor.rows} has another hash "
            "than the one recorded when it was committed (the ledger was rewritten, "
            "replaced or rolled back); it was left untouched."
        )
