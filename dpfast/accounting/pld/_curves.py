"""Privacy-loss distributions of the mechanisms the PLD accountant supports.

A *curve* describes one ordered pair ``(P, Q)`` of output distributions (one direction of
a neighbouring relation) through its privacy loss ``L = log(dP/dQ)``:

* ``q_le(e)`` = ``Q(L <= e)`` and ``q_gt(e)`` = ``Q(L > e)`` (each computed without
  cancellation, so that small values keep their relative precision);
* ``p_gt(e)`` = ``P(L > e)`` (``+inf`` losses included);
* ``lo``, ``hi``: the finite loss range to discretise (``Q(L < lo)`` and ``P(L > hi)``
  are below ``exp(-_Z**2/2)``, or zero where the range is exact);
* ``breaks``: loss values with an atom (the cumulative functions jump there);
* ``inf_mass``: ``P(L = +inf)``; ``symmetric``: the reverse pair has the same curve.

The hockey-stick divergence follows from these:
``delta(e) = P(L > e) - e^e Q(L > e)``.

Numerics: float64 with scipy's ``ndtr`` (relative accuracy in both tails); the losses of
the Poisson-subsampled mechanisms are inverted in closed form
(``x(e) = sigma^2 log((e^e - 1 + q) / q) + 1/2`` for the Gaussian), written so that no
term overflows for ``|e| < 700``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from ._laplace_cells import laplace_remove_cell_integrals

#: tail cut of the Gaussian ranges in standard deviations (mass beyond < 1.2e-19 per
#: event, moved to +inf: adds count * 1.2e-19 to delta)
_Z = 9.0
#: Gauss-Hermite rule for E f(Z), Z ~ N(0, 1) (loss moments for the grid choice)
_GH = (np.polynomial.hermite_e.hermegauss(96)[0],
       np.polynomial.hermite_e.hermegauss(96)[1] / math.sqrt(2.0 * math.pi))
_U = 2.0**-53
#: Gauss-Legendre 4-node error constant (4!)^4 / (9 (8!)^3)
_GL4_C = math.factorial(4) ** 4 / (9.0 * math.factorial(8) ** 3)
#: clip of the smooth variable of the Gaussian curves (q e^-80 is negligible)
_W_MAX = 80.0


def _log_em1_plus(e: np.ndarray, q: float) -> np.ndarray:
    """``log(e^e - (1 - q))`` for ``e > log(1 - q)`` (``-inf`` at the boundary)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if q >= 1.0:
            return np.asarray(e, dtype=np.float64)
        return e + np.log1p(np.maximum(-(1.0 - q) * np.exp(-e), -1.0))


class Curve:
    """Base class; subclasses fill the attributes and the three cumulative functions."""

    lo: float
    hi: float
    breaks: tuple[float, ...] = ()
    inf_mass: float = 0.0
    symmetric: bool = False
    #: whether the cumulative functions are smooth in a variable ``w`` other than the
    #: loss (then ``w_of_eps`` and ``eps_of_w`` -> (eps, d eps / d w) are defined)
    reparam: bool = False
    #: below this loss ``Q(L > e) = 1`` and the smooth variable does not reach (the
    #: lower end of the subsampled Gaussian's remove-direction loss)
    flat_below: float = -math.inf
    #: a loss of which every atom is an integer multiple (the automatic grid divides it,
    #: so no atom moves up; atomic curves: ``lattice``), and whether there are no atoms
    anchor: float | None = None
    atomless: bool = False

    def q_le(self, e: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def q_gt(self, e: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def p_gt(self, e: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # the smooth variable, where ``reparam`` (see the subclasses)
    def w_of_eps(self, e: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def s_of_w(self, w: np.ndarray, gt: bool | np.ndarray = False
               ) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def weight_of_w(self, w: np.ndarray, base: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def moments(self) -> tuple[float, float] | None:
        """(mean, variance) of the loss under ``P`` if cheaply known, else None."""
        return None

    def delta(self, e: np.ndarray) -> np.ndarray:
        """Hockey-stick divergence ``delta(e)`` (for tests and diagnostics)."""
        e = np.asarray(e, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            d = self.p_gt(e) - np.exp(e) * self.q_gt(e)
        return np.clip(np.nan_to_num(d, nan=0.0), 0.0, 1.0)


#: coefficients (x^0 .. x^n) of He+_n, the probabilists' Hermite polynomials with all
#: coefficients made positive, n = 0 .. 7
_HE_PLUS = ((1,), (0, 1), (1, 0, 1), (0, 3, 0, 1), (3, 0, 6, 0, 1), (0, 15, 0, 10, 0, 1),
            (15, 0, 45, 0, 15, 0, 1), (0, 105, 0, 105, 0, 21, 0, 1))


def _he_sum_coefficients(s: float) -> tuple[float, ...]:
    """Coefficients (x^0 .. x^7) of ``sum_(j=1..8) C(8, j) s^j He+_(j-1)(x)``."""
    out = [0.0] * 8
    for j in range(1, 9):
        w = math.comb(8, j) * s**j
        for k, h in enumerate(_HE_PLUS[j - 1]):
            out[k] += w * h
    return tuple(out)


class GaussianRemove(Curve):
    """``P = (1-q) N(0, s^2) + q N(1, s^2)``, ``Q = N(0, s^2)`` (``q = 1``: plain Gaussian).

    ``L(x) = log(1 - q + q exp((2x - 1) / (2 s^2)))`` is increasing in ``x``.
    """
    atomless = True

    def __init__(self, q: float, sigma: float) -> None:
        self.q, self.s = q, sigma
        self._he_c = _he_sum_coefficients(sigma)  # for gl4_error_bound
        self.symmetric = q >= 1.0
        self.lmin = math.log1p(-q) if q < 1.0 else -math.inf
        self.flat_below = self.lmin
        self.lo = self.lmin if q < 1.0 else float(self.loss(np.array(-_Z * sigma)))
        self.hi = float(self.loss(np.array(1.0 + _Z * sigma)))

    reparam = True  # w = (2x - 1) / (2 s^2), the loss without sampling

    def w_of_eps(self, e: np.ndarray) -> np.ndarray:
        if self.q >= 1.0:
            return np.asarray(e, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = _log_em1_plus(e, self.q) - math.log(self.q)
        return np.maximum(np.nan_to_num(w, nan=-_W_MAX), -_W_MAX)  # the singular end only

    def eps_of_w(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.q >= 1.0:
            return w, np.ones_like(w)
        e = np.logaddexp(math.log1p(-self.q), math.log(self.q) + w)
        return e, np.exp(math.log(self.q) + w - e)

    def moments(self) -> tuple[float, float]:
        t, wt = _GH
        m1 = m2 = 0.0
        for shift, weight in ((0.0, 1.0 - self.q), (1.0, self.q)):
            if weight > 0.0:
                v = self.loss(shift + self.s * t)
                m1 += weight * float(wt @ v)
                m2 += weight * float(wt @ (v * v))
        return m1, max(m2 - m1 * m1, 0.0)

    def s_of_w(self, w: np.ndarray, gt: bool | np.ndarray = False) -> np.ndarray:
        """``Q(L <= e)`` (``e < 0``) or ``-Q(L > e)`` (``e >= 0``, or everywhere with
        ``gt``, a flag or an array broadcasting against ``w``) at ``e = e(w)``."""
        z = (self.s * self.s * w + 0.5) / self.s
        neg = (w < 0.0) & np.logical_not(gt)
        v = special.ndtr(np.where(neg, z, -z))
        return np.where(neg, v, -v)

    def weight_of_w(self, w: np.ndarray, base: np.ndarray) -> np.ndarray:
        """``e^(e(w) - base) de/dw`` (= ``q e^(w - base)``: no logarithm needed)."""
        return self.q * np.exp(w - base)

    def gl4_error_bound(self, lo: np.ndarray, w: np.ndarray, base: np.ndarray,
                        gt: bool | np.ndarray) -> np.ndarray:
        """Certified bound on the error of the 4-node Gauss-Legendre rule for
        ``int S(w) q e^(w - base) dw`` over ``[lo, lo + w]`` (``w > 0``).

        Gauss-Legendre: ``|E| <= w^9 (4!)^4 / (9 (8!)^3) max |f^(8)|``.  With
        ``f = S g``, ``g = q e^(w - base)`` (all derivatives ``g``) and ``S = Phi(z)`` or
        ``-Phi(-z)``, ``z = s w + 1 / (2 s)``: ``|S^(j)| = s^j |He_(j-1)(z)| phi(z)`` for
        ``j >= 1``; ``|He_n(z)| <= He+_n(|z|)`` (the same polynomial with all coefficients
        made positive, increasing in ``|z|``), so over the piece
        ``|f^(8)| <= g_max (S_max + sum_j C(8, j) s^j He+_(j-1)(Z_max) phi(Z_min))``
        with ``Z_min, Z_max`` the extreme ``|z|`` and ``S_max`` from monotonicity and
        ``Phi(-t) <= exp(-t^2 / 2) / 2`` (``t >= 0``).  Plus the effect of the float
        placement of the nodes and of the rounding of ``z`` (first-derivative bound);
        the special functions' own relative error (a few ulps) is left to the caller's
        64-ulp rounding of each slope.
        """
        s = self.s
        zl = (s * s * lo + 0.5) / s
        zh = (s * s * (lo + w) + 0.5) / s
        al, ah = np.abs(zl), np.abs(zh)
        zmax = np.maximum(al, ah)
        zmin = np.where((zl <= 0.0) & (zh >= 0.0), 0.0, np.minimum(al, ah))
        with np.errstate(under="ignore", over="ignore"):
            b_le = np.where(zh < 0.0, 0.5 * np.exp(-0.5 * zh * zh), 1.0)  # Phi(z) <= Phi(zh)
            b_gt = np.where(zl > 0.0, 0.5 * np.exp(-0.5 * zl * zl), 1.0)  # Phi(-z) <= Phi(-zl)
            s_max = np.where(gt, b_gt, np.where(lo + w <= 0.0, b_le, np.maximum(b_le, b_gt)))
            # sum_j C(8, j) s^j He+_(j-1)(zmax) by Horner (nonnegative coefficients and
            # argument: relative rounding below 16u, inside the final 1e-10 margin)
            c = self._he_c
            acc = np.full_like(zmax, c[7])
            for k in range(6, -1, -1):
                acc = acc * zmax + c[k]
            phi = np.exp(-0.5 * zmin * zmin) / math.sqrt(2.0 * math.pi)
            g_max = self.q * np.exp(lo + w - base)
            d8 = g_max * (s_max + acc * phi)
            # float placement of the nodes (t = lo + (x + 1) w / 2: off by <= 2u(|lo| + w),
            # large against narrow pieces far from 0) and the rounding of z (<= 4u(s|t| +
            # 1/(2s)) absolute): the integrand moves by |f'| |dt| <= g_max (S_max + s phi)
            # |dt| and by g_max phi |dz|, over the piece's width
            tmax = np.abs(lo) + w
            d1 = g_max * ((s_max + s * phi) * 2.0 * _U * tmax
                          + phi * 4.0 * _U * (s * tmax + 0.5 / s))
            return (_GL4_C * w**9 * d8 + w * d1 + 1e-300) * (1.0 + 1e-10)

    def loss(self, x: np.ndarray) -> np.ndarray:
        t = (2.0 * x - 1.0) / (2.0 * self.s * self.s)
        if self.q >= 1.0:
            return t
        return np.logaddexp(math.log1p(-self.q), math.log(self.q) + t)

    def _z(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(e, dtype=np.float64)
        inside = e > self.lmin
        ee = np.where(inside, e, self.lmin + 1.0 if self.q < 1.0 else 0.0)
        x = self.s * self.s * (_log_em1_plus(ee, self.q) - math.log(self.q)) + 0.5
        return x / self.s, inside

    def q_le(self, e):
        z, inside = self._z(e)
        return np.where(inside, special.ndtr(z), 0.0)

    def q_gt(self, e):
        z, inside = self._z(e)
        return np.where(inside, special.ndtr(-z), 1.0)

    def p_gt(self, e):
        z, inside = self._z(e)
        v = (1.0 - self.q) * special.ndtr(-z) + self.q * special.ndtr(1.0 / self.s - z)
        return np.where(inside, v, 1.0)


class GaussianAdd(Curve):
    """``P = N(0, s^2)``, ``Q = (1-q) N(0, s^2) + q N(1, s^2)`` (``q < 1``).

    ``L(x) = -log(1 - q + q exp((2x - 1) / (2 s^2)))`` is decreasing in ``x`` and
    bounded above by ``-log(1 - q)``.
    """
    atomless = True

    def __init__(self, q: float, sigma: float) -> None:
        self.q, self.s = q, sigma
        self.lmax = -math.log1p(-q)
        self.hi = self.lmax
        t = (2.0 * (1.0 + _Z * sigma) - 1.0) / (2.0 * sigma * sigma)
        self.lo = -float(np.logaddexp(math.log1p(-q), math.log(q) + t))

    reparam = True  # w = (2x - 1) / (2 s^2)

    def w_of_eps(self, e: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            w = _log_em1_plus(-np.asarray(e, dtype=np.float64), self.q) - math.log(self.q)
        return np.maximum(np.nan_to_num(w, nan=-_W_MAX), -_W_MAX)  # the singular end only

    def moments(self) -> tuple[float, float]:
        t, wt = _GH
        u = (2.0 * self.s * t - 1.0) / (2.0 * self.s * self.s)
        v = -np.logaddexp(math.log1p(-self.q), math.log(self.q) + u)
        m1 = float(wt @ v)
        return m1, max(float(wt @ (v * v)) - m1 * m1, 0.0)

    def s_of_w(self, w: np.ndarray, gt: bool | np.ndarray = False) -> np.ndarray:
        """``Q(L <= e)`` (``e < 0``, i.e. ``w > 0``) or ``-Q(L > e)`` (else, or everywhere
        with ``gt``, a flag or an array broadcasting against ``w``) at ``e = e(w)``."""
        z = (self.s * self.s * w + 0.5) / self.s
        zi = 1.0 / self.s
        pos = (w > 0.0) & np.logical_not(gt)  # e < 0: Q(L <= e); else -Q(L > e)
        u = np.where(pos, -z, z)
        v = (1.0 - self.q) * special.ndtr(u) + self.q * special.ndtr(u + np.where(pos, zi, -zi))
        return np.where(pos, v, -v)

    def weight_of_w(self, w: np.ndarray, base: np.ndarray) -> np.ndarray:
        """``e^(e(w) - base) de/dw`` with ``e = -m``, ``m = log(1 - q + q e^w)``."""
        m = np.logaddexp(math.log1p(-self.q), math.log(self.q) + w)
        return -self.q * np.exp(w - 2.0 * m - base)

    def eps_of_w(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = np.logaddexp(math.log1p(-self.q), math.log(self.q) + w)
        return -m, -np.exp(math.log(self.q) + w - m)

    def _z(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(e, dtype=np.float64)
        inside = e < self.lmax
        ee = np.where(inside, e, self.lmax - 1.0)
        x = self.s * self.s * (_log_em1_plus(-ee, self.q) - math.log(self.q)) + 0.5
        return x / self.s, inside

    def q_gt(self, e):
        z, inside = self._z(e)
        v = (1.0 - self.q) * special.ndtr(z) + self.q * special.ndtr(z - 1.0 / self.s)
        return np.where(inside, v, 0.0)

    def q_le(self, e):
        z, inside = self._z(e)
        v = (1.0 - self.q) * special.ndtr(-z) + self.q * special.ndtr(1.0 / self.s - z)
        return np.where(inside, v, 1.0)

    def p_gt(self, e):
        z, inside = self._z(e)
        return np.where(inside, special.ndtr(z), 0.0)


def _lap_loss_bounds(q: float, b: float) -> tuple[float, float]:
    if q >= 1.0:
        return -1.0 / b, 1.0 / b
    lo = float(np.logaddexp(math.log1p(-q), math.log(q) - 1.0 / b))
    hi = float(np.logaddexp(math.log1p(-q), math.log(q) + 1.0 / b))
    return lo, hi


class LaplaceRemove(Curve):
    """``P = (1-q) Lap(0, b) + q Lap(1, b)``, ``Q = Lap(0, b)`` (``q = 1``: plain Laplace).

    ``L = log(1 - q + q exp(g(x)))`` with ``g(x) = (|x| - |x - 1|) / b``; atoms at both
    ends of the loss range.
    """

    def __init__(self, q: float, b: float) -> None:
        self.q, self.b = q, b
        self.symmetric = q >= 1.0
        self.lo, self.hi = _lap_loss_bounds(q, b)
        self.breaks = (self.lo, self.hi)
        # plain Laplace: the atoms at -1/b and 1/b (the subsampled ones are incommensurate)
        self.anchor = self.hi if self.symmetric else None

    def cell_integrals(self, a: np.ndarray, h: np.ndarray, gt: bool | np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Chord-slope integrals in closed form with a certified error bound
        (:mod:`~dpfast.accounting.pld._laplace_cells`)."""
        return laplace_remove_cell_integrals(self.q, self.b, self.lo, self.hi, a, h, gt)

    def _x(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        e = np.asarray(e, dtype=np.float64)
        below, above = e < self.lo, e >= self.hi
        ee = np.clip(e, self.lo, self.hi)
        ell = _log_em1_plus(np.where(below | above, 0.5 * (self.lo + self.hi), ee), self.q)
        x = np.clip((self.b * (ell - math.log(self.q)) + 1.0) / 2.0, 0.0, 1.0)
        return x, below, above

    def q_gt(self, e):
        x, below, above = self._x(e)
        v = 0.5 * np.exp(-x / self.b)
        return np.where(below, 1.0, np.where(above, 0.0, v))

    def q_le(self, e):
        x, below, above = self._x(e)
        v = -np.expm1(math.log(0.5) - x / self.b)
        return np.where(below, 0.0, np.where(above, 1.0, v))

    def p_gt(self, e):
        x, below, above = self._x(e)
        v = (1.0 - self.q) * 0.5 * np.exp(-x / self.b) - self.q * np.expm1(
            math.log(0.5) - (1.0 - x) / self.b)
        return np.where(below, 1.0, np.where(above, 0.0, v))


class LaplaceAdd(Curve):
    """``P = Lap(0, b)``, ``Q = (1-q) Lap(0, b) + q Lap(1, b)`` (``q < 1``)."""

    def __init__(self, q: float, b: float) -> None:
        self.q, self.b = q, b
        lmin, lmax = _lap_loss_bounds(q, b)
        self.lo, self.hi = -lmax, -lmin
        self.breaks = (self.lo, self.hi)

    def _x(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        e = np.asarray(e, dtype=np.float64)
        below, above = e < self.lo, e >= self.hi
        ee = np.clip(e, self.lo, self.hi)
        ell = _log_em1_plus(-np.where(below | above, 0.5 * (self.lo + self.hi), ee), self.q)
        x = np.clip((self.b * (ell - math.log(self.q)) + 1.0) / 2.0, 0.0, 1.0)
        return x, below, above

    def q_gt(self, e):
        x, below, above = self._x(e)
        v = -(1.0 - self.q) * np.expm1(math.log(0.5) - x / self.b) + self.q * 0.5 * np.exp(
            -(1.0 - x) / self.b)
        return np.where(below, 1.0, np.where(above, 0.0, v))

    def q_le(self, e):
        x, below, above = self._x(e)
        v = (1.0 - self.q) * 0.5 * np.exp(-x / self.b) - self.q * np.expm1(
            math.log(0.5) - (1.0 - x) / self.b)
        return np.where(below, 0.0, np.where(above, 1.0, v))

    def p_gt(self, e):
        x, below, above = self._x(e)
        v = -np.expm1(math.log(0.5) - x / self.b)
        return np.where(below, 1.0, np.where(above, 0.0, v))
