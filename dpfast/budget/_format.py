"""Numbers as a person reads them, rounded to the safe side: a cost or an epsilon spent
rounded up (:func:`up`), what is left rounded down (:func:`down`).

A leaf of :mod:`dpfast.budget` (the filters format their messages with it, and
:mod:`dpfast.budget.display` shows events with it); it imports nothing of dpfast.
"""

from __future__ import annotations

import decimal
import math

__all__ = ["down", "up"]


def _round(v: float | None, digits: int, rounding: str) -> str:
    if v is None:
        return "-"
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "unbounded" if v > 0 else "-inf"
    if v == 0:
        return "0"
    near = f"{v:.{digits}g}"
    if abs(float(near) - v) <= 4 * math.ulp(v):  # the number given (0.1), not its double
        return near
    d = decimal.Decimal(v)  # exact
    q = decimal.Decimal(1).scaleb(d.adjusted() - digits + 1)
    r = d.quantize(q, rounding=rounding)
    return f"{float(r):.{digits}g}"


def up(v: float | None, digits: int = 4) -> str:
    """``v`` with ``digits`` significant digits, rounded up (a cost, an epsilon spent:
    never shown below what it is); ``unbounded`` for ``inf``."""
    return _round(v, digits, decimal.ROUND_CEILING)


def down(v: float | None, digits: int = 4) -> str:
    """``v`` with ``digits`` significant digits, rounded down (what is left)."""
    return _round(v, digits, decimal.ROUND_FLOOR)
