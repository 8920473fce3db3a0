"""The optimistic (lower-bound) discretisation: connect the dots from below.

The pessimistic pmf of :func:`~dpfast.accounting.pld._pmf.connect_dots` interpolates the
privacy curve ``delta(x)`` (``x = e^eps``, convex, decreasing) at the grid points, so it
lies above.  Here the curve is replaced by a convex piecewise-linear curve ``f`` with
its knots on the same grid that lies *below* ``delta`` and is itself a valid privacy
curve (``f(0) <= 1``, slopes in ``[-1, 0]``).  By Blackwell's theorem the exact pair of
distributions then dominates the pair that ``f`` describes, and domination is kept under
composition, so every composed ``delta`` computed from ``f`` is a lower bound.

Construction (dpfast's; dp_accounting has no optimistic connect-the-dots and falls back
to rounding losses down, whose composed error grows like ``count * dx / 2``):

* On a cell ``[x_j, x_{j+1}]`` of width ``h`` the chord of ``delta`` lies above it by at
  most ``h (s_R - s_L) / 4``, where ``s_L = -Q(L > e_j)`` and ``s_R >= -Q(L > e_{j+1})``
  are the one-sided slopes at the ends (``delta`` lies above both end tangents, and the
  chord exceeds the larger tangent by at most that; AM-GM).  ``s_R - s_L`` is at most
  the cell's ``Q``-mass ``Q_j``, so ``gap_j = h Q_j / 4``.
* More precisely, with ``a = m - s_L``, ``b = s_R - m`` (``m`` the chord slope) the two
  end tangents meet at ``theta = b / (a + b)`` of the cell, ``h a b / (a + b)`` below the
  chord; the segment between ``delta(x_j) - c_j`` and ``delta(x_{j+1}) - c_{j+1}``
  stays below them (hence below ``delta``) if ``c_{j+1} >= h a`` or ``c_j >= h b``: the
  first lowers one knot by ``h min(a, b)`` (at most twice the gap), ``c_j, c_{j+1} >=
  gap`` both by the gap: the one-sided form is used where the tangents meet near an
  end of the cell (``min(a, b) <= max(a, b) / 2``: a kink there, e.g. the atom-like
  concentration of the subsampled losses near ``log(1 - q)``).  In slope
  form (no nearly-equal values subtracted): ``s_j = chord_j - (c_{j+1} - c_j) / h_j``,
  the exact chord slopes of :func:`~dpfast.accounting.pld._pmf._chord_slopes`.
* ``[0, x_0]``: slope ``-1`` from ``f(0) = 1 - c_0`` (below ``1 - x <= delta``).  Beyond
  the top point: slope 0 at height ``<= P(L = +inf)`` (``c_N`` covers the finite tail).
* Convexity: the greatest convex minorant of that polyline (pool-adjacent-violators on
  the slopes, :mod:`dpfast._kernels.convex`; only lowers ``f``), then slopes below
  ``-1`` raised to ``-1`` with ``f(0)`` lowered so that ``f`` keeps its
  value where they end (still below).  Masses ``P'(l_j) = x_j (s_j - s_{j-1}) >= 0``;
  ``1 - f(0)`` sits at ``-inf``; ``f(inf)`` at ``+inf`` (if it came out negative, that
  much is taken off the top losses: the curve only goes down).
* Every rounding is to the low side (slopes lowered by their error, masses scaled down,
  the ``+inf`` mass computed from an upper bound of their sum).

Its error is of the same order as the pessimistic one (``c_j`` is of order ``h Q_j``, the
size of the interpolation error), so the gap between the two bounds stays small after
many compositions instead of growing like ``count * dx``.
"""

from __future__ import annotations

import math

import numpy as np

from ._curves import Curve
from ._pmf import _TINY, _U, Pmf, _chord_slopes

#: relative error allowed on the chord slopes (function evaluation; the quadrature error
#: bound is subtracted separately)
_SLOPE_REL = 2e-13
#: one knot lowered (by h min(a, b)) instead of both (by the gap) when min(a, b) is at
#: most this share of max(a, b)
_ONE_SIDED = 0.5


def connect_dots_lower(curve: Curve, dx: float, max_bins: int, one_sided: bool = False
                       ) -> Pmf:
    """Optimistic connect-the-dots pmf of ``curve`` on the grid ``dx * Z`` (see module).

    ``one_sided``: every cell lowers one knot (by ``h min(a, b)``); else only the cells
    whose tangents meet near an end do.  Both are lower bounds; which is tighter after
    composition depends on the setting (the accountant keeps the better one).
    """
    # numba is loaded only when a lower bound is asked for (get_epsilon does not need it)
    from dpfast._kernels.convex import convex_minorant_slopes

    k_lo, eps, c, chord, serr = _chord_slopes(curve, dx, max_bins)
    chord = chord - serr  # the quadrature's error bound, on the low side
    n_cells = eps.size - 1
    x = np.exp(eps)
    h = x[:-1] * math.expm1(dx)
    # delta-form chord slopes, rounded down (D-form ones are shifted by -1: x < 1 there)
    s = chord.copy()
    s[:c] -= 1.0
    s -= _SLOPE_REL * np.abs(chord) + 4.0 * _U * (np.abs(s) + 1.0)
    # gap of each cell: (m - s_L)(s_R - m) h / (s_R - s_L) <= min(m - s_L, s_R - m) h,
    # with the one-sided slopes s_L (right of x_j) and s_R (left of x_{j+1}): in D form
    # Q(L <= e_j), Q(L < e_{j+1}); in delta form -Q(L > e_j), -Q(L >= e_{j+1})
    below = np.nextafter(eps[1:], -np.inf)  # e_{j+1}^-: an atom at e_{j+1} is not in s_R
    sl, sr = np.empty(n_cells), np.empty(n_cells)
    if c:
        sl[:c], sr[:c] = curve.q_le(eps[:c]), curve.q_le(below[:c])
    sl[c:], sr[c:] = -curve.q_gt(eps[c:-1]), -curve.q_gt(below[c:])
    m = chord
    tol = _SLOPE_REL * np.abs(m) + 4.0 * _U * (np.abs(sl) + np.abs(sr) + np.abs(m))
    a_up = np.maximum(m - sl, 0.0) + tol
    b_up = np.maximum(sr - m, 0.0) + tol
    # with the vertex of the two end tangents at theta = b / (a + b) of the cell, the
    # segment stays below them if (1 - theta) c_j + theta c_{j+1} >= h a b / (a + b):
    # c_{j+1} >= h a or c_j >= h b suffices; the cheaper one is taken (one knot per cell)
    right = a_up <= b_up
    lop = np.minimum(a_up, b_up) <= _ONE_SIDED * np.maximum(a_up, b_up)  # kink near an end
    if one_sided:
        lop[:] = True
    gap = h * (a_up * b_up / np.maximum(a_up + b_up, 1e-300)) * (1.0 + 16.0 * _U)
    need = h * np.minimum(a_up, b_up) * (1.0 + 16.0 * _U)
    ck = np.zeros(n_cells + 1)
    ck[1:] = np.where(lop, np.where(right, need, 0.0), gap)
    ck[:-1] = np.maximum(ck[:-1], np.where(lop, np.where(right, 0.0, need), gap))
    tail = float(curve.p_gt(eps[-1:])[0]) - curve.inf_mass  # finite mass above the top
    ck[-1] = max(ck[-1], tail * (1.0 + 4.0 * _U) + 4.0 * _U)
    dc = np.diff(ck)
    s = s - dc / h - 8.0 * _U * (ck[1:] + ck[:-1]) / h
    f0 = 1.0 - ck[0] * (1.0 + 2.0 * _U)
    # all slopes: the cell [0, x_0], the grid cells, beyond the top point
    widths = np.concatenate([[x[0]], h])
    # the greatest convex minorant (pooled slopes, rounded down; the horizontal ray
    # beyond the top point as a cell of huge width), then made exactly monotone by a
    # running minimum from the right (only lowers f); the ray's slope is 0
    slopes = convex_minorant_slopes(np.concatenate([[-1.0], s, [0.0]]),
                                    np.concatenate([widths, [1e300]]))
    slopes = np.minimum.accumulate(slopes[::-1])[::-1]
    slopes[-1] = 0.0
    steep = slopes[:-1] < -1.0
    if np.any(steep):  # raise to -1 and lower f(0) by the area between
        f0 -= math.fsum((-1.0 - slopes[:-1][steep]) * widths[steep]) * (1.0 + 4.0 * _U)
        slopes[:-1][steep] = -1.0
    qm = np.diff(slopes)  # Q'-mass at each grid point (slope increase), >= 0
    p = np.maximum(x * qm, 0.0) * (1.0 - 8.0 * _U)  # <= the exact masses
    # f(inf) = f(0) - sum(p): if negative, f crosses 0 in some cell; there f is replaced by
    # max(f, 0) (still below delta, valid) and the crossing's atom is put on the grid
    # point before it (a loss rounded down: lowers every composed delta).  Its mass comes
    # from the balance f(0) - (the others' masses, rounded up), so it is not too large.
    heights = f0 + np.concatenate([[0.0], np.cumsum(slopes[:-1] * widths)])[1:]  # f(x_j)
    inf = f0 - math.fsum(p) * (1.0 + 16.0 * _U)
    if inf < 0.0:
        j = int(np.argmax(heights <= 0.0)) if np.any(heights <= 0.0) else p.size
        j = max(j - 1, 0)  # the last grid point with f > 0 (approximately)
        # rest[i]: an upper bound on sum(p[:i]) (sequential sums: i u relative)
        cs = np.concatenate([[0.0], np.cumsum(p)])
        rest = cs * (1.0 + (np.arange(cs.size) + 16.0) * _U) + 4.0 * _U
        j = min(j, max(int(np.searchsorted(rest, f0, side="right")) - 1, 0))
        p[j + 1:] = 0.0
        rest = float(rest[j])
        p[j] = max(0.0, f0 - rest)
        inf = 0.0
    p[p < _TINY] = 0.0  # dropped: only lowers the curve
    return Pmf(k_lo, p, max(0.0, min(inf, curve.inf_mass)), 4.0 * _U, False)
