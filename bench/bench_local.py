"""Local DP at scale: perturb + aggregate 10^7 clients over a domain of 1000.

Protocols: optimal local hashing (OLH) and Apple's count-mean sketch (CMS).  Baseline: a
straightforward numpy implementation of the same protocol (same hash functions, numpy
PCG64 floats for the coins: insecure and inexact, as people write it).  Target >= 5x.

The numpy baseline is timed on ``DPFAST_BENCH_LOCAL_BASE`` clients (default 2 * 10^5) and
scaled linearly to ``n`` (both protocols cost O(clients); the small baseline runs with
hot caches, so the scaling favours numpy).  Set ``DPFAST_BENCH_LOCAL_N`` to change n.

Run: .venv/bin/python -m pytest bench/bench_local.py --benchmark-only -p no:randomly -s
"""

from __future__ import annotations

import math
import os
import statistics
import time

import numpy as np

from dpfast import local as L

N = int(os.environ.get("DPFAST_BENCH_LOCAL_N", 10_000_000))
N_BASE = int(os.environ.get("DPFAST_BENCH_LOCAL_BASE", 200_000))
DOMAIN = 1000
KEY = bytes(range(32))
M32 = np.uint64(0xFFFFFFFF)
S32 = np.uint64(32)


def _population(n: int) -> np.ndarray:
    rng = np.random.default_rng(12)
    w = 1.0 / np.arange(1, DOMAIN + 1) ** 1.1
    return rng.choice(DOMAIN, size=n, p=w / w.sum())


# ----------------------------------------------------------------------------- OLH
def _olh_numpy(values: np.ndarray, eps: float, g: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    n = values.size
    seeds = rng.integers(0, 2**64, size=(n, 3), dtype=np.uint64, endpoint=False)
    x = values.astype(np.uint64)
    with np.errstate(over="ignore"):
        h = ((seeds[:, 0] * (x & M32) + seeds[:, 1] * (x >> S32) + seeds[:, 2]) >> S32)
    hv = ((h * np.uint64(g)) >> S32).astype(np.int64)
    p = math.exp(eps) / (math.exp(eps) + g - 1)
    keep = rng.random(n) < p
    other = rng.integers(0, g - 1, size=n)
    y = np.where(keep, hv, other + (other >= hv))
    support = np.empty(DOMAIN, np.int64)
    a0, a1, b = seeds[:, 0], seeds[:, 1], seeds[:, 2]
    gg = np.uint64(g)
    yu = y.astype(np.uint64)
    with np.errstate(over="ignore"):
        for j in range(DOMAIN):
            hj = (a0 * np.uint64(j) + b) >> S32  # item j < 2^32: x_hi = 0
            support[j] = np.count_nonzero(((hj * gg) >> S32) == yu)
    del a1
    return (support - n / g) / (p - 1 / g)


def test_olh_perturb_aggregate(benchmark, report) -> None:
    eps = 2.0
    values = _population(N)
    olh = L.OptimalLocalHashing(DOMAIN, eps)
    olh.estimate(olh.perturb(values[:5000], rng=KEY))  # compile / warm

    def ours():
        return olh.estimate(olh.perturb(values, rng=KEY))

    t0 = time.perf_counter()
    est = ours()
    t_ours = time.perf_counter() - t0
    base_vals = values[:N_BASE]
    t0 = time.perf_counter()
    _olh_numpy(base_vals, eps, olh.g)
    t_base = (time.perf_counter() - t0) * (N / N_BASE)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    t_ours = statistics.median([t_ours, *benchmark.stats.stats.data])  # median, not best-of
    ratio = t_base / t_ours
    true = np.bincount(values, minlength=DOMAIN)
    z = np.abs(est.counts - true) / est.std_error
    benchmark.extra_info.update({"n": N, "domain": DOMAIN, "epsilon": eps, "g": olh.g,
                                 "seconds_dpfast": t_ours, "seconds_numpy_scaled": t_base,
                                 "numpy_clients_timed": N_BASE, "ratio_vs_numpy": ratio,
                                 "max_abs_z": float(z.max())})
    report("local OLH", f"{N:.0e} clients x {DOMAIN} items: dpfast {t_ours:.2f} s, numpy "
           f"{t_base:.1f} s (scaled from {N_BASE}) -> {ratio:.1f}x")
    print(f"\nOLH ratio vs numpy: {ratio:.2f}x")


# ----------------------------------------------------------------------------- CMS
def _cms_numpy(values: np.ndarray, eps: float, cms: L.CountMeanSketch) -> np.ndarray:
    rng = np.random.default_rng(2)
    k, m = cms.num_hashes, cms.sketch_size
    cols = cms.buckets(np.arange(DOMAIN))  # (DOMAIN, k) the same public hashes
    phi = 1 / (1 + math.exp(eps / 2))
    c = (math.exp(eps / 2) + 1) / (math.exp(eps / 2) - 1)
    sketch = np.zeros((k, m))
    batch = 20_000
    for a in range(0, values.size, batch):
        v = values[a:a + batch]
        b = v.size
        rows = rng.integers(0, k, size=b)
        vec = -np.ones((b, m))
        vec[np.arange(b), cols[v, rows]] = 1.0
        flip = rng.random((b, m)) < phi
        vec[flip] *= -1
        x = k * (c / 2 * vec + 0.5)
        np.add.at(sketch, rows, x)
    n = values.size
    est = sketch[np.arange(k)[None, :], cols].mean(axis=1)
    return m / (m - 1) * (est - n / m)


def test_cms_perturb_aggregate(benchmark, report) -> None:
    eps = 4.0
    values = _population(N)
    cms = L.CountMeanSketch(eps, num_hashes=64, sketch_size=1024, hash_seed=7)
    cms.estimate(cms.collect(values[:5000], rng=KEY), np.arange(DOMAIN))  # compile / warm

    def ours():
        return cms.estimate(cms.collect(values, rng=KEY), np.arange(DOMAIN))

    t0 = time.perf_counter()
    est = ours()
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    _cms_numpy(values[:N_BASE], eps, cms)
    t_base = (time.perf_counter() - t0) * (N / N_BASE)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    t_ours = statistics.median([t_ours, *benchmark.stats.stats.data])  # median, not best-of
    ratio = t_base / t_ours
    true = np.bincount(values, minlength=DOMAIN)
    benchmark.extra_info.update({"n": N, "domain": DOMAIN, "epsilon": eps,
                                 "num_hashes": 64, "sketch_size": 1024,
                                 "seconds_dpfast": t_ours, "seconds_numpy_scaled": t_base,
                                 "numpy_clients_timed": N_BASE, "ratio_vs_numpy": ratio,
                                 "top10_abs_err": float(np.abs(est.counts - true)[:10].max())})
    report("local CMS", f"{N:.0e} clients, k=64 x m=1024, {DOMAIN} items: dpfast "
           f"{t_ours:.2f} s, numpy {t_base:.1f} s (scaled from {N_BASE}) -> {ratio:.1f}x")
    print(f"\nCMS ratio vs numpy: {ratio:.2f}x")
