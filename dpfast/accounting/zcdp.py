"""Zero-concentrated DP (zCDP, Bun & Steinke 2016): ``zcdp_rho`` and :class:`ZcdpAccountant`.

A mechanism is ``rho``-zCDP when ``D_alpha(M(x) || M(x')) <= rho * alpha`` for every
order ``alpha > 1`` and neighbouring ``x, x'``.  zCDP composes by adding ``rho``.  The
conversions to ``(epsilon, delta)`` (:func:`zcdp_epsilon`, :func:`zcdp_delta`) live in
:mod:`dpfast._core.conversions` and are re-exported here.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from dpfast._core.conversions import zcdp_delta, zcdp_epsilon
from dpfast._core.errors import UnsupportedEventError
from dpfast._core.rounding import exact_up, mul_up, sum_up

from . import events as ev
from .base import Accountant

__all__ = ["ZcdpAccountant", "zcdp_rho", "zcdp_epsilon", "zcdp_delta"]


def zcdp_rho(event: ev.DpEvent) -> float:
    """The ``rho`` such that ``event`` is ``rho``-zCDP (rounded up).

    Parameters
    ----------
    event : DpEvent

    Returns
    -------
    float

    Raises
    ------
    UnsupportedEventError
        For events without a zCDP guarantee: ``EpsilonDelta`` with ``delta > 0``,
        ``PoissonSampled`` / ``SampledWithoutReplacement`` (subsampling does not amplify
        zCDP in general; use :class:`~dpfast.accounting.RdpAccountant`).

    Privacy
    -------
    * Gaussian with ``noise_multiplier = s``: ``1 / (2 s^2)`` (Bun & Steinke 2016, Prop. 1.6).
    * Discrete Gaussian: the same ``1 / (2 s^2)`` (CKS20, Theorem 4).
    * Pure ``eps``-DP (Epsilon, Snapping, Laplace ``eps = 1/b``, discrete Laplace
      ``eps = 1/t``, randomized response): ``eps^2 / 2`` (Bun & Steinke 2016, Prop. 3.3).
    * Exponential mechanism: ``eps^2 / 8`` (Cesar & Rogers 2021, bounded range).
    * Composition adds ``rho`` (Bun & Steinke 2016, Lemma 2.3).
    """
    if not isinstance(event, ev.DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
    return _ACCOUNTANT._cost(event)


def _half_square(x: Fraction) -> float:
    return exact_up(float(x * x / 2), x * x / 2)


class ZcdpAccountant(Accountant):
    """zCDP accountant: composes ``rho`` additively (Bun & Steinke 2016, Lemma 2.3).

    Parameters
    ----------
    neighbouring : {None, "add_remove", "replace_one"}
        See :class:`~dpfast.accounting.Accountant`.  With ``"replace_one"`` an
        add/remove-one ``rho``-zCDP event counts as ``4 rho`` (group privacy of size two,
        Bun & Steinke 2016, Prop. 1.9).

    Privacy
    -------
    Valid under adaptive sequential composition; conversion to ``(epsilon, delta)``
    by CKS20 Corollary 13 (:func:`zcdp_epsilon`).

    Numerics
    --------
    The running sum is rounded up after every composition.
    """

    def __init__(self, *, neighbouring: str | None = None) -> None:
        super().__init__(neighbouring=neighbouring)
        self._rho = 0.0

    @property
    def rho(self) -> float:
        """Total ``rho`` so far."""
        return self._rho

    # ---------------------------------------------------------------- handlers

    def _zcdp(self, event: ev.Zcdp) -> float:
        return event.rho

    def _gaussian(self, event: Any) -> float:
        return _half_square(1 / Fraction(event.noise_multiplier))

    def _laplace(self, event: Any) -> float:
        return _half_square(1 / Fraction(event.noise_multiplier))

    def _pure(self, event: Any) -> float:
        return _half_square(Fraction(event.epsilon))

    def _exponential(self, event: ev.Exponential) -> float:
        e = Fraction(event.epsilon)
        return exact_up(float(e * e / 8), e * e / 8)

    def _epsilon_delta(self, event: ev.EpsilonDelta) -> float:
        if event.delta == 0.0:
            return _half_square(Fraction(event.epsilon))
        raise UnsupportedEventError(
            f"an (epsilon, delta)-DP event with delta > 0 has no zCDP guarantee: "
            f"{event!r}"
        )

    def _self_composed(self, event: ev.SelfComposed) -> float:
        inner = self._cost(event.event)
        return mul_up(event.count, inner) if event.count else 0.0

    def _composed(self, event: ev.Composed) -> float:
        return sum_up([self._cost(e) for e in event.events])

    def _sampled(self, event: Any) -> float:
        if isinstance(event, ev.PoissonSampled) and event.rate == 0.0:
            return 0.0
        if isinstance(event, ev.PoissonSampled) and event.rate == 1.0:
            return self._cost(event.event)
        raise UnsupportedEventError(
            f"subsampled events have no zCDP amplification; use RdpAccountant: "
            f"{event!r}"
        )

    def _to_replace_one(self, event: ev.DpEvent) -> ev.DpEvent:
        # group privacy of size k multiplies rho by k^2 (Bun & Steinke 2016, Prop. 1.9)
        return ev.Zcdp(mul_up(4.0, self._cost(event)))

    # ---------------------------------------------------------------- state

    def _add(self, cost: float, count: int) -> None:
        self._rho = sum_up([self._rho, mul_up(count, cost)])

    def get_epsilon(self, delta: float) -> float:
        """Smallest ``epsilon`` with ``(epsilon, delta)``-DP (CKS20 Cor. 13)."""
        return zcdp_epsilon(self._rho, delta)

    def get_delta(self, epsilon: float) -> float:
        """Smallest ``delta`` with ``(epsilon, delta)``-DP (CKS20 Cor. 13)."""
        return zcdp_delta(self._rho, epsilon)

    def __repr__(self) -> str:
        return f"ZcdpAccountant(rho={self._rho!r})"


ZcdpAccountant._HANDLERS = {
    ev.Zcdp: ZcdpAccountant._zcdp,
    ev.Gaussian: ZcdpAccountant._gaussian,
    ev.DiscreteGaussian: ZcdpAccountant._gaussian,
    ev.Laplace: ZcdpAccountant._laplace,
    ev.DiscreteLaplace: ZcdpAccountant._laplace,
    ev.Epsilon: ZcdpAccountant._pure,
    ev.Snapping: ZcdpAccountant._pure,
    ev.RandomizedResponse: ZcdpAccountant._pure,
    ev.Exponential: ZcdpAccountant._exponential,
    ev.EpsilonDelta: ZcdpAccountant._epsilon_delta,
    ev.SelfComposed: ZcdpAccountant._self_composed,
    ev.Composed: ZcdpAccountant._composed,
    ev.PoissonSampled: ZcdpAccountant._sampled,
    ev.SampledWithoutReplacement: ZcdpAccountant._sampled,
}

_ACCOUNTANT = ZcdpAccountant()  # stateless use of the handlers by zcdp_rho
