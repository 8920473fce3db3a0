"""RDP -> (epsilon, delta) conversions on a validated curve (CKS20 Prop. 12).

The arithmetic lives in :mod:`dpfast._core.conversions` (written once); this module
validates the curve and documents the public functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpfast._core.conversions import rdp_to_delta, rdp_to_epsilon
from dpfast._core.validate import check_nonneg, check_probability

__all__ = ["epsilon_from_rdp", "delta_from_rdp"]


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
    return rdp_to_epsilon(a, r, check_probability(delta, "delta", zero=True, one=True))


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
    return rdp_to_delta(a, r, check_nonneg(epsilon, "epsilon", allow_inf=True))
