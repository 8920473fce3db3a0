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

from dpfast.session import _engine, _fetch, _open, _source  # noqa: E402

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
    for t in _fetch.NUMPY_TYPES:
        assert [str(x) for x in con.sql(f"SELECT NULL::{t} AS x").types] == [t]


@pytest.mark.parametrize("sqltype", sorted(_VALUES))
def test_numpy_route_equals_arrow(sqltype: str) -> None:
    src = _source_with(f"CREATE TABLE t AS SELECT x::{sqltype} AS x, i FROM (VALUES "
                       + ", ".join(f"({v}, {i})" for i, v in
                                   enumerate(_VALUES[sqltype].split(", "))) + ") v(x, i)")
    for sql in ("SELECT x, i FROM t", "SELECT x FROM t WHERE i > 0",
                "SELECT x, i FROM t LIMIT 0"):
        got = _fetch.numpy_columns(src.con, sql)
        _same(got, _fetch.arrow_columns(src.con, sql))
        _same(got, {c: np.asarray(a) for c, a in src.con.sql(sql).fetchnumpy().items()})


@pytest.mark.parametrize("sqltype", ["DATE", "TIMESTAMP", "DECIMAL(10,2)", "HUGEINT",
                                     "INTERVAL", "BLOB"])
def test_other_types_go_through_arrow(sqltype: str) -> None:
    lit = {"DATE": "DATE '2020-01-02'", "TIMESTAMP": "TIMESTAMP '2020-01-02 03:04:05'",
           "DECIMAL(10,2)": "1.25", "HUGEINT": "7", "INTERVAL": "INTERVAL 3 DAY",
           "BLOB": "'\\xAA'::BLOB"}[sqltype]
    src = _source_with(f"CREATE TABLE t AS SELECT {lit}::{sqltype} AS x, 1 AS i")
    sql = "SELECT x, i FROM t"
    _same(_fetch.numpy_columns(src.con, sql), _fetch.arrow_columns(src.con, sql))


def test_nulls_go_through_arrow() -> None:
    src = _source_with("CREATE TABLE t AS SELECT * FROM (VALUES (1, 'a'), (NULL, NULL)) "
                       "v(x, s)")
    got = _fetch.numpy_columns(src.con, "SELECT x, s FROM t")
    _same(got, _fetch.arrow_columns(src.con, "SELECT x, s FROM t"))
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
    sql = "SELECT a, b, s FROM t"
    _same(_fetch.numpy_columns(src.con, sql), _fetch.arrow_columns(src.con, sql))


# ------------------------------------------------------------------ pandas read in place
pd = pytest.importorskip("pandas")


def _pandas_source(frame: pd.DataFrame) -> _source.Source:
    return _open.make_source(frame, name="t")


def _duckdb_rows(src: _source.Source, cols: dict[str, str]) -> dict[str, np.ndarray]:
    sel = ", ".join(f"{_engine.quote(c)} AS {_engine.quote(n)}" for n, c in cols.items())
    cond = " AND ".join(f"{_engine.quote(c)} IS NOT NULL" for c in dict.fromkeys(cols.values()))
    return src.fetch_sql(f"SELECT {sel} FROM t WHERE {cond}")


_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64) | st.just(-0.0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-(1 << 63), (1 << 63) - 1), _FLOATS,
                          st.none() | st.text(max_size=3), st.integers(0, 255)),
                min_size=1, max_size=30))
def test_frame_rows_equal_duckdbs(rows: list[tuple]) -> None:
    a, f, s, u = zip(*rows)
    with np.errstate(over="ignore"):
        f32 = np.array(f, np.float64).astype(np.float32)
    frame = pd.DataFrame({"a": np.array(a, np.int64), "f": np.array(f, np.float64),
                          "f32": f32, "s": pd.array(s, dtype="str"),
                          "o": np.array(s, dtype=object), "u": np.array(u, np.uint8),
                          "b": np.array(u, np.uint8) > 100})
    src = _pandas_source(frame)
    for cols in ({"__k0": "a", "__v": "f"}, {"__k0": "s", "__pid": "u", "__v": "f32"},
                 {"__k0": "o", "__k1": "b", "__v": "a"}, {"x": "f", "y": "f"}):
        got = src.frame_rows(cols, list(cols.values()))
        if "o" in cols.values() and all(x is None for x in s):
            assert got is None  # objects that are all None: no strings, DuckDB decides
            continue
        assert got is not None
        _same(got, _duckdb_rows(src, cols))


@pytest.mark.parametrize("column", [
    pd.array([1, None, 3], dtype="Int64"),          # nullable integers
    pd.Categorical(["a", "b", "a"]),                  # categories
    np.array([1.0, 2.0, 3.0], np.float16),            # DuckDB widens it
    np.array(["a", 1, "b"], dtype=object),            # mixed objects
    np.array([b"a", b"b", b"c"], dtype=object),       # bytes
    pd.to_datetime(["2020-01-01", "2020-01-02", "2020-01-03"]),
])
def test_frame_rows_leave_other_columns_to_duckdb(column: object) -> None:
    src = _pandas_source(pd.DataFrame({"x": column, "k": [1, 2, 3]}))
    assert src.frame_rows({"__k0": "k", "__v": "x"}, ["k", "x"]) is None
    assert src.frame_rows({"__k0": "k"}, ["k"]) is not None


def test_frame_rows_need_the_not_null_columns_and_one_name() -> None:
    src = _pandas_source(pd.DataFrame({"k": [1, 2], "K": [3, 4], "v": [1.0, 2.0]}))
    assert src.frame_rows({"__v": "v"}, []) is None  # a column that may be NULL: DuckDB
    assert src.frame_rows({"__k0": "k"}, ["k"]) is None  # SQL folds k and K together
    assert src.frame_rows({"__k0": "z"}, ["z"]) is None
    assert src.frame_rows({"__v": "v"}, ["v"])["__v"].tolist() == [1.0, 2.0]


def test_frame_rows_do_not_copy_numbers() -> None:
    frame = pd.DataFrame({"k": np.arange(5), "v": np.linspace(0, 1, 5)})
    got = _pandas_source(frame).frame_rows({"__k0": "k", "__v": "v"}, ["k", "v"])
    assert np.shares_memory(got["__k0"], frame["k"].to_numpy())
    assert np.shares_memory(got["__v"], frame["v"].to_numpy())


@pytest.mark.parametrize("key", ["k", "s"])
def test_sql_over_a_frame_read_in_place_equals_duckdb(key: str, monkeypatch) -> None:
    import dpfast
    from tests.helpers import KEY

    r = np.random.default_rng(5)
    n = 3000
    v = r.normal(30, 30, n)
    v[r.random(n) < 0.05] = np.nan  # NULL to DuckDB: dropped by AVG and COUNT(v)
    frame = pd.DataFrame({"k": r.integers(0, 20, n), "pid": r.integers(0, 400, n), "v": v,
                          "s": pd.array(r.choice(["a", "b", "é"], n), dtype="str")})
    con = duckdb.connect()
    con.register("tmp", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM tmp")
    queries = []
    fetch_sql = _source.Source.fetch_sql
    monkeypatch.setattr(_source.Source, "fetch_sql", lambda self, sql, limit=None, **kw: (
        queries.append((self.kind, limit)), fetch_sql(self, sql, limit, **kw))[1])
    q = f"SELECT {key}, COUNT(*) AS n, AVG(v) AS m, COUNT(v) AS cv FROM t GROUP BY {key}"
    out = {}
    for kind, source in (("pandas", frame), ("duckdb", con)):
        s = dpfast.Session(source, privacy_unit="pid", bounds={"v": (-20.0, 80.0)},
                           epsilon=10.0, delta=1e-5, rng=dpfast.default_rng(KEY),
                           **({"name": "t"} if kind == "pandas" else {"table": "t"}))
        out[kind] = s.sql(q, epsilon=3.0, delta=1e-6)
    assert ("pandas", None) not in queries and ("duckdb", None) in queries
    for name in ("n", "m", "cv"):
        a, b = out["pandas"].releases[name], out["duckdb"].releases[name]
        assert a.keys.tolist() == b.keys.tolist() and a.event == b.event
        assert a.values.tobytes() == b.values.tobytes()
    g = dpfast.default_rng(KEY)
    direct = dpfast.tables.count(frame[key].to_numpy(dtype=object if key == "s" else None),
                                 frame.pid.to_numpy(), epsilon=1.0, delta=1e-6, rng=g)
    assert out["pandas"].releases["n"].values.tobytes() == direct.values.tobytes()
