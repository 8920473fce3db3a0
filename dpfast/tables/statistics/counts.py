"""Counts: rows per key (``count``) and people per key (``privacy_id_count``)."""

from __future__ import annotations

from typing import Any

from dpfast.tables import _ids_l2, groupby, multi
from dpfast.tables.statistics.base import Statistic


class Count(Statistic):
    """The number of rows per key, each person's rows bounded (``max_partitions`` keys,
    ``max_per_partition`` rows per key)."""

    name = "count"
    sql_names = ("count",)
    summary = "rows per key"
    parts = ("count",)

    @classmethod
    def plan(cls, spec: Any, source: Any) -> groupby.Plan:
        return groupby.plan_of("count", spec, source)


class PrivacyIdCount(Statistic):
    """The number of distinct people (privacy ids) per key: each person counts once in
    each of at most ``max_partitions`` keys (``bounding="uniform"`` / ``"frequent"``: the
    many-metric plan with this one metric), or, ``bounding="l2"``, ``min(1, sqrt(k / t))``
    in each of their ``t`` keys (:mod:`dpfast.tables._ids_l2`, Gaussian noise)."""

    name = "privacy_id_count"
    summary = "distinct people per key"
    parts = ("ids",)

    @classmethod
    def plan(cls, spec: Any, source: Any) -> multi.MultiPlan | _ids_l2.Plan:
        if spec.bounding == "l2":
            return _ids_l2.plan_of(spec, source)
        return multi.plan_of(spec, source, {cls.name: cls.parts})
