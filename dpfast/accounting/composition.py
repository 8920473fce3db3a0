"""Composition theorems for ``(epsilon, delta)``-DP: advanced, optimal, parallel."""

from __future__ import annotations

import math
from collections.abc import Iterable

import mpmath

from dpfast._core.errors import NeighbouringRelationError, UnsupportedEventError
from dpfast._core.rounding import ULP as _ULP
from dpfast._core.validate import check_int, check_real

from . import events as ev
from .pure import approx_dp
from .zcdp import zcdp_rho

__all__ = ["advanced_composition", "optimal_composition", "parallel_composition"]

def _check(
    epsilon: float, delta: float, k: int, delta_slack: float
) -> tuple[float, float, int, float]:
    e = check_real(epsilon, "epsilon")
    if not (0.0 <= e < math.inf):
        raise ValueError(f"epsilon must be finite and >= 0, got {e!r}")
    d = check_real(delta, "delta")
    if not (0.0 <= d <= 1.0):
        raise ValueError(f"delta must lie in [0, 1], got {d!r}")
    k = check_int(k, "k", minimum=1)
    s = check_real(delta_slack, "delta_slack")
    if not (0.0 < s < 1.0):
        raise ValueError(f"delta_slack must lie in (0, 1), got {s!r}")
    return e, d, k, s


def advanced_composition(
    epsilon: float, delta: float, k: int, delta_slack: float
) -> tuple[float, float]:
    """Advanced composition of ``k`` ``(epsilon, delta)``-DP mechanisms.

    Parameters
    ----------
    epsilon, delta : float
        Guarantee of each mechanism.
    k : int
        Number of (adaptively chosen) mechanisms, ``>= 1``.
    delta_slack : float
        The extra ``delta'`` in ``(0, 1)``.

    Returns
    -------
    (epsilon_total, delta_total) : tuple of float
        ``epsilon * sqrt(2 k log(1/delta')) + k epsilon (e^epsilon - 1)`` and
        ``k delta + delta'``.

    Privacy
    -------
    Dwork, Rothblum & Vadhan 2010 (Dwork & Roth 2014, Theorem 3.20), adaptive
    composition, any neighbouring relation.  The formula is returned as is; when it
    exceeds ``k epsilon`` basic composition is better.

    Numerics
    --------
    Both results are rounded up.
    """
    e, d, k, s = _check(epsilon, delta, k, delta_slack)
    a = e * math.sqrt(2.0 * k * -math.log(s))
    b = k * e * math.expm1(e)
    eps = math.nextafter((a + b) * (1.0 + 8 * _ULP), math.inf) if e > 0 else 0.0
    dl = math.fsum([k * d, s])
    dl = min(1.0, math.nextafter(dl * (1.0 + 4 * _ULP), math.inf))
    return eps, dl


def optimal_composition(
    epsilon: float, delta: float, k: int, delta_slack: float
) -> tuple[float, float]:
    """Optimal (exact) homogeneous composition of ``k`` ``(epsilon, delta)``-DP mechanisms.

    Returns the smallest ``epsilon_total`` such that the ``k``-fold adaptive composition
    of *any* ``(epsilon, delta)``-DP mechanisms is
    ``(epsilon_total, 1 - (1 - delta)^k (1 - delta_slack))``-DP.

    Parameters
    ----------
    epsilon, delta : float
        Guarantee of each mechanism.
    k : int
        Number of mechanisms, ``>= 1``.
    delta_slack : float
        The ``delta'`` in ``(0, 1)`` traded for a smaller ``epsilon_total``.

    Returns
    -------
    (epsilon_total, delta_total) : tuple of float

    Privacy
    -------
    Kairouz, Oh & Viswanath 2015, Theorem 3.3: the composition is
    ``((k - 2i) eps, 1 - (1 - delta)^k (1 - delta_i))``-DP with
    ``delta_i = sum_{l < i} C(k, l) (e^{(k-l) eps} - e^{(k-2i+l) eps}) / (1 + e^eps)^k``,
    and this is tight.  Between the grid points the exact boundary is
    ``delta'(eps_g) = sum_l C(k, l) [e^{(k-l) eps} - e^{eps_g + l eps}]_+ / (1 + e^eps)^k``
    (the hockey-stick divergence of ``k`` randomized responses; Murtagh & Vadhan 2016,
    Thm. 1.5), which is solved exactly for ``eps_g`` here.  Never worse than ``k epsilon``.

    Numerics
    --------
    Evaluated with mpmath at 50+ significant digits (O(k) operations), then rounded up.
    """
    e, d, k, s = _check(epsilon, delta, k, delta_slack)
    # 1 - (1 - delta)^k (1 - delta') without cancellation
    lg = (k * math.log1p(-d) if d < 1.0 else -math.inf) + math.log1p(-s)
    dtot = -math.expm1(lg)
    dtot = min(1.0, math.nextafter(dtot * (1.0 + 16 * _ULP), math.inf))
    if e == 0.0:
        return 0.0, dtot
    with mpmath.workdps(60):
        E = mpmath.exp(mpmath.mpf(e))
        denom = (1 + E) ** k
        target = mpmath.mpf(s) * denom
        P = mpmath.mpf(0)
        Q = mpmath.mpf(0)
        binom = mpmath.mpf(1)
        eg = None
        for i in range(1, k + 2):
            ell = i - 1
            if ell > k:
                break
            P += binom * E ** (k - ell)
            Q += binom * E**ell
            binom = binom * (k - ell) / (ell + 1)
            g = (k - 2 * i) * mpmath.mpf(e)
            if g <= 0:
                # the segment reaches eps_g = 0
                if P - Q <= target:
                    eg = mpmath.mpf(0)
                else:
                    eg = mpmath.log((P - target) / Q)
                break
            d_i = P - mpmath.exp(g) * Q
            if d_i > target:
                eg = mpmath.log((P - target) / Q)
                break
        if eg is None:  # pragma: no cover - loop always breaks
            eg = mpmath.mpf(k * e)
        val = float(eg)
    if val > 0:
        val = math.nextafter(val * (1.0 + 4 * _ULP), math.inf)
    return min(max(val, 0.0), math.nextafter(k * e, math.inf)), dtot


def parallel_composition(events: Iterable[ev.DpEvent]) -> ev.DpEvent:
    """Guarantee of mechanisms applied to *disjoint* parts of the data.

    Parameters
    ----------
    events : iterable of DpEvent
        One event per part.

    Returns
    -------
    DpEvent
        The common event if all are equal; otherwise ``Epsilon(max eps)`` /
        ``EpsilonDelta(max eps, max delta)`` when every event has an
        ``(epsilon, delta)`` guarantee (:func:`~dpfast.accounting.pure.approx_dp`), else
        ``Zcdp(max rho)`` when every event is zCDP.

    Raises
    ------
    ValueError
        If ``events`` is empty or the events have no common kind of guarantee.
    NeighbouringRelationError
        If the events state different neighbouring relations.

    Privacy
    -------
    Parallel composition (McSherry 2009): if each record can influence only one part
    (add/remove-one relation, parts defined by a public function of each record), the
    whole release is as private as the least private part.  Under replace-one a changed
    record may move between two parts; then compose the two worst parts sequentially.
    The relation the events state is kept on the result (``neighbouring``).
    """
    if isinstance(events, ev.DpEvent):
        raise TypeError("events must be an iterable of DpEvent")
    evs = tuple(events)
    if not evs:
        raise ValueError("events must not be empty")
    for i, e in enumerate(evs):
        if not isinstance(e, ev.DpEvent):
            raise TypeError(f"events[{i}] must be a DpEvent, got {type(e).__name__}")
    if all(e == evs[0] for e in evs):
        return evs[0]
    rels = frozenset().union(*(ev.relations_of(e) for e in evs))
    if len(rels) > 1:
        raise NeighbouringRelationError(
            "parallel_composition: the events state different neighbouring relations "
            f"({sorted(rels)}); their guarantees do not compose")
    out: ev.DpEvent
    try:
        pairs = [approx_dp(e) for e in evs]
    except UnsupportedEventError:
        pairs = None
    if pairs is not None:
        eps = max(p[0] for p in pairs)
        dl = max(p[1] for p in pairs)
        out = ev.Epsilon(eps) if dl == 0.0 else ev.EpsilonDelta(eps, dl)
    else:
        try:
            rhos = [zcdp_rho(e) for e in evs]
        except UnsupportedEventError:
            raise UnsupportedEventError(
                "parallel_composition: events have no common (epsilon, delta) or zCDP "
                "guarantee"
            ) from None
        out = ev.Zcdp(max(rhos))
    return ev.with_neighbouring(out, next(iter(rels))) if rels else out
