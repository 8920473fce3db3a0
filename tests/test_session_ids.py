"""A session's privacy-unit column of Python objects is read id by id (issue 36, the
audit's ``session.count:add-str_id``; :mod:`dpfast.session._ids`).

The channel closed: DuckDB typed a pandas object column mixing ints and strings as text,
so an int ``1`` and a string ``"1"`` were one person (two people's rows bounded as one:
a sensitivity bug), and one person's string id turned every integer id into its decimal
text, re-keying everyone's contribution bounding under a fixed key.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

import dpfast  # noqa: E402
from dpfast.session import Session, _ids, _open  # noqa: E402
from tests.helpers import KEY  # noqa: E402


def _counts(rel) -> dict:
    return dict(zip(np.asarray(rel.keys).tolist(), np.asarray(rel.values).tolist()))


def _session(frame, **kw) -> Session:
    # a generator rebuilt from the fixed key: its releases replay (a raw key would give
    # each release a fresh release id)
    return Session(frame, privacy_unit="id", epsilon=1e6, rng=dpfast.default_rng(KEY),
                   domains={"key": ["a", "b", "c"]}, **kw)


@pytest.mark.parametrize("where", [None, "key <> 'zz'"])
def test_int_one_and_str_one_are_two_people(where) -> None:
    """Closes the merge of an int id and the string of its digits: with one row per
    person kept, a count of their key counts both (the old code counted one), through the
    frame read in place and through DuckDB alike."""
    frame = pd.DataFrame({"id": pd.Series([1, "1"], dtype=object), "key": ["a", "a"]})
    s = _session(frame)
    try:
        rel = s.count("key", epsilon=1e5, where=where, max_partitions=1,
                      max_per_partition=1)
        assert _counts(rel)["a"] == 2
    finally:
        s.close()


def test_sql_reads_the_ids_by_value() -> None:
    """The SQL path's generated row query decodes the ids it reads (``__pid``): an int
    ``1`` and a string ``"1"`` are two people (the old code: one), an int ``1`` and a
    float ``1.0`` one (as in :mod:`dpfast.tables`), a string ``"1.0"`` another."""
    frame = pd.DataFrame({"id": pd.Series([1, "1", 1.0, "1.0"], dtype=object),
                          "key": ["a"] * 4})
    s = _session(frame, max_partitions=1, max_per_partition=1, name="t")
    try:
        res = s.sql("SELECT key, COUNT(*) AS n FROM t WHERE key <> 'zz' GROUP BY key",
                    epsilon=1e5)
        n = _counts(res.releases["n"])
        assert n["a"] == 3  # 1 (and 1.0), "1", "1.0"; the old code: "1" and "1.0"
    finally:
        s.close()


def _people(n: int) -> pd.DataFrame:
    ids = np.repeat(np.arange(n, dtype=np.int64), 3)
    keys = np.tile(np.array(["a", "b", "c"], dtype=object), n)
    return pd.DataFrame({"id": ids, "key": keys})


@pytest.mark.parametrize("extra", ["x", b"x", 2.5])
def test_a_string_id_rekeys_nobody(extra) -> None:
    """Closes the re-keying channel: under a fixed key, adding one person whose id is of
    another type (the column becomes ``object``) moves the count of each key by at most
    the sensitivity (one row per person kept), in total by at most one; the old code gave
    every integer id its decimal text, re-drawing everyone's kept key."""
    d = _people(300)
    d2 = pd.concat([d, pd.DataFrame({"id": pd.Series([extra], dtype=object),
                                     "key": ["a"]})], ignore_index=True)
    assert d2["id"].dtype == np.dtype(object)
    got = []
    for frame in (d, d2):
        s = _session(frame)
        try:
            got.append(_counts(s.count("key", epsilon=1.0, max_partitions=1,
                                       max_per_partition=1)))
        finally:
            s.close()
    moved = [abs(got[1][k] - got[0][k]) for k in ("a", "b", "c")]
    assert max(moved) <= 1 and sum(moved) <= 1, moved


def test_frame_rows_and_duckdb_read_the_same_ids() -> None:
    """The frame read in place and DuckDB give the same decoded ids (a string that starts
    with the reserved character included), the caller's frame is unchanged, and every id
    keeps its type: ints (and integral floats and decimals) as ints, strings, bytes, other
    floats."""
    p = _ids.PREFIX
    values = [7, "7", 7.0, 2.5, b"\x00k", f"{p}i:7", None, np.int64(-3), float("nan"),
              True, "", -0.0, 2 ** 70, Decimal("8.0"), Decimal("0.5"), pd.NA]
    frame = pd.DataFrame({"id": pd.Series(values, dtype=object),
                          "key": ["a"] * len(values)})
    before = frame.copy(deep=True)
    src = _open.make_source(frame, name="t", privacy_unit="id")
    plain = src.frame_rows({"__pid": "id"}, ["id"])
    assert plain is not None
    via = src.fetch(["id"], where="key = 'a'", not_null=["id"])
    expect = [7, "7", 7, 2.5, b"\x00k", f"{p}i:7", -3, 1, "", 0, 2 ** 70, 8, 0.5]
    for got in (plain["__pid"], via["id"]):
        assert got.tolist() == expect
        assert [type(v) for v in got.tolist()] == [type(v) for v in expect]
    pd.testing.assert_frame_equal(frame, before)
    assert frame["id"].tolist()[0] == 7 and frame["id"].tolist()[5] == f"{p}i:7"


def test_numeric_and_string_columns_are_registered_as_they_are() -> None:
    """Only a column of Python objects that are not all strings is encoded: an int64, a
    float64 or an all-string unit column is registered unchanged (no copy)."""
    for col in (np.arange(3), np.array([1.0, np.nan, 3.0]),
                pd.Series(["a", None, "b"], dtype=object)):
        frame = pd.DataFrame({"id": col})
        view, encoded = _ids.frame_view(frame, "id")
        assert view is frame and not encoded
    mixed = pd.DataFrame({"id": pd.Series([1, "a"], dtype=object)})
    view, encoded = _ids.frame_view(mixed, "id")
    assert encoded and view is not mixed and mixed["id"].tolist() == [1, "a"]


def test_an_unsupported_id_is_dropped_like_a_missing_one() -> None:
    """An id of a type no privacy id may have (a timestamp) is dropped like a missing id
    (the NULL policy): the release succeeds and equals the one without that row, so such
    an id cannot make a release fail after its charge (a yes/no oracle on the rows)."""
    frame = pd.DataFrame({"id": pd.Series([1, 2, pd.Timestamp(0)], dtype=object),
                          "key": ["a", "a", "a"]})
    without = pd.DataFrame({"id": pd.Series([1, 2], dtype=object), "key": ["a", "a"]})
    got = []
    for f in (frame, without):
        s = _session(f)
        try:
            got.append(_counts(s.count("key", epsilon=1e5, max_partitions=1,
                                       max_per_partition=1))["a"])
            assert [c.status for c in s.budget.history()] != ["failed"]
        finally:
            s.close()
    assert got[0] == got[1] == 2


def test_a_polars_object_column_is_read_by_value() -> None:
    """A Polars ``Object`` unit column (which DuckDB cannot read) is encoded the same way."""
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"id": pl.Series([1, "1", 2.0, None], dtype=pl.Object),
                          "key": ["a", "a", "b", "b"]})
    s = _session(frame)
    try:
        assert s._source.select(["id"])["id"].tolist() == [1, "1", 2]
        rel = s.count("key", epsilon=1e5, max_partitions=1, max_per_partition=1)
        assert _counts(rel)["a"] == 2
    finally:
        s.close()


def test_the_encoding_never_raises() -> None:
    """It runs before the charge: an int past Python's decimal-text limit is encoded (in
    hex) and decoded back; a value no id may be (a decimal of a huge exponent, an object)
    is a missing id (None: its rows are dropped), not an exception."""
    big = 10 ** 5000
    assert _ids.decode(np.array([_ids.encode_one(big)], dtype=object)).tolist() == [big]
    for v in (Decimal("1e999999999"), object(), Decimal("0.1")):
        assert _ids.encode_one(v) is None


_ID = st.one_of(st.integers(min_value=-(2 ** 80), max_value=2 ** 80),
                st.floats(allow_nan=False), st.text(), st.binary())


@given(st.lists(_ID, max_size=6))
def test_the_encoding_is_injective_and_decodes_to_the_id(values) -> None:
    """Each id is encoded by itself; two encodings are equal only for equal ids (an
    integral float is its integer), and decoding gives back the id's value."""
    def canon(v):
        if isinstance(v, float) and v.is_integer() and -(2 ** 63) <= v < 2 ** 63:
            return ("n", int(v))
        return (type(v).__name__ if not isinstance(v, int) else "n", v)

    enc = [_ids.encode_one(v) for v in values]
    for i, a in enumerate(values):
        for j, b in enumerate(values):
            assert (enc[i] == enc[j]) == (canon(a) == canon(b))
    dec = _ids.decode(np.array(enc + [None], dtype=object)[:-1]).tolist()
    assert [canon(v) for v in dec] == [canon(v) for v in values]
