"""Privacy accounting: events, the accountant contract, RDP, zCDP and (epsilon, delta).

Events live in :mod:`dpfast.accounting.events` (plain dataclasses, importable without
numpy/scipy) and are re-exported here (``dpfast.accounting.Laplace``, ...).  The
accountants and functions below are imported lazily, so that ``import
dpfast.accounting.events`` (what mechanisms do) stays cheap.

Public names
------------
Accountant (the contract: supports, compose, get_epsilon, get_delta)  (:mod:`.base`)
UnsupportedEventError, NeighbouringRelationError                      (:mod:`dpfast._core`)
ADD_REMOVE, REPLACE_ONE, DpEvent, Epsilon, EpsilonDelta, Zcdp, Laplace, Gaussian,
DiscreteLaplace, DiscreteGaussian, RandomizedResponse, Exponential, Snapping,
PoissonSampled, SampledWithoutReplacement, Composed, SelfComposed, from_dict
                                                                  (:mod:`.events`)
RdpAccountant, rdp_epsilons, epsilon_from_rdp, delta_from_rdp, subsampled_gaussian_rdp,
DEFAULT_ORDERS                                                    (:mod:`.rdp`)
ZcdpAccountant, zcdp_rho, zcdp_epsilon, zcdp_delta                (:mod:`.zcdp`)
PureDpAccountant, approx_dp                                       (:mod:`.pure`)
advanced_composition, optimal_composition, parallel_composition   (:mod:`.composition`)
dpsgd_epsilon, calibrate_noise_multiplier                         (:mod:`.dpsgd`)
PldAccountant                                                     (:mod:`.pld`)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpfast._core.errors import NeighbouringRelationError, UnsupportedEventError
from dpfast._core.lazy import attach as _attach

from . import events
from .events import (
    ADD_REMOVE,
    REPLACE_ONE,
    Composed,
    DiscreteGaussian,
    DiscreteLaplace,
    DpEvent,
    Epsilon,
    EpsilonDelta,
    Exponential,
    Gaussian,
    Laplace,
    PoissonSampled,
    RandomizedResponse,
    SampledWithoutReplacement,
    SelfComposed,
    Snapping,
    Zcdp,
    from_dict,
)

if TYPE_CHECKING:
    from .base import Accountant
    from .composition import advanced_composition, optimal_composition, parallel_composition
    from .dpsgd import calibrate_noise_multiplier, dpsgd_epsilon
    from .pld import PldAccountant
    from .pure import PureDpAccountant, approx_dp
    from .rdp import (
        DEFAULT_ORDERS,
        RdpAccountant,
        delta_from_rdp,
        epsilon_from_rdp,
        rdp_epsilons,
        subsampled_gaussian_rdp,
    )
    from .zcdp import ZcdpAccountant, zcdp_delta, zcdp_epsilon, zcdp_rho

_PUBLIC: dict[str, str] = {
    "Accountant": ".base",
    "RdpAccountant": ".rdp",
    "rdp_epsilons": ".rdp",
    "epsilon_from_rdp": ".rdp",
    "delta_from_rdp": ".rdp",
    "subsampled_gaussian_rdp": ".rdp",
    "DEFAULT_ORDERS": ".rdp",
    "ZcdpAccountant": ".zcdp",
    "zcdp_rho": ".zcdp",
    "zcdp_epsilon": ".zcdp",
    "zcdp_delta": ".zcdp",
    "PureDpAccountant": ".pure",
    "approx_dp": ".pure",
    "advanced_composition": ".composition",
    "optimal_composition": ".composition",
    "parallel_composition": ".composition",
    "dpsgd_epsilon": ".dpsgd",
    "calibrate_noise_multiplier": ".dpsgd",
    "PldAccountant": ".pld",
}

__all__ = [
    "ADD_REMOVE",
    "Accountant",
    "Composed",
    "DEFAULT_ORDERS",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "DpEvent",
    "Epsilon",
    "EpsilonDelta",
    "Exponential",
    "Gaussian",
    "Laplace",
    "NeighbouringRelationError",
    "PldAccountant",
    "PoissonSampled",
    "PureDpAccountant",
    "REPLACE_ONE",
    "RandomizedResponse",
    "RdpAccountant",
    "SampledWithoutReplacement",
    "SelfComposed",
    "Snapping",
    "UnsupportedEventError",
    "Zcdp",
    "ZcdpAccountant",
    "advanced_composition",
    "approx_dp",
    "calibrate_noise_multiplier",
    "delta_from_rdp",
    "dpsgd_epsilon",
    "epsilon_from_rdp",
    "events",
    "from_dict",
    "optimal_composition",
    "parallel_composition",
    "rdp_epsilons",
    "subsampled_gaussian_rdp",
    "zcdp_delta",
    "zcdp_epsilon",
    "zcdp_rho",
]


# __all__ above stays literal: it also names what is imported eagerly (the events)
__getattr__, __dir__, _ = _attach(__name__, _PUBLIC)
del _
