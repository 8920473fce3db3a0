"""A DuckDB row query's result as numpy arrays: the one conversion every read of a session's
rows goes through (:meth:`dpfast.session._source.Source.fetch_sql`).

Two routes give the same arrays (``tests/test_session_fetch.py``): DuckDB's ``fetchnumpy``
where every result column has a type whose numpy form DuckDB and Arrow agree on
(:data:`NUMPY_TYPES`) and no value is NULL, else Arrow.  :func:`empty_columns` gives the
empty typed columns of a query without running it (the schema a release is planned on,
before the charge).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ._engine import quote

if TYPE_CHECKING:
    from duckdb import DuckDBPyConnection

__all__ = ["NUMPY_TYPES", "arrow_columns", "empty_columns", "numpy_columns"]

#: DuckDB types whose ``fetchnumpy`` arrays equal Arrow's ``to_numpy`` (dtype and values)
NUMPY_TYPES = frozenset({"BOOLEAN", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT",
                         "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "VARCHAR"})


def numpy_columns(con: DuckDBPyConnection, sql: str) -> dict[str, np.ndarray]:
    """The result columns of ``sql`` (run on ``con``) as numpy arrays.

    When every result column has a type whose numpy form DuckDB and Arrow agree on
    (:data:`NUMPY_TYPES`: integers, floats, booleans, strings) and no value is NULL,
    DuckDB writes the rows straight into numpy arrays (``fetchnumpy``: one copy, half
    the time of the Arrow route at 10^7 rows); otherwise (dates, decimals, NULLs...)
    through Arrow (:func:`arrow_columns`).  Both give the same arrays for the first kind
    (``tests/test_session_fetch.py``).
    """
    rel = con.sql(sql)
    if all(str(t) in NUMPY_TYPES for t in rel.types):
        res = rel.fetchnumpy()
        if not any(isinstance(a, np.ma.MaskedArray) and a.mask.any()
                   for a in res.values()):
            return {c: np.asarray(a.data if isinstance(a, np.ma.MaskedArray) else a)
                    for c, a in res.items()}
    return arrow_columns(con, sql)


def arrow_columns(con: DuckDBPyConnection, sql: str) -> dict[str, np.ndarray]:
    """The result columns of ``sql`` through Arrow where pyarrow is installed (the
    session extra), else DuckDB's ``fetchnumpy``."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:  # pragma: no cover - pyarrow is in the session extra
        res = con.execute(sql).fetchnumpy()
        return {c: np.asarray(a.data if isinstance(a, np.ma.MaskedArray) else a)
                for c, a in res.items()}
    table = con.sql(sql).to_arrow_table()
    out = {}
    for name, col in zip(table.column_names, table.columns):
        arr = col.combine_chunks()
        out[name] = np.asarray(arr.to_numpy(zero_copy_only=False))
    return out


def empty_columns(con: DuckDBPyConnection, sql: str) -> dict[str, np.ndarray]:
    """The empty result columns of ``sql`` with the dtypes its rows would have,
    without running it: its relation is bound (DuckDB resolves names and types and
    reads no row), then ``SELECT CAST(NULL AS type) AS name, ... LIMIT 0`` -- no
    table -- goes through :func:`numpy_columns` as the rows would."""
    rel = con.sql(sql)
    cells = ", ".join(("NULL" if str(t) == "NULL" else f"CAST(NULL AS {t})")
                      + f" AS {quote(c)}" for c, t in zip(rel.columns, rel.types))
    return numpy_columns(con, f"SELECT {cells} LIMIT 0")
