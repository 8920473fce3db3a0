"""Poisson-subsampled Gaussian RDP (Mironov, Talwar & Zhang 2019, "MTZ19").

Numerics
--------

* at integer orders from the exact finite binomial sum written as
  ``A - 1 = sum_{k>=2} C(a,k) (1-q)^(a-k) q^k expm1(k(k-1)/(2 sigma^2))``, whose
  terms are all positive (no cancellation, full relative precision even for tiny
  ``q``), summed in log space;
* at fractional orders by the trapezoidal rule on the real line applied to the
  non-negative integrand ``phi_sigma(z) [(1+r)^a - 1 - a r]`` with
  ``r = q (exp((2z-1)/(2 sigma^2)) - 1)`` (``E[r] = 0`` so this integrates to
  ``A - 1``).  The integrand is analytic in the strip ``|Im z| < pi sigma^2``, so the
  trapezoidal error decays like ``exp(-2 pi^2 sigma^2 / h)``; the step ``h`` and the
  truncation ``[-10 sigma, ceil(a) + 10 sigma]`` are chosen so that the
  discretisation and truncation errors are below ``1e-18`` relative, and the small
  ``|r|`` region uses the binomial series (a matrix product) so nothing cancels.
  The result agrees with a 25-digit mpmath quadrature to ~1e-13 relative (see
  ``tests/test_accounting_rdp.py``).  For very small ``sigma`` (grids above 200k
  nodes, roughly ``sigma < 0.015``) the fractional orders fall back to the chord of
  the convex cumulant between neighbouring integer orders: an upper bound, not exact.
  dp_accounting's fractional-order series adds the absolute values of the alternating
  binomial terms and overestimates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from dpfast._core.conversions import rdp_to_epsilon as _eps_from_rdp
from dpfast._core.conversions import up_array as _up
from dpfast._core.rounding import ULP as _ULP
from dpfast._core.validate import check_positive, check_probability

from .orders import (
    _SERIES_J,
    _as_orders,
    _log1p_exp,
    _log_expm1,
    _log_sensitivity,
    _Orders,
    _orders_info,
)

__all__ = ["subsampled_gaussian_rdp"]


def _sgm_int(q: float, sigma: float, info: _Orders) -> np.ndarray:
    """RDP of the Poisson-subsampled Gaussian at the integer orders (rounded up)."""
    k = info.k_all
    c = k * (k - 1.0) / (2.0 * sigma * sigma)
    lem1 = np.zeros_like(k)
    lem1[2:] = _log_expm1(c[2:])
    logq, log1mq = math.log(q), math.log1p(-q)
    row = k * (logq - log1mq) + lem1
    rowk = row[info.k_flat]
    lt = info.lb_flat + rowk
    mx = np.maximum.reduceat(lt, info.offsets)
    w = np.exp(np.maximum(lt - mx[info.row_id], -700.0))
    tot = np.add.reduceat(w, info.offsets)
    a = info.ints
    logb = np.log(tot) + mx + a * log1mq  # log(A - 1)
    kl = _log1p_exp(logb)  # log(A)
    eps = kl / (a - 1.0)
    # rounding margin: weighted magnitude of the logs that make up the dominant terms
    mag = np.add.reduceat(w * (np.abs(lt) + info.abs_lb_flat + np.abs(rowk)), info.offsets) / tot
    rel_b = info.lb_err + 8.0 * _ULP * (mag + np.abs(a * log1mq) + math.log2(info.kmax + 2.0) + 4.0)
    rel = rel_b * _log_sensitivity(logb, kl) + 4.0 * _ULP
    return _up(eps, rel)


def _sgm_frac(
    q: float, sigma: float, info: _Orders, idx: np.ndarray | None = None
) -> np.ndarray:
    """RDP of the Poisson-subsampled Gaussian at the fractional orders (rounded up).

    ``idx`` selects a subset of ``info.fracs`` (default: all).
    """
    if idx is None:
        af, binom, r_small, log_af = info.fracs, info.binom, info.r_small, info.log_af
    else:
        af, binom, r_small = info.fracs[idx], info.binom[idx], info.r_small[idx]
        log_af = info.log_af[idx]
    if af.size == 0:
        return np.zeros(0)
    h, zlo, n = _grid(sigma, float(np.max(af)))
    if n > _MAX_GRID:
        # tiny sigma: the grid would not fit in memory; use the convexity upper bound
        return _frac_by_interpolation(q, sigma, af)
    chunk = max(1, _MAX_CELLS // n)
    if af.size > chunk:
        out = np.empty_like(af)
        for i in range(0, af.size, chunk):
            sl = slice(i, i + chunk)
            out[sl] = _sgm_frac_quad(q, sigma, af[sl], binom[sl], r_small[sl], log_af[sl])
        return out
    return _sgm_frac_quad(q, sigma, af, binom, r_small, log_af)


_MAX_GRID = 200_000  # quadrature nodes (sigma below ~0.015 at order 11 exceeds this)
_MAX_CELLS = 2_000_000  # orders x nodes per block


def _grid(sigma: float, amax: float) -> tuple[float, float, int]:
    # step: aliasing error <= exp(-38) relative (analytic in |Im z| < pi sigma^2)
    h = min(0.6 * sigma, 0.4 * sigma * sigma)
    kz = 9.0  # Gaussian tails beyond 9 sigma: < 1e-17 relative
    zlo = -kz * sigma
    zhi = max(math.ceil(amax), 2.0) + kz * sigma
    return h, zlo, int(math.ceil((zhi - zlo) / h)) + 1


def _frac_by_interpolation(q: float, sigma: float, af: np.ndarray) -> np.ndarray:
    """Upper bound at fractional orders from the neighbouring integer orders.

    ``K(a) = (a - 1) eps(a)`` is convex with ``K(1) = 0``, so the chord between
    ``floor(a)`` and ``ceil(a)`` lies above it (WBK19, Corollary 10).
    """
    lo = np.floor(af)
    hi = lo + 1.0
    need = sorted({float(x) for x in np.concatenate((lo, hi)) if x >= 2.0})
    helper = _orders_info(tuple(need))
    vals = dict(zip(need, _sgm_int(q, sigma, helper), strict=True))
    k_lo = np.array([0.0 if x < 2 else (x - 1.0) * vals[float(x)] for x in lo])
    k_hi = np.array([(x - 1.0) * vals[float(x)] for x in hi])
    t = af - lo
    return _up(((1.0 - t) * k_lo + t * k_hi) / (af - 1.0), 8 * _ULP)


def _sgm_frac_quad(
    q: float, sigma: float, af: np.ndarray, binom: np.ndarray, r_small: np.ndarray,
    log_af: np.ndarray,
) -> np.ndarray:
    """Trapezoidal-rule evaluation (see the module docstring) for the orders ``af``."""
    s2 = sigma * sigma
    h, zlo, n = _grid(sigma, float(np.max(af)))
    z = zlo + h * np.arange(n, dtype=np.float64)
    lam = (2.0 * z - 1.0) / (2.0 * s2)
    logphi = -z * z / (2.0 * s2) - math.log(sigma * math.sqrt(2.0 * math.pi))
    pos = lam > 0.0
    logq = math.log(q)
    # r = q expm1(lam) in (-q, inf); log|r| and log1p(r) without overflow
    lamc = np.minimum(lam, 700.0)
    r = q * np.expm1(lamc)
    with np.errstate(divide="ignore"):
        logabsr = np.where(pos, logq + _log_expm1(np.maximum(lam, 1e-300)), np.log(np.abs(r)))
    log1pr = np.where(pos, np.maximum(logabsr, 0.0) + np.log1p(np.exp(-np.abs(logabsr))),
                      np.log1p(r))
    absr = np.abs(r)
    # series part: f = r^2 P(r), P(r) = sum_j C(a, j+2) r^j (all orders at once: matmul)
    rs = np.where(absr <= 0.4, r, 0.0)
    pw = rs[:, None] ** _SERIES_J[None, :]
    pw[np.abs(pw) < 1e-250] = 0.0  # keep subnormals out of the product
    p_ser = binom @ pw.T  # (m, n)
    use_series = absr[None, :] <= r_small[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = 2.0 * logabsr[None, :] + np.log(np.where(use_series, p_ser, 1.0))
    # direct part where some order needs it: f = (1+r)^a - 1 - a r
    cols = np.flatnonzero(absr > r_small.min())
    ulog_max = 0.0
    if cols.size:
        ul = af[:, None] * log1pr[None, cols]
        ulog_max = float(np.abs(ul).max())
        cpos = pos[cols]
        # r > 0: log f = ul + log1p(-(1 + a r) / (1 + r)^a)
        t = log_af[:, None] + logabsr[None, cols]  # log(a r)
        log1par = np.maximum(t, 0.0) + np.log1p(np.exp(-np.minimum(np.abs(t), 700.0)))
        x = np.exp(np.maximum(log1par - ul, -700.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            d_pos = ul + np.log1p(-np.minimum(x, 1.0))
            # r < 0: f = expm1(a log1p r) - a r, no overflow possible
            f_neg = np.expm1(np.minimum(ul, 700.0)) - af[:, None] * r[None, cols]
            d_neg = np.log(np.maximum(f_neg, 0.0))
        direct = np.where(cpos[None, :], d_pos, d_neg)
        sub = logs[:, cols]
        logs[:, cols] = np.where(use_series[:, cols], sub, direct)
    logs = np.where(np.isnan(logs), -np.inf, logs)
    lt = logs + logphi[None, :]
    mx = lt.max(axis=1)
    w = np.exp(np.maximum(lt - mx[:, None], -700.0))
    w[~np.isfinite(lt)] = 0.0
    tot = w.sum(axis=1)
    logi = np.log(tot) + mx + math.log(h)  # log(A - 1)
    kl = _log1p_exp(logi)
    eps = kl / (af - 1.0)
    fin = np.isfinite(lt)
    comp = np.abs(np.where(fin, logs, 0.0)) + np.abs(logphi)[None, :]
    mag = (w * comp).sum(axis=1) / tot + ulog_max * 1e-3
    rel_b = 8.0 * _ULP * (mag + math.log2(n) + 8.0) + 1e-14
    rel = rel_b * _log_sensitivity(logi, kl) + 4.0 * _ULP
    return _up(eps, rel)


def subsampled_gaussian_rdp(
    sampling_rate: float, noise_multiplier: float, orders: Iterable[float] | None = None
) -> np.ndarray:
    """RDP curve of the Poisson-subsampled Gaussian mechanism (MTZ19), rounded up.

    Parameters
    ----------
    sampling_rate : float
        Poisson sampling probability ``q`` in ``[0, 1]``.
    noise_multiplier : float
        ``sigma / L2 sensitivity`` (> 0).
    orders : sequence of float, optional
        RDP orders (> 1); default :data:`DEFAULT_ORDERS`.

    Returns
    -------
    numpy.ndarray
        ``eps(alpha)`` for each order.

    Privacy
    -------
    ``eps(alpha) = log(A_alpha) / (alpha - 1)`` with
    ``A_alpha = E_{z ~ N(0, sigma^2)}[(1 - q + q exp((2z - 1)/(2 sigma^2)))^alpha]``,
    the Rényi divergence of order ``alpha`` between ``(1-q) N(0,s^2) + q N(1,s^2)`` and
    ``N(0, s^2)``, which is the larger of the two directions (MTZ19, Theorem 5).
    Neighbouring relation: add/remove one record.

    Numerics
    --------
    See the module docstring: exact finite sum at integer orders, trapezoidal rule
    on a positive integrand at fractional orders; values are rounded up.
    """
    info = _orders_info(_as_orders(orders))
    q = check_probability(sampling_rate, "sampling_rate", zero=True, one=True)
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    return _sgm(q, sigma, info)


def _sgm(q: float, sigma: float, info: _Orders) -> np.ndarray:
    a = info.alphas
    if q == 0.0:
        return np.zeros_like(a)
    if q == 1.0:
        return _up(a / (2.0 * sigma * sigma), 2 * _ULP)
    out = np.empty_like(a)
    if info.int_idx.size:
        out[info.int_idx] = _sgm_int(q, sigma, info)
    if info.frac_idx.size:
        out[info.frac_idx] = _sgm_frac(q, sigma, info)
    return out


def _helper_ints(info: _Orders) -> _Orders:
    """Integer orders 2..floor(max fractional order) + 2 (for convexity bounds)."""
    top = int(math.floor(float(np.max(info.fracs)))) + 2
    return _orders_info(tuple(float(x) for x in range(2, top + 1)))


def _sgm_epsilon(
    q: float, sigma: float, steps: int, delta: float, info: _Orders
) -> tuple[float, float]:
    """``(epsilon, order)`` of ``steps`` compositions of the subsampled Gaussian.

    Equal to ``epsilon_from_rdp(orders, steps * subsampled_gaussian_rdp(...), delta)`` but
    evaluates the (costlier) fractional orders only where they can win: the cumulant
    ``K(a) = (a - 1) eps(a)`` is convex in ``a`` (it is a log moment generating function;
    MTZ19 show one pair of distributions is the worst case at every order), so chords
    through the exact integer orders give lower bounds on ``K`` at the fractional orders.
    A fractional order whose lower-bounded candidate epsilon is not below the best
    value found is skipped; the minimum is therefore the same as with all orders.
    """
    a = info.alphas
    if q == 0.0:
        return 0.0, float(a[0])
    if q == 1.0:
        return _eps_from_rdp(a, _up(steps * _sgm(q, sigma, info), 2 * _ULP), delta)
    best, best_order = math.inf, math.nan
    e_int = None
    if info.int_idx.size:
        e_int = _sgm_int(q, sigma, info)
        ri = _up(steps * e_int, 2 * _ULP)
        best, best_order = _eps_from_rdp(info.ints, ri, delta)
    if info.frac_idx.size == 0 or best == 0.0:
        return best, best_order
    helper = _helper_ints(info)
    hi = helper.ints
    pos = info.helper_pos
    if e_int is not None and pos is not None:
        e_h = e_int[pos]
    else:
        e_h = _sgm_int(q, sigma, helper)
    k_up = np.zeros(int(np.max(hi)) + 1)  # K at integers 0..top (K(0) = K(1) = 0)
    k_up[2:] = _up(steps * (hi - 1.0) * e_h, 4 * _ULP)
    k_lo = k_up * (1.0 - 1e-9)  # computed values are within ~1e-11 of the truth
    af = info.fracs
    n = np.floor(af).astype(np.int64)
    t = af - n
    lb = np.maximum(
        k_lo[n] + t * (k_lo[n] - k_up[n - 1]),  # chord (n-1, n) extended to the right
        k_lo[n + 1] - (1.0 - t) * (k_up[n + 2] - k_lo[n + 1]),  # chord (n+1, n+2), left
    )
    lb = np.maximum(lb, np.where(n >= 2, k_lo[n] * (af - 1.0) / np.maximum(n - 1.0, 1.0), 0.0))
    r_lb = np.maximum(lb, 0.0) / (af - 1.0)
    logd = math.log(delta)
    conv_lb = r_lb + np.log1p(-1.0 / af) - (logd + np.log(af)) / (af - 1.0)
    conv_lb = conv_lb - 1e-9 * (np.abs(conv_lb) + 1.0)
    tv_possible = r_lb <= -math.log1p(-delta * delta) * (1.0 + 1e-9)
    conv_lb = np.where(tv_possible, 0.0, conv_lb)
    keep = np.flatnonzero(conv_lb < best)
    if keep.size:
        rf = _up(steps * _sgm_frac(q, sigma, info, keep), 2 * _ULP)
        e, o = _eps_from_rdp(af[keep], rf, delta)
        if e < best or (e == best and o < best_order):
            best, best_order = e, o
    return best, best_order
