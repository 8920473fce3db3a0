"""diffprivlib's classic ``Gaussian`` mechanism on dpfast's secure grid Gaussian."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

from diffprivlib import mechanisms as _dm

import dpfast
from dpfast._core.rounding import float_up
from dpfast.compat.diffprivlib._additive import _gaussian_calibration, _GridGaussian, _setup
from dpfast.mechanisms._calibrate import analytic_gaussian_delta
from dpfast.mechanisms._discretisation import grid_terms

__all__ = ["Gaussian", "classic_calibration"]


@functools.lru_cache(maxsize=4096)
def classic_calibration(epsilon: float, delta: float, sensitivity: float, sigma: float
                        ) -> tuple[float, float]:
    """``(sigma', g)``: the smallest ``sigma' >= sigma`` (in steps of a relative ``2^-20``)
    for which the grid Gaussian of granularity ``g = dpfast.granularity(sigma')`` is
    certified ``(epsilon, delta)``-DP by dpfast's grid argument (see :class:`Gaussian`);
    diffprivlib's classic ``sigma`` itself in practice.  Cached by parameters."""
    s = sigma
    for _ in range(64):
        g = dpfast.granularity(s)
        try:
            e2, d2 = grid_terms(Fraction(epsilon), Fraction(delta), 1, Fraction(s) / Fraction(g))
        except ValueError:
            e2 = d2 = -1.0
        if e2 > 0 and d2 > 0 and analytic_gaussian_delta(
                e2, s, float_up(Fraction(sensitivity) + Fraction(g))) <= d2:
            return s, g
        s = math.nextafter(s * (1 + 2.0 ** -20), math.inf)
    # (not reached for diffprivlib's parameters, eps <= 1) the rigorous analytic calibration
    s2, g2 = _gaussian_calibration(epsilon, delta, sensitivity)
    return (s2, g2) if s2 >= sigma else (sigma, dpfast.granularity(sigma))


class Gaussian(_GridGaussian, _dm.Gaussian):
    r"""diffprivlib's classic ``Gaussian`` (Dwork & Roth 2014, ``0 < ε <= 1``) on dpfast's
    secure grid Gaussian.

    ``σ = sqrt(2 ln(1.25/δ)) Δ / ε`` as diffprivlib computes it (``_scale``, ``variance``
    unchanged); the value is rounded to the grid ``g = dpfast.granularity(σ)`` (about
    ``σ / 2^40``) and ``g`` times exact discrete Gaussian noise of parameter ``σ / g`` is
    added (:func:`dpfast.gaussian`).  ``randomise`` also takes numpy arrays (independent
    noise per element); NaN and inf pass through.

    Privacy
    -------
    Neighbouring values differ by at most ``sensitivity`` = Δ.  The classic bound is not
    used for the guarantee; instead ``σ`` is certified as :class:`dpfast.GaussianMechanism`
    certifies its own: with ``(ε', δ')`` the grid-discounted targets of
    ``dpfast.mechanisms._discretisation.grid_terms`` (discrete-versus-continuous density
    within ``e^{±η}`` off tails of mass ``< 2^-40 δ``), the analytic Gaussian ``δ`` (Balle &
    Wang 2018, Thm. 8) at sensitivity ``Δ + g``, ``ε'`` and ``σ`` is ``<= δ'``, evaluated
    with rounding to the safe side.  Hence ``P[M(x) ∈ S] <= e^ε P[M(x') ∈ S] + δ``, as
    diffprivlib states.  For ``ε <= 1`` the classic ``σ`` exceeds the analytic one by far
    more than the grid's ``~1e-11`` relative cost, so the certificate holds at diffprivlib's
    own ``σ``; were it ever to fail, ``σ`` would be raised (in steps of ``2^-20``) until it
    holds, never lowered.  **Difference**: grid (discrete) Gaussian noise instead of the sum
    of two float normals; in exchange the guarantee holds exactly, free of floating-point
    attacks.  ``sensitivity == 0`` adds no noise; ``random_state`` as in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, delta, sensitivity, random_state=None):
        super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                         random_state=random_state)
        _setup(self, random_state)
        self._granularity = 0.0
        if self.sensitivity == 0:
            self._scale = 0.0
        elif self.delta >= 1:  # any mechanism is (ε, 1)-DP: diffprivlib's σ, on the grid
            self._granularity = dpfast.granularity(float(self._scale))
        else:
            sigma, self._granularity = classic_calibration(
                float(self.epsilon), float(self.delta), float(self.sensitivity),
                float(self._scale))
            self._scale = sigma

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        return self._noisy(value)
