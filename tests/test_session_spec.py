"""A session's one spec format and one pipeline (issue 37): a method call and an SQL
aggregate asking the same question build the same :class:`dpfast.tables.spec.ReleaseSpec`
(one cache key, one charge), the event is the plan's (no probe run on a fake row), and a
statistic registered in :data:`dpfast.tables.statistics.REGISTRY` is a session method and
an SQL aggregate with no session edit."""

from __future__ import annotations

import numpy as np
import pytest

import dpfast

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

from dpfast.tables import groupby  # noqa: E402
from dpfast.tables.plan import plan as make_plan  # noqa: E402
from dpfast.tables.run import Rows  # noqa: E402
from dpfast.tables.spec import ReleaseSpec, StatSpec  # noqa: E402
from dpfast.tables.statistics import REGISTRY, Statistic  # noqa: E402
from tests.helpers import KEY  # noqa: E402

DESTS = ["BOS", "LAX", "ORD", "SFO"]


def _frame(n: int = 1500, seed: int = 5) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    return pd.DataFrame({"dest": r.choice(DESTS, n), "pid": r.integers(0, 600, n),
                         "arr_delay": r.normal(12, 8, n).round(1),
                         "seats": r.integers(0, 300, n), "year": r.choice([2013, 2014], n),
                         "carrier": r.choice(["AA", "B6", "DL", "UA"], n)})


def _session(df: pd.DataFrame, **kw: object) -> dpfast.Session:
    kw.setdefault("domains", {"dest": DESTS})
    return dpfast.Session(df, privacy_unit="pid", epsilon=5.0, delta=1e-5, name="flights",
                          bounds={"arr_delay": (-20.0, 80.0), "seats": (0, 300)},
                          rng=dpfast.default_rng(KEY), **kw)


# (method call, SQL) pairs asking the same question
SAME = [
    (lambda s: s.count("dest", epsilon=0.5),
     "SELECT dest, COUNT(*) FROM flights GROUP BY dest"),
    (lambda s: s.sum("seats", "dest", epsilon=0.5),
     "SELECT dest, SUM(seats) AS total FROM flights GROUP BY dest"),
    (lambda s: s.mean("arr_delay", "dest", epsilon=0.5, where="year = 2013"),
     "SELECT dest AS d, AVG(arr_delay) FROM flights WHERE year = 2013 GROUP BY dest"),
    (lambda s: s.stddev("arr_delay", "dest", epsilon=0.5),
     "SELECT dest, STDDEV_POP(arr_delay) FROM flights GROUP BY dest"),
    (lambda s: s.privacy_id_count("dest", epsilon=0.5, max_per_partition=3),
     "SELECT dest, COUNT(DISTINCT pid) FROM flights GROUP BY dest"),
    (lambda s: s.count_distinct("carrier", "dest", epsilon=0.5),
     "SELECT dest, COUNT_DISTINCT(carrier) FROM flights GROUP BY dest"),
    # the rank statistics (their family's spec, dpfast.tables.quantiles.rank_spec)
    (lambda s: s.median("arr_delay", "dest", epsilon=0.5),
     "SELECT dest, MEDIAN(arr_delay) FROM flights GROUP BY dest"),
    (lambda s: s.quantile("arr_delay", "dest", epsilon=0.5, q=0.9),
     "SELECT dest, PERCENTILE_CONT(arr_delay, 0.9) AS p90 FROM flights GROUP BY dest"),
    (lambda s: s.quantile("arr_delay", "dest", epsilon=0.5, q=0.25),
     "SELECT dest, APPROX_QUANTILE(arr_delay, 0.25) FROM flights GROUP BY dest"),
    (lambda s: s.quantile("seats", "dest", epsilon=0.5, q=0.5),
     "SELECT dest, QUANTILE(seats, 0.5) FROM flights GROUP BY dest"),
    (lambda s: s.quantile("seats", "dest", epsilon=0.5, q=0.75),
     "SELECT dest, PERCENTILE_DISC(seats, 0.75) FROM flights GROUP BY dest"),
]


@pytest.mark.parametrize("method_first", [True, False])
@pytest.mark.parametrize("case", range(len(SAME)))
def test_same_question_by_method_and_by_sql_is_charged_once(case: int,
                                                             method_first: bool) -> None:
    """Closes the double charge: the method path and the SQL path built different spec
    dicts (keys ``by``/``value``/``where`` vs ``rows``/``extra``/``public``), so one
    question asked both ways got two query ids, two charges and two noisy answers (whose
    average has less noise than either).  Now both build one ReleaseSpec: the second
    answer comes from the cache, bit for bit, and nothing more is charged."""
    method, sql = SAME[case]
    s = _session(_frame())
    if method_first:
        a = method(s)
        b = s.sql(sql, epsilon=0.5).releases
        b = next(iter(b.values()))
    else:
        b = next(iter(s.sql(sql, epsilon=0.5).releases.values()))
        a = method(s)
    assert len(s.budget.history()) == 1
    assert a.values.tobytes() == b.values.tobytes() and a.event == b.event
    assert list(a.keys) == list(b.keys)
    assert s.usage().hits == 1


def test_a_part_of_a_question_then_the_method_call_is_charged_once() -> None:
    """The second aggregate of an SQL query is stored as a part of its question
    (``<question>~<part>``); the method call asking it finds it
    (:meth:`dpfast.Budget.result_id`) instead of charging it again."""
    s = _session(_frame())
    res = s.sql("SELECT dest, COUNT(*) AS n, AVG(arr_delay) AS d FROM flights "
                "GROUP BY dest", epsilon=1.0)
    assert len(s.budget.history()) == 2
    again = s.mean("arr_delay", "dest", epsilon=0.5)
    assert again.values.tobytes() == res.releases["d"].values.tobytes()
    assert len(s.budget.history()) == 2


def test_private_key_selection_same_question_both_ways() -> None:
    s = _session(_frame(), domains={})
    a = s.count("dest", epsilon=0.5, delta=1e-6)
    b = s.sql("SELECT dest, COUNT(*) FROM flights GROUP BY dest", epsilon=0.5,
              delta=1e-6).releases
    assert next(iter(b.values())).values.tobytes() == a.values.tobytes()
    assert len(s.budget.history()) == 1


def test_other_questions_are_other_specs() -> None:
    """The spec still tells questions apart: a filter, a NULL rule (``COUNT(col)``), a
    bound, a privacy target each make another query id (and another charge)."""
    s = _session(_frame())
    s.count("dest", epsilon=0.5)
    s.count("dest", epsilon=0.5, where="year = 2013")
    s.sql("SELECT dest, COUNT(arr_delay) FROM flights GROUP BY dest", epsilon=0.5)
    s.count("dest", epsilon=0.25)
    s.sum("seats", "dest", epsilon=0.5)
    s.sum("seats", "dest", epsilon=0.5, bounds=(0, 200))
    assert len(s.budget.history()) == 6


def test_the_event_is_the_plans_and_no_probe_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Closes the probe: the session learned a release's cost by running the release on
    a fake row with a budget that stopped at the charge.  A registered statistic's event
    is now its plan's, from the table's schema (no row read, nothing run), and the event
    released is that plan's."""
    import importlib.util

    from dpfast.session import _cache, _release

    assert not hasattr(_cache, "probe") and not hasattr(_cache, "one_row")
    assert importlib.util.find_spec("dpfast.session._legacy") is None  # the probe: gone
    df = _frame()
    s = _session(df)
    seen = []
    real = _release.schema_rows

    def spy(types: dict, n_keys: int, domain: object) -> Rows:
        rows = real(types, n_keys, domain)
        seen.append(rows)
        return rows

    monkeypatch.setattr(_release, "schema_rows", spy)
    one_column = {"count", "sum", "mean", "variance", "std", "privacy_id_count"}
    for name in sorted(set(REGISTRY) & one_column):  # those registered at this commit
        stat = REGISTRY[name]
        rel = (getattr(s, name)("arr_delay", "dest", epsilon=0.5) if stat.value
               else getattr(s, name)("dest", epsilon=0.5))
        rows = seen[-1]
        assert len(rows.keys) == 0 and len(rows.privacy_ids) == 0  # the schema: no row
        # the plan over the schema is the plan over the rows
        full = Rows(df.dest.to_numpy(dtype=object), df.pid.to_numpy(),
                    df.arr_delay.to_numpy() if stat.value else None, domain=rows.domain)
        spec = ReleaseSpec.make(
            [StatSpec(name)], epsilon=0.5, delta=0.0,
            bounds=(-20.0, 80.0) if stat.bounds else None, domain=np.asarray(DESTS))
        assert rel.event == make_plan(spec, full).event == make_plan(spec, rows).event


def test_a_text_value_column_is_refused_before_the_charge() -> None:
    """The schema says a text column holds no numbers: refused by the plan, nothing
    charged (an empty object column would not say so)."""
    s = _session(_frame().assign(name=lambda d: d.dest.str.lower()))
    with pytest.raises(TypeError, match="numbers"):
        s.sum("name", "dest", epsilon=0.5, bounds=(0, 1))
    assert s.budget.history() == []


class _Doubled(Statistic):
    """A test statistic registered here (and removed after): the sum's plan."""

    name = "test_registered_sum"
    sql_names = ("test_registered_sum",)
    value = True
    bounds = True
    summary = "a statistic registered by a test"

    @classmethod
    def plan(cls, spec: object, source: object) -> groupby.Plan:
        return groupby.plan_of("sum", spec, source)


REGISTRY.pop(_Doubled.name)  # registered only inside the test below


def test_a_registered_statistic_is_a_method_and_an_sql_aggregate() -> None:
    """Generated from the registry: a statistic registered after the session module was
    imported is ``session.<name>`` (listed by ``dir``, in ``STATISTICS``) and an SQL
    aggregate of its ``sql_names``, one question both ways."""
    from dpfast.session import STATISTICS

    s = _session(_frame())
    assert "test_registered_sum" not in dir(s)
    REGISTRY[_Doubled.name] = _Doubled
    try:
        assert "test_registered_sum" in dir(s) and "test_registered_sum" in STATISTICS
        rel = s.test_registered_sum("seats", "dest", epsilon=0.5)
        direct = dpfast.tables.sum(_frame().seats.to_numpy(),
                                   _frame().dest.to_numpy(dtype=object),
                                   _frame().pid.to_numpy(), bounds=(0, 300), epsilon=0.5,
                                   domain=DESTS, rng=dpfast.default_rng(KEY))
        assert rel.values.tobytes() == direct.values.tobytes() and rel.event == direct.event
        res = s.sql("SELECT dest, TEST_REGISTERED_SUM(seats) AS t FROM flights "
                    "GROUP BY dest", epsilon=0.5)
        assert res.releases["t"].values.tobytes() == rel.values.tobytes()
        assert len(s.budget.history()) == 1
    finally:
        REGISTRY.pop(_Doubled.name, None)
    assert not hasattr(s, "test_registered_sum")


def test_result_id_finds_a_part_of_a_question() -> None:
    b = dpfast.Budget(1.0)
    assert b.result_id("a" * 32) is None
    with b.query("b" * 32 + "~" + "a" * 32, dpfast.accounting.events.Epsilon(0.1)) as q:
        q.store(b"x")
    assert b.result_id("a" * 32) == "b" * 32 + "~" + "a" * 32
    assert b.result_id("b" * 32) is None


def test_count_distinct_of_a_column_is_the_registered_distinct_count() -> None:
    """``COUNT(DISTINCT col)`` of a column other than the privacy unit is the registry's
    count_distinct (it was refused): the same question as ``session.count_distinct`` and
    as ``COUNT_DISTINCT(col)``, charged once."""
    s = _session(_frame())
    m = s.count_distinct("seats", "dest", epsilon=0.5)
    a = s.sql("SELECT dest, COUNT(DISTINCT seats) AS d FROM flights GROUP BY dest",
              epsilon=0.5)
    b = s.sql("SELECT dest, COUNT_DISTINCT(seats) AS d FROM flights GROUP BY dest",
              epsilon=0.5)
    assert a.releases["d"].values.tobytes() == m.values.tobytes()
    assert b.releases["d"].values.tobytes() == m.values.tobytes()
    assert len(s.budget.history()) == 1
