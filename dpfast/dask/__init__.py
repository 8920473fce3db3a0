"""Scale out on Dask: the same release on a cluster as on one machine.

``dpfast.dask.count / sum / mean / variance / std / privacy_id_count / count_distinct`` --
every statistic of the registry (:data:`dpfast.tables.statistics.REGISTRY`), its function
generated from it (:mod:`dpfast.dask._facade`) -- (and ``quantile / median / min / max``,
:mod:`dpfast.dask.quantiles`; ``aggregate``, :mod:`dpfast.dask.multi`) take a dask
DataFrame and release exactly -- bit for bit, for any partitioning, row order or cluster --
what the same function of :mod:`dpfast.tables` releases on the same rows with the same key:
rows are hash-partitioned by privacy id (so every id's rows meet in one partition),
bounded per id with the keyed per-id streams of :mod:`dpfast.tables.bounding`, aggregated
per key, reduced, and noised on the driver with the per-key addressed noise of
:mod:`dpfast.tables.keynoise`.

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

import importlib
import pkgutil
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dpfast.tables.statistics import Statistic

# name -> module (the registered statistics take precedence: generated from the registry)
_PUBLIC: dict[str, str] = {
    "quantile": "dpfast.dask.quantiles",
    "median": "dpfast.dask.quantiles",
    "min": "dpfast.dask.quantiles",
    "max": "dpfast.dask.quantiles",
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


def _submodule(name: str) -> bool:
    """``name`` is a module of this package (``from dpfast.dask import NAME`` asks this module's
    ``__getattr__`` first: a submodule is imported, never looked up in the registry)."""
    global _MODULES
    if _MODULES is None:
        _MODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__))
    return name in _MODULES


_MODULES: frozenset[str] | None = None


def _registry() -> dict[str, type[Statistic]]:
    from dpfast.tables.statistics import REGISTRY

    return REGISTRY


def _generated() -> dict[str, type[Statistic]]:
    """The registered statistics generated here: those with Dask steps and a docstring
    (the others keep their hand-written function of ``_PUBLIC``, if any)."""
    return {n: s for n, s in _registry().items() if s.dask and s.doc}


def __getattr__(name: str) -> Any:  # PEP 562: names resolved at run time
    if name == "__all__":  # the registry's names too (a statistic may register later)
        return sorted(set(_PUBLIC) | set(_generated()))
    stat = None if name.startswith("_") or _submodule(name) else _generated().get(name)
    if stat is not None:  # generated, not cached here: the registry decides each time
        from dpfast.dask._facade import dask_function

        return dask_function(stat)
    if name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpfast.dask' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC) | set(_generated()))
