"""Where dpfast's error on the comparison comes from: bounding bias against noise.

For each statistic and bounding policy, with the comparison's parameters (``flights.py``):

* **bias**: MAE over the keys of the exact statistic of the rows bounding keeps (values
  clamped to the bounds; no noise) against the exact, unbounded statistic;
* **noise**: MAE of the release against that exact bounded statistic (the mechanism's own
  error, over ``--reps`` keys);
* **total**: MAE of the release against the unbounded statistic (what ``compare.py``
  reports).

Run::

    python -m bench.peers.profile_dpfast --reps 5
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

import dpfast
from dpfast.tables import _keys, _rows, bounding

from . import compare, run_dpfast
from . import flights as F


def _bounded_truth(df: pd.DataFrame, policy: str, seed: int, c: int) -> pd.DataFrame:
    """The exact statistics of the kept rows (the release's own bounding, no noise)."""
    cols, _, ids = _keys.keys_and_ids(df["dest"], df["tailnum"])
    fk = _keys.factorize(cols)
    skey = bounding.subkey(dpfast.default_rng(seed.to_bytes(32, "little")))
    dummy = np.zeros((len(df), 1), np.int64)
    b = _rows.bound_matrix(fk.codes, fk.size, ids, F.MAX_PARTITIONS, c, skey, dummy,
                           mark=True, policy=bounding.policy_code(policy))
    assert b.kept is not None
    kept = df[b.kept].assign(arr_delay=lambda d: d["arr_delay"].clip(*F.BOUNDS))
    g = kept.groupby("dest")
    return pd.DataFrame({"count": g.size().astype(float),
                         "privacy_id_count": g["tailnum"].nunique().astype(float),
                         "sum": g["arr_delay"].sum(), "mean": g["arr_delay"].mean(),
                         "variance": g["arr_delay"].var(ddof=0),
                         "median": g["arr_delay"].median()})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args(argv)
    df = F.load()
    truth = F.truth(df)
    keys = sorted(truth.index)
    print("| bounding | statistic | bias (bounded exact vs truth) | noise (release vs bounded"
          " exact) | total MAE |")
    print("|---|---|---|---|---|")
    for policy in ("uniform", "frequent"):
        run_dpfast.STAT_BOUNDING = policy
        for stat in F.STATISTICS:
            c = 1 if stat == "privacy_id_count" else F.MAX_PER_PARTITION
            bias, noise, total = [], [], []
            for r in range(a.reps):
                bt = _bounded_truth(df, policy, r, c).reindex(truth.index)
                bias.append(compare._mae(stat, bt[stat], truth))
                s = run_dpfast.release(df, stat, keys, seed=r)
                assert s is not None
                sv = compare._post(stat, s.reindex(truth.index))
                noise.append(float((sv - bt[stat]).abs().mean()))
                total.append(compare._mae(stat, s, truth))
            print(f"| {policy} | {stat} | {np.mean(bias):.4g} | {np.mean(noise):.4g} | "
                  f"{np.mean(total):.4g} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
