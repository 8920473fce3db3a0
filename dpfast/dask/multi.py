"""Many-metric, variance, privacy-id and distinct-count releases of dask DataFrames.

Each function builds the release spec and a :class:`~dpfast.dask.backend.Frame` and runs
:func:`dpfast.tables.run.release` with the :class:`~dpfast.dask.backend.DaskBackend`: rows
hash-partitioned by privacy id, the plan's own per-partition step where every id's rows are
(:class:`dpfast.tables.multi.MultiPlan` for ``aggregate``, ``variance``, ``std`` and
``privacy_id_count``; ``privacy_id_count(bounding="l2")`` and ``count_distinct`` their own
plans), the partials merged exactly on the driver, *then* the one charge, then noise and
selection there -- so each release equals the one-machine release on the same rows with the
same release generator, bit for bit, and a failure of the inputs charges nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpfast.dask.backend import DaskBackend, Frame
from dpfast.tables import multi
from dpfast.tables import run as _run
from dpfast.tables import statistics as _statistics
from dpfast.tables.release import TableRelease
from dpfast.tables.spec import ReleaseSpec, StatSpec

if TYPE_CHECKING:
    from dpfast.tables import AggregateRelease

__all__ = ["aggregate", "variance", "std", "privacy_id_count", "count_distinct"]


def _by(by: Any) -> list[str]:
    names = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) \
        else None
    if not names or not all(isinstance(b, str) for b in names):
        raise TypeError("by must be a column name or a list of column names")
    return names


def aggregate(ddf: Any, by: Any, privacy_id: str | None = None, *, metrics: Any,
              epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
              bounds: dict[str, tuple[float, float]] | None = None, weights: Any = None,
              max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
              noise: str | None = None, rng: Any = None, budget: Any = None, note: str = "",
              use_case: str | None = None, npartitions: int | None = None,
              selection: str = "auto", bounding: str = "uniform",
              candidates: dict[str, Any] | None = None) -> AggregateRelease:
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


def _single(kind: str, ddf: Any, key: Any, value: str | None, privacy_id: Any,
            npartitions: Any, *, budget: Any, note: Any, rng: Any, use_case: Any,
            **kw: Any) -> TableRelease:
    """One statistic of the many-metric plan (``value``: its column, or None)."""
    frame = Frame.make(ddf, key, privacy_id, [] if value is None else [value],
                       kw.get("domain"))
    back = DaskBackend(npartitions)
    spec = ReleaseSpec.make([StatSpec(kind, value)], by=frame.columns.by,
                            privacy_unit=privacy_id, **kw)
    return _run.release(spec, frame, backend=back, budget=budget, note=note, rng=rng,
                        use_case=use_case)


def variance(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
             bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
             rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
             domain: Any = None, noise: str | None = None, rng: Any = None,
             budget: Any = None, note: str = "", use_case: str | None = None,
             npartitions: int | None = None, bounding: str = "uniform",
             selection: str = "auto") -> TableRelease:
    """:func:`dpfast.tables.variance` of the ``value`` column per key (bit-identical).

    Privacy
    -------
    That of :func:`dpfast.tables.variance` (count, centred sum, centred sum of squares at
    a third of the budget each; add/remove one person).
    """
    return _single("variance", ddf, key, value, privacy_id, npartitions, bounds=bounds,
                   epsilon=epsilon, delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                   budget=budget, note=note, use_case=use_case, bounding=bounding,
                   selection=selection)


def std(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
        bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
        rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
        domain: Any = None, noise: str | None = None, rng: Any = None, budget: Any = None,
        note: str = "", use_case: str | None = None, npartitions: int | None = None,
        bounding: str = "uniform", selection: str = "auto") -> TableRelease:
    """:func:`dpfast.tables.std` of the ``value`` column per key (bit-identical).

    Privacy
    -------
    That of :func:`dpfast.tables.std` (the square root of the variance release).
    """
    return _single("std", ddf, key, value, privacy_id, npartitions, bounds=bounds,
                   epsilon=epsilon, delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                   budget=budget, note=note, use_case=use_case, bounding=bounding,
                   selection=selection)


def privacy_id_count(ddf: Any, key: Any, privacy_id: str | None = None, *,
                     epsilon: float | None = None, delta: float = 0.0,
                     rho: float | None = None, max_partitions: int = 1, domain: Any = None,
                     noise: str | None = None, rng: Any = None, budget: Any = None,
                     note: str = "", use_case: str | None = None,
                     npartitions: int | None = None, bounding: str = "uniform",
                     selection: str = "auto") -> TableRelease:
    """:func:`dpfast.tables.privacy_id_count` of a dask DataFrame (bit-identical, also
    with ``bounding="l2"``: every id's rows meet in one partition, so its number of keys,
    hence its weight, is known there and the integer partial totals add up).

    Privacy
    -------
    That of :func:`dpfast.tables.privacy_id_count`: ``Δ1 = k`` under add/remove one person
    (``bounding="l2"``: ``Δ2 = sqrt(k)``, Gaussian noise).
    """
    return _single("privacy_id_count", ddf, key, None, privacy_id, npartitions,
                   epsilon=epsilon, delta=delta, rho=rho, max_partitions=max_partitions,
                   max_per_partition=1, domain=domain, noise=noise, rng=rng, budget=budget,
                   note=note, use_case=use_case, bounding=bounding, selection=selection)


def count_distinct(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
                   epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                   max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
                   noise: str | None = None, rng: Any = None, budget: Any = None,
                   note: str = "", use_case: str | None = None,
                   npartitions: int | None = None, selection: str = "auto",
                   bounding: str = "uniform") -> TableRelease:
    """:func:`dpfast.tables.count_distinct` of the ``value`` column per key (bit-identical:
    the workers send the distinct (key, value) pairs each person keeps; the driver takes
    their union and counts it).

    Privacy
    -------
    That of :func:`dpfast.tables.count_distinct`: ``Δ1 = k c`` under add/remove one person.
    The partials are computed (the rows validated) before the charge, as on one machine.
    """
    if not isinstance(value, str):
        raise TypeError(f"value must be a column name (str), got {value!r}")
    frame = Frame.make(ddf, key, privacy_id, [value], domain)
    back = DaskBackend(npartitions)
    spec = ReleaseSpec.make(
        [StatSpec("count_distinct", value)], by=frame.columns.by,
        privacy_unit=privacy_id, epsilon=epsilon, delta=delta, rho=rho, noise=noise,
        max_partitions=max_partitions, max_per_partition=max_per_partition, domain=domain,
        selection=selection, bounding=bounding)
    return _run.release(spec, frame, backend=back, budget=budget, note=note, rng=rng,
                            use_case=use_case)
