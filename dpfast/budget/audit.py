"""Read a ledger file without opening a :class:`~dpfast.Budget` (nothing is written):
its definition, every record, the hash chain's verdict, what was spent and what is left.
Used by ``dpfast ledger show`` and ``dpfast ledger verify``."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
import stat
from collections.abc import Sequence
from typing import Any

from . import checkpoint, ledger, schema
from .anchor import ledger_key as ledger_key_of
from .books import Books, absorb_row
from .chain import (
    Chain,
    check_anchor,
    check_tail,
    continuation,
    sequence,
    snapshot,
    to_row,
)
from .filters import Filter
from .records import (
    CHARGED,
    FAILED,
    REFUSED,
    STORED,
    Charge,
    Cost,
    LedgerError,
    Remaining,
    deserialize_event,
    utc,
)
from .registry import make_filter
from .sync import relations_of_json

__all__ = ["LedgerReport", "charges_of", "describe", "inspect_ledger"]


@dataclasses.dataclass(frozen=True)
class LedgerReport:
    """What :func:`inspect_ledger` found.

    Attributes
    ----------
    path : str
    definition : dict
        ``epsilon``, ``delta``, ``accounting``, ``orders``.
    version : int
        The file's format version.
    records : list of Charge
        Every record, refused ones included, oldest first (up to the first broken
        link when the chain is broken).
    chain_ok : bool
        The hash chain verified from the definition to the last row, and no row
        was removed from the end.
    problem : str
        Why the chain (or the file) failed verification; empty when ``chain_ok``.
    head : str
        Hash of the last verified row (record it elsewhere to detect a rewrite of
        the whole chain later).
    spent : Cost or None
    remaining : Remaining or None
        As :meth:`Budget.spent` / :meth:`Budget.remaining` would say (None when the
        chain is broken).
    mode : int
        Permission bits of the file.
    rows : tuple of Row
        The verified rows themselves, every kind (analysts' sub-budgets, cached
        results and cache hits too; :func:`dpfast.budget.usage.usage_of`).
    """

    path: str
    definition: dict[str, Any]
    version: int
    records: list[Charge]
    chain_ok: bool
    problem: str
    head: str
    spent: Cost | None
    remaining: Remaining | None
    mode: int
    rows: tuple[schema.Row, ...] = ()


def inspect_ledger(path: str | os.PathLike[str], *,
                   ledger_key: str | bytes | None = None) -> LedgerReport:
    """Read and verify the ledger at ``path`` (read-only): every row of the hash chain,
    SQLite's record of the largest id, the anchor (:mod:`.anchor`) and every checkpoint
    (its digest, and its state recomputed from the rows).

    ``ledger_key`` (else the environment variable ``DPFAST_LEDGER_KEY``): the operator's
    key of a keyed ledger.

    Raises
    ------
    LedgerError
        The file cannot be used as a ledger at all, by the rules :class:`Budget` applies
        (not a dpfast ledger, another user's, writable by others, a FIFO, a symbolic link
        loop...; see :mod:`dpfast.budget.paths`).  A broken chain, a lost anchor or a
        ledger behind its anchor is reported in the result instead.
    """
    path = os.fspath(path)
    key = ledger_key_of(ledger_key)
    conn, meta = ledger.open_readonly(path)
    try:
        definition = json.loads(meta["definition"])
        version = int(meta["version"])
        filt = make_filter(definition.get("accounting"), definition.get("epsilon"),
                           definition.get("delta"), definition.get("orders"))
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if version < 2:
            return LedgerReport(path, definition, version, [], False,
                                f"format {version}: open it with dpfast.Budget to migrate it "
                                f"to format {schema.FORMAT_VERSION} (adds the hash chain)",
                                "", None, None, mode)
        where = f"ledger {path!r}"
        lf = ledger.LedgerFile(os.path.realpath(path), definition, 30.0, key)
        lf.where = where
        lf._anchor_of(os.path.realpath(path), meta)  # LedgerError: a key is missing/wrong
        assert lf.anchor is not None
        chain = Chain(lf.genesis, where)
        good: list[schema.Row] = []
        problem = ""
        try:
            anchor = lf.anchor.read()  # before the snapshot (see .session)
        except LedgerError as exc:
            anchor, problem = None, str(exc)
        state, relation, books = filt.new_state(), None, Books(filt)
        try:
            with snapshot(conn):
                raws = conn.execute(
                    f"SELECT {schema.select_columns(conn)} FROM charges ORDER BY id"
                ).fetchall()
                seq = sequence(conn)
                cps = (conn.execute("SELECT id, head, state, digest FROM checkpoints "
                                    "ORDER BY id").fetchall()
                       if checkpoint.exists(conn) else [])
        except sqlite3.Error as exc:
            raise LedgerError(f"ledger {path!r} is damaged ({exc})") from exc
        marks = {int(r[0]): checkpoint.Checkpoint(*r) for r in cps}
        try:
            if anchor is not None and anchor.rows == 0:
                check_anchor(where, anchor, lf.genesis)
            for raw in raws:
                row = to_row(raw, where)
                chain.verify(row)
                good.append(row)
                absorb_row(filt, state, books, row)
                if row.status == "charged":
                    if relation is None:
                        rels = relations_of_json(row.event)
                        relation = next(iter(rels)) if len(rels) == 1 else None
                if anchor is not None and row.id == anchor.rows:
                    check_anchor(where, anchor, row.hash)
                if row.id in marks:
                    _check_checkpoint(marks.pop(row.id), row, state, relation, books, filt,
                                      key, lf.genesis, where)
            if marks:
                raise LedgerError(f"{where} lost charges: it has a checkpoint at charge "
                                  f"{min(marks)} but ends at {chain.last_id}")
            check_tail(seq, chain)
            _check_payloads(conn, good, where)
            if anchor is not None and anchor.rows > chain.last_id:
                # the anchor's row, one ahead: being committed now, or a commit undone by
                # a crash or a lost -wal (opening the ledger restores it); it counts
                row = continuation(where, anchor, chain, seq)
                chain.verify(row)
                good.append(row)
                absorb_row(filt, state, books, row)
            if anchor is None and not problem and "anchor" in meta and chain.last_id > 0:
                raise LedgerError(f"{where} has lost its anchor ({lf.anchor.path!r}): charges "
                                  "lost with the -wal file cannot be detected")
        except (LedgerError, TypeError, ValueError) as exc:
            problem = problem or str(exc)
        ok = not problem
        return LedgerReport(
            path=path,
            definition=definition,
            version=version,
            records=charges_of(good, filt, include_refused=True),
            chain_ok=ok,
            problem=problem,
            head=chain.last_hash,
            spent=filt.spent(state) if ok else None,
            remaining=filt.remaining(state) if ok else None,
            mode=mode,
            rows=tuple(good),
        )
    finally:
        conn.close()


def _check_checkpoint(cp: checkpoint.Checkpoint, row: schema.Row, state: Any,
                      relation: str | None, books: Books, filt: Filter, key: bytes | None,
                      genesis: str, where: str) -> None:
    """A checkpoint must match its digest, its row's hash, and the state of the rows."""
    checkpoint.check(cp, key, genesis, where)
    if cp.head != row.hash:
        raise LedgerError(f"{where} has been tampered with: charge {row.id} does not have "
                          "the hash its checkpoint recorded")
    stored = Books(filt)
    loaded = checkpoint.load_state(cp.state, filt.new_state(), where, stored)
    if loaded is None:
        return  # another state format: nothing to compare
    if (checkpoint.dump_state(loaded[0], loaded[1], stored)
            != checkpoint.dump_state(state, relation, books)):
        raise LedgerError(f"{where} has been tampered with: the checkpoint at charge {row.id} "
                          "does not match the charges before it")


def _check_payloads(conn: sqlite3.Connection, rows: Sequence[schema.Row], where: str) -> None:
    """Every cached result must match the digest its ``stored`` row put in the chain."""
    stored = [r for r in rows if r.status == STORED]
    if not stored:
        return
    from .queries import payload_digest

    for r in stored:
        got = conn.execute("SELECT data FROM payloads WHERE id = ?", (r.id,)).fetchone()
        if got is None or not isinstance(got[0], bytes):
            raise LedgerError(f"{where} lost the stored result of query {r.query!r} "
                              f"(record {r.id})")
        if payload_digest(got[0]) != r.event:
            raise LedgerError(f"{where} has been tampered with: the stored result of query "
                              f"{r.query!r} (record {r.id}) does not match its digest in the "
                              "hash chain")


def describe(spent: Cost, left: Remaining) -> str:
    """One line: what was spent and what a next release may still cost."""
    gauss = "no Gaussian fits" if not math.isfinite(left.sigma) else (
        f"Gaussian sigma >= {left.sigma:.4g} (rho {left.rho:.4g})")
    return (f"spent (epsilon={spent.epsilon:.6g}, delta={spent.delta:.3g}); next release fits "
            f"if pure epsilon <= {left.epsilon:.6g}, or {gauss}")


def charges_of(rows: Sequence[schema.Row], filt: Filter, *,
               include_refused: bool = False) -> list[Charge]:
    """:class:`Charge` records of ledger rows (a failure marks its charge as failed)."""
    failed = {r.ref for r in rows if r.status == FAILED}
    out = []
    for r in rows:
        if r.status not in (CHARGED, REFUSED) or (r.status == REFUSED and not include_refused):
            continue  # failures mark their charge; analysts, results and hits are not charges
        try:
            event = deserialize_event(r.event)
        except (TypeError, ValueError):
            event = None
        status = FAILED if r.id in failed else r.status
        cost = filt.cost_record(filt.row_costs(schema.decode_cost(r.cost)))
        out.append(Charge(r.id, utc(r.time), r.analyst, r.note, event, r.event, cost, status,
                          r.user, r.host, r.pid, r.query))
    return out
