"""The fully adaptive advanced-composition filter of a :class:`~dpfast.Budget`
(``accounting="advanced"``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import mpmath

from dpfast._core.conversions import mp_fraction_up

from . import _exact
from .filters import Filter
from .records import Cost

__all__ = ["AdvancedFilter", "advanced_epsilon"]

_SQ = 2 * _exact.UNIT_EXP  # squares of doubles are integer multiples of 2**-2148


def advanced_epsilon(sum_sq: Fraction, delta_prime: float) -> mpmath.mpf:
    """``sqrt(2 log(1/delta') S) + S/2`` at 200 bits (the filter's privacy-loss bound)."""
    with mpmath.workprec(200):
        s = mpmath.mpf(sum_sq.numerator) / sum_sq.denominator
        return mpmath.sqrt(2 * mpmath.log(1 / mpmath.mpf(delta_prime)) * s) + s / 2


class _State:
    __slots__ = ("eps", "delta", "sq", "infinite")

    def __init__(self) -> None:
        self.eps = 0  # sum of epsilon_i, units 2**-1074
        self.delta = 0  # sum of delta_i, units 2**-1074
        self.sq = 0  # sum of epsilon_i**2, units 2**-2148
        self.infinite = False

    def copy(self) -> _State:
        new = _State()
        new.eps, new.delta, new.sq, new.infinite = self.eps, self.delta, self.sq, self.infinite
        return new


class AdvancedFilter(Filter):
    r"""Advanced composition as a privacy filter, valid for fully adaptive parameters.

    Costs: ``(epsilon_i, delta_i)`` from :func:`dpfast.accounting.pure.approx_dp`.  The
    budget's ``delta`` is split in two fixed halves: :math:`\delta' = \delta/2` for the
    concentration of the privacy loss and :math:`\delta'' = \delta/2` for the sum of
    the charges' own deltas.  ``delta`` must be ``> 0``.

    Privacy
    -------
    Members (a charge is accepted iff at least one still fits after it):

    * **advanced**: :math:`\sqrt{2\log(1/\delta')\sum_i \varepsilon_i^2} + \tfrac12
      \sum_i \varepsilon_i^2 \le \varepsilon` and :math:`\sum_i \delta_i \le
      \delta''`.  This is the advanced-composition filter of Whitehouse, Ramdas,
      Rogers & Wu (2023, "Fully-Adaptive Composition in Differential Privacy", ICML;
      their privacy filter for approximate DP, derived from their filter for
      approximate zCDP): if each mechanism is
      :math:`(\varepsilon_i, \delta_i)`-DP given the past, with
      :math:`\varepsilon_i, \delta_i` chosen adaptively, then the interaction stopped
      before the first charge that would break the condition is
      :math:`(\varepsilon, \delta' + \delta'')`-DP.  It improves the constants of the
      first such filter (Rogers, Roth, Ullman, Vadhan 2016, Theorem 5.1) to those of
      the non-adaptive advanced composition theorem.  *Proof sketch*: an
      :math:`(\varepsilon_i, \delta_i)`-DP mechanism is
      :math:`\delta_i`-approximately :math:`\varepsilon_i^2/2`-zCDP (Bun & Steinke
      2016, Prop. 3.3 and Def. 8.1); the zCDP filter is valid under full adaptivity
      (Whitehouse et al. 2023: the privacy-loss martingale is sub-Gaussian given the
      past, and Ville's inequality holds for a stopped supermartingale; Feldman &
      Zrnic 2021 for each Renyi order), so the stopped transcript is
      :math:`\delta''`-approximately :math:`\rho`-zCDP with :math:`\rho = \tfrac12
      \sum \varepsilon_i^2`, and :math:`\rho`-zCDP gives :math:`(\rho +
      2\sqrt{\rho\log(1/\delta')}, \delta')`-DP (Bun & Steinke 2016, Prop. 1.3),
      which is the left-hand side above.
    * **basic**: :math:`\sum_i \varepsilon_i \le \varepsilon` with every
      :math:`\delta_i = 0` (a basic-composition filter of pure charges, Rogers et al.
      2016; its privacy loss is at most :math:`\varepsilon` pointwise).  It makes the
      filter accept every prefix of pure charges that basic composition accepts (the
      advanced bound is worse than basic for a few large charges).

    The union is :math:`(\varepsilon, \delta)`-DP by the argument of
    :class:`~dpfast.budget.RdpFilter`: stopped at the last charge where it fits, each
    member is a valid filter; the last accepted charge is one of those stopping
    times, so the hockey-stick divergence of the whole transcript is at most the sum
    of the members', :math:`(\delta' + \delta'') + 0 = \delta`.

    Under ``(epsilon=1, delta=1e-6)`` it accepts 333 charges of ``epsilon=0.01``;
    basic composition accepts 100 (99 with the double 0.01, which exceeds 1/100).

    Numerics
    --------
    Sums of :math:`\varepsilon_i`, :math:`\delta_i` and :math:`\varepsilon_i^2` are kept
    exactly (integers in units of :math:`2^{-1074}` and :math:`2^{-2148}`).  The test
    is decided exactly: with :math:`S` the new sum of squares and
    :math:`A = \varepsilon - S/2`, accept iff :math:`A \ge 0` and :math:`A^2 \ge 2LS`,
    where :math:`L` is a rational upper bound on :math:`\log(1/\delta')` (mpmath, 200
    bits, rounded up).

    References
    ----------
    Whitehouse, Ramdas, Rogers, Wu, ICML 2023 (arXiv:2203.05481).  Rogers, Roth,
    Ullman, Vadhan, "Privacy Odometers and Filters: Pay-as-you-Go Composition",
    NeurIPS 2016.  Bun & Steinke, "Concentrated Differential Privacy", TCC 2016.
    Dwork, Rothblum, Vadhan, "Boosting and Differential Privacy", FOCS 2010.
    """

    accounting = "advanced"

    def __init__(self, epsilon: float, delta: float) -> None:
        super().__init__(epsilon, delta)
        if not delta > 0.0:
            raise ValueError("delta must be > 0 for accounting='advanced'")
        self.delta_prime = delta / 2  # exact: halving a double (delta >= 2**-1073 checked)
        if Fraction(self.delta_prime) * 2 != Fraction(delta):
            raise ValueError(f"delta={delta!r} is too small to split in two exactly")
        self.delta_charges = delta - self.delta_prime
        with mpmath.workprec(200):
            log_inv = mpmath.log(1 / mpmath.mpf(self.delta_prime))
        self._log_up = mp_fraction_up(log_inv)
        self._eps_sq = _exact.exact(epsilon) << _exact.UNIT_EXP  # epsilon in 2**-2148 units
        self._eps = _exact.exact(epsilon)
        self._delta2 = _exact.exact(self.delta_charges)
        self.thresholds = (epsilon, self.delta_charges)

    def compute_costs(self, event: Any) -> tuple[float, ...]:
        from dpfast.accounting.pure import approx_dp

        try:
            eps, dlt = approx_dp(event)
        except ValueError as exc:
            raise ValueError(
                f"{exc}; accounting='advanced' charges (epsilon, delta)-DP events only"
            ) from None
        return (float(eps), float(dlt))

    def new_state(self) -> _State:
        return _State()

    def add(self, state: _State, costs: Sequence[float]) -> None:
        eps, dlt = costs
        if math.isinf(eps) or math.isinf(dlt):
            state.infinite = True
            return
        e = _exact.exact(eps)
        state.eps += e
        state.delta += _exact.exact(dlt)
        state.sq += e * e

    def _advanced_ok(self, sq: int, delta: int) -> bool:
        if delta > self._delta2:
            return False
        d = 2 * self._eps_sq - sq  # 2 A in units of 2**-2148
        if d < 0:
            return False
        # A**2 >= 2 L S  <=>  d**2 / 4 >= 2 L sq 2**2148  (both sides in units 2**-4296)
        lq = self._log_up
        return d * d * lq.denominator >= 8 * lq.numerator * sq * (1 << _SQ)

    def fits(self, state: _State, costs: Sequence[float]) -> bool:
        eps, dlt = costs
        if state.infinite or math.isinf(eps) or math.isinf(dlt):
            return False
        e = _exact.exact(eps)
        dl = _exact.exact(dlt)
        if state.delta + dl == 0 and state.eps + e <= self._eps:
            return True  # the basic member
        return self._advanced_ok(state.sq + e * e, state.delta + dl)

    def cost_record(self, costs: Sequence[float]) -> Cost:
        return Cost(epsilon=costs[0], delta=costs[1])

    def refusal(self, state: _State, costs: Sequence[float]) -> str:
        sq = Fraction(state.sq, 1 << _SQ) + Fraction(costs[0]) ** 2
        bound = advanced_epsilon(sq, self.delta_prime)
        return (
            f"charge of (epsilon={costs[0]!r}, delta={costs[1]!r}) does not fit: the "
            f"advanced-composition bound would reach epsilon={float(bound):.6g} > "
            f"{self.epsilon!r} (sum of squared epsilons {float(sq):.6g}), and basic "
            "composition does not fit either"
        )

    def spent(self, state: _State) -> Cost:
        if state.infinite:
            return Cost(epsilon=math.inf, delta=1.0)
        basic = (_exact.float_up(state.eps), _exact.float_up(state.delta))
        bound = advanced_epsilon(Fraction(state.sq, 1 << _SQ), self.delta_prime)
        with mpmath.workprec(200):
            adv_eps = float(bound * (1 + mpmath.mpf(2) ** -100))
        if mpmath.mpf(adv_eps) < bound:
            adv_eps = math.nextafter(adv_eps, math.inf)
        adv_delta = self.delta_prime + basic[1]
        best = basic if basic[0] <= adv_eps else (adv_eps, adv_delta)
        if best[0] > self.epsilon:
            best = (self.epsilon, self.delta)
        return Cost(epsilon=best[0], delta=min(best[1], self.delta))

    def left(self, state: _State) -> dict[str, Any]:
        return {"delta": _exact.float_down(self._delta2 - state.delta) + 0.0, "rho": None}
