"""Pure and approximate DP: ``approx_dp`` and :class:`PureDpAccountant` (basic composition)."""

from __future__ import annotations

import math

import numpy as np

from . import events as ev
from ._rounding import mul_up as _mul_up
from ._rounding import recip_up as _recip_up
from ._rounding import sum_up as _sum_up
from ._rounding import up as _up

__all__ = ["PureDpAccountant", "approx_dp"]

def _amplify(eps: float, delta: float, gamma: float) -> tuple[float, float]:
    """Amplification by subsampling: ``(log(1 + g (e^eps - 1)), g delta)``."""
    if gamma == 0.0:
        return 0.0, 0.0
    if gamma == 1.0:
        return eps, delta
    e = _up(math.log1p(gamma * math.expm1(eps)), 4)
    return min(e, eps), min(_mul_up(gamma, delta), delta)


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
    ValueError
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
    if isinstance(event, ev.Epsilon | ev.Snapping | ev.Exponential | ev.RandomizedResponse):
        return event.epsilon, 0.0
    if isinstance(event, ev.EpsilonDelta):
        return event.epsilon, event.delta
    if isinstance(event, ev.Laplace | ev.DiscreteLaplace):
        return _recip_up(event.noise_multiplier), 0.0
    if isinstance(event, ev.SelfComposed):
        if event.count == 0:
            return 0.0, 0.0
        e, d = approx_dp(event.event)
        return _mul_up(event.count, e), min(1.0, _mul_up(event.count, d))
    if isinstance(event, ev.Composed):
        parts = [approx_dp(e) for e in event.events]
        return _sum_up([p[0] for p in parts]), min(1.0, _sum_up([p[1] for p in parts]))
    if isinstance(event, ev.PoissonSampled):
        e, d = approx_dp(event.event)
        return _amplify(e, d, event.rate)
    if isinstance(event, ev.SampledWithoutReplacement):
        e, d = approx_dp(event.event)
        return _amplify(e, d, event.sample_size / event.population)
    if isinstance(event, ev.Gaussian | ev.DiscreteGaussian | ev.Zcdp):
        raise ValueError(
            f"approx_dp: {type(event).__name__} has no pure-DP guarantee and its "
            "(epsilon, delta) depends on a choice of delta; state it as EpsilonDelta or use "
            "RdpAccountant / ZcdpAccountant"
        )
    raise ValueError(f"approx_dp: unsupported event {event!r}")


class PureDpAccountant:
    """Basic composition of ``(epsilon, delta)`` guarantees.

    Privacy
    -------
    The adaptive composition of ``(eps_i, delta_i)``-DP mechanisms is
    ``(sum eps_i, sum delta_i)``-DP (Dwork & Roth 2014, Theorem 3.16).

    Numerics
    --------
    Totals are ``math.fsum`` of all terms, then one ulp up.
    """

    def __init__(self) -> None:
        self._eps: list[float] = []
        self._delta: list[float] = []

    @property
    def epsilon(self) -> float:
        """Total ``epsilon`` (rounded up)."""
        return _sum_up(self._eps)

    @property
    def delta(self) -> float:
        """Total ``delta`` (rounded up, at most 1)."""
        return min(1.0, _sum_up(self._delta))

    def compose(self, event: ev.DpEvent, count: int = 1) -> PureDpAccountant:
        """Compose ``event`` ``count`` times; returns ``self``."""
        if isinstance(count, bool) or not isinstance(count, int | np.integer):
            raise TypeError(f"count must be an integer, got {type(count).__name__}")
        count = int(count)
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        e, d = approx_dp(event)
        if count:
            self._eps.append(_mul_up(count, e))
            self._delta.append(_mul_up(count, d))
        return self

    def get_epsilon(self, delta: float = 1.0) -> float:
        """``epsilon`` if ``delta`` covers the composed ``delta``, else ``inf``."""
        if isinstance(delta, bool) or not isinstance(delta, int | float | np.integer | np.floating):
            raise TypeError(f"delta must be a real number, got {type(delta).__name__}")
        d = float(delta)
        if not (0.0 <= d <= 1.0):
            raise ValueError(f"delta must lie in [0, 1], got {d!r}")
        return self.epsilon if d >= self.delta else math.inf

    def get_delta(self, epsilon: float) -> float:
        """Composed ``delta`` if ``epsilon`` covers the composed ``epsilon``, else 1."""
        if isinstance(epsilon, bool) or not isinstance(
            epsilon, int | float | np.integer | np.floating
        ):
            raise TypeError(f"epsilon must be a real number, got {type(epsilon).__name__}")
        e = float(epsilon)
        if math.isnan(e) or e < 0:
            raise ValueError(f"epsilon must be >= 0, got {e!r}")
        return self.delta if e >= self.epsilon else 1.0

    def __repr__(self) -> str:
        return f"PureDpAccountant(epsilon={self.epsilon!r}, delta={self.delta!r})"
