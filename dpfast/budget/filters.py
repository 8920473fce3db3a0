"""Privacy filters: the rule that admits or refuses each charge of a :class:`~dpfast.Budget`.

A filter knows, for one accounting, how much an event costs (a tuple of floats,
stored in the ledger), how to keep the running totals exactly, whether a new charge
fits, and how to describe what is left.  The :class:`~dpfast.Budget` only composes a
filter with the ledger.  **Where to add a filter:** subclass :class:`Filter` in a new
module of this package (costs, state, fit test, what is left, the refusal text and a
*Privacy* section with the proof), register it in
:data:`dpfast.budget.registry.FILTERS`, and add a line for
its ledger definition in ``docs/design.md``.

This module holds the base class and :class:`BasicFilter`; :mod:`.zcdp`, :mod:`.rdp`
and :mod:`.advanced` hold the others.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, ClassVar

from dpfast._core.rounding import float_boundary
from dpfast.accounting import events as _events

from . import _exact
from ._format import down, up
from .costs import event_costs
from .records import Cost, Remaining

__all__ = ["Filter", "Sums", "BasicFilter"]


class Sums:
    """Exact running sums of non-negative float costs (integers in units of 2**-1074);
    a dimension that received ``inf`` is marked infinite."""

    __slots__ = ("values", "infinite")

    def __init__(self, dims: int) -> None:
        self.values = [0] * dims
        self.infinite = [False] * dims

    def copy(self) -> Sums:
        new = Sums(0)
        new.values = list(self.values)
        new.infinite = list(self.infinite)
        return new

    def add(self, costs: Sequence[float]) -> None:
        for k, c in enumerate(costs):
            if math.isinf(c):
                self.infinite[k] = True
            else:
                self.values[k] += _exact.exact(c)

    def fits_each(self, costs: Sequence[float], limits: Sequence[int]) -> list[bool]:
        """Per dimension: does the sum plus ``costs`` stay ``<=`` the limit?"""
        return [
            not (math.isinf(c) or self.infinite[k]) and self.values[k] + _exact.exact(c) <= lim
            for k, (c, lim) in enumerate(zip(costs, limits, strict=True))
        ]

    def left(self, limits: Sequence[int]) -> tuple[float, ...]:
        """Per dimension: limit minus sum, rounded down (``-inf`` if infinite; ``+ 0.0``
        turns a -0.0 into 0.0, which is what a person reads)."""
        return tuple(
            -math.inf if self.infinite[k] else _exact.float_down(lim - self.values[k]) + 0.0
            for k, lim in enumerate(limits)
        )

    def totals(self) -> tuple[float, ...]:
        """Per dimension: the sum, rounded up."""
        return tuple(
            math.inf if self.infinite[k] else _exact.float_up(v)
            for k, v in enumerate(self.values)
        )


def _largest_true(pred: Callable[[float], bool], lo: float, hi: float) -> float:
    """Largest double in ``[lo, hi)`` with ``pred`` true, given ``pred(lo)`` true, ``pred(hi)``
    false and ``pred`` monotone (true then false); bisection on the bit patterns."""
    return float_boundary(lambda x: not pred(x), lo, hi)[0]


class Filter(abc.ABC):
    """Base class of the privacy filters (one per accounting).

    Parameters
    ----------
    epsilon, delta : float
        The budget: the whole interaction is ``(epsilon, delta)``-DP.
    """

    accounting: ClassVar[str]
    #: Whether the filter needs ``delta > 0`` (it gives (epsilon, delta)-DP only then).
    needs_delta: ClassVar[bool] = True
    #: Whether the filter takes Renyi ``orders`` (part of its ledger definition).
    takes_orders: ClassVar[bool] = False

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self._cache: dict[Any, tuple[float, ...]] = {}

    # -- what a subclass defines --------------------------------------------

    #: The filter's caps in its own units (rounded down).
    thresholds: tuple[float, ...]

    def definition(self) -> dict[str, Any]:
        """The ledger definition: what a ledger stores and reopening must match."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "accounting": self.accounting,
            "orders": None,
        }

    @abc.abstractmethod
    def compute_costs(self, event: Any) -> tuple[float, ...]:
        """The event's cost tuple (ValueError if this accounting cannot charge it)."""

    @abc.abstractmethod
    def new_state(self) -> Any:
        """Running totals of no charge."""

    @abc.abstractmethod
    def add(self, state: Any, costs: Sequence[float]) -> None:
        """Add one accepted charge to ``state`` (exactly)."""

    @abc.abstractmethod
    def fits(self, state: Any, costs: Sequence[float]) -> bool:
        """Would a charge of ``costs`` be accepted after the charges in ``state``?"""

    @abc.abstractmethod
    def cost_record(self, costs: Sequence[float]) -> Cost:
        """The :class:`Cost` of one charge."""

    @abc.abstractmethod
    def refusal(self, state: Any, costs: Sequence[float]) -> str:
        """Why a charge of ``costs`` does not fit (one sentence with numbers)."""

    @abc.abstractmethod
    def spent(self, state: Any) -> Cost:
        """The totals so far, with the ``(epsilon, delta)`` the accounting certifies."""

    @abc.abstractmethod
    def left(self, state: Any) -> dict[str, Any]:
        """Mode-specific fields of :class:`Remaining` (``delta``, ``orders``, ``rdp``...)."""

    def epsilon_delta(self, costs: Sequence[float]) -> tuple[float, float]:
        """The ``(epsilon, delta)`` of one charge of ``costs`` on its own, as a person reads
        it: the event's own guarantee where it has one, else the accounting's figures
        converted at the budget's delta (rounded up; ``inf`` when there is no bound).
        The base reads :meth:`cost_record`."""
        rec = self.cost_record(costs)
        if rec.epsilon is None:
            return math.inf, self.delta
        return rec.epsilon, rec.delta or 0.0

    def detail(self, state: Any, costs: Sequence[float]) -> str:
        """The accounting's own figures of a refusal (``""``: the message says it all)."""
        return ""

    def plain_refusal(self, state: Any, costs: Sequence[float]) -> str:
        """A refusal in ``(epsilon, delta)`` terms, whatever the accounting: what the
        release costs, what was spent, what a next release may still cost."""
        eps, dlt = self.epsilon_delta(costs)
        spent = self.spent(state)
        left = self.largest_pure_epsilon(state)
        sigma = self.smallest_gaussian_sigma(state)
        gauss = ("" if not math.isfinite(sigma) else
                 f"; a Gaussian release fits if its noise multiplier is at least {up(sigma, 6)}")
        return (f"this release costs (epsilon={up(eps, 6)}, delta={up(dlt, 3)}), more than "
                f"the budget (epsilon={self.epsilon!r}, delta={self.delta!r}) has left: spent "
                f"(epsilon={up(spent.epsilon, 6)}, delta={up(spent.delta or 0.0, 3)}); a next "
                f"pure release fits if its epsilon is at most {down(left, 6)}{gauss}")

    # -- shared ----------------------------------------------------------------

    def costs(self, event: Any) -> tuple[float, ...]:
        """:meth:`compute_costs`, validated and cached (events are frozen and hashable)."""
        try:
            return self._cache[event]
        except KeyError:
            pass
        except TypeError:  # an unhashable field: compute every time
            return self._checked(event)
        costs = self._checked(event)
        if len(self._cache) >= 1024:
            self._cache.clear()
        self._cache[event] = costs
        return costs

    def _checked(self, event: Any) -> tuple[float, ...]:
        try:
            raw = self.compute_costs(event)
        except ValueError as exc:
            raise ValueError(self._cannot_charge(event, str(exc))) from None
        costs = tuple(float(c) for c in raw)
        for c in costs:
            if math.isnan(c) or c < 0:
                raise ValueError(f"the accountant returned an invalid cost {c!r} for {event!r}")
        return costs

    def _cannot_charge(self, event: Any, why: str) -> str:
        """Why this accounting cannot charge ``event``, naming the accounting that can
        (``"mixed"`` charges pure, approximate and Gaussian/zCDP events alike)."""
        if self.accounting == "mixed":
            return why
        try:
            _, r_inf, _ = event_costs(event, (2.0, 32.0))
        except (ValueError, TypeError, MemoryError):
            return why  # no accounting of this library charges it
        if not math.isfinite(r_inf) and self.delta == 0.0:
            return (f"{why}. This budget has delta=0 (pure DP); a budget with delta > 0 "
                    "charges it: Budget(epsilon, delta) (accounting='mixed', the default "
                    "with delta > 0)")
        return (f"{why}. accounting={self.accounting!r} cannot charge this release; "
                "accounting='mixed' charges it (the default of Budget(epsilon, delta) with "
                "delta > 0: pure, (epsilon, delta) and Gaussian/zCDP releases in one budget)")

    def row_costs(self, values: Sequence[Any]) -> tuple[float, ...]:
        """Costs as stored in a ledger row, checked (ValueError when damaged)."""
        costs = tuple(float(v) for v in values)
        if len(costs) != len(self.thresholds):
            raise ValueError(f"cost has {len(costs)} entries, the filter {len(self.thresholds)}")
        for c in costs:
            if math.isnan(c) or c < 0:
                raise ValueError(f"invalid cost {c!r}")
        return costs

    def largest_pure_epsilon(self, state: Any) -> float:
        """Largest ``e`` such that a charge of ``events.Epsilon(e)`` fits now (0.0 if none)."""

        def ok(e: float) -> bool:
            return self.fits(state, self._checked(_events.Epsilon(e)))

        if not ok(0.0):
            return 0.0
        hi = max(self.epsilon, 2.0**-1000)
        while ok(hi):
            if hi > 1e300:
                return hi
            hi *= 2.0
        return _largest_true(ok, 0.0, hi)

    def smallest_gaussian_sigma(self, state: Any) -> float:
        """Smallest noise multiplier ``s`` such that ``events.Gaussian(s)`` fits (inf if none)."""

        def ok(s: float) -> bool:
            return self.fits(state, self._checked(_events.Gaussian(s)))

        try:
            if not ok(1e150):
                return math.inf
        except ValueError:  # this accounting cannot charge a Gaussian
            return math.inf
        lo = 1.0
        while ok(lo):
            if lo < 1e-150:
                return lo
            lo /= 2.0
        hi = lo
        while not ok(hi):
            hi *= 2.0
        return float_boundary(ok, lo, hi)[1]  # the smallest true in (lo, hi]

    def remaining(self, state: Any) -> Remaining:
        """What is left (see :class:`Remaining`)."""
        eps = self.largest_pure_epsilon(state)
        sigma = self.smallest_gaussian_sigma(state)
        rho = None
        if math.isfinite(sigma):
            s = Fraction(sigma)
            rho = _exact.float_down(int(Fraction(1) / (2 * s * s) * (1 << _exact.UNIT_EXP)))
        fields: dict[str, Any] = {"delta": self.delta, "rho": rho}
        fields.update(self.left(state))
        exhausted = not self.fits(state, self._checked(_events.Epsilon(5e-324)))
        return Remaining(
            accounting=self.accounting,
            epsilon=eps,
            sigma=sigma,
            exhausted=exhausted,
            **fields,
        )


class BasicFilter(Filter):
    r"""Basic composition: sums of epsilons and of deltas.

    Costs: ``(epsilon_i, delta_i)`` from :func:`dpfast.accounting.pure.approx_dp`.

    Privacy
    -------
    A charge is accepted iff :math:`\sum_i \varepsilon_i \le \varepsilon` and
    :math:`\sum_i \delta_i \le \delta` over the accepted charges including it.  Basic
    composition remains valid as a filter when the mechanisms and their parameters are
    chosen fully adaptively (Rogers, Roth, Ullman, Vadhan 2016, Theorem 3.6): the
    transcript is :math:`(\varepsilon, \delta)`-DP.  With :math:`\delta = 0` it is pure
    :math:`\varepsilon`-DP: the privacy loss of each step is bounded by its
    :math:`\varepsilon_i` pointwise, so the total is bounded by the sum pointwise.
    """

    accounting = "basic"
    needs_delta = False

    def __init__(self, epsilon: float, delta: float) -> None:
        super().__init__(epsilon, delta)
        self.thresholds = (epsilon, delta)
        self._limits = [_exact.exact(epsilon), _exact.exact(delta)]

    def compute_costs(self, event: Any) -> tuple[float, ...]:
        from dpfast.accounting.pure import approx_dp

        eps, dlt = approx_dp(event)
        return (float(eps), float(dlt))

    def new_state(self) -> Sums:
        return Sums(2)

    def add(self, state: Sums, costs: Sequence[float]) -> None:
        state.add(costs)

    def fits(self, state: Sums, costs: Sequence[float]) -> bool:
        return all(state.fits_each(costs, self._limits))

    def cost_record(self, costs: Sequence[float]) -> Cost:
        return Cost(epsilon=costs[0], delta=costs[1])

    def refusal(self, state: Sums, costs: Sequence[float]) -> str:
        eps, dlt = state.left(self._limits)
        return (
            f"charge of (epsilon={costs[0]!r}, delta={costs[1]!r}) exceeds the "
            f"remaining budget (epsilon={eps!r}, delta={dlt!r})"
        )

    def spent(self, state: Sums) -> Cost:
        eps, dlt = state.totals()
        return Cost(epsilon=eps, delta=dlt)

    def left(self, state: Sums) -> dict[str, Any]:
        return {"delta": state.left(self._limits)[1], "rho": None}
