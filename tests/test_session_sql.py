"""dpfast.Session.sql: the private aggregate subset, its refusals (each with a named
reason), and SQL == the direct dpfast.tables calls for the same key."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import dpfast

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

from dpfast.session import REASONS, SqlRefusedError  # noqa: E402
from tests.forkrun import forked_cli  # noqa: E402
from tests.helpers import KEY, SUBPROCESS_TIMEOUT_S  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DESTS = ["BOS", "LAX", "ORD", "SFO"]
AIRPORTS = pd.DataFrame({"code": DESTS, "region": ["East", "West", "Mid", "West"]})


def _frame(n: int = 3000, seed: int = 2) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    return pd.DataFrame({"dest": r.choice(DESTS, n), "pid": r.integers(0, 1000, n),
                         "arr_delay": r.normal(12, 8, n).round(1),
                         "year": r.choice([2013, 2014], n), "carrier": r.choice(["A", "B"], n)})


def _session(df: pd.DataFrame, *, domains: dict | None = None, unit: str | None = "pid",
             **kw: object) -> dpfast.Session:
    return dpfast.Session(df, privacy_unit=unit, bounds={"arr_delay": (-20.0, 80.0)},
                          domains=domains, epsilon=5.0, delta=1e-5, name="flights",
                          rng=dpfast.default_rng(KEY), public={"airports": AIRPORTS}, **kw)


ISSUE_SQL = ("SELECT dest, COUNT(*) AS n, AVG(arr_delay) AS delay FROM flights "
             "WHERE year = 2013 GROUP BY dest")


def test_sql_equals_direct_with_key_selection() -> None:
    df = _frame()
    s = _session(df)
    res = s.sql(ISSUE_SQL, epsilon=1.0, delta=1e-6)
    m = df[df.year == 2013]
    g = dpfast.default_rng(KEY)
    keys, ids = m.dest.to_numpy(dtype=object), m.pid.to_numpy()
    n = dpfast.tables.count(keys, ids, epsilon=0.5, delta=1e-6, rng=g)
    d = dpfast.tables.mean(m.arr_delay.to_numpy(), keys, ids, bounds=(-20.0, 80.0),
                           epsilon=0.5, domain=n.keys, rng=g)
    assert res.releases["n"].keys.tolist() == n.keys.tolist()
    assert res.releases["n"].values.tobytes() == n.values.tobytes()
    assert res.releases["delay"].values.tobytes() == d.values.tobytes()
    assert res.releases["n"].event == n.event and res.releases["delay"].event == d.event
    table = res.to_pandas()
    assert list(table.columns) == ["dest", "n", "delay"]
    assert "delta to the first" in res.rule
    assert s.budget.spent().epsilon == pytest.approx(1.0)


def test_sql_equals_direct_with_public_domain_and_join() -> None:
    df = _frame()
    s = _session(df, domains={"dest": DESTS})
    q = ("SELECT f.dest AS airport, SUM(arr_delay) AS total FROM flights f JOIN airports a "
         "ON f.dest = a.code WHERE a.region = 'West' GROUP BY f.dest ORDER BY airport")
    res = s.sql(q, epsilon=0.8)
    m = df[df.dest.isin(["LAX", "SFO"])]
    direct = dpfast.tables.sum(m.arr_delay.to_numpy(), m.dest.to_numpy(dtype=object),
                               m.pid.to_numpy(), bounds=(-20.0, 80.0), epsilon=0.8,
                               domain=DESTS, rng=dpfast.default_rng(KEY))
    assert res.releases["total"].values.tobytes() == direct.values.tobytes()
    assert res.to_pandas()["airport"].tolist() == sorted(DESTS)


def test_sql_global_aggregate_and_cache() -> None:
    df = _frame()
    s = _session(df)
    res = s.sql("SELECT COUNT(*) AS n, AVG(arr_delay) FROM flights", epsilon=0.5)
    assert len(res.releases["n"]) == 1 and "mean_arr_delay" in res.releases
    again = s.sql("select count(*) as n, avg(arr_delay) from flights", epsilon=0.5)
    for name in res.releases:
        assert again.releases[name].values.tobytes() == res.releases[name].values.tobytes()
    assert len(s.budget.history()) == 2  # two aggregates, each charged once
    assert s.usage().hits == 2


def test_count_column_skips_nulls() -> None:
    df = _frame(400)
    df.loc[df.index[:100], "arr_delay"] = np.nan
    s = _session(df, domains={"dest": DESTS})
    res = s.sql("SELECT dest, COUNT(arr_delay) AS n FROM flights GROUP BY dest", epsilon=1.0)
    m = df.dropna(subset=["arr_delay"])
    direct = dpfast.tables.count(m.dest.to_numpy(dtype=object), m.pid.to_numpy(),
                                 epsilon=1.0, domain=DESTS, rng=dpfast.default_rng(KEY))
    assert res.releases["n"].values.tolist() == direct.values.tolist()


REFUSED = [
    ("SELECT * FROM flights", "raw_rows"),
    ("SELECT dest, arr_delay FROM flights", "raw_rows"),
    ("SELECT dest FROM flights GROUP BY dest", "no_aggregate"),
    ("SELECT DISTINCT dest FROM flights", "distinct"),
    ("SELECT SUM(year) FROM flights", "unbounded"),
    ("SELECT MAX(arr_delay) FROM flights", "unsupported_aggregate"),
    ("SELECT SUM(arr_delay * 2) FROM flights", "aggregate_argument"),
    ("SELECT SUM(arr_delay) / COUNT(*) FROM flights", "aggregate_expression"),
    ("SELECT COUNT(DISTINCT arr_delay + 1) FROM flights", "count_distinct"),
    ("SELECT dest, COUNT(*) FROM flights GROUP BY dest HAVING COUNT(*) > 5", "having"),
    ("SELECT dest, COUNT(*) AS n FROM flights GROUP BY dest ORDER BY n DESC",
     "order_by"),
    ("SELECT dest, COUNT(*) FROM flights GROUP BY dest LIMIT 3", "limit"),
    ("SELECT COUNT(*) OVER (PARTITION BY dest) FROM flights", "window"),
    ("SELECT COUNT(*) FROM (SELECT * FROM flights) t", "subquery"),
    ("SELECT COUNT(*) FROM flights WHERE arr_delay > (SELECT AVG(arr_delay) FROM flights)",
     "subquery"),
    ("SELECT COUNT(*) FROM flights WHERE EXISTS (SELECT 1 FROM airports)", "subquery"),
    ("WITH x AS (SELECT * FROM flights) SELECT COUNT(*) FROM x", "cte"),
    ("SELECT COUNT(*) FROM flights UNION SELECT COUNT(*) FROM flights", "set_operation"),
    ("DELETE FROM flights", "not_select"),
    ("SELECT COUNT(*) FROM passengers", "unknown_table"),
    ("SELECT COUNT(*) FROM airports", "no_private_table"),
    ("SELECT COUNT(*) FROM flights a JOIN flights b ON a.pid = b.pid", "self_join"),
    ("SELECT COUNT(*) FROM flights, airports", "join_kind"),
    ("SELECT COUNT(*) FROM flights CROSS JOIN airports", "join_kind"),
    ("SELECT COUNT(*) FROM flights RIGHT JOIN airports ON dest = code", "join_kind"),
    ("SELECT COUNT(*) FROM flights FULL JOIN airports ON dest = code", "join_kind"),
    ("SELECT COUNT(*) FROM airports JOIN flights ON dest = code", "join_kind"),
    ("SELECT year + 1, COUNT(*) FROM flights GROUP BY year + 1", "group_by_expression"),
    ("SELECT carrier, COUNT(*) FROM flights GROUP BY carrier", "no_keys_selection"),
    ("SELECT COUNT(*) FROM flights WHERE", "syntax"),
    ("SELECT 1; SELECT 2", "syntax"),
    # the whitelist query model (issue 36)
    ("SELECT VARIANCE(arr_delay) FROM flights", "sample_statistic"),
    ("SELECT dest, COUNT(*) FROM flights GROUP BY dest QUALIFY dest = 'BOS'", "clause"),
    ("SELECT dest, COUNT(*) AS n, COUNT(*) AS n FROM flights GROUP BY dest", "output_name"),
    ("SELECT COUNT(*) FROM flights WHERE nope = 1", "column"),
    ("SELECT COUNT(*) FROM flights AS f(a, b, c, d, pid)", "column_alias"),
    ("SELECT COUNT(*) FROM flights JOIN airports ON code IS NOT NULL", "join_predicate"),
    ("SELECT COUNT(*) FROM flights WHERE error('x') IS NULL", "function"),
    ("SELECT COUNT(*) FROM flights WHERE year = ?", "expression"),
    ("SELECT COUNT(*) FROM flights WHERE dest = 5", "type"),
]


@pytest.mark.parametrize(("query", "reason"), REFUSED, ids=[r for _, r in REFUSED])
def test_refused_with_a_named_reason(query: str, reason: str) -> None:
    s = _session(_frame(200), domains={"dest": DESTS})
    with pytest.raises(SqlRefusedError) as info:
        s.sql(query, epsilon=0.5)  # no delta: private keys cannot be selected
    assert info.value.reason == reason, str(info.value)
    assert f"refused ({reason})" in str(info.value)
    assert s.budget.history() == []  # nothing charged


def test_every_reason_is_tested() -> None:
    tested = {r for _, r in REFUSED} | {"join_multiplies", "unavailable"}
    assert tested == set(REASONS)


def test_join_that_multiplies_rows() -> None:
    dup = pd.concat([AIRPORTS, AIRPORTS.iloc[:1]])  # BOS twice
    df = _frame(300)
    q = "SELECT COUNT(*) AS n FROM flights JOIN airports ON dest = code"
    rows = dpfast.Session(df, privacy_unit=None, epsilon=1.0, name="flights",
                          public={"airports": dup})
    with pytest.raises(SqlRefusedError) as info:
        rows.sql(q, epsilon=0.5)
    assert info.value.reason == "join_multiplies"
    people = dpfast.Session(df, privacy_unit="pid", epsilon=1.0, name="flights",
                            public={"airports": dup})
    assert len(people.sql(q, epsilon=0.5).releases["n"]) == 1  # bounded per person


def test_sql_release_repr_with_a_quantile() -> None:
    """The repr of an answer holding a rank statistic's release (a QuantileRelease has no
    ``statistic``): it raised AttributeError before (found by typing SqlRelease)."""
    s = _session(_frame(300), domains={"dest": DESTS})
    res = s.sql("SELECT dest, MEDIAN(arr_delay) AS m, COUNT(*) AS n FROM flights "
                "GROUP BY dest", epsilon=1.0)
    text = repr(res)
    assert "m: quantile(q=0.5)" in text and "n: count" in text


def test_unavailable_statistic_is_refused_by_name() -> None:
    from dpfast.session import STATISTICS

    s = _session(_frame(200))
    for agg, stat in (("VARIANCE(arr_delay)", "variance"), ("MEDIAN(arr_delay)", "median"),
                      ("COUNT(DISTINCT pid)", "privacy_id_count")):
        if stat in STATISTICS:
            continue
        with pytest.raises(SqlRefusedError) as info:
            s.sql(f"SELECT {agg} FROM flights", epsilon=0.5)
        assert info.value.reason == "unavailable" and stat in str(info.value)


def test_multi_aggregate_query_refused_whole_before_any_charge() -> None:
    s = _session(_frame(300), domains={"dest": DESTS})
    bob = s.add_analyst("bob", epsilon=0.5)
    q = "SELECT dest, COUNT(*) AS n, AVG(arr_delay) AS d FROM flights GROUP BY dest"
    with pytest.raises(dpfast.BudgetExceededError, match="nothing was charged"):
        bob.sql(q, epsilon=0.8)             # 0.4 + 0.4 > bob's 0.5
    assert s.budget.history() == []
    bob.sql(q, epsilon=0.5)
    assert len(s.budget.history()) == 2
    bob.sql(q, epsilon=0.5)                 # cached: answered although bob has 0 left
    assert len(s.budget.history()) == 2


def test_cli_query(tmp_path: object) -> None:
    tmp = str(tmp_path)
    _frame(1000).to_parquet(os.path.join(tmp, "flights.parquet"))
    common = ["flights.parquet", "--privacy-unit", "pid", "--bounds", "arr_delay=-20:80",
              "--domain", "dest=" + ",".join(DESTS), "--ledger", "b.db",
              "--analyst", "alice"]
    q = "SELECT dest, COUNT(*) AS n, AVG(arr_delay) AS delay FROM flights GROUP BY dest"
    env = dict(os.environ, PYTHONPATH=ROOT)
    reg = subprocess.run([sys.executable, "-m", "dpfast", "ledger", "analysts", "add", "b.db",
                          "alice", "--epsilon", "2", "--budget-epsilon", "3"],
                         capture_output=True, text=True, timeout=300, cwd=tmp, env=env)
    assert reg.returncode == 0, reg.stderr
    # the four queries one after the other, each a process forked from one parent that
    # imported dpfast once (tests/forkrun.py; the registration above is a fresh interpreter)
    first, again, bad, over = forked_cli([
        ["query", *common, q, "--epsilon", "1", "-o", "out.csv"],
        ["query", *common, q, "--epsilon", "1"],
        ["query", *common, "SELECT * FROM flights", "--epsilon", "1"],
        ["query", *common, q.replace("n,", "m,"), "--epsilon", "1.5", "-o", "x.csv"]],
        cwd=tmp, env=env, preload=("dpfast", "dpfast.cli", "dpfast.session", "duckdb"),
        timeout=SUBPROCESS_TIMEOUT_S)
    assert first.returncode == 0, first.stderr
    table = pd.read_csv(os.path.join(tmp, "out.csv"))
    assert list(table.columns) == ["dest", "n", "delay"] and len(table) == 4
    assert again.returncode == 0, again.stderr
    assert "2 of 2 aggregates from the cache" in again.stderr
    printed = again.stdout.split()
    assert [str(v) for v in table["n"]] == [printed[printed.index(d) + 1] for d in DESTS]
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "refused (raw_rows)" in bad.stderr
    assert over.returncode == 1 and "refused" in over.stderr
    assert not os.path.exists(os.path.join(tmp, "x.csv"))
    b = dpfast.Budget.from_ledger(os.path.join(tmp, "b.db"))
    assert {h.analyst for h in b.history()} == {"alice"} and len(b.history()) == 2
