"""The charge point of a release: charge the budget before any noise is drawn, and if the
release then fails (an error, ``KeyboardInterrupt``, a cancelled cluster computation) let
the ledger record the charge as failed -- never refunded."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent

__all__ = ["Charger", "charged"]


class Charger(Protocol):
    """What a release charges: a :class:`dpfast.Budget`, an analyst's view of one, or
    anything that spends like it (``charge``, a context manager that records a failed
    release, is optional)."""

    def spend(self, event: DpEvent, *, note: str = "") -> object:
        """Check that ``event`` fits and charge it (raise when it does not)."""


@contextlib.contextmanager
def charged(budget: Charger | None, event: DpEvent, note: str) -> Iterator[None]:
    """``with charged(budget, event, note): <release>``.  ``budget`` None charges nothing;
    a budget without :meth:`~dpfast.Budget.charge` (only ``spend``) is charged with
    ``spend`` and records no failure."""
    if budget is None:
        yield
        return
    charge = getattr(budget, "charge", None)
    if charge is None:
        budget.spend(event, note=note)
        yield
        return
    with charge(event, note=note):
        yield
