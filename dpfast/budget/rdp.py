"""The Renyi filter of a :class:`~dpfast.Budget` (``accounting="rdp"``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import mpmath

from dpfast._core.conversions import mp_float_down, rdp_cap, zcdp_cap

from . import _exact
from .filters import Filter, Sums
from .records import Cost


def rdp_epsilon_delta(orders: Sequence[float], rdp: Sequence[float],
                      delta: float) -> tuple[float, float]:
    """``(epsilon, delta)`` of an RDP curve at ``delta`` (CKS20 Prop. 12 through
    :func:`dpfast.accounting.rdp.epsilon_from_rdp`, rounded up): ``(inf, delta)`` when no
    order gives a bound or ``delta`` is 0."""
    from dpfast.accounting.rdp import epsilon_from_rdp

    pairs = [(a, r) for a, r in zip(orders, rdp, strict=False) if math.isfinite(r)]
    if not pairs or delta <= 0:
        return math.inf, delta
    eps, _ = epsilon_from_rdp([a for a, _ in pairs], [r for _, r in pairs], delta)
    return float(eps), delta


__all__ = ["DEFAULT_ORDERS", "RdpFilter", "check_orders", "default_orders"]

#: A grid of Renyi orders for a multi-order filter (``Budget(..., orders=DEFAULT_ORDERS)``);
#: ``inf`` is the pure-DP member.  Orders whose cap is not positive for a budget are
#: dead: they take no share of delta and their costs are not computed (see
#: :class:`RdpFilter`).  The default filter (``orders=None``) is not this grid but the
#: single order that is optimal for Gaussian charges, plus ``inf``
#: (:func:`default_orders`): splitting delta over the orders of a grid costs
#: ``log(m) / (alpha - 1)`` at every order, more than a well-placed single order loses.
DEFAULT_ORDERS: tuple[float, ...] = (
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0,
    32.0, 48.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0, 1536.0,
    2048.0, 3072.0, 4096.0, math.inf,
)


def default_orders(epsilon: float, delta: float) -> tuple[float, ...]:
    """``(alpha*, inf)``: the order at which ``rho``-zCDP converts best to ``(epsilon,
    delta)``-DP (:func:`~dpfast._core.conversions.zcdp_cap`), and the pure-DP member."""
    if delta == 0.0:
        return (math.inf,)
    return (zcdp_cap(epsilon, delta)[1], math.inf)


def check_orders(orders: Any) -> tuple[float, ...]:
    """Validated, sorted orders (each ``> 1``; ``inf`` allowed)."""
    import numbers

    if isinstance(orders, (str, bytes)) or not hasattr(orders, "__iter__"):
        raise TypeError("orders must be a sequence of floats")
    out = []
    for a in list(orders):
        if isinstance(a, bool) or not isinstance(a, numbers.Real):
            raise TypeError(f"orders must be real numbers, got {type(a).__name__}")
        value = float(a)
        if not value > 1.0:
            raise ValueError(f"orders must be > 1 (inf allowed), got {a!r}")
        out.append(value)
    if not out:
        raise ValueError("orders must not be empty")
    if len(set(out)) != len(out):
        raise ValueError("orders must not repeat")
    return tuple(sorted(out))


def _caps(epsilon: float, delta: float, finite: Sequence[float]) -> list[float]:
    """Per finite order, ``B_alpha(epsilon, delta/m)`` rounded down, ``m`` the number of
    live orders: a first pass with all ``m`` finds the dead ones (cap <= 0), a second
    pass splits ``delta`` among the live ones only (their caps only grow)."""
    if not finite or delta == 0.0:
        return [-math.inf] * len(finite)
    with mpmath.workprec(200):
        first = [rdp_cap(epsilon, mpmath.mpf(delta) / len(finite), a) for a in finite]
        live = [b > 0 for b in first]
        m = sum(live)
        if m == 0:
            return [-math.inf] * len(finite)
        share = mpmath.mpf(delta) / m
        return [
            mp_float_down(rdp_cap(epsilon, share, a)) if ok else -math.inf
            for a, ok in zip(finite, live, strict=True)
        ]


class RdpFilter(Filter):
    r"""A Renyi filter over several orders, with a pure-DP member at order infinity.

    Costs: the event's RDP curve at the finite orders
    (:func:`dpfast.accounting.rdp.rdp_epsilons`) and, at ``inf``, its pure epsilon
    (:func:`dpfast.accounting.pure.approx_dp` when its delta is 0, else ``inf``).

    Parameters
    ----------
    epsilon, delta : float
        The budget (``delta > 0`` unless the orders are only ``inf``).
    orders : sequence of float, optional
        Default :func:`default_orders`: the single order :math:`\alpha^*` that is
        optimal for Gaussian charges, plus ``inf``.  With it the filter accepts at
        least every prefix of charges that the zCDP filter accepts (Gaussian and
        pure-DP charges cost at most :math:`\alpha^* \rho_i` at
        :math:`\alpha^*`, and its cap is :math:`\alpha^* \rho_B`; up to the
        accountants' rounding of costs, about :math:`10^{-15}` relative) and every
        prefix of pure-DP charges that basic composition accepts; on DP-SGD-style
        subsampled Gaussians it comes within a few percent of the offline optimum.
        :data:`DEFAULT_ORDERS` is a grid for a multi-order filter.

    Raises
    ------
    ValueError
        When no order can accept any charge (every cap is negative: the budget is
        born exhausted).

    Privacy
    -------
    Members: each finite order :math:`\alpha` whose cap below is positive ("live";
    :math:`m` of them), and the member :math:`\alpha=\infty`.  Live order
    :math:`\alpha` has the cap

    .. math:: B_\alpha = \varepsilon + \frac{\log(\delta/m) + \log\alpha}{\alpha-1}
              - \log(1 - 1/\alpha),

    the largest RDP value that CKS20 Prop. 12 converts to
    :math:`(\varepsilon, \delta/m)`-DP; the member :math:`\infty` has the cap
    :math:`\varepsilon` on the sum of the charges' pure epsilons (a charge with
    :math:`\delta_i > 0` or without a pure bound costs :math:`\infty` there).  A
    charge with costs :math:`r_i(\alpha)` is accepted iff **at least one** member
    still fits after it: :math:`\exists\alpha:\ \sum_{j\le i} r_j(\alpha) \le
    B_\alpha` (sums over accepted charges).  Costs are non-negative, so a member that
    stops fitting never fits again.  Dead orders (cap :math:`\le 0` when
    :math:`\delta` is split over all finite orders) never accept a charge of positive
    cost and take no share of :math:`\delta`; the split is a function of
    :math:`(\varepsilon, \delta, \text{orders})` alone, fixed before any charge.

    Validity under full adaptivity: for each member let :math:`\tau_\alpha` be the
    last accepted charge at which it still fits.  Stopped at :math:`\tau_\alpha`, the
    interaction is a filter of that member alone (a predictable stopping rule with
    :math:`\sum r_j(\alpha) \le B_\alpha` almost surely).  For a finite order it is a
    Renyi filter, so its transcript :math:`T_\alpha` is :math:`(\alpha,
    B_\alpha)`-RDP (Feldman & Zrnic 2021, Renyi filter theorem; Whitehouse et al.
    2023) and thus :math:`(\varepsilon, \delta/m)`-DP: its hockey-stick divergence
    :math:`\mathbb{E}_P[(1 - e^{\varepsilon - L_{\tau_\alpha}})_+]` (:math:`L` the
    privacy-loss random variable) is at most :math:`\delta/m`.  For
    :math:`\alpha=\infty` it is a basic-composition filter of pure charges, so its
    privacy loss is at most :math:`\sum \varepsilon_j \le \varepsilon` pointwise and
    that divergence is :math:`0`.  The last accepted charge is :math:`\tau_\alpha` for
    some member, so pointwise :math:`(1 - e^{\varepsilon - L_T})_+ \le \sum_\alpha (1 -
    e^{\varepsilon - L_{\tau_\alpha}})_+`; taking expectations, the whole transcript's
    hockey-stick divergence is at most :math:`m \cdot \delta/m + 0 = \delta`: it is
    :math:`(\varepsilon, \delta)`-DP.  This is why :math:`\delta` is split across the
    live orders: the decisive order is chosen adaptively, and a filter may not pick the
    best order after the fact without paying for the choice.

    Consequences: on pure-DP charges the filter accepts every prefix that basic
    composition accepts (the :math:`\infty` member alone does), and a budget is never
    born exhausted unless the orders exclude ``inf``.

    References
    ----------
    Feldman & Zrnic, "Individual Privacy Accounting via a Renyi Filter", NeurIPS 2021.
    Whitehouse, Ramdas, Rogers, Wu, "Fully-Adaptive Composition in Differential
    Privacy", ICML 2023.  Lecuyer, "Practical Privacy Filters and Odometers with Renyi
    Differential Privacy", 2021.  Canonne, Kamath, Steinke, "The Discrete Gaussian for
    Differential Privacy", NeurIPS 2020 (Prop. 12).
    """

    accounting = "rdp"
    takes_orders = True

    def __init__(
        self, epsilon: float, delta: float, orders: Sequence[float] | None = None
    ) -> None:
        super().__init__(epsilon, delta)
        self.orders = check_orders(default_orders(epsilon, delta) if orders is None else orders)
        self._finite = tuple(a for a in self.orders if math.isfinite(a))
        caps = _caps(epsilon, delta, self._finite)
        if math.isinf(self.orders[-1]):
            caps.append(epsilon)
        self.thresholds = tuple(caps)
        self.live = tuple(c >= 0 for c in caps)
        if not any(c > 0 for c in caps):
            raise ValueError(
                f"this rdp budget (epsilon={epsilon!r}, delta={delta!r}) is born exhausted: "
                f"no order of {self.orders!r} has a positive cap; add larger orders or "
                "inf (the pure-DP member), or raise epsilon or delta"
            )
        self._limits = [_exact.exact(c) if c >= 0 else -1 for c in caps]

    def definition(self) -> dict[str, Any]:
        out = super().definition()
        out["orders"] = list(self.orders)
        return out

    def compute_costs(self, event: Any) -> tuple[float, ...]:
        from dpfast.accounting.rdp import rdp_epsilons

        # dead orders never fit: their cost is not computed (stored as inf)
        live = [a for a, ok in zip(self._finite, self.live, strict=False) if ok]
        by_order: dict[float, float] = {}
        if live:
            try:
                by_order = dict(zip(live, (float(v) for v in rdp_epsilons(event, live)),
                                    strict=True))
            except ValueError:  # no RDP curve (e.g. (epsilon, delta) with delta > 0)
                by_order = {}
            except MemoryError:  # an accountant too costly at the highest orders
                for a in live:
                    try:
                        by_order[a] = float(rdp_epsilons(event, [a])[0])
                    except MemoryError:
                        by_order[a] = math.inf
        costs = [by_order.get(a, math.inf) for a in self._finite]
        if math.isinf(self.orders[-1]):
            from dpfast.accounting.pure import approx_dp

            try:
                eps, dlt = approx_dp(event)
                costs.append(float(eps) if dlt == 0.0 else math.inf)
            except ValueError:
                costs.append(math.inf)
        if not any(math.isfinite(c) for c in costs):
            raise ValueError(
                f"event {event!r} has no finite RDP bound at any order of this budget"
            )
        return tuple(costs)

    def new_state(self) -> Sums:
        return Sums(len(self.thresholds))

    def add(self, state: Sums, costs: Sequence[float]) -> None:
        state.add(costs)

    def fits(self, state: Sums, costs: Sequence[float]) -> bool:
        return any(state.fits_each(costs, self._limits))

    def cost_record(self, costs: Sequence[float]) -> Cost:
        eps, dlt = self.epsilon_delta(costs)
        return Cost(epsilon=eps, delta=dlt, orders=self.orders, rdp=tuple(costs))

    def epsilon_delta(self, costs: Sequence[float]) -> tuple[float, float]:
        """A pure charge's own epsilon (delta 0), else its RDP curve converted at the
        budget's delta (CKS20 Prop. 12, rounded up; ``inf`` without a bound)."""
        if math.isinf(self.orders[-1]) and math.isfinite(costs[-1]):
            return costs[-1], 0.0
        return rdp_epsilon_delta(self._finite, costs[:len(self._finite)], self.delta)

    def _left(self, state: Sums) -> tuple[float, ...]:
        left = state.left(self._limits)
        return tuple(r if ok else -math.inf for r, ok in zip(left, self.live, strict=True))

    def refusal(self, state: Sums, costs: Sequence[float]) -> str:
        return self.plain_refusal(state, costs)

    def detail(self, state: Sums, costs: Sequence[float]) -> str:
        left = self._left(state)
        slack = [r - c for r, c in zip(left, costs, strict=True)]
        k = max(range(len(slack)), key=slack.__getitem__)
        return (
            "charge exceeds the remaining RDP budget at every order; closest: "
            f"order {self.orders[k]!r} costs {costs[k]!r} with {left[k]!r} left"
        )

    def spent(self, state: Sums) -> Cost:
        from dpfast.accounting.rdp import epsilon_from_rdp

        totals = state.totals()
        best = (math.inf, self.delta)
        if math.isinf(self.orders[-1]) and math.isfinite(totals[-1]):
            best = (totals[-1], 0.0)  # basic composition of the pure charges
        finite = [(a, t) for a, t in zip(self.orders, totals, strict=False) if math.isfinite(a)]
        if finite and self.delta > 0:
            conv, _ = epsilon_from_rdp([a for a, _ in finite], [t for _, t in finite], self.delta)
            if conv < best[0]:
                best = (conv, self.delta)
        if best[0] > self.epsilon:  # the filter's own guarantee is never worse
            best = (self.epsilon, self.delta)
        return Cost(epsilon=best[0], delta=best[1], orders=self.orders, rdp=totals)

    def left(self, state: Sums) -> dict[str, Any]:
        return {"orders": self.orders, "rdp": self._left(state)}
