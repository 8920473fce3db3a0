"""Atomic pairs: finitely many loss values (randomized response, the ``(epsilon, delta)``
dominating pair, the exact discrete Gaussian / Laplace pairs of :mod:`._discrete`).

Their discretisation is exact and vectorised (:mod:`._atomic`).
"""

from __future__ import annotations

import math

import numpy as np

from ._curves import _U, Curve


class Finite(Curve):
    """A pair with finitely many loss values ``losses`` of ``P``-masses ``masses``.

    ``inf_mass`` is ``P(L = +inf)``; the ``Q``-mass not carried by the finite losses
    sits at ``L = -inf``.  Always symmetric in the uses below (randomized response, the
    ``(epsilon, delta)`` dominating pair, the discrete Gaussian / Laplace pairs of
    :mod:`._discrete`).  ``mass_rel_err`` / ``loss_rel_err`` bound the relative error of
    the float masses / losses against the exact pair (:mod:`._atomic` adds their effect
    to its error allowance).  Discretised by :mod:`._atomic` (vectorised, any number of
    atoms).
    """

    mass_rel_err: float = 8.0 * _U
    loss_rel_err: float = 0.0
    #: every loss is an integer multiple of it (None: unknown)
    lattice: float | None = None
    #: P-mass of atoms left out (truncated tails): put at +inf by the pessimistic
    #: discretisation, dropped by the optimistic one (not part of ``inf_mass``)
    cut_mass: float = 0.0

    def __init__(self, losses, masses, inf_mass: float = 0.0) -> None:
        order = np.argsort(losses, kind="stable")
        self.l = np.asarray(losses, dtype=np.float64)[order]
        self.m = np.asarray(masses, dtype=np.float64)[order]
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):
            self.qm = np.where(self.m > 0.0, self.m * np.exp(-self.l), 0.0)
        self.q_minf = max(0.0, 1.0 - math.fsum(self.qm))
        self.inf_mass = float(inf_mass)
        self.symmetric = True
        self.lo, self.hi = float(self.l[0]), float(self.l[-1])
        # the atoms (only ._pmf's quadrature path reads breaks; ._atomic does not)
        self.breaks = tuple(float(v) for v in self.l) if self.l.size <= 64 else ()

    def moments(self) -> tuple[float, float]:
        w = self.m / max(float(self.m.sum()), 1e-300)
        m1 = float(w @ self.l)
        return m1, float(w @ (self.l - m1) ** 2)

    def _count_le(self, e: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.l, np.asarray(e, dtype=np.float64), side="right")

    # cumulative sums in long double (x86-64: n 2^-64 relative for n atoms, then one
    # rounding to double), so that many atoms keep them accurate to a few ulps
    def q_gt(self, e):
        c = np.concatenate([np.cumsum(self.qm[::-1], dtype=np.longdouble)[::-1], [0.0]])
        return c[self._count_le(e)].astype(np.float64)

    def q_le(self, e):
        c = np.concatenate([[0.0], np.cumsum(self.qm, dtype=np.longdouble)]) + self.q_minf
        return c[self._count_le(e)].astype(np.float64)

    def p_gt(self, e):
        c = np.concatenate([np.cumsum(self.m[::-1], dtype=np.longdouble)[::-1], [0.0]])
        return (c[self._count_le(e)] + self.inf_mass).astype(np.float64)


def randomized_response(eps: float, k: int = 2, delta: float = 0.0) -> Finite:
    """``k``-ary randomized response (replace one); with ``delta``: the ``(eps, delta)``
    dominating pair (Kairouz, Oh & Viswanath 2015; mass ``delta`` at ``+inf``)."""
    w = 1.0 - delta
    if eps == 0.0:
        return Finite([0.0], [w], delta)
    den = math.exp(eps) + (k - 1) if eps < 700 else math.inf
    hi = w / (1.0 + (k - 1) * math.exp(-eps))
    lo_m = w / den
    losses, masses = [eps, -eps], [hi, lo_m]
    if k > 2:
        losses.append(0.0)
        masses.append(w * (k - 2) / den)
    out = Finite(losses, masses, delta)
    out.lattice = eps
    return out

