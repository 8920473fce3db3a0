"""dpfast.dask quantile / median / min / max: bit-identical to dpfast.tables (issue 23)."""

from __future__ import annotations

import numpy as np
import pytest

dd = pytest.importorskip("dask.dataframe")
pd = pytest.importorskip("pandas")

import dpfast  # noqa: E402
import dpfast.dask as dkd  # noqa: E402
import dpfast.tables as dpt  # noqa: E402

from .helpers import KEY  # noqa: E402


def _replay() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


def _frame(n: int = 4000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"k": rng.zipf(1.5, n) % 30, "id": rng.integers(0, 600, n),
                         "v": rng.integers(-3, 40, n), "f": rng.normal(5, 3, n),
                         "s": rng.choice(np.array(["a", "bb", "é"]), n)})


def _same(a, b) -> None:
    ka = a.keys if isinstance(a.keys, tuple) else (a.keys,)
    kb = b.keys if isinstance(b.keys, tuple) else (b.keys,)
    assert [x.tolist() for x in ka] == [x.tolist() for x in kb]
    assert a.values.dtype == b.values.dtype
    np.testing.assert_array_equal(a.values, b.values)
    assert a.event == b.event and a.threshold == b.threshold


@pytest.mark.parametrize("nparts", [1, 5])
def test_selection_with_ids_equals_tables_any_partitioning(nparts: int) -> None:
    df = _frame()
    kw = dict(q=[0.25, 0.5], bounds=(0.0, 10.0), epsilon=2.0, delta=1e-5, max_partitions=2,
              max_per_partition=3)
    ref = dpt.quantile(df.f, df.k, df.id, rng=_replay(), **kw)
    shuffled = df.sample(frac=1, random_state=nparts)
    got = dkd.quantile(dd.from_pandas(shuffled, npartitions=nparts), "k", "f", "id",
                       rng=_replay(), npartitions=3, **kw)
    _same(got, ref)
    assert len(ref) >= 3


def test_domain_multi_column_keys_and_integers() -> None:
    df = _frame(seed=1)
    dom = (np.array([0, 1, 2, 3, 0]), np.array(["a", "a", "bb", "é", "é"]))
    ref = dpt.median(df.v, (df.k, df.s), df.id, bounds=(0, 30), epsilon=1.0, domain=dom,
                     max_partitions=3, rng=_replay())
    got = dkd.median(dd.from_pandas(df, npartitions=4), ["k", "s"], "v", "id",
                     bounds=(0, 30), epsilon=1.0, domain=dom, max_partitions=3,
                     rng=_replay())
    _same(got, ref)
    for fn in ("min", "max"):
        a = getattr(dpt, fn)(df.v, df.k, bounds=(-3, 39), epsilon=1.0, domain=np.arange(8),
                             rng=_replay())
        b = getattr(dkd, fn)(dd.from_pandas(df, npartitions=3), "k", "v", bounds=(-3, 39),
                             epsilon=1.0, domain=np.arange(8), rng=_replay())
        _same(a, b)


def test_budget_once_and_bad_input() -> None:
    df = _frame(500)
    ddf = dd.from_pandas(df, npartitions=2)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    rel = dkd.median(ddf, "k", "f", bounds=(0.0, 10.0), epsilon=0.5, domain=np.arange(4),
                     rng=_replay(), budget=budget)
    assert [h.event for h in budget.history()] == [rel.event]
    with pytest.raises(ValueError, match="column"):
        dkd.median(ddf, "k", "nope", bounds=(0, 1), epsilon=1.0, domain=[0])
    with pytest.raises(TypeError, match="value column"):
        dkd.median(ddf, "k", "s", bounds=(0, 1), epsilon=1.0, domain=[0])
    with pytest.raises(ValueError, match="q must be in"):
        dkd.quantile(ddf, "k", "f", q=2.0, bounds=(0, 1), epsilon=1.0, domain=[0])
    with pytest.raises(ValueError, match="npartitions"):
        dkd.median(ddf, "k", "f", bounds=(0, 1), epsilon=1.0, domain=[0], npartitions=0)


@pytest.mark.parametrize("domain", [None, "public"])
def test_frequent_bounding_equals_tables(domain) -> None:
    """``bounding="frequent"`` (the table and the people per key): bit-identical."""
    df = _frame()
    dom = None if domain is None else np.arange(30)
    kw = dict(q=[0.25, 0.5], bounds=(0.0, 10.0), epsilon=2.0, delta=1e-5, max_partitions=2,
              max_per_partition=3, domain=dom, bounding="frequent")
    ref = dpt.quantile(df.f, df.k, df.id, rng=_replay(), **kw)
    got = dkd.quantile(dd.from_pandas(df.sample(frac=1, random_state=1), npartitions=4), "k",
                       "f", "id", rng=_replay(), npartitions=3, **kw)
    _same(got, ref)
    assert len(ref) >= 3
