"""diffprivlib's ``LaplaceBoundedDomain`` as an exact discrete bounded-domain Laplace."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast.compat._random_state import generator_for
from dpfast.compat.diffprivlib._additive import as_array, float_down

__all__ = ["LaplaceBoundedDomain"]

_PREC = 256  # bits for the privacy-loss evaluation (its terms need ~45)
_MARGIN = Fraction(1, 10 ** 12)  # relative slack kept below the target epsilon
_MAX_STEPS = 1 << 60  # grid steps across the domain (int64 arithmetic)


def _loss(b: float, g: float, k: int, n: int) -> mpmath.mpf:
    """Worst-case privacy loss of the grid bounded-domain Laplace (see the class docs)."""
    with mpmath.workprec(_PREC):
        gb = mpmath.mpf(g) / mpmath.mpf(b)
        q = mpmath.exp(-gb)
        m = min(k, n)  # j g/b + ln S(j)/S(0) is nondecreasing in j (see the class docs)
        num = 1 + q - q ** (m + 1) - q ** (n - m + 1)
        den = 1 - q ** (n + 1)
        return m * gb + mpmath.log(num / den)


class LaplaceBoundedDomain(_dm.LaplaceBoundedDomain):
    r"""diffprivlib's ``LaplaceBoundedDomain`` (Holohan et al. 2020) drawn exactly on a grid.

    Outputs lie on ``Y = gZ ∩ [lower, upper]``; the input is clamped, rounded to the grid
    and clamped into ``Y`` (``x̃``), and the output is ``y ∈ Y`` with probability
    ``∝ exp(-|y - x̃| / b)``: exact discrete Laplace noise conditioned on ``Y`` (rejection on
    the exact sampler, which yields the conditional distribution exactly).

    Privacy
    -------
    Neighbouring values differ by at most Δ = ``sensitivity``, so ``|x̃ - x̃'| <= k g`` with
    ``k = floor(Δ/g) + 1``.  With ``q = e^{-g/b}``, ``N`` grid steps across the domain and
    ``S(n) = Σ_{y∈Y} q^{|y-x̃|/g}`` for ``x̃`` ``n`` steps from the lower end, the loss
    between ``x̃`` and ``x̃'`` ``j`` steps apart is at most ``j g/b + ln S(n+j)/S(n)``.  ``ln S``
    is concave in ``n`` (``S(n) = (1 + q - q^{n+1} - q^{N-n+1}) / (1 - q)``), so ``n = 0`` is
    the worst case, and ``f(j) = j g/b + ln S(j)/S(0)`` is nondecreasing
    (``S(j+1)/S(j) >= q``), so ``j = m = min(k, N)`` is:
    ``ε(b) = m g/b + ln[(1 + q - q^{m+1} - q^{N-m+1}) / (1 - q^{N+1})]``, the exact discrete
    analogue of diffprivlib's ``Δ/b + ln Δ_C``.  ``b`` is the smallest float
    found by bisection with ``ε(b) <= ε'`` (``ε' = ε + ln(1/(1-δ))`` rounded down, as for
    :class:`Laplace`), evaluated in 256-bit arithmetic with a ``1e-12`` relative margin.
    Guarantee: ``ε'``-DP, hence ``(ε, δ)``-DP, for values in ``[lower, upper]``.
    **Difference**: grid outputs and this calibration instead of float Laplace samples with
    diffprivlib's float bisection (``_scale`` agrees to about ``1e-9``); ``bias`` and
    ``variance`` keep diffprivlib's continuous formulas.
    """

    def __init__(self, *, epsilon, delta=0.0, sensitivity, lower, upper, random_state=None):
        super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity, lower=lower,
                         upper=upper, random_state=random_state)
        self._gen = generator_for(random_state)
        self._cal_key: Any = None

    def _grid(self) -> tuple[float, float, int, int, int] | None:
        """(b, g, k, j0, N) for the current parameters, or None when no noise is needed."""
        key = (self.epsilon, self.delta, self.sensitivity, self.lower, self.upper)
        if self._cal_key != key:
            self._cal_key, self._cal = key, self._calibrate()
        return self._cal

    def _calibrate(self) -> Any:
        eps, delta, sens = self.epsilon, self.delta, self.sensitivity
        width = float(self.upper) - float(self.lower)
        if sens == 0 or eps == math.inf or delta >= 1 or width == 0:
            return None
        extra = -math.log1p(-delta) if delta > 0 else 0.0
        extra = max(0.0, math.nextafter(math.nextafter(extra, 0.0), 0.0))
        target = float_down((Fraction(eps) + Fraction(extra)) * (1 - _MARGIN))

        def layout(b: float) -> tuple[float, int, int, int]:
            bits = 40
            while True:
                g = dpfast.granularity(b, bits)
                j0 = math.ceil(Fraction(self.lower) / Fraction(g))
                n = math.floor(Fraction(self.upper) / Fraction(g)) - j0
                if n < _MAX_STEPS:
                    return g, int(Fraction(sens) / Fraction(g)) + 1, j0, n
                bits -= 1

        def ok(b: float) -> bool:
            g, k, _, n = layout(b)
            return _loss(b, g, k, max(n, 0)) <= mpmath.mpf(target)

        lo = hi = sens / target
        for _ in range(2200):  # bounded: the float range is 2098 binades
            if ok(hi):
                break
            if not math.isfinite(hi * 2):
                break
            lo, hi = hi, hi * 2
        else:  # pragma: no cover
            hi = math.inf
        if not (math.isfinite(hi) and ok(hi)):
            raise ValueError(f"epsilon={self.epsilon!r}, delta={self.delta!r}: no finite "
                             f"Laplace scale meets the target for [{self.lower}, {self.upper}]")
        for _ in range(200):  # bisection on floats down to adjacent values
            mid = (lo + hi) / 2
            if mid in (lo, hi):
                break
            if ok(mid):
                hi = mid
            else:
                lo = mid
        g, k, j0, n = layout(hi)
        self._scale = hi
        return hi, g, k, j0, n

    def _find_scale(self):
        cal = self._grid()
        return 0.0 if cal is None else cal[0]

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        arr = as_array(value, "biuf", "a number")
        self._check_all(0.0 if arr is not None else value)
        x = np.clip(np.asarray(arr if arr is not None else [value], dtype=np.float64),
                    self.lower, self.upper).reshape(-1)
        nan = np.isnan(x)
        x[nan] = self.lower  # diffprivlib returns NaN for NaN; restored below
        cal = self._grid()
        if cal is None:
            out = x
        else:
            b, g, _, j0, n = cal
            t = Fraction(b) / Fraction(g)
            start = np.clip(np.rint(x / g) - j0, 0, n).astype(np.int64)
            offset = start.copy()
            pending = np.flatnonzero(np.ones(x.size, bool))
            while pending.size:
                z = dpfast.discrete_laplace(np.zeros(pending.size, np.int64), t, rng=self._gen)
                y = start[pending] + z
                good = (y >= 0) & (y <= n)
                offset[pending[good]] = y[good]
                pending = pending[~good]
            out = (float(j0) + offset.astype(np.float64)) * g
            out = np.clip(out, self.lower, self.upper)
        out[nan] = np.nan
        return out.reshape(np.shape(arr)) if arr is not None else float(out[0])
