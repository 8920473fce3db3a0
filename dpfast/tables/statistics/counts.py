"""Counts: rows per key (``count``)."""

from __future__ import annotations

from typing import Any

from dpfast.tables import groupby
from dpfast.tables.statistics.base import Statistic


class Count(Statistic):
    """The number of rows per key, each person's rows bounded (``max_partitions`` keys,
    ``max_per_partition`` rows per key)."""

    name = "count"
    sql_names = ("count",)
    summary = "rows per key"

    @classmethod
    def plan(cls, spec: Any, source: Any) -> groupby.Plan:
        return groupby.plan_of("count", spec, source)
