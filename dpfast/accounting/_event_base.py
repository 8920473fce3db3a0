"""The base of the privacy events: neighbouring relations, field checks and :class:`DpEvent`.

The concrete events live in :mod:`dpfast.accounting.events`, which re-exports everything
public here (import from there).  This module holds what every event shares: the two
neighbouring relations, the standard-library checks that validate and normalise an event's
fields on construction, the :class:`DpEvent` base class with its ``to_dict``, and the
relation helpers :func:`relations_of` and :func:`with_neighbouring`.  Like
the events it imports only the standard-library part of :mod:`dpfast._core`
(docs/design.md, "Layers").
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

from dpfast._core.validate import check_int, check_nonneg, check_positive, check_real

__all__ = ["ADD_REMOVE", "REPLACE_ONE", "RELATIONS", "DpEvent", "relations_of", "with_neighbouring"]

# --------------------------------------------------------------------------- validation

#: Neighbouring relation "add or remove one record" (dataset size private).
ADD_REMOVE = "add_remove"
#: Neighbouring relation "replace one record by another" (dataset size public).
REPLACE_ONE = "replace_one"
#: Both relations, in the order of implication: add/remove-one ``eps``-DP implies
#: replace-one ``2 eps``-DP (group privacy of size two); the converse does not hold.
RELATIONS = (ADD_REMOVE, REPLACE_ONE)


def _exact_real(owner: str, name: str, value: Any, *, down: bool) -> float:
    """A real parameter as float; an exact non-float rational (e.g. a ``Fraction``) is
    rounded to the safe side (``down`` for noise multipliers, up for costs)."""
    x = check_real(value, f"{owner}: {name}")
    if isinstance(value, numbers.Rational) and not isinstance(value, numbers.Integral):
        if math.isfinite(x):
            from fractions import Fraction  # the caller already imported it

            from dpfast._core.rounding import float_down, float_up

            q = Fraction(int(value.numerator), int(value.denominator))
            return float_down(q) if down else float_up(q)
    return x


def _nonneg_finite(owner: str, name: str, value: Any) -> float:
    x = _exact_real(owner, name, value, down=False)
    check_nonneg(x, f"{owner}: {name}")
    return x


def _positive_finite(owner: str, name: str, value: Any, *, down: bool = True) -> float:
    x = _exact_real(owner, name, value, down=down)
    check_positive(x, f"{owner}: {name}")
    return x


def _integer(owner: str, name: str, value: Any, minimum: int) -> int:
    return check_int(value, f"{owner}: {name}", minimum=minimum)


def _sensitivity(owner: str, value: Any) -> int | None:
    """An optional positive integer sensitivity (``None`` stays ``None``)."""
    if value is None:
        return None
    return check_int(value, f"{owner}: sensitivity", minimum=1)


def _repr_optional(event: DpEvent) -> str:
    """The dataclass repr without the optional fields left at ``None`` (events built
    without them print as before the fields existed)."""
    parts = [f"{f.name}={getattr(event, f.name)!r}" for f in dataclasses.fields(event)
             if not (f.default is None and getattr(event, f.name) is None)]
    return f"{type(event).__name__}({', '.join(parts)})"


def _relation(owner: str, value: Any) -> str | None:
    """An optional stated neighbouring relation (``None`` stays ``None``)."""
    if value is None or (isinstance(value, str) and value in RELATIONS):
        return value
    raise ValueError(
        f"{owner}: neighbouring must be None, {ADD_REMOVE!r} or {REPLACE_ONE!r}, got {value!r}"
    )


def _event(owner: str, name: str, value: Any) -> DpEvent:
    if not isinstance(value, DpEvent):
        raise TypeError(f"{owner}: {name} must be a DpEvent, got {type(value).__name__}")
    return value


def _set(obj: object, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


# --------------------------------------------------------------------------- base


@dataclasses.dataclass(frozen=True, repr=False)
class DpEvent:
    """Base class of all privacy events.

    :attr:`neighbouring` is the neighbouring relation the event's guarantee is stated for:
    :data:`ADD_REMOVE` or :data:`REPLACE_ONE` when the mechanism fixes it (sampling,
    randomized response) or the release that created the event computed the sensitivity
    under it (every release of :mod:`dpfast.tables`: add/remove one privacy id); ``None``
    when the guarantee holds for whichever relation the caller computed the sensitivity
    under (a mechanism given ``sensitivity=``).  The guarantee events and the noise events
    take it as an optional field ``neighbouring`` (:func:`with_neighbouring`).
    """

    def __repr__(self) -> str:
        return _repr_optional(self)

    @property
    def neighbouring(self) -> str | None:
        """The relation this event's guarantee is stated for (``None``: any)."""
        return None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-friendly ``dict`` (``{"type": ClassName, **fields}``).

        Nested events become nested dicts; :func:`from_dict` inverts this.  Optional
        fields left at ``None`` are omitted (records written before they existed read
        back unchanged, and events without them serialise as before).
        """
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None and f.default is None:
                continue  # an optional field left unset: the dict of older versions
            if isinstance(v, DpEvent):
                v = v.to_dict()
            elif isinstance(v, tuple):
                v = [e.to_dict() for e in v]
            out[f.name] = v
        return out


# --------------------------------------------------------------------------- relations


def _parts(event: DpEvent) -> list[tuple[str, Any]]:
    """The fields of ``event`` that hold events (an event or a tuple of events)."""
    out = []
    for f in dataclasses.fields(event):
        v = getattr(event, f.name)
        if isinstance(v, DpEvent) or (isinstance(v, tuple) and v
                                      and all(isinstance(e, DpEvent) for e in v)):
            out.append((f.name, v))
    return out


def relations_of(event: DpEvent) -> frozenset[str]:
    """The neighbouring relations that ``event`` or its parts fix (empty: any relation).

    An event that states a relation fixes it for everything inside it (the subsampling
    events: the event inside them refers to the subsample and is not inspected); an
    event that states none (``Composed``, ``SelfComposed``, a noise event without
    ``neighbouring``) fixes those of its parts.
    """
    rel = event.neighbouring
    if rel is not None:
        return frozenset((rel,))
    out: frozenset[str] = frozenset()
    for _, v in _parts(event):
        for e in (v if isinstance(v, tuple) else (v,)):
            out |= relations_of(e)
    return out


def with_neighbouring(event: DpEvent, relation: str) -> DpEvent:
    """``event`` with every part that states no relation stating ``relation``.

    Parts that already state ``relation`` are kept; a part that fixes the other relation
    raises ``ValueError`` (a release cannot be both).  Used by the releases that compute
    their own sensitivities (:mod:`dpfast.tables`) to say which neighbours those are.
    """
    if _relation("with_neighbouring", relation) is None:
        raise ValueError("with_neighbouring: relation must be 'add_remove' or 'replace_one', "
                         "got None")
    rel = event.neighbouring
    if rel is not None:
        if rel != relation:
            raise ValueError(f"with_neighbouring: {event!r} is stated for {rel!r} "
                             f"neighbours, not {relation!r}")
        return event
    names = {f.name for f in dataclasses.fields(event)}
    if "neighbouring" in names:
        return dataclasses.replace(event, neighbouring=relation)  # type: ignore[call-arg]
    changes: dict[str, Any] = {}
    for name, v in _parts(event):
        changes[name] = (tuple(with_neighbouring(e, relation) for e in v)
                         if isinstance(v, tuple) else with_neighbouring(v, relation))
    return dataclasses.replace(event, **changes) if changes else event
