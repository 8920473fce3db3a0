"""The shuffle by privacy id shared by every dask release (:mod:`dpfast.dask.backend`,
every statistic through it): how many outputs (:func:`shuffle_partitions`, from the
scheduler's task threads), the split of one partition into pieces -- pandas pieces
(:func:`split_frame`) or, when every column has a numpy number dtype, compact numpy
columns (:func:`split_arrays`, :func:`concat_arrays`) -- and the all-to-all as one
hand-built graph (:func:`shuffle_graph`).  Every id's rows meet in one output; which output
does not change a release.  The output of a row is a function of its id's *value* alone
(:mod:`dpfast._core.idhash`: the integer ``7``, the float ``7.0`` and an object ``7`` go
to one output; a string by its own hash), never of the dtype its partition happens to give
the id column -- a partition whose ids turned float (a missing id) or object (an id of
another type) still sends every other id where the other partitions send it.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from dpfast._core import idhash as _idhash
from dpfast._core import scratch
from dpfast._kernels import grouping as _kg

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd

__all__ = ["Call", "by_id", "columns_of", "concat_arrays", "concat_arrays_then",
           "concat_frames_then", "numeric", "scheduler_threads",
           "shuffle_graph", "shuffle_partitions", "split_arrays", "split_frame"]

_R = TypeVar("_R")

_DTYPES = "\0dtypes"  # a compact piece's original column dtypes (:func:`split_arrays`)


def columns_of(ddf: dd.DataFrame, cols: list[str]) -> dd.DataFrame:
    """``ddf[cols]``, or ``ddf`` itself when ``cols`` are all its columns (in any order):
    the tasks read columns by name, and a projection that keeps every column is still one
    task per partition (10^7 rows in 8 persisted partitions: 8 of the graph's 52)."""
    have = list(getattr(ddf, "columns", []))
    if len(set(have)) == len(have) and set(have) == set(cols) and len(cols) == len(have):
        return ddf
    return ddf[cols]


def shuffle_partitions(nparts: int, npartitions: int | None,
                       threads: int | None = None) -> int:
    """The number of partitions after the shuffle by privacy id: ``npartitions`` if given,
    else as many as the input up to 8 and a third of them beyond (at least 8), and, when
    ``threads`` (the scheduler's task threads, :func:`scheduler_threads`) is known, no more
    than twice the threads unless that would put more than three inputs' rows in one
    output.  The all-to-all shuffle moves ``nparts * nout`` pieces, each a task and a
    message, so an output per input makes the scheduling grow with the square of the
    partitions (3*10^7 rows in 24 partitions on two workers: 160 ns a row with 24 outputs,
    68 with 8), and outputs beyond what the threads run at once only add pieces (10^7 rows in
    8 partitions on two one-thread workers: 4 outputs, 9% less wall than 8); a third keeps
    each output within about three inputs' rows (memory out of core).  Which output an id
    goes to does not change the release."""
    if npartitions:
        return npartitions
    third = -(-nparts // 3)
    base = nparts if nparts <= 8 else max(8, third)
    if threads is None or threads < 1:
        return base
    return max(1, min(base, max(2 * threads, third)))


def _client_workers() -> dict[str, int] | None:
    """``{worker address: task threads}`` of the distributed client ``dask.compute`` would
    use now, or None (no client: a local scheduler, or a client that cannot answer)."""
    import dask.base

    owner = getattr(dask.base.get_scheduler(), "__self__", None)
    nthreads = getattr(owner, "nthreads", None)
    if type(owner).__name__ != "Client" or not callable(nthreads):
        return None
    try:
        return {str(a): int(t) for a, t in nthreads().items()} or None
    except Exception:  # noqa: BLE001 - a client that cannot answer: the input rule
        return None


def scheduler_threads() -> int | None:
    """Task threads of the scheduler ``dask.compute`` would use now: a distributed
    client's workers' threads, 1 for the synchronous scheduler, None when unknown (the
    local threaded or process pool: the input rule alone)."""
    import dask.base

    workers = _client_workers()
    if workers is not None:
        return builtins.sum(workers.values()) or None
    sched = dask.base.get_scheduler()
    if getattr(sched, "__name__", "") == "get_sync":
        return 1
    return None


def _bucket_dtype(nout: int) -> type:
    return np.uint16 if nout <= 1 << 16 else np.int64


def _route(ids: np.ndarray) -> np.ndarray:
    """Per row, a uint64 hash of its id's canonical value (:mod:`dpfast._core.idhash`)."""
    import pandas as pd

    kind = ids.dtype.kind
    if kind in "biu":
        return np.asarray(pd.util.hash_array(np.asarray(ids).astype(np.int64).view(np.uint64)))
    if kind == "f":
        return np.asarray(pd.util.hash_array(_idhash.id_hashes(ids)))
    return _idhash.route_hashes(ids)


def _hash_order(ids: np.ndarray, nout: int, bounds: np.ndarray) -> np.ndarray:
    """Rows in the order of their output (their id's :func:`_route` mod ``nout``;
    stable); ``bounds`` (``nout + 1`` zeros) gets the outputs' offsets in that order."""
    h: np.ndarray = (_route(ids) % np.uint64(nout)).astype(_bucket_dtype(nout))
    np.cumsum(np.bincount(h, minlength=nout), out=bounds[1:])
    return np.argsort(h, kind="stable")  # radix sort for uint16


def split_frame(pdf: pd.DataFrame, id_col: str, nout: int) -> tuple:
    """Hash-partition one partition's rows by privacy id into ``nout`` pieces (piece j
    holds the rows whose id hashes to j: every id's rows meet in one output)."""
    ids = pdf[id_col]
    missing = ids.isna()
    if missing.any():  # the NULL policy (dpfast.tables._keys.drop_nulls): the row leaves
        pdf = pdf[~missing.to_numpy()]
        ids = pdf[id_col]
    bounds = np.zeros(nout + 1, np.int64)
    rows = pdf.take(_hash_order(ids.to_numpy(), nout, bounds))
    pieces = tuple(rows.iloc[bounds[j]:bounds[j + 1]] for j in range(nout))
    return pieces if nout > 1 else pieces[0]


def numeric(ddf: dd.DataFrame, cols: list[str]) -> bool:
    """Whether every column is a plain numpy number dtype (bool, int, uint, float): the
    compact path of :func:`split_arrays`, decided once per graph from the metadata."""
    return all(isinstance(ddf[c].dtype, np.dtype) and ddf[c].dtype.kind in "biuf"
               for c in cols)


def split_arrays(pdf: pd.DataFrame, cols: list[str], id_col: str, nout: int) -> tuple:
    """:func:`split_frame` for numpy-dtype columns: the pieces are dicts of compact numpy
    columns (no index, no DataFrame), cheap to pickle between workers.  Integer and bool
    ids go to the output partition of a mix of their value (:func:`_kernels.grouping.
    id_buckets`, one pass; then one stable counting-sort pass per column straight into its
    narrowed piece); float ids to that of their canonical value
    (:func:`dpfast._core.idhash.id_hashes`: an integral float as the integer, so a
    partition whose ids turned float sends them where the integer ids go).  Every partition
    of one graph uses the same rule, so an id's rows meet in one output; which output does
    not change the release."""
    arrs = {c: pdf[c].to_numpy() for c in cols}
    ids = arrs[id_col]
    if ids.dtype.kind == "f" and np.isnan(ids).any():  # the NULL policy: those rows leave
        keep = ~np.isnan(ids)
        arrs = {c: a[keep] for c, a in arrs.items()}
        ids = arrs[id_col]
    kinds = {c: a.dtype for c, a in arrs.items()}  # each column's own dtype, restored
    if nout == 1:
        return ({_DTYPES: kinds, **{c: np.ascontiguousarray(a) for c, a in arrs.items()}},)
    bounds = np.zeros(nout + 1, np.int64)
    if ids.dtype.kind in "biuf":
        route = (_idhash.id_hashes(ids).view(np.int64) if ids.dtype.kind == "f" else
                 np.ascontiguousarray(ids, np.int64))
        sorted_cols = {}
        with scratch.lease():  # the buckets are a temporary; the pieces leave the task
            bucket = scratch.empty(len(ids), _bucket_dtype(nout))
            _kg.id_buckets(route, nout, bucket, bounds)
            for c, a in arrs.items():
                a = np.ascontiguousarray(a)
                out = scratch.pages(a.shape[0], _narrow_dtype(a))  # huge pages if any
                _kg.scatter_rows(a, bucket, bounds, out)
                sorted_cols[c] = out
    else:
        order = _hash_order(ids, nout, bounds)
        sorted_cols = {c: a.astype(_narrow_dtype(a), copy=False).take(order)
                       for c, a in arrs.items()}
    return tuple({_DTYPES: kinds, **{c: a[bounds[j]:bounds[j + 1]]
                                     for c, a in sorted_cols.items()}}
                 for j in range(nout))


def _narrow_dtype(a: np.ndarray) -> np.dtype:
    """An int64 / uint64 column whose values all fit int32 travels as int32 (half the
    bytes through the shuffle); :func:`concat_arrays` casts it back exactly."""
    if a.dtype.kind in "iu" and a.dtype.itemsize > 4 and a.size:
        lo, hi = int(a.min()), int(a.max())
        if -(1 << 31) <= lo and hi < (1 << 31):
            return np.dtype(np.int32)
    return a.dtype


def concat_frames_then(pieces: list, fn: Callable[..., _R], *args: object) -> _R:
    """``fn(one output's pandas pieces concatenated, *args)``: the combine of
    :func:`split_frame`'s pieces."""
    import pandas as pd

    return fn(pd.concat(pieces, ignore_index=True), *args)


def concat_arrays_then(pieces: list, fn: Callable[..., _R], *args: object) -> _R:
    """``fn(columns, *args)`` with one output's compact pieces (:func:`split_arrays`)
    concatenated into a dict of columns on this thread's scratch pages: ``fn`` runs inside
    the lease (:func:`dpfast._core.scratch.lease`) and must return only copies."""
    with scratch.lease():
        return fn(concat_arrays(pieces), *args)


def concat_arrays(pieces: list) -> dict[str, np.ndarray]:
    """Concatenate one output's compact pieces (:func:`split_arrays`) into the current
    scratch lease (:func:`dpfast._core.scratch.lease`; plain numpy outside one), each
    column in the dtype of pandas' concatenation of the original columns: the values are
    unchanged."""
    first = next(iter(pieces[0][_DTYPES]))  # every piece has every column
    n = builtins.sum(len(p[first]) for p in pieces)
    return {c: np.concatenate([p[c] for p in pieces],  # one pass, cast while copying
                              out=scratch.empty(n, np.result_type(
                                  *[p[_DTYPES][c] for p in pieces])),
                              casting="unsafe")  # exact: a narrowed column fits int32
            for c in pieces[0][_DTYPES]}


class Call:
    """``fn(x, *args)`` as a picklable task callable (its arguments are opaque to the
    graph: never mistaken for keys, never traversed)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn: Callable[..., object], args: tuple) -> None:
        self.fn = fn
        self.args = args

    def __call__(self, x: object) -> object:
        return self.fn(x, *self.args)


def shuffle_graph(parts: list, split: Call, combine: Call, nout: int, token: tuple,
                  bare: bool = False) -> list:
    """The all-to-all shuffle as one hand-built graph: ``split(partition)`` -> ``nout``
    pieces per input partition (``getitem`` tasks, or the split itself when ``bare``:
    one output), ``combine([piece j of every input])`` for each output ``j``; returns the
    outputs as :class:`dask.delayed.Delayed`.  The same tasks ``dask.delayed`` would
    make, built without its per-call argument traversal and tokenizing (10^7 rows in 8
    partitions: 0.3 ms instead of 12-16 ms on the driver per release).  The splits are
    named by the input keys and the split's arguments (a pure function of them); the
    combines by a fresh name per release (they carry the release's key source)."""
    import uuid

    from dask.base import tokenize
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    sname = "dpfast-split-" + tokenize([p.key for p in parts], token, nout)
    pname = "dpfast-piece-" + sname[len("dpfast-split-"):]
    cname = "dpfast-combine-" + uuid.uuid4().hex
    dsk: dict = {}
    for i, p in enumerate(parts):
        dsk[(sname, i)] = (split, p.key)
        if not bare:
            for j in range(nout):
                dsk[(pname, i, j)] = (operator.getitem, (sname, i), j)
    for j in range(nout):
        ins = [(sname, i) if bare else (pname, i, j) for i in range(len(parts))]
        dsk[(cname, j)] = (combine, ins)
    hlg = HighLevelGraph.from_collections(cname, dsk, dependencies=parts)
    return [Delayed((cname, j), hlg, layer=cname) for j in range(nout)]


def by_id(parts: list, id_col: str, fn: Callable[..., object], args: tuple,
          npartitions: int | None,
          cols: list[str] | None = None) -> list:
    """The outputs of the shuffle of ``parts`` (delayed partitions) by privacy id
    ``id_col``: :func:`shuffle_partitions` outputs, each ``fn(rows, *args)`` of its rows --
    a pandas DataFrame (:func:`split_frame`, :func:`concat_frames_then`), or, when ``cols``
    are given (every one of a numpy number dtype: :func:`numeric`), a dict of those
    columns on scratch pages (:func:`split_arrays`, :func:`concat_arrays_then`)."""
    nout = shuffle_partitions(len(parts), npartitions, scheduler_threads())
    if cols is not None:
        return shuffle_graph(parts, Call(split_arrays, (cols, id_col, nout)),
                             Call(concat_arrays_then, (fn, *args)), nout,
                             ("arrays", cols, id_col))
    return shuffle_graph(parts, Call(split_frame, (id_col, nout)),
                         Call(concat_frames_then, (fn, *args)), nout, ("frames", id_col),
                         bare=nout == 1)
