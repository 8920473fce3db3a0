"""``dpfast demo``: the main job, a real release from raw records.

The demo generates realistic synthetic raw records -- clinic visits, several per patient,
with a district, an age band, a diagnosis code and a length of stay -- stores them in the
embedded DuckDB store, and releases three tables through a :class:`dpfast.Session` with two
analysts, ana and ben, each with a sub-budget of one privacy budget (in memory, or a ledger
file with ``--ledger``):

1. ana: visits per (district, age band), public keys, each patient's contribution bounded;
2. ben, in SQL: patients per diagnosis code, keys chosen privately (partition selection);
3. ana, in SQL: mean length of stay per district;

then ben repeats ana's query (answered from the result cache: no new charge), ben's next
query is refused (it would overspend), the usage report; the accuracy of each table (from its
noise law, and measured against the true bounded table), and the samplers' steady-state
throughput next to numpy's insecure ``Generator.laplace`` measured the same way in the same
run (kernels loaded first; the median of interleaved rounds), as in the README and ``bench/``.

A first run compiles the kernels (numba; cached for later runs): a thread compiles those of
the releases and the samplers while the records are generated and stored.
"""

from __future__ import annotations

import argparse
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

AGE_BANDS = np.array(["0-17", "18-34", "35-49", "50-64", "65-79", "80+"])


def records(people: int, seed: int = 2026) -> dict[str, np.ndarray]:
    """Synthetic visits: 1 + Poisson(2) visits per patient, 40 districts (sizes vary), age
    bands, 3000 diagnosis codes with Zipf-like frequencies, stays of 0-30 days."""
    r = np.random.default_rng(seed)
    n_visits = 1 + r.poisson(2.0, people)
    pid = np.repeat(np.arange(people), n_visits)
    district_w = r.dirichlet(np.full(40, 2.0))
    district = r.choice(40, people, p=district_w)[pid]
    age = r.choice(6, people, p=[0.2, 0.22, 0.2, 0.18, 0.13, 0.07])[pid]
    code_w = 1.0 / np.arange(1, 3001) ** 1.1
    diag = r.choice(3000, pid.size, p=code_w / code_w.sum())
    stay = np.minimum(r.geometric(0.35, pid.size) - 1 + (age >= 4) * r.poisson(2, pid.size),
                      45)
    return {"patient": pid, "district": np.array([f"D{d:02d}" for d in range(40)])[district],
            "age": AGE_BANDS[age], "diagnosis": np.array([f"C{c:04d}" for c in diag]),
            "stay": stay}


def _interleaved(fns: Sequence[Callable[[], object]], rounds: int = 5) -> list[float]:
    """The median time of each of ``fns`` over ``rounds`` interleaved rounds (every call
    once per round, the order reversed every other round): medians, never best-of."""
    import statistics

    times: list[list[float]] = [[] for _ in fns]
    for r in range(rounds):
        order = range(len(fns)) if r % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            t = time.perf_counter()
            fns[i]()
            times[i].append(time.perf_counter() - t)
    return [statistics.median(t) for t in times]


def throughput(cells: int, out: Callable[[str], None]) -> None:
    """Steady-state cells/s of each sampler and of numpy's Generator.laplace, same run."""
    import dpfast

    rng = dpfast.default_rng()
    xi = np.zeros(cells, np.int64)
    xf = np.zeros(cells)
    t = time.perf_counter()
    for fn, x in ((dpfast.discrete_laplace, xi), (dpfast.discrete_gaussian, xi),
                  (dpfast.laplace, xf), (dpfast.gaussian, xf)):
        fn(x[:1000], 10.0, rng=rng)  # load (or compile) the kernels: one-off setup
    setup = time.perf_counter() - t
    np_rng = np.random.default_rng(1)
    fns = [lambda: np_rng.laplace(0.0, 10.0, size=cells),
           lambda: dpfast.discrete_laplace(xi, 10.0, rng=rng, out=xi),
           lambda: dpfast.discrete_gaussian(xi, 10.0, rng=rng, out=xi),
           lambda: dpfast.laplace(xf, 10.0, rng=rng, out=xf),
           lambda: dpfast.gaussian(xf, 10.0, rng=rng, out=xf)]
    fns[1]()  # first full-size call per sampler outside the timing (buffers, thread team)
    times = _interleaved(fns)
    out(f"sampler throughput, {cells:,} cells, scale 10, steady state (median of 5 interleaved"
        f" rounds; one-off kernel setup {setup:.2f} s excluded):")
    out(f"  {'numpy Generator.laplace (insecure)':36s} {cells / times[0]:10.3g} cells/s")
    names = ["discrete Laplace", "discrete Gaussian", "Laplace (2^k grid)",
             "Gaussian (2^k grid)"]
    for name, t in zip(names, times[1:]):
        out(f"  {name:36s} {cells / t:10.3g} cells/s  {times[0] / t:5.2f}x numpy")


_KEY = bytes(32)  # public: what the compile-ahead thread draws is thrown away
#: rows of the large warm-up inputs (the demo's compile-ahead and ``dpfast warmup``): at
#: least the release layer's serial threshold, where its threaded kernels run (tested)
LARGE_ROWS = 1 << 16


def compile_ahead() -> threading.Thread:
    """Start a thread that runs, on synthetic data and a public key, the kernels the
    demo's releases and throughput lines run (the bounding of large tables, the noise
    samplers), so that they compile while the main thread generates and stores the
    records: numba compiles one kernel at a time, mostly in LLVM, which runs without the
    GIL.  The same kernels, compiled sooner; nothing it computes is shown or released.
    A failure here is left to the main thread, which meets it (and its message) in the
    same code."""
    def work() -> None:
        import dpfast
        from dpfast import tables

        try:
            n = LARGE_ROWS  # the threaded (large-input) kernels, as the demo's
            keys, ids = np.arange(n) % 3, np.arange(n) // 2
            tables.bound_contributions(keys, ids, max_per_partition=3, rng=_KEY)
            tables.bound_contributions(keys, ids, max_per_partition=3, values=keys,
                                       rng=_KEY)
            dpfast.discrete_laplace(np.zeros(1000, np.int64), 10.0, rng=_KEY)
        except Exception:  # noqa: BLE001 - best effort: the main thread reports it
            pass

    thread = threading.Thread(target=work, name="dpfast-demo-compile", daemon=True)
    thread.start()
    return thread


def store(data: dict[str, np.ndarray]) -> Any:
    """The embedded data store: an in-memory DuckDB database with the table ``visits``."""
    import duckdb

    con = duckdb.connect()
    con.register("_records", {k: v for k, v in data.items()})
    con.execute("CREATE TABLE visits AS SELECT * FROM _records")
    con.unregister("_records")
    return con


def demo(cells: int = 10_000_000, epsilon: float = 2.0, delta: float = 1e-6,
         out: Callable[[str], None] = print, people: int = 200_000,
         ledger: str | None = None) -> None:
    """Release three tables from synthetic visit records stored in DuckDB, through a
    :class:`dpfast.Session` with two analysts under an (epsilon, delta) budget: a cached
    repeat, a refused overspend, the usage report, the accuracy of each table; then measure
    the samplers' throughput on ``cells`` cells."""
    import numba

    import dpfast
    from dpfast import tables

    t0 = time.perf_counter()
    ahead = compile_ahead()
    out(f"dpfast {dpfast.__version__}: exact, secure DP releases (ChaCha20 CSPRNG, "
        f"{numba.get_num_threads()} threads)")
    data = records(people)
    n = data["patient"].size
    vmax = int(np.max(np.bincount(data["patient"])))
    out(f"records: {n:,} clinic visits of {people:,} patients (1-{vmax} visits each), "
        "40 districts, 6 age bands, 3,000 diagnosis codes; stored in DuckDB (table visits)")
    districts = np.array([f"D{d:02d}" for d in range(40)])
    budget = dpfast.Budget(epsilon, delta, ledger=ledger, accounting="mixed")
    rng = dpfast.default_rng()  # urandom-keyed: nobody can replay the noise
    session = dpfast.Session(store(data), table="visits", privacy_unit="patient",
                             bounds={"stay": (0, 30)},
                             domains={"district": districts, "age": AGE_BANDS},
                             budget=budget, rng=rng, max_per_partition=3)
    where = "in memory" if ledger is None else f"ledger {ledger}"
    share = epsilon / 4
    ana = session.add_analyst("ana", epsilon=2 * share)
    ben = session.add_analyst("ben", epsilon=2 * share)
    out(f"session: budget epsilon={epsilon:g}, delta={delta:g}, mixed accounting, {where}; "
        f"analysts ana and ben, epsilon {2 * share:g} each")
    out("")

    # 1. ana: visits per (district, age band), public keys
    r1 = ana.count(["district", "age"], epsilon=share, max_partitions=1)
    truth1 = tables.bound_contributions((data["district"], data["age"]), data["patient"],
                                        max_partitions=1, max_per_partition=3, rng=rng)
    _report(out, "ana: visits per (district, age band), <= 3 visits per patient", r1, truth1)

    # 2. ben, in SQL: patients per diagnosis code, keys chosen privately
    q2 = ben.sql("SELECT diagnosis, COUNT(*) AS patients FROM visits GROUP BY diagnosis",
                 epsilon=share, delta=delta / 2, max_partitions=3, max_per_partition=1)
    r2 = q2.releases["patients"]
    truth2 = tables.bound_contributions(data["diagnosis"], data["patient"], max_partitions=3,
                                        rng=rng)
    _report(out, "ben (SQL): patients per diagnosis code (codes chosen privately), <= 3 "
            "codes per patient", r2, truth2)
    out(f"  {len(r2)} of {int((truth2[1] > 0).sum())} codes published (threshold "
        f"{r2.threshold}: a code held by one patient is published with probability "
        f"<= {delta / 2:g})")

    # 3. ana, in SQL: mean length of stay per district
    q3 = "SELECT district, AVG(stay) AS stay FROM visits GROUP BY district"
    r3 = ana.sql(q3, epsilon=share, max_partitions=1).releases["stay"]
    k3, c3, s3 = tables.bound_contributions(data["district"], data["patient"],
                                            max_per_partition=3,
                                            values=np.clip(data["stay"], 0, 30), rng=rng)
    _report(out, "ana (SQL): mean length of stay (days) per district, clamped to [0, 30]",
            r3, (k3, s3 / np.maximum(c3, 1), None))

    spent = budget.spent()
    rem = budget.remaining()
    out("")
    out(f"privacy spent: {len(budget.history())} releases, epsilon {spent.epsilon:.4g}, "
        f"delta {spent.delta:.3g}; left: epsilon {rem.epsilon:.4g}, delta {rem.delta:.3g}")
    t = time.perf_counter()
    again = ben.sql(q3, epsilon=share, max_partitions=1).releases["stay"]
    same = again.values.tobytes() == r3.values.tobytes()
    out(f"ben asks ana's query again: answered from the result cache in "
        f"{1000 * (time.perf_counter() - t):.1f} ms, {'the same' if same else 'OTHER'} "
        f"numbers, no new charge (spent epsilon still {budget.spent().epsilon:.4g}); a "
        "fresh noisy answer would let analysts average the noise away")
    try:
        ben.count("diagnosis", epsilon=2 * share, delta=delta / 2, max_partitions=3)
        out("ERROR: the overspend was not refused")
    except dpfast.BudgetExceededError as exc:
        out(f"ben's next query (epsilon {2 * share:g}) refused before any noise was drawn: "
            f"{type(exc).__name__}: {exc}")
    out("")
    out("usage report:")
    usage = session.usage()
    for line in usage.lines("analyst") + usage.lines("query")[2:]:
        out(f"  {line}")
    out("")
    ahead.join()
    if cells > 0:
        throughput(cells, out)
    out(f"total demo time {time.perf_counter() - t0:.1f} s")


def _report(out: Callable[[str], None], title: str, rel: Any,
            truth: tuple[Any, np.ndarray, Any]) -> None:
    from dpfast.budget.display import privacy_text

    keys, values, _ = truth
    if isinstance(keys, tuple):
        tmap = dict(zip(zip(*(k.tolist() for k in keys)), values.tolist()))
    else:
        tmap = dict(zip(keys.tolist(), values.tolist()))
    acc = rel.accuracy(tmap)
    out(f"{title}:")
    out(f"  privacy spent: {privacy_text(rel.event)}")
    for line in str(acc).splitlines():
        out(f"  {line}")


HELP = "release tables from synthetic raw records under a privacy budget, with accuracy and speed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--people", type=int, default=200_000,
                        help="number of synthetic patients (default: 200,000)")
    parser.add_argument("--cells", type=int, default=10_000_000,
                        help="cells for the sampler throughput lines; 0 skips them "
                             "(default: 10,000,000)")
    parser.add_argument("--epsilon", type=float, default=2.0,
                        help="total privacy budget epsilon (default: 2.0)")
    parser.add_argument("--delta", type=float, default=1e-6,
                        help="total privacy budget delta (default: 1e-6)")
    parser.add_argument("--ledger", default=None,
                        help="budget ledger file (default: in memory)")


def run(args: argparse.Namespace) -> int:
    from dpfast.cli import CliError

    if args.cells < 0:
        raise CliError("--cells must be >= 0")
    if args.people < 100:
        raise CliError("--people must be at least 100")
    if not (args.epsilon > 0 and args.epsilon < float("inf")):
        raise CliError("--epsilon must be a positive finite number")
    if not (0 < args.delta < 1):
        raise CliError("--delta must be in (0, 1) (the diagnosis table selects its keys "
                       "privately)")
    demo(cells=args.cells, epsilon=args.epsilon, delta=args.delta, people=args.people,
         ledger=args.ledger)
    return 0
