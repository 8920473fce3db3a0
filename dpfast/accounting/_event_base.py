"""The base of the privacy events: neighbouring relations, field checks and :class:`DpEvent`.

The concrete events live in :mod:`dpfast.accounting.events`, which re-exports everything
public here (import from there).  This module holds what every event shares: the two
neighbouring relations, the standard-library checks that validate and normalise an event's
fields on construction, and the :class:`DpEvent` base class with its ``to_dict``.  Like
the events it imports only the standard-library part of :mod:`dpfast._core`
(docs/design.md, "Layers").
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

from dpfast._core.validate import check_int, check_nonneg, check_positive, check_real

__all__ = ["ADD_REMOVE", "REPLACE_ONE", "RELATIONS", "DpEvent"]

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


def _event(owner: str, name: str, value: Any) -> DpEvent:
    if not isinstance(value, DpEvent):
        raise TypeError(f"{owner}: {name} must be a DpEvent, got {type(value).__name__}")
    return value


def _set(obj: object, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


# --------------------------------------------------------------------------- base


@dataclasses.dataclass(frozen=True)
class DpEvent:
    """Base class of all privacy events.

    :attr:`neighbouring` is the neighbouring relation the event's guarantee is stated for:
    ``None`` when the guarantee holds for whichever relation the sensitivity was computed
    under (every noise event), :data:`ADD_REMOVE` or :data:`REPLACE_ONE` when the
    mechanism fixes it (sampling, randomized response).
    """

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
