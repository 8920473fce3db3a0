"""TopDown kernels: tree structure, grouped sums, per-parent projection and rounding.

Private: the caller (``dpfast.tables._wls`` / ``dpfast.tables.hierarchy``) validates every
argument; these kernels validate nothing and write into the caller's ``out`` arrays.

* :func:`parents`: the parent of every unit of a finer level (one pass over the leaves),
  reporting the first leaf that breaks the nesting.
* :func:`group_sum_int` / :func:`group_sum_float`: ``out[ids[i], c] += x[i, c]``.
* :func:`csr`: a counting sort of the children by parent (offsets, order) in linear time.
* :func:`split_children`: for every parent, the children's values moved so that they sum
  exactly to the parent's released value -- a weighted projection onto
  ``{c >= 0, sum c = P}`` (Michelot's active-set algorithm, no sort) or a weighted shift
  without the non-negativity constraint -- then (optionally) largest-remainder rounding
  that keeps the sum exact.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded


@nb.njit(cache=True)
def parents(child: np.ndarray, parent: np.ndarray, out: np.ndarray) -> int:
    """``out[child[i]] = parent[i]``; returns the first ``i`` where that contradicts an
    earlier leaf (a unit with two parents), else -1.  ``out`` starts filled with -1."""
    for i in range(child.shape[0]):
        c = child[i]
        p = parent[i]
        q = out[c]
        if q < 0:
            out[c] = p
        elif q != p:
            return i
    return -1


@nb.njit(cache=True)
def group_sum_int(ids: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out[ids[i], :] += x[i, :]`` for int64 arrays (no overflow possible: checked by
    the caller from the total)."""
    k = x.shape[1]
    for i in range(ids.shape[0]):
        g = ids[i]
        for c in range(k):
            out[g, c] += x[i, c]


@nb.njit(cache=True)
def group_sum_float(ids: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out[ids[i], :] += x[i, :]`` for float64 arrays."""
    k = x.shape[1]
    for i in range(ids.shape[0]):
        g = ids[i]
        for c in range(k):
            out[g, c] += x[i, c]


@nb.njit(cache=True)
def csr(parent: np.ndarray, n_parent: int, offsets: np.ndarray, order: np.ndarray) -> None:
    """Counting sort: children of parent ``g`` are ``order[offsets[g]:offsets[g+1]]``
    (in increasing index order).  ``offsets`` has ``n_parent + 1`` entries."""
    offsets[:] = 0
    for i in range(parent.shape[0]):
        offsets[parent[i] + 1] += 1
    for g in range(n_parent):
        offsets[g + 1] += offsets[g]
    fill = offsets[:-1].copy()
    for i in range(parent.shape[0]):
        g = parent[i]
        order[fill[g]] = i
        fill[g] += 1


@nb.njit(cache=True, inline="always")
def _project(v: np.ndarray, w: np.ndarray, n: int, target: float, nonneg: bool,
             active: np.ndarray) -> None:
    """In place: ``v <- argmin sum (c - v)^2 / w`` s.t. ``sum c = target`` (and ``c >= 0``).

    Without the sign constraint: ``c = v - lam w``, ``lam = (sum v - target) / sum w``.
    With it (``target >= 0``): ``c = max(0, v - lam w)``; Michelot's active-set iteration
    (each round drops the coordinates that went non-positive; ``lam`` only grows, so a
    dropped coordinate never returns; at least one stays active when ``target > 0``)."""
    if nonneg and target <= 0.0:
        for i in range(n):
            v[i] = 0.0
        return
    for i in range(n):
        active[i] = True
    lam = 0.0
    while True:
        sv = 0.0
        sw = 0.0
        for i in range(n):
            if active[i]:
                sv += v[i]
                sw += w[i]
        lam = (sv - target) / sw
        if not nonneg:
            break
        changed = False
        for i in range(n):
            if active[i] and v[i] - lam * w[i] <= 0.0:
                active[i] = False
                changed = True
        if not changed:
            break
    for i in range(n):
        if active[i]:
            c = v[i] - lam * w[i]
            v[i] = c if (c > 0.0 or not nonneg) else 0.0
        else:
            v[i] = 0.0


@nb.njit(cache=True, inline="always")
def _round(v: np.ndarray, n: int, target: np.int64, nonneg: bool,
           out: np.ndarray, frac: np.ndarray, idx: np.ndarray, tmp: np.ndarray) -> None:
    """Largest-remainder rounding: integers ``out[:n]`` with ``|out - v| < 1`` (up to the
    float error of ``sum v = target``), ``sum out = target`` exactly, ``out >= 0`` when
    ``v >= 0`` and ``nonneg``.  Ties go to the lower index (stable sort)."""
    s = np.int64(0)
    for i in range(n):
        f = math.floor(v[i])
        out[i] = np.int64(f)
        frac[i] = v[i] - f
        s += out[i]
    r = target - s
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
    _select_first(frac, n, r, idx)
    for j in range(r):
        out[idx[j]] += 1


@nb.njit(cache=True)
def _select_first(frac: np.ndarray, n: int, r: int, idx: np.ndarray) -> None:
    """``idx[:r]``: the first ``r`` of the indices ``0..n-1`` in the order of
    :func:`_argsort_desc` (larger remainder first, ties by lower index), in some order --
    the same set as ``np.argsort(-frac[:n], kind="mergesort")[:r]`` in linear expected
    time (Wirth's selection on a strict total order), not a sort: the rounding needs the
    set only."""
    for i in range(n):
        idx[i] = i
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


@nb.njit(cache=True, inline="always")
def _before(frac: np.ndarray, a: np.int64, b: np.int64) -> bool:
    """Index ``a`` goes before ``b``: larger remainder first, then the lower index."""
    return frac[a] > frac[b] or (frac[a] == frac[b] and a < b)


@nb.njit(cache=True)
def _argsort_desc(frac: np.ndarray, n: int, idx: np.ndarray, tmp: np.ndarray) -> None:
    """``idx[:n]``: the indices ``0..n-1`` by decreasing ``frac``, ties by increasing index
    -- ``np.argsort(-frac[:n], kind="mergesort")`` (a stable sort), in plain loops
    (insertion sort of runs of 16, then bottom-up merges through ``tmp``): far less for
    numba to compile than its sort."""
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


@nb.njit(cache=True)
def _split_range(first, end, target, x, w, offsets, order, nonneg, integer, out_f, out_i):
    """:func:`split_children` for parents ``[first, end)``."""
    k = x.shape[1]
    most = 0  # scratch for the largest family of the range, allocated once
    for g in range(first, end):
        most = max(most, offsets[g + 1] - offsets[g])
    v = np.empty(most, np.float64)
    ww = np.empty(most, np.float64)
    active = np.empty(most, np.bool_)
    frac = np.empty(most, np.float64)
    ri = np.empty(most, np.int64)
    idx = np.empty(most, np.int64)
    tmp = np.empty(most, np.int64)
    for g in range(first, end):
        a = offsets[g]
        n = offsets[g + 1] - a
        if n == 0:
            continue
        for i in range(n):
            ww[i] = w[order[a + i]]
        for c in range(k):
            for i in range(n):
                v[i] = x[order[a + i], c]
            t = target[g, c]
            _project(v, ww, n, t, nonneg, active)
            if integer:
                _round(v, n, np.int64(t), nonneg, ri, frac, idx, tmp)
                for i in range(n):
                    out_i[order[a + i], c] = ri[i]
            else:
                for i in range(n):
                    out_f[order[a + i], c] = v[i]


@nb.njit(cache=True)
def split_children_serial(target, x, w, offsets, order, nonneg, integer, out_f, out_i):
    """:func:`split_children` in one thread (small trees: little to compile)."""
    _split_range(0, offsets.shape[0] - 1, target, x, w, offsets, order, nonneg, integer,
                 out_f, out_i)


@guarded
@nb.njit(cache=True, parallel=True)
def split_children(
    target: np.ndarray,     # (n_parent, k) float64: the parents' released values
    x: np.ndarray,          # (n_child, k) float64: the children's consistent estimates
    w: np.ndarray,          # (n_child,) float64 > 0: weights (WLS variances)
    offsets: np.ndarray,    # (n_parent + 1,) int64
    order: np.ndarray,      # (n_child,) int64
    nonneg: bool,
    integer: bool,
    out_f: np.ndarray,      # (n_child, k) float64 (written when not integer)
    out_i: np.ndarray,      # (n_child, k) int64 (written when integer)
    nthreads: int,
) -> None:
    """For every parent, its children's values projected (and rounded) to sum to the
    parent's value; blocks of parents in parallel (:func:`_split_range`)."""
    n_parent = offsets.shape[0] - 1
    nblk = min(n_parent, 8 * max(1, nthreads)) if n_parent > 0 else 0
    step = (n_parent + nblk - 1) // nblk if nblk else 0
    for b in nb.prange(nblk):
        _split_range(b * step, min(n_parent, (b + 1) * step), target, x, w, offsets, order,
                     nonneg, integer, out_f, out_i)


@guarded
@nb.njit(cache=True, parallel=True)
def downward(par, z, V, W, S, xp, Fp, x_out, F_out):
    """One level of the least-squares downward pass (:mod:`dpfast.tables._wls`), fused:
    ``g = V[i] / W[p]``, ``x_out[i] = z[i] + g (xp[p] - S[p])``,
    ``F_out[i] = V[i] - V[i] g + g g Fp[p]`` for every unit ``i`` of parent ``p = par[i]``
    -- the numpy expressions' operations in their order (IEEE, no contraction), so the
    same bits, without their seven level-sized temporaries."""
    n = z.shape[0]
    k = z.shape[1]
    for i in nb.prange(n):
        p = par[i]
        g = V[i] / W[p]
        for c in range(k):
            x_out[i, c] = z[i, c] + g * (xp[p, c] - S[p, c])
        F_out[i] = V[i] - V[i] * g + g * g * Fp[p]
