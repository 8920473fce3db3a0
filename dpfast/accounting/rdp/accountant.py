"""The Rényi-DP accountant (one dispatch table over the event types)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from dpfast._core.conversions import rdp_to_delta, rdp_to_epsilon
from dpfast._core.conversions import up_array as _up
from dpfast._core.rounding import ULP as _ULP
from dpfast._core.validate import check_nonneg, check_probability

from .. import events as ev
from ..base import Accountant
from .curves import _CURVES
from .orders import _as_orders, _orders_info

__all__ = ["RdpAccountant"]

# the cost of an event: its RDP curve, plus (epsilon, delta) parts that have none
_Cost = tuple[np.ndarray, tuple[tuple[float, float], ...]]


class RdpAccountant(Accountant):
    """Rényi-DP accountant (Mironov 2017) with the tight CKS20 conversion.

    Parameters
    ----------
    orders : sequence of float, optional
        RDP orders (> 1).  Default :data:`DEFAULT_ORDERS` (dp_accounting's grid).
    neighbouring : {None, "add_remove", "replace_one"}
        See :class:`~dpfast.accounting.Accountant`.  RDP curves of add/remove-one events
        are not converted to replace-one (that raises
        :class:`~dpfast.NeighbouringRelationError`).

    Notes
    -----
    Events with an RDP curve (see :func:`rdp_epsilons`) are added order by order.
    ``EpsilonDelta`` events with ``delta > 0`` (at the top level, or inside
    ``Composed`` / ``SelfComposed``) have no RDP curve; they are kept aside and
    combined with the RDP part by basic composition:
    ``epsilon = eps_rdp(delta - sum delta_i) + sum eps_i``.

    Privacy
    -------
    Valid under adaptive sequential composition (Mironov 2017, Prop. 1); the
    neighbouring relation is that of the composed events.

    Examples
    --------
    >>> from dpfast.accounting import RdpAccountant, events as ev
    >>> acct = RdpAccountant().compose(ev.PoissonSampled(ev.Gaussian(1.1), 0.01), 1000)
    >>> round(acct.get_epsilon(1e-5), 3)  # doctest: +SKIP
    """

    def __init__(
        self, orders: Iterable[float] | None = None, *, neighbouring: str | None = None
    ) -> None:
        super().__init__(neighbouring=neighbouring)
        self._info = _orders_info(_as_orders(orders))
        self._rdp = np.zeros_like(self._info.alphas)
        self._approx_eps: list[float] = []
        self._approx_delta: list[float] = []

    @property
    def orders(self) -> np.ndarray:
        """The RDP orders (a copy)."""
        return self._info.alphas.copy()

    @property
    def rdp(self) -> np.ndarray:
        """The composed RDP curve (a copy)."""
        return self._rdp.copy()

    # ---------------------------------------------------------------- handlers

    def _epsilon_delta(self, event: ev.EpsilonDelta) -> _Cost:
        if event.delta == 0.0:
            return _CURVES[ev.Epsilon](ev.Epsilon(event.epsilon), self._info), ()
        return np.zeros_like(self._info.alphas), ((event.epsilon, event.delta),)

    def _self_composed(self, event: ev.SelfComposed) -> _Cost:
        c = event.count
        if c == 0:
            return np.zeros_like(self._info.alphas), ()
        curve, approx = self._cost(event.event)
        scaled = tuple(
            (float(_up(c * e, 2 * _ULP)), float(_up(c * d, 2 * _ULP))) for e, d in approx
        )
        return _up(c * curve, 2 * _ULP), scaled

    def _composed(self, event: ev.Composed) -> _Cost:
        tot = np.zeros_like(self._info.alphas)
        approx: list[tuple[float, float]] = []
        for e in event.events:
            curve, parts = self._cost(e)
            tot = _up(tot + curve, 2 * _ULP)
            approx.extend(parts)
        return tot, tuple(approx)

    # ---------------------------------------------------------------- state

    def _add(self, cost: _Cost, count: int) -> None:
        curve, approx = cost
        self._rdp = _up(self._rdp + _up(count * curve, 2 * _ULP), 2 * _ULP)
        for e, d in approx:
            self._approx_eps.append(float(_up(count * e, 2 * _ULP)))
            self._approx_delta.append(float(_up(count * d, 2 * _ULP)))

    def _approx_totals(self) -> tuple[float, float]:
        if not self._approx_eps:
            return 0.0, 0.0
        e = float(_up(math.fsum(self._approx_eps), 2 * _ULP))
        d = float(_up(math.fsum(self._approx_delta), 2 * _ULP))
        return e, d

    def get_epsilon_and_order(self, delta: float) -> tuple[float, float]:
        """``(epsilon, optimal order)`` for the target ``delta`` (CKS20 Prop. 12)."""
        d = check_probability(delta, "delta", zero=True, one=True)
        ea, da = self._approx_totals()
        if da > 0.0:
            if d <= da:
                return math.inf, math.nan
            d = float(np.nextafter((d - da) * (1 - 2 * _ULP), 0.0))
        e, order = rdp_to_epsilon(self._info.alphas, self._rdp, d)
        if ea:
            e = float(_up(e + ea, 2 * _ULP))
        return e, order

    def get_epsilon(self, delta: float) -> float:
        """Smallest ``epsilon`` such that everything composed is ``(epsilon, delta)``-DP."""
        return self.get_epsilon_and_order(delta)[0]

    def get_delta(self, epsilon: float) -> float:
        """Smallest ``delta`` such that everything composed is ``(epsilon, delta)``-DP."""
        e = check_nonneg(epsilon, "epsilon", allow_inf=True)
        ea, da = self._approx_totals()
        if e < ea:
            return 1.0
        if ea:
            e = float(np.nextafter((e - ea) * (1 - 2 * _ULP), 0.0))
        d, _ = rdp_to_delta(self._info.alphas, self._rdp, max(e, 0.0))
        return min(1.0, float(_up(d + da, 2 * _ULP))) if da else d

    def __repr__(self) -> str:
        return f"RdpAccountant(orders={len(self._info.orders)} orders)"


def _leaf(curve: Callable[[Any, Any], np.ndarray]) -> Callable[[RdpAccountant, Any], _Cost]:
    def handler(self: RdpAccountant, event: Any) -> _Cost:
        return curve(event, self._info), ()

    return handler


RdpAccountant._HANDLERS = {
    **{cls: _leaf(fn) for cls, fn in _CURVES.items()},
    ev.EpsilonDelta: RdpAccountant._epsilon_delta,
    ev.SelfComposed: RdpAccountant._self_composed,
    ev.Composed: RdpAccountant._composed,
}
