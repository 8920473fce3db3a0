"""Gaussian mechanisms: secure real-valued (on a grid) and discrete, (epsilon, delta)-DP
or rho-zCDP."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import noise as _noise
from dpfast._core.rounding import ceil_sqrt as _ceil_sqrt
from dpfast._core.rounding import float_down, float_up
from dpfast._core.search import largest_true
from dpfast._core.validate import check_exact_positive
from dpfast.accounting import events as _events
from dpfast.mechanisms import _calibrate
from dpfast.mechanisms._common import (
    _alpha,
    _granularity_fixed_point,
    _Mechanism,
    _positive_int,
    _privacy_mode,
    check_discrete_scale,
)
from dpfast.mechanisms._discretisation import grid_terms
from dpfast.mechanisms._tails import _discrete_gaussian_halfwidth
from dpfast.random import RngLike

__all__ = ["GaussianMechanism", "DiscreteGaussianMechanism"]


class GaussianMechanism(_Mechanism[float]):
    """Secure real-valued Gaussian mechanism for ``(epsilon, delta)``-DP or ``rho``-zCDP.

    Rounds ``x`` to the grid ``g = dpfast.granularity(sigma)`` and adds ``g`` times
    discrete Gaussian noise of parameter ``sigma / g`` (:func:`dpfast.gaussian`).

    Parameters
    ----------
    epsilon, delta : float, optional
        Target ``(epsilon, delta)``-DP, ``epsilon > 0``, ``0 < delta < 1``.
    rho : float, optional
        Target ``rho``-zCDP instead (exclusive with ``epsilon``/``delta``).
    sensitivity : float, default 1
        L2 sensitivity ``Delta > 0``.
    max_changed : int, default 1
        Number ``m`` of coordinates in which neighbouring inputs may differ.

    Attributes
    ----------
    sigma : float
        Noise standard-deviation parameter.
    granularity : float
        The grid ``g`` (power of two, about ``sigma / 2^40``).
    event : dpfast.accounting.events.Gaussian
        ``Gaussian(noise_multiplier=sigma / (Delta + sqrt(m) g))`` rounded down.

    Privacy
    -------
    Neighbouring relation: ``||f(D) - f(D')||_2 <= Delta``, differing in at most ``m``
    coordinates.  After rounding, the inputs differ by ``k g`` with ``k`` an integer vector,
    ``||k g||_2 <= Delta_eff = Delta + sqrt(m) g``.

    * ``rho``: the discrete Gaussian satisfies ``D_alpha(M(D) || M(D')) <= alpha
      ||k||^2 / (2 (sigma/g)^2) <= alpha Delta_eff^2 / (2 sigma^2)`` for every
      ``alpha > 1`` (Canonne, Kamath, Steinke 2020, Thm. 4, tensorised over coordinates),
      and ``sigma`` is the smallest float with ``Delta_eff^2 / (2 sigma^2) <= rho``.
    * ``(epsilon, delta)``: ``sigma`` is the analytic Gaussian calibration (Balle & Wang
      2018, Thm. 8) for sensitivity ``Delta_eff`` at a slightly smaller
      ``(epsilon', delta')`` that pays for the grid: on the grid the noise is discrete,
      and its density (smoothed by a uniform on each cell) is within a factor
      ``e^{+-eta}``, ``eta ~ c m g / (2 sigma)`` with ``c ~ 10``, of the normal density
      except on tails of mass ``< 2^-40 delta``; so ``epsilon' = epsilon - 2 eta`` and
      ``delta' = (delta - tails) e^{-eta}`` (proof in
      ``dpfast/mechanisms/_discretisation.py``).  With ``g / sigma < 2^-39`` this costs
      about ``1e-11 m`` in epsilon and a relative ``1e-11 m`` in delta, independently of
      ``e^epsilon`` (``GaussianMechanism(10, 1e-9)`` is fine).
      Guarantee: ``P[M(D) in S] <= exp(epsilon) P[M(D') in S] + delta``.

    Numerics
    --------
    ``sigma`` and ``g`` are a fixed point (``g`` depends on ``sigma``), rounded up.
    Outputs are exact multiples of ``g``.  The event's RDP curve
    ``alpha / (2 noise_multiplier^2)`` is a valid bound for this discrete noise (see
    ``rho`` above), so accountants may compose it like a continuous Gaussian.
    """

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        sensitivity: float = 1,
        *,
        max_changed: int = 1,
    ) -> None:
        mode, eps, dlt, r = _privacy_mode(epsilon, delta, rho)
        sens = check_exact_positive(sensitivity, "sensitivity")
        m = _positive_int(max_changed, "max_changed")
        root_m = _ceil_sqrt(m)
        self.epsilon = None if eps is None else float(epsilon)  # type: ignore[arg-type]
        self.delta = None if dlt is None else float(delta)  # type: ignore[arg-type]
        self.rho = None if r is None else float(rho)  # type: ignore[arg-type]
        self.sensitivity = float(sensitivity)
        self.max_changed = m

        if mode == "zcdp":
            assert r is not None
            rho_down = float_down(r)

            def need(g: float, s: float) -> float:
                d_eff = float_up(sens + root_m * Fraction(g))
                return _calibrate.gaussian_sigma_zcdp(rho_down, d_eff)

            start = need(0.0, 0.0)
        else:
            assert eps is not None and dlt is not None
            eps_down = float_down(eps)

            def need(g: float, s: float) -> float:
                if g == 0.0:
                    return _calibrate.analytic_gaussian_sigma(eps_down, float(dlt), float(sens))
                # discretisation terms for sigma = s on the grid g (checked at the returned s)
                e2, d2 = grid_terms(eps, dlt, m, Fraction(s) / Fraction(g),
                                    what=f"epsilon={epsilon!r}, delta={delta!r}")
                return _calibrate.analytic_gaussian_sigma(
                    e2, d2, float_up(sens + root_m * Fraction(g))
                )

            start = need(0.0, 0.0)
        self.sigma, self.granularity = _granularity_fixed_point(
            need, start, f"GaussianMechanism(rho={rho!r})" if mode == "zcdp" else
            f"GaussianMechanism(epsilon={epsilon!r}, delta={delta!r})"
        )
        d_eff = sens + root_m * Fraction(self.granularity)
        self.event = _events.Gaussian(noise_multiplier=float_down(Fraction(self.sigma) / d_eff))

    def _params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.rho is None:
            out["epsilon"], out["delta"] = self.epsilon, self.delta
        else:
            out["rho"] = self.rho
        out["sensitivity"] = self.sensitivity
        out["max_changed"] = self.max_changed
        return out

    @property
    def scale(self) -> float:
        """Alias of :attr:`sigma`."""
        return self.sigma

    def __call__(self, x: Any, *, rng: RngLike = None) -> np.ndarray:
        """Return ``x`` (rounded to the grid) plus noise, as a new float array."""
        return _noise.gaussian(x, self.sigma, rng=rng, granularity=self.granularity)

    @property
    def _rounding(self) -> float:  # type: ignore[override]
        return self.granularity / 2

    def _halfwidth(self, alpha: float) -> float:
        """Smallest grid value ``w`` with ``P(|noise| <= w) >= 1 - alpha``.

        The noise is ``g K``, ``K ~ N_Z(0, (sigma/g)^2)``; the tail is evaluated by
        Euler-Maclaurin with a certified remainder (ties resolved upwards), in 256-bit
        arithmetic.  Grid rounding of ``x`` adds at most ``granularity / 2``.
        """
        a = _alpha(alpha)
        s = Fraction(self.sigma) / Fraction(self.granularity)
        return _discrete_gaussian_halfwidth(s, a) * self.granularity


class DiscreteGaussianMechanism(_Mechanism[int]):
    """Discrete Gaussian mechanism for integer queries (Canonne, Kamath, Steinke 2020).

    Adds integer noise with ``P(k) ~ exp(-k^2 / (2 sigma^2))``
    (:func:`dpfast.discrete_gaussian`).

    Parameters
    ----------
    epsilon, delta : float, optional
        Target ``(epsilon, delta)``-DP.
    rho : float, optional
        Target ``rho``-zCDP instead.
    sensitivity : int, default 1
        Integer L2 sensitivity ``Delta >= 1``.
    max_changed : int, optional
        Set ``max_changed=1`` only when neighbouring inputs differ in *one* coordinate, by
        at most ``Delta`` (a scalar query, or a histogram where one record changes one
        cell): ``(epsilon, delta)`` is then calibrated with the tight one-dimensional
        formula.  Default (``None``) and any other value: safe for every integer shift of
        L2 norm ``<= Delta``, in any number of coordinates.  Not used to calibrate with
        ``rho``; with either target ``max_changed=1`` puts ``sensitivity=Delta`` in
        :attr:`event`.

    Attributes
    ----------
    sigma : float
    event : dpfast.accounting.events.DiscreteGaussian
        ``DiscreteGaussian(noise_multiplier=sigma / Delta)`` (rounded down); with
        ``max_changed=1`` also ``sensitivity=Delta`` (a scalar shift: what
        :class:`~dpfast.accounting.PldAccountant` needs for its exact accounting).

    Privacy
    -------
    Neighbouring relation: ``f(D) - f(D')`` is an integer vector of L2 norm ``<= Delta``.

    * ``rho``: ``D_alpha(M(D) || M(D')) <= alpha Delta^2 / (2 sigma^2) <= alpha rho`` for
      all ``alpha > 1`` (CKS20, Thm. 4 and its multivariate form, Thm. 14); ``sigma`` is
      the smallest float with ``Delta^2 / (2 sigma^2) <= rho``.
    * ``(epsilon, delta)``, default: via zCDP, with the largest ``rho`` (to 1e-12) for
      which ``rho``-zCDP implies ``(epsilon, delta)``-DP by CKS20, Cor. 13,
      ``delta = inf_{a > 1} exp((a-1)(a rho - eps)) (1 - 1/a)^(a-1) / a``.  Valid for
      every integer shift of L2 norm ``<= Delta`` (the one-dimensional formula is not:
      with ``Delta = 2`` the shift ``(1, 1, 1, 1)`` has a larger ``delta`` than the shift
      ``(2, 0, 0, 0)``).
    * ``(epsilon, delta)`` with ``max_changed=1`` (one coordinate changes by at most
      ``Delta``): ``sigma`` is calibrated with CKS20's exact formula (Thm. 7),
      ``delta = P[Y > eps sigma^2/Delta - Delta/2] - e^eps P[Y > eps sigma^2/Delta +
      Delta/2]``, ``Y ~ N_Z(0, sigma^2)``, rounded up.

    Guarantee: ``P[M(D) in S] <= exp(epsilon) P[M(D') in S] + delta``.

    Numerics
    --------
    Exact sampler; integer results that would overflow the dtype raise ``OverflowError``.
    """

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        sensitivity: int = 1,
        *,
        max_changed: int | None = None,
    ) -> None:
        mode, eps, dlt, r = _privacy_mode(epsilon, delta, rho)
        sens = _positive_int(sensitivity, "sensitivity")
        m = None if max_changed is None else _positive_int(max_changed, "max_changed")
        self.epsilon = None if eps is None else float(epsilon)  # type: ignore[arg-type]
        self.delta = None if dlt is None else float(delta)  # type: ignore[arg-type]
        self.rho = None if r is None else float(rho)  # type: ignore[arg-type]
        self.sensitivity = sens
        self.max_changed = m
        if mode == "zcdp":
            assert r is not None
            self.sigma = _calibrate.gaussian_sigma_zcdp(float_down(r), sens)
        elif m == 1:
            assert eps is not None and dlt is not None
            self.sigma = _calibrate.discrete_gaussian_sigma(float_down(eps), float(dlt), sens)
        else:
            assert eps is not None and dlt is not None
            rho_ok = _largest_rho(float_down(eps), float(dlt))
            self.sigma = _calibrate.gaussian_sigma_zcdp(rho_ok, sens)
        check_discrete_scale(self.sigma, (f"rho={rho!r}" if mode == "zcdp" else
                                          f"epsilon={epsilon!r}, delta={delta!r}")
                             + f" with sensitivity {sens}")
        # max_changed=1: one coordinate moves by at most sens (a scalar release), so the
        # event can carry the integer sensitivity (exact PLD accounting)
        self.event = _events.DiscreteGaussian(
            noise_multiplier=float_down(Fraction(self.sigma) / sens),
            sensitivity=sens if m == 1 else None,
        )

    def _params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.rho is None:
            out["epsilon"], out["delta"] = self.epsilon, self.delta
        else:
            out["rho"] = self.rho
        out["sensitivity"] = self.sensitivity
        if self.max_changed is not None:
            out["max_changed"] = self.max_changed
        return out

    @property
    def scale(self) -> float:
        """Alias of :attr:`sigma`."""
        return self.sigma

    def __call__(self, x: Any, *, rng: RngLike = None) -> np.ndarray:
        """Return ``x + noise`` (integer array of x's dtype and shape)."""
        return _noise.discrete_gaussian(x, self.sigma, rng=rng)

    def _halfwidth(self, alpha: float) -> int:
        """Smallest integer ``w`` with ``P(|noise| <= w) >= 1 - alpha``.

        Exact sums in 256-bit arithmetic for ``sigma < 32``; above, Euler-Maclaurin
        with a rigorously bounded remainder (so ties resolve upwards).
        """
        return _discrete_gaussian_halfwidth(Fraction(self.sigma), _alpha(alpha))


def _largest_rho(eps: float, delta: float) -> float:
    """A float ``rho`` (within 1e-12 relative of the largest) with ``zcdp_delta(rho, eps) <=
    delta``: ``rho``-zCDP then implies ``(eps, delta)``-DP (CKS20, Cor. 13).

    Bounded search (:func:`dpfast._core.search.largest_true`); ``ValueError`` naming
    ``epsilon`` and ``delta`` if no positive ``rho`` is small enough."""

    def ok(r: float) -> bool:
        return _calibrate.zcdp_delta(r, eps) <= delta

    # a guess below the answer; log(1/delta) without overflow for subnormal delta
    guess = eps * eps / (-4.0 * math.log(delta) + 4.0 * eps)
    return largest_true(ok, guess, rtol=1e-12,
                        what=f"zCDP calibration at epsilon={eps!r}, delta={delta!r} (the "
                             f"largest rho-zCDP implying it)")
