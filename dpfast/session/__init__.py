"""Sessions: differentially private releases over a data store, with a result cache,
analysts' sub-budgets, a usage report and aggregate SQL.

* :mod:`.session`: :class:`Session` (the releases of :mod:`dpfast.tables` over one private
  table, through the cache) and :class:`Analyst` (a session seen by one analyst), with the
  dispatch table :data:`STATISTICS`;
* :mod:`.sql`: the private SQL subset, read into dpfast's query model (:mod:`._query`,
  :mod:`._relation`, :mod:`._expr`: the whitelist; dpfast generates the SQL DuckDB runs)
  and its refusals (:class:`SqlRefusedError`, :data:`REASONS`, in :mod:`._refuse`);
  :mod:`._answer`: running a planned query, :class:`SqlRelease`;
* :mod:`._source` (the data source and its fingerprint), :mod:`._engine` (the locked
  DuckDB connection analysts' row queries run on), :mod:`._spec` (the normalized
  query spec and query id), :mod:`._cache` (the event probe, the payloads), :mod:`._store`
  (the adapter to the budget's cache and analysts: :meth:`dpfast.Budget.query`,
  :meth:`dpfast.Budget.analyst`, :meth:`dpfast.Budget.usage`).

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
