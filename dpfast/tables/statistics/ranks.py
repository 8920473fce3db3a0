"""Rank statistics: ``quantile``, ``median``, ``min`` and ``max`` per key (exponential
mechanism on a public grid; :mod:`dpfast.tables._ranks` plans them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from dpfast.tables import _ranks
from dpfast.tables.statistics.base import Statistic

if TYPE_CHECKING:
    from dpfast.tables.run import Source
    from dpfast.tables.spec import ReleaseSpec


class _Rank(Statistic):
    """A rank statistic: pure ε-DP (no Gaussian noise), a value column clamped to public
    bounds (or a public candidate grid)."""

    value: ClassVar[bool] = True
    bounds: ClassVar[bool] = True
    gaussian: ClassVar[bool] = False
    # what the public functions take (pure ε-DP: no rho, noise or use_case) and return
    common: ClassVar[tuple[str, ...]] = (
        "epsilon", "delta", "max_partitions", "max_per_partition", "domain", "rng", "budget",
        "note", "dropna", "selection", "bounding")
    returns: ClassVar[str] = "QuantileRelease"
    bounds_default: ClassVar[object] = None  # optional: a public candidate grid instead

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> _ranks.Plan:
        return _ranks.plan_of(spec, source)


class Quantile(_Rank):
    """The ``q``-quantile(s) of the values per key."""

    name = "quantile"
    sql_names = ("quantile", "percentile_cont", "percentile_disc", "approx_quantile")
    params = {"q": None}
    example = {"q": 0.5}
    summary = "q-quantile(s) of a value column per key"


class Median(_Rank):
    """The median of the values per key (``q = 0.5``)."""

    name = "median"
    sql_names = ("median",)
    summary = "median of a value column per key"


class Min(_Rank):
    """The minimum of the values per key (``q = 0``: a grid point of rank 0 up to the
    rank error)."""

    name = "min"
    summary = "minimum of a value column per key"


class Max(_Rank):
    """The maximum of the values per key (``q = 1``)."""

    name = "max"
    summary = "maximum of a value column per key"
