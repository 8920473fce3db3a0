"""Sums of a bounded value column: ``sum`` and ``mean`` per key."""

from __future__ import annotations

from typing import Any

from dpfast.tables import _autobounds, groupby
from dpfast.tables.statistics.base import Statistic


class Sum(Statistic):
    """The sum of the values per key, clamped to public bounds."""

    name = "sum"
    sql_names = ("sum",)
    value = True
    bounds = True
    summary = "sum of a value column per key"

    @classmethod
    def plan(cls, spec: Any, source: Any) -> groupby.Plan | _autobounds.AutoPlan:
        if spec.bounds == "auto":  # private bounds first (tables/_autobounds.py)
            return _autobounds.plan_auto("sum", spec, source)
        return groupby.plan_of("sum", spec, source)


class Mean(Statistic):
    """The mean of the values per key: noisy centred sum over noisy count."""

    name = "mean"
    sql_names = ("avg", "mean")
    value = True
    bounds = True
    summary = "mean of a value column per key"

    @classmethod
    def plan(cls, spec: Any, source: Any) -> groupby.Plan | _autobounds.AutoPlan:
        if spec.bounds == "auto":  # private bounds first (tables/_autobounds.py)
            return _autobounds.plan_auto("mean", spec, source)
        return groupby.plan_of("mean", spec, source)
