"""The locked engine (issue 36, channel 4): the DuckDB connection analysts' row queries
run on reads no file but the registered tables', loads no extension, takes no setting,
sees none of the owner's variables or other tables, and no public table shadows another.

These tests run SQL through :meth:`Source.fetch_sql` (and the connection itself) directly,
under the SQL model: the lock holds on its own, whatever text reaches the engine.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

import dpfast  # noqa: E402
from dpfast.session import _engine  # noqa: E402
from tests.helpers import KEY  # noqa: E402


def _frame(n: int = 40) -> pd.DataFrame:
    return pd.DataFrame({"pid": np.arange(n), "k": np.arange(n) % 4,
                         "v": np.linspace(0.0, 1.0, n)})


def _sources(tmp: str) -> dict[str, dpfast.Session]:
    """A session over each DuckDB-backed kind of source (the private table is ``t``)."""
    import polars as pl

    df = _frame()
    pq = os.path.join(tmp, "t.parquet")
    df.to_parquet(pq)
    db = os.path.join(tmp, "store.duckdb")
    con = duckdb.connect(db)
    con.register("df", df)
    con.execute("CREATE TABLE t AS SELECT * FROM df")
    con.execute("CREATE TABLE secret AS SELECT 42 AS s")
    con.close()
    owner = duckdb.connect()
    owner.register("df", df)
    owner.execute("CREATE TABLE t AS SELECT * FROM df")
    owner.execute("CREATE TABLE secret AS SELECT 42 AS s")
    owner.execute("SET VARIABLE owner_secret = 'hunter2'")
    srcs = {"pandas": df, "polars": pl.from_pandas(df), "parquet": pq,
            "duckdb-file": db, "duckdb": owner}
    return {kind: dpfast.Session(src, privacy_unit="pid", epsilon=10.0, name="t",
                                 table="t" if kind.startswith("duckdb") else None,
                                 domains={"k": range(4)}, rng=dpfast.default_rng(KEY))
            for kind, src in srcs.items()}


@pytest.fixture
def sessions(tmp_path):
    got = _sources(str(tmp_path))
    yield got
    for s in got.values():
        s.close()


def _refused(src, sql: str) -> None:
    """The text is refused by the engine: an error, never rows."""
    with pytest.raises((duckdb.Error, ValueError)):
        src.fetch_sql(sql)


def test_the_engine_reads_no_file(tmp_path, sessions) -> None:
    """Channel 4: ``read_csv('/etc/passwd')``, ``read_text`` of any file, ``glob``,
    ``ATTACH``: the analysts' connection had external access; now every kind of source
    reads only its registered files."""
    other = os.path.join(tmp_path, "other.csv")
    with open(other, "w") as f:
        f.write("a\n1\n")
    for kind, s in sessions.items():
        src = s._source
        assert src.fetch_sql("SELECT count(*) AS n FROM t")["n"].tolist() == [40], kind
        for sql in (f"SELECT * FROM read_csv('{other}')", "SELECT * FROM read_csv('/etc/passwd')",
                    f"SELECT content FROM read_text('{other}')", "SELECT * FROM glob('/etc/*')",
                    f"SELECT * FROM t, read_csv('{other}') AS o"):
            _refused(src, sql)
        with pytest.raises(duckdb.Error):
            src.con.execute(f"ATTACH '{os.path.join(tmp_path, 'x.duckdb')}' AS x")
        assert not os.path.exists(os.path.join(tmp_path, "x.duckdb"))


def test_the_engine_writes_no_file(tmp_path, sessions) -> None:
    """Channel 4: ``COPY (SELECT * FROM private) TO '<path>'`` ran; now a row query must
    be one SELECT, and the connection itself refuses to write any file."""
    for kind, s in sessions.items():
        out = os.path.join(tmp_path, f"leak-{kind}.csv")
        with pytest.raises(ValueError, match="one SELECT"):
            s._source.fetch_sql(f"COPY (SELECT * FROM t) TO '{out}'")
        with pytest.raises(ValueError, match="one SELECT"):
            s._source.fetch_sql(f"SELECT 1 AS x; COPY (SELECT * FROM t) TO '{out}'")
        with pytest.raises(duckdb.Error):
            s._source.con.execute(f"COPY (SELECT * FROM t) TO '{out}'")
        with pytest.raises(duckdb.Error):
            s._source.con.execute(f"EXPORT DATABASE '{os.path.join(tmp_path, kind)}'")
        assert not os.path.exists(out)


def test_the_engine_loads_no_extension_and_takes_no_setting(sessions) -> None:
    """Channel 4: extensions could be installed and auto-loaded, and settings changed
    (the lock included); now neither, on every kind of source."""
    for kind, s in sessions.items():
        con = s._source.con
        got = s._source.fetch_sql(
            "SELECT current_setting('enable_external_access') AS ext, "
            "current_setting('autoinstall_known_extensions') AS inst, "
            "current_setting('autoload_known_extensions') AS load, "
            "current_setting('lock_configuration') AS locked")
        assert {c: a.tolist() for c, a in got.items()} == {
            "ext": [False], "inst": [False], "load": [False], "locked": [True]}, kind
        for sql in ("INSTALL httpfs", "LOAD httpfs", "SET enable_external_access = true",
                    "SET lock_configuration = false", "RESET lock_configuration",
                    "SET threads = 1", "PRAGMA threads = 1",
                    "SET allowed_directories = ['/']"):
            with pytest.raises(duckdb.Error):
                con.execute(sql)
        for sql in ("SET threads = 1", "INSTALL httpfs"):
            with pytest.raises(ValueError, match="one SELECT"):
                s._source.fetch_sql(sql)


def test_the_owner_s_variables_settings_and_tables_stay_out(sessions) -> None:
    """Channel 4: ``getvariable`` / ``current_setting`` ran on the owner's DuckDB
    connection, and the owner's other tables were readable; now the analysts' engine is
    dpfast's own connection holding only the private table."""
    owner = sessions["duckdb"]._source.owner
    owner.execute("SET memory_limit = '123MB'")
    for kind, s in sessions.items():
        src = s._source
        got = src.fetch_sql("SELECT getvariable('owner_secret') AS v, "
                            "current_setting('memory_limit') AS m FROM t LIMIT 1")
        assert got["v"].tolist() == [None], kind
        assert "123" not in str(got["m"].tolist()[0]), kind
        _refused(src, "SELECT * FROM secret")
        tables = src.fetch_sql("SELECT table_name AS n FROM duckdb_tables() UNION ALL "
                               "SELECT view_name FROM duckdb_views() WHERE NOT internal")
        assert sorted(tables["n"].tolist()) == ["t"], kind
    assert owner.sql("SELECT getvariable('owner_secret')").fetchall() == [("hunter2",)]


def test_releases_still_read_every_source_alike(sessions) -> None:
    """The lock changes no release: every kind of source gives the same bits."""
    got = {kind: s.sql("SELECT k, COUNT(*) AS n FROM t WHERE v > 0.2 GROUP BY k",
                       epsilon=1.0).releases["n"].values.tobytes()
           for kind, s in sessions.items()}
    assert len(set(got.values())) == 1, got


def test_an_owner_s_table_changed_is_read_again(tmp_path) -> None:
    """A DuckDB connection's table is copied into the engine: a change of the owner's
    table is a new source (a new release on the new rows), never the stale copy."""
    owner = duckdb.connect()
    owner.register("df", _frame())
    owner.execute("CREATE TABLE t AS SELECT * FROM df")
    s = dpfast.Session(owner, table="t", privacy_unit="pid", epsilon=100.0,
                       domains={"k": range(4)}, rng=dpfast.default_rng(KEY))
    q = "SELECT k, COUNT(*) AS n FROM t WHERE v >= 0 GROUP BY k"
    first = s.sql(q, epsilon=10.0).releases["n"].values
    assert s.sql(q, epsilon=10.0).releases["n"].values.tolist() == first.tolist()
    assert len(s.budget.history()) == 1  # a hit
    owner.execute("INSERT INTO t SELECT pid + 1000, 0, v FROM t")
    again = s.sql(q, epsilon=10.0).releases["n"].values
    assert len(s.budget.history()) == 2  # a new release...
    assert again[0] > first[0] + 25  # ...of the new rows (40 more in key 0)
    s.close()


@pytest.mark.parametrize("public", [{"DATA": "frame"}, {"Data": "frame"},
                                    {"extra": "frame", "EXTRA": "frame"},
                                    {"duckdb_tables": "frame"}, {"pg_class": "frame"},
                                    {"sqlite_master": "frame"}])
def test_a_public_table_never_shadows_another(public) -> None:
    """Channel 4: a public table named like the private table (SQL folds case) replaced
    it in the analysts' SQL; now a public table whose name is any other table's -- the
    private one, another public one, a view DuckDB has -- is refused at construction,
    by name."""
    tables = {n: pd.DataFrame({"k": [0, 1], "label": ["a", "b"]}) for n in public}
    with pytest.raises(ValueError, match=f"public table '{list(public)[-1]}'"):
        dpfast.Session(_frame(), privacy_unit="pid", epsilon=1.0, public=tables)


def test_public_tables_are_read_and_joined(tmp_path) -> None:
    """Public tables (a frame, a Parquet file) are read on the locked engine (the file is
    one of its allowed paths) and joined."""
    labels = pd.DataFrame({"k": [0, 1, 2, 3], "label": ["a", "b", "c", "d"]})
    pq = os.path.join(tmp_path, "labels.parquet")
    labels.to_parquet(pq)
    rels = []
    for pub in (labels, pq):
        s = dpfast.Session(_frame(400), privacy_unit="pid", epsilon=10.0, delta=1e-6,
                           public={"labels": pub}, rng=dpfast.default_rng(KEY))
        rel = s.sql("SELECT label, COUNT(*) AS n FROM data JOIN labels ON data.k = labels.k "
                    "GROUP BY label", epsilon=1.0, delta=1e-7).releases["n"]
        assert sorted(rel.keys.tolist()) == ["a", "b", "c", "d"]  # 100 people each
        rels.append(rel.values.tobytes())
        _refused(s._source, "SELECT * FROM read_parquet('/etc/passwd')")
        s.close()
    assert rels[0] == rels[1]


def test_the_lock_settings_are_the_documented_ones() -> None:
    assert dict(_engine.LOCKED) == {"enable_external_access": "false",
                                    "autoinstall_known_extensions": "false",
                                    "autoload_known_extensions": "false",
                                    "lock_configuration": "true"}


def test_a_duckdb_owner_table_is_read_without_pyarrow(monkeypatch) -> None:
    """The ``demo`` extra has no pyarrow: an owner's DuckDB table is then copied into the
    engine through pandas, and the release is the same (the demo failed on a fresh
    ``pip install '.[demo]'`` with "No module named 'pyarrow'")."""
    import sys

    df = _frame()
    answers = []
    for arrow in (True, False):
        if not arrow:
            monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow: ImportError
        owner = duckdb.connect()
        owner.register("df", df)
        owner.execute("CREATE TABLE t AS SELECT * FROM df")
        s = dpfast.Session(owner, privacy_unit="pid", epsilon=10.0, name="t", table="t",
                           domains={"k": range(4)}, bounds={"v": (0.0, 1.0)},
                           rng=dpfast.default_rng(KEY))
        rel = s.sql("SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t WHERE v > 0.2 GROUP BY k",
                    epsilon=1.0)
        answers.append((rel.releases["n"].values.tobytes(),
                        rel.releases["s"].values.tobytes()))
        owner.close()
    assert answers[0] == answers[1]
