"""Out of core at scale: ``dpfast.dask.count`` on 10^9 rows of Parquet (issue 40).

Two parts, behind ``DPFAST_BENCH_BILLION=1`` (never in CI; ``tests/test_dask_billion.py``
is the pytest wrapper, skipped unless the flag is set):

* ``generate``: a realistic dataset written in chunks, one Parquet file at a time (each
  file holds ``--rows / --files`` rows in row groups of ``--row-group`` rows), to
  ``--data`` (default ``$DPFAST_BILLION_DIR`` or ``/tmp/dpfast-billion``; never inside the
  repository).  Columns: ``person`` (int64 privacy unit id; ``rows / 10`` people with a
  heavy-tailed number of rows each: a person's expected rows fall off as
  ``rank ** -0.5``, the busiest with ~10^4 times the median's, every file a sample of
  everyone -- as in an event log), ``region`` (int32 key, ``--keys`` values, Zipf-like;
  half of a person's rows in their own home region), ``amount`` (float32: a column the
  release must not read).  Idempotent: a ``_DONE.json`` with the parameters is written
  last; a directory holding one with the same parameters is reused as is.
* ``run``: a 2-worker ``LocalCluster`` (one thread, one numba thread and ``2GiB`` of
  memory each), a small warm-up release (loads the kernels on the workers), then
  ``dpfast.dask.count`` by ``region`` per ``person`` with contribution bounding
  (``max_partitions=3``) and private key selection, and the same with the keys as a public
  domain, each ``--runs`` times (median wall time reported); each worker's peak resident
  memory is sampled every 0.1 s by a thread started in the worker (``psutil``); prints one
  JSON summary (wall times, peaks, each worker's resident memory after the warm-up,
  rows, files, host, load average) with the CPU per row
  of each run (``cpu_ns_per_row``: every process; the driver, which runs the scheduler;
  the workers' task threads and their other threads -- the event loop's transfers and
  messages, arrow's reader threads; the task threads' CPU by task kind -- read, split,
  piece, combine -- from distributed's own ``execute ... thread-cpu`` metrics).  CPU time
  is far less disturbed by a loaded host than wall time: below 10^9 rows (``--rows 1e8``)
  it is the figure to compare and to project from.

Usage::

    DPFAST_BENCH_BILLION=1 python bench/dask_billion.py [--rows 1e9] [--data DIR]
        [--runs 1] [--only both|private|public] [--threads 1] [--task-stream]
        [--worker-env NAME=VALUE] [--generate-only] [--delete]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

FLAG = "DPFAST_BENCH_BILLION"
ROWS = 10 ** 9
PER_FILE = 2_000_000
ROW_GROUP = 500_000
KEYS = 5000
EPS, DELTA, K = 1.0, 1e-6, 3
SEED = 40


def default_dir() -> Path:
    return Path(os.environ.get("DPFAST_BILLION_DIR") or "/tmp/dpfast-billion")


def _mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer (uint64 -> uint64): a fixed pseudo-random function."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _chunk(f: int, n: int, people: int, keys: int) -> dict[str, np.ndarray]:
    """File ``f``'s rows (a function of ``(SEED, f)``)."""
    r = np.random.default_rng([SEED, f])
    u = r.random(n)
    rank = (people * u * u).astype(np.int64)  # P(rank <= x) = sqrt(x / people)
    # a fixed bijection of [0, people): ids look unordered, as a table's ids do
    mult = 2654435761 % people or 1
    while np.gcd(mult, people) != 1:
        mult += 1
    person = (rank * mult + 12345) % people
    home = (_mix(person) % np.uint64(keys)).astype(np.int32)
    v = r.random(n)
    glob = np.minimum((keys * v ** 3).astype(np.int32), keys - 1)  # Zipf-like
    region = np.where(r.random(n) < 0.5, home, glob).astype(np.int32)
    amount = r.gamma(2.0, 20.0, n).astype(np.float32)
    return {"person": person.astype(np.int64), "region": region, "amount": amount}


def generate(path: Path, rows: int = ROWS, per_file: int = PER_FILE,
             row_group: int = ROW_GROUP, keys: int = KEYS, log=print) -> dict:
    """Write the dataset (idempotent: see the module docstring); returns its parameters."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    params = {"rows": rows, "per_file": per_file, "row_group": row_group, "keys": keys,
              "people": max(1, rows // 10), "seed": SEED, "version": 1}
    done = path / "_DONE.json"
    if done.exists():
        have = json.loads(done.read_text())
        if {k: have.get(k) for k in params} == params:
            return have
        raise SystemExit(f"{path} holds another dataset ({have}); remove it or pass --data")
    repo = Path(__file__).resolve().parent.parent
    if repo in path.resolve().parents or path.resolve() == repo:
        raise SystemExit(f"--data {path} is inside the repository; use a directory outside it")
    path.mkdir(parents=True, exist_ok=True)
    files = -(-rows // per_file)
    t = time.perf_counter()
    for f in range(files):
        out = path / f"part-{f:05d}.parquet"
        n = min(per_file, rows - f * per_file)
        if out.exists() and pq.ParquetFile(out).metadata.num_rows == n:
            continue  # an interrupted run: keep the files already written
        cols = _chunk(f, n, params["people"], keys)
        tmp = out.with_suffix(".tmp")
        pq.write_table(pa.table(cols), tmp, row_group_size=row_group)
        tmp.rename(out)
        if f % 50 == 0:
            log(f"generated {f + 1}/{files} files ({time.perf_counter() - t:.0f} s)")
    params.update(files=files, bytes=sum(p.stat().st_size for p in path.glob("*.parquet")),
                  generate_s=round(time.perf_counter() - t, 1))
    done.write_text(json.dumps(params))
    return params


# ----------------------------------------------------------------------------- workers
# the sampler's state lives on the worker object: this file runs as __main__, so
# client.run ships its functions by value, each call with its own copy of module globals


def _start_sampler(dask_worker, period: float = 0.1) -> int:  # noqa: ANN001 - a Worker
    """On a worker: sample this process's RSS every ``period`` s (peak kept, with the
    bytes of Dask's managed data in memory at that moment: the rest of the peak is the
    worker's unmanaged memory -- imports, kernels, allocator pools, tasks' temporaries)."""
    import psutil

    proc = psutil.Process()
    old = getattr(dask_worker, "_dpfast_rss", None)
    if old is not None:
        old["stop"].set()
    state = {"peak": proc.memory_info().rss, "managed": 0, "stop": threading.Event()}
    dask_worker._dpfast_rss = state

    def managed() -> int:
        fast = getattr(dask_worker.data, "fast", None)  # a SpillBuffer's in-memory part
        return int(getattr(fast, "total_weight", 0) or 0)

    def loop() -> None:
        while not state["stop"].wait(period):
            rss = proc.memory_info().rss
            if rss > state["peak"]:
                state["peak"], state["managed"] = rss, managed()

    threading.Thread(target=loop, daemon=True, name="dpfast-rss").start()
    return int(state["peak"])


def _keep_arrow_pool(dask_worker=None) -> None:  # noqa: ANN001 - a Worker
    """The A/B switch ``--keep-arrow-pool``: the shuffle's tasks leave Arrow's pool as it
    is (dpfast.dask._shuffle._arrow_pool_back a no-op in this process)."""
    from dpfast.dask import _shuffle

    _shuffle._arrow_pool_back = lambda: None


def _rss(dask_worker) -> int:  # noqa: ANN001 - a Worker
    import psutil

    return int(psutil.Process().memory_info().rss)


def _peak(dask_worker) -> tuple[int, int]:  # noqa: ANN001 - a Worker
    """(peak RSS, managed bytes in memory at that peak) of this worker."""
    state = getattr(dask_worker, "_dpfast_rss", None) or {"peak": 0, "managed": 0}
    rss = _rss(dask_worker)
    return (rss, 0) if rss > state["peak"] else (int(state["peak"]), int(state["managed"]))


def _cpu_seconds() -> float:
    """This process's CPU time (user + system; a worker's, via ``client.run``)."""
    import psutil

    t = psutil.Process().cpu_times()
    return float(t.user + t.system)


def _spilled(dask_worker) -> dict:  # noqa: ANN001 - distributed's Worker
    """What this worker's memory manager spilled to disk so far (distributed's cumulative
    counters: bytes and count written / read), or {} on a version without them."""
    metrics = getattr(getattr(dask_worker, "data", None), "cumulative_metrics", None) or {}
    return {"-".join(map(str, k)): round(v, 3) for k, v in metrics.items()}


def _threads_cpu() -> dict:
    """This process's CPU seconds by thread kind (a worker's, via ``client.run``): the
    task threads (``Dask-Default-Threads``) and the rest (the event loop: transfers,
    the scheduler's messages; the profiler, the memory monitor)."""
    import threading

    import psutil

    tasks = {t.native_id for t in threading.enumerate()
             if "Dask-Default-Threads" in t.name}
    out = {"tasks": 0.0, "other": 0.0}
    for t in psutil.Process().threads():
        out["tasks" if t.id in tasks else "other"] += t.user_time + t.system_time
    return out


def _execute_cpu(dask_scheduler) -> dict:  # noqa: ANN001 - distributed's Scheduler
    """The cluster's own accounting: CPU seconds of the task threads by task kind
    (distributed's cumulative ``("execute", prefix, "thread-cpu", "seconds")`` metrics)."""
    out: dict = {}
    for k, v in dask_scheduler.cumulative_worker_metrics.items():
        if isinstance(k, tuple) and len(k) == 4 and k[0] == "execute" and \
                k[2] == "thread-cpu" and k[3] == "seconds":
            name = "-".join(str(k[1]).split("-")[:2])
            out[name] = out.get(name, 0.0) + v
    return out


def _per_row(before: dict, after: dict, rows: int) -> dict:
    """``after - before`` per key, in nanoseconds a row."""
    return {k: round((v - before.get(k, 0.0)) / rows * 1e9, 1) for k, v in sorted(after.items())
            if v - before.get(k, 0.0) > 0}


def _breakdown(events: list) -> dict:
    """Seconds of the task stream by task kind (read, split, piece, combine) and by what
    the workers did besides computing (transfers, spill reads and writes)."""
    out: dict = {}
    for e in events:
        key = e["key"][0] if isinstance(e["key"], tuple) else e["key"]
        kind = "-".join(str(key).split("-")[:2])
        for s in e["startstops"]:
            name = kind if s["action"] == "compute" else s["action"]
            out[name] = out.get(name, 0.0) + s["stop"] - s["start"]
    return {k: round(v, 1) for k, v in sorted(out.items())}


def run(path: Path, runs: int = 1, npartitions: int | None = None, log=print,
        only: str = "both", task_stream: bool = False, threads: int = 1,
        worker_env: dict[str, str] | None = None, keep_arrow_pool: bool = False) -> dict:
    """The timed releases on a fresh 2-worker cluster (see the module docstring)."""
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    import dpfast.dask as dkd

    meta = json.loads((Path(path) / "_DONE.json").read_text())
    key = os.urandom(32)  # a fresh key: nothing here is replayed
    env = {"NUMBA_NUM_THREADS": "1", **(worker_env or {})}
    out: dict = {"rows": meta["rows"], "files": meta["files"], "people": meta["people"],
                 "keys": meta["keys"], "data_bytes": meta["bytes"], "host": _host(),
                 "workers": 2, "threads_per_worker": threads, "memory_limit": "2GiB",
                 "worker_env": env, "keep_arrow_pool": keep_arrow_pool}
    with LocalCluster(n_workers=2, threads_per_worker=threads, processes=True, memory_limit="2GiB",
                      dashboard_address=":0", env=env) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        client.run(_start_sampler)
        if keep_arrow_pool:
            client.run(_keep_arrow_pool)
        t = time.perf_counter()
        # past the serial-kernel size per output, with the dataset's dtypes: the workers
        # load every kernel the timed releases run
        # (ids dense in their range, and spread over a range wider than the rows: both
        # groupings, dpfast.tables._grouped)
        for spread in (1, 1009):
            warm = pd.DataFrame({"person": np.arange(400_000, dtype=np.int64) % 90_001
                                 * spread, "region": (np.arange(400_000) % 7).astype(np.int32)})
            for kw in ({}, {"domain": list(range(7))}):
                dkd.count(dd.from_pandas(warm, npartitions=4), "region", "person",
                          epsilon=EPS, delta=DELTA, max_partitions=K, rng=key, **kw)
        # and the dataset's first two files through the same reader: its arrays (read-only,
        # from Arrow) are another type to numba, whose kernels would otherwise compile
        # inside the first timed release
        files = sorted(str(f) for f in Path(path).glob("*.parquet"))[:2]
        for kw in ({}, {"domain": list(range(meta["keys"]))}):
            dkd.count(dd.read_parquet(files), "region", "person", epsilon=EPS, delta=DELTA,
                      max_partitions=K, rng=key, **kw)
        out["warmup_s"] = round(time.perf_counter() - t, 2)
        # each worker's resident memory at rest with every kernel loaded: the floor under
        # the releases' data (imports, numba's compiled kernels, allocator pools)
        out["rss_after_warmup_gib"] = {w: round(r / 2 ** 30, 3)
                                       for w, r in client.run(_rss).items()}
        ddf = dd.read_parquet(str(path))
        out["input_partitions"] = ddf.npartitions
        domain = list(range(meta["keys"]))
        from distributed import get_task_stream

        for name, kw in (("private_selection", {}), ("public_domain", {"domain": domain})):
            if only not in ("both", name.split("_")[0]):
                continue
            walls, loads, cpus, per_row, restarts = [], [], [], [], []
            rows = meta["rows"]
            for _ in range(runs):
                loads.append(os.getloadavg())
                m0 = client.run_on_scheduler(_execute_cpu)
                th0 = client.run(_threads_cpu)
                d0 = time.process_time()
                c0 = sum(client.run(_cpu_seconds).values()) + d0
                t = time.perf_counter()
                with (get_task_stream(client) if task_stream
                      else contextlib.nullcontext()) as stream:
                    rel = dkd.count(ddf, "region", "person", epsilon=EPS, delta=DELTA,
                                    max_partitions=K, rng=key, npartitions=npartitions, **kw)
                walls.append(time.perf_counter() - t)
                d1 = time.process_time()
                cpus.append(sum(client.run(_cpu_seconds).values()) + d1 - c0)
                th1 = client.run(_threads_cpu)
                m1 = client.run_on_scheduler(_execute_cpu)
                # a worker the nanny restarted (memory) has a new address and fresh counters:
                # counted from 0, and the run reports the restart
                restarted = sorted(set(th1) - set(th0))
                restarts.append(len(restarted))
                threads = {k: sum(th1[w][k] - th0.get(w, {k: 0.0})[k] for w in th1)
                           for k in ("tasks", "other")}
                per_row.append({"all": round(cpus[-1] / rows * 1e9, 1),
                                "driver": round((d1 - d0) / rows * 1e9, 1),
                                "worker_task_threads": round(threads["tasks"] / rows * 1e9, 1),
                                "worker_other_threads": round(threads["other"] / rows * 1e9, 1),
                                "tasks_by_kind": _per_row(m0, m1, rows)})
                if stream is not None:
                    log(f"task stream (worker seconds): {_breakdown(stream.data)}")
                log(f"{name}: {walls[-1]:.1f} s (CPU {cpus[-1]:.1f} s), {len(rel.values)} "
                    f"keys released, load {loads[-1][0]:.2f}; CPU ns a row: {per_row[-1]}"
                    + (f"; {restarts[-1]} worker restart(s) during the run (its CPU figures "
                       "undercount)" if restarts[-1] else ""))
            out[name] = {"wall_s": [round(w, 2) for w in walls], "worker_restarts": restarts,
                         "median_s": round(statistics.median(walls), 2),
                         "cpu_s": [round(c, 1) for c in cpus],
                         "cpu_ns_per_row": per_row,
                         "task_seconds": None if stream is None else _breakdown(stream.data),
                         "keys_released": int(len(rel.values)),
                         "load_before": [round(x[0], 2) for x in loads]}
        peaks = client.run(_peak)
        out["peak_rss_gib"] = {w: round(p[0] / 2 ** 30, 3) for w, p in peaks.items()}
        out["managed_at_peak_gib"] = {w: round(p[1] / 2 ** 30, 3) for w, p in peaks.items()}
        out["spilled_bytes"] = client.run(_spilled)
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


def _host() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.node()} {cpu} {os.cpu_count()} CPUs"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=float, default=ROWS, help="rows (default 1e9)")
    ap.add_argument("--data", type=Path, default=None,
                    help="dataset directory (default $DPFAST_BILLION_DIR or /tmp/dpfast-billion"
                         "; a size other than 1e9 gets a '-<rows>' suffix)")
    ap.add_argument("--per-file", type=int, default=PER_FILE)
    ap.add_argument("--row-group", type=int, default=ROW_GROUP)
    ap.add_argument("--keys", type=int, default=KEYS)
    ap.add_argument("--runs", type=int, default=1, help="timed runs of each release")
    ap.add_argument("--npartitions", type=int, default=None)
    ap.add_argument("--task-stream", action="store_true",
                    help="also record the task stream (seconds by task kind, transfers, "
                         "spill; costs the scheduler a little per task)")
    ap.add_argument("--only", choices=("both", "private", "public"), default="both",
                    help="which release to time: private key selection, public domain")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per worker (default 1; numba keeps one thread each)")
    ap.add_argument("--worker-env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable of the workers (repeatable), for "
                    "instance ARROW_DEFAULT_MEMORY_POOL=system")
    ap.add_argument("--keep-arrow-pool", action="store_true",
                    help="A/B: the shuffle's tasks do not hand Arrow's kept memory back")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--delete", action="store_true", help="delete the dataset after the run")
    a = ap.parse_args(argv)
    if not os.environ.get(FLAG):
        print(f"skipped: set {FLAG}=1 to run this benchmark", file=sys.stderr)
        return 0
    rows = int(a.rows)
    path = a.data or (default_dir() if rows == ROWS else Path(f"{default_dir()}-{rows}"))
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    meta = generate(path, rows, a.per_file, a.row_group, a.keys, log=log)
    log(f"dataset: {path} ({meta['files']} files, {meta['bytes'] / 2 ** 30:.1f} GiB)")
    if a.generate_only:
        return 0
    res = run(path, a.runs, a.npartitions, log=log, only=a.only, task_stream=a.task_stream,
              threads=a.threads, worker_env=dict(v.split("=", 1) for v in a.worker_env),
              keep_arrow_pool=a.keep_arrow_pool)
    res["data"] = str(path)
    res["command"] = " ".join([f"{FLAG}=1", "python", "bench/dask_billion.py", *(argv or
                                                                             sys.argv[1:])])
    print(json.dumps(res, indent=1))
    if a.delete:
        shutil.rmtree(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
