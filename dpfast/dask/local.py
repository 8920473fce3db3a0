"""Local-DP reports on Dask: the streaming server's tallies per partition, then merged.

:func:`aggregate_reports` runs :meth:`dpfast.local.Aggregator.add` on every partition of a
dask bag (or a dask DataFrame column) of report batches and merges the partial aggregates
with :meth:`~dpfast.local.Aggregator.merge`.  The tallies are integers, so the result is
*exactly* the one-process aggregate of the same reports, for any partitioning, order or
cluster.  Reports cost nothing further (post-processing of epsilon-LDP reports).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

from dpfast.local import Aggregator

if TYPE_CHECKING:
    import dask.bag as db
    import dask.dataframe as dd

    from dpfast.local import ReportBatch


def _partial(batches: Iterable[ReportBatch | bytes | str], protocol: str,
             params: dict[str, object], candidates: list[object] | None) -> Aggregator:
    agg = Aggregator.from_params(protocol, params, candidates=candidates)
    for b in batches:
        agg.add(b)
    return agg


def _merge(parts: Iterable[Aggregator]) -> Aggregator:
    it = iter(parts)
    total = next(it).copy()
    for p in it:
        total.merge(p)
    return total


def aggregate_reports(reports: db.Bag | dd.DataFrame, aggregator: Aggregator, *,
                      column: str = "report",
                      split_every: int | None = None) -> Aggregator:
    """Aggregate a dask collection of report batches on the cluster.

    Parameters
    ----------
    reports : dask.bag.Bag or dask.dataframe.DataFrame
        Items are :class:`~dpfast.local.ReportBatch` objects, their bytes or their JSON
        (a DataFrame: the column ``column`` holds them, e.g. raw payloads read from
        Parquet).
    aggregator : Aggregator
        Declares the protocol, its public parameters and the candidates; its own state is
        included in the result (it is not modified).
    split_every : int, optional
        Fan-in of the tree reduction (dask's default if None).

    Returns
    -------
    Aggregator
        ``aggregator`` plus every report, equal to adding them all in one process.  A
        batch inconsistent with the declared parameters fails the computation with the
        server's ``ValueError``.

    **Privacy**

    Post-processing of ``epsilon``-LDP reports: no further cost (see
    :class:`dpfast.local.Aggregator`).
    """
    if not isinstance(aggregator, Aggregator):
        raise TypeError(f"aggregator must be a dpfast.local.Aggregator, got "
                        f"{type(aggregator).__name__}")
    import dask.bag as db

    bag = reports
    if not isinstance(reports, db.Bag):
        try:
            series = reports[column]
        except (KeyError, TypeError):
            raise TypeError(f"reports must be a dask Bag or a dask DataFrame with a "
                            f"{column!r} column") from None
        bag = series.to_bag()
    part = functools.partial(_partial, protocol=aggregator.protocol,
                             params=dict(aggregator.params), candidates=aggregator.candidates)
    total = bag.reduction(part, _merge, split_every=split_every).compute()
    return aggregator.copy().merge(total)
