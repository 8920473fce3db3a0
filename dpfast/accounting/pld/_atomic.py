"""Connect the dots for atomic pairs (:class:`~._finite.Finite`), vectorised.

An atomic pair has ``P``-masses ``p_a`` at losses ``l_a`` (``Q``-masses ``q_a = p_a
e^-l_a``).  Its privacy curve ``delta(x) = sum_a p_a (1 - x e^-l_a)_+`` (``x = e^eps``) is
a sum of hinges, so its piecewise-linear interpolation at the grid knots
``x_i = e^(i dx)`` is the sum of the interpolated hinges, and the interpolated hinge of an
atom with ``l_a`` in ``[l_i, l_(i+1)]`` is exactly the pair of atoms

    ``a = p_a expm1(dx - t) / expm1(dx)`` at ``l_i``,  ``b = p_a (1 - e^-t) / (1 - e^-dx)``
    at ``l_(i+1)``,  ``t = l_a - l_i``,

the split that keeps both its ``P``-mass (``a + b = p_a``) and its ``Q``-mass
(``a e^-l_i + b e^-l_(i+1) = q_a``).  So :func:`split_atoms` *is* connect-the-dots
(Doroshenko et al. 2022) for atoms, with no quadrature: the split pair dominates the exact
one (merging the two outcomes of each atom gives it back), hence every ``delta`` from it,
also after composition, is an upper bound.  One pass over the atoms, accumulated with
``np.bincount``, for any number of atoms (the discrete Gaussian at ``sigma = 10^4`` has
``1.9 * 10^5``).

:func:`chord_slopes` gives the exact chord slopes of the same interpolation in the form
of :func:`~._pmf._chord_slopes` (a ``Q``-mass tail sum plus the cell's own atoms, each
weighted by where it sits in the cell), which the optimistic discretisation
(:func:`~._lower.connect_dots_lower`) takes as input.

Error bounds (rigorous in the standard model, ``u = 2^-53``; ``np.exp``/``np.expm1``
taken within 2 ulps):

* the losses: the curve's ``loss_rel_err`` plus the rounding of ``t``
  (``2u (|l| + dx)``).  :func:`split_atoms` splits every atom from a place moved up by
  twice that bound, at or above its exact loss (a larger loss only raises the atom's
  hinge: the pair still dominates), so the losses' errors cost nothing there.  For the
  chord slopes (and in ``split_atoms`` if the grid were finer than the losses are known)
  they are bounded instead: the split weights and the chord contributions are Lipschitz
  in ``l`` with constant ``1 / (1 - e^-dx)`` times the mass and continuous across the
  knots (an atom on a knot goes wholly to it from either side), so a loss off by ``D``
  moves at most ``2 p D / (1 - e^-dx)`` of mass (an L1 bound that grows as the grid gets
  finer);
* the masses: the curve's ``mass_rel_err`` plus 8 ulps of the weights;
* the sums: sequential (``np.bincount``; ``np.cumsum`` in long double), ``n u`` of the
  sum of ``n`` nonnegative terms.

:func:`split_atoms` returns their total as ``err`` (an L1 bound on the masses, added to
``delta``); :func:`chord_slopes` returns a per-slope bound (subtracted by the optimistic
side).
"""

from __future__ import annotations

import math

import numpy as np

from ._finite import Finite

_U = 2.0**-53
#: unit roundoff of long double (2^-64 on x86-64; 2^-53 where it is plain double)
_UL = float(np.finfo(np.longdouble).eps) / 2.0
#: masses below this are moved to +inf (as :data:`._pmf._TINY`)
_TINY = 1e-280


def _cells(curve: Finite, dx: float, k_lo: int, n_cells: int, up: bool = False
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell index (0-based from the grid point ``k_lo``), position ``t`` in ``[0, dx]`` and
    a bound on the error of ``t`` of every atom.  ``up``: the atoms are first moved up by
    twice that bound, so each sits at or above its exact loss (the bound is then 0)."""
    l = curve.l
    dl = ((curve.loss_rel_err + 2.0 * _U) * np.abs(l) + 2.0 * _U * dx) * (1.0 + 1e-6)
    if up:
        # 2 dl covers the exact loss's distance from l, this sum's rounding and the
        # rounding of t below (each <= dl): the place used is >= the exact loss
        l = l + 2.0 * dl
    with np.errstate(invalid="ignore"):
        k = np.floor(l / dx)
        t = np.clip(l - k * dx, 0.0, dx)
    j = k.astype(np.int64) - k_lo
    if j.size and (int(np.min(j)) < 0 or int(np.max(j)) >= n_cells + 1):
        raise AssertionError("an atom outside the grid")  # pragma: no cover - _grid covers
    top = j == n_cells  # an atom on the last grid point: the end of the last cell
    j[top] -= 1
    t[top] = dx
    return j, t, np.zeros_like(dl) if up else dl


def split_atoms(curve: Finite, dx: float, k_lo: int, k_hi: int
                ) -> tuple[np.ndarray, float, float]:
    """Pessimistic masses on the grid points ``k_lo .. k_hi`` (``dx`` apart), the mass at
    ``+inf`` and the error allowance ``err`` (see the module)."""
    n = k_hi - k_lo + 1
    # each atom is split from a place at or above its exact loss (a larger loss only
    # raises its hinge p (1 - x e^-l)_+: the pair still dominates, also after
    # composition), so the losses' errors cost nothing in err; moved up by less than a
    # grid step, an atom stays inside the grid (one point beyond the top loss); with a
    # grid finer than the losses are known (never in practice) their Lipschitz bound
    up = bool(np.all(4.0 * ((curve.loss_rel_err + 2.0 * _U) * np.abs(curve.l)
                            + 2.0 * _U * dx) < dx))
    j, t, dl = _cells(curve, dx, k_lo, n - 1, up=up)
    m = curve.m
    # the weights expm1(dx - t) / expm1(dx) and (1 - e^-t) / (1 - e^-dx), written with
    # nonpositive exponents only (no overflow for any dx)
    em1 = math.expm1(-dx)
    lip = -1.0 / em1  # |d(weight)/dt| <= e^dx / expm1(dx) = 1 / (1 - e^-dx)
    a = m * (np.exp(-t) * (np.expm1(t - dx) / em1))
    b = m * (np.expm1(-t) / em1)
    p = np.bincount(j, a, minlength=n) + np.bincount(j + 1, b, minlength=n)
    per_point = np.bincount(j, minlength=n) + np.bincount(j + 1, minlength=n)
    total = math.fsum(m.tolist())
    err = (2.0 * lip * float(np.dot(m, dl)) * (1.0 + 1e-9)
           + 2.0 * (curve.mass_rel_err + 12.0 * _U) * total
           + (int(np.max(per_point)) + 2) * _U * total) * (1.0 + 1e-6)
    p = np.maximum(p, 0.0)
    tiny = p < _TINY
    inf = curve.inf_mass + curve.cut_mass + float(p[tiny].sum()) * (1.0 + 1e-9)  # to +inf
    p[tiny] = 0.0
    # the masses sum to 1 up to their rounding: any shortfall goes to +inf (pessimistic)
    inf += max(0.0, 1.0 - (math.fsum(p.tolist()) + inf))
    return p, min(1.0, inf), err


def chord_slopes(curve: Finite, dx: float, k_lo: int, n_cells: int, c: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Exact chord slopes of the privacy curve on the grid cells and their error bounds,
    as :func:`~._pmf._chord_slopes` defines them: ``Q(L <= e)`` averaged over the cell
    (in ``x``) for the cells before ``c``, ``-Q(L > e)`` from ``c`` on."""
    j, t, dl = _cells(curve, dx, k_lo, n_cells)
    q = curve.qm
    em1 = math.expm1(-dx)
    lip = -1.0 / em1
    tot = np.bincount(j, q, minlength=n_cells)
    # the atom's place in its cell in x = e^eps: (X - x_i) / h and (x_(i+1) - X) / h, with
    # nonpositive exponents only
    inside_gt = np.bincount(j, q * (np.exp(t - dx) * (np.expm1(-t) / em1)), minlength=n_cells)
    inside_le = np.bincount(j, q * (np.expm1(t - dx) / em1), minlength=n_cells)
    # Q-mass of the cells before i and after i (suffix sums: no difference of nearly
    # equal sums), accumulated in long double
    below = np.concatenate([[0.0], np.cumsum(tot, dtype=np.longdouble)[:-1]])
    above = np.concatenate([np.cumsum(tot[::-1], dtype=np.longdouble)[::-1][1:], [0.0]])
    below, above = below.astype(np.float64), above.astype(np.float64)
    slopes = np.empty(n_cells)
    slopes[:c] = curve.q_minf + below[:c] + inside_le[:c]
    slopes[c:] = -(above[c:] + inside_gt[c:])
    # errors: masses and losses of the atoms (relative), the sums (n u), the positions
    q_rel = (curve.mass_rel_err + curve.loss_rel_err * np.abs(curve.l) * 1.01 + 12.0 * _U)
    count = np.bincount(j, minlength=n_cells)
    rel = float(np.max(q_rel)) + (int(np.max(count)) + 8) * _U + (n_cells + 2) * _UL
    serr = np.abs(slopes) * rel
    serr[:c] += float(np.dot(q, q_rel)) + 4.0 * _U  # q_minf = 1 - sum(q): absolute
    move = q * lip * dl
    if float(np.max(dl)) < dx:  # the exact loss lies in the same cell or a neighbour
        e = np.bincount(j, move, minlength=n_cells)
        serr += e
        serr[1:] += e[:-1]
        serr[:-1] += e[1:]
    else:  # pragma: no cover - losses known to less than a grid step
        serr += float(move.sum())
    return slopes, serr * (1.0 + 1e-6)


def common_lattice(curves: list) -> float | None:
    """The largest ``lam`` (of the curves' own) with every atom of every curve an integer
    multiple of it, or None (a curve with atoms but neither a lattice nor an anchor, or
    incommensurate ones).  Atomic curves give their ``lattice`` (every loss), plain
    Laplace its ``anchor`` (its two atoms); curves without atoms (Gaussian) are skipped."""
    lats: list[float] = []
    for c in curves:
        if getattr(c, "atomless", False):
            continue
        v = getattr(c, "lattice", None)
        if v is None:
            v = getattr(c, "anchor", None)
        if v is None or not v > 0.0:
            return None
        lats.append(float(v))
    if not lats:
        return None
    lam = min(lats)
    if any(abs(v / lam - round(v / lam)) > 1e-9 for v in lats):
        return None
    return lam
