"""Issue 36, channel 1 (dpfast's own checks after the charge): missing and non-finite
private data never raise, and integer sums cannot overflow.

The declared policy (docs/security.md, "Parameters and data"):

* a row whose key (any key column), privacy id or value is missing -- None, NaN, pandas
  NA / NaT -- is dropped before bounding (SQL's aggregates ignore NULLs; a per-row filter,
  so every sensitivity holds);
* a ``±inf`` value is clamped to the public bounds like any other value out of range;
  a ``±inf`` key is an ordinary float key;
* a histogram's NaN / ``±inf`` sample falls in no bin (numpy's rule for values outside the
  range); its weights follow the value policy;
* integer sums are exact in two words and the total is saturated at ``±2**62`` before the
  noise (1-Lipschitz), so no number of rows within the public cap overflows.

Each test releases the adversarial data and the data with the row removed (or the value
clamped) by hand, with the same generator key, and asserts the two releases are equal.
On the old code every call with a NaN / inf row raised ValueError, and the integer sum
raised OverflowError from 1024 rows of ``2**52`` on: a yes/no oracle on any WHERE.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfast
from dpfast import tables as dpt
from tests.helpers import KEY

NAN, INF = float("nan"), float("inf")


def _gen() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


def _same(a, b) -> None:
    ka = a.keys if isinstance(a.keys, tuple) else (a.keys,)
    kb = b.keys if isinstance(b.keys, tuple) else (b.keys,)
    for x, y in zip(ka, kb):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(a.values, b.values)


# a small table: keys, persons, float values; row 5 is the adversarial one
K = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], np.int64)
P = np.arange(10, dtype=np.int64)
X = np.array([0.5, 1.5, 2.5, 3.5, 0.25, 7.0, 1.0, 2.0, 3.0, 4.0])
DOM = dict(domain=[0, 1, 2])
KEEP = np.arange(10) != 5


def _with(i_val, v):
    x = X.copy()
    x[5] = i_val if v is None else v
    return x


@pytest.mark.parametrize("stat", ["sum", "mean", "variance", "std"])
def test_nan_value_row_is_dropped(stat) -> None:
    """A NaN value: its row leaves (no error), for every value statistic."""
    f = getattr(dpt, stat)
    x = _with(NAN, None)
    got = f(x, K, P, bounds=(0.0, 8.0), epsilon=1.0, rng=_gen(), **DOM)
    ref = f(X[KEEP], K[KEEP], P[KEEP], bounds=(0.0, 8.0), epsilon=1.0, rng=_gen(), **DOM)
    _same(got, ref)


@pytest.mark.parametrize("stat", ["sum", "mean", "variance", "std"])
@pytest.mark.parametrize("v,clamp", [(INF, 4.0), (-INF, -1.0)])
def test_inf_value_is_clamped(stat, v, clamp) -> None:
    """``±inf`` is clamped to the bounds exactly as a finite value out of range."""
    f = getattr(dpt, stat)
    got = f(_with(v, v), K, P, bounds=(-1.0, 4.0), epsilon=1.0, rng=_gen(), **DOM)
    ref = f(_with(clamp, clamp), K, P, bounds=(-1.0, 4.0), epsilon=1.0, rng=_gen(), **DOM)
    _same(got, ref)


def test_nan_value_with_private_selection_and_none_in_a_list() -> None:
    x = list(X)
    x[5] = None
    got = dpt.sum(x, K, P, bounds=(0.0, 8.0), epsilon=1.0, delta=1e-6, rng=_gen())
    ref = dpt.sum(X[KEEP], K[KEEP], P[KEEP], bounds=(0.0, 8.0), epsilon=1.0, delta=1e-6,
                  rng=_gen())
    _same(got, ref)


def test_nullable_integer_values_drop_their_na_rows() -> None:
    xi = pd.Series([1, 2, 3, 4, 5, pd.NA, 7, 8, 9, 10], dtype="Int64")
    got = dpt.sum(xi, K, P, bounds=(0, 10), epsilon=1.0, rng=_gen(), **DOM)
    ref = dpt.sum(np.array([1, 2, 3, 4, 5, 7, 8, 9, 10]), K[KEEP], P[KEEP], bounds=(0, 10),
                  epsilon=1.0, rng=_gen(), **DOM)
    _same(got, ref)
    assert got.values.dtype == np.int64


@pytest.mark.parametrize("bad", [NAN, None])
def test_missing_key_row_is_dropped(bad) -> None:
    """A NULL key (NaN float, None object): the row leaves, with or without ``dropna``."""
    if bad is None:
        keys = np.array(["a", "b", "c", "a", "b", None, "a", "b", "c", "a"], dtype=object)
        dom = ["a", "b", "c"]
    else:
        keys = K.astype(np.float64)
        keys[5] = bad
        dom = [0.0, 1.0, 2.0]
    ref_keys = keys[KEEP].astype(str if bad is None else np.float64)
    for dropna in (False, True):
        got = dpt.count(keys, P, epsilon=1.0, domain=dom, rng=_gen(), dropna=dropna)
        ref = dpt.count(ref_keys, P[KEEP], epsilon=1.0, domain=dom, rng=_gen())
        _same(got, ref)
        got = dpt.mean(X, keys, P, bounds=(0.0, 8.0), epsilon=1.0, delta=1e-6, rng=_gen())
        ref = dpt.mean(X[KEEP], ref_keys, P[KEEP], bounds=(0.0, 8.0), epsilon=1.0,
                       delta=1e-6, rng=_gen())
        _same(got, ref)


def test_inf_key_is_an_ordinary_key() -> None:
    keys = K.astype(np.float64)
    keys[5] = INF
    rel = dpt.count(keys, P, epsilon=1.0, domain=[0.0, 1.0, 2.0, INF], rng=_gen())
    assert rel.keys.tolist() == [0.0, 1.0, 2.0, INF]
    ref = dpt.count(np.where(keys == INF, 9.0, keys), P, epsilon=1.0,
                    domain=[0.0, 1.0, 2.0, 9.0], rng=_gen())
    assert rel.values[:3].tolist() == ref.values[:3].tolist()  # per-key addressed noise


def test_missing_privacy_id_row_is_dropped() -> None:
    ids = P.astype(np.float64)
    ids[5] = NAN
    got = dpt.sum(X, K, ids, bounds=(0.0, 8.0), epsilon=1.0, rng=_gen(), **DOM)
    ref = dpt.sum(X[KEEP], K[KEEP], P[KEEP].astype(np.float64), bounds=(0.0, 8.0),
                  epsilon=1.0, rng=_gen(), **DOM)
    _same(got, ref)


def test_quantiles_count_distinct_and_privacy_id_count() -> None:
    x = _with(NAN, None)
    got = dpt.median(x, K, P, bounds=(0.0, 8.0), epsilon=1.0, rng=_gen(), **DOM)
    ref = dpt.median(X[KEEP], K[KEEP], P[KEEP], bounds=(0.0, 8.0), epsilon=1.0, rng=_gen(),
                     **DOM)
    _same(got, ref)
    got = dpt.median(_with(INF, INF), K, P, bounds=(0.0, 8.0), epsilon=1.0, rng=_gen(),
                     **DOM)
    ref = dpt.median(_with(8.0, 8.0), K, P, bounds=(0.0, 8.0), epsilon=1.0, rng=_gen(),
                     **DOM)
    _same(got, ref)
    got = dpt.count_distinct(x, K, P, epsilon=1.0, rng=_gen(), **DOM)
    ref = dpt.count_distinct(X[KEEP], K[KEEP], P[KEEP], epsilon=1.0, rng=_gen(), **DOM)
    _same(got, ref)
    keys = K.astype(np.float64)
    keys[5] = NAN
    got = dpt.privacy_id_count(keys, P, epsilon=1.0, domain=[0.0, 1.0, 2.0], rng=_gen())
    ref = dpt.privacy_id_count(K[KEEP].astype(np.float64), P[KEEP], epsilon=1.0,
                               domain=[0.0, 1.0, 2.0], rng=_gen())
    _same(got, ref)


def test_auto_bounds_drop_nan_rows() -> None:
    x = _with(NAN, None)
    got = dpt.sum(x, K, P, bounds="auto", epsilon=1.0, rng=_gen(), **DOM)
    ref = dpt.sum(X[KEEP], K[KEEP], P[KEEP], bounds="auto", epsilon=1.0, rng=_gen(), **DOM)
    _same(got, ref)
    assert got.bounds == ref.bounds


def test_aggregate_drops_rows_with_a_null_in_a_used_column() -> None:
    """``aggregate``: a row with a NULL in any value column a metric uses leaves every
    metric (listwise); ``±inf`` is clamped per column."""
    df = pd.DataFrame({"g": K, "p": P, "x": _with(NAN, None), "y": np.arange(10.0)})
    df.loc[2, "y"] = INF
    mets = ["count", ("sum", "x"), ("mean", "y"), ("median", "x")]
    kw = dict(metrics=mets, epsilon=1.0, bounds={"x": (0.0, 8.0), "y": (0.0, 5.0)},
              domain=[0, 1, 2], candidates={"x": 17})
    got = dpt.aggregate(df, "g", "p", rng=_gen(), **kw).to_pandas()
    ref_df = df[KEEP].copy()
    ref_df.loc[2, "y"] = 5.0
    ref = dpt.aggregate(ref_df, "g", "p", rng=_gen(), **kw).to_pandas()
    pd.testing.assert_frame_equal(got, ref)


def test_histograms_follow_numpy_for_nan_and_inf() -> None:
    a = np.array([0.1, 0.5, 0.9, NAN, INF, -INF, 0.7])
    kw = dict(bins=4, range=(0.0, 1.0), epsilon=1.0)
    h, e = dpfast.histogram(a, rng=_gen(), **kw)
    h0, e0 = dpfast.histogram(a[[0, 1, 2, 6]], rng=_gen(), **kw)
    np.testing.assert_array_equal(h, h0)
    np.testing.assert_array_equal(e, e0)
    w = np.array([1.0, NAN, INF, 1.0, 1.0, 1.0, -INF])
    h, _ = dpfast.histogram(a, weights=w, weight_bounds=(-2.0, 2.0), rng=_gen(), **kw)
    h0, _ = dpfast.histogram(a[[0, 2, 6]], weights=np.array([1.0, 2.0, -2.0]),
                             weight_bounds=(-2.0, 2.0), rng=_gen(), **kw)
    np.testing.assert_array_equal(h, h0)
    y = np.array([0.2, NAN, 0.3, 0.4, 0.5, 0.6, 0.7])
    h2, _, _ = dpfast.histogram2d(a, y, bins=2, range=[(0, 1), (0, 1)], epsilon=1.0,
                                  rng=_gen())
    h20, _, _ = dpfast.histogram2d(a[[0, 2, 6]], y[[0, 2, 6]], bins=2,
                                   range=[(0, 1), (0, 1)], epsilon=1.0, rng=_gen())
    np.testing.assert_array_equal(h2, h20)
    hd, _ = dpfast.histogramdd(np.stack([a, y], 1), bins=2, range=[(0, 1), (0, 1)],
                               epsilon=1.0, rng=_gen())
    np.testing.assert_array_equal(hd, h20)


def test_topdown_per_person_drops_null_and_foreign_records() -> None:
    levels = [np.zeros(4, np.int64), np.array([0, 0, 1, 1]), np.arange(4)]
    leaf = np.array([0, 1, 2, 3, 9, 1, -1, 2], np.float64)  # 9, -1: no such leaf
    leaf[1] = NAN
    ids = np.array([0, 1, 2, 3, 4, 5, 6, 7], np.float64)
    ids[3] = NAN
    got = dpt.topdown(leaf, levels, rho=1.0, privacy_ids=ids, rng=_gen())
    keep = [0, 2, 5, 7]
    ref = dpt.topdown(leaf[keep].astype(np.int64), levels, rho=1.0,
                      privacy_ids=ids[keep].astype(np.int64), rng=_gen())
    for a, b in zip(got.estimates, ref.estimates):
        np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------- overflow
B = 2 ** 52
EPS = 32.0  # a noise scale within the samplers' 2**50 (test_params_range.py)


@pytest.mark.parametrize("n", [1023, 1024, 2048, 4096])
def test_integer_sum_never_overflows_with_the_largest_bounds(n) -> None:
    """Issue 36 channel 1: with bounds ``(0, 2**52)`` the old code raised OverflowError
    from ``n = 1024`` rows on (``n B >= 2**62``): the exact row count of any WHERE by
    binary search.  Now every ``n`` gives a release; totals past ``2**62`` are saturated
    there (so 1024 and 4096 rows of ``B`` release the same value with one key)."""
    vals = np.full(n, B, np.int64)
    keys = np.zeros(n, np.int64)
    rel = dpt.sum(vals, keys, bounds=(0, B), epsilon=EPS, domain=[0], rng=_gen())
    ref = dpt.sum(np.full(1024, B, np.int64), np.zeros(1024, np.int64), bounds=(0, B),
                  epsilon=EPS, domain=[0], rng=_gen())
    if n >= 1024:  # n B >= 2**62: saturated at 2**62
        np.testing.assert_array_equal(rel.values, ref.values)
    else:  # the exact total, 2**52 below the saturated one (same addressed noise)
        assert int(ref.values[0]) - int(rel.values[0]) == (1024 - n) * B
    mean = dpt.mean(vals, keys, bounds=(-B, B), epsilon=EPS, domain=[0], rng=_gen())
    assert mean.values.dtype == np.float64
    df = pd.DataFrame({"g": keys, "v": vals})
    agg = dpt.aggregate(df, "g", metrics=[("sum", "v"), ("mean", "v")], epsilon=EPS,
                        bounds={"v": (0, B)}, domain=[0], rng=_gen())
    assert agg["sum_v"].values.dtype == np.int64


def test_integer_sum_saturation_is_exact() -> None:
    """Below ``2**62`` the exact total is noised; from it on, ``2**62`` itself: the noise
    of one key's addressed stream is the same, so the difference is the true difference
    (clamped)."""
    def rel(vals):
        return dpt.sum(np.asarray(vals, np.int64), np.zeros(len(vals), np.int64),
                       bounds=(-B, B), epsilon=EPS, domain=[0], rng=_gen()).values[0]

    base = rel([0])
    assert rel([B, 5]) - base == B + 5
    assert rel([B] * 1024) - base == 2 ** 62
    assert rel([B] * 1100) - base == 2 ** 62
    assert rel([-B] * 1100) - base == -(2 ** 62)


def test_person_partial_sum_too_large_is_refused_before_the_charge(tmp_path) -> None:
    """``max_per_partition * bound`` beyond int64 is public: ValueError, nothing charged."""
    b = dpfast.Budget(10.0, ledger=tmp_path / "l.sqlite")
    with pytest.raises(ValueError, match="max_per_partition"):
        dpt.sum(np.array([1, 2]), np.array([0, 0]), np.array([0, 0]), bounds=(0, B),
                max_per_partition=1 << 12, epsilon=EPS, domain=[0], budget=b)
    assert b.history() == []


def test_private_keys_beyond_int64_never_make_the_domain_join_raise() -> None:
    """A private key >= 2**63 next to a public domain with a negative key raised
    OverflowError ('mix negative and >= 2**63 integers'): a test of a private value.  Now
    the join is exact (Python ints) and the foreign key is dropped like any other."""
    keys = np.array([2 ** 63 + 5, 2 ** 63 + 5, 7, 7], dtype=np.uint64)
    got = dpt.count(keys, epsilon=1.0, domain=[-1, 7], rng=_gen())
    ref = dpt.count(np.array([7, 7]), epsilon=1.0, domain=[-1, 7], rng=_gen())
    assert [int(k) for k in got.keys] == [-1, 7]
    np.testing.assert_array_equal(got.values, ref.values)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6),
                          st.one_of(st.floats(-10, 10), st.sampled_from([NAN, INF, -INF]))),
                min_size=1, max_size=25),
       st.sampled_from(["sum", "mean"]), st.booleans())
def test_any_adversarial_rows_equal_the_cleaned_release(rows, stat, select) -> None:
    """Property: whatever NaN / ±inf rows an adversary adds, the release is that of the
    rows with the NaN rows removed and ±inf clamped by hand (same key, same noise)."""
    k = np.array([r[0] for r in rows])
    p = np.array([r[1] for r in rows])
    x = np.array([r[2] for r in rows], np.float64)
    keep = ~np.isnan(x)
    clean = np.clip(x[keep], -2.0, 3.0)
    kw = dict(bounds=(-2.0, 3.0), epsilon=1.0, max_partitions=2, max_per_partition=2)
    kw.update(dict(delta=1e-6) if select else dict(domain=[0, 1, 2, 3]))
    f = getattr(dpt, stat)
    _same(f(x, k, p, rng=_gen(), **kw), f(clean, k[keep], p[keep], rng=_gen(), **kw))
