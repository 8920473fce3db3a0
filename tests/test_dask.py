"""dpfast.dask: the same release on a cluster as on one machine (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import dpfast  # noqa: E402
import dpfast.dask as dkd  # noqa: E402
import dpfast.tables as dpt  # noqa: E402
from dpfast.dask import _shuffle as SH  # noqa: E402
from dpfast.tables import bounding, keynoise  # noqa: E402
from dpfast.tables import groupby as GB  # noqa: E402
from dpfast.tables import run as TR  # noqa: E402
from dpfast.tables import spec as TS  # noqa: E402

from .helpers import KEY, SUBPROCESS_TIMEOUT_S  # noqa: E402

ENV = "DPFAST_TEST_DASK_KEY"
RID = (1 << 127) + 777  # a release id, fixed where a test compares with one machine


def _replay() -> dpfast.Generator:
    """A generator rebuilt from the fixed key: replays a release (a raw key never does)."""
    return dpfast.default_rng(KEY)


def _frame(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.zipf(1.5, n) % 40, "id": rng.integers(0, 500, n),
                         "v": rng.integers(-3, 9, n),
                         "s": rng.choice(np.array(["a", "bb", "é"]), n)})


def _same(a: dpt.TableRelease, b: dpt.TableRelease) -> None:
    ka = a.keys if isinstance(a.keys, tuple) else (a.keys,)
    kb = b.keys if isinstance(b.keys, tuple) else (b.keys,)
    assert [x.tolist() for x in ka] == [x.tolist() for x in kb]
    assert a.values.dtype == b.values.dtype
    np.testing.assert_array_equal(a.values, b.values)
    assert a.event == b.event and a.threshold == b.threshold


@pytest.fixture(scope="module")
def client():  # type: ignore[no-untyped-def]
    import os

    import dask

    os.environ[ENV] = KEY.hex()  # inherited by the worker processes started below
    with dask.config.set({"distributed.comm.timeouts.connect": f"{SUBPROCESS_TIMEOUT_S}s",
                          "distributed.deploy.lost-worker-timeout": f"{SUBPROCESS_TIMEOUT_S}s"}):
        # generous start-up time: CI and shared machines can be slow to spawn workers
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, dashboard_address=":0",
                                           timeout=SUBPROCESS_TIMEOUT_S)
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()
        os.environ.pop(ENV, None)


@pytest.mark.parametrize("nparts", [1, 4, 16, 30])
def test_count_selection_equals_tables_any_partitioning_and_order(nparts: int) -> None:
    df = _frame()
    ref = dpt.count(df.k, df.id, epsilon=2.0, delta=1e-5, max_partitions=2, rng=_replay())
    shuffled = df.sample(frac=1, random_state=nparts)
    got = dkd.count(dd.from_pandas(shuffled, npartitions=nparts), "k", "id", epsilon=2.0,
                    delta=1e-5, max_partitions=2, rng=_replay())
    _same(got, ref)
    assert len(ref) > 3
    got = dkd.count(dd.from_pandas(shuffled, npartitions=nparts), "k", "id", epsilon=2.0,
                    delta=1e-5, max_partitions=2, rng=_replay(), npartitions=3)
    _same(got, ref)  # any number of partitions after the split by id


@pytest.mark.parametrize("nparts,nout", [(1, None), (1, 3), (4, None), (4, 1)])
def test_string_keys_take_the_pandas_shuffle_and_equal_tables(nparts: int,
                                                               nout: int | None) -> None:
    """A string key column: the pandas-piece shuffle (one output: the splits themselves,
    no getitem tasks; several: one piece per input and output)."""
    df = _frame(seed=5)
    ref = dpt.count(df.s, df.id, epsilon=2.0, delta=1e-5, max_partitions=2, rng=_replay())
    d = dd.from_pandas(df.sample(frac=1, random_state=1), npartitions=nparts)
    _same(dkd.count(d, "s", "id", epsilon=2.0, delta=1e-5, max_partitions=2, rng=_replay(),
                    npartitions=nout), ref)


def test_shuffle_partitions_default() -> None:
    """As many outputs as inputs up to 8, a third beyond (at least 8); ``npartitions``
    wins.  (16 and 30 inputs above: 8 and 10 outputs, the same release.)"""
    got = [SH.shuffle_partitions(n, None) for n in (1, 2, 8, 9, 16, 24, 30, 50, 300)]
    assert got == [1, 2, 8, 8, 8, 8, 10, 17, 100]
    assert SH.shuffle_partitions(50, 3) == 3
    # with the scheduler's threads known: at most twice the threads, never more than about
    # three inputs per output
    two = [SH.shuffle_partitions(n, None, 2) for n in (1, 2, 8, 9, 16, 24, 30, 50, 300)]
    assert two == [1, 2, 4, 4, 6, 8, 10, 17, 100]
    assert [SH.shuffle_partitions(n, None, 1) for n in (1, 2, 8, 50)] == [1, 2, 3, 17]
    assert [SH.shuffle_partitions(n, None, 64) for n in (8, 24, 300)] == [8, 8, 100]
    assert SH.shuffle_partitions(50, 3, 2) == 3


def test_scheduler_threads(client) -> None:  # type: ignore[no-untyped-def]
    import dask

    assert SH.scheduler_threads() == 2  # the module's client: two one-thread workers
    with dask.config.set(scheduler="sync"):
        assert SH.scheduler_threads() == 1
    with dask.config.set(scheduler="threads"):
        assert SH.scheduler_threads() is None  # the local pool: the input rule


@pytest.mark.parametrize("selection,bounding,noise", [("geometric", "frequent", None),
                                                      ("laplace", "uniform", None),
                                                      ("gaussian", "frequent", "gaussian"),
                                                      ("weighted_gaussian", "uniform", None)])
def test_selection_and_bounding_policies_equal_tables(selection: str, bounding: str,
                                                      noise: str | None) -> None:
    """Every key-selection rule and bounding policy: bit-identical to one machine."""
    df = _frame(seed=4)
    kw = dict(epsilon=2.0, delta=1e-5, max_partitions=2, max_per_partition=2,
              selection=selection, bounding=bounding, noise=noise, rng=None)
    for stat in ("count", "mean"):
        if stat == "count":
            ref = dpt.count(df.k, df.id, **{**kw, "rng": _replay()})
            got = dkd.count(dd.from_pandas(df, npartitions=3), "k", "id",
                            **{**kw, "rng": _replay()})
        else:
            ref = dpt.mean(df.v, df.k, df.id, bounds=(-3, 8), **{**kw, "rng": _replay()})
            got = dkd.mean(dd.from_pandas(df, npartitions=3), "k", "v", "id",
                           bounds=(-3, 8), **{**kw, "rng": _replay()})
        _same(got, ref)
        assert got.selection == ref.selection and got.selection.policy == selection
        assert len(ref) >= 3  # not trivially empty


def test_sum_mean_domain_multicolumn_and_no_ids() -> None:
    df = _frame(seed=1)
    dom = (np.arange(6).repeat(3), np.tile(np.array(["a", "bb", "é"]), 6))
    d4 = dd.from_pandas(df.sample(frac=1, random_state=3), npartitions=4)
    for fn, dfn in ((dpt.sum, dkd.sum), (dpt.mean, dkd.mean)):
        ref = fn(df.v, (df.k, df.s), df.id, bounds=(-2, 6), epsilon=1.0, domain=dom,
                 max_partitions=3, max_per_partition=2, rng=_replay())
        got = dfn(d4, ["k", "s"], "v", "id", bounds=(-2, 6), epsilon=1.0, domain=dom,
                  max_partitions=3, max_per_partition=2, rng=_replay())
        _same(got, ref)
    ref = dpt.count(df.s, epsilon=0.5, domain=np.array(["a", "é", "zz"]), rng=_replay())
    got = dkd.count(d4, "s", epsilon=0.5, domain=np.array(["a", "é", "zz"]), rng=_replay())
    _same(got, ref)
    ref = dpt.sum(df.v, df.k, df.id, bounds=(0, 5), rho=0.5, domain=np.arange(10), rng=_replay())
    got = dkd.sum(d4, "k", "v", "id", bounds=(0, 5), rho=0.5, domain=np.arange(10), rng=_replay())
    _same(got, ref)


def test_budget_charged_once_after_the_partials() -> None:
    """The one pipeline: the cluster computes the exact partials (validating the rows)
    *before* the charge, as on one machine; a refusal releases nothing and adds no ledger
    row."""
    df = _frame(500)
    d = dd.from_pandas(df, npartitions=2)
    budget = dpfast.Budget(epsilon=1.0, delta=1e-5, accounting="basic")
    rel = dkd.count(d, "k", "id", epsilon=0.6, delta=1e-6, rng=_replay(), budget=budget,
                    note="d1")
    h = budget.history()
    assert len(h) == 1 and h[0].event == rel.event and h[0].note == "d1"
    with pytest.raises(dpfast.BudgetExceededError):
        dkd.count(d, "k", "id", epsilon=0.6, delta=1e-6, rng=_replay(), budget=budget)
    assert len(budget.history()) == 1
    assert len(rel) > 0


def test_bad_rows_fail_before_the_charge() -> None:
    """A failure of the inputs found while computing the partials (here a value column of
    strings hidden behind an object dtype) raises before anything is charged."""
    df = _frame(200)
    df["v"] = df["v"].astype(object)
    df.loc[3, "v"] = "x"
    d = dd.from_pandas(df, npartitions=2)
    budget = dpfast.Budget(epsilon=1.0, delta=1e-5, accounting="basic")
    with pytest.raises(TypeError):
        dkd.sum(d, "k", "v", "id", bounds=(0, 5), epsilon=0.5, domain=np.arange(10),
                rng=_replay(), budget=budget)
    assert budget.history() == []


def test_bad_input_names_the_parameter() -> None:
    d = dd.from_pandas(_frame(100), npartitions=2)
    with pytest.raises(ValueError, match="key column 'nope'"):
        dkd.count(d, "nope", epsilon=1.0, domain=[1])
    with pytest.raises(ValueError, match="privacy_id column"):
        dkd.count(d, "k", "who", epsilon=1.0, domain=[1])
    with pytest.raises(TypeError, match="key must be"):
        dkd.count(d, 3, epsilon=1.0, domain=[1])
    with pytest.raises(TypeError, match="ddf must be a dask DataFrame"):
        dkd.count(_frame(10), "k", epsilon=1.0, domain=[1])
    with pytest.raises(TypeError, match="value column 's' must hold numbers"):
        dkd.sum(d, "k", "s", bounds=(0, 1), epsilon=1.0, domain=[1])
    with pytest.raises(ValueError, match="delta"):
        dkd.count(d, "k", epsilon=1.0)  # selection needs delta > 0
    with pytest.raises(ValueError, match="npartitions"):
        dkd.count(d, "k", epsilon=1.0, domain=[1], npartitions=0)
    with pytest.raises(ValueError, match="environment variable"):
        dkd.count(d, "k", epsilon=1.0, domain=[1], rng=dkd.key_from_env("DPFAST_NO_SUCH"))


def test_local_cluster_two_worker_processes(client, tmp_path,  # type: ignore[no-untyped-def]
                                            monkeypatch) -> None:
    df = _frame(2000, seed=5)
    ref = dpt.count(df.k, df.id, epsilon=1.0, delta=1e-5, max_partitions=3, rng=_replay())
    d = dd.from_pandas(df.sample(frac=1, random_state=9), npartitions=4)
    got = dkd.count(d, "k", "id", epsilon=1.0, delta=1e-5, max_partitions=3, rng=_replay())
    _same(got, ref)
    workers = client.run(lambda: __import__("os").getpid())
    assert len(set(workers.values())) == 2  # two worker processes did the work
    # issue 22 item 1: one worker key, two releases -> independent noise (fresh ids)
    wk = dkd.key_from_env(ENV)
    dom = dict(domain=np.arange(40), epsilon=1.0)
    r1 = dkd.count(d, "k", "id", rng=wk, **dom)
    r2 = dkd.count(d, "k", "id", rng=wk, **dom)
    assert r1.release_id != r2.release_id
    assert (r1.values != r2.values).sum() > 25
    # with the driver's fresh id fixed: the release of (key, id) on one machine, with keys
    # loaded on the workers from the environment and from a file
    monkeypatch.setattr(keynoise, "fresh_release_id", lambda: RID)
    rep = keynoise.keyed_generator
    got = dkd.count(d, "k", "id", epsilon=1.0, delta=1e-5, max_partitions=3, rng=wk)
    _same(got, dpt.count(df.k, df.id, epsilon=1.0, delta=1e-5, max_partitions=3,
                         rng=rep(KEY, RID)))
    assert got.release_id == RID
    path = tmp_path / "key"
    path.write_bytes(KEY)
    got = dkd.mean(d, "k", "v", "id", bounds=(-3, 8), epsilon=1.0, delta=1e-5,
                   rng=dkd.key_from_file(path))
    _same(got, dpt.mean(df.v, df.k, df.id, bounds=(-3, 8), epsilon=1.0, delta=1e-5,
                        rng=rep(KEY, RID)))
    # arrays on the cluster, the key loaded by the workers; the graph computed twice (its
    # tasks run again, on any worker) reproduces its own noise
    import dask.array as da

    x = np.arange(150_000, dtype=np.int64).reshape(300, 500)
    lazy = dkd.discrete_laplace(da.from_array(x, chunks=(70, 130)), 4.0, rng=wk)
    assert KEY not in __import__("pickle").dumps(dict(lazy.__dask_graph__()))
    first = lazy.compute()
    np.testing.assert_array_equal(lazy.compute(), first)
    np.testing.assert_array_equal(first, dpfast.discrete_laplace(x, 4.0, rng=rep(KEY, RID)))
    monkeypatch.undo()
    other = dkd.discrete_laplace(da.from_array(x, chunks=(70, 130)), 4.0, rng=wk).compute()
    assert np.mean(other != first) > 0.5  # a second release with the worker key: fresh


def test_worker_key_carries_no_secret(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pickle

    path = tmp_path / "key.hex"
    path.write_text(KEY.hex() + "\n")
    wk = dkd.key_from_file(path)
    assert wk.load() == KEY
    blob = pickle.dumps(wk)
    assert KEY not in blob and KEY.hex().encode() not in blob
    (tmp_path / "bad").write_bytes(b"short")
    with pytest.raises(ValueError, match="32-byte key"):
        dkd.key_from_file(tmp_path / "bad").load()


def test_float_sums_and_means_equal_tables_bit_for_bit() -> None:
    """Issue 22 item 2: float values are summed as exact fixed-point integers, so any
    partitioning and row order of a cluster releases what one machine releases."""
    df = _frame(4000, seed=7)
    r = np.random.default_rng(8)
    df["f"] = r.uniform(-1.0, 1.0, len(df)) * 2.0 ** r.integers(-30, 3, len(df))
    dom = np.arange(40)
    for nparts in (1, 5):
        d = dd.from_pandas(df.sample(frac=1, random_state=nparts), npartitions=nparts)
        for fn, dfn in ((dpt.sum, dkd.sum), (dpt.mean, dkd.mean)):
            # a large epsilon: a grid step below the last bit of a float64 sum
            ref = fn(df.f, df.k, df.id, bounds=(-0.75, 2.0), epsilon=1024.0, domain=dom,
                     max_partitions=2, max_per_partition=3, rng=_replay())
            got = dfn(d, "k", "f", "id", bounds=(-0.75, 2.0), epsilon=1024.0, domain=dom,
                      max_partitions=2, max_per_partition=3, rng=_replay())
            _same(got, ref)
        ref = dpt.sum(df.f, df.k, bounds=(-1.0, 1.0), epsilon=2.0, delta=1e-6,
                      rng=_replay())
        got = dkd.sum(d, "k", "f", bounds=(-1.0, 1.0), epsilon=2.0, delta=1e-6,
                      rng=_replay())
        _same(got, ref)


def test_integer_sum_never_overflows_and_equals_tables() -> None:
    """Issue 36 channel 1 (was issue 22 item 4, which raised OverflowError after the charge
    from 1024 rows of 2**52 on: a row-count oracle): the partials are exact two-word
    totals, saturated at 2**62 before the noise, on the cluster as on one machine."""
    import dask

    b = 2 ** 52
    for n in (1000, 4800):
        df = pd.DataFrame({"k": np.zeros(n, np.int64), "person": np.arange(n),
                           "v": np.full(n, b, np.int64)})
        kw = dict(bounds=(0, b), epsilon=32.0, domain=[0])
        ref = dpt.sum(df.v, df.k, df.person, rng=_replay(), **kw)
        with dask.config.set(scheduler="synchronous"):
            got = dkd.sum(dd.from_pandas(df, npartitions=8), "k", "v", "person",
                          rng=_replay(), **kw)
        _same(got, ref)
    # the reduction of the partials is exact in two words (no wrap, no error)
    spec = TS.ReleaseSpec.make([TS.StatSpec("sum", "v")], bounds=(0, b), epsilon=32.0,
                               domain=[0])
    plan = GB.plan_of("sum", spec, TR.Rows(np.zeros(1), None, np.zeros(1, np.int64)))
    parts = pd.DataFrame({"k": [0, 0], GB._COUNT: [1, 1], GB._UNITS: [1, 1],
                          GB._SUM_HI: [1 << 30, 1 << 30], GB._SUM_LO: [0, 0]})
    _, agg = plan.merge([(parts, 2)], TR.Columns(("k",)))
    assert agg.sums.exact(0) == 2 ** 63


def test_nan_and_inf_rows_follow_the_tables_policy() -> None:
    """Issue 36 channel 1: NaN values / keys / ids drop their rows and ±inf values are
    clamped on the cluster exactly as in dpfast.tables (no error after the charge)."""
    import dask

    df = _frame(600)
    df["f"] = df["v"].astype(np.float64)
    df["kf"] = df["k"].astype(np.float64)
    df["idf"] = df["id"].astype(np.float64)
    df.loc[3, "f"] = np.nan
    df.loc[4, "f"] = np.inf
    df.loc[5, "f"] = -np.inf
    df.loc[6, "kf"] = np.nan
    df.loc[7, "idf"] = np.nan
    kw = dict(bounds=(-2.0, 5.0), epsilon=1.0, delta=1e-6)
    ref = dpt.mean(df.f, df.kf, df.idf, rng=_replay(), **kw)
    clean = df.drop(index=[3, 6, 7])
    clean.loc[4, "f"], clean.loc[5, "f"] = 5.0, -2.0
    ref2 = dpt.mean(clean.f, clean.kf, clean.idf, rng=_replay(), **kw)
    _same(ref, ref2)
    with dask.config.set(scheduler="synchronous"):
        ddf = dd.from_pandas(df, npartitions=4)
        _same(dkd.mean(ddf, "kf", "f", "idf", rng=_replay(), **kw), ref)
        agg = dkd.aggregate(ddf, "kf", "idf", metrics=[("mean", "f")], epsilon=1.0,
                            delta=1e-6, bounds={"f": (-2.0, 5.0)}, rng=_replay())
    loc = dpt.aggregate(df, "kf", "idf", metrics=[("mean", "f")], epsilon=1.0, delta=1e-6,
                        bounds={"f": (-2.0, 5.0)}, rng=_replay())
    pd.testing.assert_frame_equal(agg.to_pandas(), loc.to_pandas())


def test_compact_shuffle_id_dtypes_equal_tables() -> None:
    """Issue 28: numpy-dtype columns travel as compact arrays (int64 columns that fit int32
    as int32); ids of every numeric kind -- wide, negative, unsigned, float, bool keys --
    and partitions of different dtypes release what one machine releases, bit for bit."""
    df = _frame(2500, seed=11)
    r = np.random.default_rng(12)
    wide = (df.id.to_numpy() * (2 ** 40 + 3)).astype(np.int64) - 2 ** 60  # no int32 fit
    cases = {"wide": wide, "neg": -df.id.to_numpy(), "u": df.id.to_numpy().astype(np.uint64),
             "f": df.id.to_numpy() / 4.0, "i32": df.id.to_numpy().astype(np.int32)}
    df["b"] = r.integers(0, 2, len(df)).astype(bool)
    for name, ids in cases.items():
        d = df.assign(pid=ids)
        assert SH.numeric(dd.from_pandas(d, npartitions=2), ["k", "b", "pid", "v"])
        ref = dpt.mean(d.v, (d.k, d.b), d.pid, bounds=(-3, 8), epsilon=2.0, delta=1e-5,
                       max_partitions=2, max_per_partition=2, rng=_replay())
        got = dkd.mean(dd.from_pandas(d.sample(frac=1, random_state=1), npartitions=5),
                       ["k", "b"], "v", "pid", bounds=(-3, 8), epsilon=2.0, delta=1e-5,
                       max_partitions=2, max_per_partition=2, rng=_replay(), npartitions=3)
        _same(got, ref)
        assert len(ref) > 3, name
    # one partition int32, another int64 (as a Parquet dataset written in pieces can be):
    # the concatenation restores int64 (pandas' rule), the partials equal all-int64 pieces
    skey = bounding.subkey(_replay())
    spec = TS.ReleaseSpec.make([TS.StatSpec("count")], epsilon=1.0, delta=1e-5,
                               max_partitions=2)
    plan = GB.plan_of("count", spec, TR.Rows(np.zeros(1), np.zeros(1)))
    args = (TR.Columns(("k",), "id"), skey)

    def partials(frames: list) -> list:
        sp = [SH.split_arrays(p, ["k", "id"], "id", 2) for p in frames]
        return [SH.concat_arrays_then([s[j] for s in sp], plan.partition_partials, *args)
                for j in range(2)]

    mixed = partials([df.iloc[:1200].astype({"id": np.int32}), df.iloc[1200:]])
    wide = partials([df.iloc[:1200], df.iloc[1200:]])
    assert SH.split_arrays(df, ["k", "id"], "id", 2)[0]["id"].dtype == np.int16  # narrowed
    for (a, na), (b, nb) in zip(mixed, wide, strict=True):
        pd.testing.assert_frame_equal(a, b)
        assert na == nb
    assert sum(n for _, n in mixed) == len(df)
    # a missing id is no longer an error (issue 36): the row leaves, as in dpfast.tables
    bad = df.assign(id=np.where(np.arange(len(df)) == 7, np.nan, df.id / 2.0))
    got = dkd.count(dd.from_pandas(bad, npartitions=2), "k", "id", epsilon=1.0, delta=1e-5,
                    rng=_replay())
    ref = dpt.count(bad.k, bad.id, epsilon=1.0, delta=1e-5, rng=_replay())
    _same(got, ref)
    ref2 = dpt.count(bad.k.drop(index=7), bad.id.drop(index=7), epsilon=1.0, delta=1e-5,
                     rng=_replay())
    _same(ref, ref2)


def test_compact_shuffle_empty_partitions_equal_tables() -> None:
    """Input partitions left empty by a filter cross the compact shuffle (and more output
    partitions than input ones): the release is that of one machine."""
    import dask

    df = _frame(3000, seed=5).drop(columns="s").sort_values("k").reset_index(drop=True)
    d = dd.from_pandas(df, npartitions=6)
    d = d[d.k > 1]
    sub = df[df.k > 1]
    with dask.config.set(scheduler="synchronous"):
        assert min(len(p) for p in dask.compute(*d.to_delayed())) == 0
        ref = dpt.mean(sub.v, sub.k, sub.id, bounds=(-3, 8), epsilon=2.0, delta=1e-5,
                       rng=_replay())
        got = dkd.mean(d, "k", "v", "id", bounds=(-3, 8), epsilon=2.0, delta=1e-5,
                       rng=_replay(), npartitions=7)
    _same(got, ref)
    assert len(ref) > 3


def test_aggregate_with_a_median_on_two_worker_processes(client) -> None:  # type: ignore[no-untyped-def]
    """dpfast.dask.aggregate with count, mean, median and privacy_id_count on a
    LocalCluster of two processes: the one-machine release, bit for bit (issue 23)."""
    df = _frame(3000, seed=11)
    df["x"] = np.random.default_rng(12).normal(3.0, 2.0, len(df))
    kw = dict(metrics=["count", ("mean", "x"), ("median", "x"), "privacy_id_count"],
              epsilon=2.0, delta=1e-5, bounds={"x": (0.0, 8.0)}, max_partitions=2,
              max_per_partition=2)
    ref = dpt.aggregate(df, "k", "id", rng=_replay(), **kw)
    d = dd.from_pandas(df.sample(frac=1, random_state=3), npartitions=4)
    got = dkd.aggregate(d, "k", "id", rng=_replay(), **kw)
    assert len(ref) > 3
    pd.testing.assert_frame_equal(got.to_pandas(), ref.to_pandas())
    np.testing.assert_array_equal(got["median_x"].values, ref["median_x"].values)


def test_shuffle_buckets_are_a_function_of_the_id_and_the_scatter_is_stable() -> None:
    """The compact shuffle's output partition of a row depends on its id's value only
    (int32 and int64 ids alike, negative ids, every output used), and the counting-sort
    scatter is numpy's stable argsort by bucket, narrowed or not."""
    from dpfast._kernels import grouping as kg

    r = np.random.default_rng(8)
    ids = np.concatenate([r.integers(-(2 ** 40), 2 ** 40, 5000), r.integers(0, 300, 5000)])
    nout = 7
    bucket, bounds = np.empty(ids.size, np.int64), np.zeros(nout + 1, np.int64)
    kg.id_buckets(ids, nout, bucket, bounds)
    assert ((bucket >= 0) & (bucket < nout)).all()
    np.testing.assert_array_equal(np.diff(bounds), np.bincount(bucket, minlength=nout))
    assert (np.diff(bounds) > 0).all()
    first = {}
    for i, b in zip(ids.tolist(), bucket.tolist(), strict=True):
        assert first.setdefault(i, b) == b  # one id, one bucket
    small = ids[5000:]
    b32 = np.empty(small.size, np.int64)
    kg.id_buckets(np.ascontiguousarray(small.astype(np.int32), np.int64), nout, b32,
                  np.zeros(nout + 1, np.int64))
    np.testing.assert_array_equal(b32, bucket[5000:])
    order = np.argsort(bucket, kind="stable")
    for dt in (np.int64, np.int32):
        out = np.empty(ids.size, dt)
        x = np.where(np.abs(ids) < 2 ** 31, ids, 5)
        kg.scatter_rows(x, bucket, bounds, out)
        np.testing.assert_array_equal(out, x[order].astype(dt))


def test_split_group_bounds_the_pieces() -> None:
    """Each input is split on its own while splits x outputs stay within MAX_PIECES; beyond,
    a split takes a group of inputs (issue 40: 10^9 rows in 500 files made 83500 pieces)."""
    assert SH.split_group(50, 17) == 1  # 850 pieces: as before
    assert SH.split_group(500, 167) == 11
    assert -(-500 // SH.split_group(500, 167)) * 167 <= SH.MAX_PIECES
    assert SH.split_group(10, 10, max_pieces=7) == 10  # never more than the inputs
    assert SH.split_group(10, 10, max_pieces=30) == 4


@pytest.mark.parametrize("string_keys", [False, True])
def test_grouped_splits_equal_tables(monkeypatch: pytest.MonkeyPatch,
                                     string_keys: bool) -> None:
    """Splits over groups of inputs (compact numpy pieces, or pandas pieces for string
    keys; one input's ids int32, the others int64 and float) release what one machine
    releases on the same rows (issue 40: the grouping must not move an id's rows apart)."""
    import dask

    df = _frame(4000, seed=21)
    if not string_keys:
        df = df.drop(columns="s")
    shuffled = df.sample(frac=1, random_state=2)
    parts = [shuffled.iloc[a:a + 600] for a in range(0, len(df), 600)]  # 7 partitions
    parts[0] = parts[0].astype({"id": np.int32})
    parts[3] = parts[3].astype({"id": np.float64})
    key = "s" if string_keys else "k"
    ref = dpt.count(df[key], df.id, epsilon=2.0, delta=1e-5, max_partitions=2,
                    rng=_replay())
    monkeypatch.setattr(SH, "MAX_PIECES", 6)  # 7 inputs, 3 outputs: 4 inputs a split
    assert SH.split_group(7, 3, SH.MAX_PIECES) == 4
    d = dd.from_delayed([dask.delayed(p) for p in parts], meta=parts[1].iloc[:0])
    with dask.config.set(scheduler="synchronous"):
        got = dkd.count(d, key, "id", epsilon=2.0, delta=1e-5, max_partitions=2,
                        rng=_replay(), npartitions=3)
    _same(got, ref)
    assert len(ref) >= 3  # (three string keys)


def test_grouped_split_arrays_is_the_split_of_the_concatenation() -> None:
    """split_arrays of a list of partitions gives, piece by piece, the split of their
    concatenation (same rows, same order, same restored dtypes); integer columns that fit
    travel as int16, others as int32, the rest unchanged (issue 40)."""
    r = np.random.default_rng(3)
    a = pd.DataFrame({"id": r.integers(0, 900, 500), "k": r.integers(-40_000, 40_000, 500),
                      "v": r.normal(size=500)})
    b = a.iloc[:0].copy()  # an empty partition
    c = pd.DataFrame({"id": r.integers(0, 900, 300).astype(np.int32),
                      "k": r.integers(-5, 5, 300), "v": r.normal(size=300)})
    cols = ["id", "k", "v"]
    got = SH.split_arrays([a, b, c], cols, "id", 5)
    ref = SH.split_arrays(pd.concat([a, b, c], ignore_index=True), cols, "id", 5)
    assert got[0]["id"].dtype == np.int16 and got[0]["k"].dtype == np.int32
    assert got[0]["v"].dtype == np.float64
    for g, f in zip(got, ref, strict=True):
        for col in cols:
            assert g[col].tolist() == f[col].tolist()
    whole = SH.concat_arrays(list(got))
    assert {k: v.dtype for k, v in whole.items()} == {"id": np.int64, "k": np.int64,
                                                       "v": np.float64}
    assert sorted(whole["id"].tolist()) == sorted(a.id.tolist() + c.id.tolist())
