"""TopDown kernels: tree structure, grouped sums, per-parent projection and rounding.

Private: the caller (``dpfast.tables._wls`` / ``dpfast.tables.hierarchy``) validates every
argument; these kernels validate nothing and write into the caller's ``out`` arrays.

* :func:`parents`: the parent of every unit of a finer level (one pass over the leaves),
  reporting the first leaf that breaks the nesting.
* :func:`min_max_identity`: an id array's range, and whether it is ``arange`` (leaves
  that are the finest units: then that level needs no parent map, grouping or order).
* :func:`group_sum_int` / :func:`group_sum_float`: ``out[ids[i], c] += x[i, c]``.
* :func:`csr_offsets` / :func:`csr_order`: a counting sort of the children by parent
  (offsets, order) in linear time; no order when the parents are already non-decreasing.
* :func:`split_children`: for every parent, the children's values moved so that they sum
  exactly to the parent's released value -- a weighted projection onto
  ``{c >= 0, sum c = P}`` (Michelot's active-set algorithm, no sort) or a weighted shift
  without the non-negativity constraint -- then (optionally) largest-remainder rounding
  that keeps the sum exact (:mod:`dpfast._kernels.topdown_round`).
* :func:`downward` / :func:`downward_leaf` / :func:`upward_leaf`: the least-squares
  passes' level-sized steps, fused (the numpy expressions' IEEE operations in order).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels import topdown_round as _r
from dpfast._kernels._launch import chunked, guarded


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
def csr_offsets(parent: np.ndarray, n_parent: int, offsets: np.ndarray) -> bool:
    """Children per parent: parent ``g``'s children are ``offsets[g]:offsets[g+1]`` in the
    order of :func:`csr_order` (``offsets`` has ``n_parent + 1`` entries).  Returns
    whether ``parent`` is non-decreasing: then the children of ``g`` are the units
    ``offsets[g] .. offsets[g+1] - 1`` themselves and no order is needed."""
    offsets[:] = 0
    ordered = True
    prev = np.int64(0)
    for i in range(parent.shape[0]):
        p = parent[i]
        offsets[p + 1] += 1
        if p < prev:
            ordered = False
        prev = p
    for g in range(n_parent):
        offsets[g + 1] += offsets[g]
    return ordered


@nb.njit(cache=True)
def csr_order(parent: np.ndarray, offsets: np.ndarray, order: np.ndarray) -> None:
    """Counting sort: children of parent ``g`` are ``order[offsets[g]:offsets[g+1]]`` (in
    increasing index order), ``offsets`` from :func:`csr_offsets`."""
    fill = offsets[:-1].copy()
    for i in range(parent.shape[0]):
        g = parent[i]
        order[fill[g]] = i
        fill[g] += 1


@nb.njit(cache=True, inline="always")
def _project(v: np.ndarray, w: np.ndarray, n: int, target: float, nonneg: bool,
             act: np.ndarray, out: np.ndarray) -> None:
    """``out[:n] <- argmin sum (c - v)^2 / w`` s.t. ``sum c = target`` (and ``c >= 0``).

    Without the sign constraint: ``c = v - lam w``, ``lam = (sum v - target) / sum w``.
    With it (``target >= 0``): ``c = max(0, v - lam w)``; Michelot's active-set iteration
    (each round drops the coordinates that went non-positive; ``lam`` only grows, so a
    dropped coordinate never returns; at least one stays active when ``target > 0``).
    The active coordinates are kept as a list ``act`` in increasing order, and each round
    sums the coordinates it keeps while it filters them: one pass over the active ones per
    round, the same sums (in index order, from 0) as summing the active set afresh."""
    if nonneg and target <= 0.0:
        for i in range(n):
            out[i] = 0.0
        return
    sv = 0.0
    sw = 0.0
    for i in range(n):
        sv += v[i]
        sw += w[i]
    lam = (sv - target) / sw
    if not nonneg:
        for i in range(n):
            out[i] = v[i] - lam * w[i]
        return
    m = 0  # the first round filters all n
    sv = 0.0
    sw = 0.0
    for i in range(n):
        if not v[i] - lam * w[i] <= 0.0:
            act[m] = i
            m += 1
            sv += v[i]
            sw += w[i]
    dropped = m < n
    while dropped and m > 0:
        lam = (sv - target) / sw
        kept = 0
        sv = 0.0
        sw = 0.0
        for t in range(m):
            i = act[t]
            if not v[i] - lam * w[i] <= 0.0:
                act[kept] = i
                kept += 1
                sv += v[i]
                sw += w[i]
        dropped = kept < m
        m = kept
    for i in range(n):
        out[i] = 0.0
    for t in range(m):
        i = act[t]
        c = v[i] - lam * w[i]
        out[i] = c if c > 0.0 else 0.0


@nb.njit(cache=True)
def _split_range(first, end, target, x, w, wc, offsets, order, nonneg, integer, out_f,
                 out_i):
    """:func:`split_children` for parents ``[first, end)``."""
    k = x.shape[1]
    ordered = order.shape[0] == 0
    constant = w.shape[0] == 0
    most = 0  # scratch for the largest family of the range, allocated once
    for g in range(first, end):
        most = max(most, offsets[g + 1] - offsets[g])
    v = np.empty(most, np.float64)
    ww = np.empty(most, np.float64)
    u = np.empty(most, np.float64)
    frac = np.empty(most, np.float64)
    act = np.empty(most, np.int64)
    ri = np.empty(most, np.int64)
    for g in range(first, end):
        a = offsets[g]
        n = offsets[g + 1] - a
        if n == 0:
            continue
        for i in range(n):
            ch = a + i if ordered else order[a + i]
            ww[i] = wc if constant else w[ch]
        for c in range(k):
            for i in range(n):
                v[i] = x[a + i if ordered else order[a + i], c]
            t = target[g, c]
            _project(v, ww, n, t, nonneg, act, u)
            if integer:
                _r._round(u, n, np.int64(t), nonneg, ri, frac, act)
                for i in range(n):
                    out_i[a + i if ordered else order[a + i], c] = ri[i]
            else:
                for i in range(n):
                    out_f[a + i if ordered else order[a + i], c] = u[i]


@nb.njit(cache=True)
def split_children_serial(target, x, w, wc, offsets, order, nonneg, integer, out_f, out_i):
    """:func:`split_children` in one thread (small trees: little to compile)."""
    _split_range(0, offsets.shape[0] - 1, target, x, w, wc, offsets, order, nonneg,
                 integer, out_f, out_i)


@guarded
@nb.njit(cache=True, parallel=True)
def split_children(
    target: np.ndarray,     # (n_parent, k) float64: the parents' released values
    x: np.ndarray,          # (n_child, k) float64: the children's consistent estimates
    w: np.ndarray,          # (n_child,) float64 > 0: weights (WLS variances), or empty:
    wc: float,              # then every child's weight is wc
    offsets: np.ndarray,    # (n_parent + 1,) int64 (csr_offsets)
    order: np.ndarray,      # (n_child,) int64 (csr_order), or empty: parents are ordered
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
        _split_range(b * step, min(n_parent, (b + 1) * step), target, x, w, wc, offsets,
                     order, nonneg, integer, out_f, out_i)


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


@guarded
@nb.njit(cache=True, parallel=True)
def downward_leaf(par, y, var, W, S, xp, Fp, x_out, F_out):
    """:func:`downward` for the finest level, whose subtree variances are all ``var`` and
    whose estimates from below are its int64 measurements ``y`` (read as float64: exact
    below 2^53): the same operations, without the level's float copy of ``y`` and its
    array of ``var``."""
    n = y.shape[0]
    k = y.shape[1]
    for i in nb.prange(n):
        p = par[i]
        g = var / W[p]
        for c in range(k):
            x_out[i, c] = np.float64(y[i, c]) + g * (xp[p, c] - S[p, c])
        F_out[i] = var - var * g + g * g * Fp[p]


@nb.njit(cache=True)
def upward_leaf(par, y, var, s, w):
    """The finest level's upward step in one pass: ``s[par[i], c] += float64(y[i, c])``
    and ``w[par[i]] += var`` in index order (the bits of ``group_sum_float`` of the float
    copy and of ``np.bincount(par, weights=full(var))``); ``s`` and ``w`` start at 0."""
    k = y.shape[1]
    for i in range(par.shape[0]):
        p = par[i]
        for c in range(k):
            s[p, c] += np.float64(y[i, c])
        w[p] += var


@nb.njit(cache=True)
def min_max_identity(a: np.ndarray) -> tuple[np.int64, np.int64, bool]:
    """``(min, max, a == arange(len(a)))`` of a non-empty int64 array in one pass."""
    lo = a[0]
    hi = a[0]
    ident = True
    for i in range(a.shape[0]):
        x = a[i]
        if x < lo:
            lo = x
        if x > hi:
            hi = x
        if x != i:
            ident = False
    return lo, hi, ident


@nb.njit(cache=True, nogil=True)
def _lattice_miss(h: float, a: float, s: float, w: np.ndarray) -> tuple[float, float]:
    """``sum_z w[z] P(|a z + R| > h)``, ``R ~ N(0, s^2)`` (``s = 0``: ``R = 0``), over
    ``z = 0 .. len(w) - 1`` (``w`` holds ``P(Z = 0)`` and ``2 P(Z = z)`` above), and its
    derivative in ``h`` (0 when ``s = 0``)."""
    m = 0.0
    dm = 0.0
    if s > 0.0:
        r2 = 1.0 / (s * math.sqrt(2.0))
        c = 1.0 / (s * math.sqrt(2.0 * math.pi))
        for z in range(w.shape[0]):
            u = (h - a * z) * r2
            v = (h + a * z) * r2
            m += w[z] * 0.5 * (math.erfc(u) + math.erfc(v))
            dm -= w[z] * c * (math.exp(-u * u) + math.exp(-v * v))
    else:
        for z in range(w.shape[0]):
            if h - a * z < 0.0:
                m += w[z]
    return m, dm


#: the bracket of :func:`lattice_halfwidth` ends at 2^-36 of the bound
LATTICE_TOL = 2.0 ** -36


@nb.njit(cache=True, nogil=True)
def _lattice_solve(a: float, s: float, hi: float, w: np.ndarray, alpha: float,
                   x0: float) -> float:
    """The smallest ``h`` in ``(0, hi]`` with ``miss(h) <= alpha`` (to ``alpha * 1e-12`` in
    ``miss`` or ``LATTICE_TOL * hi`` in ``h``, from the safe side): Newton's steps from
    ``x0``, kept inside the bracket ``miss(lo) > alpha >= miss(up)``, bisection where a
    step leaves it (a near-lattice ``miss`` is a staircase)."""
    lo = 0.0
    up = hi
    x = x0 if 0.0 < x0 < hi else 0.5 * hi
    for _ in range(200):
        m, dm = _lattice_miss(x, a, s, w)
        if m <= alpha:
            up = x
            if alpha - m <= alpha * 1e-12:
                return up
        else:
            lo = x
        if up - lo <= hi * LATTICE_TOL:
            return up
        xn = -1.0
        if dm < 0.0:
            step = (m - alpha) / dm  # < 0 from the unsafe side: xn > x
            if m > alpha and -step < hi * 1e-12:  # converged from below: cross over
                step = -hi * 1e-12
            xn = x - step
        if not (lo < xn < up):
            xn = 0.5 * (lo + up)
        x = xn
    return up


@nb.njit(cache=True, nogil=True)
def _lattice_rows(first, end, a, s, hi, w, alpha, x0, out):
    for i in range(first, end):
        out[i] = _lattice_solve(a[i], s[i], hi[i], w, alpha, x0[i])


def _entries(args):
    return args[0].shape[0]


def _entry_range(args, first, end):
    return (first, end, *args)


_LATTICE = chunked(_lattice_rows, _entries, _entry_range)


def lattice_halfwidth(a: np.ndarray, s: np.ndarray, hi: np.ndarray, w: np.ndarray,
                      alpha: float, x0: np.ndarray, out: np.ndarray) -> None:
    """Per entry, the smallest ``h`` in ``(0, hi]`` with ``_lattice_miss(h, a, s, w) <=
    alpha`` (:func:`_lattice_solve` from ``x0``; ``hi`` must satisfy it).  On
    ``numba.get_num_threads()`` threads over ranges of entries
    (:func:`dpfast._kernels._launch.chunked`; each entry's result is its own)."""
    _LATTICE(a, s, hi, w, float(alpha), x0, out)
