"""``bounding="frequent"`` for every statistic: the value-matrix bounding
(:func:`dpfast.tables._rows.bound_matrix`: aggregate, variance, std, privacy_id_count,
count_distinct) and the quantile bounding (:func:`dpfast.tables._quantile_em.bound_slots`)
keep, per person, exactly the keys :func:`dpfast.tables.bound_contributions` reports for the
same policy and key; "frequent" keeps the keys with the most rows; the choice depends only
on the person's own rows (not on the row order or other people)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfast
import dpfast.tables as dpt
from dpfast.tables import _quantile_em as em
from dpfast.tables import _rows, bounding
from tests.helpers import KEY

POLICIES = ("uniform", "frequent")


def _skey() -> np.ndarray:
    return bounding.subkey(dpfast.default_rng(KEY))


def _data(n: int, seed: int, n_keys: int = 12, n_ids: int = 150
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Key codes (skewed, so people have keys of different sizes), ids, values."""
    r = np.random.default_rng(seed)
    return ((r.zipf(1.6, n) % n_keys).astype(np.int64), r.integers(0, n_ids, n).astype(np.int64),
            r.integers(-5, 6, n).astype(np.int64))


def _reference(codes: np.ndarray, ids: np.ndarray, k: int, c: int, pol: str
               ) -> set[tuple[int, int]]:
    """The (person, key) pairs kept: per person, the keys ``bound_contributions`` (one
    person's rows alone, the same key) reports with a kept unit."""
    out: set[tuple[int, int]] = set()
    for p in np.unique(ids).tolist():
        mine = ids == p
        keys, _, _, units = dpt.bound_contributions(codes[mine], ids[mine], max_partitions=k,
                                                    max_per_partition=c, rng=KEY,
                                                    bounding=pol, units=True)
        out.update((p, int(key)) for key, u in zip(keys.tolist(), units.tolist()) if u)
    return out


def _pairs(ids: np.ndarray, codes: np.ndarray) -> set[tuple[int, int]]:
    return set(zip(ids.tolist(), codes.tolist()))


def _matrix_pairs(codes: np.ndarray, ids: np.ndarray, vals: np.ndarray, k: int, c: int,
                  pol: str, distinct: bool = False) -> set[tuple[int, int]]:
    b = _rows.bound_matrix(codes, int(codes.max()) + 1, ids, k, c, _skey(), vals[:, None],
                           mark=True, distinct=distinct, policy=bounding.policy_code(pol))
    assert b.kept is not None
    return _pairs(ids[b.kept], codes[b.kept])


def _slot_pairs(codes: np.ndarray, ids: np.ndarray, k: int, c: int, pol: str
                ) -> set[tuple[int, int]]:
    """The quantile bounding's kept (person, key) pairs: the person rides in the slot
    (every row of a person has the same slot, so the rows chosen within a key do not
    matter and the key choice is read off the kept rows)."""
    kc, ks = em.bound_slots(codes, ids, k, c, _skey(), ids.copy(),
                            bounding.policy_code(pol))
    return _pairs(ks, kc)


@pytest.mark.parametrize("pol", POLICIES)
def test_every_bounding_keeps_the_pairs_bound_contributions_reports(pol: str) -> None:
    codes, ids, vals = _data(4000, 1)
    k, c = 3, 2
    ref = _reference(codes, ids, k, c, pol)
    assert _matrix_pairs(codes, ids, vals, k, c, pol) == ref  # aggregate, variance, std
    assert _matrix_pairs(codes, ids, vals, k, 1, pol) == ref  # privacy_id_count (c = 1)
    assert _matrix_pairs(codes, ids, vals, k, c, pol, distinct=True) == ref  # count_distinct
    assert _slot_pairs(codes, ids, k, c, pol) == ref  # quantile / median / min / max
    # the quantile's key selection counts the people of the same choice
    _, _, _, units = dpt.bound_contributions(codes, ids, max_partitions=k, max_per_partition=c,
                                             rng=KEY, bounding=pol, units=True)
    b = _rows.bound_matrix(codes, int(codes.max()) + 1, ids, k, c, _skey(), vals[:, None],
                           policy=bounding.policy_code(pol))
    np.testing.assert_array_equal(b.ids, units)
    # one column: the rows bound_codes keeps (counts and sums)
    ref_b = bounding.bound_codes(codes, int(codes.max()) + 1, ids, k, c, _skey(), vals,
                                 policy=bounding.policy_code(pol))
    np.testing.assert_array_equal(b.counts, ref_b.counts)
    np.testing.assert_array_equal(b.hi[:, 0] * (1 << 32) + b.lo[:, 0], ref_b.sums)


def test_frequent_keeps_each_persons_most_frequent_keys() -> None:
    """Every kept key of a person has at least as many of their rows as every dropped one,
    for the matrix and the quantile bounding; and the two policies differ on this data."""
    codes, ids, vals = _data(4000, 2)
    k = 2
    kept = _matrix_pairs(codes, ids, vals, k, 1, "frequent")
    assert kept == _slot_pairs(codes, ids, k, 1, "frequent")
    for p in np.unique(ids).tolist():
        ks, rows = np.unique(codes[ids == p], return_counts=True)
        mine = {key for (q, key) in kept if q == p}
        assert len(mine) == min(k, ks.size)
        n_kept = [r for key, r in zip(ks.tolist(), rows.tolist()) if key in mine]
        n_drop = [r for key, r in zip(ks.tolist(), rows.tolist()) if key not in mine]
        assert not n_drop or min(n_kept) >= max(n_drop)
    assert kept != _matrix_pairs(codes, ids, vals, k, 1, "uniform")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 5), st.integers(-3, 3)),
                min_size=1, max_size=60),
       st.integers(1, 3), st.integers(1, 3), st.sampled_from(POLICIES), st.randoms())
def test_choice_depends_only_on_a_persons_own_rows(rows: list[tuple[int, int, int]], k: int,
                                                   c: int, pol: str, rnd: object) -> None:
    """Any rows, any row order: the kept (person, key) pairs of the matrix and quantile
    bounding are the per-person ``bound_contributions`` choice (so they do not depend on
    the row order or on the other people)."""
    arr = np.array(rows, np.int64)
    perm = np.array(rnd.sample(range(len(rows)), len(rows)), np.int64)  # type: ignore[attr-defined]
    codes, ids, vals = arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy()
    ref = _reference(codes, ids, k, c, pol)
    for order in (np.arange(len(rows)), perm):
        cc, ii, vv = codes[order], ids[order], vals[order]
        assert _matrix_pairs(cc, ii, vv, k, c, pol) == ref
        assert _matrix_pairs(cc, ii, vv, k, c, pol, distinct=True) == ref
        assert _slot_pairs(cc, ii, k, c, pol) == ref


def _frame(n: int = 5000, seed: int = 3) -> dict[str, np.ndarray]:
    r = np.random.default_rng(seed)
    return {"k": (r.zipf(1.6, n) % 15).astype(np.int64), "id": r.integers(0, 400, n),
            "x": r.normal(2.0, 3.0, n), "v": r.integers(0, 9, n)}


def test_releases_take_bounding_and_count_the_chosen_people() -> None:
    """Each release accepts ``bounding=``; with a huge ε (noise 0 here) the released number
    of people per key is the bound_contributions one for that policy."""
    pd = pytest.importorskip("pandas")
    f = _frame()
    dom = np.arange(15)
    for pol in POLICIES:
        _, _, _, units = dpt.bound_contributions(f["k"], f["id"], max_partitions=2, rng=KEY,
                                                 bounding=pol, units=True)
        # a Generator (not raw key bytes, which get a fresh release key): the same sub-key
        rel = dpt.privacy_id_count(f["k"], f["id"], epsilon=1e4, max_partitions=2,
                                   domain=dom, rng=dpfast.default_rng(KEY), bounding=pol)
        np.testing.assert_array_equal(rel.values, units)
        agg = dpt.aggregate(pd.DataFrame(f), by="k", privacy_id="id",
                            metrics=["privacy_id_count", ("variance", "x")], epsilon=1e4,
                            bounds={"x": (-4.0, 8.0)}, max_partitions=2, domain=dom,
                            rng=dpfast.default_rng(KEY), bounding=pol)
        np.testing.assert_array_equal(agg["privacy_id_count"].values, units)
    kw = dict(epsilon=1.0, max_partitions=2, max_per_partition=2, domain=dom, rng=KEY)
    for fn in (dpt.variance, dpt.std):
        a = fn(f["x"], f["k"], f["id"], bounds=(-4.0, 8.0), bounding="frequent", **kw)
        b = fn(f["x"], f["k"], f["id"], bounds=(-4.0, 8.0), **kw)
        assert a.keys.tolist() == b.keys.tolist()
    a = dpt.count_distinct(f["v"], f["k"], f["id"], bounding="frequent", **kw)
    assert len(a) == 15
    for fn in (dpt.median, dpt.min, dpt.max):
        assert len(fn(f["x"], f["k"], f["id"], bounds=(-4.0, 8.0), bounding="frequent",
                      **kw)) == 15
    q = dpt.quantile(f["x"], f["k"], f["id"], q=[0.25, 0.75], bounds=(-4.0, 8.0),
                     epsilon=2.0, delta=1e-5, max_partitions=2, rng=KEY, bounding="frequent")
    assert q.selection is not None


@pytest.mark.parametrize("call", ["variance", "std", "privacy_id_count", "count_distinct",
                                  "quantile", "aggregate"])
def test_bad_bounding_is_refused_naming_it(call: str) -> None:
    f = _frame(200)
    kw = dict(epsilon=1.0, domain=np.arange(15), bounding="most")
    with pytest.raises(ValueError, match="bounding"):
        if call in ("variance", "std"):
            getattr(dpt, call)(f["x"], f["k"], f["id"], bounds=(0.0, 1.0), **kw)
        elif call == "privacy_id_count":
            dpt.privacy_id_count(f["k"], f["id"], **kw)
        elif call == "count_distinct":
            dpt.count_distinct(f["v"], f["k"], f["id"], **kw)
        elif call == "quantile":
            dpt.quantile(f["x"], f["k"], f["id"], q=0.5, bounds=(0.0, 1.0), **kw)
        else:
            pd = pytest.importorskip("pandas")
            dpt.aggregate(pd.DataFrame(f), by="k", privacy_id="id", metrics=["count"], **kw)
