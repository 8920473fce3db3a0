"""The analysts' books of a ledger: each analyst's sub-budget (an ``analyst`` row) and the
running totals of the charges that name the analyst, kept beside the budget's own state.

A sub-budget is the same filter as the budget's (its accounting, and for ``"rdp"`` /
``"mixed"`` the budget's orders, so a charge costs the same tuple in both) with the
analyst's ``(epsilon, delta)``.  It is defined before the analyst's first charge (the
totals of an analyst are then always those of its own filter).  A charge that names an
analyst with a sub-budget is accepted only if it fits both the budget and the
sub-budget.  The books are part of every checkpoint (:mod:`.checkpoint`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from . import schema
from .filters import Filter
from .records import ANALYST, CHARGED
from .registry import make_filter

__all__ = ["Books", "absorb_row", "definition_json", "parse_definition"]


def definition_json(epsilon: float, delta: float) -> str:
    """The ``event`` text of an ``analyst`` row."""
    return json.dumps({"epsilon": epsilon, "delta": delta}, separators=(",", ":"))


def parse_definition(text: str) -> tuple[float, float]:
    """``(epsilon, delta)`` of an ``analyst`` row (ValueError when damaged)."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("an analyst's sub-budget must be a JSON object")
    eps, dlt = data.get("epsilon"), data.get("delta")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (eps, dlt)):
        raise ValueError("an analyst's sub-budget needs numbers epsilon and delta")
    eps, dlt = float(eps), float(dlt)  # type: ignore[arg-type]
    if not (0.0 < eps < math.inf and 0.0 <= dlt < 1.0):
        raise ValueError(f"invalid sub-budget (epsilon={eps!r}, delta={dlt!r})")
    return eps, dlt


class Books:
    """Per analyst: the sub-budget ``limits[name] = (epsilon, delta)`` (if any) and the
    filter state of the charges naming it, ``spent[name]``."""

    __slots__ = ("total", "spent", "limits", "_filters")

    def __init__(self, total: Filter) -> None:
        self.total = total
        self.spent: dict[str, Any] = {}
        self.limits: dict[str, tuple[float, float]] = {}
        self._filters: dict[tuple[float, float], Filter] = {}

    def copy(self) -> Books:
        new = Books(self.total)
        new.spent = {k: v.copy() for k, v in self.spent.items()}
        new.limits = dict(self.limits)
        new._filters = self._filters
        return new

    def filter_of(self, name: str) -> Filter | None:
        """The sub-budget filter of analyst ``name`` (None: no sub-budget)."""
        lim = self.limits.get(name)
        if lim is None:
            return None
        f = self._filters.get(lim)
        if f is None:
            t = self.total
            f = make_filter(t.accounting, lim[0], lim[1], getattr(t, "orders", None))
            self._filters[lim] = f
        return f

    def state_of(self, name: str) -> Any:
        """The filter state of the charges naming ``name`` (a fresh one if none)."""
        st = self.spent.get(name)
        if st is None:
            st = (self.filter_of(name) or self.total).new_state()
        return st

    def charge(self, name: str, costs: Any) -> None:
        if not name:
            return
        st = self.spent.get(name)
        f = self.filter_of(name) or self.total
        if st is None:
            st = self.spent[name] = f.new_state()
        f.add(st, costs)

    def fits(self, name: str, costs: Any) -> bool:
        f = self.filter_of(name)
        return f is None or f.fits(self.state_of(name), costs)

    # -- checkpoints ---------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        from .checkpoint import state_fields

        return {"limits": {k: list(v) for k, v in sorted(self.limits.items())},
                "spent": {k: state_fields(v) for k, v in sorted(self.spent.items())}}

    def load(self, data: Any) -> bool:
        """Fill from :meth:`dump` output (None: no analysts); False when it does not fit."""
        from .checkpoint import fill_state

        if data is None:
            return True
        if not isinstance(data, dict) or set(data) != {"limits", "spent"}:
            return False
        limits, spent = data["limits"], data["spent"]
        if not isinstance(limits, dict) or not isinstance(spent, dict):
            return False
        try:
            self.limits = {str(k): parse_definition(json.dumps(
                {"epsilon": v[0], "delta": v[1]})) for k, v in limits.items()}
        except (ValueError, TypeError, IndexError, KeyError):
            return False
        for name, values in spent.items():
            fresh = (self.filter_of(name) or self.total).new_state()
            if not fill_state(values, fresh):
                return False
            self.spent[name] = fresh
        return True


def absorb_row(filt: Filter, state: Any, books: Books, row: schema.Row) -> None:
    """Add a verified row to the budget's ``state`` and to ``books`` (ValueError when a
    row is damaged).  The neighbouring relation is the caller's."""
    if row.status == CHARGED:
        costs = filt.row_costs(schema.decode_cost(row.cost))
        filt.add(state, costs)
        books.charge(row.analyst, costs)
    elif row.status == ANALYST:
        books.limits[row.analyst] = parse_definition(row.event)
