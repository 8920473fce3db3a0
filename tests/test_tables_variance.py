"""dpfast.tables.variance / std: count, centred sum and centred sum of squares over the
same kept rows, a third of the budget each."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpfast
from dpfast import tables as dpt
from dpfast.accounting import events as ev
from tests.helpers import KEY

pd = pytest.importorskip("pandas")


def _replay() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


def _data(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 10, n), rng.integers(0, 300, n), rng.normal(3.0, 1.5, n)


def test_variance_and_std_are_the_one_metric_aggregate() -> None:
    keys, ids, x = _data()
    kw = dict(epsilon=1.0, domain=np.arange(10), max_partitions=2, max_per_partition=3)
    v = dpt.variance(x, keys, ids, bounds=(0.0, 6.0), rng=_replay(), **kw)
    df = pd.DataFrame({"key": keys, "id": ids, "values": x})
    agg = dpt.aggregate(df, "key", "id", metrics={"variance": ("variance", "values")},
                        bounds={"values": (0.0, 6.0)}, rng=_replay(), **kw)
    np.testing.assert_array_equal(v.values, agg["variance"].values)
    assert v.statistic == "variance" and v.event == agg.event
    s = dpt.std(x, keys, ids, bounds=(0.0, 6.0), rng=_replay(), **kw)
    np.testing.assert_array_equal(s.values, np.sqrt(v.values))
    lo, hi = v.confidence_interval(0.1)
    slo, shi = s.confidence_interval(0.1)
    np.testing.assert_array_equal(slo, np.sqrt(lo))
    np.testing.assert_array_equal(shi, np.sqrt(hi))
    assert s.to_pandas().columns.tolist() == ["std", "ci_low", "ci_high"]


def test_exact_at_huge_epsilon() -> None:
    keys, ids, x = _data()
    k = int(pd.Series(keys).groupby(ids).nunique().max())
    c = int(pd.DataFrame({"k": keys, "i": ids}).groupby(["i", "k"]).size().max())
    v = dpt.variance(x, keys, ids, bounds=(0.0, 6.0), epsilon=1e7, domain=np.arange(10),
                     max_partitions=k, max_per_partition=c, rng=_replay())
    want = pd.Series(np.clip(x, 0.0, 6.0)).groupby(keys).var(ddof=0).to_numpy()
    np.testing.assert_allclose(v.values, want, rtol=1e-5)
    yi = (np.round(x) % 7).astype(np.int64)
    s = dpt.std(yi, keys, ids, bounds=(0, 5), epsilon=1e7, domain=np.arange(10),
                max_partitions=k, max_per_partition=c, rng=_replay())
    want = pd.Series(np.clip(yi, 0, 5)).groupby(keys).std(ddof=0).to_numpy()
    np.testing.assert_allclose(s.values, want, rtol=1e-5)


def test_budget_thirds_sensitivities_and_one_charge() -> None:
    keys, ids, x = _data()
    k, c, eps = 2, 3, 0.9
    budget = dpfast.Budget(epsilon=eps, accounting="basic")
    v = dpt.variance(x, keys, ids, bounds=(-1.0, 7.0), epsilon=eps, domain=np.arange(10),
                     max_partitions=k, max_per_partition=c, rng=_replay(), budget=budget,
                     note="var")
    assert isinstance(v.event, ev.Composed) and len(v.event.events) == 3
    assert [h.note for h in budget.history()] == ["var"]  # one charge, accepted at eps
    # the released law is the centred square's: Δ1 = k c ((hi - lo)/2)², at eps / 3
    assert v.law.kind == "laplace"
    assert v.law.scale == pytest.approx(k * c * 16.0 / (eps / 3), rel=1e-3)
    assert v.sensitivity["l1"] == k * c * 16.0
    with pytest.raises(dpfast.BudgetExceededError):
        dpt.variance(x, keys, ids, bounds=(-1.0, 7.0), epsilon=eps, domain=np.arange(10),
                     rng=_replay(), budget=budget)


def test_intervals_are_conservative_and_hold_the_estimate() -> None:
    r = np.random.default_rng(7)
    nk, per = 600, 40
    keys = np.repeat(np.arange(nk), per)
    x = r.integers(0, 11, nk * per)
    v = dpt.variance(x, keys, bounds=(0, 10), epsilon=1.0, domain=np.arange(nk),
                     rng=_replay())
    truth = pd.Series(x.astype(float)).groupby(keys).var(ddof=0).to_numpy()
    lo, hi = v.confidence_interval(0.1)
    assert ((lo <= v.values) & (v.values <= hi)).all()
    assert ((0 <= lo) & (hi <= 25.0)).all()
    cover = np.mean((lo <= truth) & (truth <= hi))
    assert cover >= 0.9  # conservative (union bound over three parts, box extremes)
    acc = v.accuracy(dict(zip(range(nk), truth)), alpha=0.1)
    assert acc.coverage == cover and math.isnan(acc.expected_mae)


def test_spread_of_the_estimate_matches_the_exact_noise_laws() -> None:
    """Values ±2 around the midpoint (mean 0, variance 4): the estimate's variance over
    keys is, to first order, Var(Z2)/n² + m2² Var(ZN)/n² from the exact part laws."""
    nk, n = 5000, 200
    keys = np.repeat(np.arange(nk), n)
    x = np.tile(np.array([2.0, 6.0]), nk * n // 2)
    df = pd.DataFrame({"key": keys, "x": x})
    rel = dpt.aggregate(df, "key", metrics=[("variance", "x")], epsilon=1.0,
                        bounds={"x": (0.0, 8.0)}, domain=np.arange(nk), rng=_replay())
    est = rel["variance_x"].values
    s2, sn = rel.laws["csq:x"].std(), rel.laws["count"].std()
    predicted = (s2 ** 2 + 16.0 * sn ** 2) / n ** 2
    assert abs(np.mean(est) - 4.0) < 4 * math.sqrt(predicted / nk) + 1e-3
    assert np.var(est) / predicted == pytest.approx(1.0, abs=0.07)


def test_square_part_noise_follows_the_grid_laplace_law() -> None:
    n = 100_000
    keys = np.arange(n)
    x = (keys % 17) * 0.5  # exact squares around the midpoint 4: multiples of 1/4
    rel = dpt.aggregate(pd.DataFrame({"key": keys, "x": x}), "key",
                        metrics=[("variance", "x")], epsilon=1.0, bounds={"x": (0.0, 8.0)},
                        domain=keys, rng=_replay())
    law = rel.laws["csq:x"]
    assert law.kind == "laplace" and law.granularity <= 0.25
    z = rel.noisy_parts["csq:x"] - (x - 4.0) ** 2
    se = np.std(np.abs(z)) / math.sqrt(n)
    assert abs(np.mean(np.abs(z)) - law.mean_abs()) < 4 * se
    assert abs(np.mean(z)) < 4 * law.std() / math.sqrt(n)
    assert np.all(np.abs(z / law.granularity - np.round(z / law.granularity)) < 1e-9)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6),
                          st.floats(-1e6, 1e6, allow_nan=False)), max_size=30),
       st.floats(-100, 100), st.floats(0.001, 100))
def test_any_input_gives_a_variance_in_its_range(rows, lo, width) -> None:
    arr = list(zip(*rows)) if rows else [(), (), ()]
    keys = np.array(arr[0], np.int64)
    ids = np.array(arr[1], np.int64)
    x = np.array(arr[2], np.float64)
    v = dpt.variance(x, keys, ids, bounds=(lo, lo + width), epsilon=1.0,
                     domain=np.arange(4), max_partitions=2, max_per_partition=2,
                     rng=_replay())
    cap = (Fraction(lo + width) - Fraction(lo)) ** 2 / 4
    assert len(v) == 4 and ((0 <= v.values) & (v.values <= float(cap))).all()
    lo_, hi_ = v.confidence_interval(0.05)
    assert ((lo_ <= v.values) & (v.values <= hi_)).all()


BAD = [
    (dict(bounds=(1.0, 0.0)), ValueError, "lo <= hi"),
    (dict(bounds=(2.0, 2.0)), ValueError, "zero sensitivity"),
    (dict(bounds=None), TypeError, "bounds"),
    (dict(bounds=(0.0, math.inf)), ValueError, "finite"),
    # a NaN value drops its row (issue 36): tests/test_tables_values_policy.py
    (dict(values=np.array(["a", "b", "c"])), TypeError, "values"),
    (dict(values=np.array([1.0, 2.0])), ValueError, "values"),
    (dict(epsilon=0.0), ValueError, "epsilon"),
    (dict(max_per_partition=0), ValueError, "max_per_partition"),
    (dict(dropna=1), TypeError, "dropna"),
    (dict(domain=None, delta=0.0), ValueError, "delta"),
]


@pytest.mark.parametrize("fn", [dpt.variance, dpt.std])
@pytest.mark.parametrize("kw,exc,word", BAD)
def test_bad_input_names_the_parameter(fn, kw, exc, word) -> None:
    args = dict(values=np.array([1.0, 2.0, 3.0]), keys=np.array([0, 1, 1]),
                privacy_ids=np.array([5, 6, 7]), bounds=(0.0, 4.0), epsilon=1.0,
                domain=np.arange(2))
    args.update(kw)
    with pytest.raises(exc, match=word):
        fn(**args)


def test_inputs_are_not_modified_and_dropna() -> None:
    keys, ids, x = _data(500)
    kc, ic, xc = keys.copy(), ids.copy(), x.copy()
    dpt.variance(x, keys, ids, bounds=(0.0, 1.0), epsilon=1.0, domain=np.arange(10),
                 rng=_replay())
    for a, b in ((keys, kc), (ids, ic), (x, xc)):
        np.testing.assert_array_equal(a, b)
    kk = pd.Series([0.0, np.nan, 1.0], name="k")
    v = dpt.variance(np.array([1.0, 2.0, 3.0]), kk, bounds=(0.0, 4.0), epsilon=1.0,
                     domain=[0.0, 1.0], dropna=True, rng=_replay())
    assert len(v) == 2 and v.to_pandas().index.name == "k"
