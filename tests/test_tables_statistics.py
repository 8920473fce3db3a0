"""dpfast.tables.privacy_id_count and count_distinct."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpfast
from dpfast import tables as dpt
from dpfast.tables import _select
from tests.helpers import KEY

pd = pytest.importorskip("pandas")

BIG = 1e7


def _replay() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


def _data(n: int = 4000, seed: int = 0, people: int = 300):
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 15, n), rng.integers(0, people, n),
            rng.choice(np.array(["u", "v", "w", "x", "y"]), n))


# ----------------------------------------------------------------------------- people
def test_privacy_id_count_exact_and_bounded() -> None:
    keys, ids, _ = _data()
    rel = dpt.privacy_id_count(keys, ids, epsilon=BIG, domain=np.arange(15),
                               max_partitions=15, rng=_replay())
    want = pd.Series(ids).groupby(keys).nunique().to_numpy()
    np.testing.assert_array_equal(rel.values, want)
    assert rel.statistic == "privacy_id_count"
    # bounded to k keys per person: the count with one row per (person, key), k keys
    k = 2
    rel = dpt.privacy_id_count(keys, ids, epsilon=BIG, domain=np.arange(15),
                               max_partitions=k, rng=_replay())
    u, counts, _ = dpt.bound_contributions(keys, ids, max_partitions=k, max_per_partition=1,
                                           rng=_replay())
    np.testing.assert_array_equal(rel.values, counts)
    per_person = pd.Series(keys).groupby(ids).nunique()
    assert counts.sum() == np.minimum(per_person, k).sum()  # each person min(k, own keys)


def test_privacy_id_count_sensitivity_threshold_and_charge() -> None:
    keys, ids, _ = _data(20000, people=4000)
    k, eps, delta = 3, 1.0, 1e-6
    budget = dpfast.Budget(epsilon=eps, delta=1e-5, accounting="basic")
    rel = dpt.privacy_id_count(keys, ids, epsilon=eps, delta=delta, max_partitions=k,
                               rng=_replay(), budget=budget, note="people")
    assert rel.sensitivity["l1"] == k
    assert rel.law.kind == "discrete_laplace"
    # half of ε selects the keys (a separate measurement on the people per key)
    assert rel.law.scale == pytest.approx(2 * k / eps, rel=1e-9) and rel.law.scale >= 2 * k / eps
    sel = _select.plan(eps / 2, delta, k, "auto")
    assert rel.selection == sel and rel.threshold == sel.threshold
    assert rel.event.delta == sel.delta <= delta and len(rel) > 5
    assert [h.note for h in budget.history()] == ["people"]
    assert budget.history()[0].event == rel.event


def test_privacy_id_count_replays_with_a_generator() -> None:
    keys, ids, _ = _data()
    a = dpt.privacy_id_count(keys, ids, epsilon=1.0, domain=np.arange(15), rng=_replay())
    b = dpt.privacy_id_count(keys, ids, epsilon=1.0, domain=np.arange(15), rng=_replay())
    np.testing.assert_array_equal(a.values, b.values)
    c = dpt.privacy_id_count(keys, ids, epsilon=1.0, domain=np.arange(15), rng=KEY)
    assert c.release_id is not None


# ----------------------------------------------------------------------------- distinct
def test_count_distinct_exact_where_bounding_does_not_bind() -> None:
    keys, ids, vals = _data()
    rel = dpt.count_distinct(vals, keys, ids, epsilon=BIG, domain=np.arange(15),
                             max_partitions=15, max_per_partition=5, rng=_replay())
    want = pd.Series(vals).groupby(keys).nunique().to_numpy()
    np.testing.assert_array_equal(rel.values, want)
    assert rel.statistic == "count_distinct" and rel.sensitivity["l1"] == 75


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 5),
                          st.integers(0, 6)), max_size=50),
       st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 9)), min_size=1,
                max_size=10),
       st.integers(1, 3), st.integers(1, 3))
def test_adding_a_person_changes_at_most_k_keys_by_at_most_c(rows, person, k, c) -> None:
    dom = np.array(["a", "b", "c"], dtype=object)

    def run(rs):
        if not rs:
            return np.zeros(3, np.int64)
        keys, ids, vals = (np.array(col, dtype=object if j == 0 else np.int64)
                           for j, col in enumerate(zip(*rs)))
        return dpt.count_distinct(vals, keys, ids, epsilon=BIG, domain=dom,
                                  max_partitions=k, max_per_partition=c,
                                  rng=_replay()).values

    before = run(rows)
    after = run(rows + [(key, 99, v) for key, v in person])
    d = after - before
    assert (d >= 0).all() and (d <= c).all() and (d != 0).sum() <= k
    if rows:  # bounding never keeps more distinct values than there are
        df = pd.DataFrame(rows, columns=["k", "i", "v"])
        truth = df.groupby("k").v.nunique().reindex(dom, fill_value=0).to_numpy()
        assert (before <= truth).all()


def test_count_distinct_noise_follows_its_law_and_selection() -> None:
    n = 100_000
    keys = np.arange(n)
    rel = dpt.count_distinct(keys % 3, keys, epsilon=0.8, domain=keys, rng=_replay())
    z = rel.values - 1
    se = np.std(np.abs(z)) / math.sqrt(n)
    assert abs(np.mean(np.abs(z)) - rel.law.mean_abs()) < 4 * se
    keys, ids, vals = _data(20000, people=5000)
    k, c, delta = 1, 2, 1e-6
    sel = dpt.count_distinct(np.arange(20000), keys, ids, epsilon=1.0, delta=delta,
                             max_partitions=k, max_per_partition=c, rng=_replay())
    assert sel.law.scale == pytest.approx(2 * k * c, rel=1e-9)  # half of ε on the counts
    rule = _select.plan(0.5, delta, k, "auto")
    assert sel.selection == rule and sel.event.delta == rule.delta
    assert len(sel) > 5


BAD = [
    (dict(values=np.array([1, 2])), ValueError, "values"),
    # a NaN value drops its row (issue 36): tests/test_tables_values_policy.py
    (dict(max_per_partition=0), ValueError, "max_per_partition"),
    (dict(max_partitions=1.5), TypeError, "max_partitions"),
    (dict(epsilon=None), ValueError, "epsilon"),
    (dict(privacy_ids=np.array([1, 2])), ValueError, "privacy_ids"),
    (dict(budget=3), TypeError, "budget"),
    (dict(dropna="no"), TypeError, "dropna"),
]


@pytest.mark.parametrize("kw,exc,word", BAD)
def test_count_distinct_bad_input(kw, exc, word) -> None:
    args = dict(values=np.array([1, 2, 2]), keys=np.array([0, 1, 1]),
                privacy_ids=np.array([5, 6, 7]), epsilon=1.0, domain=np.arange(2))
    args.update(kw)
    with pytest.raises(exc, match=word):
        dpt.count_distinct(**args)


@pytest.mark.parametrize("kw,exc,word", [
    (dict(max_partitions=0), ValueError, "max_partitions"),
    (dict(privacy_ids=np.array([1])), ValueError, "privacy_ids"),
    (dict(noise="uniform"), ValueError, "noise"),
    (dict(domain=[0, 0]), ValueError, "domain"),
])
def test_privacy_id_count_bad_input(kw, exc, word) -> None:
    args = dict(keys=np.array([0, 1, 1]), privacy_ids=np.array([5, 6, 7]), epsilon=1.0,
                domain=np.arange(2))
    args.update(kw)
    with pytest.raises(exc, match=word):
        dpt.privacy_id_count(**args)


def test_inputs_are_not_modified() -> None:
    keys, ids, vals = _data(300)
    copies = [a.copy() for a in (keys, ids, vals)]
    dpt.count_distinct(vals, keys, ids, epsilon=1.0, domain=np.arange(15), rng=_replay())
    dpt.privacy_id_count(keys, ids, epsilon=1.0, domain=np.arange(15), rng=_replay())
    for a, b in zip((keys, ids, vals), copies):
        np.testing.assert_array_equal(a, b)


@given(st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(["p", "q", "r", "s"])),
                max_size=40), st.integers(1, 4))
def test_privacy_id_count_of_any_table_is_the_bounded_people_count(rows, k) -> None:
    keys = np.array([r[0] for r in rows], np.int64)
    ids = np.array([r[1] for r in rows], dtype=object)
    dom = np.arange(-3, 4)
    rel = dpt.privacy_id_count(keys, ids, epsilon=BIG, domain=dom, max_partitions=k,
                               rng=_replay())
    truth = pd.Series(ids).groupby(keys).nunique().reindex(dom, fill_value=0).to_numpy() \
        if rows else np.zeros(7, np.int64)
    assert (rel.values <= truth).all() and rel.values.sum() <= k * len(set(ids.tolist()))
    if rows:
        u, counts, _ = dpt.bound_contributions(keys, ids, max_partitions=k,
                                               max_per_partition=1, rng=_replay())
        got = dict(zip(rel.keys.tolist(), rel.values.tolist()))
        assert all(got[key] == cnt for key, cnt in zip(u.tolist(), counts.tolist()))


def test_count_distinct_replays_with_a_generator_never_with_a_raw_key() -> None:
    keys, ids, vals = _data()
    kw = dict(epsilon=1.0, domain=np.arange(15), max_partitions=2, max_per_partition=2)
    a = dpt.count_distinct(vals, keys, ids, rng=_replay(), **kw)
    b = dpt.count_distinct(vals, keys, ids, rng=_replay(), **kw)
    np.testing.assert_array_equal(a.values, b.values)
    c = dpt.count_distinct(vals, keys, ids, rng=KEY, **kw)
    d = dpt.count_distinct(vals, keys, ids, rng=KEY, **kw)
    assert c.release_id != d.release_id and not np.array_equal(c.values, d.values)


def test_count_distinct_charges_one_event_before_the_noise() -> None:
    keys, ids, vals = _data()
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    rel = dpt.count_distinct(vals, keys, ids, epsilon=0.6, domain=np.arange(15),
                             max_partitions=2, max_per_partition=2, rng=_replay(),
                             budget=budget, note="distinct")
    h = budget.history()
    assert [c.note for c in h] == ["distinct"] and h[0].event == rel.event
    assert rel.law.scale == pytest.approx(4 / 0.6, rel=1e-9)  # Δ1 = k c = 4
    gen = _replay()
    before = gen._root.next_stream
    with pytest.raises(dpfast.BudgetExceededError):
        dpt.count_distinct(vals, keys, ids, epsilon=0.6, domain=np.arange(15), rng=gen,
                           budget=budget)
    assert gen._root.next_stream == before and len(budget.history()) == 1


# ----------------------------------------------------------------------------- pipeline
def test_count_distinct_is_a_registry_statistic_planned_without_rows() -> None:
    """count_distinct is the statistic CountDistinct of the registry; its plan (event,
    part, selection) comes from the spec alone -- the rows are never read to know what a
    release costs (the session's event without a probe run)."""
    from dpfast.tables import plan as plan_mod
    from dpfast.tables import run as run_mod
    from dpfast.tables import spec as spec_mod
    from dpfast.tables.statistics import REGISTRY, distinct

    cls = REGISTRY["count_distinct"]
    assert cls is distinct.CountDistinct
    assert (cls.sql_names, cls.value, cls.bounds, cls.bounding_mode) == (
        ("count_distinct",), True, False, "distinct")
    keys, ids, vals = _data()
    for kw in (dict(epsilon=0.7, domain=np.arange(15)),
               dict(epsilon=1.0, delta=1e-6, max_partitions=3, max_per_partition=2),
               dict(rho=0.2, domain=np.arange(15), max_per_partition=4)):
        spec = spec_mod.ReleaseSpec.make([spec_mod.StatSpec("count_distinct")], **kw)

        class Unread:  # a source whose rows raise if anything reads them
            def has_privacy_ids(self) -> bool:
                return True

            def __getattr__(self, name):
                raise AssertionError(f"the plan read the rows' {name}")

        p = plan_mod.plan(spec, Unread())
        rel = dpt.count_distinct(vals, keys, ids, rng=_replay(), **kw)
        assert p.event == rel.event and p.part.law == rel.law
        assert isinstance(p, run_mod.Plan)
    # without privacy ids every row is a person: one key, one value each
    spec = spec_mod.ReleaseSpec.make([spec_mod.StatSpec("count_distinct")], epsilon=1.0,
                                     domain=np.arange(3), max_partitions=4,
                                     max_per_partition=5)
    p = plan_mod.plan(spec, run_mod.Rows(np.array([0, 1]), None, np.array([1, 2])))
    assert (p.k, p.c) == (1, 1)


def test_count_distinct_is_charged_by_the_one_pipeline(monkeypatch) -> None:
    """The one charge site: count_distinct is charged by run.release (the old pipeline
    charged in its own ``with _charge(...)``), once, with the plan's event, after the rows
    were validated."""
    from dpfast.tables import run as run_mod

    seen = []
    real = run_mod.charged

    def spy(budget, event, note):
        seen.append((event, note))
        return real(budget, event, note)

    monkeypatch.setattr(run_mod, "charged", spy)
    keys, ids, vals = _data()
    budget = dpfast.Budget(epsilon=5.0, accounting="basic")
    rel = dpt.count_distinct(vals, keys, ids, epsilon=1.0, domain=np.arange(15),
                             rng=_replay(), budget=budget, note="d")
    assert seen == [(rel.event, "d")] and len(budget.history()) == 1
    with pytest.raises(ValueError, match="values"):  # bad rows: refused before the charge
        dpt.count_distinct(vals[:-1], keys, ids, epsilon=1.0, domain=np.arange(15),
                           rng=_replay(), budget=budget)
    assert len(seen) == 1 and len(budget.history()) == 1
