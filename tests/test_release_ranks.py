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
from dpfast.tables.quantiles import rank_spec
from dpfast.tables.statistics import REGISTRY, REQUIRED

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
    assert REGISTRY["quantile"].params == {"q": REQUIRED, "n_candidates": 256,
                                           "candidates": None}
    assert REGISTRY["median"].params == {"n_candidates": 256, "candidates": None}
    assert REGISTRY["median"].sql_names == ("median",)
    assert {"quantile", "percentile_cont", "percentile_disc"} <= set(
        REGISTRY["quantile"].sql_names)
    assert REGISTRY["min"].sql_names == () and REGISTRY["max"].sql_names == ()


def _old_rank_spec(stat, q, bounds, candidates, n_candidates=256, **kw):
    """The spec the hand-written rank functions built (the former body of rank_spec)."""
    from dpfast.tables import _quantile_em

    scalar = np.ndim(q) == 0
    qs = tuple(float(x) for x in np.atleast_1d(q))
    clamp = bounds if candidates is None else (
        (int(candidates[0]), int(candidates[-1])) if all(float(c).is_integer()
                                                         for c in candidates)
        else (float(candidates[0]), float(candidates[-1])))
    options = {"float_grid": isinstance(clamp[0], float) or isinstance(clamp[1], float)}
    if candidates is None:
        options["n_candidates"] = n_candidates
    else:
        options["candidates"] = _quantile_em.grid(None, 1, candidates, False)
    params = () if stat != "quantile" else (("q", qs[0] if scalar else qs),)
    return spec.ReleaseSpec.make([spec.StatSpec(stat, kw.pop("value", None), params)],
                                 bounds=bounds, options=options, **kw)


RANK_CASES = [
    ("quantile", 0.9, (0, 100), None, {}),
    ("quantile", [0.25, 0.75], (0.0, 100.0), None, {"n_candidates": 64}),
    ("median", 0.5, None, [0, 5, 10, 50, 100], {}),
    ("min", 0.0, (0, 100.5), None, {"delta": 1e-6}),
    ("max", 1.0, None, [0.5, 1.0, 7.25], {"max_partitions": 2}),
]


@pytest.mark.parametrize("stat,q,bounds,candidates,kw", RANK_CASES)
def test_rank_spec_is_the_registrys_make_spec_and_unchanged(calls, stat, q, bounds,
                                                            candidates, kw):
    """The rank functions are generated from the registry (issue 37): ``_Rank.make_spec``
    builds, from the public parameters alone, the spec the hand-written functions built
    (the grid in the options: ``float_grid``, ``n_candidates`` or the validated
    ``candidates``; ``q`` in the statistic's parameters), so the releases, their noise
    and the session's cache keys (``query_id``) are unchanged; ``rank_spec`` keeps its
    signature and returns that spec.  (Fails on the old code: the rank classes had no
    ``make_spec`` of their own -- the base one put ``n_candidates`` / ``candidates`` in
    the statistic's parameters, where the plan never reads them.)"""
    common = dict(epsilon=1.0, delta=kw.get("delta", 0.0),
                  max_partitions=kw.get("max_partitions", 1), max_per_partition=1,
                  domain=DOM, selection="auto", bounding="uniform")
    n = kw.get("n_candidates", 256)
    want = _old_rank_spec(stat, q, bounds, candidates, n, **common)
    own = {"n_candidates": n, "candidates": candidates} | ({"q": q} if stat == "quantile"
                                                          else {})
    made = REGISTRY[stat].make_spec(params=own, bounds=bounds, **common)
    old = rank_spec(stat, q=q, bounds=bounds, n_candidates=n, candidates=candidates,
                    has_ids=True, **common)
    assert made == old == want and made.query_id() == want.query_id()
    dask_kw = dict(by=("k",), privacy_unit="id", value="v")
    assert (rank_spec(stat, q=q, bounds=bounds, n_candidates=n, candidates=candidates,
                      has_ids=True, **common, **dask_kw)
            == _old_rank_spec(stat, q, bounds, candidates, n, **common, **dask_kw))
    args = {"q": q} if stat == "quantile" else {}
    rel = getattr(dpt, stat)(VALS, KEYS, IDS, bounds=bounds, candidates=candidates,
                             rng=_gen(), **{**common, **kw, **args})
    assert [c[0] for c in calls] == [want]
    ref = run.release(want, run.Rows(KEYS, IDS, VALS, domain=DOM), rng=_gen())
    assert rel.values.tobytes() == ref.values.tobytes() and rel.event == ref.event


def test_rank_make_spec_refuses_what_ranks_do_not_take():
    """A rank spec made by a caller (the session, rank_spec) is checked like the public
    functions' (TypeError / ValueError naming the parameter), before any budget is
    charged: no ``rho`` / ``noise`` (pure ε-DP), no parameter it does not take, ``q`` for
    the quantile, no options of the caller's (the statistic makes its own)."""
    med, qua = REGISTRY["median"], REGISTRY["quantile"]
    with pytest.raises(ValueError, match="not rho or noise"):
        med.make_spec(bounds=(0, 1), epsilon=1.0, rho=0.5, domain=DOM)
    with pytest.raises(ValueError, match="not rho or noise"):
        med.make_spec(bounds=(0, 1), epsilon=1.0, noise="gaussian", domain=DOM)
    with pytest.raises(TypeError, match="median takes no parameter q"):
        med.make_spec(params={"q": 0.5}, bounds=(0, 1), epsilon=1.0, domain=DOM)
    with pytest.raises(TypeError, match="needs its parameter q"):
        qua.make_spec(bounds=(0, 1), epsilon=1.0, domain=DOM)
    with pytest.raises(TypeError, match="options"):
        med.make_spec(bounds=(0, 1), epsilon=1.0, domain=DOM, options={"n_candidates": 3})
    with pytest.raises(ValueError, match="q must be in"):
        qua.make_spec(params={"q": 1.5}, bounds=(0, 1), epsilon=1.0, domain=DOM)
    with pytest.raises(ValueError, match="n_candidates must be in"):
        med.make_spec(params={"n_candidates": 0}, bounds=(0, 1), epsilon=1.0, domain=DOM)
    with pytest.raises(ValueError, match="bounds or candidates, not both"):
        med.make_spec(params={"candidates": [0, 1]}, bounds=(0, 1), epsilon=1.0,
                      domain=DOM)
    with pytest.raises(ValueError, match="stat must be one of"):
        rank_spec("sum", q=0.5, bounds=(0, 1), epsilon=1.0, delta=0.0, max_partitions=1,
                  max_per_partition=1, n_candidates=256, candidates=None, domain=DOM,
                  selection="auto", bounding="uniform", has_ids=True)
    # the defaults of the public functions: the spec of the plain call
    assert med.make_spec(bounds=(0, 1), epsilon=1.0, domain=DOM) == med.make_spec(
        params={"n_candidates": 256, "candidates": None}, bounds=(0, 1), epsilon=1.0,
        domain=DOM)


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


def test_nullable_integers_with_missing_values_on_a_fractional_range():
    """The NULL policy first: a pandas nullable integer column (``Int64``) with missing
    entries, ranked as floats (fractional bounds), releases what its rows without the
    missing ones release, bit for bit.  (Guards the generated ``tables.median``: the
    hand-written function dropped the NULL rows before planning; the generated one
    hands the caller's column to the plan, which now drops them first too -- without
    ``_ranks.Plan._inputs`` it refused such a column, "values changed type", a refusal
    that depended on whether a value was missing.)"""
    pd = pytest.importorskip("pandas")

    vals = pd.Series(IVALS, dtype="Int64")
    vals[::7] = pd.NA
    keep = vals.notna().to_numpy()
    kw = dict(bounds=(-20.0, 120.0), epsilon=1.0, domain=DOM, max_partitions=2)
    ref = dpt.median(IVALS[keep], KEYS[keep], IDS[keep], rng=_gen(), **kw)
    got = dpt.median(vals, KEYS, IDS, rng=_gen(), **kw)
    assert got.values.tobytes() == ref.values.tobytes() and got.event == ref.event


@pytest.mark.parametrize("stat", ["median", "count_distinct"])
def test_the_null_policy_scans_the_rows_once(monkeypatch, stat):
    """The rank and count_distinct partials apply the NULL policy once (they dropped the
    NULL rows, then the validation scanned them again); the release is unchanged."""
    from dpfast.tables import _keys

    vals = VALS.astype(object)
    vals[::7] = None
    kw = {"bounds": (0.0, 100.0)} if stat == "median" else {}
    want = getattr(dpt, stat)(vals, KEYS, IDS, epsilon=1.0, domain=DOM, rng=_gen(), **kw)
    scans: list[int] = []
    real = _keys.drop_nulls

    def counting(*a, **k):
        scans.append(1)
        return real(*a, **k)

    monkeypatch.setattr(_keys, "drop_nulls", counting)
    got = getattr(dpt, stat)(vals, KEYS, IDS, epsilon=1.0, domain=DOM, rng=_gen(), **kw)
    assert len(scans) == 1
    np.testing.assert_array_equal(got.values, want.values)
