"""``plan(spec, source)``: a release spec -> its plan, with the event, before any row.

The statistic named by the spec (:data:`dpfast.tables.statistics.REGISTRY`) makes the plan
from the spec and the source's public schema (its columns' dtypes); nothing here reads a
row, so the event a session charges is the plan's, known before the data are touched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpfast.tables import _tune_plan
from dpfast.tables import multi as _multi
from dpfast.tables import statistics as _statistics
from dpfast.tables.spec import ReleaseSpec

if TYPE_CHECKING:
    from dpfast.tables.run import Plan, Source

__all__ = ["plan"]


def plan(spec: ReleaseSpec, source: Source) -> Plan:
    """The :class:`~dpfast.tables.run.Plan` of ``spec`` over ``source``."""
    if not isinstance(spec, ReleaseSpec):
        raise TypeError(f"spec must be a ReleaseSpec, got {type(spec).__name__}")
    family = spec.option("family")
    if spec.option("tune") is not None:  # max_partitions="auto": tuning, then the release
        return _tune_plan.plan_auto(spec, source)
    if family == "aggregate" or (family is None and len(spec.statistics) > 1):
        # the many-metric release (one bounding, one selection, one charge): each
        # statistic's class says which parts it is finished from
        return _multi.plan_of(spec, source, _statistics.metric_parts())
    if family is not None:  # another release family of several statistics
        return _statistics.get(family).plan(spec, source)
    return _statistics.get(spec.statistics[0].statistic).plan(spec, source)
