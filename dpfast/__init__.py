"""dpfast: exact, secure differential-privacy noise at numpy speed.

Public names are loaded lazily from their modules (see ``_PUBLIC``) so that
``import dpfast`` stays cheap and numba kernels compile (or load from cache)
only when first used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> module that defines it
_PUBLIC: dict[str, str] = {
    # randomness
    "Generator": "dpfast.random",
    "ChaCha20": "dpfast.random",
    "default_rng": "dpfast.random",
    # samplers / noising
    "discrete_laplace": "dpfast.noise",
    "discrete_gaussian": "dpfast.noise",
    "laplace": "dpfast.noise",
    "gaussian": "dpfast.noise",
    "snapping": "dpfast.noise",
    "granularity": "dpfast.noise",
    "snapping_epsilon": "dpfast.noise",
    "keystream": "dpfast.random",
    # mechanisms
    "LaplaceMechanism": "dpfast.mechanisms",
    "DiscreteLaplaceMechanism": "dpfast.mechanisms",
    "GaussianMechanism": "dpfast.mechanisms",
    "DiscreteGaussianMechanism": "dpfast.mechanisms",
    "SnappingMechanism": "dpfast.mechanisms",
    # selection
    "exponential": "dpfast.selection",
    "permute_and_flip": "dpfast.selection",
    "report_noisy_max": "dpfast.selection",
    "top_k": "dpfast.selection",
    "exponential_event": "dpfast.selection",
    "permute_and_flip_event": "dpfast.selection",
    "report_noisy_max_event": "dpfast.selection",
    "top_k_event": "dpfast.selection",
    # accounting
    "RdpAccountant": "dpfast.accounting",
    "ZcdpAccountant": "dpfast.accounting",
    "PureDpAccountant": "dpfast.accounting",
    "dpsgd_epsilon": "dpfast.accounting",
    "calibrate_noise_multiplier": "dpfast.accounting",
    "advanced_composition": "dpfast.accounting",
    "optimal_composition": "dpfast.accounting",
    "parallel_composition": "dpfast.accounting",
    # histograms (numpy-style)
    "histogram": "dpfast.histogram",
    "histogram2d": "dpfast.histogram",
    "histogramdd": "dpfast.histogram",
    # budget
    "Budget": "dpfast.budget",
    "BudgetExceededError": "dpfast.budget",
    "LedgerError": "dpfast.budget",
    # planning (accuracy-first calibration)
    "accuracy_to_epsilon": "dpfast.planning",
    "epsilon_to_accuracy": "dpfast.planning",
}

_SUBMODULES = {
    "random", "noise", "mechanisms", "selection", "local", "accounting", "budget",
    "dpsgd", "events", "tables", "metrics", "guidelines", "planning",
}

__all__ = sorted(_PUBLIC) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    if name == "events":
        module = importlib.import_module("dpfast.accounting.events")
        globals()[name] = module
        return module
    if name in _SUBMODULES:
        module = importlib.import_module(f"dpfast.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'dpfast' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC) | _SUBMODULES)
