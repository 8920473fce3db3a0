"""The release layer: raw records -> a published, differentially private table.

A release is a pipeline of separable steps, each a function of its own module:

``validate`` (:mod:`dpfast.tables._keys`: canonical keys and ids) -> ``bound``
(:mod:`dpfast.tables.bounding`: per privacy id, at most ``max_partitions`` keys and
``max_per_partition`` rows per key, chosen uniformly with a keyed CSPRNG) -> ``charge``
(the :class:`dpfast.Budget`, before any noise) -> ``aggregate`` -> ``noise`` ->
``post-process`` (private partition selection, :mod:`dpfast.tables.partition`) ->
``report`` (:class:`dpfast.tables.TableRelease`, its confidence intervals and accuracy).

Public names are loaded lazily (``import dpfast.tables`` imports no numba).  Where to
add: a new aggregate goes in :mod:`dpfast.tables.groupby` (and reuses ``bound`` /
``charge`` / ``noise``), a new consistency post-processing (e.g. TopDown) in its own module
of this package, re-exported here.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> module of this package that defines it
_PUBLIC: dict[str, str] = {
    "count": "dpfast.tables.api",
    "sum": "dpfast.tables.api",
    "mean": "dpfast.tables.api",
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
    "privacy_id_count": "dpfast.tables.api_multi",
    "count_distinct": "dpfast.tables._distinct",
    "variance": "dpfast.tables.spread",
    "std": "dpfast.tables.spread",
    "aggregate": "dpfast.tables.api_multi",
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
