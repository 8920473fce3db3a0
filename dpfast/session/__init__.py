"""Sessions: differentially private releases over a data store, with a result cache,
analysts' sub-budgets, a usage report and aggregate SQL.

* :mod:`.session`: :class:`Session` (the releases of :mod:`dpfast.tables` over one private
  table, through the cache; a method per statistic of the registry) and :class:`Analyst`
  (a session seen by one analyst); :mod:`._stats`: the statistics offered, read from
  :data:`dpfast.tables.statistics.REGISTRY` (:data:`STATISTICS`);
* :mod:`.sql`: the private SQL subset, read into dpfast's query model (:mod:`._query`,
  :mod:`._relation`, :mod:`._expr`: the whitelist; dpfast generates the SQL DuckDB runs)
  and its refusals (:class:`SqlRefusedError`, :data:`REASONS`, in :mod:`._refuse`);
  :mod:`._answer`: running a planned query, :class:`SqlRelease`;
* :mod:`._release`: one release of a method call or an SQL aggregate -- its
  :class:`dpfast.tables.spec.ReleaseSpec` (one format for both: the cache key is its
  ``query_id()``), its plan over the table's schema (the event, before any row) and
  :func:`dpfast.tables.run.release` (every release: nothing runs before the charge);
* :mod:`._source` (the data source and its fingerprint; made by :mod:`._open`),
  :mod:`._fetch` (a row query's result as numpy arrays), :mod:`._engine` (the locked
  DuckDB connection analysts' row queries run on), :mod:`._histogram` and
  :mod:`._topdown` (the histogram and TopDown releases), :mod:`._spec` (the key columns and the
  row filter), :mod:`._cache` (the query id, the ledger query, the payloads),
  :mod:`._store` (the adapter to the budget's cache and analysts:
  :meth:`dpfast.Budget.query`, :meth:`dpfast.Budget.analyst`, :meth:`dpfast.Budget.usage`).

Needs the ``session`` extra (``pip install 'dpfast[session]'``: DuckDB, sqlglot, Polars);
nothing here is imported by ``import dpfast``.
"""

from __future__ import annotations

from dpfast._core.lazy import attach as _attach

_PUBLIC: dict[str, str] = {
    "Session": "dpfast.session.session",
    "Analyst": "dpfast.session.session",
    "STATISTICS": "dpfast.session.session",
    "SqlRelease": "dpfast.session._answer",
    "SqlRefusedError": "dpfast.session._refuse",
    "ReleaseFailedError": "dpfast._core.errors",
    "REASONS": "dpfast.session._refuse",
}

__getattr__, __dir__, __all__ = _attach(__name__, _PUBLIC)
