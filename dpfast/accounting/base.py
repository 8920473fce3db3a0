"""The accountant contract: :class:`Accountant`.

An accountant consumes privacy events (:mod:`dpfast.accounting.events`) and answers what
their composition costs as ``(epsilon, delta)``-DP.  Every accountant implements:

``supports(event) -> bool``
    Whether :meth:`~Accountant.compose` would accept ``event`` (no state changes).
``compose(event, count=1) -> self``
    Add ``count`` adaptive repetitions of ``event``.  Raises
    :class:`~dpfast.UnsupportedEventError` for an event without a bound of the
    accountant's kind and :class:`~dpfast.NeighbouringRelationError` for an event whose
    neighbouring relation cannot be converted to the accountant's; nothing is composed
    then.
``get_epsilon(delta) -> float`` / ``get_delta(epsilon) -> float``
    The ``(epsilon, delta)`` guarantee of everything composed, rounded up.

Each accountant dispatches once, on the event's type, through its ``_HANDLERS`` table
(event class -> handler ``f(accountant, event) -> cost``); nested events (``Composed``,
``SelfComposed``, the subsampling events) call back into the same table.

Neighbouring relations
----------------------
Events that fix a relation (``PoissonSampled``: add/remove one; ``SampledWithoutReplacement``
and ``RandomizedResponse``: replace one) must agree with the accountant's
``neighbouring``.  ``neighbouring=None`` (default) adopts the first relation composed.
An add/remove-one guarantee converts to replace-one by group privacy of size two (a
replacement is a removal then an addition); accountants that implement the conversion do
it (``_to_replace_one``), the others raise.  A replace-one guarantee never implies
add/remove-one (the dataset size becomes observable), so that direction always raises.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from dpfast._core.errors import NeighbouringRelationError, UnsupportedEventError
from dpfast._core.validate import check_int

from . import events as ev

__all__ = ["Accountant"]

_A = TypeVar("_A", bound="Accountant")


class Accountant(abc.ABC):
    """Base class of the privacy accountants (see the module docstring for the contract).

    Parameters
    ----------
    neighbouring : {None, "add_remove", "replace_one"}
        The neighbouring relation of the composed guarantee.  ``None`` adopts the relation
        of the first event that fixes one.

    Subclasses set ``_HANDLERS`` (event class -> a function ``f(self, event)`` returning
    the event's cost in the accountant's own terms, usually a method of the class), and
    implement ``_add(cost, count)``, ``get_epsilon`` and ``get_delta``; they may override
    ``_to_replace_one``.
    """

    _HANDLERS: ClassVar[dict[type[ev.DpEvent], Callable[[Any, Any], Any]]] = {}

    def __init__(self, *, neighbouring: str | None = None) -> None:
        if neighbouring is not None and neighbouring not in ev.RELATIONS:
            raise ValueError(
                f"neighbouring must be None, {ev.ADD_REMOVE!r} or {ev.REPLACE_ONE!r}, "
                f"got {neighbouring!r}"
            )
        self._neighbouring = neighbouring

    @property
    def neighbouring(self) -> str | None:
        """The neighbouring relation of the composed guarantee (``None``: not fixed yet)."""
        return self._neighbouring

    # ------------------------------------------------------------------ dispatch

    def _cost(self, event: ev.DpEvent) -> Any:
        """The cost of one ``event``: one lookup on its type, then its handler."""
        handler = self._HANDLERS.get(type(event))
        if handler is None:
            raise UnsupportedEventError(
                f"{type(self).__name__} does not support {type(event).__name__} events: "
                f"{event!r}"
            )
        return handler(self, event)

    # ------------------------------------------------------------------ relations

    def _relation_for(self, event: ev.DpEvent) -> tuple[ev.DpEvent, str | None]:
        """``event`` converted to the accountant's relation, and the relation to adopt."""
        rels = ev.relations_of(event)
        target = self._neighbouring
        if not rels:
            return event, target
        if target is None:
            if len(rels) == 1:
                return event, next(iter(rels))
            raise NeighbouringRelationError(
                f"{type(self).__name__}: the event mixes add/remove-one and replace-one "
                f"parts; pass neighbouring='replace_one' to convert the add/remove-one "
                f"parts by group privacy: {event!r}"
            )
        if target == ev.ADD_REMOVE and ev.REPLACE_ONE in rels:
            raise NeighbouringRelationError(
                f"{type(self).__name__} accounts for add/remove-one neighbours, but the event "
                f"states a replace-one guarantee, which does not imply add/remove-one: "
                f"{event!r}"
            )
        if target == ev.REPLACE_ONE and ev.ADD_REMOVE in rels:
            return self._convert(event), target
        return event, target

    def _convert(self, event: ev.DpEvent) -> ev.DpEvent:
        """Replace every add/remove-one part of ``event`` by its replace-one guarantee."""
        if isinstance(event, ev.SelfComposed):
            return ev.SelfComposed(self._convert(event.event), event.count)
        if isinstance(event, ev.Composed):
            return ev.Composed(tuple(self._convert(e) for e in event.events))
        if event.neighbouring == ev.ADD_REMOVE:
            return self._to_replace_one(event)
        return event

    def _to_replace_one(self, event: ev.DpEvent) -> ev.DpEvent:
        """The replace-one guarantee of an add/remove-one ``event`` (group privacy, k=2)."""
        raise NeighbouringRelationError(
            f"{type(self).__name__} cannot convert the add/remove-one event {event!r} to "
            "replace-one neighbours; account for it with PureDpAccountant or ZcdpAccountant, "
            "or use neighbouring='add_remove'"
        )

    # ------------------------------------------------------------------ contract

    def supports(self, event: ev.DpEvent) -> bool:
        """Whether :meth:`compose` accepts ``event`` (nothing is composed).

        ``False`` exactly when :meth:`compose` would raise
        :class:`~dpfast.UnsupportedEventError` or
        :class:`~dpfast.NeighbouringRelationError`.
        """
        if not isinstance(event, ev.DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        try:
            converted, _ = self._relation_for(event)
            self._cost(converted)
        except (UnsupportedEventError, NeighbouringRelationError):
            return False
        return True

    def compose(self: _A, event: ev.DpEvent, count: int = 1) -> _A:
        """Compose ``event`` ``count`` times (adaptively); returns ``self``.

        Raises
        ------
        TypeError, ValueError
            A non-event or a bad ``count``.
        UnsupportedEventError
            The event has no bound of this accountant's kind (nothing is composed).
        NeighbouringRelationError
            The event's neighbouring relation cannot be converted to the accountant's.
        """
        if not isinstance(event, ev.DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        count = check_int(count, "count", minimum=0)
        converted, relation = self._relation_for(event)
        cost = self._cost(converted)  # all-or-nothing: compute before changing state
        self._neighbouring = relation
        if count:
            self._add(cost, count)
        return self

    @abc.abstractmethod
    def _add(self, cost: Any, count: int) -> None:
        """Add ``count`` times ``cost`` (from :meth:`_cost`) to the state."""

    @abc.abstractmethod
    def get_epsilon(self, delta: float) -> float:
        """Smallest ``epsilon`` such that everything composed is ``(epsilon, delta)``-DP."""

    @abc.abstractmethod
    def get_delta(self, epsilon: float) -> float:
        """Smallest ``delta`` such that everything composed is ``(epsilon, delta)``-DP."""
