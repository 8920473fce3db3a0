"""Private selection kernels: certified Gumbel-max scans and permute-and-flip flips.

Gumbel scores
-------------
Candidate ``i`` of a row gets the score ``a_i + G_i`` with ``a_i = c * (u_i - u_max)``
and ``G_i = -ln(-ln U_i)``, where ``U_i`` is known from one 64-bit word ``m`` as
``U_i in [m / 2^64, (m + 1) / 2^64)``.  :func:`cell_bounds` returns a float interval
``[lo, hi]`` that contains the score for *every* ``U_i`` in that interval and for the
exact rational ``a_i`` (rigorous error bound, see below); the scan keeps, per row
segment, the largest upper bound ``hi1`` (its index and lower bound ``lo1``) and the
second largest ``hi2``.  The winner is certified when ``lo1 > hi2``; otherwise the row is
*pending* and finished exactly in Python (:mod:`dpfast.selection`).

Error bound of :func:`cell_bounds` for ``2^12 <= m < 2^64 - 2^12`` (``U`` in
``[2^-52, 1 - 2^-52]``):

* ``G`` varies over U's interval (half-width ``2^-65`` around the midpoint) by at most
  ``2^-65 / min(U L)`` with ``L = -ln U``; on this range ``U`` and ``L`` change by a
  relative ``<= 2^-12`` over the interval, and the float ``U_f L_f`` is within ``2^-49``
  of the midpoint's, so ``1.02 * 2^-65 / (U_f L_f)`` bounds it.
* ``L`` is computed as ``-log(U)`` (``m < 2^63``) or ``-log1p(-V)`` with the exact
  integer ``V 2^64 = 2^64 - m - 1/2`` (``m >= 2^63``), so its relative error is below
  ``2^-50`` (glibc log/log1p ~1 ulp, one input rounding); ``G = -log(L)`` then has an
  absolute error ``<= 2^-49 + |G| 2^-51 < 2^-44`` (``|G| < 45``).
* ``a_f = fl(c_f * fl(u - u_max))`` with ``c_f`` the rounded ``c``: relative error
  ``< 2^-51``; the additions add ``2^-53`` relative each.  All covered by
  ``(|a_f| + |s|) 2^-50``.

``m < 2^12`` (``U < 2^-52``): ``G <= -ln(52 ln 2) < -3.58``, so the interval is
``[-inf, a + |a| 2^-49 - 3.5]``.  ``m >= 2^64 - 2^12``: the upper bound is unbounded
(``m = 2^64 - 1`` even admits ``U -> 1``), so the row is marked *special* and finished
exactly.  Scores with ``a_f < -10^300`` (or an overflowed ``-inf``) are clamped to
``-10^300`` for the upper bound and get ``lo = -inf``.

Skipping: ``GTABLE[b]`` bounds ``G`` from above for all words whose top 12 bits are
``b`` (``G`` increases with ``U``); a cell whose ``a + GTABLE[b]`` (plus slack) is below
the segment's current ``hi2`` cannot be the winner nor change the certificate, so its
logarithms are never computed.  The outcome does not depend on the skipping, nor on the
order the cells are visited in (``hi1``, ``hi2`` are the two largest upper bounds of the
segment whatever the order; a tie at ``hi1`` leaves the row pending), so each segment is
scanned from its best utility on, wrapping round: the cells near the peak set ``hi2``
first and the rising side before the peak is then mostly skipped (with a peaked utility,
such as a quantile's, about half the logarithms of a left-to-right scan).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded
from dpfast._kernels.chacha import ST_POS
from dpfast._kernels.samplers import bern_exp_decide
from dpfast._kernels.uniform import below

LOW = np.uint64(1 << 12)
HIGH = np.uint64((1 << 64) - (1 << 12))
HALF = np.uint64(1 << 63)
S52 = np.uint64(52)
INV64 = 2.0 ** -64
CLAMP = -1e300
NEG_INF = -np.inf
POS_INF = np.inf

PENDING = 2  # flag value of an undecided permute-and-flip coin


def _gumbel_table() -> np.ndarray:
    """Upper bounds of G(U) = -ln(-ln U) on the 4096 buckets of U's top 12 bits."""
    b = np.arange(4095, dtype=np.float64)
    g = -np.log(-np.log((b + 1.0) / 4096.0))  # G at the bucket's right end (increasing)
    return np.append(g + 1e-9, np.inf)  # last bucket reaches U -> 1: unbounded


GTABLE = _gumbel_table()


@nb.njit(cache=True, _nrt=False, inline="always")
def cell_bounds(m, a):
    """(lo, hi, special): rigorous bounds of a + G(U), U in [m/2^64, (m+1)/2^64).

    ``a`` is the float ``c_f * (u - u_max)``, already clamped to ``>= CLAMP``.
    """
    if m >= HIGH:
        return NEG_INF, POS_INF, True
    if m < LOW:
        return NEG_INF, a + abs(a) * 2.0 ** -49 - 3.5, False
    if m < HALF:
        uf = (np.float64(m) + 0.5) * INV64
        lf = -math.log(uf)
    else:
        v = (np.float64(~m) + 0.5) * INV64
        lf = -math.log1p(-v)
        uf = 1.0 - v
    g = -math.log(lf)
    eg = 0.51 * INV64 / (uf * lf) + 2.0 ** -44
    s = a + g
    e = eg + (abs(a) + abs(s)) * 2.0 ** -50
    return s - e, s + e, False


@nb.njit(cache=True, _nrt=False, inline="always")
def _score_a(c, ui, um):
    a = c * (ui - um)
    if a >= CLAMP:
        return a, False
    return CLAMP, True  # also catches -inf from an overflowed difference


@guarded
@nb.njit(cache=True, parallel=True, _nrt=False)
def em_scan(m, u, umax, n, seg, c, table, j1o, lo1o, hi1o, hi2o, spo):
    """Certified Gumbel-max over segments of rows.

    ``m`` (uint64) and ``u`` (float64) are the flattened (rows, n) words and utilities;
    row ``r`` is split into ``ceil(n / seg)`` segments.  Per segment ``s`` it writes the
    index in the row of the largest upper bound (``j1o``), that cell's lower bound
    (``lo1o``), the largest and second largest upper bounds (``hi1o``, ``hi2o``) and
    whether a cell needs the exact path regardless (``spo``).
    """
    nps = (n + seg - 1) // seg
    nseg = umax.shape[0] * nps
    for s in nb.prange(nseg):
        r = s // nps
        p = s - r * nps
        base = r * n
        i0 = base + p * seg
        i1 = min(i0 + seg, base + n)
        um = umax[r]
        hi1 = NEG_INF
        hi2 = NEG_INF
        lo1 = NEG_INF
        j1 = -1
        special = False
        ib = i0  # the segment's best utility (the first cell at the row's maximum)
        best = u[i0]
        for i in range(i0, i1):
            if u[i] >= um:
                ib = i
                break
            if u[i] > best:
                best = u[i]
                ib = i
        width = i1 - i0
        for k in range(width):  # from the best cell on, rotated (see the module docstring)
            i = ib + k
            if i >= i1:
                i -= width
            w = m[i]
            a, clamped = _score_a(c, u[i], um)
            ub = a + table[np.int64(w >> S52)]
            if ub + (2.0 ** -20 + (abs(a) + 64.0) * 2.0 ** -48) < hi2:
                continue
            lo, hi, sp = cell_bounds(w, a)
            if sp:
                special = True
            if clamped:
                lo = NEG_INF
            if hi > hi1:
                hi2 = hi1
                hi1 = hi
                lo1 = lo
                j1 = i - base
            elif hi > hi2:
                hi2 = hi
        j1o[s] = j1
        lo1o[s] = lo1
        hi1o[s] = hi1
        hi2o[s] = hi2
        spo[s] = special


@nb.njit(cache=True, _nrt=False)
def em_combine(nps, j1o, lo1o, hi1o, hi2o, spo, force, out):
    """Combine the segments of each row: out[r] = certified winner or -1 (pending)."""
    for r in range(out.shape[0]):
        best = -1
        hi1 = NEG_INF
        hi2 = NEG_INF
        lo1 = NEG_INF
        special = False
        for p in range(nps):
            s = r * nps + p
            if spo[s]:
                special = True
            h = hi1o[s]
            if h > hi1:
                hi2 = max(hi2, hi1)
                hi1 = h
                lo1 = lo1o[s]
                best = j1o[s]
            else:
                hi2 = max(hi2, h)
            hi2 = max(hi2, hi2o[s])
        if force or special or best < 0 or not lo1 > hi2:
            out[r] = -1
        else:
            out[r] = best


@nb.njit(cache=True, _nrt=False, inline="always")
def _pf_coin(w, g):
    """1{U < exp(-gamma)} for U in [w/2^64, (w+1)/2^64), |gamma - g| <= g 2^-50; or PENDING.

    Cheap certified tests first: exp(-gamma) <= 1 / (1 + gamma) rejects, and
    exp(-gamma) >= 1 - gamma accepts, without evaluating exp.
    """
    if g > 64.0:  # gamma > 44.4: exp(-gamma) < 2^-64 <= U unless w == 0
        return 0 if w != np.uint64(0) else PENDING
    uf = np.float64(w) * INV64
    if uf * (1.0 - 2.0 ** -52) >= (1.0 / (1.0 + g * (1.0 - 2.0 ** -50))) * (1.0 + 2.0 ** -50):
        return 0
    if (uf + INV64) * (1.0 + 2.0 ** -52) <= (1.0 - g * (1.0 + 2.0 ** -50)) * (1.0 - 2.0 ** -52):
        return 1
    dec = bern_exp_decide(g, g * 2.0 ** -50, w)
    return dec if dec >= 0 else PENDING


@guarded
@nb.njit(cache=True, parallel=True, _nrt=False)
def pf_flips(m, u, umax, n, seg, c, force, flags):
    """Permute-and-flip coins: flags[i] = 1{U_i < exp(-c (u_max - u_i))}, or PENDING.

    ``c * (u_max - u_i)`` is computed with relative error < 2^-51 (bound 2^-50 used);
    the maximum itself flips with probability 1.  Parallel over row segments.
    """
    nps = (n + seg - 1) // seg
    nseg = umax.shape[0] * nps
    for s in nb.prange(nseg):
        r = s // nps
        p = s - r * nps
        i0 = r * n + p * seg
        i1 = min(i0 + seg, r * n + n)
        um = umax[r]
        for i in range(i0, i1):
            d = um - u[i]
            if d == 0.0:
                flags[i] = 1
            elif force:
                flags[i] = PENDING
            else:
                flags[i] = _pf_coin(m[i], c * d)


@nb.njit(cache=True, _nrt=False)
def uniform_spans(buf, st, key, nonces, chunk, n, spans, out):
    """out[i] exactly uniform on [0, spans[i]) (Lemire), cells of one batch of chunks."""
    for c in range(buf.shape[0]):
        lo = c * chunk
        hi = min(lo + chunk, n)
        b = buf[c]
        s = st[c]
        nonce = nonces[c]
        pos = s[ST_POS]
        for i in range(lo, hi):
            out[i], pos = below(b, pos, s, key, nonce, spans[i])
        s[ST_POS] = pos


@nb.njit(cache=True, _nrt=False)
def pf_pick(flags, n, ranks, out):
    """out[r] = column of the ranks[r]-th (0-based) set flag of row r."""
    for r in range(out.shape[0]):
        k = np.int64(ranks[r])
        base = r * n
        res = -1
        for j in range(n):
            if flags[base + j] == 1:
                if k == 0:
                    res = j
                    break
                k -= 1
        out[r] = res



@guarded
@nb.njit(cache=True, parallel=True, _nrt=False)
def row_max(u, n, umax, bad):
    """umax[r] = max of row r of the flattened (rows, n) ``u``; bad[r] = 1 if the row
    holds a NaN or an infinity."""
    for r in nb.prange(umax.shape[0]):
        mx = -np.inf
        nonfinite = 0
        for i in range(r * n, (r + 1) * n):
            x = u[i]
            if not np.isfinite(x):
                nonfinite = 1
            elif x > mx:
                mx = x
        umax[r] = mx
        bad[r] = nonfinite


@nb.njit(cache=True, _nrt=False)
def row_bounds(m, u, um, c, lo, hi):
    """Rigorous score intervals of every cell of one row (lo = -inf, hi = +inf when open).

    Serial: used for the rare rows that the scans leave undecided."""
    for i in range(m.shape[0]):
        a, clamped = _score_a(c, u[i], um)
        l, h, sp = cell_bounds(m[i], a)
        lo[i] = NEG_INF if clamped else l
        hi[i] = h


@guarded
@nb.njit(cache=True, parallel=True, _nrt=False)
def topk_scan(m, u, umax, n, k, c, table, force, his_w, los_w, idx_w, out, ok):
    """Certified one-shot Gumbel top-k per row (small k).

    Keeps the k + 1 largest upper bounds of each row (insertion into a sorted list;
    cells that cannot enter are skipped with ``table`` as in :func:`em_scan`).  The
    ordered top k is certified when, for every rank t < k, the smallest lower bound of
    ranks 0..t exceeds the (t+2)-th largest upper bound; then ``out[r]`` holds it and
    ``ok[r]`` is True, otherwise the row is pending.  ``his_w``, ``los_w``, ``idx_w``
    are (workers, k + 1) workspaces; worker ``b`` handles rows ``b, b + workers, ...``.
    """
    kk = k + 1
    nw = his_w.shape[0]
    rows = umax.shape[0]
    for b in nb.prange(nw):
        for r in range(b, rows, nw):
            for t in range(kk):
                his_w[b, t] = NEG_INF
                los_w[b, t] = NEG_INF
                idx_w[b, t] = -1
            base = r * n
            um = umax[r]
            for i in range(base, base + n):
                w = m[i]
                a, clamped = _score_a(c, u[i], um)
                thr = his_w[b, kk - 1]
                ub = a + table[np.int64(w >> S52)]
                if ub + (2.0 ** -20 + (abs(a) + 64.0) * 2.0 ** -48) < thr:
                    continue
                lo, hi, sp = cell_bounds(w, a)
                if clamped:
                    lo = NEG_INF
                if not hi > thr:
                    continue
                p = kk - 1
                while p > 0 and his_w[b, p - 1] < hi:
                    his_w[b, p] = his_w[b, p - 1]
                    los_w[b, p] = los_w[b, p - 1]
                    idx_w[b, p] = idx_w[b, p - 1]
                    p -= 1
                his_w[b, p] = hi
                los_w[b, p] = lo
                idx_w[b, p] = i - base
            good = not force
            pm = POS_INF
            for t in range(k):
                pm = min(pm, los_w[b, t])
                if not pm > his_w[b, t + 1]:
                    good = False
                    break
            ok[r] = good
            if good:
                for t in range(k):
                    out[r, t] = idx_w[b, t]
