"""The statistics of the release layer, one module each, registered by subclassing
:class:`~dpfast.tables.statistics.base.Statistic` (:data:`REGISTRY`)."""

from __future__ import annotations

from dpfast.tables.statistics import counts, sums  # noqa: F401  (registers them)
from dpfast.tables.statistics.base import COMMON, REGISTRY, REQUIRED, Statistic, get

__all__ = ["REGISTRY", "REQUIRED", "COMMON", "Statistic", "get"]
