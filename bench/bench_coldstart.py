"""Cold start: time from a fresh process with an empty numba cache to a first result.

numba compiles dpfast's kernels on first use and caches them on disk; a newcomer's first
call pays that compilation.  Each case runs in a fresh subprocess with a fresh
``NUMBA_CACHE_DIR`` (as after ``pip install``), and the same snippet again with the cache
just filled (a later run); the ratio cold / warm is what compilation costs.

Run:  python -m pytest bench/bench_coldstart.py --benchmark-only -s
or:   python bench/bench_coldstart.py            (a table of seconds)
or:   python bench/bench_coldstart.py --profile tables.count   (what compiles, how long)
Targets (2-core machine): each first call in ``TARGETED`` <= 10 s, ``dpfast warmup`` <= 60 s
(a first call on a large input also compiles the parallel kernels: the extra case).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest

PRELUDE = "import numpy as np, dpfast; from dpfast import tables; K = bytes(32)\n"
CASES: dict[str, str] = {
    "discrete_laplace": "dpfast.discrete_laplace(np.zeros(10, np.int64), 2.0, rng=K)",
    "tables.count": ("tables.count(np.arange(50) % 3, np.arange(50), epsilon=1.0, "
                     "domain=[0, 1, 2], rng=K)"),
    "tables.mean": ("tables.mean(np.linspace(0, 1, 50), np.arange(50) % 3, np.arange(50), "
                    "bounds=(0.0, 1.0), epsilon=1.0, domain=[0, 1, 2], rng=K)"),
    "topdown": ("tables.topdown(np.array([3, 1, 4, 1]), [np.zeros(4, int), np.array([0, 0, 1, 1]),"
                " np.arange(4)], rho=[0.1, 0.1, 0.1], rng=K)"),
    "histogram": ("dpfast.histogram(np.linspace(0, 1, 50), bins=5, range=(0, 1), epsilon=1.0, "
                  "rng=K)"),
    # from dpfast.tables._keys.SERIAL_ROWS (32,768) rows on, the parallel kernels compile
    "tables.count 10^5 rows": ("tables.count(np.arange(10**5) % 3, np.arange(10**5) // 2, "
                               "epsilon=1.0, domain=[0, 1, 2], rng=K)"),
}
#: the first calls the target is for (small inputs, as a newcomer's first try)
TARGETED = ("discrete_laplace", "tables.count", "tables.mean", "topdown", "histogram")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this tree's dpfast
TARGET_FIRST_S = 10.0
TARGET_WARMUP_S = 60.0


def _run(argv: list[str], cache: str) -> float:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, DPFAST_NO_COMPILE_NOTICE="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=ROOT)
    took = time.perf_counter() - t
    if done.returncode:
        raise RuntimeError(f"{argv[-1]!r} failed:\n{done.stderr}")
    return took


def python_case(name: str) -> list[str]:
    return [sys.executable, "-c", PRELUDE + CASES[name]]


def cold_and_warm(argv: list[str]) -> tuple[float, float]:
    """(seconds with an empty cache, seconds again with the cache it filled)."""
    with tempfile.TemporaryDirectory() as cache:
        cold = _run(argv, cache)
        warm = _run(argv, cache)
    return cold, warm


WARMUP = [sys.executable, "-m", "dpfast", "warmup"]

# Profile of a first call: numba sends "numba:compile" around every compilation (nested
# when a kernel compiles the functions it calls); the listener records each one's CPU
# seconds, inclusive and self (inclusive minus the compilations nested in it).  CPU time
# (compilation is single-threaded) is steadier than wall time on a loaded machine.
PROFILE = """
import json, sys, time
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
        d = ev.data.get("dispatcher")
        f = getattr(d, "py_func", None)
        name = f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}"
        _rows.append((name, len(_stack), took, took - kids, str(ev.data.get("args"))))
event.register("numba:compile", _L())
_t = time.process_time()
"""
PROFILE_END = "\nprint(json.dumps([time.process_time() - _t, _rows]))\n"


def profile(name: str) -> tuple[float, list[tuple[str, int, float, float, str]]]:
    """(CPU seconds of case ``name``'s first call with an empty cache, the compilations:
    (function, nesting depth, inclusive s, self s, argument types) in completion order)."""
    return profile_code(PRELUDE + CASES[name], name)


def profile_code(snippet: str, name: str = "snippet"
                 ) -> tuple[float, list[tuple[str, int, float, float, str]]]:
    """:func:`profile` of any Python ``snippet`` (run in a fresh process, empty cache)."""
    import json

    code = PROFILE + snippet + PROFILE_END
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, DPFAST_NO_COMPILE_NOTICE="1",
                   PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                              text=True, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"{name!r} failed:\n{done.stderr}")
    total, rows = json.loads(done.stdout.strip().splitlines()[-1])
    return total, [tuple(r) for r in rows]


def print_profile(name: str) -> None:  # pragma: no cover - manual table
    total, rows = profile(name)
    print(f"{name}: {total:.1f} CPU s in all; dpfast kernels (self / inclusive CPU s):")
    own = [r for r in rows if r[0].startswith("dpfast.")]
    for fn, depth, incl, self_, _args in own:
        print(f"  {self_:5.2f} {incl:6.2f}  {'  ' * depth}{fn}")
    rest = sum(r[3] for r in rows if not r[0].startswith("dpfast."))
    print(f"  {rest:5.2f}         numba's own helpers (sorting, array constructors, ...)")


@pytest.mark.parametrize("name", list(CASES))
def test_coldstart_first_call(benchmark, report, name: str) -> None:
    cold, warm = benchmark.pedantic(cold_and_warm, args=(python_case(name),), rounds=1,
                                    iterations=1)
    target = f"; target <= {TARGET_FIRST_S:.0f} s cold" if name in TARGETED else ""
    report(f"coldstart {name}", f"{cold:.1f} s cold, {warm:.1f} s cached "
           f"({cold / warm:.1f}x{target})")


def test_coldstart_warmup(benchmark, report) -> None:
    cold, warm = benchmark.pedantic(cold_and_warm, args=(WARMUP,), rounds=1, iterations=1)
    report("coldstart dpfast warmup", f"{cold:.1f} s cold, {warm:.1f} s cached "
           f"({cold / warm:.1f}x; target <= {TARGET_WARMUP_S:.0f} s cold)")


if __name__ == "__main__":  # pragma: no cover - manual table
    if sys.argv[1:2] == ["--profile"]:
        for name in sys.argv[2:] or list(CASES):
            print_profile(name)
        sys.exit(0)
    names = sys.argv[1:] or [*CASES, "warmup"]
    for name in names:
        argv = WARMUP if name == "warmup" else python_case(name)
        cold, warm = cold_and_warm(argv)
        print(f"{name:22s} cold {cold:6.1f} s   cached {warm:5.1f} s", flush=True)
