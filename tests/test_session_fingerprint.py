"""Cache integrity (issue 36, channel 10, the cache part): the result cache's fingerprint
of the data sees every change of the rows a release reads -- a DataFrame changed in
place, a Parquet or DuckDB file rewritten with its size and modification time restored --
so a changed source is a new release (a miss, charged), never the stale stored answer;
the column cache drops its columns on the same stamps."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

import dpfast  # noqa: E402
from tests.helpers import KEY  # noqa: E402

DOMAIN = [0, 1, 2, 3, 10, 11, 12, 13]


def _frame(shift: int = 0, n: int = 400) -> pd.DataFrame:
    return pd.DataFrame({"k": np.arange(n) % 4 + shift, "pid": np.arange(n),
                         "v": np.linspace(0.0, 1.0, n)})


def _session(src, **kw) -> dpfast.Session:
    return dpfast.Session(src, privacy_unit="pid", domains={"k": DOMAIN}, epsilon=100.0,
                          rng=dpfast.default_rng(KEY), **kw)


def _old_keys(rel) -> float:
    return float(np.asarray(rel.values)[:4].sum())


def _new_keys(rel) -> float:
    return float(np.asarray(rel.values)[4:].sum())


@pytest.mark.parametrize("how", ["method", "method_where", "sql"])
def test_a_frame_changed_in_place_is_a_new_release(how) -> None:
    """Channel 10: the fingerprint of a pandas frame was memoised, so a frame changed in
    place was answered from the stale cache; now its digest is taken per release."""
    df = _frame()
    s = _session(df)
    ask = {"method": lambda: s.count("k", epsilon=1.0),
           "method_where": lambda: s.count("k", epsilon=1.0, where="v >= 0"),
           "sql": lambda: s.sql("SELECT k, COUNT(*) AS n FROM data GROUP BY k",
                                epsilon=1.0).releases["n"]}[how]
    first = ask()
    assert len(s.budget.history()) == 1
    ask()
    assert len(s.budget.history()) == 1  # unchanged: a hit
    df["k"] += 10  # in place: the same object, new values
    again = ask()
    assert len(s.budget.history()) == 2  # a miss, charged
    assert _old_keys(first) > 300 > abs(_new_keys(first))
    assert _new_keys(again) > 300 > abs(_old_keys(again))
    s.close()


def test_a_frame_changed_in_one_cell_is_a_new_release() -> None:
    """A single value changed in place (the row count and every other value the same)."""
    df = _frame()
    s = _session(df, bounds={"v": (0.0, 1.0)})
    s.sum("v", "k", epsilon=1.0)
    df.loc[5, "v"] = 0.123456
    s.sum("v", "k", epsilon=1.0)
    assert len(s.budget.history()) == 2
    s.sum("v", "k", epsilon=1.0)
    assert len(s.budget.history()) == 2  # and then the same again: a hit
    s.close()


def _write_parquet(path: str, shift: int) -> None:
    """Plain, uncompressed int64 columns: the same size whatever the values."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.Table.from_pandas(_frame(shift).drop(columns="v"), preserve_index=False),
                   path, compression="none", use_dictionary=False)


@pytest.mark.parametrize("column_cache", [0, 1 << 20])
def test_a_parquet_rewrite_with_size_and_mtime_restored_is_seen(tmp_path, column_cache) -> None:
    """Channel 10: a Parquet file rewritten with other rows, its size equal and its
    modification time restored with ``os.utime``, was answered from the stale cache (and
    the column cache); its stamps now hold the status-change time, the inode and a
    digest of the footer, which the rewrite changes and ``utime`` cannot restore."""
    pq = os.path.join(tmp_path, "t.parquet")
    _write_parquet(pq, 0)
    st = os.stat(pq)
    s = _session(pq, column_cache=column_cache)
    first = s.count("k", epsilon=1.0)
    s.count("k", epsilon=1.0)
    assert len(s.budget.history()) == 1
    _write_parquet(pq, 10)
    assert os.stat(pq).st_size == st.st_size
    os.utime(pq, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(pq).st_mtime_ns == st.st_mtime_ns
    again = s.count("k", epsilon=1.0)
    assert len(s.budget.history()) == 2  # a new release, of the new rows
    assert _old_keys(first) > 300 > abs(_new_keys(first))
    assert _new_keys(again) > 300 > abs(_old_keys(again))
    with_where = s.count("k", epsilon=1.0, where="k >= 0")  # the SQL path: new rows too
    assert _new_keys(with_where) > 300 > abs(_old_keys(with_where))
    s.close()


def test_a_duckdb_file_rewrite_with_mtime_restored_is_seen(tmp_path) -> None:
    """The same for a DuckDB database file rewritten in place (its table replaced)."""
    db = os.path.join(tmp_path, "t.duckdb")

    def write(shift: int) -> None:
        con = duckdb.connect(db)
        con.register("src", _frame(shift))
        con.execute("CREATE OR REPLACE TABLE t AS SELECT * FROM src")
        con.execute("CHECKPOINT")
        con.close()

    write(0)
    st = os.stat(db)
    s = _session(db)
    first = s.count("k", epsilon=1.0, where="v >= 0")
    s._source.owner.close()  # the writer needs the file
    write(10)
    os.utime(db, ns=(st.st_atime_ns, st.st_mtime_ns))
    s._source.owner = duckdb.connect(db, read_only=True)
    again = s.count("k", epsilon=1.0, where="v >= 0")
    assert len(s.budget.history()) == 2
    assert _old_keys(first) > 300 > abs(_new_keys(first))
    assert _new_keys(again) > 300 > abs(_old_keys(again))
    s.close()


def test_an_unchanged_source_is_still_a_hit(tmp_path) -> None:
    """The per-release digest changes nothing for unchanged data: the same question is a
    hit, for a frame and a file, across sessions sharing a ledger."""
    ledger = os.path.join(tmp_path, "l.db")
    pq = os.path.join(tmp_path, "t.parquet")
    _write_parquet(pq, 0)
    for src in (_frame(), pq):
        for _ in range(2):
            s = _session(src, ledger=ledger) if not os.path.exists(ledger) else \
                dpfast.Session(src, privacy_unit="pid", domains={"k": DOMAIN}, ledger=ledger,
                               rng=dpfast.default_rng(KEY))
            s.count("k", epsilon=1.0, where="k >= 0")
            s.close()
    b = dpfast.Budget.from_ledger(ledger)
    assert b.usage().hits == 2 and len(b.history()) == 2  # one release per source
    b.close()
