"""The value histogram of :func:`dpfast.tables.tune`: how a value column's values spread,
from which the tuning chooses the column's clamping bounds (the pair of least predicted
error, :mod:`dpfast.tables._tune_predict`) when the caller gives none.

The public grid is ``bounds="auto"``'s (:func:`dpfast.tables.autobounds.default_grid`: 0
and the signed powers of two, ``2**-30 .. 2**62`` for floats, ``1 .. 2**40`` for
integers), whatever the data; cell ``p`` holds ``[g_p, g_{p+1})`` (the last cell the point
``g_{m-1}``), the values clamped to ``[g_0, g_{m-1}]`` first.  Each person gives one value
(the release's keyed bounding at ``k = c = 1``, :func:`dpfast.tables._autobounds.pooled`,
as ``bounds="auto"`` pools them; without privacy ids every row is its own person), so one
person changes one cell by at most 1: L1 sensitivity 1, and discrete Laplace noise of scale
``1 / ε_b`` (rounded up) on every cell is ``ε_b``-DP under add/remove one person (Canonne,
Kamath & Steinke 2020).  A cell is published if it reaches the upper floor (the scale
times ``ln(m / BETA)``, ``m`` cells: some empty cell passes it with probability about
``BETA / 2``), or the lower floor (the scale times ``ln m``) next to a published cell
(:func:`publish`); the rest are published as 0 (post-processing), so the many empty cells'
noise does not invent far values (one spurious far cell would move the values' mean
anywhere).  The candidate bounds are grid points: the
lower edges of the non-empty cells up to the median's cell, the upper edges from it.

Read from a public sample (:func:`from_sample`) the histogram is the sample's exact one
(every row, no noise, no floor).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from dpfast import random as _random
from dpfast._core.rounding import recip_up
from dpfast.tables import _autobounds, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables._law import NoiseLaw

__all__ = ["Values", "cells_of", "exact", "noisy", "from_sample", "floor", "scale", "PART",
           "publish", "BETA"]

#: the noise address of a value histogram's cells (each column on its own release key)
PART = 5
#: the chance that some empty cell passes the upper floor (:func:`publish`): about
#: ``BETA / 2`` (a spurious far cell would move the values' mean anywhere)
BETA = 0.05


def scale(eps_b: float) -> float:
    """The discrete Laplace scale of every cell: ``1 / ε_b`` rounded up."""
    return recip_up(eps_b)


def floor(t: float, cells: float) -> float:
    """``t ln(cells)``: an empty cell's noise (scale ``t``) passes it with probability
    ``1 / (2 cells)``."""
    return t * math.log(cells)


def publish(w: np.ndarray, t: float) -> tuple[np.ndarray, float]:
    """The published cells of the noisy cells ``w`` (post-processing): a cell stays if it
    reaches the upper floor ``t ln(m / BETA)`` (``m`` cells), or reaches the lower floor
    ``t ln(m)`` next to a cell that stays (repeated outwards); the rest are 0.  Returns
    them and the upper floor (below which a cell may be published as 0)."""
    m = w.shape[0]
    upper, lower = floor(t, m / BETA), floor(t, m)
    keep = w >= upper
    low = w >= lower
    while True:
        near = np.zeros(m, np.bool_)
        near[1:] |= keep[:-1]
        near[:-1] |= keep[1:]
        grown = keep | (low & near)
        if (grown == keep).all():
            break
        keep = grown
    return np.where(keep, w, 0.0), upper


def cells_of(slots: np.ndarray, m: int) -> np.ndarray:
    """The cell of each grid slot (:func:`dpfast.tables._quantile_em.slots_of`: ``2p + 1``
    at ``g_p``, ``2p`` strictly between ``g_{p-1}`` and ``g_p``): ``[g_p, g_{p+1})`` is
    cell ``p``."""
    return np.clip((slots.astype(np.int64) - 1) // 2, 0, m - 1)


def exact(pooled_slots: np.ndarray, m: int) -> np.ndarray:
    """The exact people per cell of the pooled values' grid slots (before the charge)."""
    return np.bincount(cells_of(pooled_slots, m), minlength=m).astype(np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class Values:
    """People per cell of a value column over the public ``grid`` (``weights``: DP and
    floored, or a public sample's exact counts); ``integer``: an integer column (integer
    bounds).  ``floor``: the public floor of a DP histogram (None for a sample's)."""

    grid: np.ndarray
    weights: np.ndarray
    integer: bool
    private: bool
    floor: float | None = None
    _memo: dict[tuple[int, int], tuple[float, float]] = dataclasses.field(
        default_factory=dict, repr=False)

    @property
    def people(self) -> float:
        return float(self.weights.sum())

    @property
    def empty(self) -> bool:
        """No cell above the noise: the histogram says nothing of the values."""
        return not self.weights.any()

    @functools.cached_property
    def _reps(self) -> tuple[np.ndarray, np.ndarray]:
        """Each cell's middle and its values' variance within it (uniform)."""
        g = self.grid.astype(np.float64)
        top = np.append(g[1:], g[-1])
        if self.integer:  # the integers of [g_p, g_{p+1})
            top = np.maximum(np.append(g[1:] - 1, g[-1]), g)
            width2 = (top - g + 1) ** 2 - 1
        else:
            width2 = (top - g) ** 2
        return (g + top) / 2, width2 / 12.0

    def _w(self) -> np.ndarray:
        w = self.weights.astype(np.float64)
        return w / w.sum() if w.sum() > 0 else w

    @functools.cached_property
    def spread(self) -> tuple[float, float]:
        """``(mean, standard deviation)`` of the values (unclamped; the empty: 0, 1)."""
        if self.empty:
            return 0.0, 1.0
        mid, within = self._reps
        w = self._w()
        mu = float(np.dot(w, mid))
        var = float(np.dot(w, (mid - mu) ** 2 + within))
        return mu, max(math.sqrt(var), 1e-300)

    def moments(self, a: int, b: int) -> tuple[float, float]:
        """``(mean, variance)`` of the values clamped to ``[g_a, g_b]``."""
        if (a, b) not in self._memo:
            self._memo[(a, b)] = self._moments(a, b)
        return self._memo[(a, b)]

    def _moments(self, a: int, b: int) -> tuple[float, float]:
        mid, within = self._reps
        g = self.grid.astype(np.float64)
        w = self._w()
        x = mid.copy()
        v = within.copy()
        x[:a], v[:a] = g[a], 0.0
        x[b:], v[b:] = g[b], 0.0
        mu = float(np.dot(w, x))
        return mu, float(np.dot(w, (x - mu) ** 2 + v))

    def quantile(self, q: float, a: int | None = None, b: int | None = None) -> float:
        """The ``q`` quantile of the values (uniform within a cell), clamped to
        ``[g_a, g_b]`` when given."""
        g = self.grid.astype(np.float64)
        w = self._w()
        if self.empty:
            x = 0.0
        else:
            cum = np.cumsum(w)
            p = int(min(np.searchsorted(cum, q, side="left"), g.shape[0] - 1))
            below = float(cum[p - 1]) if p > 0 else 0.0
            top = float(g[p + 1]) if p + 1 < g.shape[0] else float(g[p])
            frac = (q - below) / float(w[p]) if w[p] > 0 else 0.0
            x = float(g[p]) + min(max(frac, 0.0), 1.0) * (top - float(g[p]))
        if a is not None and b is not None:
            x = min(max(x, float(g[a])), float(g[b]))
        return x

    def beyond(self, a: int, b: int) -> float:
        """The larger share of the values below ``g_a`` or above ``g_b`` (1.0: empty)."""
        if self.empty:
            return 1.0
        w = self._w()
        return float(max(w[:a].sum(), w[b:].sum()))

    def candidates(self) -> list[tuple[int, int]]:
        """The candidate bounds ``(a, b)`` (grid indices): the lower edges of the non-empty
        cells up to the median's cell, the upper edges from it; the empty: the cell of 0
        and the next grid point; all in the last cell (the grid's edge): its lower edge and
        the edge."""
        g = self.grid
        m = g.shape[0]
        if self.empty:
            z = int(np.searchsorted(g, 0.0))
            return [(z, min(z + 1, m - 1))] if z + 1 < m else [(z - 1, z)]
        cum = np.cumsum(self._w())
        med = int(np.searchsorted(cum, 0.5, side="left"))
        full = np.flatnonzero(self.weights > 0)
        los = sorted({int(p) for p in full if p <= med})
        his = sorted({min(int(p) + 1, m - 1) for p in full if p >= med})
        pairs = [(a, b) for a in los for b in his if a < b]
        # every value in the last cell (at the grid's edge, clamped there): no pair above;
        # its lower edge and the edge (never empty: the search after the charge needs one)
        return pairs or [(m - 2, m - 1)]

    def at_edge(self, a: int, b: int) -> bool:
        """Whether the bounds ``(a, b)`` reach the grid's edge where its edge cell holds
        people: values beyond the grid are clamped there, the bounds may cut them."""
        m = self.grid.shape[0]
        return bool((a == 0 and self.weights[0] > 0)
                    or (b == m - 1 and self.weights[m - 1] > 0))

    def bounds(self, a: int, b: int) -> tuple[int | float, int | float]:
        """The bounds of grid indices ``(a, b)`` (ints for an integer column)."""
        lo, hi = float(self.grid[a]), float(self.grid[b])
        return (int(lo), int(hi)) if self.integer else (lo, hi)

    def to_dict(self) -> dict[str, object]:
        nz = np.flatnonzero(self.weights)
        return {"cells": {float(self.grid[p]): float(self.weights[p]) for p in nz},
                "private": self.private, "floor": self.floor}


def noisy(counts: np.ndarray, g: np.ndarray, integer: bool, eps_b: float,
          gen: _random.Generator) -> Values:
    """The DP histogram (after the charge): discrete Laplace of scale :func:`scale` on
    every cell, on its own release key's addressed streams; negative and sub-:func:`floor`
    cells published as 0."""
    t = scale(eps_b)
    rkey = keynoise.release_key(gen._key, keynoise.release_stream(gen))
    cells = np.arange(g.shape[0], dtype=np.int64)
    w = keynoise.noise_keys(NoiseLaw("discrete_laplace", t), counts.astype(np.int64), rkey,
                            cells, PART).astype(np.float64)
    out, lim = publish(w, t)
    return Values(g, out, integer, True, lim)


def from_sample(values: np.ndarray) -> Values:
    """The exact histogram of a public sample's column (every row)."""
    integer = values.dtype.kind in "iu"
    g = _autobounds.default_grid(integer)
    if integer:
        g = np.unique(np.round(g))
    v = np.clip(values.astype(np.float64), g[0], g[-1])
    return Values(g, exact(_em.slots_of(v, g), g.shape[0]).astype(np.float64), integer,
                  False)
