"""Events to loss distributions for :class:`~dpfast.accounting.pld.PldAccountant`.

A *key* is a hashable description of one base event's pair of distributions (kind,
parameters); :func:`_curves` builds the (remove, add) curves of a key.  Events whose
losses the PLD arithmetic cannot represent (above :data:`._discrete.MAX_LOSS`), or with
too many atoms, are refused here with :class:`UnsupportedEventError`, before anything is
composed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from dpfast._core.errors import UnsupportedEventError
from dpfast._core.rounding import float_up, mul_up, sum_up, up

from .. import events as ev
from . import _curves as cv
from . import _discrete as dz
from . import _pmf as pm
from ._finite import randomized_response

#: remove-direction curves whose add direction is the swapped pair (same q and scale)
_SWAPPABLE = (cv.GaussianRemove, cv.LaplaceRemove)


def _key(event: ev.DpEvent) -> tuple | None:
    """A hashable description of a base event's loss distribution, or None (trivial)."""
    if isinstance(event, ev.Gaussian):
        return _continuous("gauss", 1.0, event.noise_multiplier, event)
    if isinstance(event, ev.Laplace):
        return _continuous("laplace", 1.0, event.noise_multiplier, event)
    if isinstance(event, ev.DiscreteLaplace):
        if event.sensitivity is not None:  # scalar shift: the exact pair
            return _discrete("dlap", event.noise_multiplier, event.sensitivity, event)
        # 1/m-DP (any sensitivity): dominated by RR; 1/m rounded up
        return _rr(float_up(1 / Fraction(event.noise_multiplier)), 2, 0.0, event)
    if isinstance(event, ev.DiscreteGaussian):
        if event.sensitivity is None:
            raise UnsupportedEventError(
                f"PldAccountant needs the integer sensitivity of a discrete Gaussian: pass "
                f"DiscreteGaussian(noise_multiplier, sensitivity=D) for a scalar query (or "
                f"one changed coordinate) with |f(D) - f(D')| <= D, or use RdpAccountant "
                f"for a vector query; got {event!r}")
        return _discrete("dgauss", event.noise_multiplier, event.sensitivity, event)
    if isinstance(event, ev.RandomizedResponse):
        return _rr(event.epsilon, event.k, 0.0, event)
    if isinstance(event, ev.Epsilon | ev.Snapping | ev.Exponential):
        return _rr(event.epsilon, 2, 0.0, event)
    if isinstance(event, ev.EpsilonDelta):
        return _rr(event.epsilon, 2, event.delta, event)

    if isinstance(event, ev.PoissonSampled):
        inner, q = event.event, event.rate
        if q == 0.0:
            return None
        if q == 1.0:
            return _key(inner)
        if isinstance(inner, ev.Gaussian):
            return _continuous("gauss", q, inner.noise_multiplier, event)
        if isinstance(inner, ev.Laplace):
            return _continuous("laplace", q, inner.noise_multiplier, event)
    raise UnsupportedEventError(f"PldAccountant does not support {event!r}")


def _continuous(kind: str, q: float, scale: float, event: ev.DpEvent) -> tuple:
    key = (kind, q, scale)
    top = max(max(abs(c.lo), abs(c.hi)) for c in _curves(key))
    if not top <= dz.MAX_LOSS:  # e^L overflows the PLD arithmetic (also nan)
        raise UnsupportedEventError(
            f"PldAccountant: {event!r} has privacy losses up to {top:.3g} (limit "
            f"{dz.MAX_LOSS:g}: the noise is too small for the PLD arithmetic); use "
            f"RdpAccountant")
    return key


def _rr(eps: float, k: int, delta: float, event: ev.DpEvent) -> tuple:
    if eps > dz.MAX_LOSS:  # e^eps overflows the PLD arithmetic
        raise UnsupportedEventError(
            f"PldAccountant: {event!r} has a privacy loss of {eps:.3g} (limit "
            f"{dz.MAX_LOSS:g}): use PureDpAccountant")
    return ("rr", eps, k, delta)


def _discrete(kind: str, m: float, sens: int, event: ev.DpEvent) -> tuple:
    n, top = dz.size_and_max_loss(kind, m, sens)
    if n > dz.MAX_ATOMS:
        raise UnsupportedEventError(
            f"PldAccountant: {event!r} has {n:.3g} loss values (limit {dz.MAX_ATOMS}, the "
            f"memory bound): use RdpAccountant")
    if top > dz.MAX_LOSS:
        raise UnsupportedEventError(
            f"PldAccountant: {event!r} has privacy losses up to {top:.3g} (limit "
            f"{dz.MAX_LOSS:g}: the noise is too small for any useful epsilon)")
    return (kind, m, sens)


def pure_bound(key: tuple) -> tuple[float, float] | None:
    """``(epsilon, delta)`` that the base event of ``key`` satisfies in both directions
    (rounded up), or None where there is no finite pure bound (Gaussian noise).

    Laplace: ``1/b``, subsampled ``log(1 + q (e^(1/b) - 1))`` (Balle, Barthe & Gaboardi
    2018, Table 1, as :class:`~dpfast.accounting.PureDpAccountant`; the add direction's
    ``-log(1 - q + q e^(-1/b))`` is smaller); discrete
    Laplace of scale ``t = m D`` and shift ``D``: ``D / t = 1/m``; randomized response and
    ``EpsilonDelta``: their own parameters.
    """
    kind = key[0]
    if kind == "rr":
        return key[1], key[3]
    if kind in ("dlap", "laplace"):
        m = key[1] if kind == "dlap" else key[2]
        eps = float_up(1 / Fraction(m))
        if kind == "laplace" and key[1] < 1.0:
            # rounded up as PureDpAccountant does (log1p / expm1: within 1 ulp each)
            eps = min(eps, up(math.log1p(key[1] * math.expm1(eps)), 4))
        return eps, 0.0
    return None


def basic_composition(counts: dict[tuple, int]) -> tuple[float, float]:
    """``(sum c_i eps_i, sum c_i delta_i)`` of the recorded events (basic composition of
    their :func:`pure_bound`, rounded up), ``(inf, inf)`` if one has none."""
    eps: list[float] = []
    dlt: list[float] = []
    for key, c in counts.items():
        b = pure_bound(key)
        if b is None:
            return math.inf, math.inf
        eps.append(mul_up(float(c), b[0]))
        dlt.append(mul_up(float(c), b[1]))
    return sum_up(eps), sum_up(dlt)


def _curves(key: tuple) -> tuple[cv.Curve, cv.Curve]:
    """(remove-direction curve, add-direction curve) of a base event."""
    kind = key[0]
    if kind in ("dgauss", "dlap"):  # symmetric pairs (x -> D - x swaps P and Q)
        c = (dz.discrete_gaussian if kind == "dgauss" else dz.discrete_laplace)(key[1], key[2])
        return c, c
    if kind == "rr":
        c = randomized_response(key[1], key[2], key[3])
        return c, c
    q, s = key[1], key[2]
    if kind == "gauss":
        rem: cv.Curve = cv.GaussianRemove(q, s)
        return rem, (rem if q >= 1.0 else cv.GaussianAdd(q, s))
    rem = cv.LaplaceRemove(q, s)
    return rem, (rem if q >= 1.0 else cv.LaplaceAdd(q, s))


def _loss_moments(curve: cv.Curve) -> tuple[float, float]:
    """Mean and variance of the loss (under ``P``): closed form / Gauss-Hermite where
    the curve has it, else from a provisional grid."""
    known = curve.moments()
    if known is not None:
        return known
    width = max(curve.hi - curve.lo, 1e-12)
    dx = width / 1000.0
    pmf = pm.connect_dots(curve, dx, 10**6)
    losses = (np.arange(pmf.p.size) + pmf.lo) * dx
    w = pmf.p / max(float(pmf.p.sum()), 1e-300)
    mean = float(w @ losses)
    var = float(w @ (losses - mean) ** 2)
    return mean, max(var, 0.0)
