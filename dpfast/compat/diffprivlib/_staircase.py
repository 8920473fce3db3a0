"""diffprivlib's ``Staircase`` mechanism as an exact discrete staircase on a grid."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast.compat.diffprivlib._additive import _setup, as_array
from dpfast.compat.diffprivlib._bounded import _discrete_laplace
from dpfast.compat.diffprivlib._small import words_for
from dpfast.noise import _exact

__all__ = ["Staircase", "staircase_draws"]

FORCE_EXACT = False  # test hook: every part coin through the exact continuation
_MIN_EPS = 2.0 ** -20  # 1/epsilon within the exact sampler's range, block counts in int64
_MAX_EPS = 2.0 ** 40
_BIG_K = 1 << 21  # block indices at or above this are combined in Python ints


@functools.lru_cache(maxsize=4096)
def _layout(epsilon: float, sensitivity: float, gamma: float) -> tuple[float, int, int]:
    """``(g, N, M)``: grid, steps per stair period (``N = floor(Δ/g) + 1``), steps of the
    upper part of each stair (``M = round(γ N)``)."""
    g = dpfast.granularity(sensitivity)
    n = math.floor(Fraction(sensitivity) / Fraction(g)) + 1
    return g, n, round(Fraction(gamma) * n)


def _part_bounds(epsilon: Fraction, n: int, m: int):
    """``bounds(prec)`` enclosing ``p 2^prec``, ``p = M / (M + (N - M) e^{-ε})``."""
    def bounds(prec: int) -> tuple[int, int]:
        big = prec + 64
        lo, hi = _exact.exp_neg_bounds(epsilon, big)
        top = m << big
        return (top << prec) // (top + (n - m) * hi), -((-(top << prec)) // (top + (n - m) * lo))
    return bounds


def _upper_part(words: Any, w: np.ndarray, epsilon: float, n: int, m: int) -> np.ndarray:
    """``1{U < M / (M + (N - M) e^{-ε})}`` per 64-bit word (exact: a certified float test,
    else the lazily refined uniform against rigorous bounds)."""
    if m == 0:
        return np.zeros(w.size, bool)
    if m == n:
        return np.ones(w.size, bool)
    p = m / (m + (n - m) * math.exp(-epsilon))
    wf = w.astype(np.float64)  # within 2^11 of the word
    below = (wf + 2.0 ** 12) * 2.0 ** -64 <= p * (1 - 2.0 ** -40)
    above = (wf - 2.0 ** 12) * 2.0 ** -64 >= p * (1 + 2.0 ** -40)
    if FORCE_EXACT:
        below[:] = above[:] = False
    out = below.copy()
    bounds = _part_bounds(Fraction(epsilon), n, m)
    for i in np.flatnonzero(~(below | above)):
        out[i] = _exact.u_less_than(_exact.LazyUniform(int(w[i]), words), bounds)
    return out


def staircase_draws(size: int, epsilon: float, n: int, m: int, gen: Any) -> np.ndarray:
    """``size`` i.i.d. draws of the discrete staircase on the integers (see
    :class:`Staircase`), exactly; int64, or Python ints (object) for huge draws."""
    t = 1 / Fraction(epsilon)
    words = words_for(gen)
    parts: list[np.ndarray] = []
    got = 0
    while got < size:
        want = size - got + 8
        z = _discrete_laplace(3 * want, t, gen)
        k = z[z >= 0][:want]  # geometric: P(k) ∝ e^{-k ε}
        cnt = k.size
        upper = _upper_part(words, np.asarray(gen.random_raw(cnt), np.uint64).reshape(-1),
                            epsilon, n, m)
        r_up = gen.integers(0, max(m, 1), size=cnt)
        r_low = m + gen.integers(0, max(n - m, 1), size=cnt)
        r = np.where(upper, r_up, r_low)
        if cnt and int(np.max(k)) >= _BIG_K:
            mag = np.array([int(a) * n + int(b) for a, b in zip(k, r)], dtype=object)
        else:
            mag = k * n + r
        neg = gen.integers(0, 2, size=cnt).astype(bool)
        keep = ~(neg & (mag == 0))  # -0 rejected: 0 carries its weight once
        parts.append(np.where(neg, -mag, mag)[keep])
        got += int(keep.sum())
    return np.concatenate(parts)[:size]


_DPL_STAIRCASE = _dm.Staircase  # diffprivlib's class (the parent below)


class Staircase(_dm.Staircase):
    r"""diffprivlib's ``Staircase`` (Geng & Viswanath 2014) drawn exactly on a grid.

    The value is rounded to the grid ``gZ`` (``g = dpfast.granularity(Δ)``, about
    ``Δ / 2^40``) and ``g i`` is added, ``i`` drawn exactly from the discrete staircase
    ``P(i) ∝ e^{-kε}`` for ``|i| ∈ [kN, kN + M)`` and ``e^{-(k+1)ε}`` for
    ``|i| ∈ [kN + M, (k+1)N)``, with ``N = floor(Δ/g) + 1`` steps per stair and
    ``M = round(γN)``: ``k`` geometric (exact discrete Laplace conditioned on ``>= 0``), the
    upper part with probability ``M / (M + (N - M) e^{-ε})`` (exact coin), the position
    within the part uniform, a uniform sign (``-0`` rejected).

    Privacy
    -------
    Neighbouring values differ by at most ``sensitivity`` = Δ, so their rounded values are
    ``j <= N`` steps apart.  ``P`` is nonincreasing in ``|i|`` and ``P(i + N) = e^{-ε} P(i)``
    for ``i >= 0``, so for ``|i - i'| <= N``: ``P(i') >= P(|i| + N) = e^{-ε} P(i)``.  Hence
    ``P[M(x) = y] <= e^ε P[M(x') = y]`` for every output: ``ε``-DP, as diffprivlib states
    (Geng, Kairouz, Oh & Viswanath 2015).  **Difference**: grid outputs from the exact
    discrete law instead of float samples; stair width ``N g`` is ``Δ`` plus at most one
    grid step (about ``2^-40`` relative), ``γ`` is rounded to ``M / N``.  ``ε`` outside
    ``[2^-20, 2^40]`` is refused (``ValueError``); ``ε = inf`` or ``Δ = 0`` add no noise.
    Arrays get independent noise per element; NaN and inf pass through; ``random_state``
    as in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, sensitivity, gamma=None, random_state=None):
        # diffprivlib's Staircase.__init__ minus its swap of an unseeded SystemRandom for a
        # fresh numpy Generator (an OS-seeded PCG64 per object, never used here: the noise
        # comes from dpfast's stream set up below)
        super(_DPL_STAIRCASE, self).__init__(epsilon=epsilon, delta=0,
                                             sensitivity=sensitivity,
                                             random_state=random_state)
        self.gamma = self._check_gamma(gamma, epsilon=self.epsilon)
        _setup(self, random_state)

    def _params(self) -> tuple[float, float, int, int] | None:
        key = (self.epsilon, self.sensitivity, self.gamma)
        if getattr(self, "_par_key", None) != key:
            self._par = self._layout_for()
            self._par_key = key
        return self._par

    def _layout_for(self) -> tuple[float, float, int, int] | None:
        eps = self.epsilon
        if self.sensitivity == 0 or eps == math.inf:
            return None
        if not _MIN_EPS <= eps <= _MAX_EPS:
            raise ValueError(f"epsilon={eps!r} is outside [2**-20, 2**40], the range of the "
                             "exact staircase sampler")
        g, n, m = _layout(float(eps), float(self.sensitivity), float(self.gamma))
        return float(eps), g, n, m

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        arr = as_array(value, "biuf", "a number")
        self._check_all(0.0 if arr is not None else value)
        par = self._params()
        if arr is None:
            v = float(value)
            if par is None or not math.isfinite(v):
                return v
            eps, g, n, m = par
            z = int(self._buffer.take(par, lambda k: staircase_draws(k, eps, n, m, self._gen)))
            return float(round(v / g) + z) * g
        x = arr.astype(np.float64)
        if par is None:
            return x
        eps, g, n, m = par
        finite = np.isfinite(x)
        z = staircase_draws(int(finite.sum()), eps, n, m, self._gen)
        x[finite] = (np.rint(x[finite] / g) + z.astype(np.float64)) * g
        return x
