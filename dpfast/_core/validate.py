"""Argument checks shared by every layer (standard library only).

One signature for all of them: ``check_x(value, name, ...)``; each returns the normalised
value and raises ``TypeError`` (wrong kind) or ``ValueError`` (outside the domain) with a
message that names the parameter, e.g. ``"delta must lie in (0, 1), got 1.5"``.  ``bool``
(and numpy's bool) is never accepted as a number.  numpy scalars are accepted (they are
registered with :mod:`numbers`) without importing numpy (or :mod:`fractions`) here.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from fractions import Fraction

__all__ = [
    "check_real",
    "check_finite",
    "check_nonneg",
    "check_positive",
    "check_probability",
    "check_int",
    "check_whole",
    "check_exact",
    "check_exact_positive",
    "check_key",
    "check_size",
]


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool") and hasattr(
        value, "dtype"
    )


def check_real(value: Any, name: str) -> float:
    """``float(value)`` for a real, non-NaN number (``inf`` allowed)."""
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:  # a huge int or Fraction
        x = math.inf if cast(Any, value) > 0 else -math.inf
    if math.isnan(x):
        raise ValueError(f"{name} must not be NaN")
    return x


def check_finite(value: Any, name: str) -> float:
    """``float(value)`` for a finite real number."""
    x = check_real(value, name)
    if math.isinf(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return x


def check_nonneg(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """A real ``>= 0`` (finite unless ``allow_inf``)."""
    x = check_real(value, name)
    if x < 0 or (x == math.inf and not allow_inf):
        what = ">= 0" if allow_inf else "finite and >= 0"
        raise ValueError(f"{name} must be {what}, got {x!r}")
    return x


def check_positive(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """A real ``> 0`` (finite unless ``allow_inf``)."""
    x = check_real(value, name)
    if x <= 0 or (x == math.inf and not allow_inf):
        what = "> 0" if allow_inf else "finite and > 0"
        raise ValueError(f"{name} must be {what}, got {x!r}")
    return x


def check_probability(
    value: Any, name: str, *, zero: bool = False, one: bool = False
) -> float:
    """A real in ``(0, 1)``; ``zero`` / ``one`` include the end points."""
    x = check_real(value, name)
    ok_lo = x >= 0 if zero else x > 0
    ok_hi = x <= 1 if one else x < 1
    if not (ok_lo and ok_hi):
        interval = ("[" if zero else "(") + "0, 1" + ("]" if one else ")")
        raise ValueError(f"{name} must lie in {interval}, got {x!r}")
    return x


def check_int(value: Any, name: str, *, minimum: int | None = None) -> int:
    """A Python ``int`` from any integer (``operator.index``), optionally ``>= minimum``."""
    if _is_bool(value):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if minimum is not None and n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return int(n)


def check_whole(value: Any, name: str, *, minimum: int | None = None) -> int:
    """Like :func:`check_int`, but a whole float (``100.0``) is accepted too."""
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        if _is_bool(value):
            raise TypeError(f"{name} must be an integer, got bool")
        x = float(value)
        if not (math.isfinite(x) and x.is_integer()):
            raise ValueError(f"{name} must be a whole number, got {value!r}")
        value = int(x)
    return check_int(value, name, minimum=minimum)


def check_exact(value: Any, name: str) -> Fraction:
    """The exact rational a finite real encodes (ints and Fractions exactly)."""
    from fractions import Fraction  # lazily: the events import this module and stay light
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if isinstance(value, Fraction | numbers.Integral):
        return Fraction(value)
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return Fraction(x)


def check_exact_positive(value: Any, name: str) -> Fraction:
    """:func:`check_exact` and ``> 0``."""
    q = check_exact(value, name)
    if q <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return q


def check_key(key: Any, name: str = "key") -> bytes:
    """A 32-byte key (bytes, bytearray or memoryview)."""
    if isinstance(key, bytes | bytearray | memoryview):
        key = bytes(key)
    else:
        raise TypeError(f"{name} must be 32 bytes, got {type(key).__name__}")
    if len(key) != 32:
        raise ValueError(f"{name} must be exactly 32 bytes, got {len(key)}")
    return key


def check_size(size: Any, name: str = "size") -> tuple[int, ...]:
    """Normalise a numpy-style size (None, an int or a sequence of ints) to a shape."""
    if size is None:
        return ()
    if isinstance(size, Iterable) and not isinstance(size, str | bytes):
        shape = tuple(check_int(s, name) for s in size)
    else:
        shape = (check_int(size, name),)
    if any(s < 0 for s in shape):
        raise ValueError(f"{name} must be non-negative, got {size!r}")
    return shape
