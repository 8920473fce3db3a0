"""Laplace mechanisms: secure real-valued (on a grid) and discrete, pure epsilon-DP."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import noise as _noise
from dpfast._core.rounding import float_down, float_up
from dpfast._core.validate import check_exact_positive
from dpfast.accounting import events as _events
from dpfast.mechanisms._common import (
    _alpha,
    _granularity_fixed_point,
    _Mechanism,
    _positive_int,
    check_discrete_scale,
)
from dpfast.mechanisms._tails import _discrete_laplace_halfwidth
from dpfast.random import RngLike

__all__ = ["LaplaceMechanism", "DiscreteLaplaceMechanism"]


class LaplaceMechanism(_Mechanism[float]):
    """Secure real-valued Laplace mechanism for pure ``epsilon``-DP.

    Rounds ``x`` to the grid ``g = dpfast.granularity(scale)`` and adds ``g`` times discrete
    Laplace noise of scale ``scale / g`` (:func:`dpfast.laplace`): the output is
    Laplace-like noise of scale ``scale`` that only takes grid values.

    Parameters
    ----------
    epsilon : float
        Target ``epsilon > 0``.
    sensitivity : float, default 1
        L1 sensitivity ``Delta > 0`` of the query.
    max_changed : int, default 1
        Number ``m`` of coordinates in which neighbouring inputs may differ (see module
        notes); each adds one grid step to the sensitivity.

    Attributes
    ----------
    scale : float
        Noise scale ``b``: the smallest float with ``(Delta + m g) / b <= epsilon``.
    granularity : float
        The grid ``g`` (a power of two, about ``b / 2^40``).
    event : dpfast.accounting.events.Laplace
        ``Laplace(noise_multiplier=b / (Delta + m g))`` rounded down, so
        ``1 / noise_multiplier >= `` the true privacy loss bound, which is ``<= epsilon``.

    Privacy
    -------
    Neighbouring relation: ``||f(D) - f(D')||_1 <= Delta``, differing in at most ``m``
    coordinates.  Rounding to the grid moves each coordinate by at most ``g/2``, so the
    rounded values differ by an integer vector ``k g`` with
    ``||k g||_1 <= Delta + m g``.  Discrete Laplace noise of scale ``t = b/g`` has privacy
    loss ``||k||_1 / t`` (Canonne, Kamath, Steinke 2020, Sec. 2; Google DP team, "Secure
    Noise Generation" 2020), so the release is ``epsilon'``-DP with
    ``epsilon' = (Delta + m g) / b <= epsilon``:
    ``P[M(D) in S] <= exp(epsilon) P[M(D') in S]`` for all ``S``.

    Numerics
    --------
    ``b`` and ``g`` are a fixed point (``g`` depends on ``b``) computed in rational
    arithmetic and rounded up; the sampler is exact (no floating-point noise) and its
    outputs are exact multiples of ``g``, so the low-order bits carry no information.
    """

    def __init__(self, epsilon: float, sensitivity: float = 1, *, max_changed: int = 1) -> None:
        eps = check_exact_positive(epsilon, "epsilon")
        sens = check_exact_positive(sensitivity, "sensitivity")
        m = _positive_int(max_changed, "max_changed")
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)
        self.max_changed = m
        self.scale, self.granularity = _granularity_fixed_point(
            lambda g, _s: float_up((sens + m * Fraction(g)) / eps),
            float_up(sens / eps),
            f"LaplaceMechanism(epsilon={epsilon!r}, max_changed={max_changed!r})",
        )
        d_eff = sens + m * Fraction(self.granularity)
        self.event = _events.Laplace(noise_multiplier=float_down(Fraction(self.scale) / d_eff))

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity,
                "max_changed": self.max_changed}

    def __call__(self, x: Any, *, rng: RngLike = None) -> np.ndarray:
        """Return ``x`` (rounded to the grid) plus noise, as a new float array."""
        return _noise.laplace(x, self.scale, rng=rng, granularity=self.granularity)

    @property
    def _rounding(self) -> float:  # type: ignore[override]
        return self.granularity / 2

    def _halfwidth(self, alpha: float) -> float:
        """Smallest grid value ``w`` with ``P(|noise| <= w) >= 1 - alpha``.

        Exact: the noise is ``g K`` with ``P(|K| > k) = 2 p^(k+1) / (1 + p)``,
        ``p = exp(-g / scale)``, evaluated in 256-bit arithmetic.  The rounding of ``x`` to
        the grid adds at most ``g/2`` more: ``|M(x) - x| <= w + granularity / 2`` with
        probability at least ``1 - alpha``.
        """
        a = _alpha(alpha)
        t = Fraction(self.scale) / Fraction(self.granularity)
        return _discrete_laplace_halfwidth(t, a) * self.granularity


class DiscreteLaplaceMechanism(_Mechanism[int]):
    """Discrete Laplace (geometric) mechanism for integer queries, pure ``epsilon``-DP.

    Adds integer noise with ``P(k) ~ exp(-|k| / scale)`` (:func:`dpfast.discrete_laplace`).

    Parameters
    ----------
    epsilon : float
        Target ``epsilon > 0``.
    sensitivity : int, default 1
        Integer L1 sensitivity ``Delta >= 1``.

    Attributes
    ----------
    scale : float
        ``t``: the smallest float ``>= Delta / epsilon``.
    event : dpfast.accounting.events.DiscreteLaplace
        ``DiscreteLaplace(noise_multiplier=t / Delta)`` (rounded down).

    Privacy
    -------
    Neighbouring relation: ``||f(D) - f(D')||_1 <= Delta`` for integer-valued ``f``.  The
    privacy loss of discrete Laplace noise at shift ``k`` is ``||k||_1 / t``, so the release
    is ``Delta/t``-DP, ``Delta / t <= epsilon`` (Ghosh, Roughgarden, Sundararajan 2009;
    Canonne, Kamath, Steinke 2020, Sec. 2):
    ``P[M(D) = y] <= exp(epsilon) P[M(D') = y]``.

    Numerics
    --------
    The sampler is exact for the float ``t`` taken as the binary rational it encodes;
    integer results that would overflow the dtype raise ``OverflowError``.
    """

    def __init__(self, epsilon: float, sensitivity: int = 1) -> None:
        eps = check_exact_positive(epsilon, "epsilon")
        sens = _positive_int(sensitivity, "sensitivity")
        self.epsilon = float(epsilon)
        self.sensitivity = sens
        self.scale = float_up(sens / eps)
        check_discrete_scale(self.scale, f"epsilon={epsilon!r} with sensitivity {sens}")
        self.event = _events.DiscreteLaplace(
            noise_multiplier=float_down(Fraction(self.scale) / sens)
        )

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity}

    def __call__(self, x: Any, *, rng: RngLike = None) -> np.ndarray:
        """Return ``x + noise`` (integer array of x's dtype and shape)."""
        return _noise.discrete_laplace(x, self.scale, rng=rng)

    def _halfwidth(self, alpha: float) -> int:
        """Smallest integer ``w`` with ``P(|noise| <= w) >= 1 - alpha`` (exact).

        ``P(|K| > w) = 2 p^(w+1) / (1 + p)`` with ``p = exp(-1/scale)``.
        """
        return _discrete_laplace_halfwidth(Fraction(self.scale), _alpha(alpha))
