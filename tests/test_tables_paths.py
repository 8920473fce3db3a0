"""Small inputs (numpy grouping, serial kernels) and large ones (parallel kernels) bound,
factorize and count alike: the same rows kept, bit for bit (``_keys.SERIAL_ROWS`` is the
switch; forcing it to 0 sends small data down the parallel path)."""

from __future__ import annotations

import numpy as np
import pytest

import dpfast
import dpfast.tables as dpt
from dpfast.tables import _fixed, _keys, bounding

from .helpers import KEY


def _data(seed: int, n: int = 4000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, 40, n)
    ids = rng.integers(0, 300, n) * 7 - 50  # ids with many keys and repeated rows
    vals = rng.integers(-4, 5, n) * 0.5  # ties between equal (key, value) rows
    return keys, ids, vals


def _both(monkeypatch: pytest.MonkeyPatch, fn):  # type: ignore[no-untyped-def]
    small = fn()
    with monkeypatch.context() as m:
        m.setattr(_keys, "SERIAL_ROWS", 0)
        large = fn()
    return small, large


@pytest.mark.parametrize("seed", [1, 2])
def test_bounding_is_the_same_on_both_paths(monkeypatch, seed: int) -> None:
    keys, ids, vals = _data(seed)
    for k, c in ((1, 1), (3, 2), (50, 50)):
        for values in (None, vals, (vals * 2).astype(np.int64)):
            small, large = _both(monkeypatch, lambda k=k, c=c, values=values:
                                 dpt.bound_contributions(keys, ids, max_partitions=k,
                                                         max_per_partition=c, values=values,
                                                         rng=KEY))
            np.testing.assert_array_equal(small[0], large[0])
            np.testing.assert_array_equal(small[1], large[1])
            if values is None:
                assert small[2] is None and large[2] is None
            else:
                np.testing.assert_array_equal(small[2], large[2])
                assert small[2].dtype == large[2].dtype
            if k == 1 and c == 1:  # the bound binds: some rows were dropped
                assert small[1].sum() <= len(np.unique(ids))


def test_fixed_point_sums_and_no_ids_are_the_same_on_both_paths(monkeypatch) -> None:
    keys, ids, vals = _data(3)
    fk = _keys.factorize([keys])
    fx = _fixed.fixed_grid(-2.0, 2.0, 2.0**-10, 2, False)
    units = _fixed.to_units(fx, vals)
    skey = np.arange(8, dtype=np.uint32)
    for row_ids in (ids, None):
        for v, exp in ((vals, None), (units, fx.exp)):
            small, large = _both(monkeypatch, lambda row_ids=row_ids, v=v, exp=exp:
                                 bounding.bound_codes(fk.codes, fk.size, row_ids, 2, 2, skey,
                                                      v, exp))
            np.testing.assert_array_equal(small.counts, large.counts)
            if exp is None:
                np.testing.assert_array_equal(small.sums, large.sums)
            else:
                assert [small.sums.exact(j) for j in range(fk.size)] == \
                    [large.sums.exact(j) for j in range(fk.size)]


def test_a_wide_key_domain_is_the_same_on_both_paths(monkeypatch) -> None:
    """More key codes than rows (the small path's key pass is then a comparison sort)."""
    rng = np.random.default_rng(6)
    n, n_keys = 3000, 50_000
    codes = rng.integers(0, n_keys, n)
    codes[:1000] = codes[1000:2000]  # repeated (id, key) pairs
    ids = rng.integers(0, 200, n)
    vals = rng.integers(-3, 4, n)
    skey = np.arange(8, dtype=np.uint32)
    for v in (None, vals):
        small, large = _both(monkeypatch, lambda v=v: bounding.bound_codes(
            codes, n_keys, ids, 3, 2, skey, v))
        np.testing.assert_array_equal(small.counts, large.counts)
        if v is not None:
            np.testing.assert_array_equal(small.sums, large.sums)


def test_fixed_point_units_are_the_same_on_both_kernels() -> None:
    from dpfast._kernels import fixed as kf

    v = np.concatenate([np.linspace(-3.0, 3.0, 999), [0.5, -0.5, 1.5, 2.5, -0.0, 1e-300]])
    for centre in (False, True):
        a = np.empty(v.size, np.int64)
        b = np.empty(v.size, np.int64)
        kf.to_units_serial(v, 2.0**10, 1.0, np.int64(-2048), np.int64(2048), centre, a)
        kf.to_units(v, 2.0**10, 1.0, np.int64(-2048), np.int64(2048), centre, b)
        np.testing.assert_array_equal(a, b)
        u = np.clip(np.rint(v * 2.0**10), -2048, 2048).astype(np.int64)
        np.testing.assert_array_equal(a, 2 * u if centre else u)


def test_factorize_is_the_same_on_both_paths(monkeypatch) -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(-3, 9, 3000)
    b = rng.integers(100, 105, 3000).astype(np.int32)
    for cols in ([a], [a, b]):
        small, large = _both(monkeypatch, lambda cols=cols: _keys.factorize(cols))
        np.testing.assert_array_equal(small.codes, large.codes)
        assert small.codes.dtype == large.codes.dtype == np.int64
        for u, v in zip(small.uniques if isinstance(small.uniques, tuple) else [small.uniques],
                        large.uniques if isinstance(large.uniques, tuple) else [large.uniques]):
            np.testing.assert_array_equal(u, v)
            assert u.dtype == v.dtype


def test_a_release_is_the_same_on_both_paths(monkeypatch) -> None:
    keys, ids, vals = _data(4)
    small, large = _both(monkeypatch, lambda: dpt.mean(
        vals, keys, ids, bounds=(-2.0, 2.0), epsilon=1.0, max_partitions=2,
        max_per_partition=2, domain=list(range(40)), rng=dpfast.default_rng(KEY)))
    np.testing.assert_array_equal(small.values, large.values)  # same generator: same noise
