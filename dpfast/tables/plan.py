"""``plan(spec, source)``: a release spec -> its plan, with the event, before any row.

The statistic named by the spec (:data:`dpfast.tables.statistics.REGISTRY`) makes the plan
from the spec and the source's public schema (its columns' dtypes); nothing here reads a
row, so the event a session charges is the plan's, known before the data are touched.
"""

from __future__ import annotations

from typing import Any

from dpfast.tables import statistics as _statistics
from dpfast.tables.spec import ReleaseSpec

__all__ = ["plan"]


def plan(spec: ReleaseSpec, source: Any) -> Any:
    """The :class:`~dpfast.tables.run.Plan` of ``spec`` over ``source``."""
    if not isinstance(spec, ReleaseSpec):
        raise TypeError(f"spec must be a ReleaseSpec, got {type(spec).__name__}")
    family = spec.option("family")
    if family is not None:  # a release of several statistics (e.g. "aggregate")
        return _statistics.get(family).plan(spec, source)
    if len(spec.statistics) != 1:
        raise ValueError("a spec of several statistics needs options={'family': ...}")
    return _statistics.get(spec.statistics[0].statistic).plan(spec, source)
