"""The release layer: raw records -> a published, differentially private table.

A release is a pipeline of separable steps, each a function of its own module:

``validate`` (:mod:`dpfast.tables._keys`: canonical keys and ids) -> ``bound``
(:mod:`dpfast.tables.bounding`: per privacy id, at most ``max_partitions`` keys and
``max_per_partition`` rows per key, chosen uniformly with a keyed CSPRNG) -> ``charge``
(the :class:`dpfast.Budget`, before any noise) -> ``aggregate`` -> ``noise`` ->
``post-process`` (private partition selection, :mod:`dpfast.tables.partition`) ->
``report`` (:class:`dpfast.tables.TableRelease`, its confidence intervals and accuracy).

Public names are loaded lazily (``import dpfast.tables`` imports no numba).  The release
function of each registered statistic (``count``, ``sum``, ``mean``, ...: the
:data:`~dpfast.tables.statistics.REGISTRY`) is generated from its
:class:`~dpfast.tables.statistics.Statistic` class by :mod:`dpfast.tables.facade`; the
other names come from the modules of :data:`_PUBLIC`.  Where to add: a new statistic is one
module of :mod:`dpfast.tables.statistics` plus its test (docs/extending.md); a new
consistency post-processing (e.g. TopDown) goes in its own module of this package,
re-exported here.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

# name -> module of this package that defines it (a registered statistic that states its
# docstring takes precedence: generated; one listed here until then keeps this function)
_PUBLIC: dict[str, str] = {
    "quantile": "dpfast.tables.quantiles",
    "median": "dpfast.tables.quantiles",
    "min": "dpfast.tables.quantiles",
    "max": "dpfast.tables.quantiles",
    "QuantileRelease": "dpfast.tables.quantile_release",
    "auto_bounds": "dpfast.tables.autobounds",
    "AutoBounds": "dpfast.tables.autobounds",
    "TableRelease": "dpfast.tables.release",
    "AccuracySummary": "dpfast.tables.release",
    "bound_contributions": "dpfast.tables.bounding",
    "partition_threshold": "dpfast.tables.partition",
    "topdown": "dpfast.tables.hierarchy",
    "TopDownRelease": "dpfast.tables.hierarchy",
    "aggregate_levels": "dpfast.tables.hierarchy",
    "aggregate": "dpfast.tables.api_multi",
    "AggregateRelease": "dpfast.tables._multi_release",
}


def _submodule(name: str) -> bool:
    """``name`` is a module of this package (``from dpfast.tables import NAME`` asks this module's
    ``__getattr__`` first: a submodule is imported, never looked up in the registry)."""
    global _MODULES
    if _MODULES is None:
        _MODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))
    return name in _MODULES


_MODULES: frozenset[str] | None = None


def _registry() -> dict[str, Any]:
    from dpfast.tables.statistics import REGISTRY  # loaded on first use, not at import

    return REGISTRY


def __getattr__(name: str) -> Any:
    if name == "__all__":  # the registry's names too (a statistic may register later)
        return sorted(set(_PUBLIC) | set(_registry()))
    if not name.startswith("_") and not _submodule(name):
        stat = _registry().get(name)
        # generated (not cached here: the registry decides each time) once the statistic
        # states its docstring; until then its hand-written function of _PUBLIC
        if stat is not None and stat.doc:
            from dpfast.tables.facade import local_function

            return local_function(stat)
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpfast.tables' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC) | set(_registry()))
