"""The analyst never writes SQL that the engine runs (issue 36): Session.sql and every
where= are read into dpfast's whitelist query model, and dpfast generates the SQL.

Each test names the channel of issue 36 it closes; each fails on the code before the query
model (an engine error after the charge, a query answered as something else, or a
refusal after the charge) and passes with it."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

import dpfast

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")
sqlglot = pytest.importorskip("sqlglot")

from dpfast.session import SqlRefusedError, _open, _source  # noqa: E402
from tests.helpers import KEY  # noqa: E402

DESTS = ["BOS", "LAX", "ORD", "SFO"]
AIRPORTS = pd.DataFrame({"code": DESTS, "region": ["East", "West", "Mid", "West"]})


def _frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    return pd.DataFrame({"dest": r.choice(DESTS, n), "pid": r.integers(0, 100, n),
                         "arr_delay": r.normal(12, 8, n).round(1),
                         "year": r.choice([2013, 2014], n),
                         "carrier": r.choice(["A", "B", "C"], n)})


def _session(df: pd.DataFrame | None = None, *, unit: str | None = "pid",
             public: dict | None = None, **kw: object) -> dpfast.Session:
    return dpfast.Session(_frame() if df is None else df, privacy_unit=unit,
                          bounds={"arr_delay": (-20.0, 80.0)}, domains={"dest": DESTS},
                          epsilon=10.0, delta=1e-5, name="flights",
                          rng=dpfast.default_rng(KEY),
                          public={"airports": AIRPORTS} if public is None else public, **kw)


def _refused(s: dpfast.Session, reason: str, call) -> None:
    with pytest.raises(SqlRefusedError) as info:
        call(s)
    assert info.value.reason == reason, str(info.value)
    assert s.budget.history() == []  # refused before the charge


# ------------------------------------------------------------------ channel 1
@pytest.mark.parametrize("where", [
    "CAST(dest AS INTEGER) > 0",                    # a failing cast: NULL
    "dest::INT IS NULL",
    "strptime(dest, '%Y-%m-%d') IS NULL",           # a failing strptime: NULL
    "year // (year - year) = 1",                    # integer division by zero: NULL
    "year % (year - year) = 1",
    "year * year * year * year * year * year > 0",  # integer overflow: NULL
])
def test_non_total_operations_have_declared_semantics(where: str) -> None:
    """Channel 1: an operation that fails on some row is NULL there (TRY_CAST,
    TRY_STRPTIME, NULLIF(divisor, 0), TRY(...)): the release is answered, never an engine
    error (with private values in its text) after the charge."""
    s = _session()
    rel = s.count("dest", epsilon=1.0, where=where)
    assert rel.keys.tolist() == DESTS and len(s.budget.history()) == 1
    res = s.sql(f"SELECT dest, COUNT(*) AS n FROM flights WHERE {where} GROUP BY dest",
                epsilon=1.0)
    assert res.to_pandas()["dest"].tolist() == DESTS


def test_declared_semantics_are_those_stated() -> None:
    """Channel 1: the NULL semantics are exact: ``CAST('12' AS INT)`` is 12, ``'x'`` NULL;
    a division by zero is NULL (not inf), and the filter keeps exactly those rows."""
    df = pd.DataFrame({"s": ["12", "x", "7", None], "d": [0, 0, 2, 1], "pid": [1, 2, 3, 4]})
    s = dpfast.Session(df, privacy_unit="pid", epsilon=1.0, name="t")
    src = s._source
    from dpfast.session import sql as _sql

    def kept(where: str) -> list[int]:
        cond, _ = _sql.row_filter(where, src)
        return sorted(src.fetch(["pid"], cond)["pid"].tolist())

    assert kept("CAST(s AS INTEGER) > 0") == [1, 3]
    assert kept("CAST(s AS INTEGER) IS NULL") == [2, 4]
    assert kept("10 / d IS NULL") == [1, 2]
    assert kept("10 // d = 5") == [3]
    assert kept("10 % d IS NULL") == [1, 2]


@pytest.mark.parametrize(("where", "reason"), [
    ("error('boom ' || dest) IS NULL", "function"),
    ("regexp_matches(dest, '[')", "function"),
    ("regexp_matches(dest, 'B.*')", "function"),
    ("current_setting('threads') = '1'", "function"),
    ("getvariable('secret') IS NULL", "function"),
    ("random() < 0.5", "function"),
    ("strptime(dest, '%Q') IS NULL", "function"),
    ("strptime(dest, carrier) IS NULL", "function"),
    ("dest = 5", "type"),               # DuckDB would cast every dest to a number
    ("year = 'x'", "type"),
    ("year + dest > 1", "type"),
    ("year", "type"),
    ("dest LIKE carrier", "expression"),
    ("year = ?", "expression"),
    ("nope = 1", "column"),
])
def test_outside_the_whitelist_refused_before_the_charge(where: str, reason: str) -> None:
    """Channel 1: functions outside the whitelist (error, regexes, settings, variables,
    volatile ones), non-literal formats and patterns, implicit casts: refused by name
    before anything is charged, in where= and in SQL."""
    _refused(_session(), reason, lambda s: s.count("dest", epsilon=1.0, where=where))
    _refused(_session(), reason, lambda s: s.sql(
        f"SELECT dest, COUNT(*) AS n FROM flights WHERE {where} GROUP BY dest",
        epsilon=1.0))


def test_division_by_zero_in_join_on_refused() -> None:
    """Channel 1 and 3: an expression in JOIN ... ON is refused before the charge."""
    _refused(_session(), "join_predicate", lambda s: s.sql(
        "SELECT COUNT(*) AS n FROM flights JOIN airports ON dest = code AND "
        "year // (year - year) = 1", epsilon=1.0))


# ------------------------------------------------------------------ channel 2
def test_privacy_unit_cannot_be_renamed() -> None:
    """Channel 2: a column-alias list on the private table would make another column the
    privacy unit (every row a person); refused before the charge.  Table aliases without
    column lists still work, and the unit is read from the table's own column."""
    for alias in ("f(dest, carrier, arr_delay, year, pid)", "f(a, b, c, d, e)"):
        _refused(_session(), "column_alias", lambda s, alias=alias: s.sql(
            f"SELECT COUNT(*) AS n FROM flights AS {alias}", epsilon=1.0))
    _refused(_session(), "column_alias", lambda s: s.sql(
        "SELECT COUNT(*) AS n FROM flights JOIN airports AS a(dest, pid) USING (dest)",
        epsilon=1.0))
    s = _session()
    res = s.sql("SELECT f.dest, COUNT(*) AS n FROM flights AS f GROUP BY f.dest",
                epsilon=1.0)
    rows = res.releases["n"]
    assert rows.keys.tolist() == DESTS
    sql = s.budget.history()[0]
    assert sql.note.startswith("sql n = COUNT(*)")


def test_cache_spec_reads_the_resolved_columns(monkeypatch) -> None:
    """Channel 2: the fingerprint covers the columns the generated SQL reads, resolved
    through aliases and DuckDB's case-insensitive names (``F.YEAR`` is ``year``)."""
    s = _session()
    seen: list[list[str]] = []
    fingerprint = _source.Source.fingerprint
    monkeypatch.setattr(_source.Source, "fingerprint", lambda self, cols: (
        seen.append(sorted(cols)), fingerprint(self, cols))[1])
    s.sql("SELECT COUNT(*) AS n FROM flights AS F WHERE F.YEAR = 2013 AND F.Carrier = 'A'",
          epsilon=1.0)
    assert seen == [["carrier", "pid", "year"]]
    seen.clear()
    s.count("dest", epsilon=1.0, where="YEAR = 2013")
    assert seen == [["dest", "pid", "year"]]


# ------------------------------------------------------------------ channel 3
JOINS = [
    "JOIN airports b ON b.code IS NOT NULL",
    "JOIN airports b ON b.code = b.code",
    "JOIN airports b ON dest <> b.code",
    "JOIN airports b ON dest = b.code OR true",
    "JOIN airports b ON (dest = b.code) OR (1 = 1)",
    "JOIN airports b ON dest = b.code AND b.code IS NOT NULL",
    "JOIN airports b ON flights.dest = flights.dest",
    "JOIN airports b ON b.code = 'BOS'",
    "JOIN airports b ON dest = b.code AND b.region = b.region",
    "JOIN airports b ON dest = lower(b.code)",
    "LEFT JOIN airports b ON true",
]


@pytest.mark.parametrize("join", JOINS)
def test_joins_are_equalities_on_a_public_key(join: str) -> None:
    """Channel 3: only ``private.col = public.col`` equalities (ANDed) or USING; every
    other join predicate could copy each private row up to the public table's size
    (the noise calibrated for one); refused before the charge, with or without a unit."""
    for unit in (None, "pid"):
        _refused(_session(unit=unit), "join_predicate", lambda s: s.sql(
            f"SELECT COUNT(*) AS n FROM flights {join}", epsilon=1.0))


def test_equality_joins_still_answered() -> None:
    """Channel 3 (a guard, passes before and after): the whitelisted joins work, with and
    without a unit; USING too; a key that is not unique is refused without a unit (checked
    on the public table)."""
    by_dest = AIRPORTS.rename(columns={"code": "dest"})
    for unit in (None, "pid"):
        s = _session(unit=unit, public={"airports": AIRPORTS, "ap": by_dest})
        a = s.sql("SELECT dest, COUNT(*) AS n FROM flights JOIN airports ON dest = code "
                  "WHERE region = 'West' GROUP BY dest", epsilon=1.0)
        b = s.sql("SELECT dest, COUNT(*) AS n FROM flights f JOIN ap USING (dest) "
                  "WHERE ap.region = 'West' GROUP BY dest", epsilon=1.0)
        assert a.releases["n"].keys.tolist() == b.releases["n"].keys.tolist() == DESTS
    dup = pd.concat([AIRPORTS, AIRPORTS.iloc[:1]])
    s = _session(unit=None, public={"airports": dup})
    _refused(s, "join_multiplies", lambda s: s.sql(
        "SELECT COUNT(*) AS n FROM flights JOIN airports ON code = dest", epsilon=1.0))


# ------------------------------------------------------------------ channel 5
@pytest.mark.parametrize(("query", "reason"), [
    ("SELECT dest, COUNT(*) AS n FROM flights GROUP BY dest QUALIFY dest = 'BOS'", "clause"),
    ("SELECT COUNT(*) AS n FROM flights USING SAMPLE 10%", "clause"),
    ("SELECT COUNT(*) AS n FROM flights TABLESAMPLE (10 PERCENT)", "clause"),
    ("SELECT COUNT(*) AS n FROM flights WINDOW w AS (PARTITION BY dest)", "window"),
    ("SELECT VAR_SAMP(arr_delay) AS v FROM flights", "sample_statistic"),
    ("SELECT VARIANCE(arr_delay) AS v FROM flights", "sample_statistic"),
    ("SELECT STDDEV(arr_delay) AS v FROM flights", "sample_statistic"),
    ("SELECT STDDEV_SAMP(arr_delay) AS v FROM flights", "sample_statistic"),
    ("SELECT dest, COUNT(*) AS n, AVG(arr_delay) AS n FROM flights GROUP BY dest",
     "output_name"),
    ("SELECT dest AS n, COUNT(*) AS n FROM flights GROUP BY dest", "output_name"),
    ("SELECT COUNT(*), COUNT(*) FROM flights", "output_name"),
    ("SELECT COUNT(*) AS __all FROM flights", "output_name"),
    ("SELECT dest AS __k0, COUNT(*) AS n FROM flights GROUP BY dest", "output_name"),
    ("SELECT SUM(dest) AS n FROM flights", "type"),
    ("SELECT tags, COUNT(*) AS n FROM flights GROUP BY tags", "type"),
    ("SELECT COUNT(*) AS n FROM main.flights", "unknown_table"),
    ("SELECT dest, COUNT(*) AS n FROM flights GROUP BY ALL", "group_by_expression"),
    ("SELECT dest, COUNT(*) AS n FROM flights GROUP BY ROLLUP (dest)",
     "group_by_expression"),
])
def test_sql_answered_as_it_says_or_refused_before_the_charge(query: str, reason: str
                                                               ) -> None:
    """Channel 5: a clause the model does not hold is refused by name (not dropped); the
    sample variance is not answered with the population one; mistakes found from the
    query and the schema (duplicate or reserved output names, GROUP BY a LIST column) are
    refused before the charge."""
    df = _frame()
    df["tags"] = [[int(x)] for x in df["year"]]
    _refused(_session(df), reason, lambda s: s.sql(query, epsilon=2.0))


def test_var_pop_is_the_population_variance() -> None:
    """Channel 5 (a guard, passes before and after): VAR_POP / STDDEV_POP are answered by
    dpfast.tables.variance / std (the population statistics), bit for bit."""
    df = _frame()
    s = _session(df)
    res = s.sql("SELECT dest, VAR_POP(arr_delay) AS v FROM flights GROUP BY dest",
                epsilon=1.0)
    direct = dpfast.tables.variance(df.arr_delay.to_numpy(), df.dest.to_numpy(dtype=object),
                                    df.pid.to_numpy(), bounds=(-20.0, 80.0), epsilon=1.0,
                                    domain=DESTS, rng=dpfast.default_rng(KEY))
    assert res.releases["v"].values.tobytes() == direct.values.tobytes()
    assert res.releases["v"].event == direct.event
    sd = _session(df).sql("SELECT dest, STDDEV_POP(arr_delay) AS sd FROM flights "
                          "GROUP BY dest", epsilon=1.0)
    direct = dpfast.tables.std(df.arr_delay.to_numpy(), df.dest.to_numpy(dtype=object),
                               df.pid.to_numpy(), bounds=(-20.0, 80.0), epsilon=1.0,
                               domain=DESTS, rng=dpfast.default_rng(KEY))
    assert sd.releases["sd"].values.tobytes() == direct.values.tobytes()


def test_a_comment_changes_nothing() -> None:
    """Channel 5: a comment after a GROUP BY column keeps the public key domain (the key
    names come from the model, not from re-emitted text): the same release as without."""
    q = "SELECT dest, COUNT(*) AS n FROM flights GROUP BY dest"
    plain = _session().sql(q, epsilon=1.0)  # delta 0: only public keys can answer
    s = _session()
    commented = s.sql("SELECT dest /* a */, COUNT(*) AS n -- x\n FROM flights "
                      "GROUP BY dest /* public keys? */", epsilon=1.0)
    assert commented.releases["n"].keys.tolist() == DESTS
    assert commented.releases["n"].values.tobytes() == plain.releases["n"].values.tobytes()
    assert len(s.budget.history()) == 1


# ------------------------------------------------------------------ channel 4 (sqlglot)
ATTACK = "year >= 0 --*/ ; COPY (SELECT * FROM flights) TO '{path}' (FORMAT csv) ; /*"


def _vulnerable_sanitize(self: object, comment: str) -> str:
    """sqlglot <= 30.0.0: a comment re-emitted as ``/* ... */`` without escaping ``*/``."""
    comment = " " + comment if comment[0].strip() else comment
    return comment + " " if comment[-1].strip() else comment


@pytest.mark.parametrize("vulnerable", [False, True])
def test_comments_never_reach_the_engine(tmp_path, monkeypatch, vulnerable: bool) -> None:
    """Channel 4: a comment holding ``*/`` cannot smuggle a statement: dpfast generates the
    SQL (no comments), so even with a sqlglot that re-emits comments unescaped (simulated)
    nothing is written and only the generated SELECT runs."""
    if vulnerable:
        monkeypatch.setattr(sqlglot.generator.Generator, "sanitize_comment",
                            _vulnerable_sanitize)
    path = os.path.join(str(tmp_path), "p.csv")
    attack = ATTACK.format(path=path)
    s = _session()
    ran: list[str] = []
    fetch_sql, fetch = _source.Source.fetch_sql, _source.Source.fetch
    monkeypatch.setattr(_source.Source, "fetch_sql", lambda self, sql, limit=None, **kw: (
        ran.append(sql), fetch_sql(self, sql, limit, **kw))[1])
    monkeypatch.setattr(_source.Source, "fetch", lambda self, cols, where=None, **kw: (
        ran.append(where or ""), fetch(self, cols, where, **kw))[1])
    s.count("dest", epsilon=1.0, where=attack)
    s.sql(f"SELECT dest, COUNT(*) AS n FROM flights WHERE {attack}\n GROUP BY dest",
          epsilon=1.0)
    assert not os.path.exists(path)
    assert ran and all("COPY" not in q and "/*" not in q and "--" not in q for q in ran)
    spec_notes = [h.note for h in s.budget.history()]
    assert all("COPY" not in n for n in spec_notes)


def test_installed_sqlglot_escapes_comments() -> None:
    """Channel 4: the sqlglot dpfast needs (>= 30.0.3, the pin in pyproject.toml) escapes
    ``*/`` in a re-emitted comment: fails with a vulnerable sqlglot (<= 30.0.0), whatever
    dpfast's code."""
    text = "SELECT 1 WHERE x = 1 --*/ ; COPY (SELECT 1) TO 'p' ; /*"
    out = sqlglot.transpile(text, read="duckdb", write="duckdb")
    assert len(out) == 1
    assert len(sqlglot.parse(out[0], read="duckdb")) == 1


def test_where_goes_through_the_same_model() -> None:
    """Item 6: histogram, topdown and the session methods read where= through the one
    model and generator (a refused function is refused everywhere, before the charge)."""
    bad = "error('x') IS NULL"
    _refused(_session(), "function", lambda s: s.histogram(
        "arr_delay", bins=4, range=(-20, 80), epsilon=1.0, where=bad))
    geo = pd.DataFrame({"region": ["E", "W", "M", "W"], "dest": DESTS})
    _refused(_session(), "function", lambda s: s.topdown(
        geo, ["region", "dest"], rho=0.5, where=bad))
    s = _session()
    h, _, _ = s.histogram("arr_delay", bins=4, range=(-20, 80), epsilon=1.0,
                          where="CAST(carrier AS INT) IS NULL")
    assert h.shape == (4,)


# ------------------------------------------------------------------ the class, generated
hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

ADVERSARIAL = pd.DataFrame({
    "pid": [1, 2, 3, 4, 5, 6],
    "i": pd.array([0, -1, 2**63 - 1, -2**63, 7, None], dtype="Int64"),
    "t": np.array([0, 127, -128, 1, -1, 5], dtype=np.int8),
    "f": [0.0, -0.0, np.nan, np.inf, -1e308, 1e-320],
    "s": ["abc", "", "x'y\"z", "12", None, "2020-02-30"],
    "d": pd.to_datetime(["2020-01-01", "1970-01-01", "2262-04-11", "1677-09-22", None,
                         "2000-02-29"]).date,
})
NUM_LITS = ["0", "1", "-1", "9223372036854775807", "-9223372036854775808", "2.5", "1e308",
            "-0.0", "NULL"]
STR_LITS = ["'abc'", "''", "'12'", "'x''y'", "NULL", "'%'", "'2020-01-01'"]


def _num(depth: int) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(["i", "t", "f", "LENGTH(s)", "YEAR(d)", "EXTRACT(day FROM d)",
                            "CAST(s AS INTEGER)", "TRY_CAST(s AS DOUBLE)",
                            "CAST(f AS BIGINT)", "CAST(i AS TINYINT)", *NUM_LITS])
    if depth == 0:
        return leaf
    sub = _num(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "//", "%"]), sub).map(
            lambda x: f"({x[0]} {x[1]} {x[2]})"),
        sub.map(lambda x: f"-({x})"),
        sub.map(lambda x: f"ABS({x})"),
        st.tuples(sub, sub).map(lambda x: f"COALESCE({x[0]}, {x[1]})"),
        st.tuples(sub, sub).map(lambda x: f"NULLIF({x[0]}, {x[1]})"),
        st.tuples(_cond(depth - 1), sub, sub).map(
            lambda x: f"CASE WHEN {x[0]} THEN {x[1]} ELSE {x[2]} END"),
        sub.map(lambda x: f"CAST({x} AS DECIMAL(4, 1))"),
    )


def _str(depth: int) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(["s", "CAST(i AS VARCHAR)", "CAST(d AS VARCHAR)", *STR_LITS])
    if depth == 0:
        return leaf
    sub = _str(depth - 1)
    return st.one_of(
        leaf, sub.map(lambda x: f"LOWER({x})"), sub.map(lambda x: f"TRIM({x})"),
        st.tuples(sub, sub).map(lambda x: f"({x[0]} || {x[1]})"),
        st.tuples(sub, _num(depth - 1), _num(depth - 1)).map(
            lambda x: f"SUBSTRING({x[0]}, CAST({x[1]} AS BIGINT), CAST({x[2]} AS BIGINT))"))


def _cond(depth: int) -> st.SearchStrategy[str]:
    num, text = _num(depth), _str(depth)
    leaf = st.one_of(
        st.tuples(num, st.sampled_from(["=", "<>", "<", ">="]), num).map(" ".join),
        st.tuples(text, st.sampled_from(["=", "<"]), text).map(" ".join),
        st.tuples(text, st.sampled_from(["'a%'", "'%\\'", "'_'", "''"])).map(
            lambda x: f"{x[0]} LIKE {x[1]}"),
        st.sampled_from(["d > '2020-01-01'", "d BETWEEN '1970-01-01' AND '2100-12-31'",
                         "strptime(s, '%Y-%m-%d') IS NULL", "s IN ('abc', '12')",
                         "i IN (0, 9223372036854775807)"]),
        num.map(lambda x: f"{x} IS NULL"),
    )
    if depth == 0:
        return leaf
    sub = _cond(depth - 1)
    return st.one_of(leaf, st.tuples(sub, sub).map(lambda x: f"({x[0]} AND {x[1]})"),
                     st.tuples(sub, sub).map(lambda x: f"({x[0]} OR {x[1]})"),
                     sub.map(lambda x: f"NOT ({x})"))


@functools.lru_cache(maxsize=1)
def _adversarial_source() -> _source.Source:
    return _open.make_source(ADVERSARIAL, name="t")


@hypothesis.settings(max_examples=300, deadline=None, derandomize=True,
                     suppress_health_check=list(hypothesis.HealthCheck))
@hypothesis.given(_cond(2))
def test_whitelisted_conditions_never_fail_on_the_rows(where: str) -> None:
    """Channel 1, as a class: any condition of the whitelist, on adversarial rows
    (extreme integers, NaN, inf, -0.0, NULLs, strings that are not numbers or dates), is
    answered by the generated SQL -- or refused before anything is read -- never an engine
    error while the rows are read."""
    from dpfast.session import sql as _sql

    src = _adversarial_source()
    try:
        cond, _ = _sql.row_filter(where, src)
    except SqlRefusedError:
        return
    src.fetch(["pid"], cond)
