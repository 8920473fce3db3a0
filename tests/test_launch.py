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
    blockers = [pool.submit(release.wait) for _ in range(pool._max_workers)]
    try:
        x = np.zeros(3 * dpfast.noise._drive.CHUNK, np.int64)
        got = dpfast.discrete_gaussian(x, 2.0, rng=KEY)  # would hang if it waited
    finally:
        release.set()
        for b in blockers:
            b.result()
    monkeypatch.setattr(_launch, "thread_count", lambda: 1)
    assert np.array_equal(got, dpfast.discrete_gaussian(x, 2.0, rng=KEY))
