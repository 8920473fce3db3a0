"""Analysts of a :class:`~dpfast.Budget`: per-analyst sub-budgets under the total, and the
decision of every charge (does it fit the budget, and the analyst's sub-budget?).

The budget's owner registers an analyst and their share:
``budget.add_analyst("alice", epsilon=0.5, delta=1e-7)`` records alice's sub-budget in
the ledger (an ``analyst`` row of the hash chain, :mod:`.books`);
``budget.analyst("alice")`` opens a *registered* analyst (an unknown name is refused:
naming an analyst creates no budget).  Both return an :class:`Analyst`, which has the
budget's ``spend`` / ``charge`` / ``release`` / ``query`` / ``remaining`` / ``spent``
with the analyst filled in, so it can be passed wherever a budget is
(``tables.count(..., budget=alice)``).  Every charge naming alice, from any process, is
checked against her sub-budget and the total in the same ledger transaction, so no number
of processes can exceed either.  Names are restricted to a safe character set
(:mod:`.names`).  The ledger is also bound to one privacy unit
(:meth:`Analysts.bind_privacy_unit`).
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from dpfast._core.errors import NeighbouringRelationError
from dpfast._core.validate import check_real
from dpfast.accounting import events as _events

from .books import definition_json
from .filters import Filter
from .names import check_name
from .records import (
    ANALYST,
    CHARGED,
    REFUSED,
    BudgetExceededError,
    Charge,
    Cost,
    Remaining,
    serialize_event,
)
from .sync import _LedgerSync, identity

if TYPE_CHECKING:
    from dpfast.random import RngLike

    from .usage import Usage

__all__ = ["Analyst", "Analysts", "check_text"]

_MAX_TEXT = 4096


def check_text(value: Any, name: str) -> str:
    """``value`` as a str (TypeError naming ``name`` otherwise; at most 4096 characters)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if len(value) > _MAX_TEXT and name in ("analyst", "query_id"):
        raise ValueError(f"{name} must be at most {_MAX_TEXT} characters, got {len(value)}")
    return value


class Analysts:
    """The analyst methods of :class:`~dpfast.Budget` (a base class of it): the analyst
    registry, each charge's decision, and the privacy unit the ledger is bound to."""

    _lock: threading.RLock
    _sync: _LedgerSync
    _filter: Filter
    _ledger: Any

    if TYPE_CHECKING:
        @property
        def epsilon(self) -> float: ...

        @property
        def delta(self) -> float: ...

    # -- what every charge goes through -------------------------------------------

    def _prepare(self, event: Any, note: str, analyst: str, query_id: str
                 ) -> tuple[str, frozenset[str], tuple[float, ...]]:
        check_text(note, "note")
        check_text(analyst, "analyst")
        if analyst:
            check_name(analyst, "analyst")
        check_text(query_id, "query_id")
        event_json = serialize_event(event)  # TypeError unless an event
        rels = _events.relations_of(event)
        if len(rels) > 1:
            raise NeighbouringRelationError(
                f"the event mixes add/remove-one and replace-one parts; a budget's charges "
                f"must share one neighbouring relation: {event!r}"
            )
        costs = self._filter.costs(event)  # outside the lock: may be slow
        return event_json, rels, costs

    def _verdict(self, event: Any, costs: tuple[float, ...], rels: frozenset[str],
                 analyst: str) -> tuple[str, str | None]:
        """``(status, why)`` of a charge now (lock held, ledger synced): ``why`` is
        ``"budget"`` or ``"analyst"`` for a refusal."""
        sync = self._sync
        if rels and sync.relation is not None and sync.relation not in rels:
            raise NeighbouringRelationError(
                f"this budget's charges are stated for {sync.relation!r} neighbours; "
                f"an event for {next(iter(rels))!r} neighbours cannot be composed with "
                f"them (nothing was recorded): {event!r}"
            )
        if not self._filter.fits(sync.state, costs):
            return REFUSED, "budget"
        if not sync.books.fits(analyst, costs):
            return REFUSED, "analyst"
        return CHARGED, None

    def fits(self, event: Any, *, analyst: str = "") -> bool:
        """True if a charge of ``event`` (by ``analyst``) would be accepted now: it fits
        the budget and the analyst's sub-budget, if any.  Charges and records nothing;
        another process may charge in between, so :meth:`spend` still decides.  One
        filter test: far cheaper than comparing with :meth:`remaining`, which searches
        for the largest epsilon and smallest sigma that fit.

        Raises
        ------
        TypeError, ValueError
            ``analyst`` is not a string, ``event`` is not an event, or this accounting
            cannot charge it.
        """
        check_text(analyst, "analyst")
        if analyst:
            check_name(analyst, "analyst")
        serialize_event(event)  # TypeError unless an event
        costs = self._filter.costs(event)
        with self._lock:
            sync = self._sync
            sync.read("cannot read the ledger")
            return bool(self._filter.fits(sync.state, costs)
                        and sync.books.fits(analyst, costs))

    def _refusal(self, event: Any, costs: tuple[float, ...], analyst: str,
                 why: str | None) -> BudgetExceededError:
        sync = self._sync
        if why == "analyst":
            sub = sync.books.filter_of(analyst)
            assert sub is not None
            state = sync.books.state_of(analyst)
            return BudgetExceededError(
                f"analyst {analyst!r} has not enough of their sub-budget left: "
                + sub.refusal(state, costs),
                event, sub.cost_record(costs), sub.remaining(state), self._ledger.path,
                sub.detail(state, costs))
        return BudgetExceededError(
            self._filter.refusal(sync.state, costs), event, self._filter.cost_record(costs),
            self._filter.remaining(sync.state), self._ledger.path,
            self._filter.detail(sync.state, costs))

    # -- the analyst registry -----------------------------------------------------------

    def add_analyst(self, name: str, *, epsilon: float | None = None,
                    delta: float | None = None) -> Analyst:
        """Register analyst ``name`` and their share of the budget (the budget owner's act).

        Parameters
        ----------
        name : str
            The analyst: 1 to 64 letters, digits, ``.``, ``_``, ``@`` or ``-``, starting
            with a letter or digit (:func:`dpfast.budget.names.check_name`), recorded in
            every row the analyst's charges write.
        epsilon, delta : float, optional
            The analyst's sub-budget, at most the budget's own (``delta`` default: the
            budget's delta).  Without ``epsilon``: a share of the whole budget (only the
            total limits the analyst).  Recorded in the ledger (a row of the hash chain)
            before the analyst's first charge; registering again with the same figures
            returns the same analyst.

        Returns
        -------
        Analyst
            A handle with the budget's ``spend``, ``charge``, ``release``, ``query``,
            ``remaining``, ``spent`` and ``usage`` for this analyst.

        Raises
        ------
        TypeError, ValueError
            A bad name or figures (named), a sub-budget larger than the budget, another
            sub-budget already recorded for ``name``, or a sub-budget for an analyst who
            has already been charged.

        Privacy
        -------
        A sub-budget only adds refusals: a charge naming the analyst is accepted iff it
        fits the budget's filter *and* the analyst's (the same filter with the
        analyst's ``(epsilon, delta)``).  A refusal is a function of earlier outputs, so
        the budget's guarantee is unchanged, and the analyst's own charges form a
        filter of their own: they are ``(epsilon_a, delta_a)``-DP by the proof of the
        budget's accounting.  Shares are set here, by whoever holds the budget (for a
        ledger file: its owner, the only user who can write it); :meth:`analyst` only
        opens a registered share, so naming a new analyst never creates budget.
        """
        check_name(name, "name")
        if epsilon is None:
            if delta is not None:
                raise ValueError("delta needs epsilon: give the sub-budget's epsilon")
            want = (self.epsilon, self.delta)
        else:
            want = self._share(name, epsilon, delta)
        user, host, pid = identity()
        sync = self._sync

        def make() -> list[Any] | None:
            have = sync.books.limits.get(name)
            if have == want:
                return None
            if have is not None:
                raise ValueError(f"analyst {name!r} already has the sub-budget (epsilon="
                                 f"{have[0]!r}, delta={have[1]!r}); it cannot change")
            if name in sync.books.spent and want != (self.epsilon, self.delta):
                # (a share of the whole budget may register an analyst charged before:
                # the totals of the same filter carry over)
                raise ValueError(f"analyst {name!r} has already been charged without a "
                                 "sub-budget; a sub-budget is set before an analyst's first "
                                 "charge (or register them with the whole budget: "
                                 "add_analyst(name) without epsilon)")
            return [time.time(), ANALYST, None, name, "sub-budget", definition_json(*want),
                    "[]", user, host, pid, ""]

        with self._lock:
            sync.write(make)
        return Analyst(self, name)  # type: ignore[arg-type]

    def _share(self, name: str, epsilon: Any, delta: Any) -> tuple[float, float]:
        """``(epsilon, delta)`` of a sub-budget, checked against the budget."""
        eps = check_real(epsilon, "epsilon")
        if not (0.0 < eps <= self.epsilon):
            raise ValueError(f"epsilon must be > 0 and at most the budget's epsilon "
                             f"{self.epsilon!r}, got {epsilon!r}")
        dlt = self.delta if delta is None else check_real(delta, "delta")
        if not (0.0 <= dlt <= self.delta):
            raise ValueError(f"delta must be in [0, the budget's delta {self.delta!r}], "
                             f"got {delta!r}")
        if self._filter.needs_delta and dlt == 0.0:
            raise ValueError(f"delta must be > 0 for a sub-budget of accounting="
                             f"{self._filter.accounting!r}")
        from .registry import make_filter

        try:  # the sub-budget's filter must exist (e.g. an rdp cap can be negative)
            make_filter(self._filter.accounting, eps, dlt, getattr(self._filter, "orders", None))
        except ValueError as exc:
            raise ValueError(f"the sub-budget (epsilon={eps!r}, delta={dlt!r}) of analyst "
                             f"{name!r} cannot accept any charge: {exc}") from None
        return eps, dlt

    def analyst(self, name: str, *, epsilon: float | None = None,
                delta: float | None = None) -> Analyst:
        """The registered analyst ``name`` (see :meth:`add_analyst`).

        Parameters
        ----------
        name : str
            An analyst registered with :meth:`add_analyst` (or, for a ledger file, with
            ``dpfast ledger analysts add``).
        epsilon, delta : float, optional
            If given, they must be the analyst's registered share (a check; nothing is
            recorded).

        Raises
        ------
        TypeError, ValueError
            A bad name (named), an analyst who is not registered (nothing is created:
            only the budget's owner sets shares), or ``epsilon`` / ``delta`` other than
            the registered share.
        """
        check_name(name, "name")
        if epsilon is None and delta is not None:
            raise ValueError("delta needs epsilon: give the sub-budget's epsilon")
        with self._lock:
            self._sync.read("cannot read the ledger")
            have = self._sync.books.limits.get(name)
        if have is None:
            raise ValueError(
                f"analyst {name!r} is not registered in this budget: the budget's owner "
                f"registers an analyst and their share with budget.add_analyst({name!r}, "
                f"epsilon=...) (a ledger file: dpfast ledger analysts add LEDGER {name} "
                "--epsilon ...); naming an analyst creates no budget")
        if epsilon is not None:
            want = self._share(name, epsilon, delta)
            if want != have:
                raise ValueError(f"analyst {name!r} already has the sub-budget (epsilon="
                                 f"{have[0]!r}, delta={have[1]!r}); it cannot change "
                                 f"(asked for epsilon={want[0]!r}, delta={want[1]!r})")
        return Analyst(self, name)  # type: ignore[arg-type]

    def analysts(self) -> dict[str, tuple[float, float]]:
        """The registered analysts and their shares ``{name: (epsilon, delta)}``."""
        with self._lock:
            self._sync.read("cannot read the ledger")
            return dict(sorted(self._sync.books.limits.items()))

    # -- the privacy unit ---------------------------------------------------------------

    def bind_privacy_unit(self, column: str | None) -> bool:
        """Bind the ledger to the privacy unit ``column`` (None: one row is one person), or
        check that it is the one the ledger is bound to.

        The first binding is recorded in the ledger (a ``meta`` entry that cannot change
        later) -- also for a ledger of an earlier dpfast, which adopts the unit of the
        first session that opens it.  Returns True if this call recorded the unit.

        Raises
        ------
        ValueError
            The ledger is bound to another privacy unit (the message names
            ``privacy_unit`` and both units); nothing is recorded or charged.

        Privacy
        -------
        The budget's guarantee holds for one neighbouring relation: add or remove all
        rows of one person, with the person identified by one column (or one row when
        there is none).  Charges for two different units would add up to a total that
        bounds neither, so a ledger is bound to one.
        """
        import sqlite3

        from .ledger import bind_unit, unit_definition

        if column is not None and not isinstance(column, str):
            raise TypeError(f"privacy_unit must be a str or None, got "
                            f"{type(column).__name__}")
        definition = unit_definition(column)
        with self._lock:
            conn = self._sync.connection()
            try:
                stored = bind_unit(conn, definition)
            except sqlite3.Error as exc:
                raise self._ledger.error(exc, "cannot record the privacy unit") from exc
        if stored is not None and stored.get("column") != column:
            where = self._ledger.where
            raise ValueError(
                f"privacy_unit {column!r} is not the privacy unit {where} is bound to "
                f"({stored.get('column')!r}: {stored.get('relation')}); a ledger's total "
                "composes releases for one privacy unit only: use another ledger. Nothing "
                "was charged")
        return stored is None

    def privacy_unit(self) -> dict[str, Any] | None:
        """The privacy unit the ledger is bound to, ``{"column": ..., "relation": ...}``
        (None: not bound yet; see :meth:`bind_privacy_unit`)."""
        import json

        from .ledger import PRIVACY_UNIT

        with self._lock:
            conn = self._sync.connection()
            row = conn.execute("SELECT value FROM meta WHERE key = ?",
                               (PRIVACY_UNIT,)).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def _sub_remaining(self, name: str) -> tuple[Remaining, Cost] | None:
        """The analyst's (remaining, spent): what fits both the sub-budget and the total."""
        with self._lock:
            self._sync.read("cannot read the ledger")
            books = self._sync.books
            sub = books.filter_of(name)
            if sub is None:
                return None
            state = books.state_of(name)
            total, tstate = self._filter, self._sync.state
            joint = copy.copy(sub)
            setattr(joint, "fits",  # noqa: B010 - an instance's own fit test
                    lambda st, c: total.fits(tstate, c) and sub.fits(st, c))
            return joint.remaining(state), sub.spent(state)


class Analyst:
    """One registered analyst of a :class:`~dpfast.Budget` (see :meth:`Budget.add_analyst
    <dpfast.Budget.add_analyst>` and :meth:`Budget.analyst <dpfast.Budget.analyst>`): the
    budget's charging methods with ``analyst`` filled in.

    Attributes
    ----------
    name : str
    budget : Budget
    """

    def __init__(self, budget: Any, name: str) -> None:
        self.budget = budget
        self.name = name

    @property
    def sub_budget(self) -> tuple[float, float] | None:
        """The analyst's ``(epsilon, delta)``, or None without a sub-budget."""
        with self.budget._lock:
            self.budget._sync.read("cannot read the ledger")
            return self.budget._sync.books.limits.get(self.name)

    @property
    def epsilon(self) -> float:
        """The sub-budget's epsilon (the budget's without a sub-budget)."""
        sub = self.sub_budget
        return self.budget.epsilon if sub is None else sub[0]

    @property
    def delta(self) -> float:
        """The sub-budget's delta (the budget's without a sub-budget)."""
        sub = self.sub_budget
        return self.budget.delta if sub is None else sub[1]

    def spend(self, event: Any, *, note: str = "", query_id: str = "") -> Charge:
        """:meth:`Budget.spend <dpfast.Budget.spend>` for this analyst."""
        return self.budget.spend(event, note=note, analyst=self.name, query_id=query_id)

    @contextlib.contextmanager
    def charge(self, event: Any, *, note: str = "", query_id: str = "") -> Iterator[Charge]:
        """:meth:`Budget.charge <dpfast.Budget.charge>` for this analyst."""
        with self.budget.charge(event, note=note, analyst=self.name, query_id=query_id) as c:
            yield c

    def release(self, mechanism: Any, x: Any, *, note: str = "", rng: RngLike = None,
                query_id: str = "") -> Any:
        """:meth:`Budget.release <dpfast.Budget.release>` for this analyst."""
        return self.budget.release(mechanism, x, note=note, analyst=self.name, rng=rng,
                                   query_id=query_id)

    def query(self, query_id: str, event: Any, *, note: str = "",
              wait: float = 3600.0) -> Any:
        """:meth:`Budget.query <dpfast.Budget.query>` for this analyst."""
        return self.budget.query(query_id, event, note=note, analyst=self.name, wait=wait)

    def fits(self, event: Any) -> bool:
        """:meth:`Budget.fits <dpfast.Budget.fits>` for this analyst."""
        return self.budget.fits(event, analyst=self.name)

    def remaining(self) -> Remaining:
        """What this analyst may still spend: what fits both the sub-budget and the
        budget (without a sub-budget: the budget's :meth:`~dpfast.Budget.remaining`);
        the accounting's own figures are the sub-budget's."""
        got = self.budget._sub_remaining(self.name)
        return self.budget.remaining() if got is None else got[0]

    def spent(self) -> Cost:
        """What this analyst's accepted charges cost (the ``(epsilon, delta)`` the
        accounting certifies for them alone)."""
        got = self.budget._sub_remaining(self.name)
        if got is not None:
            return got[1]
        b = self.budget
        with b._lock:
            b._sync.read("cannot read the ledger")
            return b._filter.spent(b._sync.books.state_of(self.name))

    def history(self, *, include_refused: bool = False) -> list[Charge]:
        """This analyst's records in the audit log (:meth:`Budget.history
        <dpfast.Budget.history>`)."""
        return [c for c in self.budget.history(include_refused=include_refused)
                if c.analyst == self.name]

    def usage(self) -> Usage:
        """The budget's :meth:`~dpfast.Budget.usage` restricted to this analyst."""
        return self.budget.usage(analyst=self.name)

    def __repr__(self) -> str:
        sub = self.sub_budget
        what = "no sub-budget" if sub is None else f"epsilon={sub[0]!r}, delta={sub[1]!r}"
        return f"Analyst({self.name!r}, {what})"
