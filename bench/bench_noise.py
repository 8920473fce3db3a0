"""Noise throughput vs numpy's (insecure) Generator.laplace, measured in the same run.

Targets, N = 10^7 cells (issue 3, raised by issue 28):
  discrete_laplace (scale 10)   >= 3x single-threaded (issue 3: 0.5x), >= 1.0x all cores
  discrete_gaussian (sigma 10)  >= 3x single-threaded (issue 3: 0.3x), >= 0.6x all cores
  laplace / gaussian (float)    >= 2x single-threaded (issue 3: 0.3x)
  vs OpenDP on the same task    aim >= 150x
  in-place noising of 10^8 int64 cells allocates <= 64 MiB beyond the array.

Run:  .venv/bin/python -m pytest bench/bench_noise.py --benchmark-only
"""

from __future__ import annotations

import subprocess
import sys

import _timing as _t
import numba
import numpy as np
import pytest

import dpfast

N = 10_000_000
KEY = bytes(range(32))


def _numpy_laplace():
    rng = np.random.default_rng(1)
    return lambda: rng.laplace(0.0, 10.0, size=N)


CASES = {
    "discrete_laplace": (lambda x, g: dpfast.discrete_laplace(x, 10.0, rng=g, out=x), np.int64),
    "discrete_gaussian": (lambda x, g: dpfast.discrete_gaussian(x, 10.0, rng=g, out=x),
                          np.int64),
    "laplace": (lambda x, g: dpfast.laplace(x, 10.0, rng=g), np.float64),
    "gaussian": (lambda x, g: dpfast.gaussian(x, 10.0, rng=g), np.float64),
}


@pytest.mark.parametrize("threads", ["1", "all"])
@pytest.mark.parametrize("name", list(CASES))
def test_noise_ratio_vs_numpy(benchmark, report, name: str, threads: str) -> None:
    fn, dtype = CASES[name]
    gen = dpfast.default_rng(KEY)
    x = np.zeros(N, dtype)
    before = numba.get_num_threads()
    numba.set_num_threads(1 if threads == "1" else numba.config.NUMBA_NUM_THREADS)
    try:
        fn(x[:1000], gen)  # compile / load cache
        p = _t.pairs([_numpy_laplace(), lambda: fn(x, gen)], repeat=9)
        benchmark.pedantic(lambda: fn(x, gen), rounds=3, iterations=1)
    finally:
        numba.set_num_threads(before)
    t_np, t_ours = p.median(0), p.median(1)
    benchmark.extra_info.update({**p.info(0, 1, "ratio_vs_numpy_laplace"),
                                 "cells_per_s": N / t_ours, "numpy_cells_per_s": N / t_np,
                                 "threads": threads})
    report(f"{name} [{threads} thread(s)]",
           f"{N / t_ours:.3g} cells/s (median) = {p.describe(0, 1)} numpy laplace "
           f"({N / t_np:.3g}/s)")


def test_ratio_vs_opendp(benchmark, report) -> None:
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    n_peer = 100_000
    data = [0] * n_peer
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int),
                             scale=10.0)
    meas_g = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int),
                                scale=10.0)
    gen = dpfast.default_rng(KEY)
    x = np.zeros(N, np.int64)
    dpfast.discrete_laplace(x[:10], 10.0, rng=gen)
    scale = N / n_peer  # per cell: the peer runs 10^5 cells, dpfast N
    p = _t.pairs([lambda: meas(data), lambda: meas_g(data),
                  lambda: dpfast.discrete_laplace(x, 10.0, rng=gen, out=x),
                  lambda: dpfast.discrete_gaussian(x, 10.0, rng=gen, out=x)], repeat=5)
    t_peer, t_peer_g = p.median(0), p.median(1)
    benchmark.pedantic(lambda: dpfast.discrete_laplace(x, 10.0, rng=gen, out=x), rounds=2,
                       iterations=1)
    r = p.ratio(0, 2) * scale
    rg = p.ratio(1, 3) * scale
    benchmark.extra_info.update({"ratio_vs_opendp_discrete_laplace": r,
                                 "ratio_vs_opendp_discrete_gaussian": rg})
    report("vs OpenDP", f"discrete_laplace {r:.0f}x ({n_peer / t_peer:.3g}/s), "
           f"discrete_gaussian {rg:.0f}x ({n_peer / t_peer_g:.3g}/s)")


_MEM_SCRIPT = r"""
import resource, sys, numpy as np, dpfast
fn = getattr(dpfast, sys.argv[1])
x = np.zeros(100_000_000, sys.argv[2])
x[:] = 5
fn(x[:1000], 10.0, rng=bytes(32), out=x[:1000])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
fn(x, 10.0, rng=bytes(32), out=x)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((peak - base) / 1024.0)
"""


@pytest.mark.parametrize("fn,dtype", [("discrete_laplace", "int64"),
                                      ("discrete_gaussian", "int64"), ("laplace", "float64")])
def test_in_place_memory_10e8(benchmark, report, fn: str, dtype: str) -> None:
    def run() -> float:
        res = subprocess.run([sys.executable, "-c", _MEM_SCRIPT, fn, dtype],
                             capture_output=True, text=True, check=True)
        return float(res.stdout.strip().splitlines()[-1])

    extra_mib = benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info["extra_peak_rss_MiB"] = extra_mib
    report(f"in-place {fn}, 10^8 {dtype} cells", f"peak RSS beyond the array: "
           f"{extra_mib:.1f} MiB (limit 64)")
    assert extra_mib <= 64


@pytest.mark.parametrize("fn,base", [("discrete_laplace", 100.0), ("discrete_gaussian", 10.0)])
def test_per_scale_setup_cost(benchmark, report, fn: str, base: float) -> None:
    """Many small queries at varied scales (issue 9): a 10-cell call at a scale never
    seen before (its envelope table is built) vs at a cached scale.  Target: the
    difference -- the per-scale setup cost -- is at most 5 ms.  Medians of many, interleaved
    (the machines are shared)."""
    from dpfast.noise import _envelope

    f = getattr(dpfast, fn)
    x = np.zeros(10, np.int64)
    gen = dpfast.default_rng(KEY)
    f(x, base, rng=gen)  # kernels loaded, table for `base` cached
    fresh = iter(base * (1.0 + k * 2.0**-20) for k in range(1, 10_000))
    assert _envelope.TABLE_CACHE >= 16  # bounded LRU of tables

    def new_scale() -> None:
        f(x, next(fresh), rng=gen)

    p = _t.pairs([new_scale, lambda: f(x, base, rng=gen)], repeat=30)
    t_new, t_cached = p.median(0), p.median(1)
    benchmark.pedantic(new_scale, rounds=10, iterations=1)
    setup_ms = (t_new - t_cached) * 1e3
    benchmark.extra_info.update({"setup_ms": setup_ms, "cached_call_ms": t_cached * 1e3,
                                 "new_scale_call_ms": t_new * 1e3})
    report(f"{fn}: per-scale setup", f"{setup_ms:.2f} ms (10-cell call: {t_new * 1e3:.2f} ms "
           f"at a new scale, {t_cached * 1e3:.2f} ms cached; target <= 5 ms)")
