"""dpfast.dask aggregate / variance / std / privacy_id_count / count_distinct: the same
release as one machine, bit for bit (the synchronous scheduler runs the same graph)."""

from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")
pd = pytest.importorskip("pandas")

import dpfast  # noqa: E402
import dpfast.dask as dkd  # noqa: E402
import dpfast.tables as dpt  # noqa: E402

from .helpers import KEY  # noqa: E402


@pytest.fixture(autouse=True)
def _sync():  # type: ignore[no-untyped-def]
    with dask.config.set(scheduler="synchronous"):
        yield


def _replay() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


def _frame(n: int = 6000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.zipf(1.5, n) % 30, "s": rng.choice(["a", "bb"], n),
                         "id": rng.integers(0, 1500, n), "x": rng.normal(2.0, 3.0, n),
                         "v": rng.integers(-3, 9, n)})


METRICS = ["count", "privacy_id_count", ("mean", "x"), ("variance", "x"), ("sum", "v"),
           ("std", "v"), ("sum", "x")]
BOUNDS = {"x": (-4.0, 8.0), "v": (0, 6)}


def _same(a: dpt.TableRelease, b: dpt.TableRelease) -> None:
    ka = a.keys if isinstance(a.keys, tuple) else (a.keys,)
    kb = b.keys if isinstance(b.keys, tuple) else (b.keys,)
    assert [x.tolist() for x in ka] == [x.tolist() for x in kb]
    assert a.values.dtype == b.values.dtype
    np.testing.assert_array_equal(a.values, b.values)
    assert a.event == b.event and a.threshold == b.threshold
    for p, q in zip(a.confidence_interval(0.1), b.confidence_interval(0.1)):
        np.testing.assert_array_equal(p, q)


@pytest.mark.parametrize("nparts", [1, 5])
@pytest.mark.parametrize("domain", [None, "public"])
def test_aggregate_equals_one_machine(nparts: int, domain) -> None:
    df = _frame()
    dom = None if domain is None else np.arange(30)
    kw = dict(metrics=METRICS, epsilon=3.0, delta=1e-6, bounds=BOUNDS, max_partitions=2,
              max_per_partition=3, domain=dom)
    ref = dpt.aggregate(df, "k", "id", rng=_replay(), **kw)
    ddf = dd.from_pandas(df.sample(frac=1, random_state=nparts), npartitions=nparts)
    got = dkd.aggregate(ddf, "k", "id", rng=_replay(), npartitions=3, **kw)
    assert list(got.metrics) == list(ref.metrics) and len(ref) > 3
    for name in ref.metrics:
        _same(got[name], ref[name])
    pd.testing.assert_frame_equal(got.to_pandas(), ref.to_pandas())


def test_two_key_columns_and_no_privacy_id() -> None:
    df = _frame(3000)
    kw = dict(metrics={"n": "count", "m": ("mean", "x")}, epsilon=1.0, bounds=BOUNDS,
              domain=(np.repeat(np.arange(30), 2), np.tile(["a", "bb"], 30)))
    ref = dpt.aggregate(df, ["k", "s"], rng=_replay(), **kw)
    got = dkd.aggregate(dd.from_pandas(df, npartitions=4), ["k", "s"], rng=_replay(), **kw)
    pd.testing.assert_frame_equal(got.to_pandas(), ref.to_pandas())


def test_single_statistics_equal_one_machine() -> None:
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=4)
    kw = dict(epsilon=2.0, delta=1e-6, max_partitions=2, max_per_partition=2)
    _same(dkd.variance(ddf, "k", "x", "id", bounds=(-4.0, 8.0), rng=_replay(), **kw),
          dpt.variance(df.x, df.k, df.id, bounds=(-4.0, 8.0), rng=_replay(), **kw))
    _same(dkd.std(ddf, "k", "v", "id", bounds=(0, 6), rng=_replay(), **kw),
          dpt.std(df.v, df.k, df.id, bounds=(0, 6), rng=_replay(), **kw))
    _same(dkd.privacy_id_count(ddf, "k", "id", epsilon=2.0, delta=1e-6, max_partitions=2,
                               rng=_replay()),
          dpt.privacy_id_count(df.k, df.id, epsilon=2.0, delta=1e-6, max_partitions=2,
                               rng=_replay()))
    dom = np.arange(30)
    for d in (dom, None):
        ref = dpt.count_distinct(df.v, df.k, df.id, epsilon=5.0, delta=1e-6, domain=d,
                                 max_partitions=2, max_per_partition=3, rng=_replay())
        got = dkd.count_distinct(ddf, "k", "v", "id", epsilon=5.0, delta=1e-6, domain=d,
                                 max_partitions=2, max_per_partition=3, rng=_replay(),
                                 npartitions=2)
        _same(got, ref)


def test_one_charge_fresh_ids_and_errors() -> None:
    df = _frame(2000)
    ddf = dd.from_pandas(df, npartitions=2)
    budget = dpfast.Budget(epsilon=2.0, accounting="basic")
    kw = dict(metrics=["count", ("mean", "x")], epsilon=1.0, bounds=BOUNDS,
              domain=np.arange(30))
    a = dkd.aggregate(ddf, "k", "id", rng=KEY, budget=budget, note="d", **kw)
    b = dkd.aggregate(ddf, "k", "id", rng=KEY, **kw)
    assert [h.note for h in budget.history()] == ["d"]
    assert a.release_id != b.release_id
    with pytest.raises(ValueError, match="nope"):
        dkd.aggregate(ddf, "k", "id", metrics=[("mean", "nope")], epsilon=1.0,
                      bounds={"nope": (0, 1)}, domain=np.arange(30))
    with pytest.raises(ValueError, match="bounds"):
        dkd.aggregate(ddf, "k", "id", metrics=[("mean", "x")], epsilon=1.0,
                      domain=np.arange(30))
    with pytest.raises(TypeError, match="numbers"):
        dkd.aggregate(ddf, "k", "id", metrics=[("mean", "s")], epsilon=1.0,
                      bounds={"s": (0, 1)}, domain=np.arange(30))
    with pytest.raises(TypeError, match="dask DataFrame"):
        dkd.aggregate(df, "k", "id", metrics=["count"], epsilon=1.0, domain=np.arange(30))
    with pytest.raises(ValueError, match="npartitions"):
        dkd.count_distinct(ddf, "k", "v", "id", epsilon=1.0, domain=np.arange(30),
                           npartitions=0)


def test_frequent_bounding_equals_one_machine() -> None:
    """``bounding="frequent"``: aggregate, the single statistics and count_distinct are
    bit-identical to one machine, and differ from the uniform policy."""
    df = _frame()
    ddf = dd.from_pandas(df.sample(frac=1, random_state=2), npartitions=3)
    kw = dict(epsilon=3.0, delta=1e-6, max_partitions=2, bounding="frequent")
    ref = dpt.aggregate(df, "k", "id", metrics=METRICS, bounds=BOUNDS, max_per_partition=3,
                        rng=_replay(), **kw)
    got = dkd.aggregate(ddf, "k", "id", metrics=METRICS, bounds=BOUNDS, max_per_partition=3,
                        rng=_replay(), npartitions=2, **kw)
    pd.testing.assert_frame_equal(got.to_pandas(), ref.to_pandas())
    uni = dpt.aggregate(df, "k", "id", metrics=METRICS, bounds=BOUNDS, max_per_partition=3,
                        rng=_replay(), **{**kw, "bounding": "uniform"})
    assert not ref.to_pandas().equals(uni.to_pandas())
    _same(dkd.variance(ddf, "k", "x", "id", bounds=(-4.0, 8.0), rng=_replay(), **kw),
          dpt.variance(df.x, df.k, df.id, bounds=(-4.0, 8.0), rng=_replay(), **kw))
    _same(dkd.std(ddf, "k", "v", "id", bounds=(0, 6), rng=_replay(), **kw),
          dpt.std(df.v, df.k, df.id, bounds=(0, 6), rng=_replay(), **kw))
    _same(dkd.privacy_id_count(ddf, "k", "id", rng=_replay(), **kw),
          dpt.privacy_id_count(df.k, df.id, rng=_replay(), **kw))
    _same(dkd.count_distinct(ddf, "k", "v", "id", max_per_partition=3, rng=_replay(), **kw),
          dpt.count_distinct(df.v, df.k, df.id, max_per_partition=3, rng=_replay(), **kw))


@pytest.mark.parametrize("rule", ["laplace", "gaussian", "geometric", "weighted_gaussian"])
def test_selection_rule_equals_one_machine(rule: str) -> None:
    df = _frame()
    ddf = dd.from_pandas(df, npartitions=3)
    kw = dict(epsilon=2.0, delta=1e-6, max_partitions=2, selection=rule)
    _same(dkd.privacy_id_count(ddf, "k", "id", rng=_replay(), **kw),
          dpt.privacy_id_count(df["k"], df["id"], rng=_replay(), **kw))
    _same(dkd.variance(ddf, "k", "x", "id", bounds=(-4.0, 8.0), rng=_replay(), **kw),
          dpt.variance(df["x"], df["k"], df["id"], bounds=(-4.0, 8.0), rng=_replay(), **kw))
    std = dkd.std(ddf, "k", "v", "id", bounds=(0, 6), rng=_replay(), **kw)
    assert rule in std.selection.policy


RANKS = ["count", ("median", "x"), ("quantile", "v", 0.9), ("min", "x"), ("max", "v"),
         "privacy_id_count", ("mean", "x")]


@pytest.mark.parametrize("nparts", [1, 5])
@pytest.mark.parametrize("domain", [None, "public"])
@pytest.mark.parametrize("policy", ["uniform", "frequent"])
def test_rank_metrics_equal_one_machine(nparts: int, domain, policy: str) -> None:
    """Median / quantile / min / max in a dask aggregate: the workers' (key, slot) tables
    of the rows they kept, summed on the driver, give the one-machine release bit for bit
    (any partitioning and row order, either bounding policy)."""
    df = _frame()
    dom = None if domain is None else np.arange(30)
    kw = dict(metrics=RANKS, epsilon=3.0, delta=1e-6, bounds=BOUNDS, max_partitions=2,
              max_per_partition=3, domain=dom, bounding=policy,
              candidates={"x": np.linspace(-4.0, 8.0, 49)})
    ref = dpt.aggregate(df, "k", "id", rng=_replay(), **kw)
    ddf = dd.from_pandas(df.sample(frac=1, random_state=nparts), npartitions=nparts)
    got = dkd.aggregate(ddf, "k", "id", rng=_replay(), npartitions=3, **kw)
    assert len(ref) > 3
    for name in ("median_x", "q0.9_v", "min_x", "max_v"):
        a, b = got[name], ref[name]
        assert a.keys.tolist() == b.keys.tolist() and a.values.dtype == b.values.dtype
        np.testing.assert_array_equal(a.values, b.values)
        assert a.event == b.event and a.epsilon_per_key == b.epsilon_per_key
    pd.testing.assert_frame_equal(got.to_pandas(), ref.to_pandas())


def test_rank_metrics_without_privacy_ids_equal_one_machine() -> None:
    df = _frame(3000)
    kw = dict(metrics={"m": ("median", "x"), "n": "count"}, epsilon=1.0, bounds=BOUNDS,
              domain=(np.repeat(np.arange(30), 2), np.tile(["a", "bb"], 30)))
    ref = dpt.aggregate(df, ["k", "s"], rng=_replay(), **kw)
    got = dkd.aggregate(dd.from_pandas(df, npartitions=4), ["k", "s"], rng=_replay(), **kw)
    pd.testing.assert_frame_equal(got.to_pandas(), ref.to_pandas())


def test_count_distinct_drops_null_values_as_one_machine_does() -> None:
    """A NULL value (NaN, None) leaves its row on the cluster as on one machine
    (COUNT(DISTINCT x) ignores NULLs).  Closes: the old Dask count_distinct read the value
    column after its charge and failed there on a missing value ("values contains missing
    values": a failure that depended on the rows, after the charge)."""
    df = _frame(3000)
    df["f"] = (df.v * 0.5).where(df.index % 7 != 0)  # NaN in every seventh row
    df["o"] = df.s.astype(object).where(df.index % 5 != 0, None)  # None in every fifth
    ddf = dd.from_pandas(df, npartitions=3)
    budget = dpfast.Budget(epsilon=10.0, delta=1e-4, accounting="basic")
    kw = dict(epsilon=2.0, delta=1e-6, max_partitions=2, max_per_partition=2)
    for col in ("f", "o"):
        for dom in (np.arange(30), None):
            got = dkd.count_distinct(ddf, "k", col, "id", domain=dom, rng=_replay(),
                                     budget=budget, npartitions=2, **kw)
            _same(got, dpt.count_distinct(df[col], df.k, df.id, domain=dom, rng=_replay(),
                                          **kw))
    assert [h.status for h in budget.history()] == ["charged"] * 4


def test_count_distinct_validates_before_it_charges() -> None:
    """Dask computes the partials (validating the rows) before the charge, as on one
    machine: a value column the release cannot read fails with nothing charged.  Closes:
    the old Dask count_distinct charged first and then failed on the rows (a failed
    ledger row, and the budget spent, for a release that never ran)."""
    df = _frame(600)
    df["bad"] = pd.Series(np.full(len(df), 1 + 1j))  # complex: not a value type
    ddf = dd.from_pandas(df, npartitions=2)
    budget = dpfast.Budget(epsilon=5.0, accounting="basic")
    with pytest.raises(TypeError, match="values"):
        dkd.count_distinct(ddf, "k", "bad", "id", epsilon=1.0, domain=np.arange(30),
                           rng=_replay(), budget=budget)
    assert budget.history() == [] and budget.spent().epsilon == 0
    with pytest.raises(TypeError, match="value must be a column name"):
        dkd.count_distinct(ddf, "k", 3, "id", epsilon=1.0, domain=np.arange(30))
    with pytest.raises(ValueError, match="value column 'nope'"):
        dkd.count_distinct(ddf, "k", "nope", "id", epsilon=1.0, domain=np.arange(30))
