"""The trimmed (winsorised) mean: a statistic added through the registry alone
(dpfast/tables/statistics/trimmed.py), two phases in one plan and one charge."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpfast
from dpfast.accounting import events as ev
from dpfast.tables import TableRelease, run, statistics
from dpfast.tables.statistics import trimmed

from .helpers import KEY


def _data(n: int = 20000, seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    keys = r.integers(0, 5, n)
    vals = np.where(r.random(n) < 0.05, 1000.0, r.normal(50, 10, n))
    return keys, np.arange(n), np.clip(vals, 0, 1000)


def _spec(**kw: object) -> object:
    opts: dict[str, object] = dict(epsilon=2.0, bounds=(0.0, 1000.0), domain=np.arange(5))
    opts.update(kw)
    trim = opts.pop("trim", 0.1)
    return statistics.get("trimmed_mean").make_spec(params={"trim": trim}, **opts)


def _winsorised(v: np.ndarray, trim: float) -> float:
    lo, hi = np.quantile(v, [trim, 1 - trim])
    return float(np.clip(v, lo, hi).mean())


def _epsilons(e: object) -> list[float]:
    if isinstance(e, ev.Composed):
        return [x for sub in e.events for x in _epsilons(sub)]
    if isinstance(e, ev.SelfComposed):
        return [x * e.count for x in _epsilons(e.event)]
    if isinstance(e, ev.Exponential):
        return [e.epsilon]
    if isinstance(e, ev.DiscreteLaplace):
        return [1.0 / e.noise_multiplier]
    raise AssertionError(f"unexpected event {e!r}")


def test_registered_with_what_the_surfaces_need() -> None:
    cls = statistics.REGISTRY["trimmed_mean"]
    assert cls is trimmed.TrimmedMean
    assert cls.value and cls.bounds and not cls.gaussian
    assert cls.params == {"trim": 0.1} and "Privacy" in cls.doc


def test_the_event_is_planned_before_any_row_and_spends_at_most_epsilon() -> None:
    keys, ids, vals = _data(50)
    rows = run.Rows(keys, ids, vals, domain=np.arange(5))
    plan = statistics.get("trimmed_mean").plan(_spec(), rows)
    assert ev.relations_of(plan.event) == {"add_remove"}
    total = sum((Fraction(x) for x in _epsilons(plan.event)), Fraction(0))
    assert total <= Fraction(2.0)
    rel = run.release(_spec(), rows, rng=dpfast.default_rng(KEY))
    assert rel.event == plan.event


def test_close_to_the_exact_winsorised_mean_and_robust_to_outliers() -> None:
    keys, ids, vals = _data()
    rel = run.release(_spec(), run.Rows(keys, ids, vals, domain=np.arange(5)),
                      rng=dpfast.default_rng(KEY))
    assert rel.statistic == "trimmed_mean" and list(rel.keys) == list(range(5))
    for k, got in zip(rel.keys, rel.values, strict=True):
        v = vals[keys == k]
        exact = _winsorised(v, 0.1)
        assert abs(got - exact) < 1.5, (k, got, exact)  # grid step 1000/255 ~ 3.9
        assert v.mean() > exact + 40  # the plain mean is dragged by the 5% outliers
    lo, hi = rel.confidence_interval(0.05)
    assert np.all(lo <= rel.values) and np.all(rel.values <= hi)


def test_interval_covers_the_noiseless_estimate() -> None:
    """Coverage of the phase-2 interval over 40 releases (fixed keys): the noiseless
    estimate (same clamps) lies inside at 90% in nearly every one."""
    keys, ids, vals = _data(4000, seed=2)
    rows = run.Rows(keys, ids, vals, domain=np.arange(5))
    grid = statistics.get("trimmed_mean").plan(_spec(epsilon=1.0), rows).rank.grid
    misses = 0
    for j in range(40):
        rel = run.release(_spec(epsilon=1.0), rows, rng=dpfast.default_rng(bytes([j]) * 32))
        a, b = rel._interval.a, rel._interval.b
        lo, hi = rel.confidence_interval(0.1)
        for i, k in enumerate(rel.keys):  # the noiseless estimate with the same clamps
            v = vals[keys == k]
            p = np.searchsorted(grid, v)
            rep = np.where(grid[np.minimum(p, len(grid) - 1)] == v, v,
                           (grid[np.maximum(p - 1, 0)] + grid[np.minimum(p, len(grid) - 1)])
                           / 2)
            w = (np.floor(65536 * (np.clip(rep, a[i], b[i]) - a[i]) / (b[i] - a[i]))
                 if b[i] > a[i] else np.zeros_like(rep))
            est = a[i] + (b[i] - a[i]) * w.mean() / 65536
            misses += not lo[i] - 1e-9 <= est <= hi[i] + 1e-9
    assert misses <= 0.1 * 40 * 5 + 8


def test_private_key_selection_and_state_round_trip() -> None:
    keys, ids, vals = _data(6000)
    s = _spec(domain=None, delta=1e-6, epsilon=3.0)
    rel = run.release(s, run.Rows(keys, ids, vals), rng=dpfast.default_rng(KEY))
    assert rel.threshold is not None or rel.selection is not None
    assert isinstance(rel.event.events[0], ev.EpsilonDelta)
    back = TableRelease.from_state(rel.to_state())
    np.testing.assert_array_equal(back.values, rel.values)
    for x, y in zip(back.confidence_interval(0.05), rel.confidence_interval(0.05),
                    strict=True):
        np.testing.assert_array_equal(x, y)


def test_bad_parameters_are_refused_before_the_charge() -> None:
    keys, ids, vals = _data(50)
    budget = dpfast.Budget(epsilon=10.0)
    for trim, exc in ((0.5, ValueError), (0.0, ValueError), ("x", TypeError)):
        with pytest.raises(exc, match="trim"):
            run.release(_spec(trim=trim), run.Rows(keys, ids, vals, domain=np.arange(5)),
                        budget=budget)
    with pytest.raises(ValueError, match="rho"):
        statistics.get("trimmed_mean").plan(
            statistics.get("trimmed_mean").make_spec(rho=0.5, bounds=(0.0, 1.0),
                                                     domain=[0]),
            run.Rows(keys, ids, vals))
    assert budget.history() == []


def test_dask_backend_is_bit_identical() -> None:
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    import dask

    from dpfast.dask.backend import DaskBackend, Frame

    keys, ids, vals = _data(3000)
    ids = ids // 3  # three rows per person
    local = run.release(_spec(max_per_partition=3), run.Rows(keys, ids, vals,
                                                             domain=np.arange(5)),
                        rng=dpfast.default_rng(KEY))
    df = pd.DataFrame({"k": keys, "id": ids, "v": vals})
    frame = Frame.make(dd.from_pandas(df, npartitions=3), "k", "id", ["v"], np.arange(5))
    with dask.config.set(scheduler="synchronous"):
        got = run.release(_spec(max_per_partition=3), frame, backend=DaskBackend(2),
                          rng=dpfast.default_rng(KEY))
    np.testing.assert_array_equal(got.values, local.values)
    assert got.event == local.event


# ------------------------------------------------------------ every surface, from the registry
def _frame(n: int = 3000) -> object:
    pd = pytest.importorskip("pandas")
    r = np.random.default_rng(4)
    return pd.DataFrame({"k": r.choice(np.array(["a", "b", "c"]), n), "pid": np.arange(n) // 2,
                         "v": np.clip(r.normal(50, 10, n), 0, 100)})


def test_offered_by_dpfast_tables_and_dpfast_dask() -> None:
    import inspect

    dd = pytest.importorskip("dask.dataframe")
    import dask

    import dpfast.dask as dkd
    from dpfast import tables

    sig = inspect.signature(tables.trimmed_mean)
    assert list(sig.parameters)[:3] == ["values", "keys", "privacy_ids"]
    assert sig.parameters["trim"].default == 0.1 and "rho" not in sig.parameters
    assert "Privacy" in tables.trimmed_mean.__doc__
    df = _frame()
    kw = dict(bounds=(0.0, 100.0), trim=0.2, epsilon=1.0, domain=["a", "b", "c"],
              max_per_partition=2)
    rel = tables.trimmed_mean(df.v.to_numpy(), df.k.to_numpy(), df.pid.to_numpy(),
                              rng=dpfast.default_rng(KEY), **kw)
    with dask.config.set(scheduler="synchronous"):
        got = dkd.trimmed_mean(dd.from_pandas(df, npartitions=3), "k", "v", "pid",
                               rng=dpfast.default_rng(KEY), **kw)
    assert got.values.tobytes() == rel.values.tobytes() and got.event == rel.event


def test_a_session_method_and_an_sql_aggregate_asking_one_question() -> None:
    df = _frame()
    s = dpfast.Session(df, privacy_unit="pid", epsilon=5.0, delta=1e-5, name="t",
                       bounds={"v": (0.0, 100.0)}, domains={"k": ["a", "b", "c"]},
                       rng=dpfast.default_rng(KEY))
    m = s.trimmed_mean("v", "k", trim=0.2, epsilon=1.0, max_per_partition=2)
    q = s.sql("SELECT k, TRIMMED_MEAN(v, 0.2) AS t FROM t GROUP BY k", epsilon=1.0,
              max_per_partition=2)
    assert q.releases["t"].values.tobytes() == m.values.tobytes()
    assert len(s.budget.history()) == 1  # the second asking is answered from the cache
    d = s.sql("SELECT k, TRIMMED_MEAN(v) AS t FROM t GROUP BY k", epsilon=1.0,
              max_per_partition=2)  # the default trim, as a method call without trim=
    assert d.releases["t"].values.tobytes() == s.trimmed_mean(
        "v", "k", epsilon=1.0, max_per_partition=2).values.tobytes()
    assert len(s.budget.history()) == 2


def test_from_the_command_line_and_in_the_reference(tmp_path, capsys) -> None:
    from dpfast.cli import main
    from dpfast.tables import facade

    df = _frame(600)
    df.to_csv(tmp_path / "t.csv", index=False)
    (tmp_path / "keys.csv").write_text("k\na\nb\nc\n")
    assert main(["release", "trimmed_mean", str(tmp_path / "t.csv"), "--key", "k", "--id",
                 "pid", "--value", "v", "--bounds", "0", "100", "--trim", "0.2",
                 "--epsilon", "1", "--domain", str(tmp_path / "keys.csv"), "-o",
                 str(tmp_path / "o.csv")]) == 0
    assert "released the trimmed_mean of 3 keys" in capsys.readouterr().out
    assert len((tmp_path / "o.csv").read_text().splitlines()) == 4
    assert ".. autofunction:: dpfast.tables.trimmed_mean" in facade.reference("dpfast.tables")
