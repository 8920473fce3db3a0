"""Pure and approximate DP: ``approx_dp`` and :class:`PureDpAccountant` (basic composition)."""

from __future__ import annotations

import math
from typing import Any

from dpfast._core.errors import UnsupportedEventError
from dpfast._core.rounding import mul_up, recip_up, sum_up, up
from dpfast._core.validate import check_nonneg, check_probability

from . import events as ev
from .base import Accountant

__all__ = ["PureDpAccountant", "approx_dp"]


def _amplify(eps: float, delta: float, gamma: float) -> tuple[float, float]:
    """Amplification by subsampling: ``(log(1 + g (e^eps - 1)), g delta)``."""
    if gamma == 0.0:
        return 0.0, 0.0
    if gamma == 1.0:
        return eps, delta
    e = up(math.log1p(gamma * math.expm1(eps)), 4)
    return min(e, eps), min(mul_up(gamma, delta), delta)


def approx_dp(event: ev.DpEvent) -> tuple[float, float]:
    """``(epsilon, delta)`` guarantee of ``event`` (rounded up).

    Parameters
    ----------
    event : DpEvent

    Returns
    -------
    (epsilon, delta) : tuple of float

    Raises
    ------
    UnsupportedEventError
        For events whose guarantee needs a choice of ``delta`` (Gaussian, discrete
        Gaussian, zCDP): state them as :class:`~dpfast.accounting.events.EpsilonDelta`
        (e.g. via analytic Gaussian calibration) or use an RDP / zCDP accountant.

    Privacy
    -------
    * Epsilon / Snapping / Exponential / RandomizedResponse: ``(eps, 0)``.
    * Laplace ``b``: ``(1/b, 0)``; discrete Laplace ``t``: ``(1/t, 0)`` (sensitivity 1
      after scaling, CKS20 / Ghosh et al. 2009).
    * Poisson sampling with rate ``g`` (add/remove) and sampling ``m`` of ``n`` without
      replacement (replace one, ``g = m/n``): ``(log(1 + g(e^eps - 1)), g delta)``
      (Balle, Barthe & Gaboardi 2018, Table 1).
    * Composition: basic composition, sums of ``epsilon`` and of ``delta``
      (Dwork & Roth 2014, Thm. 3.16).
    """
    if not isinstance(event, ev.DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
    return _ACCOUNTANT._cost(event)


class PureDpAccountant(Accountant):
    """Basic composition of ``(epsilon, delta)`` guarantees.

    Parameters
    ----------
    neighbouring : {None, "add_remove", "replace_one"}
        See :class:`~dpfast.accounting.Accountant`.  With ``"replace_one"`` an
        add/remove-one ``(eps, delta)`` event counts as ``(2 eps, (1 + e^eps) delta)``
        (group privacy of size two).

    Privacy
    -------
    The adaptive composition of ``(eps_i, delta_i)``-DP mechanisms is
    ``(sum eps_i, sum delta_i)``-DP (Dwork & Roth 2014, Theorem 3.16).

    Numerics
    --------
    Totals are ``math.fsum`` of all terms, then one ulp up.
    """

    def __init__(self, *, neighbouring: str | None = None) -> None:
        super().__init__(neighbouring=neighbouring)
        self._eps: list[float] = []
        self._delta: list[float] = []

    # ---------------------------------------------------------------- handlers

    def _pure(self, event: Any) -> tuple[float, float]:
        return event.epsilon, 0.0

    def _epsilon_delta(self, event: ev.EpsilonDelta) -> tuple[float, float]:
        return event.epsilon, event.delta

    def _laplace(self, event: Any) -> tuple[float, float]:
        return recip_up(event.noise_multiplier), 0.0

    def _self_composed(self, event: ev.SelfComposed) -> tuple[float, float]:
        if event.count == 0:
            return 0.0, 0.0
        e, d = self._cost(event.event)
        return mul_up(event.count, e), min(1.0, mul_up(event.count, d))

    def _composed(self, event: ev.Composed) -> tuple[float, float]:
        parts = [self._cost(e) for e in event.events]
        return sum_up([p[0] for p in parts]), min(1.0, sum_up([p[1] for p in parts]))

    def _poisson(self, event: ev.PoissonSampled) -> tuple[float, float]:
        e, d = self._cost(event.event)
        return _amplify(e, d, event.rate)

    def _without_replacement(self, event: ev.SampledWithoutReplacement) -> tuple[float, float]:
        e, d = self._cost(event.event)
        return _amplify(e, d, event.sample_size / event.population)

    def _no_pure_bound(self, event: ev.DpEvent) -> tuple[float, float]:
        raise UnsupportedEventError(
            f"{type(event).__name__} has no pure-DP guarantee and its "
            "(epsilon, delta) depends on a choice of delta; state it as EpsilonDelta or use "
            "RdpAccountant / ZcdpAccountant"
        )

    def _to_replace_one(self, event: ev.DpEvent) -> ev.DpEvent:
        # group privacy, k = 2: (eps, delta) -> (2 eps, (1 + e^eps) delta)
        e, d = self._cost(event)
        e2 = mul_up(2.0, e)
        if d == 0.0:
            return ev.Epsilon(e2)
        d2 = min(1.0, mul_up(up(1.0 + math.exp(e), 4), d))
        if d2 >= 1.0:
            raise UnsupportedEventError(
                f"PureDpAccountant: the replace-one delta of {event!r} reaches 1"
            )
        return ev.EpsilonDelta(e2, d2)

    # ---------------------------------------------------------------- state

    @property
    def epsilon(self) -> float:
        """Total ``epsilon`` (rounded up)."""
        return sum_up(self._eps)

    @property
    def delta(self) -> float:
        """Total ``delta`` (rounded up, at most 1)."""
        return min(1.0, sum_up(self._delta))

    def _add(self, cost: tuple[float, float], count: int) -> None:
        e, d = cost
        self._eps.append(mul_up(count, e))
        self._delta.append(mul_up(count, d))

    def get_epsilon(self, delta: float = 1.0) -> float:
        """``epsilon`` if ``delta`` covers the composed ``delta``, else ``inf``."""
        d = check_probability(delta, "delta", zero=True, one=True)
        return self.epsilon if d >= self.delta else math.inf

    def get_delta(self, epsilon: float) -> float:
        """Composed ``delta`` if ``epsilon`` covers the composed ``epsilon``, else 1."""
        e = check_nonneg(epsilon, "epsilon", allow_inf=True)
        return self.delta if e >= self.epsilon else 1.0

    def __repr__(self) -> str:
        return f"PureDpAccountant(epsilon={self.epsilon!r}, delta={self.delta!r})"


PureDpAccountant._HANDLERS = {
    ev.Epsilon: PureDpAccountant._pure,
    ev.Snapping: PureDpAccountant._pure,
    ev.Exponential: PureDpAccountant._pure,
    ev.RandomizedResponse: PureDpAccountant._pure,
    ev.EpsilonDelta: PureDpAccountant._epsilon_delta,
    ev.Laplace: PureDpAccountant._laplace,
    ev.DiscreteLaplace: PureDpAccountant._laplace,
    ev.SelfComposed: PureDpAccountant._self_composed,
    ev.Composed: PureDpAccountant._composed,
    ev.PoissonSampled: PureDpAccountant._poisson,
    ev.SampledWithoutReplacement: PureDpAccountant._without_replacement,
    ev.Gaussian: PureDpAccountant._no_pure_bound,
    ev.DiscreteGaussian: PureDpAccountant._no_pure_bound,
    ev.Zcdp: PureDpAccountant._no_pure_bound,
}

_ACCOUNTANT = PureDpAccountant()  # stateless use of the handlers by approx_dp
