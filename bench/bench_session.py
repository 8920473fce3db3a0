"""dpfast.Session: SQL against the direct tables call on the same rows, and the latency of
a cache hit, same run.

Targets (issue 24):

* ``session.sql("SELECT k, COUNT(*) AS n FROM events GROUP BY k")`` (and ``AVG(v)``) on
  10^7 rows (10^6 people, Zipf keys over 10^5 values, ``max_partitions=3``, private key
  selection, epsilon = 1, delta = 1e-6) from a DuckDB database file, a Parquet file or a
  pandas DataFrame, charged to a ledger file, costs at most 1.2x ``dpfast.tables.count``
  (``mean``) on the same rows already in numpy arrays (no ledger).  Ratio = session time /
  direct time (medians of interleaved repeats; the process CPU time ratio beside it).  Every
  timed SQL call is a new query -- its epsilon differs -- so it is a cache miss: parse,
  plan, probe the event, get the rows (a file's columns from the session's column cache,
  decoded by DuckDB on the first call; a pandas frame's columns in place), bound, charge
  the ledger (a durable SQLite commit: fsync), noise, store the answer in the ledger.
  The direct call gets a new epsilon each time too (never one the SQL side used), so
  both pay the key-selection threshold of new parameters (memoised per parameters; a
  direct call repeating one epsilon skips it, and a repeated SQL query is a cache hit
  instead).
* a repeated query (a cache hit: parse, fingerprint, probe, ledger lookup, decode)
  answers in at most 10 ms (median of 20).
* the first query of a new session over a file pays the decode of its columns once (the
  column cache's load): reported as the first call's time against a later one's, and the
  same query with the column cache off (DuckDB decodes on every call).

Set ``DPFAST_BENCH_ROWS`` to scale down on a small machine.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time

import numpy as np
import pytest

from dpfast import default_rng
from dpfast import tables as dpt

KEY = bytes(range(32))
DELTA, K = 1e-6, 3
BOUNDS = (0.0, 100.0)
QUERIES = {"count": "SELECT k, COUNT(*) AS n FROM events GROUP BY k",
           "mean": "SELECT k, AVG(v) AS n FROM events GROUP BY k"}


def _rows(rows: int) -> dict[str, np.ndarray]:
    r = np.random.default_rng(0)
    return {"k": ((r.zipf(1.3, rows) - 1) % 10 ** 5).astype(np.int64),
            "person": r.integers(0, rows // 10, rows).astype(np.int64),
            "v": r.uniform(-10.0, 110.0, rows)}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    duckdb = pytest.importorskip("duckdb")
    pytest.importorskip("sqlglot")
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rows = int(os.environ.get("DPFAST_BENCH_ROWS", 10 ** 7))
    tmp = str(tmp_path_factory.mktemp("session"))
    data = _rows(rows)
    frame = pd.DataFrame(data)
    db = os.path.join(tmp, "store.duckdb")
    pq = os.path.join(tmp, "events.parquet")
    con = duckdb.connect(db)
    con.register("src", frame)
    con.execute("CREATE TABLE events AS SELECT * FROM src")
    con.execute(f"COPY events TO '{pq}' (FORMAT parquet)")
    con.close()
    return {"tmp": tmp, "rows": rows, "data": data,
            "sources": {"duckdb": db, "parquet": pq, "pandas": frame}}


def _interleaved(a, b, rounds: int = 3, repeat: int = 2) -> tuple[float, ...]:
    """Median wall and median process CPU time of ``a`` and ``b`` (interleaved: each
    round times one call of each, the order alternating): ``(wall_a, wall_b, cpu_a,
    cpu_b)``.  The CPU time (all the process's threads: DuckDB's and numba's) is less hit
    by other processes' load.  Medians, never best-of."""
    w: list[list[float]] = [[], []]
    c_: list[list[float]] = [[], []]
    fns = (a, b)
    for r in range(max(5, rounds * repeat)):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            c, t = time.process_time(), time.perf_counter()
            fns[i]()
            w[i].append(time.perf_counter() - t)
            c_[i].append(time.process_time() - c)
    med = statistics.median
    return med(w[0]), med(w[1]), med(c_[0]), med(c_[1])


def _session(store: dict, source: str, name: str):
    import dpfast

    return dpfast.Session(store["sources"][source], privacy_unit="person",
                          epsilon=10 ** 6, delta=0.5, bounds={"v": BOUNDS},
                          name="events", ledger=os.path.join(store["tmp"], name),
                          max_partitions=K, rng=default_rng(KEY))


@pytest.mark.parametrize("stat", ["count", "mean"])
@pytest.mark.parametrize("source", ["duckdb", "parquet", "pandas"])
def test_sql_vs_direct(benchmark, report, store, source: str, stat: str) -> None:
    s = _session(store, source, f"miss-{source}-{stat}.db")
    d, rows = store["data"], store["rows"]
    eps_sql = (1.0 + i * 1e-9 for i in itertools.count())  # a new query each call
    # new parameters each call, never the SQL call's: each side computes its own
    # key-selection threshold (a shared epsilon would reuse the other's memoised one)
    eps_direct = (1.0 + (i + 0.5) * 1e-9 for i in itertools.count())
    gen = default_rng(KEY)

    def sql():
        return s.sql(QUERIES[stat], epsilon=next(eps_sql), delta=DELTA)

    def direct():
        kw = dict(epsilon=next(eps_direct), delta=DELTA, max_partitions=K, rng=gen)
        if stat == "count":
            return dpt.count(d["k"], d["person"], **kw)
        return dpt.mean(d["v"], d["k"], d["person"], bounds=BOUNDS, **kw)

    first = sql()  # kernels loaded
    ref = direct()
    assert abs(len(first.releases["n"]) - len(ref)) < 0.1 * len(ref) + 10
    t_sql, t_direct, c_sql, c_direct = _interleaved(sql, direct)
    benchmark.pedantic(sql, rounds=1, iterations=1)
    ratio = t_sql / t_direct
    benchmark.extra_info.update({"sql_s": t_sql, "direct_s": t_direct, "ratio": ratio,
                                 "sql_cpu_s": c_sql, "direct_cpu_s": c_direct,
                                 "cpu_ratio": c_sql / c_direct})
    report(f"session.sql {stat} {rows:.0e} rows ({source} source, ledger)",
           f"{t_sql:.3f} s vs tables.{stat} on arrays {t_direct:.3f} s: {ratio:.2f}x "
           f"(target <= 1.2x); CPU {c_sql:.3f} s vs {c_direct:.3f} s: "
           f"{c_sql / c_direct:.2f}x")
    s.close()


def test_cache_hit_latency(benchmark, report, store) -> None:
    s = _session(store, "duckdb", "hit.db")
    rows = store["rows"]
    q = QUERIES["count"]
    first = s.sql(q, epsilon=1.0, delta=DELTA)
    charges = len(s.budget.history())

    def hit():
        return s.sql(q, epsilon=1.0, delta=DELTA)

    runs = []
    for _ in range(20):
        t = time.perf_counter()
        again = hit()
        runs.append(time.perf_counter() - t)
    best = statistics.median(runs)  # the median of 20 (not the fastest)
    assert again.releases["n"].values.tobytes() == first.releases["n"].values.tobytes()
    assert len(s.budget.history()) == charges  # no new charge
    benchmark.pedantic(hit, rounds=5, iterations=1)
    benchmark.extra_info.update({"hit_ms": 1000 * best,
                                 "keys": len(first.releases["n"])})
    report(f"session cache hit ({len(first.releases['n'])} keys, {rows:.0e}-row source)",
           f"{1000 * best:.2f} ms (target <= 10 ms)")
    s.close()


@pytest.mark.parametrize("source", ["duckdb", "parquet"])
def test_first_query_decodes_once(benchmark, report, store, source: str) -> None:
    """The column cache's one-time load (one DuckDB scan of the query's columns into
    numpy, with NULL masks) against the per-query row fetch it replaces (DuckDB's
    ``SELECT k, person, v ... WHERE ... IS NOT NULL``, what every query paid before)."""
    s = _session(store, source, f"first-{source}.db")
    src = s._source
    row_sql = ('SELECT "k" AS __k0, "person" AS __pid, "v" AS __v FROM "events" WHERE '
               '"k" IS NOT NULL AND "person" IS NOT NULL AND "v" IS NOT NULL')

    def best(f) -> tuple[float, float]:  # medians of 3 (wall, CPU), not best-of
        ws, cs = [], []
        for _ in range(3):
            c0, t0 = time.process_time(), time.perf_counter()
            f()
            ws.append(time.perf_counter() - t0)
            cs.append(time.process_time() - c0)
        return statistics.median(ws), statistics.median(cs)

    load = best(lambda: src.load_columns(["k", "person", "v"]))
    fetch = best(lambda: src.fetch_sql(row_sql))
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    benchmark.extra_info.update({"decode_s": load[0], "decode_cpu_s": load[1],
                                 "fetch_s": fetch[0], "fetch_cpu_s": fetch[1]})
    report(f"column cache load, first query only ({source} file, 3 columns, "
           f"{store['rows']:.0e} rows)",
           f"{load[0]:.3f} s (CPU {load[1]:.3f} s) once; without the cache every query "
           f"fetches its rows: {fetch[0]:.3f} s (CPU {fetch[1]:.3f} s)")
    s.close()


def test_fixed_costs_per_query(benchmark, report, store) -> None:
    """The per-query costs the direct call does not pay, on 10^4 rows (so that they are
    not lost in the release's time) with the key-selection threshold already memoised
    for each new epsilon: the ledger (two durable SQLite commits: the charge and the
    stored answer) and the rest of the SQL layer (parse, plan, fingerprint, probe on one
    row, payload)."""
    import pandas as pd

    import dpfast

    small = {c: a[:10 ** 4] for c, a in store["data"].items()}
    frame = pd.DataFrame(small)
    kw = dict(privacy_unit="person", bounds={"v": BOUNDS}, name="events",
              max_partitions=K, rng=default_rng(KEY))
    on_disk = dpfast.Session(frame, epsilon=10 ** 6, delta=0.5,
                             ledger=os.path.join(store["tmp"], "fixed.db"), **kw)
    in_memory = dpfast.Session(frame, budget=dpfast.Budget(10 ** 6, 0.5,
                                                           accounting="mixed"), **kw)
    gen = default_rng(KEY)

    def direct(e: float) -> None:
        dpt.count(small["k"], small["person"], epsilon=e, delta=DELTA, max_partitions=K,
                  rng=gen)

    calls = {"ledger": lambda e: on_disk.sql(QUERIES["count"], epsilon=e, delta=DELTA),
             "memory": lambda e: in_memory.sql(QUERIES["count"], epsilon=e, delta=DELTA),
             "direct": direct}
    wall: dict[str, list[float]] = {n: [] for n in calls}
    cpu: dict[str, list[float]] = {n: [] for n in calls}
    for i in range(24):
        e = 1.0 + i * 1e-9
        direct(e)  # the key-selection threshold of these parameters: memoised for all
        for name, f in calls.items():
            c, t = time.process_time(), time.perf_counter()
            f(e)
            wall[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c)

    def median_ms(a: str, b: str, of: dict[str, list[float]]) -> float:
        return 1000 * statistics.median(x - y for x, y in zip(of[a], of[b]))

    ledger, ledger_cpu = median_ms("ledger", "memory", wall), median_ms("ledger", "memory", cpu)
    spikes = 1000 * max(x - y for x, y in zip(wall["ledger"], wall["memory"]))
    layer = median_ms("memory", "direct", wall)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    benchmark.extra_info.update({"ledger_ms": ledger, "ledger_cpu_ms": ledger_cpu,
                                 "ledger_max_ms": spikes, "sql_layer_ms": layer})
    report("session.sql fixed costs per query (10^4 rows, medians of 24)",
           f"ledger file {ledger:.1f} ms (CPU {ledger_cpu:.1f} ms; the rest waits for the "
           f"durable commits' fsync; worst {spikes:.0f} ms), the rest of the SQL layer "
           f"{layer:.1f} ms; direct call {1000 * statistics.median(wall['direct']):.1f} ms")
    on_disk.close()
