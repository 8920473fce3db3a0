"""The statistics of the release layer, one module each, registered by subclassing
:class:`~dpfast.tables.statistics.base.Statistic` (:data:`REGISTRY`)."""

from __future__ import annotations

from dpfast.tables.statistics import counts, ranks, sums  # noqa: F401  (registers them)
from dpfast.tables.statistics.base import REGISTRY, Statistic, get

__all__ = ["REGISTRY", "Statistic", "get"]
