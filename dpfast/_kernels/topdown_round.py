"""TopDown's largest-remainder rounding: which children get the units left over.

Private (:mod:`dpfast._kernels.topdown` calls these inside its per-parent kernels).  The
rounding floors every value and gives one more unit to the ``r`` values with the largest
remainders, ties to the lower index: the first ``r`` indices of the stable order
"larger remainder first, then the lower index" (:func:`_before`), which is the order of
``np.argsort(-frac, kind="mergesort")`` (:func:`_argsort_desc` writes it out; the tests
compare).  Only the *set* of those ``r`` indices matters, so it is found by selection,
never by a sort:

* :func:`_select_first`: Wirth's selection on the strict total order (linear expected
  time): the reference, and what resolves the last few candidates;
* :func:`_select_threshold`: a search for the ``r``-th largest remainder by its value:
  counts ``#{frac > t}`` (branch-free, vectorised passes) for thresholds ``t``
  interpolated inside a bracket ``(lo, hi]`` with ``#{frac > lo} >= r > #{frac > hi}``,
  until at most ``CANDIDATES`` remainders lie in the bracket; every index above ``hi`` is
  in the set, and :func:`_wirth` picks the rest among the bracket's few.  The same set as
  :func:`_select_first` (an index above ``hi`` precedes every index of the bracket, which
  precede every index at or below ``lo``), at a fifth of its time on 100 children: a
  selection's data-dependent swaps mispredict about every other branch.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

CANDIDATES = 8  # the bracket is narrowed until it holds at most this many remainders
MAX_NARROW = 32  # at most this many narrowing passes (ties: the rest goes to _wirth)


@nb.njit(cache=True, inline="always")
def _before(frac: np.ndarray, a: np.int64, b: np.int64) -> bool:
    """Index ``a`` goes before ``b``: larger remainder first, then the lower index."""
    return bool(frac[a] > frac[b] or (frac[a] == frac[b] and a < b))


@nb.njit(cache=True)
def _wirth(frac: np.ndarray, idx: np.ndarray, n: int, r: int) -> None:
    """Reorder ``idx[:n]`` (distinct indices into ``frac``) so that ``idx[:r]`` are its
    first ``r`` in the order of :func:`_before`, in some order (Wirth's selection on a
    strict total order: linear expected time)."""
    lo = 0
    hi = n - 1
    kk = r - 1
    while lo < hi:
        x = idx[(lo + hi) >> 1]
        i = lo
        j = hi
        while True:
            while _before(frac, idx[i], x):
                i += 1
            while _before(frac, x, idx[j]):
                j -= 1
            if i <= j:
                t = idx[i]
                idx[i] = idx[j]
                idx[j] = t
                i += 1
                j -= 1
            if i > j:
                break
        if j < kk:
            lo = i
        if kk < i:
            hi = j


@nb.njit(cache=True)
def _select_first(frac: np.ndarray, n: int, r: int, idx: np.ndarray) -> None:
    """``idx[:r]``: the first ``r`` of the indices ``0..n-1`` in the order of
    :func:`_argsort_desc` (larger remainder first, ties by lower index), in some order --
    the same set as ``np.argsort(-frac[:n], kind="mergesort")[:r]`` in linear expected
    time, not a sort: the rounding needs the set only."""
    for i in range(n):
        idx[i] = i
    _wirth(frac, idx, n, r)


@nb.njit(cache=True, inline="always")
def _count_split(frac: np.ndarray, n: int, t: float) -> tuple[int, float, float]:
    """``(#{frac > t}, max{frac <= t}, min{frac > t})`` in one branch-free pass (the
    loop vectorises; -inf / inf for an empty set)."""
    c = 0
    below = -np.inf
    above = np.inf
    for i in range(n):
        f = frac[i]
        up = f > t
        c += up
        below = max(below, -np.inf if up else f)
        above = min(above, f if up else np.inf)
    return c, below, above


@nb.njit(cache=True, inline="always")
def _select_threshold(frac: np.ndarray, n: int, r: int, lo: float, top: float, low: float,
                      idx: np.ndarray, out: np.ndarray) -> None:
    """``out[i] += 1`` for the first ``r`` (``0 < r < n``) indices of ``0..n-1`` in the
    order of :func:`_before` -- the set of :func:`_select_first`.  Given: every
    ``frac > lo``; ``top`` and ``low`` the largest and smallest of them.  ``idx``: scratch
    of ``n``.

    The bracket ``(lo, hi]`` holds the ``r``-th largest remainder, ``hi`` and ``m`` are
    its largest and smallest remainders, ``#{frac > lo} = clo >= r > chi = #{frac > hi}``.
    Each pass counts at a threshold ``t`` in ``[m, hi)`` (interpolated as if the
    remainders were uniform in the bracket) and moves ``lo`` up to ``t`` or ``hi`` down to
    the largest remainder ``<= t``: at least one distinct value leaves the bracket, and
    spread remainders take a few passes, ties (remainders equal in their last bits, as
    when children differ from their parent's share by integers) about one pass per
    distinct value."""
    hi = top
    m = low
    clo = n
    chi = 0
    passes = 0
    while m < hi and clo - chi > CANDIDATES and passes < MAX_NARROW:
        passes += 1
        t = hi - (hi - m) * ((r - chi) / (clo - chi))
        t = max(t, m)
        if not t < hi:
            t = m
        c, below, above = _count_split(frac, n, t)
        if c >= r:
            lo = t
            clo = c
            m = above
        else:
            hi = below
            chi = c
    for i in range(n):
        out[i] += frac[i] > hi
    nc = 0
    for i in range(n):  # the bracket's indices, in increasing order (branch-free append)
        f = frac[i]
        idx[nc] = i
        nc += (f > lo) & (f <= hi)
    q = r - chi  # 1 <= q <= nc
    if q < nc and m < hi:  # (one distinct value left: its first q indices)
        _wirth(frac, idx, nc, q)
    for j in range(q):
        out[idx[j]] += 1


@nb.njit(cache=True, inline="always")
def _round(v: np.ndarray, n: int, target: np.int64, nonneg: bool,
           out: np.ndarray, frac: np.ndarray, idx: np.ndarray) -> None:
    """Largest-remainder rounding: integers ``out[:n]`` with ``|out - v| < 1`` (up to the
    float error of ``sum v = target``), ``sum out = target`` exactly, ``out >= 0`` when
    ``v >= 0`` and ``nonneg``.  Ties go to the lower index (stable sort).  Scratch:
    ``frac`` (n floats), ``idx`` (n ints)."""
    s = np.int64(0)
    fmin = np.inf
    fmax = -np.inf
    for i in range(n):
        f = math.floor(v[i])
        out[i] = np.int64(f)
        fr = v[i] - f
        frac[i] = fr
        fmin = min(fmin, fr)
        fmax = max(fmax, fr)
        s += out[i]
    r = target - s
    repaired = r < 0 or r >= n
    # float error can leave r outside [0, n): repair one unit at a time, smallest change first
    while r < 0:
        best = -1
        for i in range(n):
            if (out[i] > 0 or not nonneg) and (best < 0 or frac[i] < frac[best]):
                best = i
        out[best] -= 1
        frac[best] += 1.0
        r += 1
    while r >= n and n > 0:
        for i in range(n):
            out[i] += 1
            frac[i] -= 1.0
        r -= n
    if r == 0:
        return
    if repaired:  # the repairs moved remainders
        fmin = np.inf
        fmax = -np.inf
        for i in range(n):
            fmin = min(fmin, frac[i])
            fmax = max(fmax, frac[i])
    _select_threshold(frac, n, int(r), fmin - 1.0, fmax, fmin, idx, out)


@nb.njit(cache=True)
def _argsort_desc(frac: np.ndarray, n: int, idx: np.ndarray, tmp: np.ndarray) -> None:
    """``idx[:n]``: the indices ``0..n-1`` by decreasing ``frac``, ties by increasing index
    -- ``np.argsort(-frac[:n], kind="mergesort")`` (a stable sort), in plain loops
    (insertion sort of runs of 16, then bottom-up merges through ``tmp``): the reference
    order the selections are tested against."""
    for i in range(n):
        idx[i] = i
    for s in range(0, n, 16):
        e = min(s + 16, n)
        for i in range(s + 1, e):
            x = idx[i]
            j = i - 1
            while j >= s and _before(frac, x, idx[j]):
                idx[j + 1] = idx[j]
                j -= 1
            idx[j + 1] = x
    width = 16
    while width < n:
        for s in range(0, n, 2 * width):
            i = s
            mid = min(s + width, n)
            end = min(s + 2 * width, n)
            j = mid
            t = s
            while i < mid and j < end:
                if _before(frac, idx[j], idx[i]):
                    tmp[t] = idx[j]
                    j += 1
                else:
                    tmp[t] = idx[i]
                    i += 1
                t += 1
            while i < mid:
                tmp[t] = idx[i]
                i += 1
                t += 1
            while j < end:
                tmp[t] = idx[j]
                j += 1
                t += 1
        for t in range(n):
            idx[t] = tmp[t]
        width *= 2
