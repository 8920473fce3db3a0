"""dpfast.dask array noising: lazy, bit-identical to the single-machine call for any
chunking (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import dpfast  # noqa: E402
import dpfast.dask as dkd  # noqa: E402
from dpfast.dask import arrays as A  # noqa: E402
from dpfast.noise import _drive, _exact  # noqa: E402
from dpfast.tables import keynoise  # noqa: E402

from .helpers import KEY  # noqa: E402

RID = (1 << 127) + 12345  # a release id, fixed by the tests that compare with one machine


def _replay() -> dpfast.Generator:
    """A generator rebuilt from the fixed key: replays a call (a raw key never does)."""
    return dpfast.default_rng(KEY)

X = np.arange(240_000, dtype=np.int64).reshape(480, 500) - 120_000


@pytest.mark.parametrize("chunks", [(480, 500), (100, 77), (13, 500), (480, 7)])
def test_discrete_laplace_any_chunking(chunks: tuple[int, int]) -> None:
    ref = dpfast.discrete_laplace(X, 3.0, rng=_replay())
    lazy = dkd.discrete_laplace(da.from_array(X, chunks=chunks), 3.0, rng=_replay())
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), ref)


def test_other_laws_dtypes_and_generator_sequence() -> None:
    x32 = X.astype(np.int32)
    ref = dpfast.discrete_gaussian(x32, 50.0, rng=_replay())
    got = dkd.discrete_gaussian(da.from_array(x32, chunks=(77, 100)), 50.0, rng=_replay())
    out = got.compute()
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref)
    xf = np.linspace(-5, 5, 2_100_000)  # three float slices of 2**20 cells
    np.testing.assert_array_equal(
        dkd.laplace(da.from_array(xf, chunks=700_001), 0.5, rng=_replay()).compute(),
        dpfast.laplace(xf, 0.5, rng=_replay()))
    np.testing.assert_array_equal(
        dkd.gaussian(da.from_array(xf[:50_000], chunks=7_001), 0.5, rng=_replay()).compute(),
        dpfast.gaussian(xf[:50_000], 0.5, rng=_replay()))
    # a generator's sequence of calls: ids are taken when the lazy call is made
    g1, g2 = _replay(), _replay()
    a1 = dpfast.discrete_laplace(X, 2.0, rng=g1)
    b1 = dpfast.discrete_laplace(X, 40.0, rng=g1)
    a2 = dkd.discrete_laplace(da.from_array(X, chunks=(50, 50)), 2.0, rng=g2)
    b2 = dkd.discrete_laplace(da.from_array(X, chunks=(200, 500)), 40.0, rng=g2)
    np.testing.assert_array_equal(b2.compute(), b1)
    np.testing.assert_array_equal(a2.compute(), a1)


def test_undecided_cells_finished_in_the_drivers_order(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every cell forced through the exact continuation, blocks of one chunk: the
    continuation stream is consumed in the single-machine order."""
    monkeypatch.setattr(A, "_BLOCK", _drive.CHUNK)
    x = np.zeros(_drive.CHUNK + 300, np.int64)
    with _exact.force_exact(1):
        ref = dpfast.discrete_laplace(x, 0.7, rng=_replay())
        got = dkd.discrete_laplace(da.from_array(x, chunks=30_000), 0.7,
                                   rng=_replay()).compute(scheduler="synchronous")
    np.testing.assert_array_equal(got, ref)


def test_bad_input_and_overflow() -> None:
    with pytest.raises(TypeError, match="dask array"):
        dkd.discrete_laplace(X, 1.0, rng=_replay())
    with pytest.raises(TypeError, match="integers"):
        dkd.discrete_laplace(da.zeros(3), 1.0, rng=_replay())
    with pytest.raises(ValueError, match="scale"):
        dkd.discrete_laplace(da.zeros(3, dtype=np.int64), -1.0, rng=_replay())
    with pytest.raises(TypeError, match="scalar"):
        dkd.discrete_laplace(da.zeros(3, dtype=np.int64), np.ones(3), rng=_replay())
    big = da.full(10, 127, dtype=np.int8, chunks=5)
    with pytest.raises(OverflowError):
        dkd.discrete_laplace(big, 1000.0, rng=_replay()).compute()


def test_a_key_never_replays_a_call_and_a_graph_reproduces_its_own_noise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 item 1: two calls with one raw key are independent (fresh release ids);
    one lazy graph computed again -- whole, pickled and shipped again, one block alone (a
    retried task) -- gives its own noise; the raw key itself is not in the graph."""
    import pickle

    from dpfast.noise import _addressed

    used: list[set] = []
    orig = _addressed.run_chunks

    def spy(kw, nonces, *args, **kwargs):  # type: ignore[no-untyped-def]
        used[-1].update((kw.tobytes(), bytes(n.tobytes())) for n in nonces)
        return orig(kw, nonces, *args, **kwargs)

    monkeypatch.setattr(_addressed, "run_chunks", spy)
    dx = da.from_array(X, chunks=(100, 500))
    a = dkd.discrete_laplace(dx, 3.0, rng=KEY)
    b = dkd.discrete_laplace(dx, 3.0, rng=KEY)
    used.append(set())
    ca = a.compute(scheduler="sync")
    used.append(set())
    cb = b.compute(scheduler="sync")
    assert used[0] and used[1] and not used[0] & used[1]  # distinct streams
    assert np.mean(ca != cb) > 0.5  # independent noise, not a replay
    monkeypatch.setattr(_addressed, "run_chunks", orig)
    np.testing.assert_array_equal(a.compute(scheduler="threads"), ca)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(a)).compute(scheduler="sync"), ca)
    np.testing.assert_array_equal(a.blocks[2].compute(), ca[200:300])
    assert KEY not in pickle.dumps(dict(a.__dask_graph__()))
    fa = dkd.laplace(da.from_array(X[:4] * 0.5, chunks=(2, 500)), 2.0, rng=KEY)
    fb = dkd.laplace(da.from_array(X[:4] * 0.5, chunks=(2, 500)), 2.0, rng=KEY)
    assert np.mean(fa.compute() != fb.compute()) > 0.9
    # a raw key's call is the single-machine call on its release generator (key, id)
    monkeypatch.setattr(keynoise, "fresh_release_id", lambda: RID)
    c = dkd.discrete_gaussian(dx, 7.0, rng=KEY).compute()
    np.testing.assert_array_equal(
        c, dpfast.discrete_gaussian(X, 7.0, rng=keynoise.keyed_generator(KEY, RID)))


@pytest.mark.parametrize("fn,param,mode", [
    ("discrete_laplace", 0.7, 1),    # geometric inversion
    ("discrete_laplace", 100.0, 3),  # envelope table (Laplace)
    ("discrete_gaussian", 5.0, 3),   # envelope table (Gaussian)
    ("gaussian", 0.5, 3),            # the float grid mechanism on the Gaussian table
])
def test_forced_paths_run_forced_on_the_threaded_scheduler(
        fn: str, param: float, mode: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22 item 14: force_exact is carried in the graph, so block tasks computed in
    dask's worker threads (outside the ``with`` block) are forced too: every cell goes
    through the exact continuation, in the single-machine driver's order."""
    x = np.arange(3000, dtype=np.int64).reshape(60, 50) - 1500
    if fn == "gaussian":
        x = x * 0.01
    pending: list[int] = []
    orig = A._finish

    def spy(results, *args):  # type: ignore[no-untyped-def]
        pending.append(sum(len(rows) for _, rows in results))
        return orig(results, *args)

    monkeypatch.setattr(A, "_finish", spy)
    with _exact.force_exact(mode):
        ref = getattr(dpfast, fn)(x, param, rng=_replay())
        lazy = getattr(dkd, fn)(da.from_array(x, chunks=(25, 50)), param, rng=_replay())
    got = lazy.compute(scheduler="threads")
    np.testing.assert_array_equal(got, ref)
    assert pending == [x.size]  # every cell was forced, in a worker thread
