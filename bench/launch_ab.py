"""The chunked launch before and after issue 40's fix, in one process (interleaved).

Run: ``PYTHONPATH=. python bench/launch_ab.py [--fn discrete_gaussian] [--scale 10]
[--cells 2000000] [--rounds 31]``.

Each round times the sampler (in place, int64) on one thread, then on all of numba's
threads with the old launch (a ``threading.Thread`` started per helper, ``ceil(n / (4
threads))`` chunks per range) and with the current one (:mod:`dpfast._kernels._launch`: a
persistent helper pool, guided ranges), the order alternating.  Prints each launch's
scaling (one-thread time / all-thread time) and new / old speed: medians of the per-round
ratios with their min-max (never best-of), and the load average.  The output is the same
bit for bit either way (the chunks are independent).
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time

import numba
import numpy as np

import dpfast
from dpfast._kernels import _launch

KEY = bytes(range(32))


def old_launch(self, args, threads):  # type: ignore[no-untyped-def]
    """The launch before the fix (a thread per helper, 4 equal ranges per thread)."""
    n = self._count(args)
    nt = min(threads, n)
    if nt <= 1:
        self._kernel(*self._split(args, 0, n))
        return
    per = -(-n // (4 * nt))
    items = iter([(a, min(n, a + per)) for a in range(0, n, per)])
    take = threading.Lock()
    failed: list[BaseException] = []

    def work() -> None:
        try:
            while not failed:
                with take:
                    item = next(items, None)
                if item is None:
                    return
                self._kernel(*self._split(args, item[0], item[1]))
        except BaseException as exc:
            failed.append(exc)

    ws = [threading.Thread(target=work, daemon=True) for _ in range(nt - 1)]
    for t in ws:
        t.start()
    work()
    for t in ws:
        t.join()
    if failed:
        raise failed[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fn", default="discrete_gaussian")
    ap.add_argument("--scale", type=float, default=10.0)
    ap.add_argument("--cells", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=31)
    a = ap.parse_args()
    fn = getattr(dpfast, a.fn)
    x = np.zeros(a.cells, np.float64 if a.fn in ("laplace", "gaussian") else np.int64)
    gen = dpfast.default_rng(KEY)
    new = _launch._Chunked.launch

    def one() -> None:
        old = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            fn(x, a.scale, rng=gen, out=x)
        finally:
            numba.set_num_threads(old)

    def with_launch(launch):  # type: ignore[no-untyped-def]
        def run() -> None:
            _launch._Chunked.launch = launch  # type: ignore[method-assign]
            try:
                fn(x, a.scale, rng=gen, out=x)
            finally:
                _launch._Chunked.launch = new  # type: ignore[method-assign]
        return run

    fns = [one, with_launch(old_launch), with_launch(new)]
    for f in fns:
        f()
    t: list[list[float]] = [[], [], []]
    for r in range(a.rounds):
        for i in ([0, 1, 2] if r % 2 == 0 else [2, 1, 0]):
            c = time.perf_counter()
            fns[i]()
            t[i].append(time.perf_counter() - c)

    def desc(v: list[float]) -> str:
        return f"{statistics.median(v):.3f} ({min(v):.2f}-{max(v):.2f})"

    print(f"{a.fn} {a.scale:g}, {a.cells} cells, {numba.get_num_threads()} threads, "
          f"{a.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    print("  scaling, old launch:", desc([o / b for o, b in zip(t[0], t[1])]))
    print("  scaling, new launch:", desc([o / b for o, b in zip(t[0], t[2])]))
    print("  new / old speed:    ", desc([b / c for b, c in zip(t[1], t[2])]))


if __name__ == "__main__":
    main()
