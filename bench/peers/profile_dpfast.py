"""Where dpfast's error on the comparison comes from: bounding bias against noise.

For each statistic and bounding policy, with the comparison's parameters (``flights.py``):

* **bias**: MAE over the keys of the exact statistic of the rows bounding keeps (values
  clamped to the bounds; no noise) against the exact, unbounded statistic;
* **noise**: MAE of the release against that exact bounded statistic (the mechanism's own
  error, over ``--reps`` keys);
* **total**: MAE of the release against the unbounded statistic (what ``compare.py``
  reports).

Then two diagnostics: the floor of any ``k``-key bounding on the privacy-id count (every
policy drops the same number of (aircraft, key) pairs, so the mean undercount per key is
policy-independent), and the median's MAE if its ``k`` per-key exponential mechanisms were
composed in zCDP with the comparison's δ (bounded range: ``ε_q²/8``-zCDP each, Cesar &
Rogers 2021; ``(ρ + 2 sqrt(ρ ln 1/δ), δ)``-DP, Bun & Steinke 2016) instead of dpfast's
pure-DP basic composition ``ε_q = ε / k`` -- a diagnostic of what the peers that spend δ
on a quantile gain, not a release dpfast makes.

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
                # a key nobody keeps: 0 rows, people and sum (NaN mean / median / variance)
                bt = bt.fillna({"count": 0.0, "privacy_id_count": 0.0, "sum": 0.0})
                bias.append(compare._mae(stat, bt[stat], truth))
                s = run_dpfast.release(df, stat, keys, seed=r)
                assert s is not None
                sv = compare._post(stat, s.reindex(truth.index))
                noise.append(float((sv - bt[stat]).abs().mean()))
                total.append(compare._mae(stat, s, truth))
            print(f"| {policy} | {stat} | {np.mean(bias):.4g} | {np.mean(noise):.4g} | "
                  f"{np.mean(total):.4g} |", flush=True)
    per = df.drop_duplicates(["tailnum", "dest"]).groupby("tailnum").size()
    floor = float((per - F.MAX_PARTITIONS).clip(lower=0).sum()) / len(keys)
    print(f"\nprivacy_id_count: dropped (aircraft, key) pairs per key = {floor:.4g} (any "
          f"policy, any library bounding to k={F.MAX_PARTITIONS} keys)")
    import mpmath

    rho = float(mpmath.findroot(lambda r: r + 2 * mpmath.sqrt(r * mpmath.log(1 / mpmath.mpf(
        F.DELTA))) - F.EPSILON, 0.02))
    eps_q = float(np.sqrt(8 * rho / F.MAX_PARTITIONS))
    run_dpfast.STAT_BOUNDING = "frequent"
    base = F.EPSILON
    for label, eps in (("pure DP, eps_q = eps/k", base), ("zCDP with delta", eps_q *
                                                          F.MAX_PARTITIONS)):
        F.EPSILON = eps
        m = [compare._mae("median", run_dpfast.release(df, "median", keys, seed=r), truth)
             for r in range(a.reps)]
        print(f"median, {label}: eps_q = {eps / F.MAX_PARTITIONS:.4g}, MAE = {np.mean(m):.4g}")
    F.EPSILON = base
    return 0


if __name__ == "__main__":
    sys.exit(main())
