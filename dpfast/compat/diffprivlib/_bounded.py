"""diffprivlib's ``LaplaceBoundedDomain`` as an exact discrete bounded-domain Laplace."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast.compat._random_state import generator_for
from dpfast.compat.diffprivlib._additive import as_array, float_down
from dpfast.compat.diffprivlib._fastcheck import FastChecks
from dpfast.compat.diffprivlib._small import discrete_laplace as _small_discrete_laplace
from dpfast.compat.diffprivlib._small import words_for

__all__ = ["LaplaceBoundedDomain"]

_MARGIN = Fraction(1, 10 ** 12)  # relative slack kept below the target epsilon
_ALLOW = 2.0 ** -40  # relative error allowed for the float evaluation of the loss
_MAX_STEPS = 1 << 60  # grid steps across the domain (int64 arithmetic)
_MAX_BATCH = 1 << 20  # rejection candidates drawn per round
_PER_CELL = 1024  # draws up to this size pass the scale per cell (no envelope table)


def _loss(b: float, g: float, k: int, lo: int | None, hi: int | None) -> float:
    """Worst-case privacy loss of the grid bounded-domain Laplace (see the class docs), in
    floating point: every factor is positive and computed with ``expm1``/``log1p`` to a few
    ulps, so the result is within a relative ``2^-48`` of the exact value when the platform
    ``exp``/``expm1``/``log1p`` are within 2^4 ulps; :func:`calibrate` allows ``2^-40``."""
    gb = g / b
    if lo is None and hi is None:  # plain discrete Laplace on gZ: a shift of k steps
        return k * gb
    q = math.exp(-gb)
    if lo is None or hi is None:  # half-line: S(n) = (1 + q - q^{n+1}) / (1 - q)
        return k * gb + math.log1p(q * -math.expm1(-k * gb))
    n = max(hi - lo, 0)
    m = min(k, n)  # j g/b + ln S(j)/S(0) is nondecreasing in j (see the class docs)
    if m == n:
        return m * gb
    # ln[(1 + q - q^{m+1} - q^{N-m+1}) / (1 - q^{N+1})]
    #   = log1p((1 - q^m) q (1 - q^{N-m}) / (1 - q^{N+1}))
    a = -math.expm1(-m * gb) * q * -math.expm1(-(n - m) * gb) / -math.expm1(-(n + 1) * gb)
    return m * gb + math.log1p(a)


def _steps(v: float, g: float, up: bool) -> int:
    """``ceil(v / g)`` (``up``) or ``floor(v / g)``, exactly (``g`` is a power of two)."""
    r = v / g
    if math.isfinite(r) and (r == 0 or abs(r) > 2.0 ** -1000):  # exact: no over/underflow
        return math.ceil(r) if up else math.floor(r)
    q = Fraction(v) / Fraction(g)
    return math.ceil(q) if up else math.floor(q)


def _layout(b: float, sens: float, lower: float, upper: float
            ) -> tuple[float, int, int | None, int | None]:
    """(g, k, lo, hi): grid, steps a neighbour can move, lowest and highest grid index in
    the domain (None: unbounded on that side)."""
    bits = 40
    while True:
        g = dpfast.granularity(b, bits)
        k = _steps(sens, g, up=False) + 1
        lo = _steps(lower, g, up=True) if math.isfinite(lower) else None
        hi = _steps(upper, g, up=False) if math.isfinite(upper) else None
        if lo is None or hi is None or hi - lo < _MAX_STEPS:
            return g, k, lo, hi
        bits -= 1


def _discrete_laplace(n: int, t: Fraction, gen: Any) -> np.ndarray:
    """``n`` exact discrete Laplace draws of scale ``t``.  Small draws pass ``t`` per cell
    (dpfast's exact geometric inversion, no set-up), so a new scale -- every mechanism of a
    diffprivlib model has its own -- costs no envelope table; large ones use the table."""
    tf = float(t)
    if n <= _PER_CELL and Fraction(tf) == t:
        return dpfast.discrete_laplace(np.zeros(n, np.int64), np.full(n, tf), rng=gen)
    return dpfast.discrete_laplace(np.zeros(n, np.int64), t, rng=gen)


@functools.lru_cache(maxsize=4096)
def calibrate(eps: float, delta: float, sens: float, lower: float, upper: float
              ) -> tuple[float, float, int, int | None, int | None] | None:
    """``(b, g, k, lo, hi)`` for these parameters (cached: every object with the same
    parameters shares one bisection), or None when no noise is needed."""
    if sens == 0 or eps == math.inf or delta >= 1 or upper - lower == 0:
        return None
    extra = -math.log1p(-delta) if delta > 0 else 0.0
    extra = max(0.0, math.nextafter(math.nextafter(extra, 0.0), 0.0))
    target = float_down((Fraction(eps) + Fraction(extra)) * (1 - _MARGIN))

    def ok(b: float) -> bool:
        return _loss(b, *_layout(b, sens, lower, upper)) * (1 + _ALLOW) <= target

    lo, hi = _bracket(ok, sens / target, lambda b: _loss(b, *_layout(b, sens, lower, upper))
                      * (1 + _ALLOW) / target)
    for _ in range(200):  # bisection on floats down to adjacent values
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return (hi, *_layout(hi, sens, lower, upper))


def _bracket(ok: Any, b0: float, ratio: Any) -> tuple[float, float]:
    """``(lo, hi)`` with ``hi`` passing ``ok`` and ``lo`` failing it (or ``lo == hi == b0``
    when ``b0`` passes), ``b0 <= lo``, close around the smallest passing scale: secant
    steps on ``log ratio`` against ``log b`` (the first one assumes the loss falls as
    ``1/b``) approach it, then a bracket a few times the last step wide is widened
    geometrically until it holds.  The bisection then runs over a few hundred floats
    instead of a binade."""
    if ok(b0):
        return b0, b0
    x0, y0 = math.log(b0), math.log(ratio(b0))
    x1 = x0 + y0
    width = 2.0 ** -30
    for _ in range(16):
        r1 = ratio(math.exp(x1))
        if not (math.isfinite(r1) and r1 > 0):
            break
        y1 = math.log(r1)
        if y1 == y0:
            break
        x2 = x1 - y1 * (x1 - x0) / (y1 - y0)
        x0, y0 = x1, y1
        width = max(abs(x2 - x1) * 4, 2.0 ** -46)
        if not math.isfinite(x2) or x2 <= math.log(b0):
            x1 = max(x1, math.log(b0))
            break
        x1 = x2
        if width <= 2.0 ** -44:
            break
    b = max(math.exp(x1), b0)
    step = b * width
    hi = b + step
    while not ok(hi):  # the loss falls to 0 as b grows: ends after a few doublings
        step *= 2
        hi = b + step
    step = b * width
    lo = max(b0, b - step)
    while lo > b0 and ok(lo):
        step *= 2
        lo = max(b0, b - step)
    return lo, hi


@functools.lru_cache(maxsize=4096)
def _ratio(b: float, g: float) -> Fraction:
    """``b / g`` exactly (cached with the calibration it belongs to)."""
    return Fraction(b) / Fraction(g)


class LaplaceBoundedDomain(FastChecks, _dm.LaplaceBoundedDomain):
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
    :class:`Laplace`) with a ``1e-12`` relative margin, ``ε(b)`` evaluated in floating point
    as ``m g/b + log1p((1 - q^m) q (1 - q^{N-m}) / (1 - q^{N+1}))`` (positive factors from
    ``expm1``) with a ``2^-40`` relative error allowance (it assumes the platform
    ``exp``/``expm1``/``log1p`` within 2^12 ulps, as :class:`Exponential`'s fast path does).
    An infinite bound (diffprivlib's PCA uses ``[0, inf)``): on a half-line
    ``S(n) = (1 + q - q^{n+1}) / (1 - q)``, the same argument gives
    ``ε(b) = k g/b + ln(1 + q - q^{k+1})``; on the whole line (both bounds infinite) the
    noise is plain discrete Laplace and ``ε(b) = k g/b``.  The bisection is cached by
    parameters (every object with the same ``(ε, δ, Δ, lower, upper)`` shares it).
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

    def _grid(self) -> tuple[float, float, int, int | None, int | None] | None:
        """(b, g, k, lo, hi) for the current parameters, or None when no noise is needed."""
        key = (self.epsilon, self.delta, self.sensitivity, self.lower, self.upper)
        if self._cal_key != key:
            self._cal_key = key
            self._cal = calibrate(*(float(v) for v in key))
            if self._cal is not None:
                self._scale = self._cal[0]
        return self._cal

    def _find_scale(self):
        cal = self._grid()
        return 0.0 if cal is None else cal[0]

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        arr = as_array(value, "biuf", "a number")
        self._check_all(0.0 if arr is not None else value)
        x = np.clip(np.asarray(arr if arr is not None else [value], dtype=np.float64),
                    self.lower, self.upper).reshape(-1)
        special = ~np.isfinite(x)  # NaN, or inf on an unbounded side: returned as is
        kept = x[special]
        x[special] = np.clip(0.0, self.lower, self.upper)
        cal = self._grid()
        out = x if cal is None else self._draw(x, cal)
        out[special] = kept
        return out.reshape(np.shape(arr)) if arr is not None else float(out[0])

    def _draw(self, x: np.ndarray, cal: tuple[float, float, int, int | None, int | None]
              ) -> np.ndarray:
        """Exact discrete Laplace on the grid indices, conditioned on the domain by
        rejection.  Indices are int64 below 2**62 and Python ints beyond (exact either
        way: ``g`` is a power of two, so ``x / g`` is exact)."""
        b, g, _, lo, hi = cal
        t = _ratio(b, g)
        c = np.rint(x / g)
        if lo is not None:
            c = np.maximum(c, lo)
        if hi is not None:
            c = np.minimum(c, hi)
        big = bool(c.size) and (np.max(np.abs(c)) >= 2.0 ** 62
                                or max(abs(lo or 0), abs(hi or 0)) >= 2 ** 62)
        centre = np.array([int(v) for v in c], dtype=object) if big else c.astype(np.int64)
        index = centre.copy()
        # candidates per value and round: about 4 / (the smallest acceptance probability),
        # so nearly every value is settled in one round (the first accepted candidate of an
        # i.i.d. sequence is exactly the conditional law, whatever the batch sizes)
        q = math.exp(-g / b)
        p_min = 0.5
        if lo is not None and hi is not None:  # (1 - q^{N+1}) / (1 + q) at the domain's end
            p_min = -math.expm1((hi - lo + 1) * math.log(q)) / (1 + q)
        per = max(1, min(_MAX_BATCH, math.ceil(4 / max(p_min, 1e-300))))
        if x.size == 1 and not big and p_min >= 1 / 32:
            # a scalar (a model's one release per feature): exact candidates drawn one at a
            # time in pure Python until one falls in the domain (the first accepted of an
            # i.i.d. sequence is the conditional law); no array call per candidate
            ci, words, tf = int(centre[0]), words_for(self._gen), float(t)
            while True:
                y = ci + _small_discrete_laplace(words, t, tf)
                if (lo is None or y >= lo) and (hi is None or y <= hi):
                    return np.clip(np.array([float(y) * g]), self.lower, self.upper)
        if x.size == 1 and not big:  # a scalar: the same draws as below, fewer steps
            ci = int(centre[0])
            while True:
                y1 = _discrete_laplace(per, t, self._gen) + ci
                ok = np.ones(per, bool)
                if lo is not None:
                    ok &= y1 >= lo
                if hi is not None:
                    ok &= y1 <= hi
                if ok.any():
                    out1 = y1[int(ok.argmax()):][:1].astype(np.float64) * g
                    return np.clip(out1, self.lower, self.upper)
        pending = np.arange(x.size)
        while pending.size:
            rows = pending[:max(1, _MAX_BATCH // per)]
            z = _discrete_laplace(rows.size * per, t, self._gen)
            z = z.reshape(rows.size, per)
            y = centre[rows][:, None] + (z.astype(object) if big else z)
            good = np.ones(y.shape, bool)
            if lo is not None:
                good &= np.asarray(y >= lo, bool)
            if hi is not None:
                good &= np.asarray(y <= hi, bool)
            done = good.any(axis=1)
            first = good.argmax(axis=1)
            index[rows[done]] = y[done, first[done]]
            pending = np.concatenate([rows[~done], pending[rows.size:]])
        out = (np.array([float(Fraction(int(v)) * Fraction(g)) for v in index]) if big
               else index.astype(np.float64) * g)
        return np.clip(out, self.lower, self.upper)
