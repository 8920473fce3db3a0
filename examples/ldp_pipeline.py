"""Local-DP collection as a pipeline: clients -> reports -> streaming server -> monitor.

A million devices each report the emoji they used most today with Apple's count-mean
sketch (epsilon = 4 per report, a budget of 4 per device per day, sketch width 1024).
Clients are randomized array-at-a-time by a :class:`dpfast.local.ClientPool` (per-device
budgets in one state file), their reports travel as compact versioned bytes, a streaming
:class:`dpfast.local.Aggregator` adds them batch by batch (and could be merged across
shards), and the utility monitor says how accurate each estimate is and how many more
reports it needs.  A second report the same day is refused, also after a restart.

Run:  python examples/ldp_pipeline.py [--clients 1000000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from dpfast import local as L
from dpfast.cli import main as dpfast_cli

EMOJI = [chr(c) for c in range(0x1F600, 0x1F650)] + [chr(c) for c in range(0x1F900, 0x1F928)]


def population(n: int, seed: int = 2017) -> np.ndarray:
    """Each device's emoji of the day: Zipf-like popularity over 120 emoji."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, len(EMOJI) + 1) ** 1.2
    order = rng.permutation(len(EMOJI))
    return np.array(EMOJI)[order][rng.choice(len(EMOJI), size=n, p=w / w.sum())]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=1_000_000, help="number of devices")
    ap.add_argument("--batch", type=int, default=100_000, help="reports per upload batch")
    ap.add_argument("--state-dir", default=None, help="where state files go (default: temp)")
    args = ap.parse_args()
    n = args.clients
    workdir = args.state_dir or tempfile.mkdtemp(prefix="dpfast-ldp-")
    truth_values = population(n)
    day = 20_000 * 86400.0  # a fixed "today" (UTC day 20000), so the run is reproducible
    clock = lambda: day  # noqa: E731

    # public configuration, shared by every device and the server
    cms = L.CountMeanSketch(epsilon=4.0, num_hashes=64, sketch_size=1024, hash_seed=2017)
    pool = L.ClientPool(cms, os.path.join(workdir, "devices.pool"), num_clients=n,
                        budget=4.0, clock=clock)
    server = L.Aggregator(cms, candidates=EMOJI)
    print(f"{n} devices, count-mean sketch epsilon = {cms.epsilon:g} per report, budget "
          f"{pool.max_reports} report(s) = 4 per device per day")

    t0 = time.perf_counter()
    sent = 0
    for a in range(0, n, args.batch):
        ids = np.arange(a, min(n, a + args.batch))
        payload = pool.report(ids, truth_values[ids]).to_bytes()  # device -> network
        sent += len(payload)
        server.add(payload)  # streaming server: one batch at a time
    t_all = time.perf_counter() - t0
    print(f"clients -> reports -> server: {n} reports in {t_all:.2f} s "
          f"({sent / n:.1f} bytes per report on the wire)")

    # the budget: a second report today is refused, also after the state is reopened
    try:
        pool.report([0], [truth_values[0]])
    except L.BudgetExhaustedError as exc:
        print(f"second report today refused: {exc}")
    reopened = L.ClientPool(None, os.path.join(workdir, "devices.pool"), clock=clock)
    _, ok = reopened.report_allowed(np.arange(5), truth_values[:5])
    print(f"after a restart: {int((~ok).sum())} of 5 second reports refused")
    with L.Client(cms, os.path.join(workdir, "one-device.sqlite"), budget=4.0,
                  clock=clock) as device:
        device.report([truth_values[0]])
    with L.Client(None, os.path.join(workdir, "one-device.sqlite"), clock=clock) as device:
        try:
            device.report([truth_values[0]])
        except L.BudgetExhaustedError:
            print(f"a single device (SQLite state) refused again after a restart; "
                  f"{device.remaining():g} epsilon left today")

    # estimates with confidence intervals, checked against the truth
    est = server.estimate(alpha=0.05)
    true = {e: 0 for e in EMOJI}
    for e, c in zip(*np.unique(truth_values, return_counts=True)):
        true[str(e)] = int(c)
    truth = np.array([true[e] for e in est.items])
    inside = float(np.mean((est.low <= truth) & (truth <= est.high)))
    print(f"{100 * inside:.1f}% of the {len(est.items)} true counts lie within their 95% "
          "intervals")
    print("top 5 heavy hitters (estimate +- std error, truth):")
    for item, count, se in server.heavy_hitters(top=5):
        print(f"  {item}  {count:10.0f} +- {se:6.0f}   (true {true[item]})")

    # the utility monitor, from the saved state, as an operator would run it
    path = os.path.join(workdir, "emoji-day.agg")
    server.save(path)
    rep = L.monitor(server, target=0.002)
    need = max(r[6] for r in rep.rows)
    print(f"monitor: {len(rep.flagged)} of {len(rep.rows)} estimates above a 0.002 std error; "
          f"the worst needs {need:.0f} reports at epsilon 4")
    print(f"$ dpfast ldp report {os.path.basename(path)} --target 0.002 --top 5")
    dpfast_cli(["ldp", "report", path, "--target", "0.002", "--top", "5"])


if __name__ == "__main__":
    main()
