"""Rényi differential privacy (RDP) curves, conversions and the :class:`RdpAccountant`.

A mechanism ``M`` is ``(alpha, eps(alpha))``-RDP (Mironov 2017) when
``D_alpha(M(x) || M(x')) <= eps(alpha)`` for all neighbouring ``x, x'``, where
``D_alpha(P || Q) = log E_Q[(P/Q)^alpha] / (alpha - 1)``.  RDP composes by adding
the curves order by order; :func:`epsilon_from_rdp` / :func:`delta_from_rdp`
convert a curve to ``(epsilon, delta)``-DP with the tight conversion of
Canonne, Kamath & Steinke 2020 (CKS20), Proposition 12.

Numerics
--------
Every curve is computed in float64 and then *rounded up* by a bound on its own
rounding error (a few units in the last place times the magnitude of the
logarithms involved), so returned values are upper bounds on the exact curve and
within about ``1e-12`` relative of it in the regimes used in practice.  The
Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019, "MTZ19") is computed

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

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import special

from . import events as ev

__all__ = [
    "DEFAULT_ORDERS",
    "RdpAccountant",
    "rdp_epsilons",
    "epsilon_from_rdp",
    "delta_from_rdp",
    "subsampled_gaussian_rdp",
]

#: Default RDP orders (the same grid as dp_accounting's ``DEFAULT_RDP_ORDERS``).
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)]
    + [128.0, 256.0, 512.0, 1024.0]
)

_ULP = 2.0**-52
_MAX_ORDER = 2.0**20  # integer orders cost O(order) terms
_SERIES_J = np.arange(0, 40, dtype=np.float64)  # powers in the small-|r| series
_TINY_REL = 1e-15  # floor of the relative rounding margin


# --------------------------------------------------------------------------- small helpers


def _up(x: np.ndarray | float, rel: np.ndarray | float = 0.0) -> np.ndarray:
    """Round ``x`` (>= 0 or inf) up by a relative margin ``rel`` plus one ulp."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        y = x * (1.0 + np.maximum(rel, _TINY_REL))
    y = np.where(np.isnan(y), x, y)  # 0 * inf
    return np.nextafter(y, np.inf)


def _log_expm1(c: np.ndarray) -> np.ndarray:
    """``log(expm1(c))`` for ``c > 0`` without overflow."""
    c = np.asarray(c, dtype=np.float64)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        big = c + np.log1p(-np.exp(-c))
        small = np.log(np.expm1(np.minimum(c, 1.0)))
    return np.where(c > 1.0, big, small)


def _log1p_exp(x: np.ndarray) -> np.ndarray:
    """``log(1 + exp(x))`` accurately for all ``x``."""
    return np.logaddexp(0.0, x)


def _expm1_minus_x(x: np.ndarray) -> np.ndarray:
    """``expm1(x) - x >= 0`` with full relative precision (series for small ``|x|``)."""
    x = np.asarray(x, dtype=np.float64)
    xs = np.where(np.abs(x) < 0.5, x, 0.0)
    series = np.zeros_like(xs)
    term = xs * xs / 2.0
    for k in range(2, 26):  # sum_{k>=2} x^k / k!
        series = series + term
        term = term * xs / (k + 1)
    with np.errstate(over="ignore"):
        direct = np.expm1(x) - x
    return np.where(np.abs(x) < 0.5, series, direct)


def _as_orders(orders: Iterable[float] | None) -> tuple[float, ...]:
    if orders is None:
        return DEFAULT_ORDERS
    if isinstance(orders, str | bytes):
        raise TypeError("orders must be a sequence of numbers")
    try:
        arr = np.asarray(list(orders) if not isinstance(orders, np.ndarray) else orders,
                         dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("orders must be a sequence of real numbers") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("orders must be a non-empty 1-D sequence")
    if np.any(np.isnan(arr)) or np.any(arr <= 1.0) or np.any(~np.isfinite(arr)):
        raise ValueError("orders must be finite and > 1")
    if np.any(arr > _MAX_ORDER):
        raise ValueError(f"orders must be <= {_MAX_ORDER}")
    return tuple(float(a) for a in arr)


class _Orders:
    """Per-order work that does not depend on the mechanism (cached per order tuple)."""

    def __init__(self, orders: tuple[float, ...]):
        self.orders = orders
        a = np.array(orders, dtype=np.float64)
        self.alphas = a
        is_int = a == np.floor(a)
        self.int_idx = np.flatnonzero(is_int)
        self.frac_idx = np.flatnonzero(~is_int)
        ai = a[self.int_idx]
        self.ints = ai
        self.kmax = int(ai.max()) if ai.size else 0
        if ai.size:
            # ragged layout: for each integer order a, the terms k = 2..a
            lens = (ai - 1).astype(np.int64)
            self.offsets = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
            self.row_id = np.repeat(np.arange(ai.size), lens)
            self.k_flat = np.concatenate([np.arange(2, int(x) + 1) for x in ai]).astype(np.int64)
            af_ = ai[self.row_id]
            kf = self.k_flat.astype(np.float64)
            self.lb_flat = (special.gammaln(af_ + 1.0) - special.gammaln(kf + 1.0)
                            - special.gammaln(af_ - kf + 1.0))
            self.abs_lb_flat = np.abs(self.lb_flat)
            self.k_all = np.arange(self.kmax + 1, dtype=np.float64)
            # rounding margin of the log-binomials (3 lgamma evaluations)
            self.lb_err = 4.0 * _ULP * (special.gammaln(ai + 1.0) + 1.0)
        af = a[self.frac_idx]
        self.fracs = af
        if af.size:
            # C(a, j + 2), j = 0..39, for the small-|r| series f = r^2 sum_j C(a, j+2) r^j
            self.binom = special.binom(af[:, None], _SERIES_J[None, :] + 2.0)
            self.r_small = np.minimum(0.4, 1.0 / af)
            self.log_af = np.log(af)
        # positions of the integers 2..floor(max frac) + 2 among the integer orders
        self.helper_pos = None
        if af.size and ai.size:
            need = np.arange(2, int(math.floor(float(af.max()))) + 3, dtype=np.float64)
            where = {float(x): i for i, x in enumerate(ai)}
            if all(float(x) in where for x in need):
                self.helper_pos = np.array([where[float(x)] for x in need], dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _orders_info(orders: tuple[float, ...]) -> _Orders:
    return _Orders(orders)


# --------------------------------------------------------------------------- subsampled Gaussian


def _log_sensitivity(logb: np.ndarray, kl: np.ndarray) -> np.ndarray:
    """Relative error of ``log1p(B)`` per unit relative error of ``B``: ``B / ((1+B) log1p B)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.exp(logb - kl) / kl
    return np.where(np.isfinite(f), np.minimum(f, 1.0), 1.0)


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
    h, zlo, n = _grid(sigma, float(af.max()))
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
    h, zlo, n = _grid(sigma, float(af.max()))
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
    q = _check_rate(sampling_rate)
    sigma = _check_sigma(noise_multiplier)
    return _sgm(q, sigma, info)


def _check_rate(q: float) -> float:
    if isinstance(q, bool) or not isinstance(q, int | float | np.integer | np.floating):
        raise TypeError(f"sampling_rate must be a real number, got {type(q).__name__}")
    q = float(q)
    if not (0.0 <= q <= 1.0):
        raise ValueError(f"sampling_rate must lie in [0, 1], got {q!r}")
    return q


def _check_sigma(s: float) -> float:
    if isinstance(s, bool) or not isinstance(s, int | float | np.integer | np.floating):
        raise TypeError(f"noise_multiplier must be a real number, got {type(s).__name__}")
    s = float(s)
    if not (0.0 < s < math.inf):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {s!r}")
    return s


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
    top = int(math.floor(float(info.fracs.max()))) + 2
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
    k_up = np.zeros(int(hi.max()) + 1)  # K at integers 0..top (K(0) = K(1) = 0)
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


# --------------------------------------------------------------------------- other curves


def _pure_rdp(eps: float, a: np.ndarray) -> np.ndarray:
    """Tightest RDP bound implied by pure ``eps``-DP (binary randomized response)."""
    return _rr_rdp(eps, 2, a)


def _rr_rdp(eps: float, k: int, a: np.ndarray) -> np.ndarray:
    """RDP of ``k``-ary randomized response (replace one); ``k = 2`` bounds any eps-DP.

    ``A - 1 = expm1((a-1)e) exp(-(a-1)e) expm1(a e) / (e^e + k - 1)`` (all factors
    positive), ``eps(a) = log1p(A - 1) / (a - 1)``, capped at ``eps``.
    """
    if eps == 0.0:
        return np.zeros_like(a)
    y = (a - 1.0) * eps
    log_am1 = _log_expm1(y) - y + _log_expm1(a * eps) - (
        eps + math.log1p((k - 1) * math.exp(-eps)))
    kk = _log1p_exp(log_am1)
    val = kk / (a - 1.0)
    abs_err = 16 * _ULP * (np.abs(log_am1) + 2.0 * a * eps + eps + math.log(k) + 4.0)
    return np.minimum(_up(val, abs_err * _log_sensitivity(log_am1, kk) + 8 * _ULP), eps)


def _laplace_rdp(b: float, a: np.ndarray) -> np.ndarray:
    """RDP of the Laplace mechanism with ``b = scale / sensitivity`` (Mironov 2017, Prop. 6).

    ``(a-1) eps(a) = log((a e^{(a-1)/b} + (a-1) e^{-a/b}) / (2a - 1))``; written as
    ``log1p((a g((a-1)/b) + (a-1) g(-a/b)) / (2a-1))`` with ``g(x) = expm1(x) - x >= 0``
    for small arguments so nothing cancels.
    """
    e = 1.0 / b
    y = (a - 1.0) * e
    with np.errstate(over="ignore"):
        small = np.log1p((a * _expm1_minus_x(y) + (a - 1.0) * _expm1_minus_x(-a * e))
                         / (2.0 * a - 1.0))
        big = y + np.log(a + (a - 1.0) * np.exp(-(2.0 * a - 1.0) * e)) - np.log(2.0 * a - 1.0)
    kk = np.where(y > 1.0, big, small)
    val = kk / (a - 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_big = np.where(y > 1.0, (y + np.log(2.0 * a) + 4.0) / kk, 0.0)
    rel = 32 * _ULP * (1.0 + np.where(np.isfinite(rel_big), rel_big, 1e6))
    return np.minimum(_up(val, rel), _up(e))


def _effective_gaussian_sigma(event: ev.DpEvent) -> float | None:
    """Single Gaussian equivalent to a composition of Gaussians on one subsample."""
    if isinstance(event, ev.Gaussian):
        return event.noise_multiplier
    if isinstance(event, ev.SelfComposed):
        s = _effective_gaussian_sigma(event.event)
        if s is None:
            return None
        if event.count == 0:
            return math.inf
        return s / math.sqrt(event.count) * (1.0 - 4 * _ULP)  # round sigma down (safe)
    if isinstance(event, ev.Composed):
        inv = []
        for e in event.events:
            s = _effective_gaussian_sigma(e)
            if s is None:
                return None
            inv.append(0.0 if s == math.inf else 1.0 / (s * s))
        tot = math.fsum(inv)
        if tot == 0.0:
            return math.inf
        return 1.0 / math.sqrt(tot) * (1.0 - 8 * _ULP)
    return None


def _wor_rdp(inner: ev.DpEvent, m: int, n: int, info: _Orders) -> np.ndarray:
    """RDP of sampling without replacement (WBK19, Theorem 9), replace-one relation.

    Integer orders use the theorem; fractional orders interpolate the cumulant
    ``(a-1) eps(a)`` linearly between neighbouring integers, which is an upper bound
    because ``(a-1) D_a`` is convex in ``a`` (WBK19, Corollary 10).
    """
    a = info.alphas
    if m == 0:
        return np.zeros_like(a)
    gamma = m / n
    if m == n:
        return rdp_epsilons(inner, info.orders)
    amax = int(math.ceil(a.max()))
    ints = np.arange(2, amax + 1, dtype=np.float64)
    base = rdp_epsilons(inner, tuple(ints.tolist()))  # eps(j), j = 2..amax
    try:
        e_inf = _pure_epsilon(inner)
    except ValueError:
        e_inf = math.inf
    log_cap = math.log(2.0)  # log min{2, (e^{eps_inf} - 1)^j}
    if e_inf < math.inf:
        lem = float(_log_expm1(np.array([e_inf]))[0]) if e_inf > 0 else -math.inf
    else:
        lem = math.inf
    js = ints
    capj = np.minimum(log_cap, js * lem) if lem < math.inf else np.full_like(js, log_cap)
    e2 = base[0]
    # j = 2 term: gamma^2 C(a,2) min{4 (e^{eps2} - 1), e^{eps2} min{2, (e^{eps_inf}-1)^2}}
    t2 = min(math.log(4.0) + float(_log_expm1(np.array([max(e2, 1e-300)]))[0]), e2 + capj[0])
    kcum = np.zeros(amax + 1)  # (a-1) eps(a) at integer a = 0..amax
    logg = math.log(gamma)
    for A in range(2, amax + 1):
        jj = np.arange(3, A + 1, dtype=np.float64)
        lbin = (special.gammaln(A + 1.0) - special.gammaln(jj + 1.0)
                - special.gammaln(A - jj + 1.0))
        terms = jj * logg + lbin + (jj - 1.0) * base[jj.astype(int) - 2] + capj[jj.astype(int) - 2]
        first = 2 * logg + math.log(A * (A - 1) / 2.0) + t2
        allt = np.concatenate(([first], terms))
        mx = allt.max()
        if not np.isfinite(mx):
            kcum[A] = math.inf if mx == math.inf else 0.0
            continue
        lse = math.log(float(np.exp(allt - mx).sum())) + mx
        kcum[A] = float(_log1p_exp(np.array([lse]))[0])
    kcum = _up(kcum, 64 * _ULP * (np.abs(kcum) + 10.0))
    lo = np.floor(a).astype(int)
    hi = np.ceil(a).astype(int)
    t = a - lo
    with np.errstate(invalid="ignore"):
        kval = np.where(lo == hi, kcum[hi], (1 - t) * kcum[lo] + t * kcum[hi])
    return _up(kval / (a - 1.0), 4 * _ULP)


def _pure_epsilon(event: ev.DpEvent) -> float:
    """Pure-DP epsilon of an event (ValueError if it has none)."""
    if isinstance(event, ev.Epsilon | ev.Snapping | ev.Exponential):
        return event.epsilon
    if isinstance(event, ev.EpsilonDelta) and event.delta == 0.0:
        return event.epsilon
    if isinstance(event, ev.RandomizedResponse):
        return event.epsilon
    if isinstance(event, ev.Laplace | ev.DiscreteLaplace):
        return float(_up(1.0 / event.noise_multiplier))
    if isinstance(event, ev.SelfComposed):
        return float(_up(event.count * _pure_epsilon(event.event)))
    if isinstance(event, ev.Composed):
        return float(_up(math.fsum(_pure_epsilon(e) for e in event.events)))
    raise ValueError(f"event has no pure-DP guarantee: {event!r}")


def _curve(event: ev.DpEvent, info: _Orders) -> np.ndarray:
    a = info.alphas
    if isinstance(event, ev.Gaussian | ev.DiscreteGaussian):
        # CKS20 Prop. 5 / Thm. 4: the discrete Gaussian satisfies the Gaussian's bound.
        s = event.noise_multiplier
        return _up(a / (2.0 * s * s), 2 * _ULP)
    if isinstance(event, ev.Zcdp):
        return _up(a * event.rho, 2 * _ULP)
    if isinstance(event, ev.Exponential):
        # Cesar & Rogers 2021: eps-DP exponential mechanism is eps^2/8-zCDP; also eps-DP.
        e = event.epsilon
        return np.minimum(_up(a * (e * e / 8.0), 4 * _ULP), _pure_rdp(e, a))
    if isinstance(event, ev.Epsilon | ev.Snapping):
        return _pure_rdp(event.epsilon, a)
    if isinstance(event, ev.EpsilonDelta):
        if event.delta == 0.0:
            return _pure_rdp(event.epsilon, a)
        return np.full_like(a, np.inf)
    if isinstance(event, ev.Laplace):
        return _laplace_rdp(event.noise_multiplier, a)
    if isinstance(event, ev.DiscreteLaplace):
        # shift by 1 is exactly binary RR with eps = 1/t (worst case of pure DP);
        # pure 1/t-DP holds for any integer sensitivity with t = multiplier * sensitivity.
        return _pure_rdp(float(_up(1.0 / event.noise_multiplier)), a)
    if isinstance(event, ev.RandomizedResponse):
        return _rr_rdp(event.epsilon, event.k, a)
    if isinstance(event, ev.SelfComposed):
        if event.count == 0:
            return np.zeros_like(a)
        return _up(event.count * _curve(event.event, info), 2 * _ULP)
    if isinstance(event, ev.Composed):
        tot = np.zeros_like(a)
        for e in event.events:
            tot = _up(tot + _curve(e, info), 2 * _ULP)
        return tot
    if isinstance(event, ev.PoissonSampled):
        if event.rate == 0.0:
            return np.zeros_like(a)
        if event.rate == 1.0:
            return _curve(event.event, info)
        s = _effective_gaussian_sigma(event.event)
        if s is None:
            raise ValueError(
                "PoissonSampled: an RDP curve is implemented only for Gaussian inner events "
                f"(or compositions of them); got {event.event!r}"
            )
        if s == math.inf:
            return np.zeros_like(a)
        return _sgm(event.rate, s, info)
    if isinstance(event, ev.SampledWithoutReplacement):
        return _wor_rdp(event.event, event.sample_size, event.population, info)
    raise TypeError(f"rdp_epsilons: unsupported event {event!r}")


def rdp_epsilons(event: ev.DpEvent, orders: Iterable[float] | None = None) -> np.ndarray:
    """RDP curve ``eps(alpha)`` of ``event`` at ``orders`` (``inf`` where unbounded).

    Parameters
    ----------
    event : DpEvent
        Any event of :mod:`dpfast.accounting.events`.  ``EpsilonDelta`` with
        ``delta > 0`` has no RDP bound (``inf``); ``PoissonSampled`` supports Gaussian
        inner events (and compositions of Gaussians on the same subsample).
    orders : sequence of float, optional
        Orders ``> 1``; default :data:`DEFAULT_ORDERS`.

    Returns
    -------
    numpy.ndarray
        Upper bounds on ``eps(alpha)``, rounded up.

    Privacy
    -------
    * Gaussian / discrete Gaussian (CKS20 Thm. 4): ``alpha / (2 sigma^2)``.
    * zCDP ``rho``: ``alpha rho``.
    * Laplace (Mironov 2017, Prop. 6):
      ``log((a e^{(a-1)/b} + (a-1) e^{-a/b})/(2a-1)) / (a-1)``.
    * Pure ``eps``-DP, snapping, discrete Laplace (``eps = 1/t``): the RDP of binary
      randomized response, ``log(cosh((a - 1/2) eps) / cosh(eps/2)) / (a - 1)``, which is
      the tightest bound implied by pure DP (Bun & Steinke 2016, Prop. 3.3).
    * ``k``-ary randomized response (replace one):
      ``log((e^{a eps} + e^{(1-a) eps} + k - 2)/(e^eps + k - 1)) / (a - 1)``.
    * Exponential mechanism: ``min(a eps^2 / 8, pure bound)`` (Cesar & Rogers 2021).
    * Poisson-subsampled Gaussian: :func:`subsampled_gaussian_rdp` (MTZ19).
    * Sampling without replacement: Wang, Balle & Kasiviswanathan 2019, Theorem 9
      (replace-one relation), fractional orders by convex interpolation.
    * Composition adds curves (Mironov 2017, Prop. 1).
    """
    if not isinstance(event, ev.DpEvent):
        raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
    info = _orders_info(_as_orders(orders))
    return _curve(event, info).copy()


# --------------------------------------------------------------------------- conversions


def _check_delta(delta: float, name: str = "delta") -> float:
    if isinstance(delta, bool) or not isinstance(delta, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a real number, got {type(delta).__name__}")
    d = float(delta)
    if not (0.0 <= d <= 1.0):
        raise ValueError(f"{name} must lie in [0, 1], got {d!r}")
    return d


def epsilon_from_rdp(
    orders: Sequence[float], rdp: Sequence[float], delta: float
) -> tuple[float, float]:
    """Smallest ``epsilon`` (and its order) with ``(epsilon, delta)``-DP from an RDP curve.

    Parameters
    ----------
    orders, rdp : sequences of float
        Orders (> 1) and RDP values (>= 0, may be ``inf``).
    delta : float
        Target ``delta`` in ``[0, 1]``.

    Returns
    -------
    (epsilon, order) : tuple of float
        ``order`` is ``nan`` when no order gives a finite bound.

    Privacy
    -------
    CKS20 Proposition 12: ``(a, tau)``-RDP implies ``(eps, delta)``-DP with
    ``eps = tau + log1p(-1/a) - (log(delta) + log(a)) / (a - 1)``; and
    ``delta >= sqrt(1 - exp(-tau))`` gives ``epsilon = 0`` (total variation bound via
    Bretagnolle-Huber, ``D_1 <= D_a``).  Same conversion as dp_accounting's
    ``compute_epsilon``; the minimum over orders is returned.

    Numerics
    --------
    Each candidate is rounded up by its rounding error before the minimum is taken.
    """
    a, r = _check_curve(orders, rdp)
    return _eps_from_rdp(a, r, _check_delta(delta))


def _check_curve(orders: Sequence[float], rdp: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 arrays of an RDP curve (orders > 1, values >= 0 or inf)."""
    a = np.asarray(orders, dtype=np.float64)
    r = np.asarray(rdp, dtype=np.float64)
    if a.shape != r.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("orders and rdp must be 1-D of the same non-zero length")
    if np.any(np.isnan(a)) or np.any(a <= 1.0):
        raise ValueError("orders must be > 1")
    if np.any(np.isnan(r)) or np.any(r < 0):
        raise ValueError("rdp values must be >= 0 (or inf)")
    return a, r


def _eps_from_rdp(a: np.ndarray, r: np.ndarray, d: float) -> tuple[float, float]:
    """:func:`epsilon_from_rdp` without input validation (hot path)."""
    if d == 1.0:
        return 0.0, float(a[0])
    if d == 0.0:
        if np.all(r == 0):
            return 0.0, float(a[0])
        return math.inf, math.nan
    logd = math.log(d)
    with np.errstate(over="ignore", invalid="ignore"):
        t1 = np.log1p(-1.0 / a)
        t2 = (logd + np.log(a)) / (a - 1.0)
        eps = r + t1 - t2
        err = 8.0 * _ULP * (np.abs(r) + np.abs(t1) + np.abs(t2) + 1.0)
        eps = np.nextafter(eps + err, np.inf)
        # total-variation case: delta^2 >= 1 - exp(-r)  =>  epsilon = 0
        tv = (d * d) * (1.0 - 4 * _ULP) > -np.expm1(-r) * (1.0 + 4 * _ULP)
    eps = np.where(tv, 0.0, eps)
    eps = np.where(np.isnan(eps), np.inf, eps)
    i = int(np.argmin(eps))
    e = float(eps[i])
    if e == math.inf:
        return math.inf, math.nan
    return max(0.0, e), float(a[i])


def delta_from_rdp(
    orders: Sequence[float], rdp: Sequence[float], epsilon: float
) -> tuple[float, float]:
    """Smallest ``delta`` (and its order) with ``(epsilon, delta)``-DP from an RDP curve.

    Privacy
    -------
    CKS20 Proposition 12 (as dp_accounting's ``compute_delta``):
    ``log delta = (a-1)(tau - eps + log1p(-1/a)) - log(a)``, and the total-variation
    bound ``delta <= sqrt(1 - exp(-tau))``; the minimum over orders, rounded up.
    """
    a, r = _check_curve(orders, rdp)
    e = _check_epsilon(epsilon)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        tv = 0.5 * np.log1p(-np.exp(-r))
        tv = tv + 8 * _ULP * (np.abs(tv) + 1.0)
        t = (a - 1.0) * (r - e + np.log1p(-1.0 / a)) - np.log(a)
        t = t + 8 * _ULP * ((a - 1.0) * (np.abs(r) + e + 1.0) + np.abs(np.log(a)) + 1.0)
        logd = np.minimum(np.where(np.isnan(tv), np.inf, tv), np.where(np.isnan(t), np.inf, t))
    i = int(np.argmin(logd))
    ld = float(logd[i])
    dlt = 1.0 if ld >= 0 else float(np.nextafter(math.exp(ld) * (1 + 4 * _ULP), np.inf))
    return min(dlt, 1.0), float(a[i])


def _check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    if isinstance(epsilon, bool) or not isinstance(
        epsilon, int | float | np.integer | np.floating
    ):
        raise TypeError(f"{name} must be a real number, got {type(epsilon).__name__}")
    e = float(epsilon)
    if math.isnan(e) or e < 0:
        raise ValueError(f"{name} must be >= 0, got {e!r}")
    return e


# --------------------------------------------------------------------------- accountant


class RdpAccountant:
    """Rényi-DP accountant (Mironov 2017) with the tight CKS20 conversion.

    Parameters
    ----------
    orders : sequence of float, optional
        RDP orders (> 1).  Default :data:`DEFAULT_ORDERS` (dp_accounting's grid).

    Notes
    -----
    Events with an RDP curve (see :func:`rdp_epsilons`) are added order by order.
    ``EpsilonDelta`` events with ``delta > 0`` (at the top level, or inside
    ``Composed`` / ``SelfComposed``) have no RDP curve; they are kept aside and
    combined with the RDP part by basic composition:
    ``epsilon = eps_rdp(delta - sum delta_i) + sum eps_i``.

    Privacy
    -------
    Valid under adaptive sequential composition (Mironov 2017, Prop. 1); the
    neighbouring relation is that of the composed events.

    Examples
    --------
    >>> from dpfast.accounting import RdpAccountant, events as ev
    >>> acct = RdpAccountant().compose(ev.PoissonSampled(ev.Gaussian(1.1), 0.01), 1000)
    >>> round(acct.get_epsilon(1e-5), 3)  # doctest: +SKIP
    """

    def __init__(self, orders: Iterable[float] | None = None):
        self._info = _orders_info(_as_orders(orders))
        self._rdp = np.zeros_like(self._info.alphas)
        self._approx_eps: list[float] = []
        self._approx_delta: list[float] = []

    @property
    def orders(self) -> np.ndarray:
        """The RDP orders (a copy)."""
        return self._info.alphas.copy()

    @property
    def rdp(self) -> np.ndarray:
        """The composed RDP curve (a copy)."""
        return self._rdp.copy()

    def _split(self, event: ev.DpEvent, count: int, out: list) -> None:
        if isinstance(event, ev.EpsilonDelta) and event.delta > 0.0:
            out.append(("approx", event, count))
        elif isinstance(event, ev.SelfComposed):
            self._split(event.event, count * event.count, out)
        elif isinstance(event, ev.Composed):
            for e in event.events:
                self._split(e, count, out)
        else:
            out.append(("rdp", event, count))

    def compose(self, event: ev.DpEvent, count: int = 1) -> RdpAccountant:
        """Compose ``event`` ``count`` times; returns ``self``.

        Raises
        ------
        TypeError, ValueError
            For a non-event, a bad ``count``, or an event without an RDP curve
            (nothing is composed in that case).
        """
        if not isinstance(event, ev.DpEvent):
            raise TypeError(f"event must be a DpEvent, got {type(event).__name__}")
        if isinstance(count, bool) or not isinstance(count, int | np.integer):
            raise TypeError(f"count must be an integer, got {type(count).__name__}")
        count = int(count)
        if count < 0:
            raise ValueError(f"count must be >= 0, got {count}")
        parts: list = []
        self._split(event, count, parts)
        add = np.zeros_like(self._rdp)
        approx: list[tuple[float, float, int]] = []
        for kind, e, c in parts:  # compute everything first: all-or-nothing
            if c == 0:
                continue
            if kind == "approx":
                approx.append((e.epsilon, e.delta, c))
            else:
                add = _up(add + _up(c * _curve(e, self._info), 2 * _ULP), 2 * _ULP)
        self._rdp = _up(self._rdp + add, 2 * _ULP)
        for e_, d_, c in approx:
            self._approx_eps.append(float(_up(c * e_, 2 * _ULP)))
            self._approx_delta.append(float(_up(c * d_, 2 * _ULP)))
        return self

    def _approx_totals(self) -> tuple[float, float]:
        if not self._approx_eps:
            return 0.0, 0.0
        e = float(_up(math.fsum(self._approx_eps), 2 * _ULP))
        d = float(_up(math.fsum(self._approx_delta), 2 * _ULP))
        return e, d

    def get_epsilon_and_order(self, delta: float) -> tuple[float, float]:
        """``(epsilon, optimal order)`` for the target ``delta`` (CKS20 Prop. 12)."""
        d = _check_delta(delta)
        ea, da = self._approx_totals()
        if da > 0.0:
            if d <= da:
                return math.inf, math.nan
            d = float(np.nextafter((d - da) * (1 - 2 * _ULP), 0.0))
        e, order = epsilon_from_rdp(self._info.alphas, self._rdp, d)
        if ea:
            e = float(_up(e + ea, 2 * _ULP))
        return e, order

    def get_epsilon(self, delta: float) -> float:
        """Smallest ``epsilon`` such that everything composed is ``(epsilon, delta)``-DP."""
        return self.get_epsilon_and_order(delta)[0]

    def get_delta(self, epsilon: float) -> float:
        """Smallest ``delta`` such that everything composed is ``(epsilon, delta)``-DP."""
        e = _check_epsilon(epsilon)
        ea, da = self._approx_totals()
        if e < ea:
            return 1.0
        if ea:
            e = float(np.nextafter((e - ea) * (1 - 2 * _ULP), 0.0))
        d, _ = delta_from_rdp(self._info.alphas, self._rdp, max(e, 0.0))
        return min(1.0, float(_up(d + da, 2 * _ULP))) if da else d

    def __repr__(self) -> str:
        return f"RdpAccountant(orders={len(self._info.orders)} orders)"
