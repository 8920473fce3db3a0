"""The weighted-Gaussian key selection (selection="weighted_gaussian", Gopi et al. 2020):
its exact weights and δ, keep probabilities against exact tails, empirical DP audits on
neighbouring datasets, the weighted measure of every bounding path, every release that
takes ``selection=``, "auto"'s dominance rule, and dask bit-identity."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpfast
from dpfast import tables as dpt
from dpfast.tables import _rows, _select, _select_weighted, bounding, keynoise
from tests.helpers import KEY

G = _select_weighted.WEIGHT_BITS


@pytest.fixture(autouse=True)
def _precision():
    with mpmath.workprec(200):
        yield


def _rkey(i: int = 0) -> bytes:
    return keynoise.release_key(KEY, 2000 + i)


def _published(sel: _select.Selection, measure: int, trials: int, offset: int = 0
               ) -> np.ndarray:
    """Keep decisions of ``trials`` distinct keys of weighted measure ``measure`` (own
    addressed streams: independent trials)."""
    keys = np.arange(offset, offset + trials, dtype=np.int64)
    return _select.apply(sel, np.full(trials, measure, np.int64), _rkey(), keys)


def _sd(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-12) / n)


def _dg_tail(sigma: float, m: int) -> mpmath.mpf:
    """``P(Z >= m)`` of the discrete Gaussian (``m >= 1``, ``sigma >= 1``), independently of
    dpfast's tail bounds: the terms summed directly in float64 blocks over
    ``[m, m + 12 sigma]`` (the rest is below ``e^-72`` of the first term), over the
    normalizer ``sigma sqrt(2 pi)`` (Poisson summation: the neglected ``2 exp(-2 pi^2
    sigma^2)`` is below ``1e-8``)."""
    total = 0.0
    end = m + int(12 * sigma) + 1
    for a in range(m, end, 1 << 20):
        x = np.arange(a, min(end, a + (1 << 20)), dtype=np.float64)
        total += float(np.exp(-(x * x) / (2.0 * sigma * sigma)).sum())
    return mpmath.mpf(total) / (mpmath.mpf(sigma) * mpmath.sqrt(2 * mpmath.pi))


# ----------------------------------------------------------------------------- exact law
@pytest.mark.parametrize("k", [1, 2, 7, 40, 1000])
def test_weights_are_floor_of_sqrt_k_over_t_and_bound_the_l2_norm(k: int) -> None:
    w = _select_weighted.weights(k)
    assert w[0] == 0 and w[k] == 1 << G
    for t in range(1, k + 1):
        x = Fraction(k, t) * (1 << (2 * G))  # W(t) = floor(sqrt(x)) exactly
        assert w[t] ** 2 <= x < (w[t] + 1) ** 2
        assert t * int(w[t]) ** 2 <= k << (2 * G)  # L2 norm <= sqrt(k) 2^G, exactly
    assert np.all(np.diff(w[1:]) <= 0)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_delta_is_noise_delta_plus_the_exact_worst_threshold_tail(k: int) -> None:
    """δ_thr = max_t 1 - (1 - P(Z >= τ - W(t)))^t with exact tails (direct sums): the
    reported δ covers it, and the noise's zCDP δ, within the target."""
    target = 1e-4
    sel = _select.plan(0.7, target, k, "weighted_gaussian")
    gau = _select.plan(0.7, target, k, "gaussian")
    assert sel.law.scale == gau.law.scale * 2 ** G  # the same sigma on the 2^-G grid
    w = sel.weights
    thr = max(-mpmath.expm1(t * mpmath.log1p(-_dg_tail(sel.law.scale, sel.threshold - w[t])))
              for t in range(1, k + 1))
    assert sel.delta <= target
    # the float64 reference is good to ~1e-13 relative
    assert thr * (1 - 1e-12) <= _select_weighted.threshold_delta(sel.law.scale,
                                                                 sel.threshold, k) \
        <= thr * (1 + 1e-9)
    noise = sel.delta - thr
    assert 0 < noise <= target / 2 and thr <= target / 2 * (1 + 1e-12)
    # within a thousandth of a unit of the smallest threshold
    lower = sel.threshold - (1 << (G - 10)) - 1
    assert _select_weighted.threshold_delta(sel.law.scale, lower, k) > target / 2


def test_keep_probability_is_the_exact_tail() -> None:
    sel = _select.plan(1.0, 1e-5, 4, "weighted_gaussian")
    for units in (1, 50, sel.threshold // (1 << G), sel.threshold // (1 << G) + 20):
        s = units << G
        m = sel.threshold - s
        exact = _dg_tail(sel.law.scale, m) if m >= 1 else 1 - _dg_tail(sel.law.scale, 1 - m)
        got = _select.keep_probability(sel, s)
        assert abs(got - exact) <= exact * 1e-9 + 1e-30, units
        if m >= 1:  # below the threshold: an upper bound (reference good to ~1e-13)
            assert got >= exact * (1 - 1e-12)


# ----------------------------------------------------------------------------- sampling, audits
def test_empirical_publication_rate_matches_the_exact_probability() -> None:
    sel = _select.plan(0.5, 0.05, 3, "weighted_gaussian")
    trials = 20000
    mid = sel.threshold
    for j, s in enumerate((int(sel.weights[1]), mid - 3 * (1 << G), mid, mid + 3 * (1 << G))):
        p = float(_select.keep_probability(sel, s))
        got = _published(sel, s, trials, offset=j * trials).mean()
        assert abs(got - p) < 4.5 * _sd(p, trials) + 1e-9, (s, got, p)


@pytest.mark.parametrize("t", [1, 3])
def test_dp_audit_one_person_added(t: int) -> None:
    """k = 3.  D' is D plus one person holding ``t`` keys, the audited key among them: its
    weighted measure goes from s to s + W(t) (s = 0: the key is new).  For "published" and
    its complement, P[. | D'] <= e^eps P[. | D] + delta and the reverse (5 sigma), over the
    transition."""
    eps, delta = 0.5, 0.02
    sel = _select.plan(eps, delta, 3, "weighted_gaussian")
    wt = int(sel.weights[t])
    trials = 10000
    steps = sel.threshold // wt + 4
    rates = [0.0] + [_published(sel, j * wt, trials, offset=j * trials).mean()
                     for j in range(1, steps)]
    assert rates[1] <= delta + 5 * _sd(delta, trials)
    ee = math.exp(eps)
    for j in range(len(rates) - 1):
        p, q = rates[j], rates[j + 1]
        margin = 5 * (_sd(p, trials) * ee + _sd(q, trials))
        for a, b in ((q, p), (p, q), (1 - q, 1 - p), (1 - p, 1 - q)):
            assert a <= ee * b + delta + margin, (j, p, q)


@pytest.mark.parametrize("t", [1, 2, 4])
def test_dp_audit_new_keys_of_one_person(t: int) -> None:
    """k = 4: the added person holds ``t`` keys nobody else holds (each of measure W(t));
    the chance that any is published matches 1 - (1 - p)^t and is at most δ."""
    sel = _select.plan(1.0, 0.06, 4, "weighted_gaussian")
    people = 8000
    dec = _published(sel, int(sel.weights[t]), t * people, offset=t * 10 ** 6)
    hit = dec.reshape(people, t).any(axis=1).mean()
    p = float(_select.keep_probability(sel, int(sel.weights[t])))
    exact = 1 - (1 - p) ** t
    assert abs(hit - exact) < 4.5 * _sd(exact, people)
    assert hit <= sel.delta + 4.5 * _sd(sel.delta, people)


# ----------------------------------------------------------------------------- measure
def _people(seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    ids = r.integers(0, 400, 5000)
    keys = (ids * 7 + r.integers(0, 1 + ids % 6, 5000)) % 25  # 1..6 keys per person
    return keys, ids


@pytest.mark.parametrize("pol", [0, 1])
def test_weighted_measure_is_the_sum_of_each_persons_weight(pol: int) -> None:
    """Every bounding path sums W(t) over the people keeping a key, t their kept keys."""
    keys, ids = _people()
    k = 3
    w = _select_weighted.weights(k)
    codes = keys.astype(np.int64)
    skey = bounding.subkey(dpfast.default_rng(KEY))
    b = bounding.bound_codes(codes, 25, ids, k, 2, skey, policy=pol, unit_weights=w)
    m = _rows.bound_matrix(codes, 25, ids, k, 2, skey, np.zeros((codes.size, 1), np.int64),
                           policy=pol, unit_weights=w)
    # brute force from the kept (id, key) pairs: the per-id choice is the same everywhere
    _, _, _, units = dpt.bound_contributions(keys, ids, max_partitions=k, max_per_partition=2,
                                             rng=dpfast.default_rng(KEY), units=True,
                                             bounding=("uniform", "frequent")[pol])
    expect = np.zeros(25, np.int64)
    for i in np.unique(ids):
        mine = np.unique(keys[ids == i])
        one = bounding.bound_codes(codes[ids == i], 25, ids[ids == i], k, 2, skey,
                                   policy=pol).units
        kept = np.flatnonzero(one)
        assert set(kept) <= set(mine.tolist()) and len(kept) == min(k, len(mine))
        expect[kept] += w[len(kept)]
    np.testing.assert_array_equal(b.weighted, expect)
    np.testing.assert_array_equal(m.weighted, expect)
    np.testing.assert_array_equal(b.units, units)
    assert np.all(b.weighted >= b.units << G)  # every weight >= 2^G
    # every row its own person: W(1) per row
    nb = bounding.bound_codes(codes, 25, None, 1, 1, skey, unit_weights=w[:2])
    np.testing.assert_array_equal(nb.weighted, nb.counts * w[1])


def test_weighted_measure_saturates_instead_of_raising() -> None:
    """Issue 36 channel 1: a weighted unit count past 2**62 raised OverflowError (a test
    on the number of people holding a key); it is now saturated at 2**62 -- exact below,
    1-Lipschitz, independent of the ids' order -- per id, per row and on Dask alike."""
    w = np.array([0, 1 << 61, 5], np.int64)
    skey = bounding.subkey(dpfast.default_rng(KEY))
    for n, expect in ((1, 1 << 61), (2, 1 << 62), (4, 1 << 62)):
        b = bounding.bound_codes(np.zeros(n, np.int64), 2, np.arange(n), 1, 1, skey,
                                 unit_weights=w)
        assert b.weighted.tolist() == [expect, 0]
        nb = bounding.bound_codes(np.zeros(n, np.int64), 2, None, 1, 1, skey,
                                  unit_weights=w)
        assert nb.weighted.tolist() == [expect, 0]
    # two ids of two keys each (W[2] = 5) next to saturating ones: exact where below
    codes = np.array([0, 1, 0, 1, 0, 0], np.int64)
    ids = np.array([0, 0, 1, 1, 2, 3], np.int64)
    b = bounding.bound_codes(codes, 2, ids, 2, 1, skey, unit_weights=w)
    assert b.weighted.tolist() == [1 << 62, 10]
    pytest.importorskip("dask")
    from dpfast.tables import _merge as dask_tables

    got = dask_tables.checked_total(np.array([0, 0, 1]), np.array([1 << 62, 1 << 62, 7]), 2)
    assert got.tolist() == [1 << 62, 7]


# ----------------------------------------------------------------------------- auto, releases
@pytest.mark.parametrize("k", [2, 5, 10, 50])
def test_auto_takes_the_weighted_rule_only_when_it_dominates(k: int) -> None:
    """"auto" picks the weighted rule in place of Gaussian thresholding only with a
    threshold <= 2^G times the Gaussian one (same sigma x 2^G, weights >= 2^G): then at any
    unit count n its keep probability (a key held by n people with k keys each, the
    smallest weight) is at least the Gaussian one's."""
    eps, delta = 1.0, 1e-5
    sel = _select.plan(eps, delta, k, "auto")
    gau = _select.plan(eps, delta, k, "gaussian")
    if sel.policy == "geometric":
        return
    assert sel.policy == "weighted_gaussian"
    assert sel.threshold <= gau.threshold << G
    for n in (1, gau.threshold - 5, gau.threshold, gau.threshold + 5):
        assert _select.keep_probability(sel, n << G) >= _select.keep_probability(gau, n) \
            * (1 - 1e-12)
    assert _select.median_units(sel) <= _select.median_units(gau)


def _frame(n: int = 6000, seed: int = 0):
    pd = pytest.importorskip("pandas")
    r = np.random.default_rng(seed)
    return pd.DataFrame({"k": r.zipf(1.5, n) % 30, "id": r.integers(0, 1500, n),
                         "x": r.normal(2.0, 3.0, n), "v": r.integers(-3, 9, n)})


def test_every_release_with_selection_takes_the_weighted_rule() -> None:
    df = _frame()
    kw = dict(epsilon=2.0, delta=1e-5, max_partitions=2, selection="weighted_gaussian")

    def rng() -> dpfast.Generator:
        return dpfast.default_rng(KEY)

    rels = [dpt.count(df.k, df.id, rng=rng(), **kw),
            dpt.sum(df.v, df.k, df.id, bounds=(0, 6), rng=rng(), **kw),
            dpt.mean(df.x, df.k, df.id, bounds=(-4.0, 8.0), rng=rng(), **kw),
            dpt.privacy_id_count(df.k, df.id, rng=rng(), **kw),
            dpt.variance(df.x, df.k, df.id, bounds=(-4.0, 8.0), rng=rng(), **kw),
            dpt.count_distinct(df.v, df.k, df.id, max_per_partition=3, rng=rng(), **kw),
            dpt.median(df.x, df.k, df.id, bounds=(-4.0, 8.0), rng=rng(), **kw),
            dpt.aggregate(df, "k", "id", metrics=["count", ("mean", "x")],
                          bounds={"x": (-4.0, 8.0)}, rng=rng(), **kw)["count"]]
    _, _, _, units = dpt.bound_contributions(df.k, df.id, max_partitions=2, units=True,
                                             rng=KEY)
    for rel in rels:
        assert rel.selection.policy == "weighted_gaussian"
        assert rel.event.delta <= 1e-5
        assert len(rel) >= 3  # the keys held by hundreds of people are published
    again = dpt.count(df.k, df.id, rng=rng(), **kw)  # a replay: the same keys and values
    np.testing.assert_array_equal(again.values, rels[0].values)
    assert again.keys.tolist() == rels[0].keys.tolist()
    with pytest.raises(ValueError, match="selection"):
        dpt.count(df.k, df.id, epsilon=1.0, delta=1e-5, selection="weighted")


def test_state_round_trip_replans_the_weighted_rule() -> None:
    sel = _select.plan(1.0, 1e-6, 6, "weighted_gaussian")
    back = _select.selection_from_state(_select.selection_state(sel))
    assert back == sel and back.threshold == sel.threshold


# ----------------------------------------------------------------------------- dask
def test_dask_count_distinct_and_quantile_equal_one_machine() -> None:
    dd = pytest.importorskip("dask.dataframe")
    dask = pytest.importorskip("dask")
    import dpfast.dask as dkd

    df = _frame(seed=2)
    kw = dict(epsilon=2.0, delta=1e-5, max_partitions=2, selection="weighted_gaussian")
    with dask.config.set(scheduler="synchronous"):
        ddf = dd.from_pandas(df, npartitions=4)
        pairs = [(dkd.count_distinct(ddf, "k", "v", "id", max_per_partition=3,
                                     rng=dpfast.default_rng(KEY), **kw),
                  dpt.count_distinct(df.v, df.k, df.id, max_per_partition=3,
                                     rng=dpfast.default_rng(KEY), **kw)),
                 (dkd.median(ddf, "k", "x", "id", bounds=(-4.0, 8.0),
                             rng=dpfast.default_rng(KEY), npartitions=3, **kw),
                  dpt.median(df.x, df.k, df.id, bounds=(-4.0, 8.0),
                             rng=dpfast.default_rng(KEY), **kw))]
    for got, ref in pairs:
        assert got.keys.tolist() == ref.keys.tolist()
        np.testing.assert_array_equal(got.values, ref.values)
        assert got.event == ref.event and got.selection.policy == "weighted_gaussian"
