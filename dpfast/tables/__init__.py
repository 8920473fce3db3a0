"""The release layer: raw records -> a published, differentially private table.

A release is a pipeline of separable steps, each a function of its own module:

``validate`` (:mod:`dpfast.tables._keys`: canonical keys and ids) -> ``bound``
(:mod:`dpfast.tables.bounding`: per privacy id, at most ``max_partitions`` keys and
``max_per_partition`` rows per key, chosen uniformly with a keyed CSPRNG) -> ``charge``
(the :class:`dpfast.Budget`, before any noise) -> ``aggregate`` -> ``noise`` ->
``post-process`` (private partition selection, :mod:`dpfast.tables.partition`) ->
``report`` (:class:`dpfast.tables.TableRelease`, its confidence intervals and accuracy).

Public names are loaded lazily (``import dpfast.tables`` imports no numba;
:func:`dpfast._core.lazy.attach`).  The release function of each registered statistic
(``count``, ``sum``, ``mean``, ``quantile``, ...: the
:data:`~dpfast.tables.statistics.REGISTRY`) is generated from its
:class:`~dpfast.tables.statistics.Statistic` class by :mod:`dpfast.tables.facade`; the
other names come from the modules of :data:`_PUBLIC`.  Where to add: a new statistic is one
module of :mod:`dpfast.tables.statistics` plus its test (docs/extending.md); a new
consistency post-processing (e.g. TopDown) goes in its own module of this package,
re-exported here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpfast._core.lazy import attach as _attach

if TYPE_CHECKING:
    from collections.abc import Callable

# name -> module of this package that defines it (the registered statistics' functions are
# not listed: generated from the registry, facade.local_exports)
_PUBLIC: dict[str, str] = {
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
    "tune": "dpfast.tables.tuning",
    "TuneResult": "dpfast.tables._tune_result",
}


def _statistics() -> dict[str, Callable[[], Callable[..., object]]]:
    from dpfast.tables import facade  # the registry loads on first use, not at import

    return facade.local_exports()


__getattr__, __dir__, _ = _attach(__name__, _PUBLIC, generated=_statistics)
