"""The combine of the Dask shuffle on sparse integer ids (issue 40): a combine holds the
rows of the ids hashed to it, a few ids spread over the whole id range, so its ids are
grouped by :func:`dpfast._kernels.sparse_group.group_sparse_ids` (a radix sort on the id
value) instead of a factorization.  The grouping is the same arrays, so every release is
bit for bit what it was and what one machine releases."""

from __future__ import annotations

import numpy as np
import pytest

from dpfast._core import scratch
from dpfast._kernels import sparse_group as KS
from dpfast.tables import _grouped, _keys

from .helpers import KEY


def _reference(ids: np.ndarray, keys: np.ndarray, vals: np.ndarray | None):
    """The factorize-then-group arrays: ids ascending, rows stably sorted by id."""
    uniq, codes = np.unique(ids, return_inverse=True)
    order = np.argsort(codes.reshape(-1), kind="stable")
    off = np.zeros(len(uniq) + 1, np.int64)
    np.cumsum(np.bincount(codes.reshape(-1), minlength=len(uniq)), out=off[1:])
    return off, keys[order], None if vals is None else vals[order], uniq


@pytest.mark.parametrize("shift", [0, 5, 11, 12, 22, 23, 30])
def test_sparse_kernel_is_a_stable_sort_by_id_for_every_digit_count(shift: int) -> None:
    """One, two and three LSD digits per part (and none): the rows stably sorted by id,
    the distinct ids ascending with their offsets, values carried along; the digits never
    reach the key packed above the id's low bits (keys up to ``2**31 - 1``)."""
    rng = np.random.default_rng(shift)
    n = 5000
    span = min(1 << 40, (1 << shift) * 7 + 3)
    lo = -(1 << 35) + shift
    pool = lo + rng.integers(0, span, 400)
    ids = pool[rng.integers(0, len(pool), n)].astype(np.int64)
    ids[:50] = lo + span - 1  # the top of the range
    keys = rng.integers(0, 1 << 31, n).astype(np.int64)
    keys[::3] = (1 << 31) - 1
    vals = rng.normal(size=n)
    for use_vals in (False, True):
        gk = np.empty(n, np.int64)
        gv = np.empty(n if use_vals else 0, np.float64)
        uq = np.empty(n, np.int64)
        off = np.empty(n + 1, np.int64)
        u = KS.group_sparse_ids(ids, lo, span, shift, keys, vals if use_vals else gv,
                                use_vals, gk, gv, uq, off, 2)
        r_off, r_keys, r_vals, r_uniq = _reference(ids, keys, vals if use_vals else None)
        np.testing.assert_array_equal(off[:u + 1], r_off)
        np.testing.assert_array_equal(uq[:u], r_uniq)
        np.testing.assert_array_equal(gk, r_keys)
        if use_vals:
            np.testing.assert_array_equal(gv, r_vals)


@pytest.mark.parametrize("dtype,span", [(np.int64, 10 ** 9), (np.int32, 10 ** 7),
                                        (np.uint64, 3 * 10 ** 5), (np.int64, 1 << 50)])
def test_group_ids_sparse_path_equals_the_factorized_path(monkeypatch: pytest.MonkeyPatch,
                                                           dtype: type, span: int) -> None:
    """``group_ids`` on ids spread over a range wider than the rows: the radix path gives
    the arrays the factorizing path gives (ids of the caller's dtype, rows in input order
    inside an id), with and without values, on one and two threads; a range too wide for
    the packed word (``1 << 50``) factorizes."""
    rng = np.random.default_rng(span % 1000)
    n = 3 * _keys.SERIAL_ROWS
    pool = rng.integers(0, span, n // 9)
    ids = pool[rng.integers(0, len(pool), n)].astype(dtype)
    ids[: n // 4] = ids[0]  # one busy id
    keys = rng.integers(0, 700, n).astype(np.int64)
    vals = rng.integers(-5, 5, n).astype(np.int64)
    assert (_grouped._sparse(ids, 700) is None) == (span == 1 << 50)
    for v in (None, vals):
        for threads in (1, 2):
            with scratch.lease():
                got = [np.copy(a) for a in _grouped.group_ids(ids, keys, v, threads, None,
                                                              700)[:4]]
            with monkeypatch.context() as m, scratch.lease():
                m.setattr(_grouped, "_sparse", lambda *a: None)
                ref = [np.copy(a) for a in _grouped.group_ids(ids, keys, v, threads, None,
                                                              700)[:4]]
            for a, b in zip(got, ref, strict=True):
                assert a.dtype == b.dtype
                np.testing.assert_array_equal(a, b)


def test_count_and_mean_on_sparse_ids_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """The releases over sparse ids (the combine's case, here on one machine and through
    the compact shuffle's combine) are bit for bit those of the factorizing path: the
    bounding sees the same arrays."""
    import dask
    import pandas as pd

    dd = pytest.importorskip("dask.dataframe")
    import dpfast
    import dpfast.dask as dkd
    import dpfast.tables as dpt

    rng = np.random.default_rng(3)
    n = 80_000
    people = rng.choice(10 ** 9, 9000, replace=False) - 5 * 10 ** 8
    df = pd.DataFrame({"id": people[(len(people) * rng.random(n) ** 2).astype(np.int64)],
                       "k": np.minimum((50 * rng.random(n) ** 3).astype(np.int32), 49),
                       "v": rng.integers(0, 10, n)})
    kw = dict(epsilon=1.0, delta=1e-6, max_partitions=3)

    def releases() -> list:  # each from a generator rebuilt from one key: one release id
        with dask.config.set(scheduler="synchronous"):
            return [dpt.count(df.k, df.id, rng=dpfast.default_rng(KEY), **kw),
                    dpt.mean(df.v, df.k, df.id, bounds=(0, 9), rng=dpfast.default_rng(KEY),
                             **kw),
                    dkd.count(dd.from_pandas(df, npartitions=3), "k", "id",
                              rng=dpfast.default_rng(KEY), npartitions=1, **kw)]

    seen = []
    sparse = _grouped._sparse
    monkeypatch.setattr(_grouped, "_sparse",
                        lambda *a: seen.append(sparse(*a)) or seen[-1])
    new = releases()
    assert len(seen) == 3 and all(x is not None for x in seen)  # the radix path ran
    monkeypatch.setattr(_grouped, "_sparse", lambda *a: None)
    old = releases()
    for a, b in zip(new, old, strict=True):
        np.testing.assert_array_equal(a.keys, b.keys)
        np.testing.assert_array_equal(a.values, b.values)
    assert len(new[0]) > 10
    np.testing.assert_array_equal(new[2].keys, new[0].keys)  # Dask = one machine
    np.testing.assert_array_equal(new[2].values, new[0].values)


def _sparse_vs_factorized(monkeypatch: pytest.MonkeyPatch, ids: np.ndarray,
                          keys: np.ndarray, vals: np.ndarray, threads: int) -> None:
    """``group_ids`` on ``ids`` gives the factorizing path's arrays."""
    with scratch.lease():
        got = [np.copy(a) for a in _grouped.group_ids(ids, keys, vals, threads, None, 50)[:4]]
    with monkeypatch.context() as m, scratch.lease():
        m.setattr(_grouped, "_sparse", lambda *a: None)
        ref = [np.copy(a) for a in _grouped.group_ids(ids, keys, vals, threads, None, 50)[:4]]
    for a, b in zip(got, ref, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_sparse_sort_pass_spreads_its_blocks_over_the_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The sort pass of the radix path is launched over its blocks of parts,
    ``ceil(n_parts / pstep)``, not over ``ceil((n - 1) / pstep)`` (the old count, read from
    the packed rows instead of the parts' offsets): every range of the launch holds real
    parts, there are several (the threads share the parts instead of one thread sorting
    them all in the guided first range), and they cover every block exactly once.  The
    arrays are the factorizing path's."""
    rng = np.random.default_rng(40)
    n = 4 * _keys.SERIAL_ROWS
    ids = rng.integers(-10 ** 9, 10 ** 9, n // 4)[rng.integers(0, n // 4, n)]
    keys = rng.integers(0, 50, n).astype(np.int64)
    vals = rng.normal(size=n)
    assert _grouped._sparse(ids, 50) is not None
    calls: list[tuple[int, int, int]] = []
    kernel = KS._SORT._kernel

    def recording(b0, b1, pstep, shift, pstart, *rest):
        calls.append((b0, b1, max(0, min(pstart.shape[0] - 1, b1 * pstep) - b0 * pstep)))
        return kernel(b0, b1, pstep, shift, pstart, *rest)

    monkeypatch.setattr(KS._SORT, "_kernel", recording)
    for threads in (1, 4):
        calls.clear()
        with scratch.lease():
            _grouped.group_ids(ids, keys, vals, threads, None, 50)
        assert calls and all(real > 0 for _, _, real in calls)  # no empty range
        blocks = sorted((b0, b1) for b0, b1, _ in calls)
        assert blocks[0][0] == 0
        assert all(x[1] == y[0] for x, y in zip(blocks, blocks[1:], strict=False))
        assert len(calls) == 1 if threads == 1 else len(calls) > 1
        _sparse_vs_factorized(monkeypatch, ids, keys, vals, threads)


def test_sparse_ids_clustered_with_one_far_outlier_group_as_factorized(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids clustered at the bottom of the range with one far outlier put (almost) every
    row in one part: that part is sorted in one call with three digits and the arrays are
    still the factorizing path's (the radix path is kept: it is faster and smaller than
    the factorization on this input)."""
    rng = np.random.default_rng(41)
    n = 4 * _keys.SERIAL_ROWS
    ids = rng.integers(0, n // 2, n)
    ids[n // 3] = 10 ** 9
    keys = rng.integers(0, 50, n).astype(np.int64)
    vals = rng.normal(size=n)
    assert _grouped._sparse(ids, 50) is not None
    for threads in (1, 3):
        _sparse_vs_factorized(monkeypatch, ids, keys, vals, threads)


class _Pool:
    def __init__(self) -> None:
        self.calls = 0

    def release_unused(self) -> None:
        self.calls += 1


def test_split_and_combine_tasks_hand_arrows_kept_memory_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every split and combine task of the shuffle starts by handing back the memory
    Arrow's pool keeps from the reads (``release_unused``: unmanaged memory to Dask, which
    pauses and restarts workers on it out of core), through a pyarrow already loaded --
    never importing it -- and is a no-op without one."""
    import sys
    import types

    import pandas as pd

    from dpfast.dask import _shuffle

    pool = _Pool()
    fake = types.ModuleType("pyarrow")
    fake.default_memory_pool = lambda: pool  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pyarrow", fake)
    frame = pd.DataFrame({"person": np.arange(40, dtype=np.int64) % 7,
                          "region": np.arange(40, dtype=np.int32) % 3})
    pieces = _shuffle.split_arrays([frame, frame], ["person", "region"], "person", 4)
    assert pool.calls == 1
    rows = _shuffle.concat_arrays_then([p for p in pieces], lambda cols: len(cols["person"]))
    assert pool.calls == 2 and rows == 80
    frames = _shuffle.split_frame(frame, "person", 3)
    assert pool.calls == 3
    assert _shuffle.concat_frames_then(list(frames), len) == 40 and pool.calls == 4
    monkeypatch.delitem(sys.modules, "pyarrow")
    assert len(_shuffle.split_arrays(frame, ["person", "region"], "person", 2)) == 2


def test_arrows_kept_memory_leaves_the_process(tmp_path) -> None:  # noqa: ANN001
    """With the real pyarrow: what a Parquet read freed stays in Arrow's pool (mimalloc
    keeps it) until a split starts; then the process's resident memory drops by most of
    it."""
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    psutil = pytest.importorskip("psutil")
    import pandas as pd

    from dpfast.dask import _shuffle

    if pa.default_memory_pool().backend_name == "system":
        pytest.skip("Arrow on the system allocator keeps nothing")
    proc = psutil.Process()
    frame = pd.DataFrame({"person": np.arange(10, dtype=np.int64), "region": np.ones(10)})
    _shuffle.split_arrays(frame, ["person", "region"], "person", 2)  # its kernels loaded
    n = 1 << 22
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"person": np.arange(n, dtype=np.int64),
                             "region": (np.arange(n) % 5000).astype(np.int32)}), path)
    read = pd.read_parquet(path)  # 48 MiB of rows in Arrow's pool, and its decoding
    assert len(read) == n
    del read
    kept = proc.memory_info().rss
    _shuffle.split_arrays(frame, ["person", "region"], "person", 2)
    assert kept - proc.memory_info().rss > 48 * 2 ** 20
