"""The local-DP collection pipeline at scale: streaming server and batched clients.

Server: :meth:`dpfast.local.Aggregator.add` of 10^7 OUE / OLH / CMS reports (the wire
format: packed bits, compact integer columns, the whole check of every report included)
against a straightforward numpy implementation of the same aggregation on the same arrays
(``np.unpackbits`` + column sums; OLH: the vectorized support test per domain value; CMS:
unpack, sort by row, ``np.add.reduceat``).  Target >= 5x.

Client: :func:`dpfast.local.randomize` of 10^6 values (exact randomization array-at-a-time
into a :class:`ReportBatch`) against a per-value Python loop of the same randomizer
(``random.random()`` coins: inexact and insecure, as people write it).  Target >= 10x.
Also reported: :meth:`dpfast.local.ClientPool.report` (the same plus every client's budget
check and the durable state write: two fsyncs, a fixed cost) against the same loop, and
dpfast's own randomizer called once per value (``perturb([v])``).

The baselines run on a subsample (``DPFAST_BENCH_LDP_BASE``, default 2 * 10^5 reports for
the server, 2 * 10^4 values for the Python loops) and are scaled linearly to n (all costs
are O(n); the small baseline runs with hot caches, which favours the baseline).  Sizes:
``DPFAST_BENCH_LDP_N`` (default 10^7 server reports), ``DPFAST_BENCH_LDP_CLIENTS``
(default 10^6).  Reports for the server are generated as uniformly random valid reports
(aggregation cost does not depend on their distribution).

Run: .venv/bin/python -m pytest bench/bench_ldp_pipeline.py --benchmark-only -p no:randomly -s
"""

from __future__ import annotations

import math
import os
import random
import time

import numpy as np
import pytest
from _timing import median_time

from dpfast import local as L

N = int(os.environ.get("DPFAST_BENCH_LDP_N", 10_000_000))
N_BASE = int(os.environ.get("DPFAST_BENCH_LDP_BASE", 200_000))
CLIENTS = int(os.environ.get("DPFAST_BENCH_LDP_CLIENTS", 1_000_000))
LOOP_BASE = int(os.environ.get("DPFAST_BENCH_LDP_LOOP", 20_000))
KEY = bytes(range(32))
S32 = np.uint64(32)


def _random_bits(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    bits = rng.integers(0, 256, size=(n, -(-m // 8)), dtype=np.uint8)
    if m % 8:
        bits[:, -1] &= np.uint8((1 << (m % 8)) - 1)
    return bits


def _server_batch(name: str, n: int) -> tuple[object, L.ReportBatch]:
    rng = np.random.default_rng(1)
    if name == "oue":
        proto = L.OptimizedUnaryEncoding(128, 4.0)
        arrays = {"bits": _random_bits(rng, n, 128)}
    elif name == "olh":
        proto = L.OptimalLocalHashing(128, 2.0)
        arrays = {"seeds": rng.integers(0, 2**64, size=(n, 3), dtype=np.uint64),
                  "values": rng.integers(0, proto.g, size=n, dtype=np.uint8)}
    else:
        proto = L.CountMeanSketch(4.0, 64, 1024, hash_seed=7)
        arrays = {"rows": rng.integers(0, 64, size=n, dtype=np.uint8),
                  "bits": _random_bits(rng, n, 1024)}
    return proto, L.ReportBatch(name, L.reports.protocol_params(proto), arrays)


def _numpy_oue(b: L.ReportBatch, k: int) -> np.ndarray:
    bits = b.arrays["bits"]
    out = np.zeros(k, np.int64)
    for a in range(0, bits.shape[0], 1 << 16):
        out += np.unpackbits(bits[a:a + (1 << 16)], axis=1, count=k,
                             bitorder="little").sum(axis=0, dtype=np.int64)
    return out


def _numpy_olh(b: L.ReportBatch, k: int, g: int) -> np.ndarray:
    seeds, y = b.arrays["seeds"], b.arrays["values"].astype(np.uint64)
    out = np.zeros(k, np.int64)
    gg = np.uint64(g)
    for a in range(0, y.size, 1 << 18):
        a0, bb, yy = seeds[a:a + (1 << 18), 0], seeds[a:a + (1 << 18), 2], y[a:a + (1 << 18)]
        with np.errstate(over="ignore"):
            for j in range(k):  # item j < 2^32: the hash's high-word term is 0
                h = (a0 * np.uint64(j) + bb) >> S32
                out[j] += np.count_nonzero(((h * gg) >> S32) == yy)
    return out


def _numpy_cms(b: L.ReportBatch, k: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    rows, bits = b.arrays["rows"].astype(np.int64), b.arrays["bits"]
    ones = np.zeros((k, m), np.int64)
    for a in range(0, rows.size, 1 << 15):
        r = rows[a:a + (1 << 15)]
        order = np.argsort(r, kind="stable")
        rs = r[order]
        unpacked = np.unpackbits(bits[a:a + (1 << 15)][order], axis=1, count=m,
                                 bitorder="little")
        starts = np.flatnonzero(np.r_[True, rs[1:] != rs[:-1]])
        ones[rs[starts]] += np.add.reduceat(unpacked, starts, axis=0, dtype=np.int64)
    return ones, np.bincount(rows, minlength=k)


@pytest.mark.parametrize("name", ["oue", "olh", "cms"])
def test_server_aggregation(name: str, benchmark, report) -> None:
    proto, batch = _server_batch(name, N)
    small = L.ReportBatch(name, batch.params, {k: v[:N_BASE] for k, v in batch.arrays.items()})
    warm = L.ReportBatch(name, batch.params, {k: v[:5000] for k, v in batch.arrays.items()})
    cands = list(range(128)) if name == "cms" else None
    L.Aggregator(proto, candidates=cands).add(warm)  # compile / warm

    def ours() -> L.Aggregator:
        return L.Aggregator(proto, candidates=cands).add(batch)

    if name == "oue":
        def base(b: L.ReportBatch) -> object:
            return _numpy_oue(b, proto.k)
    elif name == "olh":
        def base(b: L.ReportBatch) -> object:
            return _numpy_olh(b, proto.k, proto.g)
    else:
        def base(b: L.ReportBatch) -> object:
            return _numpy_cms(b, proto.num_hashes, proto.sketch_size)

    # the same tallies (checked on the subsample)
    agg_small = L.Aggregator(proto, candidates=cands).add(small)
    ref = base(small)
    if name == "cms":
        np.testing.assert_array_equal(agg_small.state["counts"], ref[0])
        np.testing.assert_array_equal(agg_small.state["totals"], ref[1])
    else:
        np.testing.assert_array_equal(agg_small.state["counts"], ref)
    t_ours = median_time(ours, 2)
    t_base = median_time(lambda: base(small), 2) * (N / N_BASE)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    ratio = t_base / t_ours
    benchmark.extra_info.update({"n": N, "protocol": name, "seconds_dpfast": t_ours,
                                 "seconds_numpy_scaled": t_base, "numpy_reports_timed": N_BASE,
                                 "ratio_vs_numpy": ratio})
    report(f"ldp server {name}", f"{N:.0e} reports: dpfast Aggregator.add {t_ours:.2f} s, "
           f"numpy {t_base:.1f} s (scaled from {N_BASE}) -> {ratio:.1f}x")
    print(f"\nserver {name} ratio vs numpy: {ratio:.2f}x")


# ----------------------------------------------------------------------------- clients
def _loop_krr(values: np.ndarray, k: int, eps: float) -> list[int]:
    p = math.exp(eps) / (math.exp(eps) + k - 1)
    out = []
    for v in values.tolist():
        if random.random() < p:
            out.append(v)
        else:
            o = random.randrange(k - 1)
            out.append(o + (o >= v))
    return out


def _loop_cms(cols: np.ndarray, k: int, m: int, eps: float) -> list[tuple[int, bytes]]:
    phi = 1 / (1 + math.exp(eps / 2))
    out = []
    for row_cols in cols.tolist():  # the public hashes of each value, given for free
        j = random.randrange(k)
        vec = [0] * m
        vec[row_cols[j]] = 1
        for r in range(m):
            if random.random() < phi:
                vec[r] ^= 1
        out.append((j, bytes(vec)))
    return out


@pytest.mark.parametrize("name", ["cms", "krr"])
def test_client_randomization(name: str, benchmark, report, tmp_path) -> None:
    rng = np.random.default_rng(2)
    domain = 200  # emoji-like: 200 items, Zipf-ish
    w = 1.0 / np.arange(1, domain + 1)
    values = rng.choice(domain, size=CLIENTS, p=w / w.sum())
    if name == "cms":
        proto = L.CountMeanSketch(4.0, 64, 1024, hash_seed=7)
    else:
        proto = L.GeneralizedRandomizedResponse(domain, 4.0)
    ids = np.arange(CLIENTS)
    rounds = [0]

    def ours() -> L.ReportBatch:  # randomization array-at-a-time into a ReportBatch
        return L.randomize(proto, values)

    def ours_pool() -> L.ReportBatch:  # ... plus each client's durable budget charge
        rounds[0] += 1  # a fresh pool each round: every client has its budget
        pool = L.ClientPool(proto, tmp_path / f"pool{rounds[0]}", num_clients=CLIENTS,
                            budget=4.0)
        return pool.report(ids, values)

    L.ClientPool(proto, tmp_path / "warm", num_clients=10, budget=4.0).report(
        np.arange(10), values[:10])
    t_ours = median_time(ours, 3)
    t_pool = median_time(ours_pool, 3)
    sub = values[:LOOP_BASE]
    if name == "cms":
        cols = proto.buckets(sub)
        t_loop = median_time(lambda: _loop_cms(cols, 64, 1024, 4.0), 1) * (CLIENTS / LOOP_BASE)
    else:
        sub = values[:10 * LOOP_BASE]  # a cheap loop: time more of it
        t_loop = median_time(lambda: _loop_krr(sub, domain, 4.0), 3) * (CLIENTS / sub.size)
    few = values[:2000]
    t0 = time.perf_counter()
    for v in few:
        proto.perturb([int(v)], rng=KEY)
    t_calls = (time.perf_counter() - t0) * (CLIENTS / few.size)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    ratio, ratio_pool, ratio_calls = t_loop / t_ours, t_loop / t_pool, t_calls / t_ours
    benchmark.extra_info.update({"clients": CLIENTS, "protocol": name,
                                 "seconds_dpfast_randomize": t_ours,
                                 "seconds_dpfast_pool_report": t_pool,
                                 "seconds_python_loop": t_loop,
                                 "seconds_per_value_calls": t_calls,
                                 "ratio_vs_python_loop": ratio,
                                 "ratio_pool_vs_python_loop": ratio_pool,
                                 "ratio_vs_per_value_calls": ratio_calls})
    report(f"ldp clients {name}", f"{CLIENTS:.0e} values: randomize {t_ours:.3f} s, Python loop "
           f"{t_loop:.2f} s -> {ratio:.1f}x; with the budget (ClientPool.report) "
           f"{t_pool:.3f} s -> {ratio_pool:.1f}x; per-value perturb calls {t_calls:.0f} s -> "
           f"{ratio_calls:.0f}x")
    print(f"\nclients {name}: {ratio:.1f}x vs Python loop ({ratio_pool:.1f}x with budgets)")
