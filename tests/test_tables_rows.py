"""Bounding over a value matrix (dpfast.tables._rows): rows kept once for every column."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import dpfast
from dpfast.tables import _rows, bounding
from tests.helpers import KEY


def _skey() -> np.ndarray:
    return bounding.subkey(dpfast.default_rng(KEY))


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 30, n).astype(np.int64), rng.integers(0, 300, n).astype(np.int64),
            rng.integers(-6, 7, n).astype(np.int64))


def _two_word(b: _rows.RowsBounded, j: int) -> np.ndarray:
    return b.hi[:, j] * (1 << 32) + b.lo[:, j]


def test_one_column_keeps_the_rows_bound_values_keeps() -> None:
    codes, ids, vals = _data(6000, 1)
    ref = bounding.bound_codes(codes, 30, ids, 3, 2, _skey(), vals)
    got = _rows.bound_matrix(codes, 30, ids, 3, 2, _skey(), vals[:, None])
    np.testing.assert_array_equal(got.counts, ref.counts)
    np.testing.assert_array_equal(_two_word(got, 0), ref.sums)
    # the privacy-id count is the count with one row per (id, key): bound_counts with c = 1
    ref_ids = bounding.bound_codes(codes, 30, ids, 3, 1, _skey())
    np.testing.assert_array_equal(got.ids, ref_ids.counts)


def test_every_column_is_summed_over_the_same_kept_rows() -> None:
    codes, ids, vals = _data(5000, 2)
    mat = np.stack([vals, vals * vals, np.full_like(vals, 7)], axis=1)
    b = _rows.bound_matrix(codes, 30, ids, 2, 3, _skey(), mat, mark=True)
    assert b.kept is not None
    for j in range(3):
        want = np.zeros(30, np.int64)
        np.add.at(want, codes[b.kept], mat[b.kept, j])
        np.testing.assert_array_equal(_two_word(b, j), want)
    np.testing.assert_array_equal(_two_word(b, 2), 7 * b.counts)  # a constant column
    kept_per = {}
    for i, k in zip(ids[b.kept].tolist(), codes[b.kept].tolist()):
        kept_per.setdefault(i, {}).setdefault(k, 0)
        kept_per[i][k] += 1
    assert all(len(v) <= 2 and max(v.values()) <= 3 for v in kept_per.values())


def test_distinct_keeps_at_most_c_distinct_values_per_id_and_key() -> None:
    codes, ids, vals = _data(5000, 3)
    b = _rows.bound_matrix(codes, 30, ids, 2, 2, _skey(), vals[:, None], mark=True,
                           distinct=True)
    assert b.kept is not None
    seen: dict[tuple[int, int], list[int]] = {}
    for i, k, v in zip(ids[b.kept].tolist(), codes[b.kept].tolist(),
                       vals[b.kept].tolist()):
        seen.setdefault((i, k), []).append(v)
    for vs in seen.values():
        assert len(vs) == len(set(vs)) <= 2  # one row per distinct value, at most c
    per_id: dict[int, set[int]] = {}
    for i, k in seen:
        per_id.setdefault(i, set()).add(k)
    assert max(len(s) for s in per_id.values()) <= 2
    # where nothing binds, every distinct value is kept
    few = _rows.bound_matrix(codes, 30, ids, 30, 13, _skey(), vals[:, None], mark=True,
                             distinct=True)
    assert few.kept is not None
    triples = set(zip(ids.tolist(), codes.tolist(), vals.tolist()))
    assert int(few.kept.sum()) == len(triples)


@given(st.integers(0, 10**6))
def test_the_choice_ignores_the_row_order(seed: int) -> None:
    codes, ids, vals = _data(400, seed)
    mat = np.stack([vals, -vals, vals % 3], axis=1)
    perm = np.random.default_rng(seed + 1).permutation(400)
    a = _rows.bound_matrix(codes, 30, ids, 2, 2, _skey(), mat)
    b = _rows.bound_matrix(codes[perm], 30, ids[perm], 2, 2, _skey(), mat[perm])
    for x, y in ((a.counts, b.counts), (a.ids, b.ids), (a.hi, b.hi), (a.lo, b.lo)):
        np.testing.assert_array_equal(x, y)


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9), st.integers(-4, 4)),
                min_size=0, max_size=60),
       st.lists(st.tuples(st.integers(0, 6), st.integers(-4, 4)), min_size=1, max_size=12),
       st.integers(1, 3), st.integers(1, 3))
def test_adding_a_person_moves_each_part_within_its_sensitivity(rows, person, k, c) -> None:
    """The sensitivity the plan states: one added person changes at most k keys, each
    count by <= c, each privacy-id count by <= 1, each column by <= c max|summand|."""
    def run(rs: list[tuple[int, int, int]]) -> _rows.RowsBounded:
        arr = np.array(rs, np.int64).reshape(-1, 3)
        mat = np.stack([arr[:, 2], arr[:, 2] ** 2], axis=1)
        return _rows.bound_matrix(arr[:, 0].copy(), 7, arr[:, 1].copy(), k, c, _skey(), mat)

    new_id = 99
    before = run(rows)
    after = run(rows + [(key, new_id, v) for key, v in person])
    dc = after.counts - before.counts
    di = after.ids - before.ids
    d0 = _two_word(after, 0) - _two_word(before, 0)
    d1 = _two_word(after, 1) - _two_word(before, 1)
    changed = (dc != 0) | (di != 0) | (d0 != 0) | (d1 != 0)
    assert changed.sum() <= k
    assert (dc >= 0).all() and (dc <= c).all()
    assert (di >= 0).all() and (di <= 1).all()
    assert (np.abs(d0) <= 4 * c).all() and (d1 >= 0).all() and (d1 <= 16 * c).all()


def test_every_row_its_own_person_without_ids() -> None:
    codes, _, vals = _data(1000, 4)
    b = _rows.bound_matrix(codes, 30, None, 1, 1, _skey(), vals[:, None], mark=True)
    np.testing.assert_array_equal(b.counts, np.bincount(codes, minlength=30))
    np.testing.assert_array_equal(b.ids, b.counts)
    want = np.zeros(30, np.int64)
    np.add.at(want, codes, vals)
    np.testing.assert_array_equal(_two_word(b, 0), want)
    assert b.kept is not None and b.kept.all()
