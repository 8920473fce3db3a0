"""Privacy spent as a person reads it: an ``(epsilon, delta)`` pair, whatever the event or
the accounting (the demo, the notebook views of releases, ``dpfast ledger show``).

An event with a pure or approximate-DP bound reads as its own ``(epsilon, delta)``; an
event with only a Renyi / zCDP bound (Gaussian noise, TopDown) reads as its RDP curve over
:data:`~dpfast.budget.DEFAULT_ORDERS` converted at a delta (CKS20 Prop. 12 through
:func:`dpfast.accounting.rdp.epsilon_from_rdp`), rounded up: the safe side.  The
accounting's own figures stay on the event and in the ledger (``--detail``).
"""

from __future__ import annotations

import math
from typing import Any

from ._format import down, up
from .costs import event_costs
from .rdp import DEFAULT_ORDERS, rdp_epsilon_delta

__all__ = ["DISPLAY_DELTA", "down", "event_epsilon_delta", "privacy_text", "up"]

#: The delta at which an event with no ``(epsilon, delta)`` bound of its own is shown when
#: no budget's delta is given.
DISPLAY_DELTA = 1e-6


def event_epsilon_delta(event: Any, delta: float | None = None) -> tuple[float, float]:
    """``(epsilon, delta)`` of ``event``: its own pure/approximate bound, else its RDP
    curve converted at ``delta`` (default :data:`DISPLAY_DELTA`), rounded up.  ``inf``
    epsilon: no bound (ValueError: the event has no bound this library can state)."""
    eps, dlt, _ = _epsilon_delta(event, delta)
    return eps, dlt


def _epsilon_delta(event: Any, delta: float | None) -> tuple[float, float, bool]:
    finite = [a for a in DEFAULT_ORDERS if math.isfinite(a)]
    curve, r_inf, dlt = event_costs(event, finite)
    if math.isfinite(r_inf):
        return r_inf, dlt, False
    at = DISPLAY_DELTA if delta is None or delta <= 0 else delta
    eps, dlt = rdp_epsilon_delta(finite, curve, at)
    return eps, dlt, True


def privacy_text(event: Any, delta: float | None = None) -> str:
    """``"(epsilon=0.5, delta=0)"`` for ``event`` (see :func:`event_epsilon_delta`); an
    event converted from RDP/zCDP says so."""
    try:
        eps, dlt, converted = _epsilon_delta(event, delta)
    except (ValueError, TypeError):
        return "no (epsilon, delta) bound"
    text = f"(epsilon={up(eps)}, delta={up(dlt, 3)})"
    return f"{text}, from its zCDP/RDP bound" if converted else text
