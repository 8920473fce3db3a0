"""Patch diffprivlib so that its tools and models draw their noise from dpfast."""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from diffprivlib import mechanisms as _dm
from diffprivlib.accountant import BudgetAccountant
from diffprivlib.utils import PrivacyLeakWarning, warn_unused_args

from dpfast.compat._patching import Patches
from dpfast.compat.diffprivlib import (
    _additive,
    _bounded,
    _categorical,
    _gaussian,
    _numpy_rng,
    _select,
    _staircase,
    _truncated,
    _uniform,
)

__all__ = ["install", "uninstall", "patched", "is_installed", "histogram", "histogramdd"]

_INT_MAX = np.iinfo(np.int64).max

# diffprivlib class -> dpfast replacement
REPLACEMENTS: dict[type, type] = {
    _dm.Laplace: _additive.Laplace,
    _dm.LaplaceTruncated: _additive.LaplaceTruncated,
    _dm.LaplaceFolded: _additive.LaplaceFolded,
    _dm.LaplaceBoundedDomain: _bounded.LaplaceBoundedDomain,
    _dm.Geometric: _additive.Geometric,
    _dm.GeometricTruncated: _additive.GeometricTruncated,
    _dm.GeometricFolded: _additive.GeometricFolded,
    _dm.GaussianAnalytic: _additive.GaussianAnalytic,
    _dm.GaussianDiscrete: _additive.GaussianDiscrete,
    _dm.Snapping: _select.Snapping,
    _dm.Exponential: _select.Exponential,
    _dm.PermuteAndFlip: _select.PermuteAndFlip,
    _dm.Binary: _categorical.Binary,
    _dm.ExponentialCategorical: _categorical.ExponentialCategorical,
    _dm.ExponentialHierarchical: _categorical.ExponentialHierarchical,
    _dm.Uniform: _uniform.Uniform,
    _dm.Gaussian: _gaussian.Gaussian,
    _dm.Staircase: _staircase.Staircase,
    _dm.LaplaceBoundedNoise: _truncated.LaplaceBoundedNoise,
}

_PATCHES = Patches()


# ----------------------------------------------------------------------------- vectorized tools
def _range_warning(multi: bool) -> None:
    what = " (or has missing elements)" if multi else ""
    warnings.warn(f"Range parameter has not been specified{what}. Falling back to taking range "
                  "from the data.\nTo ensure differential privacy, and no additional privacy "
                  "leakage, the range must be specified independently of the data (i.e., using "
                  "domain knowledge).", PrivacyLeakWarning, stacklevel=3)


def _noisy_counts(hist: np.ndarray, epsilon: float, random_state: Any) -> np.ndarray:
    """Every bin through GeometricTruncated(epsilon, 1, [0, maxsize]) at once: the same
    distribution as diffprivlib's per-bin loop (independent noise per bin of
    ``int(bin)``)."""
    mech = _additive.GeometricTruncated(epsilon=epsilon, sensitivity=1, lower=0, upper=_INT_MAX,
                                        random_state=random_state)
    return mech.randomise(hist.astype(np.int64))


def histogram(sample, epsilon=1.0, bins=10, range=None, weights=None, density=None,
              random_state=None, accountant=None, **unused_args):
    """``diffprivlib.tools.histogram`` with all bins noised in one exact dpfast call.

    Same parameters, warnings, budget accounting and output distribution as diffprivlib's
    (each bin ``int(count)`` plus independent exact two-sided geometric noise of scale
    ``1/epsilon``, clamped at 0): ``epsilon``-DP under add/remove of one sample.
    """
    warn_unused_args(unused_args)
    accountant = BudgetAccountant.load_default(accountant)
    accountant.check(epsilon, 0)
    if range is None:
        _range_warning(False)
    hist, edges = np.histogram(sample, bins=bins, range=range, weights=weights, density=None)
    dp_hist = _noisy_counts(hist, epsilon, random_state).astype(hist.dtype)
    accountant.spend(epsilon, 0)
    if density:
        total = dp_hist.sum()
        return dp_hist / np.array(np.diff(edges), float) / (total if total else 1), edges
    return dp_hist, edges


def histogramdd(sample, epsilon=1.0, bins=10, range=None, weights=None, density=None,
                random_state=None, accountant=None, **unused_args):
    """``diffprivlib.tools.histogramdd`` with all cells noised in one exact dpfast call
    (same parameters, warnings, accounting and output distribution as diffprivlib's)."""
    warn_unused_args(unused_args)
    accountant = BudgetAccountant.load_default(accountant)
    accountant.check(epsilon, 0)
    if np.array(bins, dtype=object).ndim == 0 or not np.all([np.ndim(b) for b in bins]):
        if range is None or (isinstance(range, list) and None in range):
            _range_warning(True)
    hist, edges = np.histogramdd(sample, bins=bins, range=range, weights=weights, density=None)
    dp_hist = _noisy_counts(hist, epsilon, random_state).astype(float)
    if density:
        total = dp_hist.sum()
        for axis, e in enumerate(edges):
            shape = np.ones(dp_hist.ndim, int)
            shape[axis] = dp_hist.shape[axis]
            dp_hist = dp_hist / np.diff(e).reshape(shape)
        if total > 0:
            dp_hist /= total
    accountant.spend(epsilon, 0)
    return dp_hist, edges


_TOOLS = {"histogram": histogram, "histogramdd": histogramdd}


# ----------------------------------------------------------------------------- install
def _modules() -> list[Any]:
    for name in ("diffprivlib.tools", "diffprivlib.models"):
        importlib.import_module(name)
    return [m for n, m in list(sys.modules.items())
            if m is not None and (n == "diffprivlib" or n.startswith("diffprivlib."))]


def install() -> None:
    """Make diffprivlib use dpfast: every module-level reference to a replaced mechanism
    class (in ``diffprivlib.mechanisms``, ``diffprivlib.tools.*``, ``diffprivlib.models.*``)
    and to ``histogram``/``histogramdd`` is rebound to its dpfast counterpart, and
    ``check_random_state`` in ``diffprivlib.models.*``/``diffprivlib.tools.*`` to
    :func:`dpfast.compat.diffprivlib._numpy_rng.check_random_state` (the models' own numpy
    draws on ChaCha20).

    Calls nest (each ``install`` needs one ``uninstall``); thread-safe.  Objects created
    before ``install`` keep their classes; objects created while installed keep working
    after :func:`uninstall`.  Not patched (documented in the package docstring): ``Vector``
    and ``Bingham``.
    """
    _PATCHES.install(_targets)


def _targets() -> list[tuple[Any, str, Any]]:
    """``(module, attr, replacement)`` for every reference to a replaced class or tool."""
    found: list[tuple[Any, str, Any]] = []
    for module in _modules():
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and value in REPLACEMENTS:
                found.append((module, attr, REPLACEMENTS[value]))
            elif (attr in _TOOLS and callable(value)
                  and getattr(value, "__module__", "") == "diffprivlib.tools.histograms"):
                found.append((module, attr, _TOOLS[attr]))
            elif (value is _numpy_rng.ORIGINAL_CHECK_RANDOM_STATE
                  and module.__name__.startswith(("diffprivlib.models", "diffprivlib.tools"))):
                # the models' and tools' own numpy draws (diffprivlib.utils itself is kept)
                found.append((module, attr, _numpy_rng.check_random_state))
    return found


def uninstall() -> None:
    """Undo one :func:`install` (the last one restores diffprivlib exactly)."""
    _PATCHES.uninstall()


def is_installed() -> bool:
    """Whether diffprivlib is currently patched."""
    return _PATCHES.installed


@contextlib.contextmanager
def patched() -> Iterator[None]:
    """``with patched(): ...`` -- :func:`install` for the block, then :func:`uninstall`."""
    install()
    try:
        yield
    finally:
        uninstall()
