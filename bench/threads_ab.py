"""The threaded samplers' launch strategies, alternated in one process (issues 37 and 40).

Run: ``PYTHONPATH=. python bench/threads_ab.py [--cases all] [--cells 2000000]
[--rounds 21] [--no-prange] [--trace]``, or, against another checkout (its compiled C
module built), ``PYTHONPATH=. python bench/threads_ab.py --against ../pre [--pairs 3]``:
the gate's ``*_threads`` entries (``python -m dpfast bench --quick --rounds 11 --only
...``) run alternately in each checkout, each run importing its own tree (checked), and
the per-pair ratio this / other printed per entry with its median and min-max, and the
speed ratio of the all-thread call (the gate's ``seconds``) and of the one-thread call (the
matching ``*_1core`` entry's ``seconds``).

Each round times one sampler call (the gate's ``*_threads`` calls: in place into int64,
or allocating a new float64 grid output) on one thread and then on all of numba's
threads with each launch strategy, the order of the strategies reversed every other
round:

* ``claim`` (the current one, :func:`dpfast._kernels._launch.claimed`): one call of the
  serial ``nogil`` kernel per thread, each taking chunks one at a time from a shared
  atomic counter;
* ``ranges`` (the launch before it, :func:`dpfast._kernels._launch.chunked`): the same
  kernel called once per guided range of chunks, the ranges handed out by a lock in
  Python;
* ``prange`` (what ``c2b5964`` ran, unless ``--no-prange``): a ``parallel=True`` loop over
  the chunks calling the same serial kernel per chunk on numba's threading layer
  (compiled here, at start; not part of dpfast).

Prints per case each strategy's scaling (one-thread time / its time) and the speed of
``claim`` against the others: medians of the per-round ratios with their min-max (never
best-of), and the load average before and after.  The output is the same bit for bit
whatever the strategy (checked once per case).  ``--trace`` prints, for the ``ranges``
launch, where the threads lose: the helper's start latency, the time between ranges, and
how far apart the threads finish.
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from collections.abc import Callable

import numba
import numpy as np

import dpfast
from dpfast._kernels import _launch
from dpfast._kernels import samplers as sk
from dpfast._kernels import table as tk

KEY = bytes(range(32))

#: name -> (dpfast function, scale, dtype, in place)
CASES = {
    "discrete_laplace_10": ("discrete_laplace", 10.0, np.int64, True),
    "discrete_laplace_1000": ("discrete_laplace", 1000.0, np.int64, True),
    "discrete_gaussian_10": ("discrete_gaussian", 10.0, np.int64, True),
    "laplace_grid": ("laplace", 10.0, np.float64, False),
    "gaussian_grid": ("gaussian", 10.0, np.float64, False),
    "discrete_laplace_10_alloc": ("discrete_laplace", 10.0, np.int64, False),
    "discrete_gaussian_percell": ("discrete_gaussian", None, np.int64, True),
}

CLAIM = _launch._Claimed.launch
#: the sampler kernels whose launch the strategies replace (others, such as a grid call's
#: max |x| pass, keep the claimed launch)
SAMPLERS = (tk.table_kernel_serial, sk.discrete_kernel_serial, sk.bernoulli_exp_kernel_serial)


def _split(streams_at: int) -> Callable:
    """Chunks [a, b) of a claimed kernel's arguments, the empty claim appended."""
    def split(args: tuple, a: int, b: int) -> tuple:
        buf, st, key, nonces = args[streams_at]
        ints, u64s = args[-1]
        part = list(args)
        part[streams_at] = (buf[a:b], st[a:b], key, nonces[a:b])
        part[-1] = (ints[a:b], u64s[a:b])
        return (*part, _launch.NO_CLAIM)
    return split


def ranges_launch(self, args, threads):  # type: ignore[no-untyped-def]
    """The launch before the claimed one: a kernel call per guided range."""
    if self._kernel not in SAMPLERS:
        return CLAIM(self, args, threads)
    if self._prepare is not None:
        args = self._prepare(args)
    at = 0 if self._kernel is sk.bernoulli_exp_kernel_serial else 1
    _launch._Chunked(self._kernel, self._count, _split(at)).launch(args, threads)


_PAR: dict[str, Callable] = {}


def _compile_prange() -> None:
    """The ``parallel=True`` launches of c2b5964 over the same serial kernels."""
    table_serial = tk.table_kernel_serial
    discrete_serial = sk.discrete_kernel_serial

    # a parallel loop's body cannot take tuples from outside it: unpacked, then rebuilt
    @numba.njit(parallel=True, _nrt=False)
    def par_table(law, streams, io, table, force, pend, claim):  # type: ignore[no-untyped-def]
        buf, st, key, nonces = streams
        ints, u64s = pend
        x, out, fx, fout, mode, grid = io
        g0, g1, g2 = grid
        (pack, thresh, f, nbins, p, cbits, coef, ta, trm1, flo, fhi, vb, two, pa, pb, ubits,
         sel) = table
        for c in numba.prange(buf.shape[0]):
            table_serial(law, (buf[c:c + 1], st[c:c + 1], key, nonces[c:c + 1]),
                         (x, out, fx, fout, mode, (g0, g1, g2)),
                         (pack, thresh, f, nbins, p, cbits, coef, ta, trm1, flo, fhi, vb, two,
                          pa, pb, ubits, sel), force, (ints[c:c + 1], u64s[c:c + 1]), claim)

    @numba.njit(parallel=True, _nrt=False)
    def par_discrete(kind, streams, io, params, force, pend, claim):  # type: ignore[no-untyped-def]
        buf, st, key, nonces = streams
        ints, u64s = pend
        x, out, mode, grid = io
        g0, g1, g2 = grid
        p1, p2, pstride = params
        for c in numba.prange(buf.shape[0]):
            discrete_serial(kind, (buf[c:c + 1], st[c:c + 1], key, nonces[c:c + 1]),
                            (x, out, mode, (g0, g1, g2)), (p1, p2, pstride), force,
                            (ints[c:c + 1], u64s[c:c + 1]), claim)

    _PAR[tk.table_kernel_serial.__name__] = _launch.guarded(par_table)
    _PAR[sk.discrete_kernel_serial.__name__] = _launch.guarded(par_discrete)


def prange_launch(self, args, threads):  # type: ignore[no-untyped-def]
    """One ``parallel=True`` region over the chunks (numba's chunk size: the driver's 1)."""
    if self._kernel not in SAMPLERS:
        return CLAIM(self, args, threads)
    if self._prepare is not None:
        args = self._prepare(args)
    par = _PAR.get(self._kernel.__name__)
    if par is None:
        self._kernel(*args, _launch.NO_CLAIM)
        return
    par(*args, _launch.NO_CLAIM)


TRACE: list[tuple[float, list]] = []


def traced_launch(self, args, threads):  # type: ignore[no-untyped-def]
    """``ranges_launch`` with a log: (thread, range, start, end) from the launch's start."""
    if self._kernel not in SAMPLERS:
        return CLAIM(self, args, threads)
    if self._prepare is not None:
        args = self._prepare(args)
    at = 0 if self._kernel is sk.bernoulli_exp_kernel_serial else 1
    split = _split(at)
    n = self._count(args)
    nt = min(threads, n)
    t0 = time.perf_counter()
    items = iter(_launch.ranges(n, nt))
    take = threading.Lock()
    log: list = []

    def work(tag: str) -> None:
        while True:
            with take:
                item = next(items, None)
            if item is None:
                return
            a = time.perf_counter() - t0
            self._kernel(*split(args, item[0], item[1]))
            log.append((tag, item, a, time.perf_counter() - t0))

    pool = _launch._helpers()
    jobs = [pool.submit(lambda: work("helper")) for _ in range(nt - 1)]
    work("caller")
    for j in jobs:
        if not pool.cancel(j):
            j.done.wait()
    TRACE.append((time.perf_counter() - t0, log))


def _call(case: str, x: np.ndarray, gen) -> Callable[[], object]:  # type: ignore[no-untyped-def]
    name, scale, _, in_place = CASES[case]
    fn = getattr(dpfast, name)
    if scale is None:
        scale = np.linspace(0.5, 9.0, x.shape[0])
    if in_place:
        return lambda: fn(x, scale, rng=gen, out=x)
    return lambda: fn(x, scale, rng=gen)


def _with(launch: Callable, call: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        _launch._Claimed.launch = launch  # type: ignore[method-assign]
        try:
            return call()
        finally:
            _launch._Claimed.launch = CLAIM  # type: ignore[method-assign]
    return run


def _one_thread(call: Callable[[], object]) -> Callable[[], object]:
    def run() -> object:
        old = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return call()
        finally:
            numba.set_num_threads(old)
    return run


def desc(v: list[float]) -> str:
    return f"{statistics.median(v):.3f} ({min(v):.2f}-{max(v):.2f})"


def run_case(case: str, cells: int, rounds: int, prange: bool) -> None:
    _, _, dtype, _ = CASES[case]
    # bit-identity check first: a fresh generator per strategy, written values in x
    ref = None
    launches = {"claim": CLAIM, "ranges": ranges_launch}
    if prange:
        launches["prange"] = prange_launch
    for label, launch in [("one", None), *launches.items()]:
        x = (np.arange(cells) % 7).astype(dtype)
        call = _call(case, x, dpfast.default_rng(KEY))
        got = _one_thread(call)() if launch is None else _with(launch, call)()
        got = np.array(x if got is None else got, copy=True)
        if ref is None:
            ref = got
        elif not (ref.dtype == got.dtype and ref.tobytes() == got.tobytes()):
            raise SystemExit(f"{case}: {label} differs from one thread")
    x = np.zeros(cells, dtype)
    gen = dpfast.default_rng(KEY)
    call = _call(case, x, gen)
    fns = {"one": _one_thread(call), **{k: _with(v, call) for k, v in launches.items()}}
    for f in fns.values():
        f()
    names = list(fns)
    t: dict[str, list[float]] = {k: [] for k in names}
    load0 = os.getloadavg()[0]
    for r in range(rounds):
        for k in (names if r % 2 == 0 else names[::-1]):
            c = time.perf_counter()
            fns[k]()
            t[k].append(time.perf_counter() - c)
    load1 = os.getloadavg()[0]
    print(f"{case}: {cells} cells, {numba.get_num_threads()} threads, {rounds} rounds, "
          f"layer {_layer()}, load {load0:.1f} -> {load1:.1f}")
    print(f"  one thread: {statistics.median(t['one']) * 1e3:.2f} ms (median)")
    for k in launches:
        print(f"  scaling, {k:7s} {desc([o / b for o, b in zip(t['one'], t[k])])}"
              f"   ({statistics.median(t[k]) * 1e3:.2f} ms)")
    for k in launches:
        if k != "claim":
            print(f"  claim / {k} speed: {desc([b / c for b, c in zip(t[k], t['claim'])])}")


def _layer() -> str:
    try:
        return str(numba.threading_layer())
    except ValueError:
        return "none loaded"


def trace(case: str, cells: int, rounds: int) -> None:
    """Where the ``ranges`` launch loses (see the module docstring)."""
    x = np.zeros(cells, CASES[case][2])
    call = _with(traced_launch, _call(case, x, dpfast.default_rng(KEY)))
    call()
    starts, gaps, apart, totals = [], [], [], []
    for _ in range(rounds):
        TRACE.clear()
        call()
        for total, log in TRACE:
            totals.append(total)
            mine = {tag: sorted((e for e in log if e[0] == tag), key=lambda e: e[2])
                    for tag in ("caller", "helper")}
            if mine["helper"]:
                starts.append(mine["helper"][0][2])
            for rs in mine.values():
                gaps += [b[2] - a[3] for a, b in zip(rs, rs[1:])]
            if mine["helper"] and mine["caller"]:
                apart.append(abs(mine["helper"][-1][3] - mine["caller"][-1][3]))
    ms = [v * 1e3 for v in totals]
    print(f"trace of the ranges launch, {case}, {rounds} calls, load "
          f"{os.getloadavg()[0]:.1f}: launch {statistics.median(ms):.2f} ms (median); "
          f"helper's first range starts after {desc([v * 1e3 for v in starts])} ms; "
          f"between two ranges of a thread {desc([v * 1e6 for v in gaps])} us "
          f"({len(gaps) / max(1, len(totals)):.0f} per launch); the threads end "
          f"{desc([v * 1e3 for v in apart])} ms apart")
    # the share of a one-thread call spent in the sampler's kernel launches (the rest is
    # serial: stream set-up, the finishing of pending cells, a grid's max |x| pass)
    spent: list[float] = []

    def timed(self, args, threads):  # type: ignore[no-untyped-def]
        c = time.perf_counter()
        CLAIM(self, args, threads)
        if self._kernel in SAMPLERS:
            spent.append(time.perf_counter() - c)

    one = _one_thread(_with(timed, _call(case, x, dpfast.default_rng(KEY))))
    share = []
    for _ in range(rounds):
        spent.clear()
        c = time.perf_counter()
        one()
        share.append(sum(spent) / (time.perf_counter() - c))
    nch = -(-cells // (1 << 16))
    p = statistics.median(share)
    best = nch / -(-nch // 2)
    print(f"  kernel share of a one-thread call {desc(share)}: two-thread bound "
          f"1 / ((1 - p) + p / {best:.3f}) = {1 / ((1 - p) + p / best):.3f} "
          f"({nch} chunks on 2 threads)")
    # the Python cost of one range: an empty one (nothing to draw) dispatched
    cap: dict = {}

    def capture(self, args, threads):  # type: ignore[no-untyped-def]
        if self._kernel not in SAMPLERS:
            return CLAIM(self, args, threads)
        cap["args"] = self._prepare(args) if self._prepare is not None else args
        cap["self"] = self
        return CLAIM(self, args, threads)

    _with(capture, _call(case, x, dpfast.default_rng(KEY)))()
    if cap:
        k = cap["self"]._kernel
        empty = _split(1)(cap["args"], 0, 0)
        ts = []
        for _ in range(1000):
            c = time.perf_counter()
            k(*empty)
            ts.append(time.perf_counter() - c)
        print(f"  one dispatch of the kernel (an empty range): {desc([v * 1e6 for v in ts])} us")


GATE = ("discrete_laplace_10_threads", "discrete_laplace_1000_threads",
        "discrete_gaussian_10_threads", "laplace_grid_threads", "gaussian_grid_threads")


def _gate(root: str, entries: str, rounds: int) -> dict[str, tuple[float, float]]:
    """One quick-gate run of ``entries`` in the checkout ``root``: entry -> (ratio, the
    all-thread call's median seconds)."""
    import json
    import subprocess
    import sys
    import tempfile

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = root
    where = subprocess.run([sys.executable, "-c", "import dpfast; print(dpfast.__file__)"],
                           env=env, cwd=root, capture_output=True, text=True, check=True)
    if not os.path.realpath(where.stdout.strip()).startswith(os.path.realpath(root) + os.sep):
        raise SystemExit(f"{root}: imports dpfast from {where.stdout.strip()}")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        subprocess.run([sys.executable, "-m", "dpfast", "bench", "--quick", "--rounds",
                        str(rounds), "--only", entries, "--json", out], env=env, cwd=root,
                       check=True, capture_output=True)
        with open(out) as f:
            data = json.load(f)
    return {k: (float(v["ratio"]), float(v["seconds"])) for k, v in data["entries"].items()}


def against(other: str, pairs: int, rounds: int) -> None:
    """The gate's threaded entries alternated between this checkout and ``other``."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    other = os.path.abspath(other)
    ones = {e: e.replace("_threads", "_1core") for e in GATE}
    entries = ",".join((*GATE, *ones.values()))
    new: dict[str, list[tuple[float, float]]] = {e: [] for e in (*GATE, *ones.values())}
    old: dict[str, list[tuple[float, float]]] = {e: [] for e in (*GATE, *ones.values())}
    loads = [os.getloadavg()[0]]
    for i in range(pairs):
        order = [(here, new), (other, old)] if i % 2 == 0 else [(other, old), (here, new)]
        for root, store in order:
            for k, v in _gate(root, entries, rounds).items():
                if k in store:
                    store[k].append(v)
        loads.append(os.getloadavg()[0])
    print(f"{here} (new) against {other} (old): {pairs} alternated pairs of "
          f"'dpfast bench --quick --rounds {rounds}', load {min(loads):.1f}-{max(loads):.1f}")
    for e in GATE:
        ratios = [a[0] / b[0] for a, b in zip(new[e], old[e])]
        speed = [b[1] / a[1] for a, b in zip(new[e], old[e])]
        print(f"  {e:30s} scaling new {' / '.join(f'{v[0]:.2f}' for v in new[e])}; old "
              f"{' / '.join(f'{v[0]:.2f}' for v in old[e])}; new/old {desc(ratios)}")
        print(f"  {'':30s} all-thread call new {' / '.join(f'{v[1] * 1e3:.1f}' for v in new[e])}"
              f" ms; old {' / '.join(f'{v[1] * 1e3:.1f}' for v in old[e])} ms; new/old speed "
              f"{desc(speed)}")
        one = [b[1] / a[1] for a, b in zip(new[ones[e]], old[ones[e]])]
        if one:
            print(f"  {'':30s} one-thread call ({ones[e]}) new/old speed {desc(one)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="discrete_laplace_10,discrete_laplace_1000,"
                    "discrete_gaussian_10,laplace_grid,gaussian_grid",
                    help="comma-separated, or 'all': " + ", ".join(CASES))
    ap.add_argument("--cells", type=int, default=2_000_000)
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--no-prange", action="store_true")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--against", metavar="CHECKOUT")
    ap.add_argument("--pairs", type=int, default=3)
    a = ap.parse_args()
    if a.against:
        against(a.against, a.pairs, max(11, a.rounds if a.rounds != 21 else 11))
        return
    cases = list(CASES) if a.cases == "all" else a.cases.split(",")
    if not a.no_prange:
        _compile_prange()
    print(f"dpfast from {os.path.dirname(dpfast.__file__)}, load {os.getloadavg()}")
    for case in cases:
        if a.trace:
            trace(case, a.cells, a.rounds)
        run_case(case, a.cells, a.rounds, not a.no_prange)


if __name__ == "__main__":
    main()
