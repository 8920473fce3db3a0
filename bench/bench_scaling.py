"""Thread scaling of the samplers, against two probe kernels timed in the same rounds.

For each sampler (10^7 cells; integer ones in place) the same call runs on one thread and
on all of numba's threads, back to back, 11 times; the scaling is the median of the
per-pair ratios (one-thread time / all-thread time) with their min-max (never a best-of
figure).  Two probe kernels with no shared data
show what the host itself gives: one xorshift dependency chain per task (latency bound:
hyperthreads of one core interleave it almost perfectly) and four independent chains
(instruction-level parallelism, like the samplers' ChaCha20 and integer code: two
hyperthreads of one core compete for its ALUs).  The samplers' "efficiency" is their
scaling over the four-chain probe's, pair by pair.

Rows scaling (issue 28, :func:`test_rows_scaling`): the time per row of
``tables.count``, ``tables.mean`` (one process, every core), ``tables.topdown`` (per block
of a census-shaped tree with as many blocks as rows, :func:`dpfast.perf.suite.census_tree`)
and ``dask.count`` (2-worker ``LocalCluster``, rows persisted on the workers) from 10^5 to
10^7 rows (10 rows per person, 10^5 Zipf keys, ``max_partitions=3``, private key
selection), median of 3 each; ``DPFAST_BENCH_SCALING_MAX=8`` adds 10^8 rows (about 10 GB of
memory; dask.count at 10^8 out of core is ``bench_dask.py::test_dask_count_out_of_core``),
``DPFAST_BENCH_SCALING_SIZES=1e5,1e6,1e7,3e7`` picks the sizes.  Every release is checked
bit-identical between dask and one process.

Run: .venv/bin/python -m pytest bench/bench_scaling.py --benchmark-only -s
"""

from __future__ import annotations

import statistics
import time

import numba
import numpy as np
import pytest
from numba import njit, prange

import dpfast

KEY = bytes(range(32))
N = 10**7
PAIRS = 11


@njit(parallel=True, cache=True)
def _one_chain(out, n_iter):  # pragma: no cover - timed only
    for t in prange(out.size):
        a = np.uint64(t + 1)
        for _ in range(n_iter):
            a ^= a << np.uint64(13)
            a ^= a >> np.uint64(7)
            a ^= a << np.uint64(17)
        out[t] = a


@njit(parallel=True, cache=True)
def _four_chains(out, n_iter):  # pragma: no cover - timed only
    for t in prange(out.size):
        a, b = np.uint64(t + 1), np.uint64(t + 7)
        c, d = np.uint64(t + 13), np.uint64(t + 19)
        for _ in range(n_iter):
            a ^= a << np.uint64(13)
            b ^= b << np.uint64(13)
            c ^= c << np.uint64(13)
            d ^= d << np.uint64(13)
            a ^= a >> np.uint64(7)
            b ^= b >> np.uint64(7)
            c ^= c >> np.uint64(7)
            d ^= d >> np.uint64(7)
            a ^= a << np.uint64(17)
            b ^= b << np.uint64(17)
            c ^= c << np.uint64(17)
            d ^= d << np.uint64(17)
        out[t] = a + b + c + d


def _timed(fn, threads: int) -> float:
    old = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    finally:
        numba.set_num_threads(old)


def _pairs(fn, probe) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(one-thread, all-thread) times of ``fn`` and of ``probe``, the four timings of a
    round together."""
    threads = numba.get_num_threads()
    fn()
    probe()
    own, ref = [], []
    for _ in range(PAIRS):
        own.append((_timed(fn, 1), _timed(fn, threads)))
        ref.append((_timed(probe, 1), _timed(probe, threads)))
    return own, ref


def _median_scaling(pairs: list[tuple[float, float]]) -> float:
    return statistics.median(a / b for a, b in pairs)


@pytest.mark.parametrize("case", ["discrete_laplace_10", "discrete_laplace_1000",
                                  "discrete_gaussian_10", "laplace_grid", "gaussian_grid"])
def test_thread_scaling(benchmark, report, case: str) -> None:
    if numba.get_num_threads() < 2:
        pytest.skip("one numba thread: nothing to scale")
    gen = dpfast.default_rng(KEY)
    xi, xf = np.zeros(N, np.int64), np.zeros(N)
    calls = {
        "discrete_laplace_10": lambda: dpfast.discrete_laplace(xi, 10.0, rng=gen, out=xi),
        "discrete_laplace_1000": lambda: dpfast.discrete_laplace(xi, 1000.0, rng=gen, out=xi),
        "discrete_gaussian_10": lambda: dpfast.discrete_gaussian(xi, 10.0, rng=gen, out=xi),
        "laplace_grid": lambda: dpfast.laplace(xf, 10.0, rng=gen),
        "gaussian_grid": lambda: dpfast.gaussian(xf, 10.0, rng=gen),
    }
    fn = calls[case]
    out = np.zeros(4 * numba.get_num_threads() * 64, np.uint64)

    def one() -> None:
        _one_chain(out, 40_000)

    def four() -> None:
        _four_chains(out, 12_000)

    benchmark.pedantic(fn, rounds=3, iterations=1)
    own, ref4 = _pairs(fn, four)
    _, ref1 = _pairs(one, one)
    s, s4, s1 = (_median_scaling(v) for v in (own, ref4, ref1))
    ratios = [a / c for a, c in own]
    eff = statistics.median((a / c) / (p / q) for (a, c), (p, q) in zip(own, ref4, strict=True))
    benchmark.extra_info.update({"threads": numba.get_num_threads(), "scaling": s,
                                 "scaling_min": min(ratios), "scaling_max": max(ratios),
                                 "probe_four_chains": s4, "probe_one_chain": s1,
                                 "efficiency_vs_four_chains": eff})
    print(f"{case}: {numba.get_num_threads()} threads over 1: median {s:.2f}x (pairs "
          f"{min(ratios):.2f}-{max(ratios):.2f}); probes (median): "
          f"one chain {s1:.2f}x, four chains {s4:.2f}x; efficiency vs "
          f"four chains {eff:.2f}")
    report(f"scaling[{case}]", f"{s:.2f}x median (pairs {min(ratios):.2f}-{max(ratios):.2f}), on "
           f"{numba.get_num_threads()} threads (probe kernels {s1:.2f}x / {s4:.2f}x)")


def _median(fn, times: int = 3) -> float:
    fn()  # kernels loaded, pages touched
    runs = []
    for _ in range(times):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def _rows(part: int, per: int, people: int):
    """One partition of the scaling rows (generated where it is computed: the workers)."""
    import pandas as pd

    g = np.random.default_rng(part)
    return pd.DataFrame({"key": (g.zipf(1.3, per) - 1) % 10 ** 5,
                         "id": g.integers(0, people, per), "v": g.integers(0, 100, per)})


def test_rows_scaling(benchmark, report) -> None:
    import os

    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("pandas")
    import dpfast.dask as dkd
    from dpfast import tables as dpt
    from dpfast.perf.suite import census_tree

    top = int(os.environ.get("DPFAST_BENCH_SCALING_MAX", 7))
    sizes = [10 ** e for e in range(5, top + 1)]
    if os.environ.get("DPFAST_BENCH_SCALING_SIZES"):
        sizes = [int(float(v)) for v in os.environ["DPFAST_BENCH_SCALING_SIZES"].split(",")]
    kw = dict(epsilon=1.0, delta=1e-6, max_partitions=3)
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=":0",
                                       env={"NUMBA_NUM_THREADS": "1"})
    client = distributed.Client(cluster)
    rows_out: dict[str, list[float]] = {"tables.count": [], "tables.mean": [],
                                        "tables.topdown": [], "dask.count": []}
    try:
        for n in sizes:
            nparts = max(2, n // 1_250_000)
            per, people = n // nparts, max(1, n // 10)
            local = [_rows(p, per, people) for p in range(nparts)]
            keys, ids, vals = (np.concatenate([f[c].to_numpy() for f in local])
                               for c in ("key", "id", "v"))
            rng = lambda: dpfast.default_rng(KEY)  # noqa: E731 - replays: comparable

            def count(keys=keys, ids=ids, rng=rng):
                return dpt.count(keys, ids, rng=rng(), **kw)

            def mean(keys=keys, ids=ids, vals=vals, rng=rng):
                return dpt.mean(vals, keys, ids, bounds=(0, 99), rng=rng(), **kw)

            ddf = client.persist(dd.from_map(_rows, range(nparts), per=per, people=people,
                                             meta=local[0].iloc[:0])[["key", "id"]])
            distributed.wait(ddf)
            del local

            def dcount(ddf=ddf, rng=rng):
                return dkd.count(ddf, "key", "id", rng=rng(), **kw)

            a, b = count(), dcount()
            assert np.array_equal(a.keys, b.keys) and np.array_equal(a.values, b.values)
            for name, fn in (("tables.count", count), ("tables.mean", mean),
                             ("dask.count", dcount)):
                rows_out[name].append(_median(fn) / n * 1e9)  # ns per row
            del ddf, count, mean, dcount
            tree = census_tree(n)

            def topdown(tree=tree, rng=rng):
                return dpt.topdown(tree[0], tree[1], rho=1.0, rng=rng())

            rows_out["tables.topdown"].append(_median(topdown) / n * 1e9)  # ns per block
            del tree, topdown
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    finally:
        client.close()
        cluster.close()
    benchmark.extra_info.update({"sizes": sizes, "ns_per_row": rows_out})
    head = " | ".join(f"{n:.0e}" for n in sizes)
    print(f"\nns per row      | {head}")
    for name, per in rows_out.items():
        print(f"{name:15s} | " + " | ".join(f"{v:8.1f}" for v in per))
        growth = per[-1] / per[0]
        report(f"rows scaling[{name}]", "ns/row " + ", ".join(
            f"{v:.0f}" for v in per) + f" at {head}; last/first {growth:.2f} "
            f"(<= 1: linear or better)")
