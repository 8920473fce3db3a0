"""RDP orders: the default grid, validation, per-order precomputation and log helpers."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable

import numpy as np
from scipy import special

from dpfast._core.rounding import ULP as _ULP

__all__ = ["DEFAULT_ORDERS"]

#: Default RDP orders (the same grid as dp_accounting's ``DEFAULT_RDP_ORDERS``).
DEFAULT_ORDERS: tuple[float, ...] = tuple(
    [1 + x / 10.0 for x in range(1, 100)] + [float(a) for a in range(11, 64)]
    + [128.0, 256.0, 512.0, 1024.0]
)

_MAX_ORDER = 2.0**20  # integer orders cost O(order) terms
_SERIES_J = np.arange(0, 40, dtype=np.float64)  # powers in the small-|r| series


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
    """Validated orders (``None``: :data:`DEFAULT_ORDERS`): finite, > 1, at most 2^20."""
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
        self.kmax = int(np.max(ai)) if ai.size else 0
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
            need = np.arange(2, int(math.floor(float(np.max(af)))) + 3, dtype=np.float64)
            where = {float(x): i for i, x in enumerate(ai)}
            if all(float(x) in where for x in need):
                self.helper_pos = np.array([where[float(x)] for x in need], dtype=np.int64)


@functools.lru_cache(maxsize=64)
def _orders_info(orders: tuple[float, ...]) -> _Orders:
    return _Orders(orders)


def _log_sensitivity(logb: np.ndarray, kl: np.ndarray) -> np.ndarray:
    """Relative error of ``log1p(B)`` per unit relative error of ``B``: ``B / ((1+B) log1p B)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.exp(logb - kl) / kl
    return np.where(np.isfinite(f), np.minimum(f, 1.0), 1.0)

