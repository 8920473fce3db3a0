"""RDP curves of the events (one function per event family, one dispatch table)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from scipy import special

from dpfast._core.conversions import up_array as _up
from dpfast._core.errors import UnsupportedEventError
from dpfast._core.rounding import ULP as _ULP

from .. import events as ev
from ..pure import approx_dp
from .orders import (
    _as_orders,
    _expm1_minus_x,
    _log1p_exp,
    _log_expm1,
    _log_sensitivity,
    _Orders,
    _orders_info,
)
from .subsampled_gaussian import _sgm

__all__ = ["rdp_epsilons"]


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
    if eps * float(np.max(a)) >= 2.0 ** 1000:  # (a - 1) eps would overflow: eps-DP is
        return np.full_like(a, eps)  # (a, eps)-RDP at every order (D_a <= D_inf)
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
    with np.errstate(over="ignore", divide="ignore"):
        e = 1.0 / b
    if e * float(np.max(a)) >= 2.0 ** 1000:  # (a - 1) / b would overflow: the mechanism
        return np.full_like(a, float(_up(e)))  # is (1/b)-DP, so (a, 1/b)-RDP at every order
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
    amax = int(math.ceil(np.max(a)))
    ints = np.arange(2, amax + 1, dtype=np.float64)
    base = rdp_epsilons(inner, tuple(ints.tolist()))  # eps(j), j = 2..amax
    try:
        e_inf = _pure_epsilon(inner)
    except UnsupportedEventError:
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
    """Pure-DP epsilon of an event (UnsupportedEventError if it has none)."""
    e, d = approx_dp(event)
    if d > 0.0:
        raise UnsupportedEventError(f"event has no pure-DP guarantee: {event!r}")
    return e


# one function per event type: f(event, info) -> curve at info.alphas (rounded up)


def _gaussian(event: Any, info: _Orders) -> np.ndarray:
    # CKS20 Prop. 5 / Thm. 4: the discrete Gaussian satisfies the Gaussian's bound.
    s = event.noise_multiplier
    with np.errstate(over="ignore", divide="ignore"):  # a tiny sigma: +inf, a safe bound
        return _up(info.alphas / (2.0 * s * s), 2 * _ULP)


def _zcdp(event: ev.Zcdp, info: _Orders) -> np.ndarray:
    with np.errstate(over="ignore"):  # a huge rho: +inf, a safe bound
        return _up(info.alphas * event.rho, 2 * _ULP)


def _exponential(event: ev.Exponential, info: _Orders) -> np.ndarray:
    # Cesar & Rogers 2021: eps-DP exponential mechanism is eps^2/8-zCDP; also eps-DP.
    e, a = event.epsilon, info.alphas
    return np.minimum(_up(a * (e * e / 8.0), 4 * _ULP), _pure_rdp(e, a))


def _pure(event: Any, info: _Orders) -> np.ndarray:
    return _pure_rdp(event.epsilon, info.alphas)


def _epsilon_delta(event: ev.EpsilonDelta, info: _Orders) -> np.ndarray:
    if event.delta == 0.0:
        return _pure_rdp(event.epsilon, info.alphas)
    return np.full_like(info.alphas, np.inf)


def _laplace(event: ev.Laplace, info: _Orders) -> np.ndarray:
    return _laplace_rdp(event.noise_multiplier, info.alphas)


def _discrete_laplace(event: ev.DiscreteLaplace, info: _Orders) -> np.ndarray:
    # shift by 1 is exactly binary RR with eps = 1/t (worst case of pure DP);
    # pure 1/t-DP holds for any integer sensitivity with t = multiplier * sensitivity.
    return _pure_rdp(float(_up(1.0 / event.noise_multiplier)), info.alphas)


def _randomized_response(event: ev.RandomizedResponse, info: _Orders) -> np.ndarray:
    return _rr_rdp(event.epsilon, event.k, info.alphas)


def _self_composed(event: ev.SelfComposed, info: _Orders) -> np.ndarray:
    if event.count == 0:
        return np.zeros_like(info.alphas)
    return _up(event.count * _curve(event.event, info), 2 * _ULP)


def _composed(event: ev.Composed, info: _Orders) -> np.ndarray:
    tot = np.zeros_like(info.alphas)
    for e in event.events:
        tot = _up(tot + _curve(e, info), 2 * _ULP)
    return tot


def _poisson(event: ev.PoissonSampled, info: _Orders) -> np.ndarray:
    a = info.alphas
    if event.rate == 0.0:
        return np.zeros_like(a)
    if event.rate == 1.0:
        return _curve(event.event, info)
    s = _effective_gaussian_sigma(event.event)
    if s is None:
        raise UnsupportedEventError(
            "PoissonSampled: an RDP curve is implemented only for Gaussian inner events "
            f"(or compositions of them); got {event.event!r}"
        )
    if s == math.inf:
        return np.zeros_like(a)
    return _sgm(event.rate, s, info)


def _without_replacement(event: ev.SampledWithoutReplacement, info: _Orders) -> np.ndarray:
    return _wor_rdp(event.event, event.sample_size, event.population, info)


#: event type -> its RDP curve function (the one dispatch point of the RDP accountant)
_CURVES: dict[type[ev.DpEvent], Callable[[Any, _Orders], np.ndarray]] = {
    ev.Gaussian: _gaussian,
    ev.DiscreteGaussian: _gaussian,
    ev.Zcdp: _zcdp,
    ev.Exponential: _exponential,
    ev.Epsilon: _pure,
    ev.Snapping: _pure,
    ev.EpsilonDelta: _epsilon_delta,
    ev.Laplace: _laplace,
    ev.DiscreteLaplace: _discrete_laplace,
    ev.RandomizedResponse: _randomized_response,
    ev.SelfComposed: _self_composed,
    ev.Composed: _composed,
    ev.PoissonSampled: _poisson,
    ev.SampledWithoutReplacement: _without_replacement,
}


def _curve(event: ev.DpEvent, info: _Orders) -> np.ndarray:
    fn = _CURVES.get(type(event))
    if fn is None:
        raise UnsupportedEventError(f"RDP accounting does not support the event {event!r}")
    return fn(event, info)


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
