"""The one adapter between :class:`dpfast.Session` and the budget layer: the result cache
and the analysts live in the budget's ledger (:meth:`dpfast.Budget.query`,
:meth:`dpfast.Budget.analyst`, :meth:`dpfast.Budget.usage`).

* :meth:`Store.query` is ``budget.query(query_id, event, note=, analyst=)``: in one ledger
  transaction, the stored answer (a hit, recorded with who and when, nothing charged) or
  the charge of ``event`` to the total and to the analyst's sub-budget; a computation of
  the same id in progress in another process is waited for, so two processes asking the
  same new question get one charge and one noisy answer, never two;
* :meth:`Store.add_analyst` is ``budget.add_analyst(name, epsilon=, delta=)`` (the budget
  owner registers a sub-budget: a row in the hash chain; every charge naming the analyst
  must fit it and the total, checked in the same transaction); :meth:`Store.analyst` is
  ``budget.analyst(name)``, which opens a *registered* analyst only;
* :meth:`Store.bind_unit` binds the ledger to the session's privacy unit
  (:meth:`dpfast.Budget.bind_privacy_unit`: a ledger's total is for one unit);
* :meth:`Store.cached` says whether a query id has a stored answer (the slow path of a
  refusal check only); :meth:`Store.result_id` finds the stored answer of a spec's id
  asked before by a method call or as a part of an SQL question.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent
    from dpfast.budget import Budget
    from dpfast.budget.analysts import Analyst
    from dpfast.budget.queries import Query
    from dpfast.budget.usage import Usage

__all__ = ["Store", "default_accounting"]


def default_accounting(delta: float) -> str:
    """The accounting of a budget a session creates: ``"mixed"`` (pure, approximate and
    Gaussian/zCDP releases in one fully adaptive filter)."""
    return "mixed"


class Store:
    """The cache and the analysts of one budget (see the module docstring)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget

    def who(self, analyst: str) -> Budget | Analyst:
        """What a release of ``analyst`` is charged to: the budget or the analyst handle."""
        return self.budget.analyst(analyst) if analyst else self.budget

    @contextlib.contextmanager
    def query(self, qid: str, event: DpEvent, *, note: str, analyst: str) -> Iterator[Query]:
        """``budget.query``: yields ``q`` with ``hit``, ``payload``, ``store(bytes)``."""
        with self.budget.query(qid, event, note=note, analyst=analyst) as q:
            yield q

    def add_analyst(self, name: str, epsilon: float | None, delta: float | None) -> Analyst:
        """Register analyst ``name``'s sub-budget (or reopen the same); returns the handle.
        A sub-budget's delta defaults to the budget's (key selection needs one)."""
        if epsilon is not None and delta is None:
            delta = self.budget.delta
        return self.budget.add_analyst(name, epsilon=epsilon, delta=delta)

    def analyst(self, name: str, epsilon: float | None, delta: float | None) -> Analyst:
        """The registered analyst ``name`` (ValueError if not registered, or if
        ``epsilon`` / ``delta`` are not their share)."""
        if epsilon is not None and delta is None:
            delta = self.budget.delta
        return self.budget.analyst(name, epsilon=epsilon, delta=delta)

    def bind_unit(self, privacy_unit: str | None) -> bool:
        """Bind the ledger to ``privacy_unit`` (True: this call recorded it); ValueError
        naming privacy_unit if the ledger is bound to another."""
        return bool(self.budget.bind_privacy_unit(privacy_unit))

    def cached(self, qid: str) -> bool:
        """True if ``qid`` has a stored answer."""
        return bool(self.budget.has_result(qid))

    def result_id(self, part: str) -> str | None:
        """The query id of a stored answer of ``part`` (:meth:`dpfast.Budget.result_id`:
        ``part`` or a question's ``<question>~<part>``), or None."""
        return self.budget.result_id(part)

    def usage(self) -> Usage:
        """The budget's usage report (:class:`dpfast.budget.usage.Usage`)."""
        return self.budget.usage()
