"""Timing helpers shared by the benchmarks (each bench reports a ratio to a baseline timed
in the same run; these only measure).  A ratio is always the median of interleaved pairs
with its spread (:func:`pairs`, :func:`paired`), never a best-of figure: the fastest run
of each side is an optimistic outlier on a shared host."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence


class Pairs:
    """Times of several functions measured in interleaved rounds: in each round every
    function runs once, in an order that alternates from round to round, so drift and
    background load hit all alike.  Ratios are taken per round (a *pair*) and summarised
    by their median and spread -- never by the fastest run."""

    def __init__(self, times: list[list[float]]) -> None:
        self.times = times  # times[f][r]: function f in round r, seconds

    def median(self, f: int) -> float:
        """Median seconds of function ``f``."""
        return statistics.median(self.times[f])

    def ratios(self, num: int, den: int) -> list[float]:
        """Per-round ratios ``time(num) / time(den)`` (how many times faster ``den`` is)."""
        return sorted(a / max(b, 1e-12) for a, b in zip(self.times[num], self.times[den]))

    def ratio(self, num: int, den: int) -> float:
        """Median of the per-round ratios ``time(num) / time(den)``."""
        return statistics.median(self.ratios(num, den))

    def spread(self, num: int, den: int) -> tuple[float, float]:
        """(min, max) of the per-round ratios."""
        r = self.ratios(num, den)
        return r[0], r[-1]

    def describe(self, num: int, den: int) -> str:
        """``"2.31x (pairs 2.10-2.52, 7 rounds)"``: median and min-max of the pair ratios."""
        lo, hi = self.spread(num, den)
        return (f"{self.ratio(num, den):.2f}x (pairs {lo:.2f}-{hi:.2f}, "
                f"{len(self.times[num])} rounds)")

    def info(self, num: int, den: int, name: str) -> dict[str, float]:
        """pytest-benchmark ``extra_info`` fields: median ratio and its min / max."""
        lo, hi = self.spread(num, den)
        return {name: self.ratio(num, den), f"{name}_min": lo, f"{name}_max": hi}


def pairs(fns: Sequence[Callable[[], object]], repeat: int = 7) -> Pairs:
    """Time each function ``repeat`` times in interleaved rounds (see :class:`Pairs`)."""
    times: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for r in range(repeat):
        for i in (order if r % 2 == 0 else order[::-1]):
            t = time.perf_counter()
            fns[i]()
            times[i].append(time.perf_counter() - t)
    return Pairs(times)


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median of ``repeat`` calls of ``fn``, in seconds."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    """(process CPU seconds, wall seconds) of ``repeat`` calls of ``fn``, after a garbage
    collection (untimed: neither side pays for the other's garbage)."""
    gc.collect()
    c, w = time.process_time(), time.perf_counter()
    for _ in range(repeat):
        fn()
    return time.process_time() - c, time.perf_counter() - w


def paired(plain: Callable[[], object], installed: Callable[[], object],
           context: Callable[[], object], *, repeat: int | None = None, warm: bool = True,
           target_s: float = 0.005, budget_s: float = 5.0, min_pairs: int = 15,
           max_pairs: int = 400) -> dict[str, float]:
    """The same work without and with a backend installed, measured in interleaved pairs.

    Each pair times ``repeat`` calls of ``plain`` and ``repeat`` calls of ``installed``
    (inside ``with context():``, entered and left outside the timing), in alternating order
    (plain first in even pairs, installed first in odd ones), so that drift and background
    load hit both sides alike; short runs (``target_s`` each, ``repeat`` defaults to that)
    and many pairs (as many as ``budget_s`` allows, within ``min_pairs`` .. ``max_pairs``)
    keep the two sides of a pair close in time.  With ``warm``, each side makes one untimed
    call before its timed ones (the installed side after entering ``context``: an
    installation's first call fills its per-installation caches; the plain side gets the
    same warm-up).  Times are process CPU time (``time.process_time``: the work this process
    did, which other processes' load on a shared host changes much less than wall time) and
    wall time.  The objects alive at the start are frozen out of the garbage collector
    (``gc.freeze``) and each run starts after an untimed collection, so a run pays for the
    collections its own objects cause -- not for the other side's garbage or the test
    process's heap.

    Returns the medians of the per-pair ratios plain / installed (``ratio``: CPU time;
    ``wall_ratio``), their quartiles (``ratio_q1``, ``ratio_q3``), and the median CPU
    seconds per call of each side (``plain_s``, ``installed_s``).
    """
    if repeat is None:
        plain()
        c = min(_timed(plain, 1)[0] for _ in range(3))
        repeat = max(1, round(target_s / max(c, 1e-7)))
    cpu: list[tuple[float, float]] = []
    wall: list[tuple[float, float]] = []
    gc.collect()
    gc.freeze()
    start = time.perf_counter()
    try:
        k = 0
        while k < max_pairs and (k < min_pairs or time.perf_counter() - start < budget_s):
            out: dict[int, tuple[float, float]] = {}
            for side in ((0, 1) if k % 2 == 0 else (1, 0)):
                if side == 0:
                    if warm:
                        plain()
                    out[0] = _timed(plain, repeat)
                else:
                    with context():  # type: ignore[attr-defined]
                        if warm:
                            installed()
                        out[1] = _timed(installed, repeat)
            cpu.append((out[0][0], out[1][0]))
            wall.append((out[0][1], out[1][1]))
            k += 1
    finally:
        gc.unfreeze()
    ratios = sorted(p / max(i, 1e-9) for p, i in cpu)
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    return {"ratio": statistics.median(ratios), "ratio_q1": q1, "ratio_q3": q3,
            "wall_ratio": statistics.median(p / max(i, 1e-9) for p, i in wall),
            "plain_s": statistics.median(p for p, _ in cpu) / repeat,
            "installed_s": statistics.median(i for _, i in cpu) / repeat,
            "repeat": float(repeat), "pairs": float(len(cpu))}


def extra_info(m: dict[str, float]) -> dict[str, float]:
    """The pytest-benchmark ``extra_info`` fields of a :func:`paired` result."""
    return {"installed_ms": m["installed_s"] * 1e3, "plain_ms": m["plain_s"] * 1e3,
            "ratio": m["ratio"], "ratio_q1": m["ratio_q1"], "wall_ratio": m["wall_ratio"]}


def describe(m: dict[str, float], unit: str = "ms") -> str:
    """One line for a :func:`paired` result."""
    scale = {"ms": 1e3, "us": 1e6}[unit]
    return (f"installed {m['installed_s'] * scale:.3f} {unit} vs plain "
            f"{m['plain_s'] * scale:.3f} {unit} (CPU, median): {m['ratio']:.2f}x "
            f"[pair quartiles {m['ratio_q1']:.2f}-{m['ratio_q3']:.2f}, wall "
            f"{m['wall_ratio']:.2f}x, {int(m['pairs'])} pairs of {int(m['repeat'])} calls]")
