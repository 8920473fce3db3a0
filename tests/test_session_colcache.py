"""dpfast.Session's column cache of file sources (Parquet, DuckDB database files): the rows
it serves are DuckDB's row query's arrays (dtype, values, order), so every release is bit
for bit the one of the DuckDB route; a rewritten file drops it; the byte budget holds."""

from __future__ import annotations

import os

import numpy as np
import pytest

duckdb = pytest.importorskip("duckdb")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("sqlglot")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import dpfast  # noqa: E402
from dpfast.session import _colcache, _engine, _open, _source  # noqa: E402
from tests.helpers import KEY, same_release  # noqa: E402

#: column type -> values of a small table (None: NULL)
_COLUMNS = {
    "BIGINT": [3, None, -(1 << 63), 7, 3, 7, 0],
    "INTEGER": [1, 2, None, 2, 1, 1, 2],
    "UTINYINT": [0, 255, 4, None, 4, 0, 255],
    "BOOLEAN": [True, None, False, True, True, False, True],
    "VARCHAR": ["a", "é", None, "", "a", "é", "zz"],
    "DOUBLE": [1.5, float("nan"), None, -0.0, float("inf"), 2.25, float("nan")],
    "FLOAT": [0.5, None, float("nan"), 1.0, -2.0, 3.0, 0.25],
}


def _table(con: object, types: dict[str, str], rows: list[tuple]) -> None:
    """Table ``t`` of ``rows`` with the DuckDB ``types`` (None: NULL; NaN stays a value),
    through Arrow (far faster than INSERTs)."""
    import pyarrow as pa

    cols = list(zip(*rows)) if rows else [()] * len(types)
    src = pa.table({c: pa.array(list(v)) for c, v in zip(types, cols)})
    con.register("src_rows", src)
    sel = ", ".join(f"{_engine.quote(c)}::{t} AS {_engine.quote(c)}" for c, t in types.items())
    con.execute(f"CREATE TABLE t AS SELECT {sel} FROM src_rows")
    con.unregister("src_rows")


def _files(tmp: str, types: dict[str, str], rows: list[tuple], *,
           row_group: int | None = None) -> tuple[str, str]:
    """A DuckDB database file (table ``t``) and a Parquet file of ``rows``."""
    db, pq = os.path.join(tmp, "t.duckdb"), os.path.join(tmp, "t.parquet")
    for p in (db, pq):
        if os.path.exists(p):
            os.remove(p)
    con = duckdb.connect(db)
    _table(con, types, rows)
    opt = f", ROW_GROUP_SIZE {row_group}" if row_group else ""
    con.execute(f"COPY t TO '{pq}' (FORMAT parquet{opt})")
    con.close()
    return db, pq


def _same_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert list(a) == list(b)
    for name in a:
        assert type(a[name]) is np.ndarray and type(b[name]) is np.ndarray
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        if a[name].dtype.kind == "O":
            assert a[name].tolist() == b[name].tolist(), name
        else:
            assert a[name].tobytes() == b[name].tobytes(), name


def _duckdb_rows(src: _source.Source, cols: dict[str, str]) -> dict[str, np.ndarray]:
    sel = ", ".join(f"{_engine.quote(c)} AS {_engine.quote(n)}" for n, c in cols.items())
    cond = " AND ".join(f"{_engine.quote(c)} IS NOT NULL"
                        for c in dict.fromkeys(cols.values()))
    return src.fetch_sql(f"SELECT {sel} FROM {_engine.quote(src.name)} WHERE {cond}")




# ------------------------------------------------------------------ the rows served
_ROW = st.tuples(st.none() | st.integers(-(1 << 63), (1 << 63) - 1),
                 st.none() | st.integers(0, 5),
                 st.none() | st.floats(allow_nan=True, allow_infinity=True),
                 st.none() | st.floats(width=32, allow_nan=True, allow_infinity=True),
                 st.none() | st.text(max_size=3), st.none() | st.booleans())
_TYPES = {"a": "BIGINT", "p": "UTINYINT", "d": "DOUBLE", "f": "FLOAT", "s": "VARCHAR",
          "b": "BOOLEAN"}


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_ROW, max_size=25))
def test_cached_rows_equal_duckdbs(tmp_path, rows: list[tuple]) -> None:
    db, pq = _files(str(tmp_path), _TYPES, rows)
    for path in (db, pq):
        src = _open.make_source(path)
        assert src.column_cache is not None
        for cols in ({"__k0": "a", "__pid": "p", "__v": "d"}, {"__k0": "s", "__v": "f"},
                     {"__k0": "b", "__k1": "s", "__pid": "p"}, {"x": "d", "y": "d"},
                     {"__k0": "a"}):
            for _ in range(2):  # decoded, then from the cache
                got = src.plain_rows(cols, list(cols.values()))
                assert got is not None
                _same_arrays(got, _duckdb_rows(src, cols))
            empty = src.plain_rows(cols, list(cols.values()), limit=0)
            _same_arrays(empty, src.fetch_sql(
                f"SELECT * FROM ({_sql_of(src, cols)}) LIMIT 0"))
        # a column that may be NULL in the result, or another limit: DuckDB answers
        assert src.plain_rows({"__v": "d"}, []) is None
        assert src.plain_rows({"__v": "d"}, ["d"], limit=5) is None
        src.con.close()


def _sql_of(src: _source.Source, cols: dict[str, str]) -> str:
    sel = ", ".join(f"{_engine.quote(c)} AS {_engine.quote(n)}" for n, c in cols.items())
    return f"SELECT {sel} FROM {_engine.quote(src.name)}"


def test_row_order_over_many_row_groups(tmp_path) -> None:
    """Several row groups and threads: the cached rows keep DuckDB's order."""
    n = 250_000
    r = np.random.default_rng(3)
    u = r.random(n)  # < 0.01: NaN (a value), < 0.03: NULL
    frame = pd.DataFrame({"k": r.integers(0, 50, n), "pid": r.integers(0, 9000, n),
                          "v": r.normal(size=n), "u": u})
    db, pq = os.path.join(tmp_path, "t.duckdb"), os.path.join(tmp_path, "t.parquet")
    con = duckdb.connect(db)
    con.register("src", frame)
    con.execute("CREATE TABLE t AS SELECT k, pid, CASE WHEN u < 0.01 THEN 'nan'::DOUBLE "
                "WHEN u < 0.03 THEN NULL ELSE v END AS v FROM src")
    con.execute(f"COPY t TO '{pq}' (FORMAT parquet, ROW_GROUP_SIZE 20000)")
    con.close()
    for path in (db, pq):
        src = _open.make_source(path)
        cols = {"__k0": "k", "__pid": "pid", "__v": "v"}
        got = src.plain_rows(cols, list(cols.values()))
        _same_arrays(got, _duckdb_rows(src, cols))
        assert np.isnan(got["__v"]).sum() > 0.008 * n and len(got["__v"]) < 0.985 * n
        src.con.close()


# ------------------------------------------------------------------ releases
@pytest.mark.parametrize("key_type,value_type", [
    ("BIGINT", "DOUBLE"), ("INTEGER", "FLOAT"), ("UTINYINT", "INTEGER"),
    ("BOOLEAN", "DOUBLE"), ("VARCHAR", "FLOAT"), ("VARCHAR", "BIGINT")])
def test_sql_release_is_the_duckdb_routes(tmp_path, key_type: str, value_type: str) -> None:
    """Cache off and on: the same releases, bit for bit, with NULL keys, NULL values and
    NaN values (``w``: NaN is a value, counted by COUNT(w); NULL is not)."""
    r = np.random.default_rng(len(key_type) * 10 + len(value_type))
    n = 3000
    keys = r.choice(np.array([x for x in _COLUMNS[key_type] if x is not None],
                             dtype=object), n).tolist()
    vals = r.normal(20, 30, n)
    vals = (vals.round() if value_type in ("INTEGER", "BIGINT") else vals).tolist()
    w = r.normal(size=n).tolist()
    for i in r.choice(n, 60, replace=False):
        vals[i] = None  # NULL: dropped by AVG, SUM, COUNT(v)
    for i in r.choice(n, 80, replace=False):
        w[i] = float("nan")  # a value: COUNT(w) counts it
    for i in r.choice(n, 50, replace=False):
        w[i] = None
    for i in r.choice(n, 30, replace=False):
        keys[i] = None  # a NULL key: not grouped
    pids = r.integers(0, 500, n).tolist()
    db, pq = _files(str(tmp_path), {"K": key_type, "pid": "INTEGER", "v": value_type,
                                    "w": "DOUBLE"}, list(zip(keys, pids, vals, w)))
    q = ("SELECT k, COUNT(*) AS n, AVG(v) AS m, COUNT(v) AS c, SUM(v) AS s, COUNT(w) AS cw "
         "FROM t GROUP BY k")
    for path in (db, pq):
        out = {}
        for budget in (0, 1 << 20):
            s = dpfast.Session(path, privacy_unit="pid", bounds={"v": (-20.0, 80.0)},
                               epsilon=20.0, delta=1e-5, rng=dpfast.default_rng(KEY),
                               name="t", column_cache=budget)
            out[budget] = s.sql(q, epsilon=5.0, delta=1e-6)
            out[budget].releases["direct"] = s.mean("v", "K", epsilon=1.0, delta=1e-6)
            if budget:  # read from the cache (the key column's name folded: k is K)
                info = s._source.column_cache.info()
                assert info["loads"] == 4 and info["hits"] > 0
                assert sorted(info["columns"]) == ["K", "pid", "v", "w"]
                fresh = s._source.load_columns(info["columns"])  # the releases wrote
                for name, ((vals, null), _) in s._source.column_cache._entries.items():
                    assert vals.tobytes() == fresh[name][0].tobytes() or vals.dtype.kind \
                        == "O" and vals.tolist() == fresh[name][0].tolist()  # nothing
                    assert (null is None) == (fresh[name][1] is None)
            s.close()
            s._source.con.close()
        for name in ("n", "m", "c", "s", "cw", "direct"):
            same_release(out[0].releases[name], out[1 << 20].releases[name], release_id=False)
        assert len(out[0].releases["n"]) > 0


def test_nan_values_dropped_alike(tmp_path) -> None:
    """Issue 36 channel 1: a NaN value used to raise ValueError after the charge (a yes/no
    oracle on any WHERE); now its row is dropped like a NULL's, cache off and on."""
    rows = [(i % 3, i, float("nan") if i == 7 else None if i == 8 else 1.0)
            for i in range(100)]
    db, pq = _files(str(tmp_path), {"k": "INTEGER", "pid": "INTEGER", "v": "DOUBLE"}, rows)
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    ref_db, _ = _files(str(ref_dir), {"k": "INTEGER", "pid": "INTEGER", "v": "DOUBLE"},
                       [(k, p, None if p == 7 else v) for k, p, v in rows])
    out = []
    for path in (ref_db, db, pq):
        for budget in (0, 1 << 20):
            s = dpfast.Session(path, privacy_unit="pid", bounds={"v": (0.0, 2.0)},
                               domains={"k": range(3)}, epsilon=5.0,
                               rng=dpfast.default_rng(KEY), column_cache=budget)
            out.append(s.sql("SELECT k, AVG(v) AS m FROM t GROUP BY k", epsilon=1.0))
            s.close()
    for got in out[1:]:
        same_release(got.releases["m"], out[0].releases["m"], release_id=False)


def test_other_types_and_filters_go_to_duckdb(tmp_path) -> None:
    db, _ = _files(str(tmp_path), {"d": "DATE", "pid": "INTEGER", "v": "DOUBLE"},
                   [(f"2020-01-0{i % 3 + 1}", i % 40, i / 7) for i in range(300)])
    s = dpfast.Session(db, privacy_unit="pid", bounds={"v": (0.0, 50.0)}, epsilon=5.0,
                       delta=1e-5, rng=dpfast.default_rng(KEY))
    assert s._source.plain_rows({"__k0": "d", "__pid": "pid"}, ["d", "pid"]) is None
    s.count("pid", epsilon=1.0, delta=1e-6, where="v > 3")
    assert s._source.column_cache.info()["loads"] == 0
    s.count("pid", epsilon=1.0, delta=1e-6)
    assert s._source.column_cache.info()["columns"] == ["pid"]
    s.close()


# ------------------------------------------------------------------ validity
def _stamp_later(path: str) -> None:
    st_ = os.stat(path)
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000_000))


def test_rewritten_parquet_gives_the_new_data(tmp_path) -> None:
    pq = os.path.join(tmp_path, "t.parquet")
    rows = {"k": np.arange(400) % 4, "pid": np.arange(400)}

    def write(shift: int) -> None:
        con = duckdb.connect()
        con.register("src", pd.DataFrame({"k": rows["k"] + shift, "pid": rows["pid"]}))
        con.execute(f"COPY (SELECT * FROM src) TO '{pq}' (FORMAT parquet)")
        con.close()

    write(0)
    s = dpfast.Session(pq, privacy_unit="pid", domains={"k": [0, 1, 2, 3, 10, 11, 12, 13]},
                       epsilon=10.0, rng=dpfast.default_rng(KEY))
    first = s.count("k", epsilon=1.0)
    write(10)  # the same size: the stamp differs by its modification time
    _stamp_later(pq)
    again = s.count("k", epsilon=1.0)  # a new source: a new query, new rows
    assert len(s.budget.history()) == 2
    assert first.values[:4].sum() > 300 > abs(first.values[4:]).sum()
    assert again.values[4:].sum() > 300 > abs(again.values[:4]).sum()
    fresh = dpfast.Session(pq, privacy_unit="pid", domains={"k": [0, 1, 2, 3, 10, 11, 12, 13]},
                           epsilon=10.0, rng=dpfast.default_rng(KEY), column_cache=0)
    fresh.count("k", epsilon=2.0)  # the generator where the session's was
    same_release(again, fresh.count("k", epsilon=1.0), release_id=False)
    assert s._source.column_cache.info()["loads"] == 4  # k, pid twice


def test_a_touched_duckdb_file_drops_the_cache(tmp_path) -> None:
    db, _ = _files(str(tmp_path), {"k": "INTEGER", "pid": "INTEGER"},
                   [(i % 5, i) for i in range(500)])
    s = dpfast.Session(db, privacy_unit="pid", epsilon=10.0, delta=1e-5,
                       domains={"k": range(5)}, rng=dpfast.default_rng(KEY))
    s.count("k", epsilon=1.0)
    s.count("k", epsilon=2.0)
    assert s._source.column_cache.info()["loads"] == 2
    _stamp_later(db)
    s.count("k", epsilon=3.0)
    assert s._source.column_cache.info()["loads"] == 4


def test_a_result_cache_hit_decodes_nothing(tmp_path) -> None:
    db, _ = _files(str(tmp_path), {"k": "INTEGER", "pid": "INTEGER"},
                   [(i % 5, i) for i in range(500)])
    ledger = os.path.join(tmp_path, "ledger.db")
    kw = dict(privacy_unit="pid", domains={"k": range(5)}, rng=dpfast.default_rng(KEY))
    s = dpfast.Session(db, epsilon=10.0, ledger=ledger, **kw)
    first = s.sql("SELECT k, COUNT(*) AS n FROM t GROUP BY k", epsilon=1.0)
    s.close()
    s._source.con.close()
    s2 = dpfast.Session(db, ledger=ledger, **kw)
    again = s2.sql("SELECT k, COUNT(*) AS n FROM t GROUP BY k", epsilon=1.0)
    same_release(first.releases["n"], again.releases["n"], release_id=False)
    assert s2._source.column_cache.info()["loads"] == 0
    s2.close()


def test_a_load_while_the_file_changes_is_not_kept() -> None:
    cache = _colcache.ColumnCache(1 << 20)
    col = (np.arange(10), None)
    got = cache.get("A", ["x"], lambda names: {"x": col}, lambda: "B")
    assert got["x"][0].tolist() == list(range(10))
    assert cache.info()["columns"] == []
    cache.get("A", ["x"], lambda names: {"x": (np.arange(10), None)}, lambda: "A")
    assert cache.info()["columns"] == ["x"]
    assert cache.get("B", ["x"], None, lambda: "B") is None  # another stamp: dropped
    assert cache.info()["columns"] == []


# ------------------------------------------------------------------ the budget
def test_lru_eviction_under_the_byte_budget() -> None:
    cache = _colcache.ColumnCache(2500)  # room for two columns of 125 int64

    def load(names):
        return {n: (np.full(125, ord(n[0]), np.int64), None) for n in names}
    for n in ("a", "b"):
        cache.get(0, [n], load, lambda: 0)
    assert cache.info()["columns"] == ["a", "b"] and cache.info()["bytes"] == 2000
    cache.get(0, ["a"], None, lambda: 0)  # a used: b is the least recent
    cache.get(0, ["c"], load, lambda: 0)
    info = cache.info()
    assert info["columns"] == ["a", "c"] and info["evictions"] == 1
    assert info["bytes"] <= 2500
    big = cache.get(0, ["huge"], lambda names: {"huge": (np.zeros(1000), None)}, lambda: 0)
    assert len(big["huge"][0]) == 1000 and "huge" not in cache.info()["columns"]
    masked = _colcache.nbytes((np.zeros(10), np.zeros(10, bool)))
    assert masked == 90
    strings = _colcache.nbytes((np.array(["abc"] * 10, dtype=object), None))
    assert strings > 80


def test_tiny_budget_releases_are_unchanged(tmp_path) -> None:
    r = np.random.default_rng(9)
    rows = list(zip(r.integers(0, 6, 2000).tolist(), r.integers(0, 300, 2000).tolist(),
                    r.normal(5, 3, 2000).tolist()))
    db, pq = _files(str(tmp_path), {"k": "BIGINT", "pid": "BIGINT", "v": "DOUBLE"}, rows)
    q = "SELECT k, AVG(v) AS m FROM t GROUP BY k"
    for path in (db, pq):
        out = []
        for budget in (0, 20_000):  # room for one column of 2000 float64 + a bit
            s = dpfast.Session(path, privacy_unit="pid", bounds={"v": (0.0, 10.0)},
                               domains={"k": range(6)}, epsilon=10.0,
                               rng=dpfast.default_rng(KEY), column_cache=budget)
            out.append([s.sql(q, epsilon=e).releases["m"] for e in (1.0, 2.0)])
            if budget:
                info = s._source.column_cache.info()
                assert info["bytes"] <= budget  # one column at a time
                assert info["loads"] == 5 and info["evictions"] == 4
        for a, b in zip(*out):
            same_release(a, b, release_id=False)


def test_column_cache_parameter() -> None:
    frame = pd.DataFrame({"k": [1, 2], "pid": [1, 2]})
    assert dpfast.Session(frame, privacy_unit="pid", epsilon=1.0)._source.column_cache is None
    for bad, exc in ((-1, ValueError), ("1", TypeError), (True, TypeError), (1.5, TypeError)):
        with pytest.raises(exc, match="column_cache"):
            dpfast.Session(frame, privacy_unit="pid", epsilon=1.0, column_cache=bad)


def test_column_cache_zero_disables(tmp_path) -> None:
    db, pq = _files(str(tmp_path), {"k": "INTEGER", "pid": "INTEGER"}, [(1, 1)])
    for path in (db, pq):
        assert dpfast.Session(path, privacy_unit="pid", epsilon=1.0,
                              column_cache=0)._source.column_cache is None
        assert dpfast.Session(path, privacy_unit="pid", epsilon=1.0)._source.column_cache \
            .budget == _colcache.DEFAULT_BUDGET


def test_frame_types_for_the_probe_equal_duckdbs() -> None:
    """A pandas source's probe reads its columns' types from the frame (no DuckDB
    query): the dtypes of DuckDB's ``LIMIT 0``; object columns are left to DuckDB."""
    frame = pd.DataFrame({"a": np.arange(3), "f": [1.0, np.nan, 2.0],
                          "f32": np.ones(3, np.float32), "u": np.ones(3, np.uint8),
                          "b": [True, False, True], "s": pd.array(["x", None, "y"],
                                                                  dtype="string"),
                          "o": pd.Series(["x", "y", "z"], dtype=object)})
    src = _open.make_source(frame, name="t")
    for cols in ({"__k0": "a", "__v": "f"}, {"__k0": "s", "__pid": "u", "__v": "f32"},
                 {"__k0": "b", "__k1": "a"}):
        got = src.plain_rows(cols, list(cols.values()), limit=0)
        _same_arrays(got, src.fetch_sql(f"SELECT * FROM ({_sql_of(src, cols)}) LIMIT 0"))
    assert src.plain_rows({"__k0": "o"}, ["o"], limit=0) is None
    assert src.columns == list(frame.columns)
    frame["new"] = 1  # a new label: the columns are asked again (what DuckDB sees)
    assert src.columns == list(src.con.sql("SELECT * FROM t LIMIT 0").columns)
    assert src._frame_columns[0] == tuple(frame.columns)


def test_several_parquet_files(tmp_path) -> None:
    """A glob of Parquet files: the cached rows are DuckDB's, file after file; the stamp
    covers every file (touching one drops the cache)."""
    r = np.random.default_rng(4)
    for i in range(3):
        con = duckdb.connect()
        _table(con, {"k": "INTEGER", "pid": "BIGINT", "v": "DOUBLE"},
               [(int(a), int(b), None if c < 0.05 else float(c))
                for a, b, c in zip(r.integers(0, 5, 700), r.integers(0, 300, 700),
                                   r.random(700))])
        con.execute(f"COPY t TO '{tmp_path / f'part{i}.parquet'}' (FORMAT parquet)")
        con.close()
    glob = str(tmp_path / "part*.parquet")
    out = []
    for budget in (0, 1 << 20):
        s = dpfast.Session(glob, privacy_unit="pid", bounds={"v": (0.0, 1.0)}, name="t",
                           domains={"k": range(5)}, epsilon=10.0,
                           rng=dpfast.default_rng(KEY), column_cache=budget)
        out.append(s.sql("SELECT k, AVG(v) AS m, COUNT(*) AS n FROM t GROUP BY k",
                         epsilon=2.0))
        if budget:
            cols = {"__k0": "k", "__pid": "pid", "__v": "v"}
            _same_arrays(s._source.plain_rows(cols, list(cols.values())),
                         _duckdb_rows(s._source, cols))
            _stamp_later(str(tmp_path / "part1.parquet"))
            s.count("k", epsilon=1.0)
            assert s._source.column_cache.info()["loads"] == 5  # k, pid, v; k, pid
    for name in ("m", "n"):
        same_release(out[0].releases[name], out[1].releases[name], release_id=False)


def test_histogram_and_topdown_read_the_column_cache(tmp_path) -> None:
    """The session's histogram and TopDown without ``where=`` read a file source's columns
    from the column cache (a second release decodes nothing), with the releases of the
    DuckDB route (the cache off) bit for bit; with ``where=`` they ask DuckDB."""
    r = np.random.default_rng(4)
    n = 3000
    rows = list(zip(r.integers(0, 8, n).tolist(), r.integers(0, 900, n).tolist(),
                    r.normal(4.0, 2.0, n).tolist()))
    db, pq = _files(str(tmp_path), {"leaf": "BIGINT", "pid": "BIGINT", "x": "DOUBLE"}, rows)
    geo = pd.DataFrame({"region": [0, 0, 0, 0, 1, 1, 1, 1], "leaf": list(range(8))})
    for path in (db, pq):
        out = []
        for budget in (0, 1 << 20):
            s = dpfast.Session(path, privacy_unit="pid", epsilon=20.0, delta=1e-5,
                               rng=dpfast.default_rng(KEY), column_cache=budget)
            h1 = s.histogram("x", bins=6, range=(0.0, 8.0), epsilon=1.0)
            h2 = s.histogram("x", bins=6, range=(0.0, 8.0), epsilon=2.0)
            t = s.topdown(geo, ["region", "leaf"], rho=0.5)
            if budget:
                info = s._source.column_cache.info()
                assert info["loads"] == 3  # x, pid and leaf decoded once each
                assert info["hits"] >= 2  # the second histogram and TopDown's pid
                s.histogram("x", bins=6, range=(0.0, 8.0), epsilon=1.5, where="x > 1")
                assert s._source.column_cache.info()["loads"] == 3  # DuckDB answered
            out.append((h1, h2, t))
            s.close()
        (a1, a2, at), (b1, b2, bt) = out
        for a, b in ((a1, b1), (a2, b2)):
            np.testing.assert_array_equal(a[0], b[0])
            np.testing.assert_array_equal(a[1], b[1])
        for lev_a, lev_b in zip(at.estimates, bt.estimates, strict=True):
            np.testing.assert_array_equal(lev_a, lev_b)
