"""Mironov's snapping mechanism."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from dpfast import noise as _noise
from dpfast._core.rounding import float_up
from dpfast._core.validate import check_exact_positive
from dpfast.accounting import events as _events
from dpfast.mechanisms._common import (
    _PREC,
    _alpha,
    _Mechanism,
    _mpf,
)
from dpfast.random import RngLike

__all__ = ["SnappingMechanism"]


class SnappingMechanism(_Mechanism[float]):
    """Mironov's snapping mechanism (CCS 2012): float Laplace made safe by clamp and snap.

    Computes ``clamp_B(round_Lambda(clamp_B(x) + scale * S * ln U))`` with ``U`` a uniform
    double of the exact distribution the paper requires, ``S`` a random sign and
    ``Lambda`` the smallest power of two ``>= scale`` (:func:`dpfast.snapping`).

    Parameters
    ----------
    epsilon : float
        Target ``epsilon > 0``.
    sensitivity : float
        L1 sensitivity ``Delta > 0`` (scalar queries).
    bound : float
        Clamping bound ``B > 0``; inputs and outputs are clamped to ``[-B, B]``.

    Attributes
    ----------
    scale : float
        ``lambda``: the smallest float found with ``snapping_epsilon(lambda, B, Delta) <=
        epsilon`` (bisection on the float grid, verified).
    delta : float
        :func:`dpfast.noise.snapping_delta`: 0 (pure DP) when ``bound <= 372 scale``,
        else about ``2^-1070``.
    event : dpfast.accounting.events.Snapping or EpsilonDelta
        ``Snapping(epsilon)`` with ``epsilon = snapping_epsilon(scale, bound,
        sensitivity)`` when ``delta`` is 0, else ``EpsilonDelta(epsilon, delta)``.

    Privacy
    -------
    Neighbouring relation: ``|f(D) - f(D')| <= Delta``.  The snapping mechanism is
    ``epsilon'``-DP with the paper's corrected ``epsilon'`` (Mironov 2012, Thm. 1, in the
    form returned by :func:`dpfast.snapping_epsilon`, which also states its validity
    range), ``epsilon' <= epsilon``: ``P[M(D) = y] <= exp(epsilon) P[M(D') = y]``, when
    ``bound <= 372 scale``.  For a larger bound the noise is capped by the smallest
    uniform double (``|scale ln 2^-1074| < 745 scale``), neighbours' output supports
    differ on a set of probability about ``2^-1073 e^epsilon``, and the guarantee is
    ``(epsilon', delta)`` with ``delta`` = :func:`dpfast.noise.snapping_delta`.

    Numerics
    --------
    The floating-point ``ln`` and additions are part of the analysed mechanism (that is the
    point of snapping); outputs are multiples of ``Lambda`` clamped to ``[-B, B]``.
    """

    def __init__(self, epsilon: float, sensitivity: float, bound: float) -> None:
        eps = check_exact_positive(epsilon, "epsilon")
        sens = check_exact_positive(sensitivity, "sensitivity")
        b = check_exact_positive(bound, "bound")
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)
        self.bound = self._bound(b)
        self.scale = self._calibrate(eps, sens)
        e = self._epsilon_of(self.scale)
        d = _noise.snapping_delta(self.scale, self.bound, self.sensitivity)
        self.delta = d
        self.event = (_events.Snapping(epsilon=e) if d == 0.0
                      else _events.EpsilonDelta(epsilon=e, delta=d))

    @staticmethod
    def _bound(b: Fraction) -> float:
        if not _noise.SNAP_MIN < b <= _noise.SNAP_MAX or Fraction(float(b)) != b:
            raise ValueError("bound must be a float64 in the supported range (2**-960, 2**960], "
                             f"got {float(b) if b < 2**1023 else 'a larger number'}")
        return float(b)

    def _epsilon_of(self, scale: float) -> float:
        return float(_noise.snapping_epsilon(scale, self.bound, self.sensitivity))

    def _ok(self, scale: float, eps: Fraction) -> bool:
        try:
            return Fraction(self._epsilon_of(scale)) <= eps
        except ValueError:
            return False

    def _calibrate(self, eps: Fraction, sens: Fraction) -> float:
        """The smallest double ``scale < bound`` whose ``snapping_epsilon`` is at most
        ``eps``: ``ok`` is monotone in the scale (false below the validity range or the
        target, true from there up to the largest double below the bound), so a
        bisection on the bit patterns of positive doubles finds it exactly."""
        hi = math.nextafter(self.bound, 0.0)  # the largest admissible scale
        if not self._ok(hi, eps):
            raise ValueError(
                f"SnappingMechanism: no scale below bound reaches epsilon={float(eps)!r} "
                f"(the smallest epsilon for bound {self.bound:g} is "
                f"{_noise.snapping_epsilon(hi, self.bound, self.sensitivity):.6g}); "
                "increase bound or epsilon")
        lo_bits = 0  # 0.0: never ok
        hi_bits = int(np.float64(hi).view(np.int64))
        while hi_bits - lo_bits > 1:
            mid_bits = (lo_bits + hi_bits) // 2
            if self._ok(float(np.int64(mid_bits).view(np.float64)), eps):
                hi_bits = mid_bits
            else:
                lo_bits = mid_bits
        return float(np.int64(hi_bits).view(np.float64))

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "bound": self.bound}

    @property
    def snap(self) -> float:
        """``Lambda``: the smallest power of two ``>= scale`` (output resolution)."""
        m, e = math.frexp(self.scale)
        return self.scale if m == 0.5 else math.ldexp(1.0, e)

    def __call__(self, x: Any, *, rng: RngLike = None) -> np.ndarray:
        """Return the snapped noisy value(s) of ``x`` (floats in ``[-bound, bound]``)."""
        return _noise.snapping(x, self.scale, self.bound, rng=rng)

    def _halfwidth(self, alpha: float) -> float:
        """A rigorous ``w`` with ``P(|M(x) - clamp_B(x)| <= w) >= 1 - alpha``.

        ``w = Lambda/2 + scale ln(1/alpha)`` plus a relative ``2^-40`` allowance for the
        floating-point ``ln``, multiplication and addition, capped at ``2 B``.  Not the
        exact quantile (the snapped distribution depends on ``x`` and on rounding), but
        never too small: ``P(scale |ln U| <= scale ln(1/alpha)) = 1 - alpha``.
        """
        a = _alpha(alpha)
        with mpmath.workprec(_PREC):
            lam = _mpf(self.scale)
            w = lam * mpmath.log(1 / _mpf(a)) + _mpf(self.snap) / 2
            w = w * (1 + mpmath.mpf(2) ** -40) + _mpf(self.bound) * mpmath.mpf(2) ** -50
            w_up = float_up(Fraction(int(mpmath.ceil(mpmath.ldexp(w, 300)))) / 2**300)
        return min(w_up, 2.0 * self.bound)
