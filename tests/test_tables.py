"""dpfast.tables: count / sum / mean releases, contribution bounding, the release object."""

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
from dpfast.tables import keynoise
from tests.helpers import KEY


def _replay() -> dpfast.Generator:
    """A generator rebuilt from the fixed key: replays a release (a raw key never does)."""
    return dpfast.default_rng(KEY)

BIG = 1e7  # epsilon so large that the discrete noise is exactly 0 with probability ~1


def _truth(keys, ids=None):
    u, c = np.unique(keys, return_counts=True)
    return dict(zip(u.tolist(), c.tolist()))


# ----------------------------------------------------------------------------- counts
def test_count_public_domain_no_ids_exact_at_huge_epsilon() -> None:
    r = np.random.default_rng(0)
    keys = r.integers(0, 50, 5000)
    domain = np.arange(60)[::-1]  # caller's order kept; 50..59 have no rows
    rel = dpt.count(keys, epsilon=BIG, domain=domain, rng=_replay())
    assert np.array_equal(rel.keys, domain)
    want = np.array([np.sum(keys == d) for d in domain])
    assert np.array_equal(rel.counts, want)
    assert rel.counts.dtype == np.int64
    assert isinstance(rel.event, ev.DiscreteLaplace)
    assert 1 / rel.event.noise_multiplier <= BIG
    assert rel.threshold is None


def test_count_keeps_rows_outside_domain_out() -> None:
    keys = np.array([1, 1, 2, 99, 99, 99])
    rel = dpt.count(keys, epsilon=BIG, domain=[2, 1], rng=_replay())
    assert rel.keys.tolist() == [2, 1] and rel.counts.tolist() == [1, 2]


@pytest.mark.parametrize("kind", ["str", "bytes", "series", "tuple", "frame", "float"])
def test_key_types(kind: str) -> None:
    pd = pytest.importorskip("pandas")
    base = np.array([3, 1, 3, 2, 3, 1])
    if kind == "str":
        keys = np.array(["c", "a", "c", "b", "c", "a"])
        want = (["a", "b", "c"], [2, 1, 3])
    elif kind == "bytes":
        keys = np.array([b"c", b"a", b"c", b"b", b"c", b"a"], dtype=object)
        want = ([b"a", b"b", b"c"], [2, 1, 3])
    elif kind == "series":
        keys = pd.Series(["c", "a", "c", "b", "c", "a"], name="city")
        want = (["a", "b", "c"], [2, 1, 3])
    elif kind == "float":
        keys = base.astype(float)
        want = ([1.0, 2.0, 3.0], [2, 1, 3])
    else:
        a, b = base % 2, np.array(["x", "y", "x", "y", "x", "x"])
        keys = (a, b) if kind == "tuple" else pd.DataFrame({"odd": a, "s": b})
        want = ([(0, "y"), (1, "x"), (1, "y")], [1, 4, 1])
    rel = dpt.count(keys, epsilon=BIG, domain=_domain(want[0], kind), rng=_replay())
    got = list(zip(*(k.tolist() for k in rel.keys))) if isinstance(rel.keys, tuple) \
        else rel.keys.tolist()
    assert got == want[0] and rel.counts.tolist() == want[1]
    df = rel.to_pandas()  # indexed by the key, as a pandas group-by
    assert list(df.columns) == ["count", "ci_low", "ci_high"]
    assert df.index.tolist() == want[0] and df["count"].tolist() == want[1]
    assert rel.to_dict() == dict(zip(want[0], want[1])) and len(rel) == len(want[0])
    assert list(rel) == list(zip(want[0], want[1]))
    if kind == "series":
        assert df.index.name == "city"
    elif kind == "frame":
        assert isinstance(df.index, pd.MultiIndex) and list(df.index.names) == ["odd", "s"]
    elif kind == "tuple":
        assert list(df.index.names) == ["key0", "key1"]
    else:
        assert df.index.name == "key"
    assert list(df.reset_index().columns)[-3:] == ["count", "ci_low", "ci_high"]


def _domain(keys, kind):
    if kind in ("tuple", "frame"):
        return (np.array([k[0] for k in keys]), np.array([k[1] for k in keys]))
    if kind == "bytes":
        return np.array(keys, dtype=object)
    return np.array(keys)


def test_private_selection_releases_frequent_keys_only() -> None:
    r = np.random.default_rng(1)
    people = np.arange(3000)
    ids = np.concatenate([people, [5000]])
    keys = np.concatenate([r.integers(0, 5, 3000), [77]])  # key 77 held by one person
    rel = dpt.count(keys, ids, epsilon=1.0, delta=1e-6, rng=_replay())
    assert set(rel.keys.tolist()) == {0, 1, 2, 3, 4}
    assert isinstance(rel.event, ev.EpsilonDelta) and rel.event.delta == 1e-6
    # k = 1: the optimal truncated-geometric rule at epsilon / 2; the threshold is the
    # smallest unit count published for sure
    from dpfast.tables import _select
    assert rel.selection.policy == "geometric" and rel.selection.epsilon == 0.5
    assert _select.keep_probability(rel.selection, rel.threshold) == 1
    assert _select.keep_probability(rel.selection, rel.threshold - 1) < 1


def test_a_raw_key_never_replays_a_release_a_generator_replays_its_sequence() -> None:
    """Issue 22 item 1: two releases with one raw key get fresh, independent noise (a
    fresh release id each); only a generator rebuilt from the key replays (its allocator
    numbers the releases), and one generator never gives two releases the same stream."""
    keys = np.random.default_rng(2).integers(0, 30, 2000)
    ids = np.random.default_rng(3).integers(0, 300, 2000)
    kw = dict(epsilon=0.5, domain=np.arange(30), max_partitions=2)
    r1 = dpt.count(keys, ids, rng=KEY, **kw)
    r2 = dpt.count(keys, ids, rng=KEY, **kw)
    assert r1.release_id != r2.release_id and r1.release_id >= 1 << 127
    assert (r1.counts != r2.counts).sum() > 20  # independent noise (30 keys, scale 4)
    ref = dpt.count(keys, ids, rng=_replay(), **kw)
    assert ref.release_id is None
    assert np.array_equal(ref.counts, dpt.count(keys, ids, rng=_replay(),
                                                **kw).counts)
    g = dpfast.default_rng(KEY)
    a, b = dpt.count(keys, ids, rng=g, **kw), dpt.count(keys, ids, rng=g, **kw)
    assert np.array_equal(a.counts, ref.counts) and (a.counts != b.counts).sum() > 20
    # the same raw key's release is reproduced exactly by its release generator
    rep = dpt.count(keys, ids, rng=keynoise.keyed_generator(KEY, r1.release_id), **kw)
    assert np.array_equal(rep.counts, r1.counts)
    c = dpt.count(keys, ids, **kw).counts
    assert not np.array_equal(ref.counts, c)


def test_separate_releases_use_distinct_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every release's per-key noise key (generator key, release stream) is new: raw keys,
    one generator, the default generator; releases of a sum use two parts of one key."""
    seen: list[tuple[bytes, int]] = []
    orig = keynoise.release_key
    monkeypatch.setattr(keynoise, "release_key",
                        lambda key, stream: seen.append((key, stream)) or orig(key, stream))
    x = np.arange(40) % 7
    g = dpfast.default_rng(KEY)
    for rng in (KEY, KEY, bytearray(KEY), g, g, None, None):
        dpt.count(x, epsilon=1.0, domain=np.arange(7), rng=rng)
        dpt.sum(x.astype(float), x, bounds=(0.0, 6.0), epsilon=1.0, domain=np.arange(7),
                rng=rng)
    assert len(seen) == 14 and len(set(seen)) == 14


# ----------------------------------------------------------------------------- bounding
def test_bounding_caps_keys_and_rows_per_id() -> None:
    r = np.random.default_rng(4)
    ids0 = r.integers(0, 400, 5000)
    keys0 = r.integers(0, 40, 5000)
    for k, c in ((1, 1), (3, 1), (3, 2), (50, 7)):
        # every (id, key) pair gets at least c rows, so each kept pair contributes exactly c
        ids, keys = np.repeat(ids0, c + 1), np.repeat(keys0, c + 1)
        _, counts, _ = dpt.bound_contributions(keys, ids, max_partitions=k,
                                               max_per_partition=c, rng=KEY)
        distinct = {}
        for i, kk in zip(ids0.tolist(), keys0.tolist()):
            distinct.setdefault(i, set()).add(kk)
        assert counts.sum() == sum(min(len(d), k) * c for d in distinct.values())
        assert counts.max() <= c * len(distinct)


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9), st.integers(-3, 3)),
                min_size=1, max_size=60), st.randoms(use_true_random=False))
def test_bounding_ignores_row_order(rows, rnd) -> None:
    ids, keys, vals = (np.array(c) for c in zip(*rows))
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    a = dpt.bound_contributions(keys, ids, max_partitions=2, max_per_partition=2,
                                values=vals, rng=KEY)
    b = dpt.bound_contributions(keys[perm], ids[perm], max_partitions=2,
                                max_per_partition=2, values=vals[perm], rng=KEY)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9)), min_size=1, max_size=60),
       st.lists(st.integers(0, 12), min_size=1, max_size=20))
def test_adding_a_person_changes_only_their_keys(rows, new_keys) -> None:
    """The sensitivity the calibration uses: one added person changes at most k keys, each
    by at most c, and nobody else's kept rows."""
    k, c = 2, 2
    ids, keys = (np.array(col) for col in zip(*rows))
    ids2 = np.concatenate([ids, np.full(len(new_keys), 99)])
    keys2 = np.concatenate([keys, new_keys])
    _, x, _ = dpt.bound_contributions(keys, ids, max_partitions=k, max_per_partition=c,
                                      rng=KEY)
    ux, _, _ = dpt.bound_contributions(keys, ids, rng=KEY)
    uy, y, _ = dpt.bound_contributions(keys2, ids2, max_partitions=k, max_per_partition=c,
                                       rng=KEY)
    full_x = dict(zip(ux.tolist(), x.tolist()))
    full_y = dict(zip(uy.tolist(), y.tolist()))
    diff = {kk: full_y.get(kk, 0) - full_x.get(kk, 0) for kk in set(full_x) | set(full_y)}
    changed = {kk: d for kk, d in diff.items() if d}
    assert len(changed) <= k
    assert all(0 < d <= c for d in changed.values())
    assert set(changed) <= set(new_keys)


def test_bounding_chooses_keys_uniformly() -> None:
    """Every id holds keys 0..4, k = 2: each key kept by 2/5 of the ids (exact law:
    binomial), and the choices of different ids independent."""
    n = 40000
    ids = np.repeat(np.arange(n), 5)
    keys = np.tile(np.arange(5), n)
    _, counts, _ = dpt.bound_contributions(keys, ids, max_partitions=2, rng=KEY)
    p = 2 / 5
    sd = math.sqrt(n * p * (1 - p))
    assert counts.sum() == 2 * n
    assert np.all(np.abs(counts - n * p) < 4.5 * sd), counts


def test_bounding_chooses_rows_uniformly() -> None:
    """Id i has 4 rows of key i with values 1, 2, 4, 8 and c = 2: the kept sum is one of the
    6 pairs, each with probability 1/6."""
    n = 30000
    ids = np.repeat(np.arange(n), 4)
    vals = np.tile(np.array([8, 1, 4, 2]), n)
    _, counts, sums = dpt.bound_contributions(ids, ids, max_per_partition=2, values=vals,
                                              rng=KEY)
    assert np.all(counts == 2)
    outcomes = np.array([3, 5, 9, 6, 10, 12])
    freq = np.array([(sums == o).sum() for o in outcomes])
    assert freq.sum() == n
    chi2 = ((freq - n / 6) ** 2 / (n / 6)).sum()
    assert chi2 < 25.7  # 5 degrees of freedom, p = 1e-4


# ----------------------------------------------------------------------------- sums, means
def test_sum_and_mean_exact_at_huge_epsilon() -> None:
    r = np.random.default_rng(5)
    keys = r.integers(0, 10, 4000)
    vals = r.integers(-50, 50, 4000)
    dom = np.arange(10)
    s = dpt.sum(vals, keys, bounds=(-20, 30), epsilon=BIG, domain=dom, rng=_replay())
    clamped = np.clip(vals, -20, 30)
    want = np.array([clamped[keys == d].sum() for d in dom])
    assert np.array_equal(s.values, want) and s.values.dtype == np.int64
    m = dpt.mean(vals, keys, bounds=(-20, 30), epsilon=BIG, domain=dom, rng=_replay())
    assert np.allclose(m.values, want / np.bincount(keys, minlength=10))
    fs = dpt.sum(vals.astype(float) / 4, keys, bounds=(-5.0, 7.5), epsilon=BIG, domain=dom,
                 rng=_replay())
    fwant = np.array([np.clip(vals / 4, -5, 7.5)[keys == d].sum() for d in dom])
    assert np.allclose(fs.values, fwant, atol=1e-6)
    assert isinstance(fs.event, ev.Laplace)


def test_sum_sensitivity_in_the_event() -> None:
    keys = np.arange(10) % 3
    ids = np.arange(10)
    s = dpt.sum(np.ones(10, np.int64), keys, ids, bounds=(-4, 3), epsilon=0.5,
                max_partitions=2, max_per_partition=3, domain=[0, 1, 2], rng=_replay())
    assert s.sensitivity["l1"] == 2 * 3 * 4
    assert s.law.scale >= 24 / 0.5
    assert s.event.noise_multiplier == pytest.approx(s.law.scale / 24)


def test_mean_budget_split_and_ci_coverage() -> None:
    r = np.random.default_rng(6)
    nk = 400
    keys = r.integers(0, nk, 40000)
    vals = r.uniform(0, 10, 40000)
    rel = dpt.mean(vals, keys, bounds=(0.0, 10.0), epsilon=1.0, domain=np.arange(nk),
                   rng=_replay())
    assert isinstance(rel.event, ev.Composed) and len(rel.event.events) == 2
    eps = sum(1 / e.noise_multiplier for e in rel.event.events)
    assert eps <= 1.0 + 1e-12
    lo, hi = rel.confidence_interval(0.1)
    truth = np.array([vals[keys == d].mean() for d in range(nk)])
    cover = np.mean((lo <= truth) & (truth <= hi))
    assert cover >= 0.9 - 4 * math.sqrt(0.09 / nk)


def test_count_ci_is_exact() -> None:
    """Coverage of value ± w over 20000 keys equals P(|Z| <= w) computed exactly."""
    nk = 20000
    keys = np.arange(nk)
    rel = dpt.count(keys, epsilon=0.7, domain=keys, rng=_replay())
    lo, hi = rel.confidence_interval(0.05)
    w = int(hi[0] - rel.counts[0])
    a = Fraction(math.exp(-1 / rel.law.scale))
    p_out = float(2 * a ** (w + 1) / (1 + a))
    p_out_less = float(2 * a ** w / (1 + a))
    assert p_out <= 0.05 < p_out_less  # the smallest w
    cover = np.mean((lo <= 1) & (1 <= hi))
    assert abs(cover - (1 - p_out)) < 4 * math.sqrt(p_out * (1 - p_out) / nk)


def test_gaussian_rho_and_budget() -> None:
    keys = np.random.default_rng(7).integers(0, 8, 3000)
    ids = np.arange(3000) // 3
    budget = dpfast.Budget(epsilon=2.0, delta=1e-6, accounting="zcdp")
    rel = dpt.count(keys, ids, rho=0.05, max_partitions=2, max_per_partition=2,
                    domain=np.arange(8), rng=_replay(), budget=budget, note="g")
    assert isinstance(rel.event, ev.Zcdp) and rel.event.rho <= 0.05 * (1 + 1e-12)
    sigma = rel.law.scale
    assert (2 * 2 * 2) / (2 * sigma ** 2) <= 0.05 * (1 + 1e-12)
    assert budget.history()[-1].note == "g"


# ----------------------------------------------------------------------------- budget
class _Refuse:
    def spend(self, event, note=""):
        raise dpfast.BudgetExceededError("no")


def test_budget_refusal_draws_no_noise() -> None:
    gen = dpfast.default_rng(KEY)
    before = gen._root.next_stream
    with pytest.raises(dpfast.BudgetExceededError):
        dpt.count(np.arange(10), epsilon=1.0, domain=np.arange(10), rng=gen,
                  budget=_Refuse())
    assert gen._root.next_stream == before  # no stream was allocated: no noise drawn


def test_budget_is_charged_with_the_event() -> None:
    budget = dpfast.Budget(epsilon=1.0, delta=1e-5, accounting="basic")
    rel = dpt.count(np.arange(100) % 7, np.arange(100), epsilon=0.6, delta=1e-6,
                    budget=budget, note="t1", rng=_replay())
    h = budget.history()
    assert len(h) == 1 and h[0].event == rel.event and h[0].note == "t1"
    with pytest.raises(dpfast.BudgetExceededError):
        dpt.count(np.arange(100) % 7, np.arange(100), epsilon=0.6, delta=1e-6,
                  budget=budget, rng=_replay())
    assert len(budget.history()) == 1


# ----------------------------------------------------------------------------- errors
BAD = [
    (dict(keys=[1, 2], privacy_ids=[1]), ValueError, "privacy_ids"),
    # missing keys (NaN, None) are no longer errors: their rows are dropped (issue 36,
    # tests/test_tables_values_policy.py)
    (dict(keys=[1, 2], epsilon=None), ValueError, "epsilon"),
    (dict(keys=[1, 2], epsilon=-1.0), ValueError, "epsilon"),
    (dict(keys=[1, 2], epsilon="1"), TypeError, "epsilon"),
    (dict(keys=[1, 2], delta=1.5), ValueError, "delta"),
    (dict(keys=[1, 2], epsilon=None, rho=0.0, domain=[1]), ValueError, "rho"),
    (dict(keys=[1, 2], domain=None, delta=0.0), ValueError, "delta"),
    (dict(keys=[1, 2], max_partitions=0), ValueError, "max_partitions"),
    (dict(keys=[1, 2], max_per_partition=1.5), TypeError, "max_per_partition"),
    (dict(keys=[1, 2], noise="uniform"), ValueError, "noise"),
    (dict(keys=[1, 2], domain=[1, 1]), ValueError, "domain"),
    (dict(keys=[1, 2], domain=["a"]), TypeError, "domain"),
    (dict(keys=[[1, 2]]), ValueError, "keys"),
    (dict(keys=[1, 2], budget=object()), TypeError, "budget"),
]


@pytest.mark.parametrize("kw,exc,word", BAD)
def test_bad_count_input(kw, exc, word) -> None:
    args = dict(epsilon=1.0, delta=1e-6, domain=[1, 2])
    args.update(kw)
    keys = args.pop("keys")
    ids = args.pop("privacy_ids", None)
    with pytest.raises(exc, match=word):
        dpt.count(keys, ids, rng=_replay(), **args)


@pytest.mark.parametrize("vals,bounds,exc,word", [
    ([1, 2, 3], (5, 1), ValueError, "bounds"),
    ([1, 2, 3], (0.5, 2), ValueError, "bounds"),
    # a NaN value is no longer an error: its row is dropped (tests/test_tables_values_policy.py)
    ([1, 2], (0, 4), ValueError, "values"),
    ([1, 2, 3], (0, "4"), TypeError, "bounds"),
    (["a", "b", "c"], (0, 4), TypeError, "values"),
])
def test_bad_sum_input(vals, bounds, exc, word) -> None:
    with pytest.raises(exc, match=word):
        dpt.sum(vals, [1, 2, 3], bounds=bounds, epsilon=1.0, domain=[1, 2, 3], rng=_replay())


def test_inputs_are_never_modified() -> None:
    r = np.random.default_rng(8)
    keys = r.integers(0, 5, 500)
    ids = r.integers(0, 50, 500)
    vals = r.normal(size=500) * 10
    copies = [a.copy() for a in (keys, ids, vals)]
    for a in (keys, ids, vals):
        a.flags.writeable = False
    dpt.sum(vals, keys, ids, bounds=(-1.0, 1.0), epsilon=1.0, delta=1e-6,
            max_partitions=2, max_per_partition=2, rng=_replay())
    dpt.mean(vals, keys, ids, bounds=(-1.0, 1.0), epsilon=1.0, domain=np.arange(5), rng=_replay())
    dpt.count(keys, ids, epsilon=1.0, delta=1e-6, max_partitions=2, rng=_replay())
    for a, c in zip((keys, ids, vals), copies):
        assert np.array_equal(a, c)


def test_accuracy_summary_with_and_without_truth() -> None:
    keys = np.random.default_rng(9).integers(0, 100, 20000)
    rel = dpt.count(keys, epsilon=1.0, domain=np.arange(100), rng=_replay())
    s0 = rel.accuracy()
    a = math.exp(-1 / rel.law.scale)
    assert s0.expected_mae == pytest.approx(2 * a / (1 - a * a))
    assert s0.mae is None
    truth = _truth(keys)
    s1 = rel.accuracy(truth)
    assert s1.mae is not None and s1.coverage is not None and s1.utility_ratio > 1
    assert "measured vs truth" in str(s1)
    s2 = rel.accuracy(np.array([truth[k] for k in range(100)]))
    assert s2.mae == s1.mae


def test_release_aggregates_exactly_the_bounded_table() -> None:
    """With the same key, the noiseless release equals bound_contributions (also when a
    domain changes the key codes): bounding depends on the key and each id's rows only."""
    r = np.random.default_rng(10)
    keys = np.array([f"k{v}" for v in r.integers(0, 30, 3000)])
    ids = r.integers(0, 200, 3000)
    vals = r.integers(0, 9, 3000)
    u, counts, sums = dpt.bound_contributions(keys, ids, max_partitions=2,
                                              max_per_partition=2, values=vals, rng=KEY)
    dom = np.concatenate([u, ["zz-unused"]])[::-1]
    rel = dpt.count(keys, ids, epsilon=BIG, max_partitions=2, max_per_partition=2,
                    domain=dom, rng=_replay())
    want = dict(zip(u.tolist(), counts.tolist()))
    assert rel.counts.tolist() == [want.get(k, 0) for k in dom.tolist()]
    s = dpt.sum(vals, keys, ids, bounds=(0, 8), epsilon=BIG, max_partitions=2,
                max_per_partition=2, domain=u, rng=_replay())
    assert np.array_equal(s.values, sums)


@pytest.mark.parametrize("section", ["# Tables from raw records",
                                     "## Histograms (numpy-style)"])
def test_docs_table_examples_run(section: str) -> None:
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "tables.md").read_text()
    body = text.split(section, 1)[1]
    code = re.search(r"```python\n(.*?)```", body, re.S).group(1)
    exec(compile(code, section, "exec"), {"print": lambda *a, **k: None})


def test_bounding_does_not_depend_on_the_thread_count() -> None:
    import numba

    r = np.random.default_rng(11)
    ids = r.integers(0, 5000, 300000)
    keys = r.integers(0, 300, 300000)
    vals = r.integers(0, 50, 300000)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        a = dpt.bound_contributions(keys, ids, max_partitions=3, max_per_partition=2,
                                    values=vals, rng=KEY)
    finally:
        numba.set_num_threads(old)
    b = dpt.bound_contributions(keys, ids, max_partitions=3, max_per_partition=2,
                                values=vals, rng=KEY)
    for x, y in zip(a, b):
        assert np.array_equal(x, y)


def test_canonical_key_encoding_is_injective_and_dtype_free() -> None:
    from dpfast.tables import _keys

    enc = _keys.canonical_encoding(np.array([1, 2, -1], np.int64))
    assert enc == _keys.canonical_encoding(np.array([1, 2, -1], np.int8))
    assert len(set(enc)) == 3
    assert _keys.canonical_encoding(np.array([0.0, -0.0])) == [
        _keys.canonical_encoding(np.array([0.0]))[0]] * 2
    multi = _keys.canonical_encoding((np.array(["ab", "a"]), np.array(["c", "bc"])))
    assert multi[0] != multi[1]  # "ab"+"c" vs "a"+"bc": length prefixes
    assert _keys.canonical_encoding(np.array(["1"])) != _keys.canonical_encoding(
        np.array([1]))
    h = _keys.key_hashes(np.array(["x", "y"]), KEY, b"t")
    assert h.dtype == np.uint64 and h[0] != h[1]
