"""Zero-concentrated DP (zCDP, Bun & Steinke 2016): ``zcdp_rho`` and :class:`ZcdpAccountant`.

A mechanism is ``rho``-zCDP when ``D_alpha(M(x) || M(x')) <= rho * alpha`` for every
order ``alpha > 1`` and neighbouring ``x, x'``.  zCDP composes by adding ``rho``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import optimize

from . import events as ev
from ._rounding import ULP as _ULP
from ._rounding import exact_up as _exact_up
from ._rounding import mul_up as _mul_up
from ._rounding import sum_up as _sum_up
from ._rounding import up as _up

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
    ValueError
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
    if isinstance(event, ev.Zcdp):
        return event.rho
    if isinstance(event, ev.Gaussian | ev.DiscreteGaussian):
        s = Fraction(event.noise_multiplier)
        return _exact_up(float(1 / (2 * s * s)), 1 / (2 * s * s))
    if isinstance(event, ev.Exponential):
        return _exact_up(event.epsilon**2 / 8.0, Fraction(event.epsilon) ** 2 / 8)
    if isinstance(event, ev.Epsilon | ev.Snapping | ev.RandomizedResponse):
        return _exact_up(event.epsilon**2 / 2.0, Fraction(event.epsilon) ** 2 / 2)
    if isinstance(event, ev.EpsilonDelta):
        if event.delta == 0.0:
            return _exact_up(event.epsilon**2 / 2.0, Fraction(event.epsilon) ** 2 / 2)
        raise ValueError(
            f"zcdp_rho: an (epsilon, delta)-DP event with delta > 0 has no zCDP guarantee: "
            f"{event!r}"
        )
    if isinstance(event, ev.Laplace | ev.DiscreteLaplace):
        b = Fraction(event.noise_multiplier)
        return _exact_up(float(1 / (2 * b * b)), 1 / (2 * b * b))
    if isinstance(event, ev.SelfComposed):
        return _mul_up(event.count, zcdp_rho(event.event)) if event.count else 0.0
    if isinstance(event, ev.Composed):
        return _sum_up([zcdp_rho(e) for e in event.events])
    if isinstance(event, ev.PoissonSampled | ev.SampledWithoutReplacement):
        if isinstance(event, ev.PoissonSampled) and event.rate == 0.0:
            return 0.0
        if isinstance(event, ev.PoissonSampled) and event.rate == 1.0:
            return zcdp_rho(event.event)
        raise ValueError(
            f"zcdp_rho: subsampled events have no zCDP amplification; use RdpAccountant: "
            f"{event!r}"
        )
    raise ValueError(f"zcdp_rho: unsupported event {event!r}")


def _check_delta(delta: float) -> float:
    if isinstance(delta, bool) or not isinstance(delta, int | float | np.integer | np.floating):
        raise TypeError(f"delta must be a real number, got {type(delta).__name__}")
    d = float(delta)
    if not (0.0 < d < 1.0):
        raise ValueError(f"delta must lie in (0, 1), got {d!r}")
    return d


def _check_nonneg(x: float, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    v = float(x)
    if math.isnan(v) or v < 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    return v


def _eps_at(rho: float, logd: float, a: float) -> float:
    """CKS20 Prop. 12 applied to the RDP curve ``a rho`` at one order ``a > 1``, rounded up."""
    t1 = math.log1p(-1.0 / a)
    t2 = (logd + math.log(a)) / (a - 1.0)
    v = a * rho + t1 - t2
    err = 8 * _ULP * (a * rho + abs(t1) + abs(t2) + 1.0)
    return math.nextafter(v + err, math.inf)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest ``epsilon`` such that ``rho``-zCDP implies ``(epsilon, delta)``-DP.

    Privacy
    -------
    CKS20 Corollary 13: ``rho``-zCDP implies ``(eps, delta)``-DP for
    ``eps = inf_{a > 1} a rho + log(1 - 1/a) - (log(delta) + log(a)) / (a - 1)``.
    The infimum is located numerically; *any* ``a > 1`` gives a valid bound, so the
    result is an upper bound whatever the optimiser does, and it is never worse than
    the classical ``rho + 2 sqrt(rho log(1/delta))`` (Bun & Steinke 2016, Prop. 1.3).

    Numerics
    --------
    Evaluated at the chosen order and rounded up.
    """
    rho = _check_nonneg(rho, "rho")
    d = _check_delta(delta)
    if rho == 0.0:
        return 0.0
    if math.isinf(rho):
        return math.inf
    logd = math.log(d)
    classic = _up(rho + 2.0 * math.sqrt(rho * -logd), 8)
    a0 = 1.0 + math.sqrt(-logd / rho)  # optimum of the classic bound

    def obj(t: float) -> float:
        return _eps_at(rho, logd, 1.0 + math.exp(t))

    t0 = math.log(a0 - 1.0)
    res = optimize.minimize_scalar(obj, bracket=(t0 - 1.0, t0), method="brent",
                                   options={"xtol": 1e-10})
    best = min(obj(t0), classic)
    if np.isfinite(res.x):
        best = min(best, obj(float(res.x)))
    return max(0.0, best)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Smallest ``delta`` such that ``rho``-zCDP implies ``(epsilon, delta)``-DP.

    Privacy
    -------
    CKS20 Corollary 13:
    ``delta = inf_{a > 1} exp((a - 1)(a rho - eps)) / a * (1 - 1/a)^(a - 1)``;
    minimised numerically over ``a`` (any ``a`` is valid), rounded up.
    """
    rho = _check_nonneg(rho, "rho")
    eps = _check_nonneg(epsilon, "epsilon")
    if rho == 0.0:
        return 0.0

    def logdelta(t: float) -> float:
        a = 1.0 + math.exp(t)
        v = (a - 1.0) * (a * rho - eps + math.log1p(-1.0 / a)) - math.log(a)
        return v + 8 * _ULP * ((a - 1.0) * (a * rho + eps + 1.0) + math.log(a) + 1.0)

    a0 = max((eps + rho) / (2.0 * rho), 1.0 + 1e-6)  # optimum of exp((a-1)(a rho - eps))
    t0 = math.log(max(a0 - 1.0, 1e-6))
    res = optimize.minimize_scalar(logdelta, bracket=(t0 - 1.0, t0), method="brent",
                                   options={"xtol": 1e-10})
    best = logdelta(t0)
    if np.isfinite(res.x):
        best = min(best, logdelta(float(res.x)))
    if best >= 0.0:
        return 1.0
    return min(1.0, math.nextafter(math.exp(best) * (1 + 4 * _ULP), math.inf))


class ZcdpAccountant:
    """zCDP accountant: composes ``rho`` additively (Bun & Steinke 2016, Lemma 2.3).

    Privacy
    -------
    Valid under adaptive sequential composition; conversion to ``(epsilon, delta)``
    by CKS20 Corollary 13 (:func:`zcdp_epsilon`).

    Numerics
    --------
    The running sum is rounded up after every composition.
    """

    def __init__(self) -> None:
        self._rho = 0.0

    @property
    def rho(self) -> float:
        """Total ``rho`` so far."""
        return self._rho

    def compose(self, event: ev.DpEvent, count: int = 1) -> ZcdpAccountant:
        """Compose ``event`` ``count`` times; returns ``self`` (ValueError if not zCDP)."""
        if isinstance(count, bool) or not isinstance(count, int | np.integer):
            raise TypeError(f"count must be an integer, got {type(count).__name__}")
        count = int(count)
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        rho = zcdp_rho(event)
        if count:
            self._rho = _sum_up([self._rho, _mul_up(count, rho)])
        return self

    def get_epsilon(self, delta: float) -> float:
        """Smallest ``epsilon`` with ``(epsilon, delta)``-DP (CKS20 Cor. 13)."""
        return zcdp_epsilon(self._rho, delta)

    def get_delta(self, epsilon: float) -> float:
        """Smallest ``delta`` with ``(epsilon, delta)``-DP (CKS20 Cor. 13)."""
        return zcdp_delta(self._rho, epsilon)

    def __repr__(self) -> str:
        return f"ZcdpAccountant(rho={self._rho!r})"
