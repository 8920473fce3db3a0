"""Privacy accounting: events, RDP, zCDP and (epsilon, delta) composition.

Events live in :mod:`dpfast.accounting.events` (plain dataclasses, importable without
numpy/scipy).  The accountants and functions below are imported lazily, so that
``import dpfast.accounting.events`` (what mechanisms do) stays cheap.

Public names
------------
RdpAccountant, rdp_epsilons, epsilon_from_rdp, delta_from_rdp, subsampled_gaussian_rdp,
DEFAULT_ORDERS                                                    (:mod:`.rdp`)
ZcdpAccountant, zcdp_rho, zcdp_epsilon, zcdp_delta                (:mod:`.zcdp`)
PureDpAccountant, approx_dp                                       (:mod:`.pure`)
advanced_composition, optimal_composition, parallel_composition   (:mod:`.composition`)
dpsgd_epsilon, calibrate_noise_multiplier                         (:mod:`.dpsgd`)
PldAccountant                                                     (:mod:`.pld`)
"""

from __future__ import annotations

import importlib
from typing import Any

from . import events

_PUBLIC: dict[str, str] = {
    "RdpAccountant": "rdp",
    "rdp_epsilons": "rdp",
    "epsilon_from_rdp": "rdp",
    "delta_from_rdp": "rdp",
    "subsampled_gaussian_rdp": "rdp",
    "DEFAULT_ORDERS": "rdp",
    "ZcdpAccountant": "zcdp",
    "zcdp_rho": "zcdp",
    "zcdp_epsilon": "zcdp",
    "zcdp_delta": "zcdp",
    "PureDpAccountant": "pure",
    "approx_dp": "pure",
    "advanced_composition": "composition",
    "optimal_composition": "composition",
    "parallel_composition": "composition",
    "dpsgd_epsilon": "dpsgd",
    "calibrate_noise_multiplier": "dpsgd",
    "PldAccountant": "pld",
}

__all__ = sorted(_PUBLIC) + ["events"]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        module = importlib.import_module(f"{__name__}.{_PUBLIC[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
