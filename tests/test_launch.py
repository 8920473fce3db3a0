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


@pytest.mark.slow
def test_a_first_large_out_call_compiles_no_parallel_kernel(tmp_path) -> None:
    """A first call on 2*10^5 cells of the grid Laplace and of the discrete Laplace into a
    separate ``out``, in a fresh cache directory, compiles no ``parallel=True`` kernel.
    Fails on the old code: the max |x| check of the grid samplers and the x range pass of
    a separate integer ``out`` were ``parallel=True`` kernels (seconds of LLVM at first
    use); now they are chunked launches of serial kernels, as the samplers are."""
    import json
    import subprocess
    import sys

    from dpfast import _parallel

    from .helpers import SUBPROCESS_TIMEOUT_S

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import json\n"
            "import numpy as np\n"
            "from numba.core import event\n"
            "seen = []\n"
            "class L(event.Listener):\n"
            "    def on_start(self, ev):\n"
            "        d = ev.data.get('dispatcher')\n"
            "        f = getattr(d, 'py_func', None)\n"
            "        seen.append((f'{f.__module__}.{f.__qualname__}' if f else '?',\n"
            "                     bool(getattr(d, 'targetoptions', {}).get('parallel'))))\n"
            "    def on_end(self, ev):\n"
            "        pass\n"
            "event.register('numba:compile', L())\n"
            "import dpfast\n"
            "x = np.arange(200_000) % 50\n"
            "dpfast.laplace(x.astype(float), 2.0, rng=bytes(32))\n"
            "dpfast.discrete_laplace(x, 2.0, rng=bytes(32), out=np.empty_like(x))\n"
            "print(json.dumps(seen))\n")
    env = {k: v for k, v in os.environ.items() if k != _parallel.NOTICE_ENV}
    env.update(NUMBA_CACHE_DIR=str(tmp_path), PYTHONPATH=root, **{_parallel.NOTICE_ENV: "1"})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S, cwd=root)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    ours = {name for name, _ in seen if name.startswith("dpfast.")}
    assert {"dpfast._kernels.grid._max_abs_blocks",
            "dpfast._kernels.grid._range_blocks"} <= ours  # they did compile, for real
    assert {name for name, par in seen if par} == set()
