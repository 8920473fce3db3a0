"""What an event costs a budget: its RDP curve at given orders, its pure epsilon and its
delta (:func:`event_costs`), all rounded up.

The one conversion of an event into costs, shared by the mixed filter
(:mod:`dpfast.budget.mixed`, which charges them), the filters' messages (which accounting
could charge an event) and :mod:`dpfast.budget.display` (an event as ``(epsilon,
delta)``).  A leaf of :mod:`dpfast.budget`: it imports the accounting, never a filter.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpfast._core.rounding import float_up as _float_up
from dpfast.accounting import events as _events

__all__ = ["event_costs"]


def _up_sum(values: Sequence[float]) -> float:
    if any(math.isinf(v) for v in values):
        return math.inf
    return _float_up(sum((Fraction(v) for v in values), Fraction(0)))


def event_costs(event: Any, finite: Sequence[float]) -> tuple[list[float], float, float]:
    """``(r, r_inf, delta)`` of ``event``: its RDP bound at each order of ``finite``, its
    pure epsilon (``inf`` if none) and its delta (all rounded up; see the module)."""
    from dpfast.accounting.pure import approx_dp
    from dpfast.accounting.rdp import rdp_epsilons

    bound: tuple[float, float] | None
    try:
        e0, d0 = approx_dp(event)
        bound = (float(e0), float(d0))
    except ValueError:
        bound = None
    rdp: list[float] | None = None
    if finite:
        try:
            rdp = [float(v) for v in rdp_epsilons(event, list(finite))]
        except (ValueError, MemoryError):
            rdp = None
        if rdp is not None and all(math.isinf(v) for v in rdp):
            rdp = None
    if bound is not None:
        eps, dlt = bound
        pure = [float(v) for v in rdp_epsilons(_events.Epsilon(eps), list(finite))] \
            if finite else []
        curve = pure if (dlt or rdp is None) else [min(a, b) for a, b in
                                                   zip(rdp, pure, strict=True)]
        return curve, eps, dlt
    if rdp is not None:
        return rdp, math.inf, 0.0
    if isinstance(event, _events.Composed):
        parts = [event_costs(e, finite) for e in event.events]
        r = [_up_sum([p[0][k] for p in parts]) for k in range(len(finite))]
        return (r, _up_sum([p[1] for p in parts]), min(1.0, _up_sum([p[2] for p in parts])))
    if isinstance(event, _events.SelfComposed):
        if event.count == 0:
            return [0.0] * len(finite), 0.0, 0.0
        r, ri, d = event_costs(event.event, finite)
        n = event.count

        def times(v: float) -> float:
            return math.inf if math.isinf(v) else _float_up(Fraction(v) * n)

        return [times(v) for v in r], times(ri), min(1.0, times(d))
    raise ValueError(
        f"this release's privacy guarantee ({type(event).__name__}) has neither a pure or "
        "(epsilon, delta)-DP bound nor a Renyi/zCDP bound, so no budget can charge it"
    )
