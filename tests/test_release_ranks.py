"""The rank statistics, ``bounds="auto"``, ``auto_bounds`` and ``topdown`` on the one
pipeline (issue 37): registered statistics, plans whose event is known before any row is
read, one charge site (:func:`dpfast.tables.run.release`)."""

from __future__ import annotations

import numpy as np
import pytest

import dpfast
import dpfast.tables as dpt
from dpfast.tables import plan as plan_mod
from dpfast.tables import run, spec
from dpfast.tables.statistics import REGISTRY

from .helpers import KEY

RS = np.random.default_rng(11)
N = 2000
KEYS = RS.integers(0, 8, N)
IDS = RS.integers(0, 400, N)
VALS = RS.normal(50.0, 15.0, N)
IVALS = RS.integers(-20, 120, N)
DOM = np.arange(8)
LEVELS = [np.zeros(12, np.int64), np.repeat(np.arange(3), 4), np.arange(12)]


def _gen() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


@pytest.fixture
def calls(monkeypatch):
    """The releases that went through :func:`run.release` (and the events they charged)."""
    seen: list = []
    real = run.release

    def spy(s, source, **kw):
        out = real(s, source, **kw)
        seen.append((s, out.event))
        return out

    monkeypatch.setattr(run, "release", spy)
    return seen


def test_rank_statistics_are_registered():
    """Quantile, Median, Min, Max: one registry entry each, pure-DP (no Gaussian noise),
    a value column with bounds, the SQL names the session answers today."""
    for name in ("quantile", "median", "min", "max"):
        cls = REGISTRY[name]
        assert cls.value and cls.bounds and not cls.gaussian
    assert REGISTRY["quantile"].params == {"q": None}
    assert REGISTRY["median"].sql_names == ("median",)
    assert {"quantile", "percentile_cont", "percentile_disc"} <= set(
        REGISTRY["quantile"].sql_names)
    assert REGISTRY["min"].sql_names == () and REGISTRY["max"].sql_names == ()


@pytest.mark.parametrize("stat,q", [("quantile", (0.25, 0.75)), ("quantile", 0.9),
                                    ("median", None), ("min", None), ("max", None)])
@pytest.mark.parametrize("values", [VALS, IVALS])
def test_rank_plan_event_is_the_release_event(stat, q, values):
    """plan(spec, source) gives the event before any row is read (the rows are not even
    valid numbers for the plan to read: only their dtype is), equal to the release's."""
    params = () if q is None else (("q", q),)
    s = spec.ReleaseSpec.make([spec.StatSpec(stat, params=params)], epsilon=1.0,
                              delta=1e-6, max_partitions=2, bounds=(0, 100),
                              options={"n_candidates": 64, "float_grid": False})
    p = plan_mod.plan(s, run.Rows(KEYS, IDS, values))
    fn = getattr(dpt, stat)
    kw = {} if q is None else {"q": list(q) if isinstance(q, tuple) else q}
    rel = fn(values, KEYS, IDS, bounds=(0, 100), epsilon=1.0, delta=1e-6,
             max_partitions=2, n_candidates=64, rng=_gen(), **kw)
    assert p.event == rel.event
    out = run.release(s, run.Rows(KEYS, IDS, values), rng=_gen())
    np.testing.assert_array_equal(out.values, rel.values)
    np.testing.assert_array_equal(out.keys, rel.keys)


def test_every_family_charges_through_run_release(calls):
    """Closes the channel of issue 37's extra charge sites: quantile/median/min/max,
    bounds="auto", auto_bounds and topdown each charged their own ``with charged(...)``
    (5 sites); now each is one call of run.release, whose event is the one charged (on
    the old code no call reaches run.release for these)."""
    b = dpfast.Budget(100.0, 1e-3)
    dpt.quantile(VALS, KEYS, IDS, q=0.5, bounds=(0, 100), epsilon=1.0, domain=DOM,
                 rng=_gen(), budget=b, note="q")
    dpt.median(VALS, KEYS, IDS, bounds=(0, 100), epsilon=1.0, domain=DOM, rng=_gen(),
               budget=b, note="m")
    dpt.sum(VALS, KEYS, IDS, bounds="auto", epsilon=1.0, domain=DOM, rng=_gen(), budget=b,
            note="s")
    dpt.mean(IVALS, KEYS, IDS, bounds="auto", epsilon=1.0, delta=1e-6, rng=_gen(),
             budget=b, note="a")
    dpt.auto_bounds(VALS, KEYS, IDS, epsilon=0.5, rng=_gen(), budget=b, note="b")
    zb = dpfast.Budget(100.0, 1e-3, accounting="zcdp")
    dpt.topdown(RS.integers(0, 9, 12), LEVELS, rho=1.0, rng=_gen(), budget=zb, note="t")
    assert len(calls) == 6
    charged = [c.event for c in b.history()] + [c.event for c in zb.history()]
    assert charged == [ev for _, ev in calls]
    assert [s.statistics[0].statistic for s, _ in calls] == [
        "quantile", "median", "sum", "mean", "auto_bounds", "topdown"]


def test_auto_bounds_plan_event_before_rows():
    """The two-phase plan of bounds="auto": its event, Composed((bounds, statistic)), is
    the plan's, known without reading a row (values of any content, same dtype)."""
    s = spec.ReleaseSpec.make([spec.StatSpec("sum")], epsilon=1.0, bounds="auto",
                              domain=DOM)
    p = plan_mod.plan(s, run.Rows(KEYS, IDS, VALS))
    q = plan_mod.plan(s, run.Rows(KEYS[:3], IDS[:3], -VALS[:3]))
    assert p.event == q.event
    rel = dpt.sum(VALS, KEYS, IDS, bounds="auto", epsilon=1.0, domain=DOM, rng=_gen())
    assert rel.event == p.event


def test_auto_bounds_checks_selection_before_the_charge():
    """A bad ``selection`` with bounds="auto" was checked only inside the charge (the
    statistic's plan was made after the bounds were chosen): a charged, failed release.
    Now the plan checks it: ValueError, nothing charged."""
    b = dpfast.Budget(10.0, 1e-3)
    with pytest.raises(ValueError, match="selection"):
        dpt.sum(VALS, KEYS, IDS, bounds="auto", epsilon=1.0, delta=1e-6,
                selection="nope", rng=_gen(), budget=b)
    assert b.history(include_refused=True) == []


def test_auto_bounds_with_weighted_gaussian_selection_releases():
    """bounds="auto" with the weighted-Gaussian key selection bounded the rows without
    the selection's unit weights and failed after the charge ("needs the weighted unit
    counts"); the statistic phase now bounds with them, as every other release."""
    b = dpfast.Budget(10.0, 1e-3)
    rel = dpt.sum(VALS, KEYS, IDS, bounds="auto", epsilon=1.0, delta=1e-6,
                  selection="weighted_gaussian", max_partitions=3, rng=_gen(), budget=b)
    assert [c.status for c in b.history()] != ["failed"]
    assert rel.event == b.history()[0].event
    assert set(np.asarray(rel.keys).tolist()) <= set(DOM.tolist())


def test_topdown_plan_is_the_release_plan():
    """topdown's plan (the composed per-level event) is known from the hierarchy, rho
    and the counts' shape: equal events for different counts of one shape."""
    from dpfast.tables import hierarchy

    a = hierarchy.plan_topdown(np.arange(12), LEVELS, 1.0, True, True, False, False)
    c = hierarchy.plan_topdown(np.ones(12, np.int64), LEVELS, 1.0, True, True, False, False)
    assert a.event == c.event and a.spec() == c.spec()
    rel = dpt.topdown(np.arange(12), LEVELS, rho=1.0, rng=_gen())
    assert rel.event == a.event
    assert a.spec().query_id() != hierarchy.plan_topdown(
        np.arange(12), LEVELS, 0.5, True, True, False, False).spec().query_id()
    other = [LEVELS[0], np.repeat(np.arange(3), 4)[::-1].copy(), LEVELS[2]]
    b = hierarchy.plan_topdown(np.arange(12), other, 1.0, True, True, False, False)
    assert b.fingerprint() != a.fingerprint() == c.fingerprint()


def test_dask_quantile_validates_before_it_charges():
    """Closes the Dask quantiles' charge-before-compute channel: they charged the budget
    and then computed the graph, so rows that fail validation in a partition (here string
    keys against an integer domain) left a charged, failed ledger row.  Now the partials
    are computed (and validated) first: TypeError, nothing charged."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    import dpfast.dask as dkd

    df = pd.DataFrame({"k": (KEYS % 5).astype(str), "id": IDS, "v": VALS})
    b = dpfast.Budget(10.0, 1e-5)
    with pytest.raises(TypeError, match="domain column 0"):
        dkd.median(dd.from_pandas(df, npartitions=2), "k", "v", "id", bounds=(0, 100),
                   epsilon=1.0, domain=np.arange(5), rng=_gen(), budget=b)
    assert b.history(include_refused=True) == []


@pytest.mark.parametrize("q", [0.5, [0.1, 0.9]])
def test_dask_rank_plan_is_the_local_plan(q):
    """One plan for both backends: the Dask release equals the local one (values, keys,
    event) and charges the same event once."""
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    import dpfast.dask as dkd

    df = pd.DataFrame({"k": KEYS, "id": IDS, "v": IVALS})
    b = dpfast.Budget(10.0, 1e-5)
    got = dkd.quantile(dd.from_pandas(df, npartitions=3), "k", "v", "id", q=q,
                       bounds=(0, 100), epsilon=1.0, delta=1e-6, max_partitions=2,
                       rng=_gen(), budget=b)
    ref = dpt.quantile(IVALS, KEYS, IDS, q=q, bounds=(0, 100), epsilon=1.0, delta=1e-6,
                       max_partitions=2, rng=_gen())
    np.testing.assert_array_equal(got.keys, ref.keys)
    np.testing.assert_array_equal(got.values, ref.values)
    assert got.event == ref.event == b.history()[0].event


def test_a_rank_spec_without_options_is_the_default_grid():
    """A spec built elsewhere (a session, from SQL) needs no family options: the plan's
    defaults are the public function's (256 grid points of the bounds; integer values
    with integer bounds ranked as integers)."""
    s = spec.ReleaseSpec.make([spec.StatSpec("median")], epsilon=1.0, bounds=(0, 100),
                              domain=DOM)
    got = run.release(s, run.Rows(KEYS, IDS, IVALS, domain=DOM), rng=_gen())
    ref = dpt.median(IVALS, KEYS, IDS, bounds=(0, 100), epsilon=1.0, domain=DOM, rng=_gen())
    np.testing.assert_array_equal(got.values, ref.values)
    np.testing.assert_array_equal(got.grid, ref.grid)
    assert got.event == ref.event
