"""The statistics of the release layer, one module each, registered by subclassing
:class:`~dpfast.tables.statistics.base.Statistic` (:data:`REGISTRY`)."""

from __future__ import annotations

from dpfast.tables.statistics import (  # noqa: F401  (registers them)
    counts,
    distinct,
    ranks,
    sums,
)
from dpfast.tables.statistics.base import COMMON, REGISTRY, REQUIRED, Statistic, get

__all__ = ["REGISTRY", "REQUIRED", "COMMON", "Statistic", "get", "metric_parts"]


def metric_parts() -> dict[str, tuple[str, ...]]:
    """Each registered statistic that a many-metric release offers (its class's
    :attr:`~dpfast.tables.statistics.base.Statistic.parts`) -> the parts it is finished
    from."""
    return {name: cls.parts for name, cls in REGISTRY.items() if cls.parts}
