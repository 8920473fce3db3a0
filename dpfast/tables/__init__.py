"""The release layer: raw records -> a published, differentially private table.

A release is a pipeline of separable steps, each a function of its own module:

``validate`` (:mod:`dpfast.tables._keys`: canonical keys and ids) -> ``bound``
(:mod:`dpfast.tables.bounding`: per privacy id, at most ``max_partitions`` keys and
``max_per_partition`` rows per key, chosen uniformly with a keyed CSPRNG) -> ``charge``
(the :class:`dpfast.Budget`, before any noise) -> ``aggregate`` -> ``noise`` ->
``post-process`` (private partition selection, :mod:`dpfast.tables.partition`) ->
``report`` (:class:`dpfast.tables.TableRelease`, its confidence intervals and accuracy).

Public names are loaded lazily (``import dpfast.tables`` imports no numba).  Where to
add: a new aggregate goes in :mod:`dpfast.tables.aggregate` (and reuses ``bound`` /
``charge`` / ``noise``), a new consistency post-processing (e.g. TopDown) in its own module
of this package, re-exported here.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

# name -> module of this package that defines it
_PUBLIC: dict[str, str] = {
    "count": "dpfast.tables.aggregate",
    "sum": "dpfast.tables.aggregate",
    "mean": "dpfast.tables.aggregate",
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
    "privacy_id_count": "dpfast.tables.statistics",
    "count_distinct": "dpfast.tables.statistics",
    "variance": "dpfast.tables.variance",
    "std": "dpfast.tables.variance",
    "aggregate": "dpfast.tables.multi",
    "AggregateRelease": "dpfast.tables._multi_release",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpfast.tables' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))


class _Package(types.ModuleType):
    """The package's module type: its attribute ``aggregate`` is always the public function
    :func:`dpfast.tables.aggregate` (:mod:`dpfast.tables.multi`), never the submodule of the
    same name that holds count / sum / mean, which the import system would bind there on
    its first import (import that submodule's names with ``from dpfast.tables.aggregate
    import ...``; the module itself is ``sys.modules["dpfast.tables.aggregate"]``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "aggregate" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
