"""The zCDP filter of a :class:`~dpfast.Budget` (``accounting="zcdp"``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from dpfast._core.conversions import zcdp_cap

from . import _exact
from .filters import Filter, Sums
from .records import Cost

__all__ = ["ZcdpFilter"]


class ZcdpFilter(Filter):
    r"""A zCDP filter: the sum of the charges' rho stays below the budget's rho.

    Costs: ``(rho_i,)`` from :func:`dpfast.accounting.zcdp.zcdp_rho`.

    Privacy
    -------
    A charge of :math:`\rho_i`-zCDP is accepted iff :math:`\sum_i \rho_i \le \rho_B`,
    where :math:`\rho_B = \max_{\alpha>1} B_\alpha(\varepsilon,\delta)/\alpha` is the
    largest :math:`\rho` whose conversion by CKS20 Cor. 13 gives
    :math:`(\varepsilon,\delta)`-DP (evaluated at the optimising :math:`\alpha` and
    rounded down).  zCDP filters are valid under full adaptivity (Whitehouse, Ramdas,
    Rogers, Wu 2023; a Renyi filter at every order at once, Feldman & Zrnic 2021), so
    the transcript is :math:`\rho_B`-zCDP and hence :math:`(\varepsilon,\delta)`-DP.
    """

    accounting = "zcdp"

    def __init__(self, epsilon: float, delta: float) -> None:
        super().__init__(epsilon, delta)
        rho, self.alpha = zcdp_cap(epsilon, delta)
        self.thresholds = (rho,)
        self._limits = [_exact.exact(rho)]

    def compute_costs(self, event: Any) -> tuple[float, ...]:
        from dpfast.accounting.zcdp import zcdp_rho

        return (float(zcdp_rho(event)),)

    def new_state(self) -> Sums:
        return Sums(1)

    def add(self, state: Sums, costs: Sequence[float]) -> None:
        state.add(costs)

    def fits(self, state: Sums, costs: Sequence[float]) -> bool:
        return all(state.fits_each(costs, self._limits))

    def cost_record(self, costs: Sequence[float]) -> Cost:
        eps, dlt = self.epsilon_delta(costs)
        return Cost(epsilon=eps, delta=dlt, rho=costs[0])

    def epsilon_delta(self, costs: Sequence[float]) -> tuple[float, float]:
        """The charge's rho converted at the budget's delta (rounded up)."""
        from dpfast.accounting.zcdp import zcdp_epsilon

        rho = costs[0]
        if math.isinf(rho):
            return math.inf, self.delta
        return (float(zcdp_epsilon(rho, self.delta)) if rho > 0 else 0.0), \
            (self.delta if rho > 0 else 0.0)

    def refusal(self, state: Sums, costs: Sequence[float]) -> str:
        return self.plain_refusal(state, costs)

    def detail(self, state: Sums, costs: Sequence[float]) -> str:
        (rho,) = state.left(self._limits)
        return f"charge of rho={costs[0]!r} exceeds the remaining zCDP budget rho={rho!r}"

    def spent(self, state: Sums) -> Cost:
        from dpfast.accounting.zcdp import zcdp_epsilon

        (rho,) = state.totals()
        eps = zcdp_epsilon(rho, self.delta) if rho > 0 else 0.0
        return Cost(epsilon=min(eps, self.epsilon), delta=self.delta, rho=rho)

    def left(self, state: Sums) -> dict[str, Any]:
        (rho,) = state.left(self._limits)
        return {"rho": max(rho, 0.0) if not math.isinf(rho) else None}
