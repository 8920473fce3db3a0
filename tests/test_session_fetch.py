"""dpfast.Session's row fetch: DuckDB's direct numpy route gives the same arrays (dtype and
values) as the Arrow route it replaced, for every type it takes; other types and NULLs go
through Arrow as before."""

from __future__ import annotations

import numpy as np
import pytest

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")
pytest.importorskip("sqlglot")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from dpfast.session import _source  # noqa: E402

_VALUES = {
    "BOOLEAN": "true, false, true",
    "TINYINT": "-128, 0, 127",
    "SMALLINT": "-32768, 5, 32767",
    "INTEGER": "-2147483648, 7, 2147483647",
    "BIGINT": "-9223372036854775808, 0, 9223372036854775807",
    "UTINYINT": "0, 1, 255",
    "USMALLINT": "0, 2, 65535",
    "UINTEGER": "0, 3, 4294967295",
    "UBIGINT": "0, 4, 18446744073709551615",
    "FLOAT": "'-1.5', 'nan', 'inf'",
    "DOUBLE": "'-0.0', 'nan', '1e308'",
    "VARCHAR": "'', 'é', 'zz'",
}


def _source_with(sql: str) -> _source.Source:
    con = duckdb.connect()
    con.execute(sql)
    return _source.Source("duckdb", "t", con=con, table="t")


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for name in a:
        assert type(a[name]) is np.ndarray and type(b[name]) is np.ndarray
        assert a[name].dtype == b[name].dtype, name
        assert a[name].shape == b[name].shape, name
        if a[name].dtype.kind == "O":
            assert a[name].tolist() == b[name].tolist(), name
        else:
            assert a[name].tobytes() == b[name].tobytes(), name


def test_the_numpy_types_are_duckdbs_names() -> None:
    con = duckdb.connect()
    for t in _source._NUMPY_TYPES:
        assert [str(x) for x in con.sql(f"SELECT NULL::{t} AS x").types] == [t]


@pytest.mark.parametrize("sqltype", sorted(_VALUES))
def test_numpy_route_equals_arrow(sqltype: str) -> None:
    src = _source_with(f"CREATE TABLE t AS SELECT x::{sqltype} AS x, i FROM (VALUES "
                       + ", ".join(f"({v}, {i})" for i, v in
                                   enumerate(_VALUES[sqltype].split(", "))) + ") v(x, i)")
    for sql in ("SELECT x, i FROM t", "SELECT x FROM t WHERE i > 0",
                "SELECT x, i FROM t LIMIT 0"):
        got = src._numpy(sql)
        _same(got, src._via_arrow(sql))
        _same(got, {c: np.asarray(a) for c, a in src.con.sql(sql).fetchnumpy().items()})


@pytest.mark.parametrize("sqltype", ["DATE", "TIMESTAMP", "DECIMAL(10,2)", "HUGEINT",
                                     "INTERVAL", "BLOB"])
def test_other_types_go_through_arrow(sqltype: str) -> None:
    lit = {"DATE": "DATE '2020-01-02'", "TIMESTAMP": "TIMESTAMP '2020-01-02 03:04:05'",
           "DECIMAL(10,2)": "1.25", "HUGEINT": "7", "INTERVAL": "INTERVAL 3 DAY",
           "BLOB": "'\\xAA'::BLOB"}[sqltype]
    src = _source_with(f"CREATE TABLE t AS SELECT {lit}::{sqltype} AS x, 1 AS i")
    _same(src._numpy("SELECT x, i FROM t"), src._via_arrow("SELECT x, i FROM t"))


def test_nulls_go_through_arrow() -> None:
    src = _source_with("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (NULL, NULL)) "
                       "v(x, s)")
    got = src._numpy("SELECT x, s FROM t")
    _same(got, src._via_arrow("SELECT x, s FROM t"))
    assert np.isnan(got["x"][1]) and got["s"][1] is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-(1 << 63), (1 << 63) - 1),
                          st.floats(allow_nan=True, allow_infinity=True),
                          st.text(max_size=4)), max_size=30))
def test_numpy_route_equals_arrow_any_rows(rows: list[tuple[int, float, str]]) -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (a BIGINT, b DOUBLE, s VARCHAR)")
    if rows:
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
    src = _source.Source("duckdb", "t", con=con, table="t")
    _same(src._numpy("SELECT a, b, s FROM t"), src._via_arrow("SELECT a, b, s FROM t"))
