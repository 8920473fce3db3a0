"""Closed-form chord-slope integrals of the (Poisson-subsampled) Laplace remove pair.

For ``P = (1-q) Lap(0, b) + q Lap(1, b)``, ``Q = Lap(0, b)`` the loss is increasing in
the output ``x`` on ``[0, 1]`` and constant outside (atoms at ``lo`` and ``hi``).  On the
continuous part ``Q(L > e) = Q(X > x(e)) = K r(e)^(-1/2)`` with ``r(e) = e^e - 1 + q``
and ``K = e^(-1/(2b)) sqrt(q) / 2`` (``x(e) = (b log(r/q) + 1) / 2``), so with ``y = e^e``

    ``int_u1^u2 Q(L > e) e^(e - a) de = 2 K e^(u1 - a) expm1(u2 - u1) / (sqrt r(u1) + sqrt r(u2))``

(``sqrt r2 - sqrt r1 = (r2 - r1) / (sqrt r1 + sqrt r2)`` and ``r2 - r1 = y2 - y1``: no
cancellation).  Below ``lo`` ``Q(L > e) = 1``, above ``hi`` it is 0, which gives the
chord-slope integrals of :func:`dpfast.accounting.pld._pmf._cell_integrals` in closed
form, with a *certified* error bound (standard model of floating-point arithmetic,
``exp``/``expm1``/``sqrt`` within 2 ulps): every operation's relative error is summed,
the conditioning of ``r`` near ``lo`` (``r = e^e g``, ``g = -expm1(log(1-q) - e)``:
relative error of ``g`` at most ``2u (|log(1-q)| + |t|) / |t| + 2u``, ``t = log(1-q) - e``,
large only within a few ulps of ``lo``; exact for ``q = 1``) included, the rounding of
the cell's end ``a + h``, and that of ``lo`` and ``hi`` themselves (the integrand
changes by at most 1 over a misplaced width of ``4u (|lo| + |hi|)``).
"""

from __future__ import annotations

import math

import numpy as np

_U = 2.0**-53


def laplace_remove_cell_integrals(q: float, b: float, lo: float, hi: float, a: np.ndarray,
                                  h: np.ndarray, gt: bool | np.ndarray
                                  ) -> tuple[np.ndarray, np.ndarray]:
    """``int_a^(a+h) S(e) e^(e - a) de`` and a certified bound on its rounding error, with
    ``S = -Q(L > e)`` where ``gt`` (flag or one per cell) and ``S = Q(L <= e)`` elsewhere."""
    a = np.asarray(a, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    end = a + h
    k = 0.5 * math.exp(-0.5 / b) * math.sqrt(q)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        # below lo: Q(L > e) = 1
        hb = np.clip(np.minimum(end, lo) - a, 0.0, None)
        below = np.expm1(hb)
        # the continuous part [m1, m2]
        m1, m2 = np.clip(a, lo, hi), np.clip(end, lo, hi)
        w = np.maximum(m2 - m1, 0.0)
        # r = e^m - (1 - q) = e^m g, g = -expm1(log(1 - q) - m) (exactly 1 for q = 1);
        # mathematically r >= r_min = q e^(-1/b) on [lo, hi]
        r_min = max(q * math.exp(-1.0 / b), 1e-300)
        if q >= 1.0:
            g1 = g2 = np.ones_like(m1)
            rel1 = rel2 = np.zeros_like(m1)
        else:
            big_l = math.log1p(-q)
            t1, t2 = np.minimum(big_l - m1, 0.0), np.minimum(big_l - m2, 0.0)
            g1, g2 = -np.expm1(t1), -np.expm1(t2)
            # |fl(t) - t| <= 2u (|log(1-q)| + |t|); e^t / |expm1(t)| <= 1 / |t|
            rel1 = 2.0 * _U * (abs(big_l) + np.abs(t1)) / np.abs(t1) + 2.0 * _U
            rel2 = 2.0 * _U * (abs(big_l) + np.abs(t2)) / np.abs(t2) + 2.0 * _U
        r1 = np.maximum(np.exp(m1) * g1, r_min)
        r2 = np.maximum(np.exp(m2) * g2, r_min)
        s1, s2 = np.sqrt(r1), np.sqrt(r2)
        lead = np.exp(m1 - a)
        whole_mid = lead * np.expm1(w)  # int e^(e - a) over [m1, m2]
        den = s1 + s2
        mid = np.where(w > 0.0, 2.0 * k * whole_mid / np.where(den > 0.0, den, 1.0), 0.0)
        # above hi: Q(L > e) = 0, Q(L <= e) = 1
        start_hi = np.maximum(a, hi)
        above = np.where(end > hi, np.exp(start_hi - a) * np.expm1(end - start_hi), 0.0)
        gt_val = -(below + mid)
        le_val = (whole_mid - mid) + above
        value = np.where(gt, gt_val, le_val)
        # error bound: relative errors of r (conditioning near lo), sqrt, the sum, the
        # exponentials (their arguments rounded by u |argument|) and the products
        rho1 = np.nan_to_num(rel1, nan=np.inf) + 3.0 * _U * (1.0 + np.abs(m1))
        rho2 = np.nan_to_num(rel2, nan=np.inf) + 3.0 * _U * (1.0 + np.abs(m2))
        rel_mid = 0.5 * (rho1 + rho2) + 16.0 * _U + _U * (np.abs(m1 - a) + w + 1.0)
        err_mid = np.where(w > 0.0, mid * np.minimum(rel_mid, 1.0), 0.0)
        err_whole = whole_mid * (_U * (np.abs(m1 - a) + w + 1.0) + 6.0 * _U)
        err_below = below * (_U * (hb + 1.0) + 4.0 * _U)
        err_above = above * (_U * (np.abs(start_hi - a) + h + 1.0) + 8.0 * _U)
        # lo / hi rounded: in the cells that reach them, the integrand (times e^(e - a)
        # <= e^h) jumps by at most 1 at lo and by Q(L > hi-) = e^(-1/b) / 2 at hi, on a
        # width of at most tol = 4u (|lo| + |hi|) per end
        tol = 4.0 * _U * (abs(lo) + abs(hi))
        near_lo = (a <= lo + tol) & (end >= lo - tol)
        near_hi = (a <= hi + tol) & (end >= hi - tol)
        err_ends = 2.0 * tol * np.exp(h) * (near_lo + near_hi * 0.5 * math.exp(-1.0 / b)
                                            * (1.0 + 1e-9))
        # the cell's end a + h is rounded (by u |a + h|): the integrand is integrated over
        # a width off by that much; |S| <= 1 (D form) or Q(L > a - tol_a), the gt form
        # being decreasing: <= 2 Q(L > m1) where r(a - tol_a) >= r(a) / 4 is certain
        tol_a = 4.0 * _U * (np.abs(a) + h + 1.0)
        sure = (a - tol_a >= lo) & (np.exp(m1) * tol_a <= 0.5 * r1) & (rho1 <= 0.25)
        s_max = np.where(gt & sure, np.minimum(2.0 * k / s1, 1.0), 1.0)
        err_end = 2.0 * _U * np.abs(end) * np.exp(h) * s_max
        err = (np.where(gt, err_below + err_mid, err_whole + err_mid + err_above) + err_ends
               + err_end)
    return value, (err + 1e-300) * (1.0 + 1e-9) + 4.0 * _U * np.abs(value)
