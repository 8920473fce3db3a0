"""Load and faults of ``dpfast serve`` (issue 38): a bench, not a unit test.

On loopback, ``dpfast serve`` with 2 worker processes takes at once

* ``--analysts`` concurrent analysts x ``--queries`` SQL queries each (a mix of new
  queries and repeated ones, which are cache hits), each analyst's share too small for all
  of their queries and the total too small for all shares, so refusals happen under
  concurrency;
* ``--reports`` local-DP reports (k-RR) in batches of ``--batch`` from ``--senders``
  concurrent senders, each retrying a batch (same batch id) until it is acknowledged, and
  re-sending some acknowledged batches on purpose (a lost response's retry).

Checked: **0 overspend** (every analyst's certified spend within their share, the total
within the budget, the ledger's hash chain verified), **0 lost acknowledged reports**
(every batch id answered 202 is in the state file), **0 duplicate counts** (the aggregate's
``n`` is exactly the reports of the distinct batches).  Printed: p50/p99 latency of
queries and of report posts, reports per second.  ``--kill``: one worker is SIGKILLed
mid-load (uvicorn's supervisor starts another); clients retry what failed.

Run:  python bench/bench_serve.py                      (the full sizes above)
      python bench/bench_serve.py --reports 200000 --kill   (smaller, with the fault)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CONFIG = """
[server]
host = "127.0.0.1"
port = {port}
workers = {workers}
rate = 100000.0
burst = 100000

[data]
source = "people.csv"
name = "people"
privacy_unit = "person_id"
[data.bounds]
age = [18, 90]
spend = [0, 200]
[data.domains]
region = ["north", "south", "east", "west"]
plan = ["basic", "plus", "pro"]

[budget]
epsilon = {total}
delta = 1e-6
ledger = "budget.db"

{analysts}

[collections.apps]
protocol = "krr"
params = {{ k = 16, epsilon = 1.0 }}
"""


REPEATED = ("SELECT region, COUNT(*) AS n FROM people GROUP BY region",
            "SELECT plan, AVG(spend) AS s FROM people GROUP BY plan")


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(xs), q)) * 1000 if xs else float("nan")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _workers(pid: int) -> list[int]:
    """The uvicorn worker processes under the server ``pid`` (not its resource tracker)."""
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as fh:
                kids = [int(x) for x in fh.read().split()]
        except OSError:
            continue
        for kid in kids:
            try:
                with open(f"/proc/{kid}/cmdline", "rb") as fh:
                    if b"spawn_main" in fh.read():
                        out.append(kid)
            except OSError:
                pass
    return out


async def _analyst(client, url: str, token: str, i: int, queries: int, stats: dict) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    for j in range(queries):
        if j % 2:  # a repeated question (shared by all analysts: a cache hit after the 1st)
            sql = REPEATED[(j // 2) % len(REPEATED)]
        else:  # a new one
            sql = (f"SELECT region, COUNT(*) AS n FROM people WHERE age > {18 + (i * 7 + j) % 70}"
                   f" AND spend < {50 + (i * 13 + j) % 150} GROUP BY region")
        body = {"sql": sql, "epsilon": 0.1}
        for _attempt in range(20):
            t = time.perf_counter()
            try:
                r = await client.post(url + "/v1/query", json=body, headers=headers,
                                      timeout=300)
            except Exception:  # a killed worker's connection: retry
                stats["query_retries"] += 1
                await asyncio.sleep(0.2)
                continue
            stats["query_latency"].append(time.perf_counter() - t)
            if r.status_code >= 500 and r.json()["error"]["code"] != "release_failed":
                stats["query_retries"] += 1
                await asyncio.sleep(0.2)
                continue
            stats["status"][r.status_code] = stats["status"].get(r.status_code, 0) + 1
            if r.status_code == 200:
                a = r.json()
                stats["cached" if a["cached"] else "charged"] += 1
            break


async def _sender(client, url: str, token: str, batches: list[tuple[str, str]],
                  stats: dict, acked: set) -> None:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for bid, body in batches:
        resend = random.random() < 0.05
        for _attempt in range(50):
            t = time.perf_counter()
            try:
                r = await client.post(url + "/v1/collections/apps/reports", content=body,
                                      headers=headers, timeout=300)
            except Exception:
                stats["report_retries"] += 1
                await asyncio.sleep(0.2)
                continue
            stats["report_latency"].append(time.perf_counter() - t)
            if r.status_code == 202:
                acked.add(bid)
                stats["duplicates_answered"] += int(r.json()["duplicate"])
                if resend:  # the client did not see the answer: it sends the batch again
                    resend = False
                    continue
                break
            if r.status_code >= 500:
                stats["report_retries"] += 1
                await asyncio.sleep(0.2)
                continue
            raise AssertionError(f"batch {bid} refused: {r.status_code} {r.text}")


async def _load(url: str, tokens: list[str], ingest: str, bodies: list[tuple[str, str]],
                args: argparse.Namespace, server: subprocess.Popen) -> dict:
    import httpx

    stats: dict = {"query_latency": [], "report_latency": [], "status": {}, "cached": 0,
                   "charged": 0, "query_retries": 0, "report_retries": 0,
                   "duplicates_answered": 0, "killed": None}
    acked: set = set()
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits) as client:
        per = [bodies[i::args.senders] for i in range(args.senders)]
        tasks = [asyncio.create_task(_analyst(client, url, t, i, args.queries, stats))
                 for i, t in enumerate(tokens)]
        t0 = time.perf_counter()
        senders = [asyncio.create_task(_sender(client, url, ingest, p, stats, acked))
                   for p in per]
        if args.kill:
            await asyncio.sleep(args.kill_after)
            victims = _workers(server.pid)
            if victims:
                os.kill(victims[0], signal.SIGKILL)
                stats["killed"] = victims[0]
        await asyncio.gather(*senders)
        stats["report_seconds"] = time.perf_counter() - t0
        await asyncio.gather(*tasks)
        stats["seconds"] = time.perf_counter() - t0
        stats["workers_after"] = _workers(server.pid)
    stats["acked"] = acked
    return stats


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--analysts", type=int, default=50)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--reports", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--senders", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--kill", action="store_true", help="SIGKILL one worker mid-load")
    ap.add_argument("--kill-after", type=float, default=5.0, metavar="S")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    sys.path.insert(0, ROOT)
    from dpfast.local.client import randomize
    from dpfast.local.reports import build_protocol
    from dpfast.serve import tokens as tk
    from dpfast.serve.config import load
    from dpfast.serve.service import prepare
    from dpfast.serve.store import StateStore

    d = tempfile.mkdtemp(prefix="dpfast-serve-bench-")
    shutil.copy(os.path.join(ROOT, "examples", "serve", "people.csv"), d)
    share = 0.8  # 8 of an analyst's 10 new 0.1-queries fit (repeated ones are hits)
    total = round(share * args.analysts * 0.75, 6)  # the total binds before every share
    names = [f"a{i:03d}" for i in range(args.analysts)]
    analysts = "\n".join(f"[analysts.{n}]\nepsilon = {share}" for n in names)
    port = _free_port()
    path = os.path.join(d, "config.toml")
    with open(path, "w") as fh:
        fh.write(CONFIG.format(port=port, workers=args.workers, total=total,
                               analysts=analysts))
    cfg = load(path)
    prepare(cfg)
    store = StateStore(cfg.state)
    tokens = [tk.make_token(store, "analyst", n) for n in names]
    ingest = tk.make_token(store, "ingest", "apps")
    admin = tk.make_token(store, "admin", "admin")
    store.close()

    proto = build_protocol("krr", {"k": 16, "epsilon": 1.0})
    nb = args.reports // args.batch
    rng = np.random.default_rng(0)
    values = rng.zipf(1.5, args.reports) % 16
    t = time.perf_counter()
    bodies = []
    for b in range(nb):
        batch = randomize(proto, values[b * args.batch:(b + 1) * args.batch],
                          rng=b.to_bytes(32, "little"))
        bodies.append((f"b{b:07d}", json.dumps({"batch_id": f"b{b:07d}",
                                                "client_id": f"s{b % args.senders}",
                                                "reports": batch.to_json()})))
    print(f"prepared {nb} batches of {args.batch} reports in {time.perf_counter() - t:.1f} s")

    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               DPFAST_NO_COMPILE_NOTICE="1")
    log = open(os.path.join(d, "server.log"), "wb")
    server = subprocess.Popen([sys.executable, "-m", "dpfast", "serve", path], env=env,
                              stdout=log, stderr=log, start_new_session=True)
    import httpx

    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or server.poll() is not None:
            print(open(log.name).read())
            return 1
        time.sleep(0.5)
    time.sleep(3)  # let every worker finish importing
    try:
        stats = asyncio.run(_load(url, tokens, ingest, bodies, args, server))
        h = {"Authorization": f"Bearer {admin}"}
        usage = httpx.get(url + "/v1/usage", headers=h, timeout=300).json()
        verify = httpx.get(url + "/v1/ledger/verify", headers=h, timeout=300).json()
        est = httpx.get(url + "/v1/collections/apps/estimates", headers=h, timeout=300).json()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
        log.close()

    # the checks
    over = [a["name"] for a in usage["analysts"]
            if a["spent_epsilon"] > (a["epsilon"] or 0) * (1 + 1e-12)]
    total_over = usage["total"]["spent"]["epsilon"] > usage["total"]["epsilon"] * (1 + 1e-12)
    conn = sqlite3.connect(cfg.state)
    stored = {r[0] for r in conn.execute("SELECT batch_id FROM batches")}
    stored_n = conn.execute("SELECT COALESCE(SUM(n), 0) FROM batches").fetchone()[0]
    conn.close()
    lost = stats["acked"] - stored
    dup = est["n"] - stored_n
    reports = len(stats["acked"]) * args.batch
    print(f"workers {args.workers}, {args.analysts} analysts x {args.queries} queries, "
          f"{args.reports} reports in batches of {args.batch} from {args.senders} senders"
          + (f"; worker {stats['killed']} SIGKILLed after {args.kill_after:g} s"
             f" (workers after the load: {len(stats['workers_after'])})"
             if stats["killed"] else ""))
    print(f"queries: {sum(stats['status'].values())} answered, status {stats['status']}, "
          f"{stats['charged']} charged, {stats['cached']} from the cache, "
          f"{stats['query_retries']} retried; latency p50 {_pct(stats['query_latency'], 50):.1f}"
          f" ms, p99 {_pct(stats['query_latency'], 99):.1f} ms")
    print(f"reports: {reports} acknowledged in {stats['report_seconds']:.1f} s = "
          f"{reports / stats['report_seconds']:,.0f} reports/s; {stats['report_retries']} "
          f"retried, {stats['duplicates_answered']} re-sent answered as duplicates; post "
          f"latency p50 {_pct(stats['report_latency'], 50):.1f} ms, "
          f"p99 {_pct(stats['report_latency'], 99):.1f} ms")
    print(f"budget: total spent {usage['total']['spent']['epsilon']:.4g} of "
          f"{usage['total']['epsilon']:g}; ledger chain ok: {verify['ok']} "
          f"({verify['records']} records)")
    print(f"CHECKS: overspend {len(over) + int(total_over)}, lost acknowledged batches "
          f"{len(lost)}, duplicate counts {dup} (aggregate n {est['n']}, stored batches "
          f"{len(stored)})")
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)
    else:
        print(f"kept {d}")
    ok = not over and not total_over and not lost and dup == 0 and verify["ok"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
