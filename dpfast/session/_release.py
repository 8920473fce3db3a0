"""One release of a session -- a method call or one aggregate of an SQL query -- through
the result cache, on the one spec format and the one pipeline.

A method call (``session.sum("delay", "dest", where=...)``) is read into the same query
model as SQL (:class:`dpfast.session._query.Query` with one :class:`~._query.Agg`), so
both build their release the same way (:func:`run`):

1. **the spec**: a :class:`dpfast.tables.spec.ReleaseSpec` of the statistic (its registry
   name and own parameters), the keys, the privacy unit and target, the contribution and
   value bounds, the key domain's fingerprint, the bounding policy, and ``rows``: a
   fingerprint of the source's relevant columns, of the public tables joined and of the
   row query dpfast generates (:func:`dpfast.session._query.rows_sql`: the value column,
   the filter, the joins, the NULL rule).  Its
   :meth:`~dpfast.tables.spec.ReleaseSpec.query_id` is the cache key: the same question
   asked by method and by SQL is charged once;
2. **the plan**: :func:`dpfast.tables.plan.plan` over the table's *schema* -- a
   :class:`dpfast.tables.run.Rows` of empty arrays typed as the row query's columns
   would be (the query is bound, not run: :meth:`dpfast.session._source.Source.fetch_sql`
   with ``limit=0``) -- gives the event before any row is read;
3. **the cache**: :func:`dpfast.session._cache.cached` charges that event in the ledger's
   query (or answers from the cache), then reads the rows and runs
   :func:`dpfast.tables.run.release` with that plan (no second charge: the ledger query
   was the charge), so the event released is the plan's by construction; a Dask source
   runs the same spec and plan over the frame with the Dask backend
   (:class:`dpfast.dask.backend.DaskBackend`).

Every statistic takes this path, its spec made by its registry class's ``make_spec``
(a rank statistic's -- quantile, median, min, max -- with its grid in the options, as
:func:`dpfast.tables.quantile` makes it), ``bounds="auto"`` with its two-phase plan
(:mod:`dpfast.tables._autobounds`, chosen by the statistic's own plan).  Nothing is run
on any row, real or synthetic, before the charge.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dpfast.tables import plan as _plan
from dpfast.tables import run as _run
from dpfast.tables.spec import ReleaseSpec
from dpfast.tables.statistics import REGISTRY

from . import _cache, _expr, _query
from ._cache import Released
from ._query import Agg, Query
from ._stats import Stat

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent

    from .session import Session

__all__ = ["columns", "run", "schema_rows", "spec_of"]

#: a column of rows, or a tuple of key columns
Column = np.ndarray | tuple[np.ndarray, ...]
#: one release's rows: (keys, privacy ids or None, values or None)
Data = tuple[Column, np.ndarray | None, np.ndarray | None]
#: value bounds: ``(lo, hi)``, ``"auto"`` or None
Bounds = tuple[float, float] | str | None
#: a public key domain: the keys (one array, or one per key column), or None
Domain = npt.ArrayLike | None


def columns(q: Query, agg: Agg, unit: str | None) -> list[str]:
    """The private table's columns the row query of ``agg`` reads (real names): the keys,
    the condition, the join keys, the aggregate's column and the privacy unit."""
    cols = [k for k in q.keys] + list(_expr.columns(q.where))
    cols += [c for j in q.joins for pair in j.on for c in pair]
    if agg.column is not None:
        cols.append(agg.column)
    names = {c.name for c in cols if c.table == 0}
    if unit is not None:
        names.add(unit)
    return sorted(names)


def _by(q: Query) -> tuple[str, ...]:
    """The key columns' names (a public table's column as ``table.column``)."""
    return tuple(k.name if k.table == 0 else f"{q.joins[k.table - 1].table}.{k.name}"
                 for k in q.keys)


def spec_of(session: Session, q: Query, agg: Agg, stat: Stat, *, epsilon: float | None,
            delta: float, rho: float | None, noise: str | None, bounds: Bounds,
            domain: Domain, max_partitions: int, max_per_partition: int, bounding: str
            ) -> ReleaseSpec:
    """The release spec of ``agg`` of ``q`` (see the module docstring): checked
    (ValueError / TypeError naming the parameter), reading the source's fingerprint and
    no row."""
    src, pid = session._source, session.privacy_unit
    row_sql = _query.rows_sql(q, agg, pid, stat.value)
    rows = src.rows_fingerprint(columns(q, agg, pid), row_sql, [j.table for j in q.joins])
    # the value column is named by ``rows`` (the row query reads it as the release's
    # values); the statistic's own column stays None, as in dpfast.tables' specs of one
    # statistic (a plan reads a source's values then)
    # the registry class makes its spec (a rank statistic's: its grid in the options, as
    # dpfast.tables.quantile's; rho/noise refused there, naming the parameter)
    return REGISTRY[stat.name].make_spec(
        column=None, params=dict(agg.params), by=_by(q), privacy_unit=pid,
        epsilon=epsilon, delta=delta, rho=rho, noise=noise, max_partitions=max_partitions,
        max_per_partition=max_per_partition, bounds=bounds, domain=domain,
        bounding=bounding, rows=rows)


def _reader(session: Session, q: Query, agg: Agg, value: bool
            ) -> Callable[[int | None], dict[str, np.ndarray]]:
    """``read(limit)``: the row query's columns ``__k0``..., ``__pid``, ``__v`` (at most
    ``limit`` rows; 0: none, only their types).  A plain query (no join, no filter) reads
    a pandas frame in place or a file's column cache (:meth:`Source.plain_rows`: the
    arrays DuckDB would give), else DuckDB runs the generated row query (not for a Dask
    source: its rows are read by the Dask backend)."""
    src, pid = session._source, session.privacy_unit
    row_sql = _query.rows_sql(q, agg, pid, value)
    plain: dict[str, str] | None = None
    notnull: list[str] = []
    if q.keys and not q.joins and q.where is None:
        plain = {f"__k{i}": k.name for i, k in enumerate(q.keys)}
        notnull = [k.name for k in q.keys]
        if pid:
            plain["__pid"] = pid
            notnull.append(pid)
        if agg.column is not None:
            if value:
                plain["__v"] = agg.column.name
            notnull.append(agg.column.name)

    def read(limit: int | None) -> dict[str, np.ndarray]:
        got = None if plain is None else src.plain_rows(plain, notnull, limit)
        if got is None:
            got = src.fetch_sql(row_sql, limit=limit, ids=["__pid"] if pid else [])
        return got

    return read


def _data(got: dict[str, np.ndarray], n_keys: int) -> Data:
    kc = got["__k0"] if n_keys == 1 else tuple(got[f"__k{i}"] for i in range(n_keys))
    return kc, got.get("__pid"), got.get("__v")


def _typed(a: np.ndarray) -> np.ndarray:
    """An empty column of ``a``'s type; a column of Python objects (DuckDB's text, blobs,
    decimals...) as an empty numpy ``str`` column: an empty object column would say
    nothing of its values' type."""
    a = np.asarray(a)
    return np.empty(0, np.str_) if a.dtype.kind == "O" else a[:0]


def schema_rows(types: dict[str, np.ndarray], n_keys: int, domain: Domain) -> _run.Rows:
    """The source a plan reads (:class:`dpfast.tables.run.Source`): a
    :class:`~dpfast.tables.run.Rows` of **no rows**, its columns empty arrays of the row
    query's types (``types``: its columns with no row)."""
    keys, ids, values = _data({k: _typed(v) for k, v in types.items()}, n_keys)
    return _run.Rows(keys, ids, values, domain=domain)


def run(session: Session, q: Query, agg: Agg, stat: Stat, *, epsilon: float | None,
        delta: float, rho: float | None, noise: str | None, bounds: Bounds, domain: Domain,
        max_partitions: int, max_per_partition: int, bounding: str, what: str,
        need: float | None = None) -> Released:
    """The release ``agg`` of ``q`` through the cache (see the module docstring)."""
    src, pid = session._source, session.privacy_unit
    if not stat.per_partition:  # people per key: one row per person and key, always
        max_per_partition = 1
    if not stat.gaussian:
        for name, v in (("rho", rho), ("noise", noise)):
            if v is not None:
                raise ValueError(f"{stat.name} is pure-DP: it takes no {name}= (got {v!r})")
    if isinstance(bounds, str):  # "auto": the statistic's plan chooses them privately
        if bounds != "auto":
            raise ValueError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        if src.kind == "dask":  # (dpfast.dask takes public bounds only)
            raise TypeError("bounds must be a pair (lo, hi)")
    spec = spec_of(session, q, agg, stat, epsilon=epsilon, delta=delta, rho=rho,
                   noise=noise, bounds=bounds, domain=domain, max_partitions=max_partitions,
                   max_per_partition=max_per_partition, bounding=bounding)
    n_keys = max(1, len(q.keys))
    compute: Callable[[], Released]
    if src.kind == "dask":  # the same spec and plan over the frame, the Dask backend
        from dpfast.dask.backend import DaskBackend, Frame

        assert src.frame is not None  # a Dask source is its frame
        frame = Frame.make(src.frame, [k.name for k in q.keys], pid,
                           (agg.column.name,) if stat.value and agg.column else (), domain)
        # the event from the plan, over the frame's schema (its dtypes: nothing computed)
        plan = _plan.plan(spec, frame)

        def compute() -> Released:
            return _run.release(spec, frame, backend=DaskBackend(None), plan=plan,
                                budget=None, note=what, rng=session.rng)
    else:
        read = _reader(session, q, agg, stat.value)
        # the event from the plan, over the schema: no row is read, nothing is run
        plan = _plan.plan(spec, schema_rows(read(0), n_keys, domain))

        def compute() -> Released:
            keys, ids, values = _data(read(None), n_keys)
            return _run.release(spec, _run.Rows(keys, ids, values, domain=domain),
                                plan=plan, budget=None, note=what, rng=session.rng)
    event: DpEvent = plan.event
    return _cache.cached(session, spec, what, event, compute, _cache.table_payload,
                         lambda r: r, need=need)
