"""The many-metric release of dask DataFrames (``aggregate``).

It builds the release spec and a :class:`~dpfast.dask.backend.Frame` and runs
:func:`dpfast.tables.run.release` with the :class:`~dpfast.dask.backend.DaskBackend`: rows
hash-partitioned by privacy id, the plan's own per-partition step where every id's rows are
(:class:`dpfast.tables.multi.MultiPlan`), the partials merged exactly on the driver, *then*
the one charge, then noise and selection there -- so the release equals the one-machine
release on the same rows with the same release generator, bit for bit, and a failure of the
inputs charges nothing.  The single statistics (``variance``, ``std``,
``privacy_id_count``, ``count_distinct``, ...) are generated from the registry
(:mod:`dpfast.dask._facade`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from dpfast.dask.backend import DaskBackend, Frame
from dpfast.tables import multi
from dpfast.tables import run as _run
from dpfast.tables import statistics as _statistics

if TYPE_CHECKING:
    import dask.dataframe as dd
    import numpy.typing as npt

    from dpfast.dask.keys import WorkerKey
    from dpfast.random import RngLike
    from dpfast.tables.multi import AggregateRelease
    from dpfast.tables.spec import Charger

__all__ = ["aggregate"]


def _by(by: object) -> list[str]:
    names = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) \
        else None
    if not names or not all(isinstance(b, str) for b in names):
        raise TypeError("by must be a column name or a list of column names")
    return names


def aggregate(ddf: dd.DataFrame, by: str | Sequence[str], privacy_id: str | None = None, *,
              metrics: Sequence[object] | Mapping[str, object],
              epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
              bounds: dict[str, tuple[float, float]] | None = None,
              weights: Mapping[str, float | Fraction] | Sequence[float | Fraction] | None
              = None,
              max_partitions: int = 1, max_per_partition: int = 1, domain: object = None,
              noise: str | None = None, rng: RngLike | WorkerKey = None,
              budget: Charger | None = None, note: str = "",
              use_case: str | None = None, npartitions: int | None = None,
              selection: str = "auto", bounding: str = "uniform",
              candidates: dict[str, npt.ArrayLike] | None = None) -> AggregateRelease:
    """:func:`dpfast.tables.aggregate` of a dask DataFrame (rank metrics included: each
    worker sends the sparse (key, grid slot) -> rows table of the rows it kept, the driver
    sums them).

    Parameters are those of :func:`dpfast.tables.aggregate` (``df`` a dask DataFrame),
    ``rng`` and ``npartitions`` as in :func:`dpfast.dask.count`.

    Returns
    -------
    AggregateRelease
        Equal, bit for bit, to :func:`dpfast.tables.aggregate` on the same rows with the
        same release generator.

    Privacy
    -------
    That of :func:`dpfast.tables.aggregate` (the same mechanism: add/remove one person,
    the budget split over the metrics' parts, the rank metrics' exponential mechanisms on
    the same kept rows, one composed event charged once on the driver, after the partials are
    computed and merged, before any noise).  Bounding (either ``bounding`` policy) depends
    only on each person's rows, all of which one worker holds.
    """
    names = _by(by)
    frame = Frame.make(ddf, names, privacy_id, (), domain)  # a dask frame, its key and id
    back = DaskBackend(npartitions)
    spec = multi.aggregate_spec(
        metrics, _statistics.metric_parts(), bounds=bounds, weights=weights,
        candidates=candidates, available=[str(c) for c in ddf.columns], by=tuple(names),
        privacy_unit=privacy_id, epsilon=epsilon, delta=delta, rho=rho, noise=noise,
        max_partitions=max_partitions, max_per_partition=max_per_partition, domain=domain,
        selection=selection, bounding=bounding)
    used = sorted({s.column for s in spec.statistics if s.column is not None})
    frame = Frame.make(ddf, names, privacy_id, used, domain)
    return _run.release(spec, frame, backend=back, budget=budget, note=note, rng=rng,
                        use_case=use_case)
