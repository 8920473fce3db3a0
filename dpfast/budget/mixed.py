r"""The mixed filter of a :class:`~dpfast.Budget` (``accounting="mixed"``): pure,
approximate and Gaussian (zCDP/RDP) releases in one fully adaptive ledger.

**Costs.**  An event is charged as three things (:func:`event_costs`): its RDP curve
:math:`r(\alpha)` at the filter's finite orders, its pure epsilon :math:`r(\infty)`
(``inf`` when it has none, e.g. a Gaussian), and its delta :math:`\delta_i`:

* a pure :math:`\varepsilon_i`-DP event (Laplace, exponential, ...): the smaller of its
  own RDP curve (:func:`dpfast.accounting.rdp.rdp_epsilons`) and the curve of binary
  randomized response of :math:`\varepsilon_i`, :math:`r(\infty)=\varepsilon_i`,
  :math:`\delta_i = 0`;
* an :math:`(\varepsilon_i, \delta_i)`-DP event with :math:`\delta_i > 0` (key
  selection): the RDP curve of pure :math:`\varepsilon_i`-DP,
  :math:`r(\infty)=\varepsilon_i`, and :math:`\delta_i`;
* a Gaussian / discrete Gaussian / zCDP event: its RDP curve,
  :math:`r(\infty)=\infty`, :math:`\delta_i=0`;
* a composition of events of different kinds: the sums of its parts' costs.

**The filter** runs in two phases.  *Phase 1* is basic composition: a charge is
accepted while :math:`\sum\varepsilon_i \le \varepsilon` and :math:`\sum\delta_i \le
\delta` (exactly :class:`~dpfast.budget.BasicFilter`).  The first charge that phase 1
cannot accept (a Gaussian, or a pure/approximate charge that overflows it) opens
*phase 2*, if phase 2 accepts it: with :math:`(E, D)` the sums of phase 1, phase 2 is
the approximate-RDP filter below for the remaining budget :math:`\varepsilon' =
\varepsilon - E`, :math:`\delta' = \delta - D` (both rounded down), fixed when it
opens.  Phase 2 splits :math:`\delta'` into :math:`\delta'_c = \delta'/2` for the
charges' own deltas and :math:`\delta'_r = \delta' - \delta'_c` for the conversion of
one RDP member: the order :math:`\alpha^*` of the filter's grid whose cap, per unit of
order, is largest (the best for Gaussian charges), chosen when phase 2 opens as a
function of :math:`(\varepsilon', \delta')` alone.  A phase-2 charge is accepted iff
:math:`\sum\delta_i \le \delta'_c` (phase-2 charges) and at least one *member* still
fits: the member :math:`\infty` with :math:`\sum r_i(\infty) \le \varepsilon'`, or
:math:`\alpha^*` with :math:`\sum r_i(\alpha^*) \le B_{\alpha^*}(\varepsilon',
\delta'_r)` (the cap of :class:`~dpfast.budget.RdpFilter`, CKS20 Prop. 12).

Privacy
-------
Neighbouring datasets :math:`x \sim x'` as stated by the events (one relation per
budget); every parameter and mechanism may be chosen fully adaptively.  The
transcript is :math:`(\varepsilon, \delta)`-DP.

*Phase 1 and phase 2 compose by basic composition.*  The phase-2 interaction as a
whole is one mechanism whose budget :math:`(\varepsilon', \delta')` is fixed, as a
function of the earlier outputs, before it runs; if it is
:math:`(\varepsilon', \delta')`-DP given the past (shown next), the phase-1 charges and
it form a basic-composition filter (Rogers, Roth, Ullman, Vadhan 2016, Thm. 3.6) with
:math:`E + \varepsilon' \le \varepsilon` and :math:`D + \delta' \le \delta`.  When
phase 2 never opens, the transcript is phase 1, a basic-composition filter.

*Phase 2 is* :math:`(\varepsilon', \delta'_c + \delta'_r)`-*DP.* Fix :math:`x \sim x'`
and a history :math:`h`. Step :math:`i` outputs :math:`P_i = M_i(x; h)` or :math:`Q_i =
M_i(x'; h)`, which are :math:`(\varepsilon_i, \delta_i)`-indistinguishable with
:math:`\varepsilon_i, \delta_i` functions of :math:`h`. By the simulation theorem of
Kairouz, Oh & Viswanath (2015) the pair is a post-processing :math:`T` of the pair of
:math:`(\varepsilon_i, \delta_i)` randomized response, whose two laws both put weight
:math:`\delta_i` on an output that reveals the dataset and are pure
:math:`\varepsilon_i`-RR otherwise; so :math:`P_i = (1-\delta_i) P'_i + \delta_i P''_i`
and :math:`Q_i = (1-\delta_i) Q'_i + \delta_i Q''_i` with the *same* weight, where
:math:`P'_i, Q'_i` are :math:`T` of binary :math:`\varepsilon_i`-RR. By data processing
:math:`D_\alpha(P'_i \| Q'_i)` is at most the RDP curve of binary
:math:`\varepsilon_i`-RR, :math:`r_i(\alpha)`, at every order (and :math:`D_\infty \le
\varepsilon_i`); a pure step has :math:`\delta_i = 0` (its own RDP curve also bounds
it), a Gaussian step has :math:`\delta_i = 0` and :math:`P'_i = P_i`. Call *good* the
interaction that draws every step from :math:`P'_i` (resp. :math:`Q'_i`) under the same
filter, :math:`\tilde P, \tilde Q` its transcript laws, and :math:`w(h) = \prod_i
(1-\delta_i(h))` over the accepted steps; the filter keeps :math:`\sum\delta_i \le
\delta'_c` on every path, so :math:`1 - w \le \delta'_c`. Drawing each step as the
mixture (a coin of bias :math:`\delta_i`, then :math:`P'_i` or :math:`P''_i`) gives, for
every set :math:`S`, :math:`\Pr[T(x) \in S] \le \mathbb{E}_{\tilde P}[w 1_S] + (1 -
\mathbb{E}_{\tilde P}[w]) \le \mathbb{E}_{\tilde P}[w 1_S] + \delta'_c` and
:math:`\mathbb{E}_{\tilde Q}[w 1_S] = \Pr[T(x') \in S,\ \text{no coin fell}] \le
\Pr[T(x') \in S]`. The good interaction is the filter of
:class:`~dpfast.budget.RdpFilter` over pure-RDP steps with two members (:math:`\infty`,
a basic-composition filter of pure steps, and :math:`\alpha^*`, a Renyi filter, Feldman
& Zrnic 2021; the extra stopping rule on the deltas is predictable), so by the argument
given there its hockey-stick divergence is at most :math:`\delta'_r + 0`; it holds for
the :math:`[0,1]`-valued test :math:`w 1_S` as for sets: :math:`\mathbb{E}_{\tilde P}[w
1_S] \le e^{\varepsilon'} \mathbb{E}_{\tilde Q}[w 1_S] + \delta'_r`. Together:
:math:`\Pr[T(x)\in S] \le e^{\varepsilon'} \Pr[T(x')\in S] + \delta'_r + \delta'_c`.
This is the approximate-RDP/zCDP filter of Whitehouse, Ramdas, Rogers, Wu (2023) with
the member :math:`\alpha = \infty` added.

*Tightness.*  On pure and approximate charges the filter accepts every prefix that
basic composition accepts (phase 1 is basic composition; phase 2 only adds).  On
Gaussian charges from a fresh budget it is the RDP filter of the default orders for
:math:`(\varepsilon, \delta/2)`: it accepts :math:`\sum\rho_i` up to
:math:`\rho_B(\varepsilon, \delta/2)`: at least 0.9 times the zCDP filter's
:math:`\rho_B(\varepsilon, \delta)` when :math:`\delta \le 10^{-5}` (0.92 to 0.97 for
:math:`\varepsilon \in [0.1, 8]`), at least 0.8 times up to :math:`\delta = 10^{-3}`
(``tests/test_budget_mixed.py``).  After phase 1 spent part of the budget, phase 2 uses
the order of its grid best for the rest, so a Gaussian still gets nearly the zCDP
filter's share of what is left.

Numerics
--------
Sums are exact (integers in units of :math:`2^{-1074}`); :math:`\varepsilon', \delta',
\delta'_c, \delta'_r` are rounded down, the caps at 200 bits and rounded down, costs
rounded up.

References
----------
Rogers, Roth, Ullman, Vadhan, "Privacy Odometers and Filters: Pay-as-you-Go
Composition", NeurIPS 2016.  Feldman & Zrnic, "Individual Privacy Accounting via a
Renyi Filter", NeurIPS 2021.  Whitehouse, Ramdas, Rogers, Wu, "Fully-Adaptive
Composition in Differential Privacy", ICML 2023.  Lecuyer, "Practical Privacy Filters
and Odometers with Renyi Differential Privacy", 2021.  Murtagh & Vadhan, "The
Complexity of Computing the Optimal Composition of Differential Privacy", TCC 2016.
Kairouz, Oh, Viswanath, "The Composition Theorem for Differential Privacy", ICML 2015.
Bun & Steinke, "Concentrated Differential Privacy", TCC 2016.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from dpfast._core.rounding import float_up as _float_up

from . import _exact
from .costs import event_costs
from .filters import Filter
from .rdp import DEFAULT_ORDERS, _caps, check_orders, default_orders
from .records import Cost

__all__ = ["MixedFilter", "MixedState", "event_costs"]


class MixedState:
    """Running totals: phase 1 (``e1``, ``d1``; ``inf1`` if infinite), whether phase 2 is
    open, and phase 2's sums per cost dimension (``values``, ``infinite``)."""

    __slots__ = ("e1", "d1", "inf1", "phase2", "values", "infinite")

    def __init__(self, dims: int) -> None:
        self.e1 = 0
        self.d1 = 0
        self.inf1 = False
        self.phase2 = False
        self.values = [0] * dims
        self.infinite = [False] * dims

    def copy(self) -> MixedState:
        new = MixedState(0)
        new.e1, new.d1, new.inf1, new.phase2 = self.e1, self.d1, self.inf1, self.phase2
        new.values, new.infinite = list(self.values), list(self.infinite)
        return new


class MixedFilter(Filter):
    r"""One budget for pure, approximate (key selection) and Gaussian/zCDP releases.

    Basic composition while it suffices, then an approximate-RDP filter with an
    :math:`\alpha=\infty` member on the remaining budget; fully adaptive.  The proof and
    the costs are in the docstring of :mod:`dpfast.budget.mixed`.

    Parameters
    ----------
    epsilon, delta : float
        The budget (``delta = 0``: pure DP; Gaussian releases then never fit).
    orders : sequence of float, optional
        The finite Renyi orders of phase 2 (``inf`` is always a member); default the
        order optimal for Gaussian charges under ``(epsilon, delta/2)``.

    Privacy
    -------
    The transcript of accepted releases is :math:`(\varepsilon, \delta)`-DP for the
    neighbouring relation of the events, under full adaptivity (basic composition of
    phase 1 with the approximate-RDP filter of phase 2: Rogers et al. 2016, Thm. 3.6;
    Whitehouse, Ramdas, Rogers, Wu 2023; Feldman & Zrnic 2021); see the module.
    """

    accounting = "mixed"
    needs_delta = False
    takes_orders = True

    def __init__(self, epsilon: float, delta: float,
                 orders: Sequence[float] | None = None) -> None:
        super().__init__(epsilon, delta)
        if orders is None:
            orders = DEFAULT_ORDERS
            if delta > 0:
                orders = tuple(sorted(set(orders) | {default_orders(epsilon, delta / 2)[0]}))
        given = check_orders(orders)
        self.orders = tuple(a for a in given if math.isfinite(a)) + (math.inf,)
        self._finite = self.orders[:-1]
        self._eps = _exact.exact(epsilon)
        self._delta = _exact.exact(delta)
        self._phase2: dict[tuple[int, int], tuple[list[int], int, float, float, float]] = {}
        caps, _, _, _, _ = self._phase2_caps(0, 0)
        self.thresholds = tuple(
            _exact.float_down(c) if c >= 0 else -math.inf for c in caps[:-1]
        ) + (epsilon, delta)

    def definition(self) -> dict[str, Any]:
        out = super().definition()
        out["orders"] = list(self.orders)
        return out

    # -- phase 2 ---------------------------------------------------------------

    def _phase2_caps(self, e1: int, d1: int) -> tuple[list[int], int, float, float, float]:
        """Limits of phase 2 opened after phase-1 sums ``(e1, d1)``: per finite order and
        for ``inf`` (units 2**-1074; -1 for a dead order), the charges' delta limit (units),
        ``epsilon'``, ``delta'`` and the conversion's delta ``delta'_r``."""
        key = (e1, d1)
        hit = self._phase2.get(key)
        if hit is not None:
            return hit
        eps2 = _exact.float_down(max(self._eps - e1, 0))
        dlt2 = _exact.float_down(max(self._delta - d1, 0))
        dc = _exact.float_down(_exact.exact(dlt2) // 2)
        dr = _exact.float_down(_exact.exact(dlt2) - _exact.exact(dc))
        # one live finite order: the one of the grid best for Gaussian charges under
        # (epsilon', delta'_r), a function of the budget alone, chosen before phase 2 runs
        limits = [-1] * len(self._finite)
        if eps2 > 0 and dr > 0 and self._finite:
            caps = [_caps(eps2, dr, (a,))[0] for a in self._finite]
            k = max(range(len(caps)), key=lambda i: caps[i] / self._finite[i])
            if caps[k] > 0:
                limits[k] = _exact.exact(caps[k])
        limits.append(_exact.exact(eps2))
        out = (limits, _exact.exact(dc), eps2, dlt2, dr)
        if len(self._phase2) > 256:
            self._phase2.clear()
        self._phase2[key] = out
        return out

    def _phase2_fits(self, state: MixedState, e1: int, d1: int, fresh: bool,
                     costs: Sequence[float]) -> bool:
        limits, dc, _, _, _ = self._phase2_caps(e1, d1)
        n = len(limits)
        dlt = costs[-1]
        if math.isinf(dlt):
            return False
        used_d = (0 if fresh else state.values[-1]) + _exact.exact(dlt)
        if used_d > dc:
            return False
        for k in range(n):
            c = costs[k]
            if math.isinf(c) or limits[k] < 0 or (not fresh and state.infinite[k]):
                continue
            if (0 if fresh else state.values[k]) + _exact.exact(c) <= limits[k]:
                return True
        return False

    def _phase1_fits(self, state: MixedState, costs: Sequence[float]) -> bool:
        e, d = costs[-2], costs[-1]
        if state.inf1 or math.isinf(e) or math.isinf(d):
            return False
        return (state.e1 + _exact.exact(e) <= self._eps
                and state.d1 + _exact.exact(d) <= self._delta)

    # -- the Filter interface -----------------------------------------------------

    def compute_costs(self, event: Any) -> tuple[float, ...]:
        r, r_inf, dlt = event_costs(event, self._finite)
        return (*r, r_inf, dlt)

    def new_state(self) -> MixedState:
        return MixedState(len(self.orders) + 1)

    def fits(self, state: MixedState, costs: Sequence[float]) -> bool:
        if not state.phase2:
            if self._phase1_fits(state, costs):
                return True
            return self._phase2_fits(state, state.e1, state.d1, True, costs)
        return self._phase2_fits(state, state.e1, state.d1, False, costs)

    def add(self, state: MixedState, costs: Sequence[float]) -> None:
        if not state.phase2 and self._phase1_fits(state, costs):
            state.e1 += _exact.exact(costs[-2])
            state.d1 += _exact.exact(costs[-1])
            return
        # phase 2 (opened now if needed): the rule add() follows is fits()'s, so a
        # ledger's rows rebuild the same state
        state.phase2 = True
        for k, c in enumerate(costs):
            if math.isinf(c):
                state.infinite[k] = True
            else:
                state.values[k] += _exact.exact(c)

    def row_costs(self, values: Sequence[Any]) -> tuple[float, ...]:
        costs = tuple(float(v) for v in values)
        if len(costs) != len(self.orders) + 1:
            raise ValueError(f"cost has {len(costs)} entries, the filter "
                             f"{len(self.orders) + 1}")
        for c in costs:
            if math.isnan(c) or c < 0:
                raise ValueError(f"invalid cost {c!r}")
        return costs

    def cost_record(self, costs: Sequence[float]) -> Cost:
        eps, dlt = self.epsilon_delta(costs)
        return Cost(epsilon=eps, delta=dlt, orders=self.orders, rdp=tuple(costs[:-1]))

    def epsilon_delta(self, costs: Sequence[float]) -> tuple[float, float]:
        """A pure or approximate charge's own ``(epsilon, delta)``; a Gaussian-type one's
        RDP curve converted at the budget's delta (rounded up; ``inf`` if none)."""
        from .rdp import rdp_epsilon_delta

        r_inf, dlt = costs[-2], costs[-1]
        if math.isfinite(r_inf):
            return r_inf, dlt
        return rdp_epsilon_delta(self._finite, costs[:len(self._finite)], self.delta)

    def detail(self, state: MixedState, costs: Sequence[float]) -> str:
        left = self.left(state)
        parts = [f"a={a:g}:{r:.4g}" for a, r in zip(self.orders, left["rdp"], strict=True)
                 if math.isfinite(r)]
        return (f"mixed accounting, phase {2 if state.phase2 else 1}; RDP left per live "
                f"order: {' '.join(parts) or 'none'}; delta left for charges "
                f"{left['delta']:.3g}")

    def _what(self, costs: Sequence[float]) -> str:
        r_inf, dlt = costs[-2], costs[-1]
        if math.isfinite(r_inf):
            return (f"epsilon={r_inf:.6g}" + (f", delta={dlt:.3g}" if dlt else "")
                    + " (basic composition)")
        rho = [c / a for c, a in zip(costs, self._finite, strict=False) if math.isfinite(c)]
        if rho:
            return f"a Gaussian-type release of zCDP rho about {min(rho):.6g}"
        return "an unbounded privacy loss"

    def refusal(self, state: MixedState, costs: Sequence[float]) -> str:
        left_eps = self.largest_pure_epsilon(state)
        sigma = self.smallest_gaussian_sigma(state)
        gauss = ("no Gaussian release fits any more" if not math.isfinite(sigma) else
                 f"a Gaussian release fits if its noise multiplier is at least {sigma:.6g}")
        hint = ""
        if self.delta == 0.0 and not math.isfinite(costs[-2]):
            hint = " (a Gaussian release needs a budget with delta > 0)"
        return (f"this release costs {self._what(costs)}, more than the budget "
                f"(epsilon={self.epsilon!r}, delta={self.delta!r}) has left: a next pure "
                f"release fits if its epsilon is at most {left_eps:.6g}; {gauss}{hint}")

    def spent(self, state: MixedState) -> Cost:
        from dpfast.accounting.rdp import epsilon_from_rdp

        e1 = Fraction(state.e1, 1 << _exact.UNIT_EXP)
        d1 = Fraction(state.d1, 1 << _exact.UNIT_EXP)
        totals = tuple(math.inf if state.infinite[k] else _exact.float_up(v)
                       for k, v in enumerate(state.values))
        if state.inf1:
            e2, d2 = math.inf, 0.0
        elif not state.phase2:
            e2, d2 = 0.0, 0.0
        else:
            _, _, _, _, dr_float = self._phase2_caps(state.e1, state.d1)
            charges_d = Fraction(totals[-1])
            best: tuple[float, Fraction] = (math.inf, Fraction(0))
            if math.isfinite(totals[-2]):
                best = (totals[-2], charges_d)
            dr = Fraction(dr_float)
            finite = [(a, t) for a, t in zip(self._finite, totals, strict=False)]
            if finite and dr > 0 and any(math.isfinite(t) for _, t in finite):
                conv, _ = epsilon_from_rdp([a for a, _ in finite], [t for _, t in finite],
                                           float(dr))
                if conv < best[0]:
                    best = (float(conv), charges_d + dr)
            e2, d2 = best[0], best[1]  # type: ignore[assignment]
        eps = math.inf if math.isinf(e2) else _float_up(e1 + Fraction(e2))
        dlt = _float_up(d1 + Fraction(d2))
        if eps > self.epsilon or dlt > self.delta:  # the filter's own guarantee holds
            eps, dlt = min(eps, self.epsilon), self.delta
        return Cost(epsilon=eps, delta=dlt, orders=self.orders, rdp=totals[:-1])

    def _delta_left(self, state: MixedState) -> float:
        if not state.phase2:
            return _exact.float_down(max(self._delta - state.d1, 0)) + 0.0
        _, dc, _, _, _ = self._phase2_caps(state.e1, state.d1)
        return _exact.float_down(max(dc - state.values[-1], 0)) + 0.0

    def left(self, state: MixedState) -> dict[str, Any]:
        limits, _, _, _, _ = self._phase2_caps(state.e1, state.d1)
        rdp = tuple(-math.inf if (lim < 0 or state.infinite[k]) else
                    _exact.float_down(lim - (state.values[k] if state.phase2 else 0)) + 0.0
                    for k, lim in enumerate(limits))
        return {"delta": self._delta_left(state), "orders": self.orders, "rdp": rdp}
