"""Chunked launches (dpfast._kernels._launch): guided ranges on a persistent helper pool.

The threaded samplers scaled less after the chunked launches replaced ``parallel=True``
kernels (issue 40: 0.89 of before on the threaded discrete Gaussian): each launch started
new threads (0.1-0.7 ms each) and cut the chunks into 4 equal ranges per thread, so the
threads finished up to a quarter of a thread's share apart.  Now the helpers are a pool
started once and the ranges are guided (large first, single chunks last).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

import dpfast
from dpfast._kernels import _launch

from .helpers import KEY


@pytest.mark.parametrize("n", [1, 2, 3, 7, 31, 128, 153, 1000, 10**6])
@pytest.mark.parametrize("threads", [2, 3, 16])
def test_guided_ranges_cover_in_order_and_end_in_single_chunks(n, threads) -> None:
    """Fails on the old code (no ``ranges``; its last ranges were a quarter of a thread's
    share, 4 chunks of a 31-chunk launch on 2 threads)."""
    r = _launch.ranges(n, threads)
    assert r[0][0] == 0 and r[-1][1] == n
    assert all(a < b for a, b in r)
    assert all(r[i][1] == r[i + 1][0] for i in range(len(r) - 1))
    sizes = [b - a for a, b in r]
    assert sizes == sorted(sizes, reverse=True)  # never a larger range after a smaller
    assert sizes[0] <= -(-n // (_launch.GUIDED * threads))  # no thread hoards the work
    assert sizes[-1] == 1  # the threads finish within one chunk of each other
    assert len(r) <= _launch.GUIDED * threads * (2 + np.log(max(n, 2)))  # few items


def _kernel_threads() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.name.startswith("dpfast-kernel")
            and t.ident is not None}


def test_launches_reuse_their_helper_threads(monkeypatch) -> None:
    """Fails on the old code: every threaded launch started (and joined) new threads."""
    monkeypatch.setattr(_launch, "thread_count", lambda: 2)
    x = np.zeros(4 * dpfast.noise._drive.CHUNK, np.int64)
    want = dpfast.discrete_laplace(x, 3.0, rng=KEY)
    seen: set[int] = set()
    for _ in range(4):
        assert np.array_equal(dpfast.discrete_laplace(x, 3.0, rng=KEY), want)
        seen |= _kernel_threads()
    assert len(seen) <= max(1, os.cpu_count() or 1)  # a pool, not a thread per launch
    assert seen  # the helper ran (the pool's threads live on)


def test_a_busy_pool_does_not_hold_up_a_launch(monkeypatch) -> None:
    """A launch whose helper is still queued (every pool thread busy with another call)
    does the work on the calling thread and does not wait for the queue."""
    monkeypatch.setattr(_launch, "thread_count", lambda: 2)
    pool = _launch._helpers()
    release = threading.Event()
    blockers = [pool.submit(release.wait) for _ in range(pool._size)]
    try:
        x = np.zeros(3 * dpfast.noise._drive.CHUNK, np.int64)
        got = dpfast.discrete_gaussian(x, 2.0, rng=KEY)  # would hang if it waited
    finally:
        release.set()
        for b in blockers:
            b.done.wait()
    monkeypatch.setattr(_launch, "thread_count", lambda: 1)
    assert np.array_equal(got, dpfast.discrete_gaussian(x, 2.0, rng=KEY))


# --- claimed launches (the samplers): chunks taken one at a time from a shared counter --

#: (sampler, dtype of x / out, how) covering every sampler kernel (envelope table, discrete
#: inversion / CKS20, Bernoulli) and every store (write, add, add into a separate out,
#: float64 and float32 grid)
CLAIM_CASES = [
    ("table laplace", np.int64, "alloc"),
    ("table laplace", np.int64, "in place"),
    ("table laplace", np.int64, "out"),
    ("table gaussian", np.int64, "in place"),
    ("discrete laplace < 1", np.int64, "in place"),
    ("discrete per-cell", np.int64, "alloc"),
    ("discrete per-cell laplace", np.int64, "out"),
    ("grid laplace", np.float64, "alloc"),
    ("grid gaussian", np.float64, "in place"),
    ("grid laplace", np.float32, "alloc"),
    ("grid laplace", np.float64, "out"),
    ("discrete gaussian noise", np.int64, "alloc"),
    ("bernoulli exp", np.float64, "alloc"),
]


def _sample(case: str, dtype, how: str, n: int, key: bytes = KEY) -> np.ndarray:
    """One draw of ``case`` on ``n`` cells (a fresh generator from ``key``)."""
    gen = dpfast.default_rng(key)
    x = (np.arange(n) % 11 - 5).astype(dtype)
    if dtype is not np.int64:
        x = x * np.asarray(0.37, dtype)
    fns = {
        "table laplace": (dpfast.discrete_laplace, 7.0),
        "table gaussian": (dpfast.discrete_gaussian, 3.5),
        "discrete laplace < 1": (dpfast.discrete_laplace, 0.4),
        "discrete per-cell": (dpfast.discrete_gaussian, np.linspace(0.5, 9.0, n)),
        "discrete per-cell laplace": (dpfast.discrete_laplace, np.linspace(0.3, 40.0, n)),
        "grid laplace": (dpfast.laplace, 2.0),
        "grid gaussian": (dpfast.gaussian, 1.5),
    }
    if case == "discrete gaussian noise":
        return gen.discrete_gaussian(2.5, size=n)
    if case == "bernoulli exp":
        return gen.bernoulli_exp(np.linspace(0.0, 3.0, n))
    fn, scale = fns[case]
    if how == "alloc":
        return fn(x, scale, rng=gen)
    if how == "in place":
        fn(x, scale, rng=gen, out=x)
        return x
    out = np.full(n, 3, dtype)
    fn(x, scale, rng=gen, out=out)
    return out


def _claims(monkeypatch) -> list[int]:
    """Record, per kernel call of the claimed launchers, the length of its ``claim``
    (0: every chunk in order, 1: a shared counter)."""
    from dpfast._kernels import samplers as sk
    from dpfast._kernels import table as tk

    seen: list[int] = []
    for launcher in (tk.table_kernel, sk.discrete_kernel, sk.bernoulli_exp_kernel):
        kernel = launcher._kernel

        def counted(*args, _k=kernel):
            seen.append(int(args[-1].shape[0]))
            return _k(*args)

        monkeypatch.setattr(launcher, "_kernel", counted)
    return seen


@pytest.mark.parametrize("case,dtype,how", CLAIM_CASES)
@pytest.mark.parametrize("threads", [2, 3])
def test_claimed_launch_gives_the_one_thread_output(case, dtype, how, threads,
                                                    monkeypatch) -> None:
    """The large-call path (a shared claim counter, chunks taken as threads become free)
    gives, bit for bit, the output of the calling thread alone over every chunk in
    order, for every sampler kernel, store and dtype.  Fails on the old code (no claimed
    launch: the kernels took no ``claim``)."""
    n = 5 * (1 << 16) - 123  # 5 chunks, the last one short
    monkeypatch.setattr(_launch, "thread_count", lambda: 1)
    one = _sample(case, dtype, how, n)
    monkeypatch.setattr(_launch, "thread_count", lambda: threads)
    seen = _claims(monkeypatch)
    many = _sample(case, dtype, how, n)
    assert seen and set(seen) == {1}  # the threaded launch ran, every call claiming
    assert one.dtype == many.dtype and one.shape == many.shape
    assert one.tobytes() == many.tobytes()


def test_an_overflowing_claimed_launch_restores_the_input(monkeypatch) -> None:
    """An in-place int64 call that overflows in one chunk, while the other threads run
    theirs, is undone to the last cell (``OverflowError``, ``x`` unchanged)."""
    monkeypatch.setattr(_launch, "thread_count", lambda: 3)
    n = 6 * (1 << 16)
    x = np.zeros(n, np.int64)
    z = dpfast.discrete_laplace(x, 50.0, rng=KEY)  # the noise this call will add
    cell = 4 * (1 << 16) + 17 + int(np.argmax(z[4 * (1 << 16) + 17:] > 0))  # in chunk 4
    assert cell < 5 * (1 << 16) and z[cell] > 0
    x[cell] = np.iinfo(np.int64).max
    before = x.copy()
    with pytest.raises(OverflowError):
        dpfast.discrete_laplace(x, 50.0, rng=KEY, out=x)
    assert np.array_equal(x, before)


def test_each_chunk_is_claimed_by_exactly_one_call(monkeypatch) -> None:
    """Over many launches on more threads than chunks, every chunk runs once: each
    chunk's state row ends at its end cell with its own stream position, as on one
    thread (a chunk run twice would draw on from where it stopped)."""
    from dpfast._kernels import table as tk

    rows: list[np.ndarray] = []
    run = tk.run_table_kernel

    def recorded(law, streams, io, table, force, pend):
        run(law, streams, io, table, force, pend)
        rows.append(streams[1].copy())

    monkeypatch.setattr(tk, "run_table_kernel", recorded)
    n = 3 * (1 << 16) + 5  # 4 chunks
    monkeypatch.setattr(_launch, "thread_count", lambda: 1)
    dpfast.discrete_laplace(np.zeros(n, np.int64), 9.0, rng=KEY)
    want = rows[-1]
    monkeypatch.setattr(_launch, "thread_count", lambda: 8)
    for _ in range(5):
        dpfast.discrete_laplace(np.zeros(n, np.int64), 9.0, rng=KEY)
        assert rows[-1].tobytes() == want.tobytes()


def test_concurrent_claimed_launches_from_many_python_threads(monkeypatch) -> None:
    """Six Python threads each make threaded sampler calls at once (their launches share
    the helper pool, each with its own counter): every call gives its key's one-thread
    noise."""
    n = 4 * (1 << 16) + 9
    cases = [("table laplace", np.int64, "alloc"), ("grid gaussian", np.float64, "alloc"),
             ("discrete per-cell", np.int64, "out"), ("bernoulli exp", np.float64, "alloc")]
    monkeypatch.setattr(_launch, "thread_count", lambda: 1)
    want = {(i, c): _sample(*cases[c], n, key=bytes([i + 1]) * 32)
            for i in range(6) for c in range(len(cases))}
    monkeypatch.setattr(_launch, "thread_count", lambda: 3)
    got: dict = {}
    barrier = threading.Barrier(6)

    def worker(i: int) -> None:
        barrier.wait()
        for _ in range(2):
            for c in range(len(cases)):
                got[i, c] = _sample(*cases[c], n, key=bytes([i + 1]) * 32)

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert set(got) == set(want)
    assert all(got[k].tobytes() == want[k].tobytes() for k in want)


_NO_PARALLEL = r"""
import importlib, json, pkgutil
import numba, numpy as np
import dpfast
from dpfast import _kernels
from dpfast._kernels import _launch
launched = []
real = _launch._Guarded.__call__
def counted(self, *args, **kwargs):
    launched.append(self.__name__)
    return real(self, *args, **kwargs)
_launch._Guarded.__call__ = counted
n = 300_000
K = bytes(32)
dpfast.discrete_laplace(np.zeros(n, np.int64), 10.0, rng=K)
dpfast.discrete_laplace(np.arange(n), 10.0, rng=K, out=np.zeros(n, np.int64))
dpfast.discrete_gaussian(np.zeros(n, np.int64), np.linspace(0.5, 9.0, n), rng=K)
dpfast.laplace(np.zeros(n), 10.0, rng=K)
dpfast.gaussian(np.zeros(n, np.float32), 10.0, rng=K)
dpfast.default_rng(K).bernoulli_exp(np.linspace(0.0, 3.0, n))
par = sorted(f"{m.name}.{k}" for m in pkgutil.iter_modules(_kernels.__path__)
             for k, v in vars(importlib.import_module(f"dpfast._kernels.{m.name}")).items()
             if isinstance(getattr(v, "__wrapped__", v), numba.core.registry.CPUDispatcher)
             and getattr(v, "__wrapped__", v).targetoptions.get("parallel")
             and getattr(v, "__wrapped__", v).signatures)
print(json.dumps({"threads": numba.get_num_threads(), "launched": launched, "parallel": par}))
"""


def test_large_threaded_sampler_calls_run_no_parallel_kernel() -> None:
    """Large threaded calls of every sampler (in place, allocating, into a separate
    ``out``, float32 grid, per-cell parameters, Bernoulli) launch no ``parallel=True``
    kernel and load none: nothing parallel to compile at a first call, large or small,
    and nothing to serialise on a layer that is not thread-safe.  On 2 threads (forced),
    so the threaded launch is taken on any host."""
    import json
    import subprocess
    import sys

    from .helpers import SUBPROCESS_TIMEOUT_S

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, NUMBA_NUM_THREADS="2", DPFAST_NO_COMPILE_NOTICE="1")
    done = subprocess.run([sys.executable, "-c", _NO_PARALLEL], env=env, capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"threads": 2, "launched": [], "parallel": []}
