"""The thread's reusable scratch (dpfast._core.scratch) and the code paths that lease it:
arrays carved inside a lease never overlap, nothing leaks out of one, the pool stays within
its cap, a later lease reuses the same pages, and what the leasing code returns is the
same with the pool on and off."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast._core import scratch
from dpfast._kernels import grouping as kg
from dpfast.tables import _keys


def _span(a: np.ndarray) -> tuple[int, int]:
    start = a.__array_interface__["data"][0]
    return start, start + a.nbytes


def test_outside_a_lease_it_is_numpy() -> None:
    assert not scratch.active()
    a = scratch.empty((3, 4), np.int32)
    z = scratch.zeros(5, np.float64)
    assert a.shape == (3, 4) and a.dtype == np.int32 and a.base is None
    assert z.dtype == np.float64 and not z.any() and z.base is None


def test_arrays_of_one_lease_are_disjoint_aligned_and_zeroed() -> None:
    sizes = [1, 7, 64, 1000, 3 << 20, 5, 1 << 16]
    with scratch.lease():
        assert scratch.active()
        arrs = [scratch.empty(n, np.int64) for n in sizes]
        zs = [scratch.zeros(n, np.uint8) for n in sizes]
        for a, n in zip(arrs, sizes, strict=True):
            assert a.shape == (n,) and a.dtype == np.int64
            assert a.__array_interface__["data"][0] % 64 == 0
            a[:] = n  # writes stay inside each array
        for z in zs:
            assert not z.any()
        spans = sorted(_span(a) for a in arrs + zs)
        for (_, e), (s2, _) in zip(spans, spans[1:], strict=False):
            assert e <= s2
        for a, n in zip(arrs, sizes, strict=True):
            assert (a == n).all()
    assert not scratch.active()


def test_a_later_lease_reuses_the_pages_and_the_pool_settles_to_one_block() -> None:
    scratch.release()
    with scratch.lease():
        first = [_span(scratch.empty(n, np.int64))[0] for n in (3 << 20, 2 << 20, 1 << 10)]
    a = scratch._arena()
    assert len(a.blocks) == 1  # three blocks' worth settled into one of the peak
    assert a.blocks[0].nbytes >= 8 * ((3 << 20) + (2 << 20) + (1 << 10))
    with scratch.lease():
        again = [_span(scratch.empty(n, np.int64))[0] for n in (3 << 20, 2 << 20, 1 << 10)]
    with scratch.lease():
        same = [_span(scratch.empty(n, np.int64))[0] for n in (3 << 20, 2 << 20, 1 << 10)]
    assert again == same  # the same shape of lease gets the same pages
    assert len(first) == 3
    before = scratch.kept()
    scratch.release()
    assert scratch._arena().blocks == []
    assert scratch.kept() == before - a.blocks[0].nbytes if a.blocks else True


def test_nested_leases_share_the_outer_one() -> None:
    with scratch.lease():
        a = scratch.empty(100, np.int64)
        with scratch.lease():
            b = scratch.empty(100, np.int64)
        c = scratch.empty(100, np.int64)  # b is still reserved until the outer lease ends
        spans = sorted([_span(a), _span(b), _span(c)])
        assert spans[0][1] <= spans[1][0] and spans[1][1] <= spans[2][0]
        assert scratch.active()
    assert not scratch.active()


def test_cap_and_switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    scratch.release()
    others = scratch.kept()  # other threads' blocks count against the same cap
    monkeypatch.setenv("DPFAST_SCRATCH_BYTES", str(others + (8 << 20)))
    with scratch.lease():
        big = scratch.empty(2 << 20, np.int64)  # 16 MiB > the cap: plain numpy
        small = scratch.empty(1 << 10, np.int64)
        assert big.base is None and small.base is not None
    assert sum(b.nbytes for b in scratch._arena().blocks) <= 8 << 20
    assert scratch.kept() == others + sum(b.nbytes for b in scratch._arena().blocks)
    monkeypatch.setenv("DPFAST_SCRATCH_BYTES", "0")
    with scratch.lease():
        assert scratch.empty(10, np.int64).base is None
    assert scratch._arena().blocks == []  # off: nothing kept
    for bad in ("lots", "-1", "1.5"):
        monkeypatch.setenv("DPFAST_SCRATCH_BYTES", bad)
        with pytest.raises(ValueError, match="DPFAST_SCRATCH_BYTES"):
            scratch.limit()


def test_the_pool_is_per_thread() -> None:
    seen: dict[str, bool] = {}

    def other() -> None:
        seen["active"] = scratch.active()
        seen["plain"] = scratch.empty(10, np.int64).base is None

    with scratch.lease():
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert seen == {"active": False, "plain": True}


def test_a_thread_that_ends_returns_its_budget() -> None:
    before = scratch.kept()

    def work() -> None:
        with scratch.lease():
            scratch.empty(1 << 20, np.int64)
        assert scratch.kept() > before

    t = threading.Thread(target=work)
    t.start()
    t.join()
    del t
    import gc

    gc.collect()
    assert scratch.kept() == before


def test_a_failing_lease_still_hands_everything_back() -> None:
    with pytest.raises(RuntimeError):
        with scratch.lease():
            scratch.empty(10, np.int64)
            raise RuntimeError("boom")
    assert not scratch.active()
    assert all(u == 0 for u in scratch._arena().used)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.booleans(), min_size=0, max_size=400), st.integers(-(2 ** 40), 2 ** 40))
def test_dense_remap_is_cumsum_and_flatnonzero(marks: list[bool], lo: int) -> None:
    present = np.array(marks, np.uint8)
    remap = np.empty(len(marks), np.int64)
    uniques = np.empty(len(marks), np.int64)
    c = kg.dense_remap(present, lo, remap, uniques)
    assert c == int(present.sum())
    np.testing.assert_array_equal(uniques[:c], np.flatnonzero(present) + lo)
    on = present.astype(bool)
    np.testing.assert_array_equal(remap[on], (np.cumsum(present, dtype=np.int64) - 1)[on])


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16])
def test_factorize_is_the_same_inside_a_lease(dtype: type) -> None:
    r = np.random.default_rng(3)
    x = r.integers(0, 4000, _keys.SERIAL_ROWS + 5000).astype(dtype)
    ref_codes, ref_u = _keys.factorize_column(x)
    with scratch.lease():
        codes, u = _keys.factorize_column(x)
        np.testing.assert_array_equal(codes, ref_codes)
        keep = u.copy()
        assert u.base is None or not np.shares_memory(u, scratch._arena().blocks[0])
    np.testing.assert_array_equal(keep, ref_u)
    np.testing.assert_array_equal(u, ref_u)  # uniques leave the lease intact
    assert u.dtype == x.dtype


@pytest.mark.parametrize("stat", ["count", "sum", "mean"])
def test_dask_releases_are_the_same_with_the_pool_on_and_off(
        stat: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dask combine leases the pool for its whole task (concatenation, factorization,
    grouping, bounding) on partitions above the serial threshold; its release equals the
    single-machine one either way (the parallel kernels on one thread: the sync scheduler)."""
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dpfast
    import dpfast.dask as dkd
    import dpfast.tables as dpt

    from .helpers import KEY

    r = np.random.default_rng(11)
    n = 8 * _keys.SERIAL_ROWS
    df = pd.DataFrame({"k": r.zipf(1.4, n) % 3000, "id": r.integers(0, n // 3, n),
                       "v": r.normal(2.0, 3.0, n)})
    kw = {"epsilon": 1.0, "delta": 1e-6, "max_partitions": 2}
    if stat != "count":
        kw["bounds"] = (-1.0, 6.0)
    one = (df["k"], df["id"]) if stat == "count" else (df["v"], df["k"], df["id"])
    ref = getattr(dpt, stat)(*one, rng=dpfast.default_rng(KEY), **kw)
    ddf = dd.from_pandas(df, npartitions=2)  # two combines of 4x the serial threshold
    cols = ("k", "id") if stat == "count" else ("k", "v", "id")
    got = {}
    with dask.config.set(scheduler="sync"):
        for lim in ("0", str(256 << 20)):
            monkeypatch.setenv("DPFAST_SCRATCH_BYTES", lim)
            got[lim] = getattr(dkd, stat)(ddf, *cols, rng=dpfast.default_rng(KEY), **kw)
    assert scratch._arena().blocks  # the leased run kept its pages on this thread
    scratch.release()
    for g in got.values():
        np.testing.assert_array_equal(g.keys, ref.keys)
        np.testing.assert_array_equal(g.values, ref.values)
