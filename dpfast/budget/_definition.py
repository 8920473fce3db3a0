"""A :class:`~dpfast.budget.Budget`'s definition: its arguments checked, or read from a ledger.

:func:`check_definition` validates what ``Budget(...)`` is given (epsilon, delta, the
accounting and its orders, the lock timeout, the ledger path) before anything is opened;
:func:`stored_definition` reads the definition a ledger file was created with
(:meth:`Budget.from_ledger <dpfast.budget.Budget.from_ledger>`).  Opening the filter and
the ledger stays in :mod:`dpfast.budget.manager`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

from dpfast._core.validate import check_real

from . import ledger as _store
from .registry import FILTERS

__all__ = ["check_definition", "default_accounting", "stored_definition"]


def default_accounting(delta: float, ledger: str | os.PathLike[str] | None = None) -> str:
    """The accounting of a budget that names none: an existing ledger file's own (so a
    ledger created under an earlier default reopens as it was created), else ``"mixed"``
    when ``delta > 0`` (it charges every release the library makes: pure, approximate
    (key selection) and Gaussian/zCDP events in one budget), else ``"basic"`` (pure DP)."""
    if isinstance(ledger, (str, os.PathLike)) and not isinstance(os.fspath(ledger), bytes):
        p = os.fspath(ledger)
        if p and p != ":memory:" and os.path.isfile(p):
            try:
                stored = stored_definition(p)[1].get("accounting")
            except (_store.LedgerError, ValueError, OSError):
                stored = None  # opening the ledger reports what is wrong with it
            if isinstance(stored, str) and stored in FILTERS:
                return stored
    return "mixed" if delta > 0 else "basic"


def check_definition(
    epsilon: float,
    delta: float | None,
    ledger: str | os.PathLike[str] | None,
    accounting: str | None,
    orders: Sequence[float] | None,
    timeout: float,
) -> tuple[float, float, str, float, str | None]:
    """``(epsilon, delta, accounting, timeout, path)`` of a new budget, checked.

    Raises
    ------
    TypeError, ValueError
        An argument is of the wrong type or out of range (the message names it).
    """
    eps = check_real(epsilon, "epsilon")
    if not (0.0 < eps < math.inf):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    dlt = 0.0 if delta is None else check_real(delta, "delta")
    if not (0.0 <= dlt < 1.0):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    if accounting is None:
        accounting = default_accounting(dlt, ledger)
    if not isinstance(accounting, str):
        raise TypeError(f"accounting must be a str, got {type(accounting).__name__}")
    if accounting not in FILTERS:
        raise ValueError(f"accounting must be one of {tuple(FILTERS)}, got {accounting!r}")
    cls = FILTERS[accounting]
    if cls.needs_delta and dlt == 0.0:
        raise ValueError(
            f"delta must be > 0 for accounting={accounting!r} (it gives (epsilon, "
            "delta)-DP only with delta > 0): pass delta, e.g. Budget(1.0, 1e-6), or "
            "omit accounting for pure epsilon-DP"
        )
    if orders is not None and not cls.takes_orders:
        raise ValueError(f"orders applies to accounting='rdp' or 'mixed' only, not "
                         f"{accounting!r}")
    tmo = check_real(timeout, "timeout")
    if not tmo >= 0.0:
        raise ValueError(f"timeout must be >= 0, got {timeout!r}")
    if ledger is not None and not isinstance(ledger, (str, os.PathLike)):
        raise TypeError(f"ledger must be None or a path, got {type(ledger).__name__}")
    path = None if ledger is None else os.fspath(ledger)
    if isinstance(path, bytes):
        raise TypeError("ledger must be a str path, not bytes")
    if path == "" or path == ":memory:":
        raise ValueError("ledger must be a file path; pass ledger=None for memory")
    return eps, dlt, accounting, tmo, path


def stored_definition(path: str | os.PathLike[str]) -> tuple[str, dict[str, Any]]:
    """``(path, definition)``: the definition stored in an existing ledger file.

    Raises
    ------
    LedgerError
        ``path`` is not a usable dpfast ledger (missing, damaged, tampered with).
    """
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise _store.LedgerError(f"ledger {p!r} does not exist")
    conn, meta = _store.open_readonly(p)
    conn.close()
    return p, json.loads(meta["definition"])
