"""Timing helpers shared by the benchmarks (each bench reports a ratio to a baseline timed
in the same run; these only measure)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def best(fn: Callable[[], object], repeat: int = 5) -> float:
    """Fastest of ``repeat`` calls of ``fn``, in seconds."""
    fastest = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        fastest = min(fastest, time.perf_counter() - t)
    return fastest


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median of ``repeat`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def best_interleaved(fns: Sequence[Callable[[], object]], repeat: int = 7) -> list[float]:
    """Fastest time of each function, the functions taking turns so they see the same load."""
    fastest = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            fastest[i] = min(fastest[i], time.perf_counter() - t)
    return fastest


def interleaved(a: Callable[[], object], b: Callable[[], object], rounds: int = 3,
                repeat: int = 5) -> tuple[float, float]:
    """Fastest times of ``a`` and ``b``, alternating rounds of ``repeat`` calls each, so
    background load hits both alike."""
    ta = tb = float("inf")
    for _ in range(rounds):
        ta = min(ta, best(a, repeat))
        tb = min(tb, best(b, repeat))
    return ta, tb
