"""Rényi differential privacy (RDP): curves, conversions and the :class:`RdpAccountant`.

A mechanism ``M`` is ``(alpha, eps(alpha))``-RDP (Mironov 2017) when
``D_alpha(M(x) || M(x')) <= eps(alpha)`` for all neighbouring ``x, x'``, where
``D_alpha(P || Q) = log E_Q[(P/Q)^alpha] / (alpha - 1)``.  RDP composes by adding
the curves order by order; :func:`epsilon_from_rdp` / :func:`delta_from_rdp`
convert a curve to ``(epsilon, delta)``-DP with the tight conversion of
Canonne, Kamath & Steinke 2020 (CKS20), Proposition 12.

Every curve is computed in float64 and then *rounded up* by a bound on its own rounding
error, so returned values are upper bounds on the exact curve.

Modules
-------
``orders``                 the default grid, validation, per-order precomputation
``subsampled_gaussian``    the Poisson-subsampled Gaussian (MTZ19), exact at every order
``curves``                 every other event's curve; one dispatch table (``_CURVES``)
``convert``                RDP -> (epsilon, delta) on a validated curve
``accountant``             :class:`RdpAccountant`
"""

from __future__ import annotations

from .accountant import RdpAccountant
from .convert import delta_from_rdp, epsilon_from_rdp
from .curves import rdp_epsilons
from .orders import DEFAULT_ORDERS, _as_orders, _orders_info
from .subsampled_gaussian import _sgm_epsilon, subsampled_gaussian_rdp

__all__ = [
    "DEFAULT_ORDERS",
    "RdpAccountant",
    "rdp_epsilons",
    "epsilon_from_rdp",
    "delta_from_rdp",
    "subsampled_gaussian_rdp",
]
# private names used by accounting.dpsgd
_DPSGD_HELPERS = (_as_orders, _orders_info, _sgm_epsilon)
