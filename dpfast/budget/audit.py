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

from . import ledger, schema
from .filters import Filter
from .records import FAILED, REFUSED, Charge, Cost, LedgerError, Remaining, deserialize_event, utc
from .registry import make_filter

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


def inspect_ledger(path: str | os.PathLike[str]) -> LedgerReport:
    """Read and verify the ledger at ``path`` (read-only).

    Raises
    ------
    LedgerError
        The file is not a dpfast ledger at all (a broken chain is reported in the
        result instead).
    """
    path = os.fspath(path)
    conn, meta = ledger.open_readonly(path)
    try:
        definition = json.loads(meta["definition"])
        version = int(meta["version"])
        filt = make_filter(definition.get("accounting"), definition.get("epsilon"),
                           definition.get("delta"), definition.get("orders"))
        mode = stat.S_IMODE(os.stat(path).st_mode)
        if version < schema.FORMAT_VERSION:
            return LedgerReport(path, definition, version, [], False,
                                f"format {version}: open it with dpfast.Budget to migrate it "
                                f"to format {schema.FORMAT_VERSION} (adds the hash chain)",
                                "", None, None, mode)
        genesis = schema.genesis_hash(meta["definition"], meta["created"])
        chain = ledger.Chain(genesis, f"ledger {path!r}")
        try:
            rows = [schema.Row(*r) for r in conn.execute(
                f"SELECT {schema.COLUMNS} FROM charges ORDER BY id").fetchall()]
        except sqlite3.Error as exc:
            raise LedgerError(f"ledger {path!r} is damaged ({exc})") from exc
        good: list[schema.Row] = []
        problem = ""
        try:
            for row in rows:
                chain.verify(row)
                good.append(row)
            ledger.check_tail(conn, chain)
        except LedgerError as exc:
            problem = str(exc)
        state = filt.new_state()
        for row in good:
            if row.status == "charged":
                filt.add(state, filt.row_costs(schema.decode_cost(row.cost)))
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
        )
    finally:
        conn.close()


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
        if r.status == FAILED or (r.status == REFUSED and not include_refused):
            continue
        try:
            event = deserialize_event(r.event)
        except (TypeError, ValueError):
            event = None
        status = FAILED if r.id in failed else r.status
        cost = filt.cost_record(filt.row_costs(schema.decode_cost(r.cost)))
        out.append(Charge(r.id, utc(r.time), r.analyst, r.note, event, r.event, cost, status,
                          r.user, r.host, r.pid))
    return out
