"""Mechanisms with stated guarantees: calibrated noise, an event, and error bars.

Each mechanism turns a privacy target (``epsilon``, ``(epsilon, delta)`` or ``rho``) and
a sensitivity into a noise scale, states what one release costs as an event of
:mod:`dpfast.accounting.events` (which accountants and :class:`dpfast.Budget` consume),
draws the noise with the exact samplers of :mod:`dpfast.noise`, and reports the exact
half-width of a confidence interval for the noise::

    mech = dpfast.GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0)
    noisy = mech(values)                       # secure float noise on a 2^k grid
    half = mech.confidence_interval(0.05)      # |noise| <= half with prob. >= 95%

Calibration is exact or rounds to the safe side (noise up, epsilon up): every float
derived from a privacy parameter is computed with rational arithmetic (or with a
certified error bound) and rounded in the direction that keeps the stated guarantee.

The float mechanisms (:class:`LaplaceMechanism`, :class:`GaussianMechanism`) round
their input to a grid of spacing ``g`` (a power of two, ``scale / 2^40 <= g < scale /
2^39``, :func:`dpfast.granularity`) before
adding ``g`` times integer noise, which defeats floating-point attacks (Mironov 2012).
The rounding can move each coordinate by up to ``g/2``, so two neighbouring inputs can
differ after rounding by ``g`` more per differing coordinate; the calibration includes
this term.  ``max_changed`` (keyword-only, default 1) is the number of coordinates in
which neighbouring inputs may differ (1 for a scalar, or for a histogram where one
record changes one cell; pass ``x.size`` when every coordinate may change).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from dpfast import _calibrate
from dpfast import noise as _noise
from dpfast.accounting import events as _events

__all__ = [
    "LaplaceMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "DiscreteGaussianMechanism",
    "SnappingMechanism",
]

# precision (bits) of the mpmath evaluations behind the confidence intervals
_PREC = 256
# below this sigma the discrete Gaussian tail is summed term by term
_DIRECT_SIGMA = 32
# Kolmogorov distance between N_Z(0, s^2) and N(0, s^2) is at most _KOLMOGOROV / s
# (sum-versus-integral bound for a unimodal function, see GaussianMechanism)
_KOLMOGOROV = Fraction(4, 5)


# --------------------------------------------------------------------------- validation


def _real(name: str, value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if isinstance(value, Fraction | numbers.Integral):
        return Fraction(value)
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return Fraction(x)


def _positive(name: str, value: Any) -> Fraction:
    q = _real(name, value)
    if q <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return q


def _positive_int(name: str, value: Any) -> int:
    q = _positive(name, value)
    if q.denominator != 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(q)


def _delta(value: Any) -> Fraction:
    q = _real("delta", value)
    if not (0 < q < 1):
        raise ValueError(f"delta must lie in (0, 1), got {value!r}")
    return q


def _alpha(value: Any) -> Fraction:
    q = _real("alpha", value)
    if not (0 < q < 1):
        raise ValueError(f"alpha must lie in (0, 1), got {value!r}")
    return q


def _float_up(q: Fraction | int) -> float:
    """Smallest float >= q."""
    q = Fraction(q)
    try:
        f = float(q)
    except OverflowError:
        return math.inf
    if Fraction(f) < q:
        f = math.nextafter(f, math.inf)
    return f


def _float_down(q: Fraction | int) -> float:
    """Largest float <= q."""
    q = Fraction(q)
    f = float(q)
    if Fraction(f) > q:
        f = math.nextafter(f, -math.inf)
    return f


def _ceil_sqrt(n: int) -> int:
    r = math.isqrt(n)
    return r if r * r == n else r + 1


def _privacy_mode(
    epsilon: Any, delta: Any, rho: Any
) -> tuple[str, Fraction | None, Fraction | None, Fraction | None]:
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError("pass either (epsilon, delta) or rho, not both")
        return "zcdp", None, None, _positive("rho", rho)
    if epsilon is None:
        raise ValueError("pass (epsilon, delta) or rho")
    eps = _positive("epsilon", epsilon)
    if delta is None:
        raise ValueError(
            "delta is required with epsilon for Gaussian noise (use a Laplace mechanism "
            "for pure epsilon-DP, or pass rho for zCDP)"
        )
    return "approx", eps, _delta(delta), None


def _granularity_fixed_point(
    need: Any, start: float, what: str
) -> tuple[float, float]:
    """A float ``s >= start`` with ``s >= need(g(s), s)`` where ``g = granularity``.

    ``need(g, s)`` is the (rounded-up) scale required when the grid is ``g`` and the scale
    is ``s``.  The iterates ``s_{k+1} = need(g(s_k), s_k)`` increase until one satisfies
    the condition, which is then returned: the guarantee is checked for the returned pair
    ``(s, g(s))`` itself, so correctness does not depend on monotonicity (which only
    makes the result the smallest fixed point for the Laplace case).
    """
    s = start
    for _ in range(400):
        if not math.isfinite(s):
            break
        g = float(_noise.granularity(s))
        n = need(g, s)
        if n <= s:
            # tighten: step down while the smaller candidate still satisfies the condition
            for _ in range(100):
                if n == s:
                    break
                g_n = float(_noise.granularity(n))
                if need(g_n, n) > n:
                    break
                s, g = n, g_n
                n = need(g, s)
            return s, g
        s = n
    raise ValueError(
        f"{what}: the grid term does not converge: {what} is too small for a grid of "
        "about 2^-40 times the noise scale (use a discrete mechanism)"
    )


# --------------------------------------------------------------------------- exact tails


def _mpf(q: Fraction | float | int) -> mpmath.mpf:
    q = Fraction(q)
    return mpmath.mpf(q.numerator) / q.denominator


def _integer_search(tail: Any, alpha: mpmath.mpf, guess: int) -> int:
    """Smallest integer ``w >= 0`` with ``tail(w) <= alpha`` for a decreasing ``tail``.

    Ties within the evaluation error are resolved towards the larger ``w`` by the caller's
    ``tail`` (which returns an upper bound).
    """
    guess = max(guess, 0)
    if tail(guess) <= alpha:
        hi = guess
        step = 1
        lo = hi - step
        while lo >= 0 and tail(lo) <= alpha:
            hi = lo
            step *= 2
            lo = hi - step
        lo = max(lo, -1)
    else:
        lo = guess
        step = 1
        hi = lo + step
        while tail(hi) > alpha:
            lo = hi
            step *= 2
            hi = lo + step
    # invariant: tail(lo) > alpha (or lo == -1), tail(hi) <= alpha
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tail(mid) <= alpha:
            hi = mid
        else:
            lo = mid
    return hi


def _discrete_laplace_halfwidth(t: Fraction, alpha: Fraction) -> int:
    """Smallest integer w with P(|K| > w) <= alpha, P(k) ~ exp(-|k|/t).

    ``P(|K| > w) = 2 p^(w+1) / (1 + p)`` with ``p = exp(-1/t)``.
    """
    with mpmath.workprec(_PREC):
        tt = _mpf(t)
        a = _mpf(alpha)
        p = mpmath.exp(-1 / tt)
        # relative slack far above the evaluation error, resolving ties upwards
        slack = 1 + mpmath.mpf(2) ** (-_PREC // 2)

        def tail(w: int) -> mpmath.mpf:
            return 2 * mpmath.exp(-(w + 1) / tt) / (1 + p) * slack

        guess = int(mpmath.floor(tt * mpmath.log(2 / (a * (1 + p))))) - 1
        return _integer_search(tail, a, guess)


def _dg_tail_sum(a: int, s: mpmath.mpf) -> mpmath.mpf:
    """Upper bound on ``T(a) = sum_{k >= a} exp(-k^2 / 2 s^2)`` for an integer ``a >= 0``.

    Term by term for ``s < 32`` (the neglected tail bounded by a geometric series);
    otherwise the Euler-Maclaurin formula through ``f^(5)`` plus a rigorous bound on its
    remainder, ``|R| <= 2 zeta(6) / (2 pi)^6 * int_a^inf |f^(6)|`` with
    ``f^(n)(x) = (-1/s)^n He_n(x/s) f(x)`` (probabilists' Hermite polynomials); the
    remainder is below ``1e-13`` relative for ``s >= 32``.
    """
    two_s2 = 2 * s * s
    if s < _DIRECT_SIGMA:
        total = mpmath.mpf(0)
        k = mpmath.mpf(a)
        term = mpmath.exp(-k * k / two_s2)
        ratio = mpmath.exp(-(2 * k + 1) / two_s2)  # term(k+1) / term(k), decreasing in k
        step = mpmath.exp(-2 / two_s2)
        eps = mpmath.mpf(2) ** (-_PREC + 16)
        while True:
            total += term
            term *= ratio
            ratio *= step
            if term <= eps * total * (1 - ratio):
                # the remaining terms sum to <= term / (1 - ratio)
                return total + term / (1 - ratio)
    u = mpmath.mpf(a) / s
    f = mpmath.exp(-u * u / 2)
    he1 = u
    he3 = u**3 - 3 * u
    he5 = u**5 - 10 * u**3 + 15 * u
    integral = s * mpmath.sqrt(mpmath.pi / 2) * mpmath.erfc(u / mpmath.sqrt(2))
    value = integral + f * (
        mpmath.mpf(1) / 2 + he1 / (12 * s) - he3 / (720 * s**3) + he5 / (30240 * s**5)
    )
    # int_u^inf t^k phi(t) dt for k = 0..6 (phi the standard normal density)
    phi = f / mpmath.sqrt(2 * mpmath.pi)
    moments = [mpmath.erfc(u / mpmath.sqrt(2)) / 2, phi]
    for k in range(2, 7):
        moments.append(u ** (k - 1) * phi + (k - 1) * moments[k - 2])
    # |He_6(t)| <= t^6 + 15 t^4 + 45 t^2 + 15 for t >= 0
    he6_abs = moments[6] + 15 * moments[4] + 45 * moments[2] + 15 * moments[0]
    remainder = mpmath.mpf(1) / 30000 * mpmath.sqrt(2 * mpmath.pi) * he6_abs / s**5
    return value + remainder


def _dg_normalizer_lower(s: mpmath.mpf) -> mpmath.mpf:
    """Lower bound on ``Z = sum_k exp(-k^2 / 2 s^2)``.

    Poisson summation: ``Z = s sqrt(2 pi) (1 + 2 sum_{j>=1} exp(-2 pi^2 s^2 j^2))``; the
    dual series is summed while it matters (``s >= 1/2``), else ``Z`` directly.
    """
    if s < mpmath.mpf(1) / 2:
        return 1 + 2 * _dg_tail_sum(1, s) * (1 - mpmath.mpf(2) ** (-_PREC // 2))
    c = 2 * mpmath.pi**2 * s * s
    theta = mpmath.mpf(1)
    j = 1
    eps = mpmath.mpf(2) ** (-_PREC)
    while True:
        term = 2 * mpmath.exp(-c * j * j)
        if term < eps:
            break
        theta += term
        j += 1
    return s * mpmath.sqrt(2 * mpmath.pi) * theta * (1 - mpmath.mpf(2) ** (-_PREC // 2))


def _discrete_gaussian_halfwidth(sigma: Fraction, alpha: Fraction) -> int:
    """Smallest integer w with P(|K| > w) <= alpha for K ~ N_Z(0, sigma^2) (up to ties)."""
    with mpmath.workprec(_PREC):
        s = _mpf(sigma)
        a = _mpf(alpha)
        z = _dg_normalizer_lower(s)

        def tail(w: int) -> mpmath.mpf:
            return 2 * _dg_tail_sum(w + 1, s) / z

        if a > mpmath.mpf(10) ** -30:
            guess = int(mpmath.floor(s * mpmath.sqrt(2) * mpmath.erfinv(1 - a)))
        else:  # 1 - a is not representable: start from the sub-Gaussian bound
            guess = int(mpmath.floor(s * mpmath.sqrt(2 * mpmath.log(2 / a))))
        return _integer_search(tail, a, guess)


# --------------------------------------------------------------------------- base


class _Mechanism:
    """Shared behaviour: repr and the confidence-interval argument check."""

    event: _events.DpEvent

    def _params(self) -> dict[str, Any]:  # pragma: no cover - overridden
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"


# --------------------------------------------------------------------------- Laplace


class LaplaceMechanism(_Mechanism):
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
        eps = _positive("epsilon", epsilon)
        sens = _positive("sensitivity", sensitivity)
        m = _positive_int("max_changed", max_changed)
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)
        self.max_changed = m
        self.scale, self.granularity = _granularity_fixed_point(
            lambda g, _s: _float_up((sens + m * Fraction(g)) / eps),
            _float_up(sens / eps),
            "epsilon (per max_changed coordinate)",
        )
        d_eff = sens + m * Fraction(self.granularity)
        self.event = _events.Laplace(noise_multiplier=_float_down(Fraction(self.scale) / d_eff))

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity,
                "max_changed": self.max_changed}

    def __call__(self, x: Any, *, rng: Any = None) -> np.ndarray:
        """Return ``x`` (rounded to the grid) plus noise, as a new float array."""
        return _noise.laplace(x, self.scale, rng=rng, granularity=self.granularity)

    def confidence_interval(self, alpha: float) -> float:
        """Smallest grid value ``w`` with ``P(|noise| <= w) >= 1 - alpha``.

        Exact: the noise is ``g K`` with ``P(|K| > k) = 2 p^(k+1) / (1 + p)``,
        ``p = exp(-g / scale)``, evaluated in 256-bit arithmetic.  The rounding of ``x`` to
        the grid adds at most ``g/2`` more: ``|M(x) - x| <= w + granularity / 2`` with
        probability at least ``1 - alpha``.
        """
        a = _alpha(alpha)
        t = Fraction(self.scale) / Fraction(self.granularity)
        return _discrete_laplace_halfwidth(t, a) * self.granularity


class DiscreteLaplaceMechanism(_Mechanism):
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
        eps = _positive("epsilon", epsilon)
        sens = _positive_int("sensitivity", sensitivity)
        self.epsilon = float(epsilon)
        self.sensitivity = sens
        self.scale = _float_up(sens / eps)
        if not math.isfinite(self.scale):
            raise ValueError(f"epsilon is too small for sensitivity {sens}: scale overflows")
        self.event = _events.DiscreteLaplace(
            noise_multiplier=_float_down(Fraction(self.scale) / sens)
        )

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity}

    def __call__(self, x: Any, *, rng: Any = None) -> np.ndarray:
        """Return ``x + noise`` (integer array of x's dtype and shape)."""
        return _noise.discrete_laplace(x, self.scale, rng=rng)

    def confidence_interval(self, alpha: float) -> int:
        """Smallest integer ``w`` with ``P(|noise| <= w) >= 1 - alpha`` (exact).

        ``P(|K| > w) = 2 p^(w+1) / (1 + p)`` with ``p = exp(-1/scale)``.
        """
        return _discrete_laplace_halfwidth(Fraction(self.scale), _alpha(alpha))


# --------------------------------------------------------------------------- Gaussian


class GaussianMechanism(_Mechanism):
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
      2018, Thm. 8) for sensitivity ``Delta_eff`` at ``delta - eta``, where
      ``eta = (1 + e^epsilon) m (4/5) g / sigma`` bounds the difference between the
      discrete and the continuous privacy profile: the privacy loss is a function of
      ``<k, Y>``, and each ``N_Z(0, s^2)`` coordinate is within Kolmogorov distance
      ``0.8 / s`` of ``N(0, s^2)`` (a unimodal sum against its integral), so
      ``delta_discrete(epsilon) <= delta_continuous(epsilon) + (1 + e^epsilon) m 0.8 g /
      sigma``.  With ``g / sigma < 2^-39`` this is below ``1.5e-12 (1 + e^epsilon) m``.
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
        sens = _positive("sensitivity", sensitivity)
        m = _positive_int("max_changed", max_changed)
        root_m = _ceil_sqrt(m)
        self.epsilon = None if eps is None else float(epsilon)  # type: ignore[arg-type]
        self.delta = None if dlt is None else float(delta)  # type: ignore[arg-type]
        self.rho = None if r is None else float(rho)  # type: ignore[arg-type]
        self.sensitivity = float(sensitivity)
        self.max_changed = m

        if mode == "zcdp":
            rho_down = _float_down(r)

            def need(g: float, s: float) -> float:
                d_eff = _float_up(sens + root_m * Fraction(g))
                return _calibrate.gaussian_sigma_zcdp(rho_down, d_eff)

            start = need(0.0, 0.0)
        else:
            assert eps is not None and dlt is not None
            one_plus_exp = 1 + _exp_upper(eps)  # rational upper bound on 1 + e^eps

            eps_down = _float_down(eps)

            def need(g: float, s: float) -> float:
                if g == 0.0:
                    return _calibrate.analytic_gaussian_sigma(eps_down, float(dlt), float(sens))
                # discretisation term for sigma = s on the grid g (checked at the returned s)
                eta = one_plus_exp * m * _KOLMOGOROV * Fraction(g) / Fraction(s)
                d = _float_down(dlt - eta)
                if d <= 0:
                    raise ValueError(
                        "delta is too small for the float grid's discretisation term "
                        f"({float(eta):.3g}); use DiscreteGaussianMechanism or rho"
                    )
                return _calibrate.analytic_gaussian_sigma(
                    eps_down, d, _float_up(sens + root_m * Fraction(g))
                )

            start = need(0.0, 0.0)
        self.sigma, self.granularity = _granularity_fixed_point(
            need, start, "rho" if mode == "zcdp" else "epsilon or delta"
        )
        d_eff = sens + root_m * Fraction(self.granularity)
        self.event = _events.Gaussian(noise_multiplier=_float_down(Fraction(self.sigma) / d_eff))

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

    def __call__(self, x: Any, *, rng: Any = None) -> np.ndarray:
        """Return ``x`` (rounded to the grid) plus noise, as a new float array."""
        return _noise.gaussian(x, self.sigma, rng=rng, granularity=self.granularity)

    def confidence_interval(self, alpha: float) -> float:
        """Smallest grid value ``w`` with ``P(|noise| <= w) >= 1 - alpha``.

        The noise is ``g K``, ``K ~ N_Z(0, (sigma/g)^2)``; the tail is evaluated by
        Euler-Maclaurin with a certified remainder (ties resolved upwards), in 256-bit
        arithmetic.  Grid rounding of ``x`` adds at most ``granularity / 2``.
        """
        a = _alpha(alpha)
        s = Fraction(self.sigma) / Fraction(self.granularity)
        return _discrete_gaussian_halfwidth(s, a) * self.granularity


def _exp_upper(x: Fraction) -> Fraction:
    """A rational upper bound on ``exp(x)`` (relative error < 2^-100)."""
    with mpmath.workprec(_PREC):
        v = mpmath.exp(_mpf(x)) * (1 + mpmath.mpf(2) ** -120)
        m, e = mpmath.frexp(v)
        num = int(mpmath.ceil(mpmath.ldexp(m, 200)))
        return Fraction(num) * Fraction(2) ** (int(e) - 200)


class DiscreteGaussianMechanism(_Mechanism):
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
        Integer sensitivity ``Delta >= 1`` (L2; see Privacy for ``(epsilon, delta)``).
    max_changed : int, default 1
        Number ``m`` of coordinates in which neighbouring inputs may differ; only used
        for ``(epsilon, delta)``.

    Attributes
    ----------
    sigma : float
    event : dpfast.accounting.events.DiscreteGaussian
        ``DiscreteGaussian(noise_multiplier=sigma / Delta)`` (rounded down).

    Privacy
    -------
    * ``rho``: neighbouring relation ``||f(D) - f(D')||_2 <= Delta`` (integer vectors).
      ``D_alpha(M(D) || M(D')) <= alpha Delta^2 / (2 sigma^2) <= alpha rho`` for all
      ``alpha > 1`` (CKS20, Thm. 4 and its multivariate form, Sec. 5); ``sigma`` is the
      smallest float with ``Delta^2 / (2 sigma^2) <= rho``.
    * ``(epsilon, delta)`` with ``m = 1`` (one coordinate changes by at most ``Delta``):
      ``sigma`` is calibrated with CKS20's exact formula (Thm. 7),
      ``delta = P[Y > eps sigma^2/Delta - Delta/2] - e^eps P[Y > eps sigma^2/Delta +
      Delta/2]``, ``Y ~ N_Z(0, sigma^2)``, rounded up.
    * ``(epsilon, delta)`` with ``m > 1`` (L2 neighbouring relation as for ``rho``): via
      zCDP, with the largest ``rho`` (to 1e-12) for which ``rho``-zCDP implies
      ``(epsilon, delta)``-DP by CKS20, Cor. 13,
      ``delta = inf_{a > 1} exp((a-1)(a rho - eps)) (1 - 1/a)^(a-1) / a``
      (conservative: Thm. 7 is one-dimensional).

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
        max_changed: int = 1,
    ) -> None:
        mode, eps, dlt, r = _privacy_mode(epsilon, delta, rho)
        sens = _positive_int("sensitivity", sensitivity)
        m = _positive_int("max_changed", max_changed)
        self.epsilon = None if eps is None else float(epsilon)  # type: ignore[arg-type]
        self.delta = None if dlt is None else float(delta)  # type: ignore[arg-type]
        self.rho = None if r is None else float(rho)  # type: ignore[arg-type]
        self.sensitivity = sens
        self.max_changed = m
        if mode == "zcdp":
            self.sigma = _calibrate.gaussian_sigma_zcdp(_float_down(r), sens)
        elif m == 1:
            self.sigma = _calibrate.discrete_gaussian_sigma(_float_down(eps), float(dlt), sens)
        else:
            rho_ok = _largest_rho(_float_down(eps), float(dlt))
            self.sigma = _calibrate.gaussian_sigma_zcdp(rho_ok, sens)
        self.event = _events.DiscreteGaussian(
            noise_multiplier=_float_down(Fraction(self.sigma) / sens)
        )

    def _params(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.rho is None:
            out["epsilon"], out["delta"] = self.epsilon, self.delta
        else:
            out["rho"] = self.rho
        out["sensitivity"] = self.sensitivity
        if self.max_changed != 1:
            out["max_changed"] = self.max_changed
        return out

    @property
    def scale(self) -> float:
        """Alias of :attr:`sigma`."""
        return self.sigma

    def __call__(self, x: Any, *, rng: Any = None) -> np.ndarray:
        """Return ``x + noise`` (integer array of x's dtype and shape)."""
        return _noise.discrete_gaussian(x, self.sigma, rng=rng)

    def confidence_interval(self, alpha: float) -> int:
        """Smallest integer ``w`` with ``P(|noise| <= w) >= 1 - alpha``.

        Exact sums in 256-bit arithmetic for ``sigma < 32``; above, Euler-Maclaurin
        with a rigorously bounded remainder (so ties resolve upwards).
        """
        return _discrete_gaussian_halfwidth(Fraction(self.sigma), _alpha(alpha))


def _largest_rho(eps: float, delta: float) -> float:
    """A float ``rho`` (within 1e-12 relative of the largest) with ``zcdp_delta(rho, eps) <=
    delta``: ``rho``-zCDP then implies ``(eps, delta)``-DP (CKS20, Cor. 13)."""

    def ok(r: float) -> bool:
        return _calibrate.zcdp_delta(r, eps) <= delta

    lo = hi = eps * eps / (4 * math.log(1 / delta) + 4 * eps)  # below the answer (checked)
    while not ok(lo):
        lo /= 2.0
    hi = lo * 2.0
    while ok(hi):
        lo, hi = hi, hi * 2.0
    while hi / lo > 1 + 1e-12:
        mid = math.sqrt(lo * hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------- snapping


class SnappingMechanism(_Mechanism):
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
    event : dpfast.accounting.events.Snapping
        ``Snapping(epsilon=snapping_epsilon(scale, bound, sensitivity))``.

    Privacy
    -------
    Neighbouring relation: ``|f(D) - f(D')| <= Delta``.  The snapping mechanism is
    ``epsilon'``-DP with the paper's corrected ``epsilon'`` (Mironov 2012, Thm. 1, in the
    form returned by :func:`dpfast.snapping_epsilon`, which also states its validity
    range), ``epsilon' <= epsilon``: ``P[M(D) = y] <= exp(epsilon) P[M(D') = y]``.

    Numerics
    --------
    The floating-point ``ln`` and additions are part of the analysed mechanism (that is the
    point of snapping); outputs are multiples of ``Lambda`` clamped to ``[-B, B]``.
    """

    def __init__(self, epsilon: float, sensitivity: float, bound: float) -> None:
        eps = _positive("epsilon", epsilon)
        sens = _positive("sensitivity", sensitivity)
        b = _positive("bound", bound)
        self.epsilon = float(epsilon)
        self.sensitivity = float(sensitivity)
        self.bound = float(bound)
        self.scale = self._calibrate(eps, sens, b)
        self.event = _events.Snapping(epsilon=self._epsilon_of(self.scale))

    def _epsilon_of(self, scale: float) -> float:
        return float(_noise.snapping_epsilon(scale, self.bound, self.sensitivity))

    def _ok(self, scale: float, eps: Fraction) -> bool:
        try:
            return Fraction(self._epsilon_of(scale)) <= eps
        except ValueError:
            return False

    def _calibrate(self, eps: Fraction, sens: Fraction, b: Fraction) -> float:
        hi = _float_up(sens / eps)
        for _ in range(200):
            if self._ok(hi, eps):
                break
            hi *= 2.0
            if hi > float(b):
                hi = float(b)
                if self._ok(hi, eps):
                    break
                raise ValueError(
                    "SnappingMechanism: no scale below bound reaches epsilon; increase "
                    "bound or epsilon"
                )
        else:  # pragma: no cover
            raise ValueError("SnappingMechanism: calibration did not converge")
        # bisection on the bit patterns of positive floats: smallest ok scale in (lo, hi]
        lo_bits = int(np.float64(hi / 2.0 if hi / 2.0 > 0 else 0.0).view(np.int64))
        hi_bits = int(np.float64(hi).view(np.int64))
        while hi_bits - lo_bits > 1:
            mid_bits = (lo_bits + hi_bits) // 2
            mid = float(np.int64(mid_bits).view(np.float64))
            if self._ok(mid, eps):
                hi_bits = mid_bits
            else:
                lo_bits = mid_bits
        scale = float(np.int64(hi_bits).view(np.float64))
        if not self._ok(scale, eps):  # pragma: no cover - guarded by the loop invariant
            raise AssertionError("SnappingMechanism: calibration lost its invariant")
        return scale

    def _params(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity": self.sensitivity, "bound": self.bound}

    @property
    def snap(self) -> float:
        """``Lambda``: the smallest power of two ``>= scale`` (output resolution)."""
        m, e = math.frexp(self.scale)
        return self.scale if m == 0.5 else math.ldexp(1.0, e)

    def __call__(self, x: Any, *, rng: Any = None) -> np.ndarray:
        """Return the snapped noisy value(s) of ``x`` (floats in ``[-bound, bound]``)."""
        return _noise.snapping(x, self.scale, self.bound, rng=rng)

    def confidence_interval(self, alpha: float) -> float:
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
            w_up = _float_up(Fraction(int(mpmath.ceil(mpmath.ldexp(w, 300)))) / 2**300)
        return min(w_up, 2.0 * self.bound)
