"""The price of putting Gaussian noise on a grid: discrete versus continuous privacy profile.

:class:`~dpfast.GaussianMechanism` adds ``g Y`` with ``Y ~ N_Z(0, s^2)`` per coordinate
(``s = sigma / g``, about ``2^39.5``) to inputs rounded to the grid ``g``; neighbouring
inputs then differ by ``g k`` with ``k`` an integer vector with at most ``m`` non-zero
entries.  :func:`grid_terms` returns an ``(epsilon', delta')`` such that the continuous
Gaussian mechanism being ``(epsilon', delta')``-DP for the shift ``k`` implies the
discrete one is ``(epsilon, delta)``-DP.

Proof (per coordinate that differs; the others are identical and drop out).  Let ``U`` be
uniform on ``[-1/2, 1/2)^m``, independent.  ``Y + U`` has the density
``p(z) = f(round z) / S`` with ``f(x) = exp(-x^2 / 2 s^2)`` and ``S = sum_n f(n) =
s sqrt(2 pi) (1 + theta)``, ``0 <= theta <= 2 e^{-2 pi^2 s^2} / (1 - e^{-2 pi^2 s^2})``
(Poisson summation).  Rounding ``Y + U (+ k)`` recovers ``Y (+ k)``, so the hockey-stick
divergences of the smoothed pair equal those of the discrete pair.  Against the normal
density ``phi``: ``|z^2 - round(z)^2| <= |z| + 1/4``, so on ``A = {|z_j| <= R}``
``e^{-eta - m log(1 + theta)} phi <= p <= e^{eta} phi`` with
``eta = m (R + 1/4) / (2 s^2)``.  Writing ``P, Q`` (``P', Q'``) for the smoothed
(continuous) outputs on the two neighbours and ``A_P = A + k``, ``A_Q = A``:

``P(S) - e^eps Q(S) <= e^eta [P'(S & A_P) - e^{eps''} Q'(S & A_Q)] + P(A_P^c)
<= e^eta delta_cont(eps'') + e^{eta + eps''} Q'(A_Q^c) + P(A_P^c)``

with ``eps'' = eps - 2 eta - m log(1 + theta)``.  The tails are bounded by union bounds:
``Q'(A_Q^c) <= 2 m Phibar(R / s)`` and ``P(A_P^c) <= m P[|Y| > R - 1/2] <=
2 m Phibar((R - 3/2) / s)`` (``f`` decreasing: a sum over ``y >= y0`` is at most the
integral from ``y0 - 1``).  So ``delta_cont(eps'') <= delta' = (delta - tails) e^{-eta}``
suffices.  ``R = c s`` with ``c`` chosen so that the tails are below ``2^-40 delta``;
then ``eta`` is about ``c m / (2 s)``: for ``s ~ 2^39.5``, ``eps`` shrinks by about
``1e-11 m`` and ``delta`` by a relative ``1e-11 m`` — no term grows with ``e^eps``.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from dpfast._core.conversions import mp_float_down

__all__ = ["grid_terms"]

_PREC = 200


def _mp(q: Fraction | int) -> mpmath.mpf:
    q = Fraction(q)
    return mpmath.mpf(q.numerator) / q.denominator


def grid_terms(
    epsilon: Fraction, delta: Fraction, m: int, s: Fraction, what: str | None = None
) -> tuple[float, float]:
    """``(epsilon', delta')`` for the continuous calibration (see the module docstring).

    Both are rounded down (the safe side), to the nearest float below at any magnitude
    (subnormal ``delta`` included).  Raises ``ValueError`` naming ``what`` (default: the
    ``epsilon`` and ``delta`` given) when nothing is left.
    """
    if what is None:
        what = f"epsilon={float(epsilon)!r}, delta={float(delta)!r}"
    with mpmath.workprec(_PREC):
        eps, dlt, sm = _mp(epsilon), _mp(delta), _mp(s)
        mm = mpmath.mpf(m)
        # R = c s: tails below 2^-40 delta (a choice; any R gives a valid bound)
        c = 2 + mpmath.sqrt(2 * (mpmath.log(4 * mm) + eps + mpmath.log(1 / dlt) + 40))
        r = c * sm
        x = mpmath.exp(-2 * mpmath.pi**2 * sm * sm)
        theta = 2 * x / (1 - x) if x < 1 else mpmath.inf
        eta = mm * (r + mpmath.mpf(1) / 4) / (2 * sm * sm)
        eps2 = eps - 2 * eta - mm * mpmath.log1p(theta)
        tail_q = 2 * mm * mpmath.ncdf(-r / sm)
        tail_p = 2 * mm * mpmath.ncdf(-(r - mpmath.mpf(3) / 2) / sm)
        d2 = (dlt - mpmath.exp(eta + eps2) * tail_q - tail_p) * mpmath.exp(-eta)
        # evaluation error at 200 bits is far below this relative slack
        slack = 1 - mpmath.mpf(2) ** -100
        eps_out = eps2 - abs(eps2) * mpmath.mpf(2) ** -100
        d_out = d2 * slack
        e_f = mp_float_down(eps_out) if eps_out > 0 else -1.0
        d_f = mp_float_down(d_out) if d_out > 0 else 0.0
        if e_f < 0 or d_f <= 0:
            raise ValueError(
                f"GaussianMechanism: {what} is too small for the float grid's "
                f"discretisation term (epsilon shrinks by {float(2 * eta):.3g}, delta by a "
                f"relative {float(1 - d2 / dlt):.3g}, leaving epsilon' = {float(eps_out):.3g},"
                f" delta' = {float(d_out):.3g}; both must stay positive floats); use "
                f"DiscreteGaussianMechanism or rho"
            )
    return max(e_f, 0.0), d_f
