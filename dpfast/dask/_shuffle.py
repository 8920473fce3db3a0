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
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from dpfast._core import idhash as _idhash
from dpfast._core import scratch
from dpfast._kernels import grouping as _kg

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd

__all__ = ["Call", "MAX_PIECES", "by_id", "columns_of", "concat_arrays",
           "concat_arrays_then", "concat_frames_then", "numeric", "scheduler_threads",
           "shuffle_graph", "shuffle_partitions", "split_arrays", "split_frame",
           "split_group"]

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


def _arrow_pool_back() -> None:
    """Hand back to the OS the memory Arrow's allocator keeps after the Parquet reads:
    its pool (mimalloc in pyarrow's wheels) keeps what a finished read freed, which Dask
    counts as unmanaged memory against its pause and restart thresholds out of core.
    Called as each split and combine task starts; a call reaches this thread's heap and
    the pool's free arenas, not what Arrow's reader threads keep in their own heaps.
    Nothing when pyarrow is not loaded (never imported here)."""
    pool = getattr(sys.modules.get("pyarrow"), "default_memory_pool", None)
    if pool is not None:
        pool().release_unused()


def split_frame(pdf: pd.DataFrame | list[pd.DataFrame], id_col: str, nout: int) -> tuple:
    """Hash-partition one partition's rows (or a group of partitions', concatenated) by
    privacy id into ``nout`` pieces (piece j holds the rows whose id hashes to j: every
    id's rows meet in one output)."""
    _arrow_pool_back()
    if isinstance(pdf, list):
        import pandas as pd

        pdf = pdf[0] if len(pdf) == 1 else pd.concat(pdf, ignore_index=True)
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


def _numeric_columns(pdf: pd.DataFrame, cols: list[str], id_col: str
                     ) -> dict[str, np.ndarray]:
    """One partition's columns as numpy arrays, less the rows of a missing (NaN) id (the
    NULL policy: those rows leave)."""
    arrs = {c: pdf[c].to_numpy() for c in cols}
    ids = arrs[id_col]
    if ids.dtype.kind == "f" and np.isnan(ids).any():
        keep = ~np.isnan(ids)
        arrs = {c: a[keep] for c, a in arrs.items()}
    return arrs


def split_arrays(pdf: pd.DataFrame | list[pd.DataFrame], cols: list[str], id_col: str,
                 nout: int) -> tuple:
    """:func:`split_frame` for numpy-dtype columns: the pieces are dicts of compact numpy
    columns (no index, no DataFrame), cheap to pickle between workers.  Integer and bool
    ids go to the output partition of a mix of their value (:func:`_kernels.grouping.
    id_buckets`, one pass; then one stable counting-sort pass per column straight into its
    narrowed piece); float ids to that of their canonical value
    (:func:`dpfast._core.idhash.id_hashes`: an integral float as the integer, so a
    partition whose ids turned float sends them where the integer ids go).  Every partition
    of one graph uses the same rule, so an id's rows meet in one output; which output does
    not change the release.  A list of partitions (a group of the shuffle's inputs,
    :func:`split_group`) is split as their concatenation, each partition scattered
    straight into the group's pieces (no concatenated copy)."""
    _arrow_pool_back()
    frames = pdf if isinstance(pdf, list) else [pdf]
    parts = [_numeric_columns(f, cols, id_col) for f in frames]
    # each column's own dtype (pandas' concatenation of the group's), restored
    kinds = {c: np.result_type(*[p[c].dtype for p in parts]) for c in cols}
    if nout == 1:
        return ({_DTYPES: kinds, **{c: _concat([p[c] for p in parts]) for c in cols}},)
    ids = parts[0][id_col]
    if len(parts) == 1 and ids.dtype.kind not in "biuf":  # object ids: by their hashes
        bounds = np.zeros(nout + 1, np.int64)
        order = _hash_order(ids, nout, bounds)
        sorted_cols = {c: a.astype(_narrow_dtype([a]), copy=False).take(order)
                       for c, a in parts[0].items()}
    elif any(p[id_col].dtype.kind not in "biuf" for p in parts):  # rare: one at a time
        return _join_pieces([split_arrays(f, cols, id_col, nout) for f in frames], nout)
    else:
        with scratch.lease():  # the buckets are temporaries; the pieces leave the task
            sorted_cols, bounds = _scatter_group(parts, cols, id_col, nout)
    return tuple({_DTYPES: kinds, **{c: a[bounds[j]:bounds[j + 1]]
                                     for c, a in sorted_cols.items()}}
                 for j in range(nout))


def _concat(arrays: list[np.ndarray]) -> np.ndarray:
    return np.ascontiguousarray(arrays[0]) if len(arrays) == 1 else np.concatenate(arrays)


def _route_ids(ids: np.ndarray) -> np.ndarray:
    """The int64 an id is routed by: itself, or a float id's canonical value's hash."""
    return (_idhash.id_hashes(ids).view(np.int64) if ids.dtype.kind == "f" else
            np.ascontiguousarray(ids, np.int64))


def _scatter_group(parts: list[dict[str, np.ndarray]], cols: list[str], id_col: str,
                   nout: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The group's rows by output (stable: partition by partition, rows in order), each
    column narrowed (:func:`_narrow_dtype`), and the outputs' offsets ``bounds``."""
    counts = np.zeros((len(parts), nout), np.int64)
    buckets = []
    for i, p in enumerate(parts):
        bucket = scratch.empty(len(p[id_col]), _bucket_dtype(nout))
        pb = np.zeros(nout + 1, np.int64)
        _kg.id_buckets(_route_ids(p[id_col]), nout, bucket, pb)
        counts[i] = np.diff(pb)
        buckets.append(bucket)
    bounds = np.zeros(nout + 1, np.int64)
    np.cumsum(counts.sum(axis=0), out=bounds[1:])
    # where partition i's rows of output j start: after the earlier partitions' rows of j
    starts = bounds[:-1] + np.cumsum(counts, axis=0) - counts
    sorted_cols = {}
    for c in cols:
        out = scratch.pages(int(bounds[-1]), _narrow_dtype([p[c] for p in parts]))
        for i, p in enumerate(parts):
            at = np.empty(nout + 1, np.int64)
            at[:-1] = starts[i]
            at[-1] = bounds[-1]
            _kg.scatter_rows(np.ascontiguousarray(p[c]), buckets[i], at, out)
        sorted_cols[c] = out
    return sorted_cols, bounds


def _join_pieces(splits: list[tuple], nout: int) -> tuple:
    """Output ``j``'s pieces of several splits as one piece (concatenated per column in
    pandas' dtype; :func:`concat_arrays` restores the original dtypes)."""
    out = []
    for j in range(nout):
        ps = [s[j] for s in splits]
        kinds = {c: np.result_type(*[p[_DTYPES][c] for p in ps]) for c in ps[0][_DTYPES]}
        out.append({_DTYPES: kinds, **{c: np.concatenate([p[c] for p in ps]).astype(
            _narrow_dtype([p[c] for p in ps]), copy=False) for c in kinds}})
    return tuple(out)


def _narrow_dtype(arrays: list[np.ndarray]) -> np.dtype:
    """The dtype a column travels in: an integer column whose values all fit int16 (or
    int32) travels as int16 (int32), a half or a quarter of the bytes through the shuffle
    and, out of core, the spill; :func:`concat_arrays` casts it back exactly.  ``arrays``:
    the column's pieces from the partitions of one split (the widest dtype of them)."""
    dt = np.result_type(*[a.dtype for a in arrays])
    sized = [a for a in arrays if a.size]
    if dt.kind in "iu" and dt.itemsize > 2 and sized:
        lo = min(int(a.min()) for a in sized)
        hi = max(int(a.max()) for a in sized)
        for narrow in (np.int16, np.int32):
            info = np.iinfo(narrow)
            if narrow().itemsize < dt.itemsize and info.min <= lo and hi <= info.max:
                return np.dtype(narrow)
    return dt


def concat_frames_then(pieces: list, fn: Callable[..., _R], *args: object) -> _R:
    """``fn(one output's pandas pieces concatenated, *args)``: the combine of
    :func:`split_frame`'s pieces."""
    import pandas as pd

    _arrow_pool_back()
    return fn(pd.concat(pieces, ignore_index=True), *args)


def concat_arrays_then(pieces: list, fn: Callable[..., _R], *args: object) -> _R:
    """``fn(columns, *args)`` with one output's compact pieces (:func:`split_arrays`)
    concatenated into a dict of columns on this thread's scratch pages: ``fn`` runs inside
    the lease (:func:`dpfast._core.scratch.lease`) and must return only copies."""
    _arrow_pool_back()
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


#: at most about this many pieces (splits times outputs) in one shuffle: each piece is a
#: task, a key in a worker's memory and a message, and the scheduler's work grows with
#: their number; beyond it each split takes a group of inputs (:func:`split_group`)
MAX_PIECES = 8192


def split_group(nparts: int, nout: int, max_pieces: int = MAX_PIECES) -> int:
    """Inputs per split task: 1 (each input split on its own) while ``nparts * nout``
    pieces stay within ``max_pieces``, else as many as keep them there (10^9 rows in 500
    Parquet files, 167 outputs: 11 files a split, 46 splits, 7682 pieces instead of
    83500).  A group's rows travel in the same pieces as if split one by one; which split
    an input is in does not change a release."""
    if nparts * nout <= max_pieces:
        return 1
    return min(nparts, -(-nparts * nout // max_pieces))


def shuffle_graph(parts: list, split: Call, combine: Call, nout: int, token: tuple,
                  bare: bool = False, group: int = 1) -> list:
    """The all-to-all shuffle as one hand-built graph: ``split(partition)`` -> ``nout``
    pieces per input partition (``getitem`` tasks, or the split itself when ``bare``:
    one output), ``combine([piece j of every input])`` for each output ``j``; returns the
    outputs as :class:`dask.delayed.Delayed`.  ``group`` > 1: each split takes a list of
    that many consecutive inputs (:func:`split_group`).  The same tasks ``dask.delayed``
    would make, built without its per-call argument traversal and tokenizing (10^7 rows in
    8 partitions: 0.3 ms instead of 12-16 ms on the driver per release).  The splits are
    named by the input keys and the split's arguments (a pure function of them); the
    combines by a fresh name per release (they carry the release's key source)."""
    import uuid

    from dask.base import tokenize
    from dask.delayed import Delayed
    from dask.highlevelgraph import HighLevelGraph

    sname = "dpfast-split-" + tokenize([p.key for p in parts], token, nout, group)
    pname = "dpfast-piece-" + sname[len("dpfast-split-"):]
    cname = "dpfast-combine-" + uuid.uuid4().hex
    dsk: dict = {}
    groups = [parts[a:a + group] for a in range(0, len(parts), group)]
    for i, g in enumerate(groups):
        dsk[(sname, i)] = (split, g[0].key) if group == 1 else (split, [p.key for p in g])
        if not bare:
            for j in range(nout):
                dsk[(pname, i, j)] = (operator.getitem, (sname, i), j)
    for j in range(nout):
        ins = [(sname, i) if bare else (pname, i, j) for i in range(len(groups))]
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
    group = split_group(len(parts), nout, MAX_PIECES)
    if cols is not None:
        return shuffle_graph(parts, Call(split_arrays, (cols, id_col, nout)),
                             Call(concat_arrays_then, (fn, *args)), nout,
                             ("arrays", cols, id_col), group=group)
    return shuffle_graph(parts, Call(split_frame, (id_col, nout)),
                         Call(concat_frames_then, (fn, *args)), nout, ("frames", id_col),
                         bare=nout == 1, group=group)
