"""The release layer's large-input paths give the small-input paths' results exactly:
the two-pass grouping by id (many ids), the bounding kernels' batched per-id streams
(first blocks computed 16 at a time; an id needing more streams than a batch holds draws
its own), for counts and values, both policies, on one thread and on all."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from dpfast._kernels import grouping as _kg
from dpfast.tables import _keys
from dpfast.tables import bounding as B


def _stable(ids: np.ndarray, n_ids: int, keys: np.ndarray, vals: np.ndarray):
    order = np.argsort(ids, kind="stable")
    off = np.zeros(n_ids + 1, np.int64)
    np.cumsum(np.bincount(ids, minlength=n_ids), out=off[1:])
    return off, keys[order], vals[order]


@pytest.mark.parametrize(("n", "n_ids"), [(1000, 7), (70_000, 1000), (300_000, 100_003),
                                          (400_000, 399_000)])
@pytest.mark.parametrize("threads", [1, 2])
def test_group_by_id_is_a_stable_sort_by_id(n: int, n_ids: int, threads: int) -> None:
    g = np.random.default_rng(n)
    ids = g.integers(0, n_ids, n).astype(np.int64)
    ids[: min(n, n_ids)] = np.arange(min(n, n_ids))  # every id has a row where it can
    n_ids = int(ids.max()) + 1
    keys = g.integers(0, 50, n).astype(np.int64)
    vals = g.integers(0, 10**9, n).astype(np.int64)
    want = _stable(ids, n_ids, keys, vals)
    off, gk, gv = (np.empty(n_ids + 1, np.int64), np.empty(n, np.int64),
                   np.empty(n, np.int64))
    _kg.group_by_id(ids, n_ids, keys, vals, True, off, gk, gv, np.empty(n, np.int32), threads)
    for a, b in zip((off, gk, gv), want, strict=True):
        np.testing.assert_array_equal(a, b)
    none = np.empty(0, np.int64)
    _kg.group_by_id(ids, n_ids, keys, none, False, off, gk, none, np.empty(n, np.int32),
                   threads)
    np.testing.assert_array_equal(off, want[0])
    np.testing.assert_array_equal(gk, want[1])


def _serial(fn):
    old = _keys.SERIAL_ROWS
    _keys.SERIAL_ROWS = 1 << 40  # every input takes the numpy-sorted serial path
    try:
        return fn()
    finally:
        _keys.SERIAL_ROWS = old


@pytest.mark.parametrize(("k", "c", "policy"), [(3, 1, 0), (2, 2, 0), (2, 3, 1), (400, 1, 0)])
def test_batched_bounding_equals_the_serial_path(k: int, c: int, policy: int) -> None:
    g = np.random.default_rng(k * 10 + c)
    n, n_ids = 200_000, 80_000  # many ids: the two-pass grouping, batches of 64 ids
    ids = g.integers(0, n_ids, n)
    keys = (g.zipf(1.4, n) - 1) % 3000
    big = 300  # one id with 300 keys of 2 rows each: more streams than a batch holds
    ids[:2 * big] = n_ids
    keys[:2 * big] = np.repeat(np.arange(big), 2)
    vals = g.integers(-40, 40, n)
    fk = _keys.factorize([keys])
    skey = np.arange(8, dtype=np.uint32) * np.uint32(0x9E3779B9)
    old = numba.get_num_threads()
    try:
        for threads in (1, old):
            numba.set_num_threads(threads)
            for v in (None, vals):
                par = B.bound_codes(fk.codes, fk.size, ids, k, c, skey, v, policy=policy)
                ser = _serial(lambda v=v: B.bound_codes(fk.codes, fk.size, ids, k, c, skey, v,
                                                        policy=policy))
                np.testing.assert_array_equal(par.counts, ser.counts)
                np.testing.assert_array_equal(par.units, ser.units)
                if v is not None:
                    np.testing.assert_array_equal(par.sums, ser.sums)
    finally:
        numba.set_num_threads(old)
