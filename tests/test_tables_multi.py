"""dpfast.tables.aggregate: many metrics, one bounding, one selection, one event."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpfast
from dpfast import tables as dpt
from dpfast._core.rounding import float_down
from dpfast.accounting import events as ev
from dpfast.tables import _multi_release, _select
from tests.helpers import KEY

pd = pytest.importorskip("pandas")

BIG = 1e7  # the discrete noise is exactly 0 with probability ~1


def _replay() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


def _frame(n: int = 4000, seed: int = 0, people: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"g": rng.integers(0, 12, n), "h": rng.choice(["a", "b"], n),
                         "pid": rng.integers(0, people, n), "x": rng.normal(4.0, 2.0, n),
                         "y": rng.integers(-2, 9, n)})


METRICS = ["count", "privacy_id_count", ("sum", "y"), ("mean", "x"), ("variance", "x"),
           ("std", "y")]
BOUNDS = {"x": (0.0, 8.0), "y": (0, 6)}


def test_pandas_polars_and_pyarrow_tables_give_the_same_release() -> None:
    pl = pytest.importorskip("polars")
    pa = pytest.importorskip("pyarrow")
    df = _frame(12000, people=3000)
    kw = dict(metrics=METRICS, epsilon=4.0, delta=1e-6, bounds=BOUNDS, max_partitions=2,
              max_per_partition=3)
    ref = dpt.aggregate(df, "g", "pid", rng=_replay(), **kw).to_pandas()
    for frame in (pl.from_pandas(df), pa.Table.from_pandas(df)):
        got = dpt.aggregate(frame, "g", "pid", rng=_replay(), **kw).to_pandas()
        pd.testing.assert_frame_equal(got, ref)
    assert list(ref.columns[:3]) == ["count", "count_ci_low", "count_ci_high"]
    assert ref.index.name == "g" and len(ref) > 3


def test_to_pandas_and_to_polars_with_two_key_columns() -> None:
    pytest.importorskip("polars")
    df = _frame()
    rel = dpt.aggregate(df, ["g", "h"], "pid", metrics={"n": "count", "m": ("mean", "x")},
                        epsilon=1.0, bounds=BOUNDS, domain=(np.repeat(np.arange(12), 2),
                                                            np.tile(["a", "b"], 12)),
                        max_partitions=3, max_per_partition=2, rng=_replay())
    out = rel.to_pandas()
    assert list(out.index.names) == ["g", "h"] and len(out) == 24
    assert list(out.columns) == ["n", "n_ci_low", "n_ci_high", "m", "m_ci_low", "m_ci_high"]
    pol = rel.to_polars()
    assert pol.columns[:2] == ["g", "h"] and pol.height == 24
    np.testing.assert_array_equal(pol["m"].to_numpy(), out["m"].to_numpy())
    assert (out["m_ci_low"] <= out["m"]).all() and (out["m"] <= out["m_ci_high"]).all()
    assert isinstance(rel["m"], dpt.TableRelease) and rel["m"].statistic == "mean"
    with pytest.raises(KeyError, match="released"):
        rel["nope"]


def test_the_budget_split_rule_and_the_noise_scales() -> None:
    df = _frame()
    k, c, eps = 2, 3, 1.5
    rel = dpt.aggregate(df, "g", "pid", metrics=["count", ("mean", "x")], epsilon=eps,
                        bounds=BOUNDS, domain=np.arange(12), max_partitions=k,
                        max_per_partition=c, rng=_replay())
    # count: 1/2 (its metric) + 1/4 (half of the mean's); the centred sum: 1/4
    assert rel.shares == {"count": Fraction(3, 4), "csum:x": Fraction(1, 4)}
    t = rel.laws["count"].scale
    assert t >= k * c / (eps * 0.75) and t == pytest.approx(k * c / (eps * 0.75), rel=1e-12)
    assert rel.laws["csum:x"].kind == "laplace"
    assert rel.laws["csum:x"].scale == pytest.approx(k * c * 8.0 / (eps / 4), rel=1e-3)
    assert rel["count"].law == rel.laws["count"]  # one noisy count serves both metrics
    weighted = dpt.aggregate(df, "g", "pid", metrics=["count", ("mean", "x")], epsilon=eps,
                             bounds=BOUNDS, domain=np.arange(12), weights={"count": 1,
                                                                           "mean_x": 3},
                             max_partitions=k, max_per_partition=c, rng=_replay())
    assert weighted.shares == {"count": Fraction(5, 8), "csum:x": Fraction(3, 8)}
    # one composed event, its epsilons summing to at most epsilon
    assert isinstance(rel.event, ev.Composed)
    assert len(rel.event.events) == 2
    budget = dpfast.Budget(epsilon=eps, accounting="basic")
    budget.spend(rel.event)  # the parts' epsilons sum to at most eps: accepted
    assert budget.remaining().epsilon == pytest.approx(0.0, abs=1e-9)
    assert all(e.neighbouring == "add_remove" for e in rel.event.events)


def test_one_charge_for_the_whole_release_and_refusal_draws_nothing() -> None:
    df = _frame()
    budget = dpfast.Budget(epsilon=1.0, delta=1e-5, accounting="basic")
    rel = dpt.aggregate(df, "g", "pid", metrics=METRICS, epsilon=0.7, delta=1e-6,
                        bounds=BOUNDS, budget=budget, note="all", rng=_replay())
    h = budget.history()
    assert len(h) == 1 and h[0].event == rel.event and h[0].note == "all"
    assert all(m.event == rel.event for m in rel.metrics.values())
    gen = _replay()
    before = gen._root.next_stream
    with pytest.raises(dpfast.BudgetExceededError):
        dpt.aggregate(df, "g", "pid", metrics=METRICS, epsilon=0.7, delta=1e-6,
                      bounds=BOUNDS, budget=budget, rng=gen)
    assert gen._root.next_stream == before and len(budget.history()) == 1


def test_keys_are_selected_once_by_a_separate_measurement_on_people() -> None:
    df = _frame(12000, people=3000)
    k, delta = 2, 1e-6
    rel = dpt.aggregate(df, "g", "pid", metrics=METRICS, epsilon=1.0, delta=delta,
                        bounds=BOUNDS, max_partitions=k, max_per_partition=4, rng=_replay())
    n_metrics = len(METRICS)
    sel = _select.plan(float_down(Fraction(1, n_metrics + 1)), delta, k, "auto")
    assert rel.selected_on == sel.describe()
    # the selection has the share of one more metric; the parts share the rest
    assert sum(rel.shares.values()) == Fraction(n_metrics, n_metrics + 1)
    assert isinstance(rel.event, ev.EpsilonDelta) and rel.event.delta == sel.delta <= delta
    for m in rel.metrics.values():
        np.testing.assert_array_equal(m.keys, rel.keys)
    # the decision is on the exact people per key after bounding: every published key is
    # one the rule keeps for its own stream (replayed through the same generator)
    pub = dpt.aggregate(df, "g", "pid", metrics=["count"], epsilon=1.0, delta=delta,
                        max_partitions=k, max_per_partition=4, selection="laplace",
                        rng=_replay())
    assert pub.threshold is not None and "laplace" in pub.selected_on
    sums = dpt.aggregate(df, "g", "pid", metrics=[("sum", "y")], epsilon=1.0, delta=delta,
                         bounds=BOUNDS, max_partitions=k, rng=_replay())
    assert sums.shares == {"sum:y": Fraction(1, 2)}
    with pytest.raises(ValueError, match="selection"):
        dpt.aggregate(df, "g", "pid", metrics=["count"], epsilon=1.0, delta=delta,
                      selection="bogus", rng=_replay())


def test_exact_at_huge_epsilon_where_bounding_does_not_bind() -> None:
    df = _frame(3000)
    dom = np.arange(12)
    k = int(df.groupby("pid").g.nunique().max())  # bounds that keep every row
    c = int(df.groupby(["pid", "g"]).size().max())
    rel = dpt.aggregate(df, "g", "pid", metrics=METRICS, epsilon=BIG, bounds=BOUNDS,
                        domain=dom, max_partitions=k, max_per_partition=c, rng=_replay())
    x = df.x.clip(0.0, 8.0)
    y = df.y.clip(0, 6)
    g = df.g
    np.testing.assert_array_equal(rel["count"].values, g.value_counts().sort_index())
    np.testing.assert_array_equal(rel["privacy_id_count"].values,
                                  df.groupby("g").pid.nunique().sort_index())
    np.testing.assert_array_equal(rel["sum_y"].values, y.groupby(g).sum().sort_index())
    np.testing.assert_allclose(rel["mean_x"].values, x.groupby(g).mean().sort_index(),
                               rtol=1e-6)
    np.testing.assert_allclose(rel["variance_x"].values,
                               x.groupby(g).var(ddof=0).sort_index(), rtol=1e-5)
    np.testing.assert_allclose(rel["std_y"].values, y.groupby(g).std(ddof=0).sort_index(),
                               rtol=1e-5)


def test_metrics_are_post_processing_of_the_noisy_parts() -> None:
    df = _frame()
    rel = dpt.aggregate(df, "g", "pid", metrics=METRICS, epsilon=0.5, bounds=BOUNDS,
                        domain=np.arange(12), max_partitions=2, max_per_partition=2,
                        rng=_replay())
    p = rel.noisy_parts
    n, s = p["count"], p["csum:x"]
    mean = np.clip((8.0 + s / np.maximum(n, 1)) / 2, 0.0, 8.0)
    mean[n <= 0] = 4.0
    np.testing.assert_array_equal(rel["mean_x"].values, mean)
    var = _multi_release.variance_estimate(n, s, p["csq:x"], 16.0)
    np.testing.assert_array_equal(rel["variance_x"].values, var)
    sd = np.sqrt(_multi_release.variance_estimate(n, p["csum:y"].astype(float),
                                                  p["csq:y"], 9.0))
    np.testing.assert_array_equal(rel["std_y"].values, sd)
    np.testing.assert_array_equal(rel["sum_y"].values, p["sum:y"])
    assert rel["sum_y"].values.dtype == np.int64  # integer column: exact discrete noise


def test_a_generator_replays_a_raw_key_never_does() -> None:
    df = _frame()
    kw = dict(metrics=METRICS, epsilon=1.0, bounds=BOUNDS, domain=np.arange(12))
    a = dpt.aggregate(df, "g", "pid", rng=_replay(), **kw).to_pandas()
    b = dpt.aggregate(df, "g", "pid", rng=_replay(), **kw).to_pandas()
    pd.testing.assert_frame_equal(a, b)
    r1 = dpt.aggregate(df, "g", "pid", rng=KEY, **kw)
    r2 = dpt.aggregate(df, "g", "pid", rng=KEY, **kw)
    assert r1.release_id != r2.release_id and r1.release_id is not None
    assert not np.array_equal(r1["count"].values, r2["count"].values)


def test_part_noise_follows_its_exact_law() -> None:
    """Per-key noise of the count, privacy-id count and integer-sum parts: mean |Z| within
    four standard errors (0.9%) of the exact discrete Laplace value."""
    n = 200_000
    keys = np.arange(n)
    y = (keys % 7).astype(np.int64)
    df = pd.DataFrame({"g": keys, "y": y})
    rel = dpt.aggregate(df, "g", metrics=["count", "privacy_id_count", ("sum", "y")],
                        epsilon=0.9, bounds={"y": (0, 6)}, domain=keys, rng=_replay())
    truth = {"count": np.ones(n), "ids": np.ones(n), "sum:y": y}
    for name, t in truth.items():
        z = rel.noisy_parts[name] - t
        law = rel.laws[name]
        assert law.kind == "discrete_laplace"
        assert abs(np.mean(z)) < 4 * law.std() / math.sqrt(n)
        se = np.std(np.abs(z)) / math.sqrt(n)
        assert abs(np.mean(np.abs(z)) - law.mean_abs()) < 4 * se, name
        assert abs(np.var(z) / law.std() ** 2 - 1) < 0.03, name


BAD = [
    (dict(metrics=["mode"]), ValueError, "unknown metric"),
    (dict(metrics=[("mean",)]), TypeError, "metrics"),
    (dict(metrics=["mean"]), ValueError, "value column"),
    (dict(metrics=[("count", "x")]), ValueError, "takes no value column"),
    (dict(metrics=[("mean", "zz")]), ValueError, "zz"),
    (dict(metrics=[("mean", "x")], bounds={}), ValueError, "bounds"),
    (dict(metrics=[("mean", "x")], bounds={"x": (1.0, 0.0)}), ValueError, "lo <= hi"),
    (dict(metrics=[("mean", "x")], bounds={"x": (0.0, 0.0)}), ValueError, "zero"),
    (dict(metrics=[("sum", "y")], bounds={"y": (0.5, 3)}), ValueError, "integer"),
    (dict(metrics=[("mean", "x")], bounds=[(0, 1)]), TypeError, "bounds"),
    (dict(metrics=[]), ValueError, "empty"),
    (dict(metrics={"a": "count", "b": "count"}, weights=[1]), ValueError, "weights"),
    (dict(metrics=["count"], weights=[-1]), ValueError, "weights"),
    (dict(metrics=["count"], weights={"nope": 1}), ValueError, "weights"),
    (dict(metrics=["count", "count"]), ValueError, "duplicate"),
    (dict(metrics=5), TypeError, "metrics"),
    (dict(metrics=["count"], by="nope"), ValueError, "by"),
    (dict(metrics=["count"], by=3), TypeError, "by"),
    (dict(metrics=["count"], privacy_id="nope"), ValueError, "privacy_id"),
    (dict(metrics=["count"], epsilon=-1.0), ValueError, "epsilon"),
    (dict(metrics=["count"], delta=0.0, domain=None), ValueError, "delta"),
    (dict(metrics=["count"], max_partitions=0), ValueError, "max_partitions"),
]


@pytest.mark.parametrize("kw,exc,word", BAD)
def test_bad_input_names_the_parameter(kw, exc, word) -> None:
    df = _frame(200)
    args = dict(by="g", privacy_id="pid", epsilon=1.0, bounds=BOUNDS, domain=np.arange(12))
    args.update(kw)
    with pytest.raises(exc, match=word):
        dpt.aggregate(df, **args)


def test_bad_values_and_frames() -> None:
    df = _frame(200)
    df.loc[3, "x"] = np.nan  # a NaN value drops its row (issue 36), no error
    dpt.aggregate(df, "g", metrics=[("mean", "x")], epsilon=1.0, bounds=BOUNDS,
                  domain=np.arange(12))
    df["s"] = "a"
    with pytest.raises(TypeError, match="column 's'"):
        dpt.aggregate(df, "g", metrics=[("mean", "s")], epsilon=1.0, bounds={"s": (0, 1)},
                      domain=np.arange(12))
    with pytest.raises(TypeError, match="df"):
        dpt.aggregate(np.zeros(3), "g", metrics=["count"], epsilon=1.0)


def test_the_callers_table_is_not_modified() -> None:
    df = _frame()
    before = df.copy(deep=True)
    dpt.aggregate(df, "g", "pid", metrics=METRICS, epsilon=1.0, delta=1e-6, bounds=BOUNDS,
                  rng=_replay())
    pd.testing.assert_frame_equal(df, before)


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 5),
                          st.floats(-50, 50, allow_nan=False)), min_size=0, max_size=40),
       st.sets(st.sampled_from(METRICS[:2] + [("mean", "x"), ("variance", "x"),
                                              ("std", "x"), ("sum", "x")]), min_size=1),
       st.integers(1, 3), st.integers(1, 3))
def test_any_table_gives_every_metric_for_every_domain_key(rows, mets, k, c) -> None:
    df = pd.DataFrame(rows, columns=["g", "pid", "x"]).astype({"g": object, "pid": np.int64,
                                                             "x": np.float64})
    dom = np.array(["a", "b", "c", "d"], dtype=object)
    rel = dpt.aggregate(df, "g", "pid", metrics=sorted(mets, key=str), epsilon=1.0,
                        bounds={"x": (-10.0, 10.0)}, domain=dom, max_partitions=k,
                        max_per_partition=c, rng=_replay())
    out = rel.to_pandas()
    assert out.index.tolist() == dom.tolist()
    for name, m in rel.metrics.items():
        lo, hi = m.confidence_interval(0.1)
        v = m.values.astype(np.float64)
        assert np.isfinite(v).all() and (lo <= hi).all(), name
        if m.statistic == "mean":  # (its midpoint fallback at N <= 0 may lie outside)
            assert ((-10 <= v) & (v <= 10)).all()
        else:
            assert ((lo <= v) & (v <= hi)).all(), name
        if m.statistic in ("variance", "std"):
            assert ((0 <= v) & (v <= (100.0 if m.statistic == "variance" else 10.0))).all()
