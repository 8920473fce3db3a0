"""``tables.count`` / ``tables.mean`` against the insecure pandas pipelines at 10^7 rows
(issue 40): interleaved pairs in one process, the median and the spread of the ratios.

Usage (from the repository root)::

    PYTHONPATH=$PWD python bench/tables_ab.py                  # dpfast vs pandas
    PYTHONPATH=$PWD python bench/tables_ab.py --rounds 15 --threads 1
    PYTHONPATH=$PWD python bench/tables_ab.py --profile        # where a count's time goes
    PYTHONPATH=$PWD python bench/tables_ab.py --against /path/to/other/checkout

Each round runs the dpfast call and the pandas pipeline (:mod:`dpfast.perf.suite_tables`,
the gate's ``tables_count_pandas`` / ``tables_mean_pandas`` entries) back to back, in
alternating order, and reports ``pandas time / dpfast time`` per round: the median and the
min-max of the rounds' ratios, and the median times; also the ratio of process CPU times
(pandas runs on one core, dpfast on all: the CPU ratio is the work ratio, steadier on a
loaded host).  The load average is printed before and after (a shared host's load moves
both sides of a pair alike, not the medians).

``--against DIR``: dpfast of this checkout against the checkout ``DIR`` (e.g. ``main``),
each in its own worker process (the same rows), calls alternated; with ``--kernel`` the
bounding kernel of a count alone (the rows grouped once, 1 and 2 threads).

``--profile``: the stages of one ``tables.count`` call (id and key encoding, grouping,
the bounding kernel, the per-key totals, and the rest: selection, noise, the table),
median of the rounds, in ms and as a share of the whole call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np


def _load() -> str:
    try:
        return "load {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:  # pragma: no cover - not every platform reports it
        return "load n/a"


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f}x (min {min(xs):.2f}, max {max(xs):.2f})"


def _pairs(rows: int, rounds: int, only: str | None = None) -> None:
    from dpfast.perf import suite_tables as st

    ids, keys, vals = st.records(rows)
    npr = np.random.default_rng(1)
    cases = {
        "count": (st.count_call(ids, keys), lambda: st.pandas_count(ids, keys, npr)),
        "mean": (st.mean_call(ids, keys, vals), lambda: st.pandas_mean(ids, keys, vals, npr)),
    }
    if only:
        cases = {only: cases[only]}
    for ours, theirs in cases.values():  # compile / load kernels, warm both
        ours()
        theirs()
    for name, (ours, theirs) in cases.items():
        t_us, t_pd, ratio, ratio_cpu = [], [], [], []
        for r in range(rounds):
            order = (ours, theirs) if r % 2 == 0 else (theirs, ours)
            got, cpu = {}, {}
            for fn in order:
                t0, c0 = time.perf_counter(), time.process_time()
                fn()
                got[fn is ours] = time.perf_counter() - t0
                cpu[fn is ours] = time.process_time() - c0
            t_us.append(got[True])
            t_pd.append(got[False])
            ratio.append(got[False] / got[True])
            ratio_cpu.append(cpu[False] / cpu[True])
        print(f"tables.{name} {rows:.0e} rows, {rounds} pairs: dpfast "
              f"{statistics.median(t_us):.3f} s, pandas {statistics.median(t_pd):.3f} s, "
              f"ratio {_spread(ratio)}; process CPU time ratio {_spread(ratio_cpu)}",
              flush=True)


def _profile(rows: int, rounds: int) -> None:
    import dpfast
    from dpfast._kernels import grouping as _kg
    from dpfast._kernels import tables as _kt
    from dpfast.perf import suite_tables as st
    from dpfast.tables import _grouped, _inputs, _keys, bounding

    ids, keys, _ = st.records(rows)
    call = st.count_call(ids, keys)
    nthr = _keys._threads()
    sk = bounding.subkey(dpfast.default_rng(st.KEY))

    def stages() -> dict[str, float]:
        t = time.perf_counter
        out: dict[str, float] = {}
        t0 = t()
        call()
        out["whole call"] = t() - t0
        t0 = t()
        data, _ = _inputs._validate(keys, ids, None, None, None)
        out["validate + key encoding"] = t() - t0
        t0 = t()
        off, gkeys, _, uniques, _ = _grouped.group_ids(data.ids, data.codes, None, nthr)
        out["id encoding + grouping"] = t() - t0
        n, n_ids = len(ids), len(uniques)
        t0 = t()
        h = _keys.id_hashes(uniques)
        out["id hashes"] = t() - t0
        gcnt = np.empty(n, np.int64)
        graw = np.empty(n, np.int64)
        nkeep = np.empty(n_ids, np.int64)
        t0 = t()
        _kt.bound_counts(off, gkeys, h, sk, st.K, 1, gcnt, nkeep, None, graw, nthr)
        out["bounding kernel (sort + choice)"] = t() - t0
        counts = np.zeros(data.n_codes, np.int64)
        units = np.zeros(data.n_codes, np.int64)
        t0 = t()
        _kg.accumulate(off, nkeep, gkeys, gcnt, counts)
        _kg.accumulate_units(off, nkeep, gkeys, units)
        out["per-key totals"] = t() - t0
        parts = sum(v for k, v in out.items() if k != "whole call")
        out["rest: selection, noise, table, Python"] = max(0.0, out["whole call"] - parts)
        return out

    stages()
    runs = [stages() for _ in range(rounds)]
    whole = statistics.median(r["whole call"] for r in runs)
    print(f"tables.count {rows:.0e} rows, {nthr} thread(s), median of {rounds}:")
    for k in runs[0]:
        v = statistics.median(r[k] for r in runs)
        print(f"  {k:40s} {1000 * v:8.1f} ms  {100 * v / whole:5.1f} %")


_WORKER = r"""
import sys, time
from dpfast.perf import suite_tables as st
ids, keys, vals = st.records(int(sys.argv[1]))
calls = {"count": st.count_call(ids, keys), "mean": st.mean_call(ids, keys, vals)}
for f in calls.values():
    f()
print("ready", flush=True)
for line in sys.stdin:
    f = calls[line.strip()]
    t0 = time.perf_counter()
    f()
    print(time.perf_counter() - t0, flush=True)
"""


_KERNEL_WORKER = r"""
import sys, time
import numpy as np
import dpfast
from dpfast._kernels import grouping as _kg, tables as _kt
from dpfast.perf import suite_tables as st
from dpfast.tables import _keys, bounding
ids, keys, _ = st.records(int(sys.argv[1]))
kc, _ = _keys.factorize_column(keys)
ic, iu = _keys.factorize_column(ids)
h, n, n_ids = _keys.id_hashes(iu), len(ids), len(iu)
graw, off, g0 = np.zeros(n, np.int64), np.zeros(n_ids + 1, np.int64), np.zeros(n, np.int64)
e = np.empty(0, np.int64)
_kg.group_by_id(ic, n_ids, kc, e, False, off, g0, e, graw.view(np.int32), 1)
sk = bounding.subkey(dpfast.default_rng(st.KEY))
gcnt, nkeep, g = np.zeros(n, np.int64), np.zeros(n_ids, np.int64), g0.copy()
def run(t):
    g[:] = g0
    t0 = time.perf_counter()
    _kt.bound_counts(off, g, h, sk, st.K, 1, gcnt, nkeep, None, graw, t)
    return time.perf_counter() - t0
run(1), run(2)
print("ready", flush=True)
for line in sys.stdin:
    print(run(int(line)), flush=True)
"""


def _against(other: str, rows: int, rounds: int, kernel: bool = False) -> None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = {}
    for name, root in (("this", here), ("other", os.path.abspath(other))):
        env = {**os.environ, "PYTHONPATH": root}
        code = _KERNEL_WORKER if kernel else _WORKER
        procs[name] = subprocess.Popen([sys.executable, "-c", code, str(rows)], env=env,
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True, cwd=root)
        assert procs[name].stdout is not None and procs[name].stdout.readline() == "ready\n"

    def run(name: str, stat: str) -> float:
        p = procs[name]
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(stat + "\n")
        p.stdin.flush()
        return float(p.stdout.readline())

    for stat in ("1", "2") if kernel else ("count", "mean"):
        mine, theirs, ratio = [], [], []
        for r in range(rounds):
            if r % 2:
                b, a = run("other", stat), run("this", stat)
            else:
                a, b = run("this", stat), run("other", stat)
            mine.append(a)
            theirs.append(b)
            ratio.append(b / a)
        what = f"bound_counts on {stat} thread(s)" if kernel else f"tables.{stat}"
        print(f"{what} {rows:.0e} rows, {rounds} pairs: this "
              f"{statistics.median(mine):.3f} s, {other} {statistics.median(theirs):.3f} s, "
              f"speed-up {_spread(ratio)}", flush=True)
    for p in procs.values():
        assert p.stdin is not None
        p.stdin.close()
        p.wait()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10 ** 7)
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--stat", choices=("count", "mean"), default=None,
                    help="only this statistic against pandas")
    ap.add_argument("--against", default=None, metavar="DIR")
    ap.add_argument("--kernel", action="store_true",
                    help="with --against: the bounding kernel of a count alone, 1 and 2 threads")
    args = ap.parse_args(argv)
    if args.threads is not None:
        os.environ["NUMBA_NUM_THREADS"] = str(args.threads)  # (the --against workers)
        import numba

        numba.set_num_threads(args.threads)
    print(_load(), f"cpus {os.cpu_count()}", flush=True)
    if args.profile:
        _profile(args.rows, args.rounds)
    elif args.against:
        _against(args.against, args.rows, args.rounds, args.kernel)
    else:
        _pairs(args.rows, args.rounds, args.stat)
    print(_load(), flush=True)


if __name__ == "__main__":
    main()
