"""Scale out on Dask: the same release on a cluster as on one machine.

``dpfast.dask.count / sum / mean / variance / std / privacy_id_count / count_distinct /
quantile / median / min / max`` -- every statistic of the registry
(:data:`dpfast.tables.statistics.REGISTRY`) whose plans have the Dask steps, its function
generated from it (:mod:`dpfast.dask._facade`) -- (and ``aggregate``,
:mod:`dpfast.dask.multi`) take a dask DataFrame and release exactly -- bit for bit, for
any partitioning, row order or cluster -- what the same function of :mod:`dpfast.tables`
releases on the same rows with the same key: rows are hash-partitioned by privacy id (so
every id's rows meet in one partition), bounded per id with the keyed per-id streams of
:mod:`dpfast.tables.bounding`, aggregated per key, reduced, and noised on the driver with
the per-key addressed noise of :mod:`dpfast.tables.keynoise`.

Keys: what travels inside the task graph is the *bounding* sub-key only (it decides which
rows a person keeps; it cannot remove noise), or, with :func:`key_from_file` /
:func:`key_from_env`, not even that: the workers load the key themselves.

Fresh noise per release: a raw key (32 bytes or a :class:`WorkerKey`) is never used as it
is.  Every release (a table release, a lazy array call) draws a fresh release id on the
driver from ``os.urandom`` when it is built, carries it in its graph, and is noised by the
release generator of (key, id) (:func:`dpfast.tables.keynoise.keyed_generator`).  So one
key used for many releases gives independent noise, while one graph recomputed (a retried
task after a worker failure, a second ``compute``) reproduces its own noise.  A
:class:`dpfast.Generator` numbers its releases with its allocator (a generator rebuilt
from a key replays the same sequence: for tests and audits).

:func:`aggregate_reports` aggregates a dask bag (or DataFrame column) of local-DP report
batches with the streaming server of :mod:`dpfast.local`, exactly as one process would.

Needs the optional extra ``dask`` (``dask[dataframe]`` and ``distributed``); nothing here
imports dask until a function is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpfast._core.lazy import attach as _attach

if TYPE_CHECKING:
    from collections.abc import Callable

# name -> module (the registered statistics' functions are not listed: generated from the
# registry, dpfast.dask._facade)
_PUBLIC: dict[str, str] = {
    "aggregate": "dpfast.dask.multi",
    "discrete_laplace": "dpfast.dask.arrays",
    "discrete_gaussian": "dpfast.dask.arrays",
    "laplace": "dpfast.dask.arrays",
    "gaussian": "dpfast.dask.arrays",
    "key_from_file": "dpfast.dask.keys",
    "key_from_env": "dpfast.dask.keys",
    "WorkerKey": "dpfast.dask.keys",
    "aggregate_reports": "dpfast.dask.local",
}


def _statistics() -> dict[str, Callable[[], Callable[..., object]]]:
    from dpfast.dask._facade import dask_exports  # the registry loads on first use

    return dask_exports()


__getattr__, __dir__, _ = _attach(__name__, _PUBLIC, generated=_statistics)
