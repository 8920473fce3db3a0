"""Cold start as a newcomer meets it: the README quick start and ``dpfast demo``, wall time.

Each run starts a fresh process with a fresh, empty numba cache (``NUMBA_CACHE_DIR`` pointed
at a new temporary directory), as right after ``pip install``, and times it on the wall
clock; the same command again with the cache it filled shows what compilation costs.  The
figures are medians over ``--runs`` runs with their range (min-max), next to the host (CPU
model, SIMD level, cores) and its load average before and after: on a shared, loaded
machine they are not the quiet-machine figures the targets are for, so the CPU seconds
(user + sys) of each run are printed too (compilation is single-threaded: they change
little with the load).

    python bench/coldstart.py                       # this checkout (PYTHONPATH), 3 runs
    python bench/coldstart.py --venv /tmp/v         # an installed dpfast (e.g. a fresh venv)
    python bench/coldstart.py --make-venv /tmp/v    # create it first: pip install '.[demo]'
    python bench/coldstart.py --profile             # what compiles in each, how long
    python bench/coldstart.py --calls [NAME ...]    # first calls one by one, and warmup
    python bench/coldstart.py --profile-call NAME   # what one first call compiles

Targets (issue 41; a quiet 2-core machine): the quick start <= 10 s, ``dpfast demo`` <= 30 s;
each first call of ``TARGETED`` <= 10 s, ``dpfast warmup`` <= 60 s.
Nothing here is a test: it prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TARGETS = {"quick start": 10.0, "dpfast demo": 30.0}

# numba's "numba:compile" event brackets each compilation (nested when a kernel compiles its
# callees): per dpfast kernel, CPU seconds inclusive and self (inclusive minus nested ones);
# compilation is single-threaded, so CPU time is what it takes on an idle core, and it is
# steadier than wall time on a loaded machine
PROFILE_HEAD = """
import atexit, json, sys, time
from numba.core import event
_stack, _rows = [], []
class _L(event.Listener):
    def on_start(self, ev):
        _stack.append([time.process_time(), 0.0])
    def on_end(self, ev):
        t0, kids = _stack.pop()
        took = time.process_time() - t0
        if _stack:
            _stack[-1][1] += took
        f = getattr(ev.data.get("dispatcher"), "py_func", None)
        _rows.append((f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}",
                      len(_stack), took, took - kids, str(ev.data.get("args"))))
event.register("numba:compile", _L())
atexit.register(lambda: sys.stderr.write("PROFILE " + json.dumps(_rows) + "\\n"))
"""

# first calls of a newcomer's first try (small inputs), each timed alone (``--calls``)
PRELUDE = "import numpy as np, dpfast; from dpfast import tables; K = bytes(32)\n"
CASES: dict[str, str] = {
    "discrete_laplace": "dpfast.discrete_laplace(np.zeros(10, np.int64), 2.0, rng=K)",
    "tables.count": ("tables.count(np.arange(50) % 3, np.arange(50), epsilon=1.0, "
                     "domain=[0, 1, 2], rng=K)"),
    "tables.mean": ("tables.mean(np.linspace(0, 1, 50), np.arange(50) % 3, np.arange(50), "
                    "bounds=(0.0, 1.0), epsilon=1.0, domain=[0, 1, 2], rng=K)"),
    "topdown": ("tables.topdown(np.array([3, 1, 4, 1]), [np.zeros(4, int), "
                "np.array([0, 0, 1, 1]), np.arange(4)], rho=[0.1, 0.1, 0.1], rng=K)"),
    "histogram": ("dpfast.histogram(np.linspace(0, 1, 50), bins=5, range=(0, 1), "
                  "epsilon=1.0, rng=K)"),
    # from dpfast.tables._keys.SERIAL_ROWS (32,768) rows on, the threaded kernels run
    "tables.count 10^5 rows": ("tables.count(np.arange(10**5) % 3, np.arange(10**5) // 2, "
                               "epsilon=1.0, domain=[0, 1, 2], rng=K)"),
}
#: the first calls the 10 s target is for (small inputs, as a newcomer's first try)
TARGETED = ("discrete_laplace", "tables.count", "tables.mean", "topdown", "histogram")
TARGET_FIRST_S = 10.0
TARGET_WARMUP_S = 60.0


def quick_start_code() -> str:
    """The README's first Python block (the quick start), as written."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", readme, re.S | re.M)
    if not blocks:
        raise SystemExit("README.md has no ```python block")
    return blocks[0]


def host(python: str, env: dict[str, str]) -> str:
    """CPU model, SIMD flags, dpfast's ChaCha20 path (its SIMD level), cores, Python."""
    model, flags = "?", []
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    have = set(line.split(":", 1)[1].split())
                    flags = [f for f in ("sse2", "avx2", "avx512f", "avx512bw") if f in have]
    except OSError:
        pass
    code = ("import platform, dpfast\nfrom dpfast import _native\n"
            "print(_native.simd_level(), dpfast.__version__, dpfast.__file__, "
            "platform.python_version())")
    with tempfile.TemporaryDirectory() as cwd:  # not this checkout's dpfast by accident
        done = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True,
                              cwd=cwd)
    level, version, where, py = (done.stdout.split() + ["?"] * 4)[:4]
    name = {"3": "AVX-512", "2": "AVX2", "1": "portable"}.get(level, level)
    return (f"host: {model}; SIMD flags {' '.join(flags) or '?'}; dpfast ChaCha20 path "
            f"{name}; {os.cpu_count()} CPUs; Python {py}\n"
            f"dpfast {version} from {where}")


def load() -> str:
    try:
        return " ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "?"


def make_venv(path: str) -> float:
    """A fresh venv at ``path`` with this checkout installed with the demo extra (the
    README's main-job install); returns its wall seconds."""
    if os.path.exists(path):
        shutil.rmtree(path)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", path], check=True)
    subprocess.run([os.path.join(path, "bin", "pip"), "install", "-q", f"{ROOT}[demo]"],
                   check=True)
    return time.perf_counter() - t


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def run_once(argv: list[str], env: dict[str, str], cache: str, cwd: str
             ) -> tuple[float, str, float]:
    """(wall seconds, stderr, CPU seconds of the process) of one run."""
    full = dict(env, NUMBA_CACHE_DIR=cache)
    cpu = _children_cpu()
    t = time.perf_counter()
    done = subprocess.run(argv, env=full, capture_output=True, text=True, cwd=cwd)
    took = time.perf_counter() - t
    if done.returncode:
        raise SystemExit(f"{' '.join(argv[:3])} failed:\n{done.stderr[-3000:]}")
    return took, done.stderr, _children_cpu() - cpu


def measure(name: str, argv: list[str], env: dict[str, str], runs: int) -> dict[str, object]:
    """``runs`` cold runs (each with a new empty cache) and, after each, a cached run."""
    cold, warm, cpu = [], [], []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="dpfast-numba-") as cache, \
                tempfile.TemporaryDirectory(prefix="dpfast-cwd-") as cwd:
            took, _, used = run_once(argv, env, cache, cwd)
            cold.append(took)
            cpu.append(used)
            warm.append(run_once(argv, env, cache, cwd)[0])
    return {"name": name, "cold": cold, "cold_cpu": cpu, "warm": warm}


def checkout_env() -> dict[str, str]:
    """The environment of a run of this checkout's dpfast (no cache or notice overrides)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "DPFAST_NO_COMPILE_NOTICE")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def profile_run(argv: list[str], env: dict[str, str]
                ) -> tuple[float, float, list[tuple[str, int, float, float, str]]]:
    """One cold run (fresh cache) of ``argv`` with a listener on numba's compile events:
    (wall s, CPU s of the process, the compilations as (function, nesting depth,
    inclusive CPU s, self CPU s, argument types) in completion order)."""
    if argv[1] == "-c":
        argv = [argv[0], "-c", PROFILE_HEAD + argv[2]]
    else:  # python -m dpfast demo: run the CLI inside the profiled interpreter
        argv = [argv[0], "-c", PROFILE_HEAD + "import sys\nfrom dpfast.cli import main\n"
                "sys.exit(main(sys.argv[1:]))", *argv[3:]]
    with tempfile.TemporaryDirectory(prefix="dpfast-numba-") as cache, \
            tempfile.TemporaryDirectory(prefix="dpfast-cwd-") as cwd:
        took, err, used = run_once(argv, env, cache, cwd)
    rows = next((json.loads(line[8:]) for line in err.splitlines()
                 if line.startswith("PROFILE ")), [])
    return took, used, [tuple(r) for r in rows]


def profile_code(snippet: str, env: dict[str, str] | None = None
                 ) -> tuple[float, list[tuple[str, int, float, float, str]]]:
    """(CPU s, compilations) of a Python ``snippet`` run cold (see :func:`profile_run`)."""
    _, used, rows = profile_run([sys.executable, "-c", snippet], env or checkout_env())
    return used, rows


def profile(name: str, argv: list[str], env: dict[str, str]) -> None:
    """One cold run with a listener on numba's compile events: the dpfast kernels that
    compiled, by self CPU time (with their argument types), and the rest of the
    process's CPU time."""
    took, used, rows = profile_run(argv, env)
    total_self = sum(r[3] for r in rows)
    ours = sorted((r for r in rows if r[0].startswith("dpfast.")), key=lambda r: -r[3])
    print(f"\n{name}: {took:.1f} s wall, {used:.1f} s CPU; {len(ours)} dpfast kernels compiled "
          f"({sum(r[3] for r in ours):.1f} CPU s self), numba's own helpers "
          f"{total_self - sum(r[3] for r in ours):.1f} CPU s, the rest (imports, data, noise) "
          f"{used - total_self:.1f} CPU s")
    for fn, depth, incl, self_s, args in ours[:25]:
        print(f"  {self_s:6.2f} CPU s self ({incl:5.2f} incl.)  {'  ' * depth}"
              f"{fn.removeprefix('dpfast._kernels.')} {args[:70]}")
    if len(ours) > 25:
        print(f"  ... {len(ours) - 25} more, {sum(r[3] for r in ours[25:]):.2f} CPU s")


def first_calls(names: list[str], python: str, env: dict[str, str]) -> None:
    """Each first call of ``CASES`` (and ``warmup``: ``dpfast warmup``) in a fresh
    process, cold (empty cache) and cached, wall and CPU seconds."""
    for name in names or [*CASES, "warmup"]:
        argv = ([python, "-m", "dpfast", "warmup"] if name == "warmup"
                else [python, "-c", PRELUDE + CASES[name]])
        quiet = dict(env, DPFAST_NO_COMPILE_NOTICE="1")
        with tempfile.TemporaryDirectory(prefix="dpfast-numba-") as cache, \
                tempfile.TemporaryDirectory(prefix="dpfast-cwd-") as cwd:
            cold, _, cpu = run_once(argv, quiet, cache, cwd)
            warm = run_once(argv, quiet, cache, cwd)[0]
        target = (TARGET_WARMUP_S if name == "warmup"
                  else TARGET_FIRST_S if name in TARGETED else None)
        print(f"{name:24s} cold {cold:6.1f} s wall, {cpu:5.1f} s CPU; cached {warm:5.1f} s"
              + (f" (target <= {target:.0f} s cold)" if target else ""), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="cold runs per command (default 3)")
    ap.add_argument("--venv", help="use the dpfast installed in this venv (not the checkout)")
    ap.add_argument("--make-venv", metavar="PATH",
                    help="create a fresh venv at PATH with '.[demo]' first, and use it")
    ap.add_argument("--only", choices=["quick", "demo"], help="one of the two commands")
    ap.add_argument("--profile", action="store_true",
                    help="one cold run each with the kernels that compile and their times")
    ap.add_argument("--json", metavar="FILE", help="write the figures as JSON")
    ap.add_argument("--calls", nargs="*", metavar="NAME", choices=[*CASES, "warmup"],
                    help="time first calls one by one instead (all of them, and dpfast "
                         "warmup, when no NAME is given)")
    ap.add_argument("--profile-call", metavar="NAME", choices=list(CASES),
                    help="what one first call compiles, and how long")
    args = ap.parse_args()
    env = checkout_env()
    if args.make_venv:
        took = make_venv(args.make_venv)
        print(f"fresh venv {args.make_venv}: pip install '.[demo]' took {took:.0f} s wall")
        args.venv = args.make_venv
    if args.venv:
        python = os.path.join(args.venv, "bin", "python")
        env.pop("PYTHONPATH", None)
    else:
        python = sys.executable
    commands = {"quick start": [python, "-c", quick_start_code()],
                "dpfast demo": [python, "-m", "dpfast", "demo"]}
    if args.only:
        commands = {k: v for k, v in commands.items() if k.startswith(
            "quick" if args.only == "quick" else "dpfast")}
    print(host(python, env))
    print(f"load average before: {load()} (1, 5, 15 min)")
    if args.calls is not None:
        first_calls(args.calls, python, env)
        print(f"load average after: {load()}")
        return
    if args.profile_call:
        profile(args.profile_call, [python, "-c", PRELUDE + CASES[args.profile_call]], env)
        print(f"load average after: {load()}")
        return
    if args.profile:
        for name, argv in commands.items():
            profile(name, argv, env)
        print(f"load average after: {load()}")
        return
    results = []
    for name, argv in commands.items():
        res = measure(name, argv, env, args.runs)
        results.append(res)
        cold, warm, cpu = res["cold"], res["warm"], res["cold_cpu"]
        assert isinstance(cold, list) and isinstance(warm, list) and isinstance(cpu, list)
        print(f"{name:12s} cold {statistics.median(cold):6.1f} s wall (min {min(cold):.1f}, "
              f"max {max(cold):.1f}, {len(cold)} runs; target <= {TARGETS[name]:.0f} s), "
              f"{statistics.median(cpu):.1f} s CPU; cached {statistics.median(warm):5.1f} s "
              "wall", flush=True)
    print(f"load average after: {load()} (figures on a loaded machine are not quiet-machine "
          "figures)")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"load_after": load(),
                                                       "results": results}, indent=2))


if __name__ == "__main__":
    main()
