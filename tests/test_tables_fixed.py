"""Exact fixed-point float sums (issue 22 item 2; Casacuberta et al., CCS 2022): adding one
person moves a float sum by at most the clamp bound, in the arithmetic that computes it."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfast
from dpfast import tables as dpt
from dpfast.mechanisms import LaplaceMechanism
from dpfast.tables import _fixed, bounding
from tests.helpers import KEY


def _replay() -> dpfast.Generator:
    """A generator rebuilt from the fixed key: replays a release (a raw key never does)."""
    return dpfast.default_rng(KEY)


def _exact_sums(vals: np.ndarray, ids: np.ndarray | None, fx: _fixed.Fixed, c: int = 1
                ) -> Fraction:
    """The exact total a release noises (one key): the pipeline's own summands and kernels."""
    codes = np.zeros(len(vals), np.int64)
    skey = bounding.subkey(_replay())
    agg = bounding.bound_codes(codes, 1, ids, 1, c, skey, _fixed.to_units(fx, vals), fx.exp)
    assert isinstance(agg.sums, _fixed.FixedSums)
    return agg.sums.exact(0)


def test_adding_one_person_moves_a_released_float_sum_by_at_most_b_plus_g() -> None:
    """Adversarial neighbours: bystanders summed in id order rise to a large partial sum
    and fall back (float64 accumulation re-rounds the change at every binade it crosses:
    up to ~50 grid steps beyond ``B + g`` here); the added person holds the bound.  With
    the same noise the two releases differ by at most ``B + g`` plus the output's
    rounding."""
    b, eps, m = 0.7337, 64.0, 10_000
    r = np.random.default_rng(1)
    kw = dict(bounds=(-b, b), epsilon=eps, domain=[0])
    for _ in range(5):
        vals = np.r_[r.uniform(0, b, m), -r.uniform(0, b, m)]
        ids = np.arange(1, 2 * m + 1)
        keys = np.zeros(2 * m, np.int64)
        r0 = dpt.sum(vals, keys, ids, rng=_replay(), **kw)
        r1 = dpt.sum(np.r_[b, vals], np.r_[0, keys], np.r_[0, ids], rng=_replay(), **kw)
        g = r0.law.granularity
        v0, v1 = float(r0.values[0]), float(r1.values[0])
        slack = (np.spacing(abs(v0)) + np.spacing(abs(v1))) / 2
        assert abs(v1 - v0) <= b + g + slack, (abs(v1 - v0) - b) / g


@pytest.mark.parametrize("where", ["first", "last", "middle"])
def test_exact_total_of_a_neighbour_differs_by_at_most_the_bound(where: str) -> None:
    """Values next to powers of two (every binade from 2**-40 to 2**0, both signs), many
    rows: the exact fixed-point total moves by the added person's rounded value, never by
    more than the bound."""
    b = 1.0
    g = LaplaceMechanism(epsilon=8.0, sensitivity=b, max_changed=1).granularity
    fx = _fixed.fixed_grid(-b, b, g, 1, False)
    r = np.random.default_rng(2)
    p2 = 2.0 ** -r.integers(0, 41, 30_000)
    vals = np.where(r.random(30_000) < 0.5, np.nextafter(p2, 0), np.nextafter(p2, 2)) \
        * np.where(r.random(30_000) < 0.7, 1.0, -1.0)
    vals = np.clip(vals, -b, b)
    ids = np.arange(1, 30_001)
    base = _exact_sums(vals, ids, fx)
    pos = {"first": 0, "last": 30_000, "middle": 15_000}[where]
    for added in (b, -b, np.nextafter(b, 0), 0.5 + 2.0 ** -52, 2.0 ** -45):
        v2 = np.insert(vals, pos, added)
        i2 = np.insert(ids, pos, 0 if where == "first" else 10 ** 9)
        diff = _exact_sums(v2, i2, fx) - base
        assert abs(diff) <= Fraction(b)
        q = Fraction(2) ** fx.exp
        assert abs(diff - Fraction(added)) <= q / 2  # rounded once, to the fine grid
    # reordering the rows changes nothing, exactly
    perm = r.permutation(30_000)
    assert _exact_sums(vals[perm], ids[perm], fx) == base
    assert _exact_sums(vals[perm], None, fx) == _exact_sums(vals, None, fx) == base


@pytest.mark.parametrize("stat", ["sum", "mean"])
def test_shuffled_rows_give_bit_identical_float_releases(stat: str) -> None:
    r = np.random.default_rng(3)
    n = 20_000
    vals = r.uniform(-3, 5, n) * 2.0 ** r.integers(-20, 2, n)
    keys = r.integers(0, 6, n)
    ids = r.integers(0, 4000, n)
    fn = getattr(dpt, stat)
    kw = dict(bounds=(-2.5, 4.0), epsilon=1024.0, domain=np.arange(6))  # g below a sum's ulp
    perm = r.permutation(n)
    for pid in (None, ids):
        a = fn(vals, keys, pid, rng=_replay(), **kw)
        b = fn(vals[perm], keys[perm], None if pid is None else pid[perm], rng=_replay(),
               **kw)
        np.testing.assert_array_equal(a.values, b.values)


@settings(max_examples=60, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(0, 1e6),
       st.lists(st.floats(-2e6, 2e6), min_size=1, max_size=20),
       st.sampled_from([2.0 ** -60, 2.0 ** -30, 2.0 ** -8, 1.0]), st.integers(1, 9),
       st.booleans())
def test_fixed_point_summands_stay_within_the_bound(lo: float, width: float, xs: list,
                                                    g: float, c: int, centre: bool) -> None:
    hi = lo + width
    fx = _fixed.fixed_grid(lo, hi, g, c, centre)
    vals = np.clip(np.array(xs), lo, hi)
    u = _fixed.to_units(fx, vals)
    q = Fraction(2) ** fx.exp
    bound = (Fraction(hi) - Fraction(lo)) if centre else max(abs(Fraction(lo)),
                                                              abs(Fraction(hi)))
    if fx.exp > math.frexp(g)[1] - 1 - _fixed.GUARD_BITS:  # coarser only when it must be:
        finer = q / 2  # the next finer grid would break a capacity bound
        mag = max(abs(Fraction(lo)), abs(Fraction(hi)))
        # (a value at most 2**53 units: 2**40 rows total below 2**94, issue 36)
        assert mag / finer > 2 ** 53 or c * (2 * mag if centre else mag) / finer > 2 ** 61
    for x, ui in zip(vals.tolist(), u.tolist()):
        assert abs(ui) <= fx.bound and abs(ui * q) <= bound
        if not centre and fx.lo_units <= Fraction(x) / q <= fx.hi_units:
            assert abs(ui * q - Fraction(x)) <= q / 2  # rounded once, to nearest
    assert c * fx.bound <= 2 ** 61  # one id's c summands fit int64


def test_two_word_totals_raise_instead_of_wrapping() -> None:
    s = _fixed.FixedSums.zeros(2, -10)
    big = np.array([(1 << 61) - 1, 5], np.int64)
    s.add_partials(np.array([0, 1]), big, np.array([0, 7], np.int64))
    assert s.exact(0) == Fraction(((1 << 61) - 1) << 32, 1 << 10)
    with pytest.raises(OverflowError, match="2\\*\\*94"):
        s.add_partials(np.array([0]), np.array([(1 << 61) + 1], np.int64), np.zeros(1, np.int64))
    t = _fixed.FixedSums.zeros(1, 0)
    t.add_rows(np.zeros(3, np.int64), np.array([-(1 << 62), 1 << 62, -5], np.int64))
    assert t.exact(0) == -5 and t.lo[0] < 1 << 32
    r, big_ = _fixed.grid_steps(_fixed.FixedSums(np.array([-1, 3, 1 << 40]),
                                                 np.array([(1 << 32) - 6, 0, 0]), -4), 1.0)
    # -6/16 -> 0 (nearest), 3 * 2**32 / 16 exactly, 2**72 / 16 = 2**68 beyond int64
    assert r[0] == 0 and r[1] == 3 << 28 and big_ == {2: 1 << 68}


def test_tiny_bounds_need_two_scalings() -> None:
    """Bounds near the subnormals: ``2**-e`` overflows one double; the units are exact."""
    lo, hi = 0.0, 1e-300
    fx = _fixed.fixed_grid(lo, hi, 2.0 ** -1040, 1, False)
    assert -fx.exp > 1023
    vals = np.array([1e-300, 5e-301, 3e-310, 0.0])
    q = Fraction(2) ** fx.exp
    for x, u in zip(vals.tolist(), _fixed.to_units(fx, vals).tolist()):
        assert abs(u * q - Fraction(x)) <= q / 2 and 0 <= u * q <= Fraction(hi)
    rel = dpt.sum(vals, np.zeros(4, np.int64), bounds=(lo, hi), epsilon=1.0, domain=[0],
                  rng=_replay())
    assert abs(rel.values[0]) < 1e-290
