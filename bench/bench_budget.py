"""Budget.spend throughput against a bare SQLite transaction of the same durability.

Baseline (same run, same directory): ``BEGIN IMMEDIATE; INSERT one row; COMMIT`` on a
WAL database with ``synchronous=FULL`` -- the least a durable, atomic charge can cost.
The ratio ``baseline time / spend time`` is the share of a charge that is the storage
itself (1.0 = no overhead); the rest is the RDP cost of the event, the JSON record and
the exact check.
"""

from __future__ import annotations

import sqlite3
import time

from dpfast.accounting import events as ev
from dpfast.budget import Budget

N = 400


def _best(fn, repeat: int = 5) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _raw_sqlite(path):
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = FULL")
    con.execute(
        "CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL, analyst TEXT,"
        " note TEXT, event TEXT, epsilon REAL, delta REAL, rho REAL, rdp TEXT)"
    )

    def run() -> None:
        for _ in range(N):
            con.execute("BEGIN IMMEDIATE")
            con.execute(
                "INSERT INTO charges (time, analyst, note, event, rdp) VALUES (?, ?, ?, ?, ?)",
                (time.time(), "a", "n", '{"type":"Gaussian","noise_multiplier":100.0}', "[0.1]"),
            )
            con.execute("COMMIT")

    return run, con


def _budget(path):
    budget = Budget(1e9, 1e-6, ledger=path)
    event = ev.Gaussian(100.0)

    def run() -> None:
        for _ in range(N):
            budget.spend(event, note="n", analyst="a")

    return run, budget


def test_spend_throughput(benchmark, report, tmp_path) -> None:
    raw, con = _raw_sqlite(str(tmp_path / "raw.sqlite"))
    ours, budget = _budget(str(tmp_path / "ledger.sqlite"))
    mem, mem_budget = _budget(None)
    try:
        t_raw = _best(raw)
        t_ours = _best(ours)
        t_mem = _best(mem)
        benchmark.pedantic(ours, rounds=3, iterations=1)
    finally:
        con.close()
        budget.close()
        mem_budget.close()
    ratio = t_raw / t_ours
    info = {
        "spend_file_us": t_ours / N * 1e6,
        "spend_memory_us": t_mem / N * 1e6,
        "raw_sqlite_txn_us": t_raw / N * 1e6,
        "ratio_raw_over_spend": ratio,
    }
    benchmark.extra_info.update(info)
    report(
        "budget.spend",
        f"file ledger {info['spend_file_us']:.0f} us/charge, in memory "
        f"{info['spend_memory_us']:.0f} us/charge; bare durable SQLite transaction "
        f"{info['raw_sqlite_txn_us']:.0f} us = {ratio:.2f}x of a charge",
    )
