"""The release paths of :mod:`dpfast.dask` (tables on a Dask DataFrame, noise on a Dask
array), run with Dask's synchronous scheduler (one path also on a ``LocalCluster``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from dpfast.testing._registry import BOUNDS, KEYS, Case, ReleasePath, record_cases, register

# the records paths audit every person; on dask each run builds a graph: these suffice
KINDS = ("huge", "nan", "inf", "many_keys", "new_key", "many_rows", "null_key", "null_id",
         "str_id")
PUBLIC = {"epsilon": 1.0, "domain": list(KEYS)}
SELECT = {"epsilon": 3.0, "delta": 1e-2}


def _ddf(data: Any) -> Any:
    """Two partitions of ``data``, its columns' dtypes kept: Dask's default
    (``dataframe.convert-string``) turns an object column into strings, so the one missing
    or string id of a neighbour would turn every other person's integer id into a string
    before dpfast sees it (a different person id, not a change dpfast makes)."""
    import dask
    import dask.dataframe as dd

    with dask.config.set({"dataframe.convert-string": False}):
        return dd.from_pandas(data, npartitions=2)


def dask_run(call: Callable[[Any, bytes], Any], *,
             scheduler: str = "sync") -> Callable[[Any, bytes], Any]:
    """``run(data, rng)``: ``call(dask DataFrame of data, rng)`` under ``scheduler``."""

    def run(data: Any, rng: bytes) -> Any:
        import dask

        with dask.config.set(scheduler=scheduler):
            return call(_ddf(data), rng)

    return run


def _path(name: str, fn: str, call: Callable[[Any, bytes], Any], *,
          select: bool = False) -> None:
    register(ReleasePath(name, (f"dpfast.dask.{fn}",), dask_run(call),
                         cases=lambda: record_cases(kinds=KINDS), selects_keys=select))


def _d() -> Any:
    import dpfast.dask

    return dpfast.dask


_path("dask.count/domain", "count", lambda f, r: _d().count(f, "key", "id", rng=r, **PUBLIC))
_path("dask.count/select", "count", lambda f, r: _d().count(f, "key", "id", rng=r, **SELECT),
      select=True)
_path("dask.privacy_id_count/select", "privacy_id_count",
      lambda f, r: _d().privacy_id_count(f, "key", "id", rng=r, **SELECT), select=True)
_path("dask.privacy_id_count/l2", "privacy_id_count",
      lambda f, r: _d().privacy_id_count(f, "key", "id", rng=r, bounding="l2",
                                         max_partitions=2, selection="laplace", **SELECT),
      select=True)
_path("dask.count_distinct/domain", "count_distinct",
      lambda f, r: _d().count_distinct(f, "key", "code", "id", rng=r, **PUBLIC))
def _bounded(fn: str, f: Any, r: bytes) -> Any:
    return getattr(_d(), fn)(f, "key", "value", "id", bounds=BOUNDS, rng=r, **PUBLIC)


for _fn in ("sum", "mean", "variance", "std"):
    _path(f"dask.{_fn}/domain", _fn,
          functools.partial(_bounded, _fn))
_path("dask.sum/select", "sum",
      lambda f, r: _d().sum(f, "key", "value", "id", bounds=BOUNDS, rng=r, **SELECT),
      select=True)
_path("dask.quantile/domain", "quantile",
      lambda f, r: _d().quantile(f, "key", "value", "id", q=[0.25, 0.75], bounds=BOUNDS,
                                 rng=r, **PUBLIC))
for _fn in ("median", "min", "max"):
    _path(f"dask.{_fn}/domain", _fn,
          functools.partial(_bounded, _fn))
_path("dask.aggregate/domain", "aggregate",
      lambda f, r: _d().aggregate(f, "key", "id", metrics=["count", ("sum", "value"),
                                                           ("mean", "value")],
                                  bounds={"value": BOUNDS}, rng=r, **PUBLIC))


def _cluster_count(data: Any, rng: bytes) -> Any:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster):
        return _d().count(_ddf(data), "key", "id", rng=rng, **SELECT)


register(ReleasePath("dask.count/local-cluster", ("dpfast.dask.count",), _cluster_count,
                     cases=lambda: record_cases(kinds=("many_keys",)), selects_keys=True,
                     slow=True))


# -- noise on arrays: a histogram and its neighbour (one cell one more), sensitivity 1

def array_cases() -> list[Case]:
    """A public-shape histogram and its neighbours (one person adds one to a cell, or is
    one of a cell's counts)."""
    h = np.array([5, 0, 3, 12, 7, 1], dtype=np.int64)
    up, down = h.copy(), h.copy()
    up[1] += 1
    down[3] -= 1
    return [Case("add-one", h, up, ()), Case("remove-one", h, down, ())]


def _array_path(fn: str, scale: float) -> None:
    def run(data: Any, rng: bytes) -> Any:
        import dask.array as da

        darr = da.from_array(np.asarray(data, dtype=np.float64 if fn in ("laplace",
                                                                         "gaussian")
                                        else np.int64), chunks=2)
        return getattr(_d(), fn)(darr, scale, rng=rng).compute(scheduler="sync")

    register(ReleasePath(f"dask.{fn}/array", (f"dpfast.dask.{fn}",), run, cases=array_cases,
                         sensitivity=1.0))


for _fn in ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian"):
    _array_path(_fn, 2.0)
