"""The many-metric family on the one pipeline (issue 37): the statistics' classes say which
parts they are finished from, ``plan`` dispatches several statistics to the many-metric
plan, the plan states the event before any row is read, and one question has one spec."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpfast
from dpfast import tables as dpt
from dpfast.tables import _ids_l2, _metrics, multi, run, statistics
from dpfast.tables.plan import plan
from dpfast.tables.spec import ReleaseSpec, StatSpec
from tests.helpers import KEY

pd = pytest.importorskip("pandas")

#: the name table the planner read before the statistics carried their parts
_OLD_KINDS = {
    "count": ("count",),
    "privacy_id_count": ("ids",),
    "sum": ("sum",),
    "mean": ("count", "csum"),
    "variance": ("count", "csum", "csq"),
    "std": ("count", "csum", "csq"),
    "median": ("quantile",),
    "quantile": ("quantile",),
    "min": ("quantile",),
    "max": ("quantile",),
}


def _frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.integers(0, 12, n), "id": rng.integers(0, 400, n),
                         "x": rng.normal(2.0, 3.0, n), "v": rng.integers(-3, 9, n)})


def test_statistics_declare_the_parts_of_the_old_table() -> None:
    """Each statistic's class carries the parts the planner finishes it from; with the rank
    metrics they are the old ``_metrics.KINDS`` table, entry for entry."""
    for name in ("variance", "std", "privacy_id_count"):
        assert statistics.get(name).parts == _OLD_KINDS[name]
    assert statistics.get("variance").value and statistics.get("std").bounds
    assert not statistics.get("privacy_id_count").value
    assert _metrics.kinds(statistics.metric_parts()) == _OLD_KINDS


def test_plan_dispatches_the_family_and_the_single_statistics() -> None:
    """Several statistics (or ``family="aggregate"``) -> the many-metric plan returning the
    whole release; variance / std / privacy_id_count -> the same plan returning their one
    metric; ``privacy_id_count(bounding="l2")`` -> its own plan."""
    df = _frame(10)
    rows = run.Rows(df.k, df.id, columns={"x": df.x})
    kw = dict(epsilon=1.0, domain=np.arange(12))
    two = ReleaseSpec.make([StatSpec("count", name="count"),
                            StatSpec("mean", "x", name="mean_x")],
                           bounds={"x": (0.0, 4.0)}, **kw)
    p = plan(two, rows)
    assert isinstance(p, multi.MultiPlan) and p.single is None
    assert [m.name for m in p.metrics.metrics] == ["count", "mean_x"]
    var = plan(ReleaseSpec.make([StatSpec("variance")], bounds=(0.0, 4.0), **kw),
               run.Rows(df.k, df.id, df.x))
    assert isinstance(var, multi.MultiPlan) and var.single == "variance"
    ids = plan(ReleaseSpec.make([StatSpec("privacy_id_count")], **kw), run.Rows(df.k, df.id))
    assert isinstance(ids, multi.MultiPlan) and ids.single == "privacy_id_count"
    l2 = plan(ReleaseSpec.make([StatSpec("privacy_id_count")], bounding="l2", delta=1e-6,
                               **kw), run.Rows(df.k, df.id))
    assert isinstance(l2, _ids_l2.Plan)


@pytest.mark.parametrize("stat", ["variance", "std"])
def test_a_single_statistic_plans_the_parts_shares_and_event_of_today(stat: str) -> None:
    """The registry's plan of ``variance`` / ``std`` is the planner's plan of its one metric
    (count, centred sum and square at a third each) and its event is the release's."""
    df = _frame()
    spec = ReleaseSpec.make([StatSpec(stat)], epsilon=1.5, bounds=(-4.0, 8.0),
                            domain=np.arange(12), max_partitions=2, max_per_partition=3)
    p = plan(spec, run.Rows(df.k, df.id, df.x))
    mets = _metrics.parse_metrics({stat: (stat, "values")}, {stat: _OLD_KINDS[stat]})
    ref = _metrics.plan_metrics(mets, [Fraction(1)], {"values": _metrics.Column(-4.0, 8.0,
                                                                              False)},
                                2, 3, spec.privacy())
    assert {n: q.share for n, q in p.metrics.parts.items()} == {
        "count": Fraction(1, 3), "csum:values": Fraction(1, 3), "csq:values": Fraction(1, 3)}
    assert {n: (q.share, q.part.law, q.address) for n, q in p.metrics.parts.items()} == {
        n: (q.share, q.part.law, q.address) for n, q in ref.parts.items()}
    assert p.event == ref.event
    budget = dpfast.Budget(epsilon=2.0, accounting="basic")
    rel = getattr(dpt, stat)(df.x, df.k, df.id, bounds=(-4.0, 8.0), epsilon=1.5,
                             domain=np.arange(12), max_partitions=2, max_per_partition=3,
                             rng=dpfast.default_rng(KEY), budget=budget)
    assert rel.event == p.event and budget.history()[0].event == p.event


def test_the_plan_reads_no_row() -> None:
    """The event comes from the spec and the columns' dtypes: a plan over rows that fail
    validation (mismatched lengths) still states it, and is the event of the valid rows."""
    df = _frame()
    spec = multi.aggregate_spec(["count", ("variance", "x")], statistics.metric_parts(),
                                bounds={"x": (-4.0, 8.0)}, weights=None, candidates=None,
                                available=list(df.columns), epsilon=1.0, delta=1e-6)
    bad = run.Rows(df.k, df.id[:5], columns={"x": df.x[:7]})
    p = plan(spec, bad)
    with pytest.raises(ValueError):
        p.local_partials(bad, np.zeros(4, np.uint32))
    rel = dpt.aggregate(df, "k", "id", metrics=["count", ("variance", "x")], epsilon=1.0,
                        delta=1e-6, bounds={"x": (-4.0, 8.0)}, rng=dpfast.default_rng(KEY))
    assert rel.event == p.event


def test_one_question_one_spec() -> None:
    """A list of metrics and the mapping of their default names ask the same question:
    one spec, one query id (the session's cache key); other weights are another."""
    kw = dict(bounds={"x": (0.0, 4.0), "y": (0, 3)}, candidates=None,
              available=["x", "y"], epsilon=1.0, delta=1e-6)
    parts = statistics.metric_parts()
    a = multi.aggregate_spec(["count", ("mean", "x"), ("quantile", "y", 0.25)], parts,
                             weights=None, **kw)
    b = multi.aggregate_spec({"count": "count", "mean_x": ("mean", "x"),
                              "q0.25_y": ("quantile", "y", 0.25)}, parts, weights=None,
                             **kw)
    c = multi.aggregate_spec(["count", ("mean", "x"), ("quantile", "y", 0.25)], parts,
                             weights=[1, 2, 1], **kw)
    assert a == b and a.query_id() == b.query_id() != c.query_id()
    assert ReleaseSpec.from_dict(a.to_dict()) == a


def test_aggregate_spec_checks_before_anything_is_read() -> None:
    """Bad public parameters: ValueError / TypeError naming them, from the spec."""
    parts = statistics.metric_parts()
    kw = dict(weights=None, candidates=None, available=["x"], epsilon=1.0)
    with pytest.raises(TypeError, match="bounds must be a dict"):
        multi.aggregate_spec([("sum", "x")], parts, bounds=(0, 1), **kw)
    with pytest.raises(ValueError, match="give bounds"):
        multi.aggregate_spec([("sum", "x")], parts, bounds={}, **kw)
    with pytest.raises(TypeError, match="bounds for column 'x': bounds must be a pair"):
        multi.aggregate_spec([("sum", "x")], parts, bounds={"x": 3}, **kw)
    with pytest.raises(ValueError, match="unknown metric 'count_distinct'"):
        multi.aggregate_spec([("count_distinct", "x")], parts, bounds={}, **kw)
    with pytest.raises(TypeError, match="candidates must be None or a dict"):
        multi.aggregate_spec([("median", "x")], parts, bounds={"x": (0, 1)}, weights=None,
                             candidates=[3], available=["x"], epsilon=1.0)


def test_dask_validates_before_it_charges() -> None:
    """Dask computes and merges the partials before the one charge, as one machine does:
    an input the partitions refuse (a public domain with a repeated key, found where the
    keys are factorized) charges nothing.  Closes the channel of the old Dask pipelines,
    which charged first and recorded the same failure as a ``failed`` ledger row."""
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    import dpfast.dask as dkd

    df = _frame(600)
    ddf = dd.from_pandas(df, npartitions=3)
    dom = np.array([0, 1, 2, 2, 3])
    budget = dpfast.Budget(epsilon=50.0, delta=1e-3)
    kw = dict(epsilon=1.0, delta=1e-6, domain=dom, budget=budget, rng=KEY)
    calls = [
        lambda: dkd.aggregate(ddf, "k", "id", metrics=["count", ("median", "x")],
                              bounds={"x": (-4.0, 8.0)}, **kw),
        lambda: dkd.variance(ddf, "k", "x", "id", bounds=(-4.0, 8.0), **kw),
        lambda: dkd.std(ddf, "k", "v", None, bounds=(-3, 9), **kw),
        lambda: dkd.privacy_id_count(ddf, "k", "id", **kw),
        lambda: dkd.privacy_id_count(ddf, "k", "id", bounding="l2", **kw),
    ]
    with dask.config.set(scheduler="synchronous"):
        for call in calls:
            with pytest.raises(ValueError, match="duplicate"):
                call()
            assert budget.history() == []
        rel = dkd.variance(ddf, "k", "x", "id", bounds=(-4.0, 8.0), epsilon=1.0,
                           domain=np.arange(12), budget=budget, note="ok", rng=KEY)
    assert [(h.note, h.status) for h in budget.history()] == [("ok", "charged")]
    assert budget.history()[0].event == rel.event
