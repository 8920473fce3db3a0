"""Measured coverage of dpfast's 95% intervals, per release kind (issue 39, part 4).

Every kind is repeated with fixed keys (the run is deterministic) over more trials than
``tests/test_coverage.py`` and printed as one markdown table: the measured coverage,
the trials, the binomial standard error and what the interval claims (calibrated:
nominal within sampling; conservative: at least nominal).  The count-mean sketches use
ONE fixed set of hash functions for every run (the server's situation) and also show
the random-hash variance they published before (``sk.variance`` with the candidates'
plug-in counts) for comparison.  TopDown's intervals are measured in the BLUE section of
docs/benchmarks.md.

Run: .venv/bin/python bench/interval_coverage.py   (about 2-4 minutes on one core)
(Not named ``coverage.py``: run as a script, or under ``pytest bench/``, that name would
shadow the ``coverage`` package that numba imports.)
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time

import numpy as np
from scipy import stats

import dpfast
import dpfast.local as L
from dpfast import tables as dpt

KEY = bytes(range(32))
Z = float(stats.norm.isf(0.025))
ROWS: list[tuple[str, float, int, str]] = []


def _key(r: int) -> bytes:
    return r.to_bytes(4, "little") + KEY[4:]


def _row(kind: str, hits: np.ndarray, claim: str) -> None:
    h = np.asarray(hits, bool).ravel()
    ROWS.append((kind, float(h.mean()), int(h.size), claim))
    print(f"  {kind}: {h.mean():.4f} ({h.size} trials)", file=sys.stderr)


# ----------------------------------------------------------------------------- tables
def tables(reps: int = 5) -> None:
    d, rows = 20000, 100_000
    acc: dict[str, list[np.ndarray]] = {}
    for r in range(reps):
        rng = np.random.default_rng(r)
        keys = rng.integers(0, d, rows)
        vals = rng.uniform(0.0, 10.0, rows)
        dom = np.arange(d)
        n = np.bincount(keys, minlength=d)
        s = np.bincount(keys, weights=vals, minlength=d)
        for noise, kw, kwm in [("laplace", {"epsilon": 0.05}, {"epsilon": 1.0}),
                               ("gaussian", {"epsilon": 0.2, "delta": 1e-6},
                                {"epsilon": 1.0, "delta": 1e-6})]:
            lo, hi = dpt.count(keys, domain=dom, noise=noise,
                               rng=dpfast.default_rng(_key(r)), **kw).confidence_interval(0.05)
            acc.setdefault(f"count, {noise}", []).append((lo <= n) & (n <= hi))
            lo, hi = dpt.sum(vals, keys, bounds=(0, 10), domain=dom, noise=noise,
                             rng=dpfast.default_rng(_key(r)), **kw).confidence_interval(0.05)
            acc.setdefault(f"sum, {noise}", []).append((lo <= s) & (s <= hi))
            lo, hi = dpt.mean(vals, keys, bounds=(0, 10), domain=dom, noise=noise,
                              rng=dpfast.default_rng(_key(r)), **kwm).confidence_interval(0.05)
            m = s / np.maximum(n, 1)
            acc.setdefault(f"mean, {noise}", []).append(((lo <= m) & (m <= hi))[n > 0])
        acc.setdefault("median, rank error", []).append(_median(keys, vals, dom, r))
    for kind, hits in acc.items():
        claim = ("conservative (box of two intervals)" if kind.startswith("mean")
                 else "conservative (union bound)" if kind.startswith("median")
                 else "calibrated (exact noise law)")
        _row(f"tables: {kind}", np.concatenate(hits), claim)


def _median(keys: np.ndarray, vals: np.ndarray, dom: np.ndarray, r: int) -> np.ndarray:
    rel = dpt.median(vals, keys, bounds=(0, 10), domain=dom, epsilon=0.5,
                     rng=dpfast.default_rng(_key(r)))
    err = rel.rank_error(0.05)
    g = np.asarray(rel.values, np.float64).reshape(len(rel), -1)[:, 0]
    rk = np.asarray(rel.keys)
    order = np.lexsort((vals, keys))
    code = keys[order] * 100.0 + vals[order]
    n = np.bincount(keys, minlength=dom.size)[rk]
    start = np.searchsorted(code, rk * 100.0)

    def dist(points: np.ndarray) -> np.ndarray:
        c = rk[:, None] * 100.0 + points
        a = np.searchsorted(code, c, side="left") - start[:, None]
        b = np.searchsorted(code, c, side="right") - start[:, None]
        t = n[:, None] / 2
        return np.maximum(np.maximum(a - t, t - b), 0)

    best = dist(np.broadcast_to(rel.grid, (rk.size, rel.grid.size))).min(axis=1)
    return (dist(g[:, None])[:, 0] <= best + err)[n > 0]


# ----------------------------------------------------------------------------- local DP
def binary_rr() -> None:
    rng = np.random.default_rng(1)
    x = rng.random((300, 100_000)) < rng.uniform(0.05, 0.95, 100_000)
    est = L.randomized_response_estimate(L.randomized_response(x, 1.0, rng=KEY), 1.0,
                                         axis=0)
    _row("local: binary randomized response",
         np.abs(est.counts - x.sum(axis=0)) <= Z * est.std_error, "calibrated (normal)")


def pure(runs: int = 500) -> None:
    for name, proto, n in [("k-ary randomized response (k = 100)",
                            L.GeneralizedRandomizedResponse(100, 2.0), 20000),
                           ("OUE (k = 100)", L.OptimizedUnaryEncoding(100, 2.0), 5000),
                           ("OLH (k = 100)", L.OptimalLocalHashing(100, 2.0), 5000)]:
        rng = np.random.default_rng(2)
        w = 1.0 / np.arange(1, 101) ** 0.8
        hits = []
        for r in range(runs):
            vals = rng.choice(100, size=n, p=w / w.sum())
            est = L.Aggregator(proto).add(L.randomize(proto, vals, rng=_key(r))).estimate()
            true = np.bincount(vals, minlength=100)[np.array(est.items)]
            hits.append((est.low <= true) & (true <= est.high))
        _row(f"local: {name}", np.concatenate(hits), "calibrated (normal)")


def sketches() -> None:
    regimes = [("noise-dominated: eps 2, k 64, m 1024, 10^5 users, Zipf 1.1 over 10^4, "
                "top 1000 candidates", 2.0, 64, 1024, 100_000, 10_000, 1.1, 1000, 20),
               ("collision-dominated: eps 4, k 32, m 256, 4 * 10^4 users, Zipf 1.5 over 50",
                4.0, 32, 256, 40_000, 50, 1.5, 50, 400)]
    for cls, short in [(L.CountMeanSketch, "CMS"), (L.HadamardCountMeanSketch, "HCMS")]:
        for label, eps, k, m, n, items, zipf, ncand, runs in regimes:
            rng = np.random.default_rng(1)
            w = 1.0 / np.arange(1, items + 1) ** zipf
            vals = rng.choice(items, size=n, p=w / w.sum())
            true = np.bincount(vals, minlength=items)[:ncand]
            sk = cls(eps, k, m, hash_seed=7)
            new, old = [], []
            for r in range(runs):
                e = sk.estimate(sk.perturb(vals, rng=_key(r)), np.arange(ncand))
                err = np.abs(e.counts - true)
                new.append(err <= Z * e.std_error)
                c = np.clip(e.counts, 0, n)
                s2 = float(np.sum(c * c)) - c * c + max(0.0, n - float(c.sum()))
                old.append(err <= Z * np.sqrt([sk.variance(n, a, b) for a, b in zip(c, s2)]))
            per_item = np.mean(new, axis=0)
            _row(f"local: {short}, {label}", np.array(new),
                 f"conservative (fixed-hash MSE); worst item {per_item.min():.2f}")
            _row(f"local: {short}, same, random-hash variance (before)", np.array(old),
                 f"worst item {np.mean(old, axis=0).min():.2f}")


def mechanisms(reps: int = 5) -> None:
    from dpfast import mechanisms as M

    for name, mech in [("Laplace", M.LaplaceMechanism(0.05, 1.0)),
                       ("Gaussian", M.GaussianMechanism(0.2, 1e-6, sensitivity=1.0)),
                       ("discrete Laplace", M.DiscreteLaplaceMechanism(0.05)),
                       ("discrete Gaussian", M.DiscreteGaussianMechanism(0.2, 1e-6)),
                       ("snapping", M.SnappingMechanism(0.05, 1.0, 1000.0))]:
        x = np.random.default_rng(4).integers(-50, 50, 20000)
        hits = []
        for r in range(reps):
            arg = x if "discrete" in name else x.astype(np.float64)
            lo, hi = mech.confidence_interval(0.05, mech(arg, rng=_key(r)))
            hits.append((lo <= x) & (x <= hi))
        claim = ("conservative (rigorous bound, snap rounding added whole)"
                 if name == "snapping" else "calibrated (exact noise law)")
        _row(f"mechanism: {name}", np.concatenate(hits), claim)


def variance(reps: int = 3) -> None:
    hits = []
    for r in range(reps):
        rng = np.random.default_rng(r)
        d = 20000
        keys = rng.integers(0, d, 400_000)
        vals = rng.uniform(0.0, 10.0, keys.size)
        lo, hi = dpt.variance(vals, keys, bounds=(0, 10), domain=np.arange(d), epsilon=1.0,
                              rng=dpfast.default_rng(_key(r))).confidence_interval(0.05)
        n = np.bincount(keys, minlength=d)
        m1 = np.bincount(keys, weights=vals, minlength=d) / np.maximum(n, 1)
        m2 = np.bincount(keys, weights=vals * vals, minlength=d) / np.maximum(n, 1)
        tv = m2 - m1 * m1
        hits.append(((lo <= tv) & (tv <= hi))[n > 1])
    _row("tables: variance, laplace (epsilon only)", np.concatenate(hits),
         "conservative (stated)")


def rappor(runs: int = 300) -> None:
    rng = np.random.default_rng(3)
    n, items = 4000, 20
    vals = rng.choice(items, size=n)
    true = np.bincount(vals, minlength=items)
    rap = L.Rappor(64, 2, 8, f=0.0, p=0.25, q=0.75, hash_seed=5)
    ids = np.arange(n, dtype=np.int64)
    hits = []
    for r in range(runs):
        dec = rap.decode(rap.encode(vals, ids, _key(r), rng=_key(10_000 + r)),
                         list(range(items)))
        ok = np.isfinite(dec.std_errors)
        hits.append((np.abs(dec.counts - true) <= Z * dec.std_errors)[ok])
    _row("local: RAPPOR (64 bits, 2 hashes, 8 cohorts, selected candidates)",
         np.concatenate(hits), "approximate (regression, homoscedastic)")


def main() -> None:
    t0 = time.time()
    for step in (tables, variance, mechanisms, binary_rr, pure, sketches, rappor):
        step()
    host = f"{platform.node() or 'host'}, {platform.machine()}, {os.cpu_count()} CPUs"
    print(f"Coverage of 95% intervals; `python bench/interval_coverage.py`; {host}; "
          f"{time.time() - t0:.0f} s\n")
    print("| release kind | measured coverage | trials | ± s.e. | claim |")
    print("|---|---|---|---|---|")
    for kind, cov, n, claim in ROWS:
        se = math.sqrt(0.95 * 0.05 / n)
        print(f"| {kind} | {cov:.4f} | {n} | {se:.4f} | {claim} |")
    print("| TopDown | — see the BLUE section | | | |")


if __name__ == "__main__":
    main()
