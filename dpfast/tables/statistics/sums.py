"""Sums of a bounded value column: ``sum``, ``mean``, ``variance`` and ``std`` per key."""

from __future__ import annotations

from typing import Any

from dpfast.tables import groupby, multi
from dpfast.tables.statistics.base import Statistic


class Sum(Statistic):
    """The sum of the values per key, clamped to public bounds."""

    name = "sum"
    sql_names = ("sum",)
    value = True
    bounds = True
    summary = "sum of a value column per key"
    parts = ("sum",)

    @classmethod
    def plan(cls, spec: Any, source: Any) -> groupby.Plan:
        return groupby.plan_of("sum", spec, source)


class Mean(Statistic):
    """The mean of the values per key: noisy centred sum over noisy count."""

    name = "mean"
    sql_names = ("avg", "mean")
    value = True
    bounds = True
    summary = "mean of a value column per key"
    parts = ("count", "csum")

    @classmethod
    def plan(cls, spec: Any, source: Any) -> groupby.Plan:
        return groupby.plan_of("mean", spec, source)


class Variance(Statistic):
    """The population variance of the values per key: the noisy count, centred sum and
    centred sum of squares of the same kept rows (the many-metric plan with one metric)."""

    name = "variance"
    sql_names = ("var_pop",)
    value = True
    bounds = True
    summary = "population variance of a value column per key"
    parts = ("count", "csum", "csq")

    @classmethod
    def plan(cls, spec: Any, source: Any) -> multi.MultiPlan:
        return multi.plan_of(spec, source, {cls.name: cls.parts})


class Std(Statistic):
    """The population standard deviation per key: the square root of :class:`Variance`
    (post-processing)."""

    name = "std"
    sql_names = ("stddev_pop",)
    value = True
    bounds = True
    summary = "population standard deviation of a value column per key"
    parts = ("count", "csum", "csq")

    @classmethod
    def plan(cls, spec: Any, source: Any) -> multi.MultiPlan:
        return multi.plan_of(spec, source, {cls.name: cls.parts})
