"""diffprivlib's ``LaplaceBoundedNoise`` (truncated Laplace) drawn exactly on a grid."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast._core.search import smallest_true_int
from dpfast.compat.diffprivlib._additive import _setup, as_array
from dpfast.compat.diffprivlib._bounded import _discrete_laplace
from dpfast.compat.diffprivlib._small import _coin, uniform_below, words_for

__all__ = ["LaplaceBoundedNoise", "truncated_calibration", "truncated_delta"]

_PREC = 256  # bits for the privacy-loss evaluation; far below the 2^-100 slack kept
_SLACK = mpmath.mpf(1) + mpmath.mpf(2) ** -100


def truncated_delta(t: Fraction, k0: int, k: int) -> Any:
    """``δ`` of the grid truncated Laplace (see :class:`LaplaceBoundedNoise`), an mpmath
    number at :data:`_PREC` bits: ``q^{K-k0+1} (1 - q^{k0}) / (1 + q - 2 q^{K+1})``,
    ``q = exp(-1/t)``, for noise ``|z| <= K`` steps and neighbours ``k0`` steps apart."""
    if k < k0:
        return mpmath.mpf(1)
    with mpmath.workprec(_PREC):
        q = mpmath.exp(-mpmath.mpf(t.denominator) / t.numerator)
        return (q ** (k - k0 + 1) * -mpmath.expm1(k0 * mpmath.log(q))
                / (1 + q - 2 * q ** (k + 1)))


def _smallest_bound(t: Fraction, k0: int, delta: float, start: int) -> int:
    """The smallest ``K >= k0`` with ``truncated_delta(t, k0, K) (1 + 2^-100) <= delta``
    (``δ(K)`` decreases in ``K``): :func:`dpfast._core.search.smallest_true_int` from
    ``start`` (a bracket widened geometrically, then integer bisection)."""
    def ok(k: int) -> bool:
        with mpmath.workprec(_PREC):
            return bool(truncated_delta(t, k0, k) * _SLACK <= delta)

    # delta(K) = 1 below k0, so ``ok`` is false at k0 - 1 (delta < 1)
    return smallest_true_int(ok, max(k0, start), floor=k0 - 1, step=max(1, start >> 30))


@functools.lru_cache(maxsize=4096)
def truncated_calibration(epsilon: float, delta: float, sensitivity: float
                          ) -> tuple[float, Fraction, int]:
    """``(g, t, K)``: grid, scale in grid steps (exact rational, ``k0 / t = ε``) and noise
    bound in steps (the smallest passing :func:`truncated_delta`).  The grid keeps 40 bits
    below ``min(Δ, Δ/ε)``, fewer when the scale would leave the exact sampler's range
    (``t <= 2^50``) or the bound int64."""
    log_term = (epsilon - math.log(2 * delta) if epsilon > 700
                else math.log1p(math.expm1(epsilon) / (2 * delta)))
    for bits in range(40, 8, -1):
        g = dpfast.granularity(min(sensitivity, sensitivity / epsilon), bits)
        k0 = math.floor(Fraction(sensitivity) / Fraction(g)) + 1
        t = Fraction(k0) / Fraction(epsilon)
        if t > 2 ** 50 and t * log_term > 2:  # beyond the exact sampler's scale range
            continue
        # diffprivlib's bound A = b ln(1 + (e^eps - 1) / (2 delta)) in steps, as a start
        k = _smallest_bound(t, k0, delta, math.ceil(float(t) * log_term))
        if k < 2 ** 56:
            return g, t, k
    raise ValueError(f"epsilon={epsilon!r}, delta={delta!r}, sensitivity={sensitivity!r} are "
                     "too extreme for the grid truncated Laplace")


def truncated_draws(n: int, t: Fraction, k: int, gen: Any) -> np.ndarray:
    """``n`` i.i.d. draws of ``P(z) ∝ q^{|z|}`` on ``[-K, K]`` (``q = e^{-1/t}``), exactly.

    ``K <= 2t`` (nearly flat): ``z`` uniform on ``[-K, K]`` accepted with probability
    ``q^{|z|} >= e^{-2}`` (exact coins, :mod:`._small`).  Otherwise ``|z|``'s truncated
    geometric is ``G mod (K + 1)`` for ``G`` geometric (exact discrete Laplace conditioned
    on ``>= 0``: ``P(G mod (K+1) = m) ∝ q^m``), with a uniform sign, rejecting ``-0``.
    Accepted draws are kept in order: i.i.d. from the conditional law."""
    if k <= 2 * t:
        words = words_for(gen)
        tf = float(t)
        out1 = np.empty(n, np.int64)
        for i in range(n):
            while True:
                zi = uniform_below(words, 2 * k + 1) - k
                m = abs(zi)
                if m == 0 or _coin(words, m / tf, lambda m=m: Fraction(m) / t):
                    out1[i] = zi
                    break
        return out1
    parts: list[np.ndarray] = []
    got = 0
    while got < n:
        size = min(1 << 20, 3 * (n - got) + 8)
        z = _discrete_laplace(size, t, gen)
        mag = z[z >= 0] % (k + 1)
        neg = gen.integers(0, 2, size=mag.size).astype(bool)
        keep = ~(neg & (mag == 0))
        signed = np.where(neg, -mag, mag)[keep]
        parts.append(signed)
        got += signed.size
    return np.concatenate(parts)[:n]


class LaplaceBoundedNoise(_dm.LaplaceBoundedNoise):
    r"""diffprivlib's ``LaplaceBoundedNoise`` (Geng, Ding, Guo & Kumar 2018: Laplace noise
    truncated to ``[-A, A]``) drawn exactly on a grid.

    The value is rounded to the grid ``gZ`` (``g = dpfast.granularity(Δ/ε)``, about
    ``Δ / (ε 2^40)``) and ``g z`` is added, ``z`` exact discrete Laplace noise of the exact
    rational scale ``t = k0 / ε`` steps conditioned on ``|z| <= K`` (rejection on the exact
    sampler).  ``_scale = t g`` and ``_noise_bound = K g``.

    Privacy
    -------
    Neighbouring values differ by at most ``sensitivity`` = Δ, so their rounded values are
    ``j <= k0 = floor(Δ/g) + 1`` steps apart.  On the common support the probability ratio
    is ``q^{-j} <= e^{k0/t} = e^ε`` (``q = e^{-1/t}``; both supports have the same
    normalising constant); the ``j`` outputs in one support only carry mass at most
    ``δ(K) = q^{K-k0+1} (1 - q^{k0}) / (1 + q - 2 q^{K+1})``.  So ``P[M(x) ∈ S] <=
    e^ε P[M(x') ∈ S] + δ(K)``, and ``K`` is the smallest integer with ``δ(K) (1 + 2^-100)
    <= δ`` (256-bit evaluation): ``(ε, δ)``-DP, as diffprivlib states.  **Difference**:
    grid outputs from the exact discrete law instead of float Laplace samples; scale and
    bound are larger by about ``2^-40`` relative (the grid rounding), and the bound is the
    exact discrete one instead of ``b ln(1 + (e^ε - 1) / (2δ))``.  Arrays get independent
    noise per element; NaN and inf pass through; ``random_state`` as in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, delta, sensitivity, random_state=None):
        super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                         random_state=random_state)
        _setup(self, random_state)
        self._cal_key: Any = None

    def _calibration(self) -> tuple[float, Fraction, int] | None:
        key = (self.epsilon, self.delta, self.sensitivity)
        if self._cal_key != key:
            self._cal_key = key
            self._cal = None
            self._scale, self._noise_bound = 0.0, 0.0
            if self.sensitivity > 0 and self.epsilon != math.inf:
                self._cal = truncated_calibration(float(self.epsilon), float(self.delta),
                                                  float(self.sensitivity))
                g, t, k = self._cal
                self._scale, self._noise_bound = float(t * Fraction(g)), float(k * Fraction(g))
        return self._cal

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        arr = as_array(value, "biuf", "a number")
        self._check_all(0.0 if arr is not None else value)
        cal = self._calibration()
        if arr is None:
            v = float(value)
            if cal is None or not math.isfinite(v):
                return v
            g, t, k = cal
            z = int(self._buffer.take(cal, lambda n: truncated_draws(n, t, k, self._gen)))
            return float(round(v / g) + z) * g
        x = arr.astype(np.float64)
        if cal is None:
            return x
        g, t, k = cal
        finite = np.isfinite(x)
        z = truncated_draws(int(finite.sum()), t, k, self._gen)
        x[finite] = (np.rint(x[finite] / g) + z) * g
        return x
