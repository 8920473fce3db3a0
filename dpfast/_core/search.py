"""Bounded monotone searches for the calibration loops (noise scales, rho, thresholds).

Every calibration in dpfast looks for the boundary of a monotone predicate on the
positive floats: the smallest noise scale that meets a target, the largest ``rho`` that
implies one.  These helpers bracket it by doubling / halving from a guess and then bisect
geometrically, with every loop bounded: at most :data:`MAX_STEPS` doublings or halvings
(more than the whole float range, ``2^-1074`` to ``2^1024``) and :data:`MAX_BISECT`
bisection steps (a geometric midpoint that equals an end stops it: adjacent floats).  A
predicate that never turns raises ``ValueError`` with the caller's description of what
was asked (``what``), never loops; a non-finite guess (e.g. ``log(1/delta)`` overflowed)
is replaced by 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["MAX_STEPS", "MAX_BISECT", "smallest_true", "largest_true", "smallest_true_int"]

#: doublings or halvings before a bracket search gives up (the float range is 2098 binades)
MAX_STEPS = 2200
#: bisection steps (geometric midpoints; 1e-12 relative needs about 40 from a factor 2)
MAX_BISECT = 200


def _start(guess: float) -> float:
    return guess if math.isfinite(guess) and guess > 0.0 else 1.0


def _mid(lo: float, hi: float) -> float:
    p = lo * hi
    if 1e-300 < p < 1e300:
        return math.sqrt(p)
    return math.sqrt(lo) * math.sqrt(hi)  # lo * hi would overflow / underflow


def _bisect(above: Callable[[float], bool], lo: float, hi: float, rtol: float
            ) -> tuple[float, float]:
    """The bracket ``lo < hi`` (``above(hi)`` true, ``above(lo)`` false) narrowed by
    geometric bisection to ``rtol`` relative, at most :data:`MAX_BISECT` steps (a midpoint
    that equals an end stops it: adjacent floats)."""
    for _ in range(MAX_BISECT):
        if not hi / lo > 1.0 + rtol:
            break
        mid = _mid(lo, hi)
        if not lo < mid < hi:
            break
        if above(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def smallest_true(ok: Callable[[float], bool], guess: float, *, rtol: float, what: str,
                  hi_limit: float = math.inf, lo_limit: float | None = None) -> float:
    """Smallest ``x > 0`` (to ``rtol`` relative; an ``x`` with ``ok(x)`` true is returned)
    for ``ok`` false below the boundary and true above it.

    If ``ok`` holds down to the smallest positive float (or below ``lo_limit``, if given),
    the smallest true value tried is returned (resp. ``ValueError``).  Raises
    ``ValueError`` naming ``what`` when ``ok`` is false up to ``hi_limit`` (or the
    largest float).
    """
    x = _start(guess)
    if ok(x):
        hi, lo = x, x / 2.0
        for _ in range(MAX_STEPS):
            if lo_limit is not None and lo < lo_limit:
                raise ValueError(f"{what}: the target is met for every value down to "
                                 f"{lo_limit:g}")
            if lo == 0.0:
                return hi  # true all the way down
            if not ok(lo):
                break
            hi, lo = lo, lo / 2.0
        else:  # pragma: no cover - 2200 halvings reach 0
            return hi
    else:
        lo, hi = x, x * 2.0
        for _ in range(MAX_STEPS):
            if not (math.isfinite(hi) and hi <= hi_limit):
                raise ValueError(f"{what}: no finite value meets the target "
                                 f"(none up to {min(hi_limit, 1.8e308):.3g})")
            if ok(hi):
                break
            lo, hi = hi, hi * 2.0
        else:  # pragma: no cover - 2200 doublings overflow
            raise ValueError(f"{what}: no finite value meets the target")
    return _bisect(ok, lo, hi, rtol)[1]


def largest_true(ok: Callable[[float], bool], guess: float, *, rtol: float,
                 what: str) -> float:
    """Largest ``x > 0`` (to ``rtol`` relative; an ``x`` with ``ok(x)`` true is returned)
    for ``ok`` true below the boundary and false above it.

    Raises ``ValueError`` naming ``what`` when ``ok`` is false down to the smallest
    positive float (nothing positive meets the target) or true up to the largest.
    """
    x = _start(guess)
    if ok(x):
        lo, hi = x, x * 2.0
        for _ in range(MAX_STEPS):
            if not math.isfinite(hi):
                raise ValueError(f"{what}: the target holds for every value (no boundary)")
            if not ok(hi):
                break
            lo, hi = hi, hi * 2.0
        else:  # pragma: no cover - 2200 doublings overflow
            raise ValueError(f"{what}: the target holds for every value (no boundary)")
    else:
        hi, lo = x, x / 2.0
        for _ in range(MAX_STEPS):
            if lo == 0.0:
                raise ValueError(f"{what}: no positive value meets the target")
            if ok(lo):
                break
            hi, lo = lo, lo / 2.0
        else:  # pragma: no cover - 2200 halvings reach 0
            raise ValueError(f"{what}: no positive value meets the target")
    return _bisect(lambda x: not ok(x), lo, hi, rtol)[0]


def smallest_true_int(ok: Callable[[int], bool], guess: int, *, floor: int, step: int = 1,
                      res: int = 1) -> int:
    """An integer ``hi`` with ``ok(hi)`` true and ``ok`` false at ``hi - res`` or below
    ``floor`` (``ok`` monotone: false below its boundary, true above; false at ``floor``),
    i.e. the smallest true integer to within ``res``: gallop from ``guess`` by doubling
    steps (the first ``step``) to a bracket ``lo < boundary <= hi``, then bisect.  The
    thresholds of private key selection (their tails are computed exactly, so ``ok`` turns
    at a finite integer)."""
    if ok(guess):
        hi, lo = guess, guess - step
        while lo > floor and ok(lo):
            hi, step = lo, step * 2
            lo = hi - step
        lo = max(lo, floor)
    else:
        lo, hi = guess, guess + step
        while not ok(hi):
            lo, step = hi, step * 2
            hi = lo + step
    while hi - lo > res:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi
