"""diffprivlib's ``Uniform`` mechanism as an exact uniform distribution on a grid."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast.compat.diffprivlib._additive import _setup, as_array, grid_add, noisy_finite

__all__ = ["Uniform"]


class Uniform(_dm.Uniform):
    r"""diffprivlib's ``Uniform`` (``ε = 0``, noise uniform on ``[-B, B]``,
    ``B = Δ / (2δ)``) drawn exactly on a grid.

    The value is rounded to the grid ``gZ`` (``g`` a power of two, about ``B / 2^40``) and
    ``g (J - M)`` is added, ``J`` exactly uniform on ``{0, ..., W - 1}`` (``W = 2M + 1``
    odd, Lemire's method on ChaCha20 words).

    Privacy
    -------
    Neighbouring values differ by at most ``sensitivity`` = Δ, so their rounded values are
    at most ``k = floor(Δ/g) + 1`` grid steps apart, and two uniform windows of ``W`` points
    shifted by ``j <= k`` steps are at total-variation distance ``j / W``.  ``W`` is the
    smallest odd integer with ``k / W <= δ`` (exact rational arithmetic), so the release is
    ``(0, δ)``-DP: ``P[M(x) ∈ S] <= P[M(x') ∈ S] + δ``, as diffprivlib states (Holohan et
    al. 2018, arXiv:1810.00877).  **Difference**: grid outputs, half-width
    ``M g ≈ (Δ + g) / (2δ)`` instead of ``Δ / (2δ)`` (relative ``2^-40``); ``bias`` and
    ``variance`` keep diffprivlib's continuous formulas.  Arrays get independent noise per
    element; NaN and inf pass through; ``random_state`` as in :class:`Laplace`.
    """

    def __init__(self, *, delta, sensitivity, random_state=None):
        super().__init__(delta=delta, sensitivity=sensitivity, random_state=random_state)
        _setup(self, random_state)
        self._cal_key: Any = None

    def _window(self) -> tuple[float, int, int] | None:
        """(g, W, M) for the current parameters, or None when no noise is needed."""
        key = (self.delta, self.sensitivity)
        if self._cal_key != key:
            self._cal_key = key
            self._cal = None
            if self.sensitivity > 0:
                g = dpfast.granularity(self.sensitivity / (2 * self.delta))
                k = math.floor(Fraction(self.sensitivity) / Fraction(g)) + 1
                w = math.ceil(Fraction(k) / Fraction(self.delta))
                w += 1 - w % 2  # odd: a window centred on the rounded value
                self._cal = (g, w, (w - 1) // 2)
        return self._cal

    def _noise(self, n: int, g: float, w: int, m: int) -> np.ndarray:
        j = self._gen.integers(0, w, size=n, dtype=np.int64)
        return (j - m).astype(np.float64) * g

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        arr = as_array(value, "biuf", "a number")
        self._check_all(0.0 if arr is not None else value)
        cal = self._window()
        if arr is not None:
            if cal is None:
                return arr.astype(np.float64)
            g, w, m = cal
            return noisy_finite(arr, lambda x: np.rint(x / g) * g + self._noise(x.size, g, w, m))
        if cal is None:
            return float(value)
        g, w, m = cal
        noise = self._buffer.take(cal, lambda n: self._noise(n, g, w, m))
        return grid_add(value, g, noise)
