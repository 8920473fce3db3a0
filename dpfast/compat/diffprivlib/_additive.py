"""diffprivlib's additive-noise mechanisms on dpfast's exact samplers.

Each class subclasses diffprivlib's class of the same name (constructor, validation,
attributes, ``repr`` and ``isinstance`` checks unchanged) and replaces how the noise is
drawn: ``randomise`` takes a scalar (returning the same type diffprivlib returns) or a numpy
array (one independent draw per element, vectorized).  Scalar calls are served from
pre-drawn blocks of i.i.d. noise (:class:`dpfast.compat._random_state.NoiseBuffer`).
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import mpmath
import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast.compat._random_state import (
    SHARED_BUFFERS,
    NoiseBuffer,
    generator_for,
    is_unseeded,
    shared_generator,
)
from dpfast.compat.diffprivlib._fastcheck import FastChecks, init_laplace_truncated

__all__ = ["Laplace", "LaplaceTruncated", "LaplaceFolded", "Geometric", "GeometricTruncated",
           "GeometricFolded", "GaussianAnalytic", "GaussianDiscrete"]

_REAL_KINDS = "biuf"
_INT_KINDS = "biu"


def as_array(value: Any, kinds: str, what: str) -> np.ndarray | None:
    """``value`` if it is a numpy array of an accepted dtype kind, None for scalars."""
    if not isinstance(value, np.ndarray):
        return None
    if value.dtype.kind not in kinds:
        raise TypeError(f"Value to be randomised must be {what}; "
                        f"got an array of dtype {value.dtype}")
    return value


def float_down(q: Fraction) -> float:
    """The largest float <= q."""
    f = float(q)
    return f if Fraction(f) <= q else math.nextafter(f, -math.inf)


def grid_add(value: float, g: float, noise: float) -> float:
    """``round_g(value) + noise`` for noise on the grid ``g Z``: the exact grid value,
    rounded once (as :func:`dpfast.laplace` computes it)."""
    v = float(value)
    if not math.isfinite(v):  # diffprivlib: NaN + noise is NaN, inf + noise is inf
        return v
    q = v / g
    if not math.isfinite(q):
        raise ValueError("value / granularity overflows; value is too large for this noise scale")
    return float(round(q)) * g + float(noise)


def noisy_finite(arr: np.ndarray, draw: Any) -> np.ndarray:
    """``draw(x)`` on the finite elements of ``arr``; NaN and inf pass through unchanged
    (diffprivlib's arithmetic gives NaN + noise = NaN, inf + noise = inf)."""
    x = arr.astype(np.float64, copy=False)
    finite = np.isfinite(x)
    if finite.all():
        return draw(x)
    out = x.copy()
    out[finite] = draw(x[finite])
    return out


_SCALARS = frozenset({float, int, np.float64, np.int64})


def _shared_draw_laplace(scale: float, g: float) -> Any:
    def draw(n: int) -> np.ndarray:
        return dpfast.laplace(np.zeros(n), scale, rng=shared_generator(), granularity=g)
    return draw


@functools.lru_cache(maxsize=256)
def _shared_laplace(cal: tuple[float, float]) -> tuple[NoiseBuffer, Any]:
    """(buffer, draw) of the process-wide grid-Laplace blocks of ``cal`` (cached: a tool's
    new mechanism per call finds them without a lock and a lookup; a buffer evicted from
    :data:`SHARED_BUFFERS` keeps working, its values still handed out once)."""
    draw = _shared_draw_laplace(*cal)
    return SHARED_BUFFERS.buffer((draw.__code__, cal)), draw


def _setup(mech: Any, random_state: Any) -> None:
    # unseeded: the process-wide blocks (a new object per call reuses them); seeded: its own
    if is_unseeded(random_state):
        mech._gen, mech._buffer = shared_generator(), SHARED_BUFFERS
    else:
        mech._gen, mech._buffer = generator_for(random_state), NoiseBuffer()


@functools.lru_cache(maxsize=4096)
def _laplace_calibration(epsilon: float, sensitivity: float) -> tuple[float, float]:
    """(scale, granularity) of :class:`dpfast.LaplaceMechanism`, cached by parameters."""
    mech = dpfast.LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)
    return mech.scale, mech.granularity


@functools.lru_cache(maxsize=4096)
def _gaussian_calibration(epsilon: float, delta: float, sensitivity: float
                          ) -> tuple[float, float]:
    """(sigma, granularity) of :class:`dpfast.GaussianMechanism`, cached by parameters."""
    mech = dpfast.GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    return mech.sigma, mech.granularity


@functools.lru_cache(maxsize=4096)
def _discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: int) -> float:
    """Sigma of :class:`dpfast.DiscreteGaussianMechanism` for one coordinate, cached."""
    return dpfast.DiscreteGaussianMechanism(epsilon=epsilon, delta=delta,
                                            sensitivity=sensitivity, max_changed=1).sigma


@functools.lru_cache(maxsize=4096)
def _relaxed_laplace_calibration(eps: float, delta: float, sens: float
                                 ) -> tuple[float, float] | None:
    """(scale, granularity) of the grid Laplace at ``ε' = ε + ln(1/(1 - δ))`` rounded down
    (diffprivlib's relaxed calibration), or None when no noise is needed; cached by
    parameters (diffprivlib's tools build a new mechanism per call)."""
    if sens == 0 or eps == math.inf or delta >= 1:
        return None
    # pure eps' = eps + log(1 / (1 - delta)) (diffprivlib's calibration); eps'-DP implies
    # (eps, delta)-DP.  log1p is < 1 ulp in glibc: two ulps down stay below the true value.
    extra = -math.log1p(-delta) if delta > 0 else 0.0
    extra = max(0.0, math.nextafter(math.nextafter(extra, 0.0), 0.0))
    eps_eff = float_down(Fraction(eps) + Fraction(extra))
    return _laplace_calibration(eps_eff, float(sens))


class _Mixin(FastChecks):
    """What the mixins below use of the diffprivlib mechanism they are mixed into, declared
    for the type checker only (diffprivlib's ``__init__`` sets the attributes and defines
    ``_check_all``; :func:`_setup` sets ``_gen`` and ``_buffer``)."""

    epsilon: float
    delta: float
    sensitivity: float
    _scale: float
    _granularity: float
    _gen: Any
    _buffer: NoiseBuffer

    if TYPE_CHECKING:  # not defined at run time: diffprivlib's own method is the one called
        def _check_all(self, value: Any) -> bool: ...


# ----------------------------------------------------------------------------- Laplace
class _GridLaplace(_Mixin):
    """Shared by Laplace and its truncated/folded variants."""

    def _calibration(self) -> tuple[float, float] | None:
        key = (self.epsilon, self.delta, self.sensitivity)
        if getattr(self, "_cal_key", None) != key:
            self._cal_key, self._cal = key, self._calibrate()
        return self._cal

    def _calibrate(self) -> tuple[float, float] | None:
        return _relaxed_laplace_calibration(self.epsilon, self.delta, self.sensitivity)

    def _noisy(self, value: Any) -> Any:
        if type(value) in _SCALARS:  # one value (a tool's result): no array checks
            self._check_all(value)
            cal = self._calibration()
            if cal is None:
                return float(value)
            if self._buffer is SHARED_BUFFERS:
                buf, draw = _shared_laplace(cal)
                return grid_add(value, cal[1], buf.take(cal, draw))
        arr = as_array(value, _REAL_KINDS, "a number")
        self._check_all(0.0 if arr is not None else value)
        cal = self._calibration()
        if arr is not None:
            if cal is None:
                return arr.astype(np.float64)
            return noisy_finite(arr, lambda x: dpfast.laplace(x, cal[0], rng=self._gen,
                                                              granularity=cal[1]))
        if cal is None:
            return float(value)
        scale, g = cal
        noise = self._buffer.take(cal, lambda n: dpfast.laplace(np.zeros(n), scale, rng=self._gen,
                                                                granularity=g))
        return grid_add(value, g, noise)


class Laplace(_GridLaplace, _dm.Laplace):
    r"""diffprivlib's ``Laplace`` on dpfast's secure grid Laplace.

    Parameters and validation are diffprivlib's: ``epsilon`` in [0, inf], ``delta`` in [0, 1]
    (not both 0), ``sensitivity >= 0``, ``random_state`` (see Notes).  ``randomise`` also
    accepts numpy arrays (independent noise per element).

    Privacy
    -------
    Neighbouring values differ by at most ``sensitivity`` = Δ.  The noise is
    :class:`dpfast.LaplaceMechanism` at ``ε' = ε + ln(1/(1 - δ))`` (diffprivlib's relaxed
    calibration [HLM15], rounded down): ``x`` is rounded to the grid ``g`` (a power of two,
    about ``b / 2^40``) and ``g`` times exact discrete Laplace noise is added, with the scale
    ``b`` chosen so that ``(Δ + g) / b <= ε'``.  The release is ``ε'``-DP, hence
    ``(ε, δ)``-DP: ``P[M(x) ∈ S] <= e^ε P[M(x') ∈ S] + δ`` (``ε'``-DP gives
    ``P <= e^ε P' + 1 - e^{ε - ε'}`` and ``1 - e^{ε-ε'} = δ``).  **Difference from
    diffprivlib**: the noise is the grid (discrete) Laplace, not a float Laplace, and the
    scale is larger by the factor ``(Δ + g) / Δ`` (about ``1 + 2^-40 / ε'``) that pays for
    the rounding; in exchange the guarantee holds exactly, free of floating-point attacks
    (Mironov 2012).  Google DP team, "Secure Noise Generation" (2020); Canonne, Kamath &
    Steinke 2020.

    Notes
    -----
    ``random_state``: None (default) keys the noise from ``os.urandom``; an int derives a
    ChaCha20 key from the seed (SHA-256), a numpy ``RandomState``/``Generator`` supplies 32
    key bytes.  Seeded runs are replayable -- whoever knows the seed can remove the noise --
    so use them for tests only.  ``variance`` is the exact variance of the grid noise and
    ``bias`` the grid rounding ``round_g(v) - v``.
    """

    def __init__(self, *, epsilon, delta=0.0, sensitivity, random_state=None):
        super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                         random_state=random_state)
        _setup(self, random_state)

    def bias(self, value):
        cal = self._calibration()
        if cal is None:
            return 0.0
        return float(round(float(value) / cal[1])) * cal[1] - float(value)

    def variance(self, value):
        self._check_all(0)
        cal = self._calibration()
        if cal is None:
            return 0.0
        scale, g = cal
        with mpmath.workprec(128):
            p = mpmath.exp(-mpmath.mpf(g) / mpmath.mpf(scale))
            return float(mpmath.mpf(g) ** 2 * 2 * p / (1 - p) ** 2)

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array; input not modified)."""
        return self._noisy(value)


class LaplaceTruncated(_GridLaplace, _dm.LaplaceTruncated):
    """diffprivlib's ``LaplaceTruncated``: :class:`Laplace` then clamping to
    ``[lower, upper]`` (post-processing: same guarantee as :class:`Laplace`).  ``bias`` and
    ``variance`` keep diffprivlib's continuous formulas (accurate to ``O(2^-40)``)."""

    def __init__(self, *, epsilon, delta=0.0, sensitivity, lower, upper, random_state=None):
        # (diffprivlib's tools build one per call: its __init__ without the ABC checks when
        # the parameters are plain numbers it accepts; the same attributes either way)
        if not init_laplace_truncated(self, epsilon, delta, sensitivity, lower, upper,
                                      random_state):
            super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                             lower=lower, upper=upper, random_state=random_state)
        _setup(self, random_state)

    def randomise(self, value):
        out = self._noisy(value)
        if isinstance(out, np.ndarray):
            return np.clip(out, self.lower, self.upper)
        return self._truncate(out)


class LaplaceFolded(_GridLaplace, _dm.LaplaceFolded):
    """diffprivlib's ``LaplaceFolded``: :class:`Laplace` then folding into
    ``[lower, upper]`` (post-processing: same guarantee as :class:`Laplace`)."""

    def __init__(self, *, epsilon, delta=0.0, sensitivity, lower, upper, random_state=None):
        super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity, lower=lower,
                         upper=upper, random_state=random_state)
        _setup(self, random_state)

    def randomise(self, value):
        out = self._noisy(value)
        if isinstance(out, np.ndarray):
            return np.vectorize(self._fold, otypes=[np.float64])(out)
        return self._fold(out)


# ----------------------------------------------------------------------------- geometric
class _ExactGeometric(_Mixin):
    def _t(self) -> Fraction | None:
        if self.sensitivity == 0 or self.epsilon == math.inf:
            return None
        return Fraction(self.sensitivity) / Fraction(self.epsilon)

    def _noisy(self, value: Any) -> Any:
        arr = as_array(value, _INT_KINDS, "an integer")
        self._check_all(0 if arr is not None else value)
        t = self._t()
        if arr is not None:
            arr = arr.astype(np.int64) if arr.dtype.kind == "b" else arr
            return arr.copy() if t is None else dpfast.discrete_laplace(arr, t, rng=self._gen)
        if t is None:
            return int(value)
        z = self._buffer.take(t, lambda n: dpfast.discrete_laplace(np.zeros(n, np.int64), t,
                                                                   rng=self._gen))
        return int(value) + int(z)


class Geometric(_ExactGeometric, _dm.Geometric):
    r"""diffprivlib's ``Geometric`` (two-sided geometric / discrete Laplace) drawn exactly.

    Privacy
    -------
    Integer values whose neighbours differ by at most ``sensitivity`` = Δ; noise
    ``P(k) ∝ exp(-ε |k| / Δ)`` with the exact rational scale ``Δ / ε`` (dpfast's exact
    discrete Laplace), so the release is exactly ``ε``-DP (Ghosh, Roughgarden &
    Sundararajan 2009; Canonne, Kamath & Steinke 2020).  Same distribution as diffprivlib
    specifies; diffprivlib's float inversion only approximates it.  Arrays get independent
    noise per element; ``random_state`` as in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, sensitivity=1, random_state=None):
        super().__init__(epsilon=epsilon, sensitivity=sensitivity, random_state=random_state)
        _setup(self, random_state)

    def randomise(self, value):
        """Randomise an integer or an integer numpy array (new array of its dtype)."""
        return self._noisy(value)


class GeometricTruncated(_ExactGeometric, _dm.GeometricTruncated):
    """diffprivlib's ``GeometricTruncated``: exact :class:`Geometric` then clamping to
    ``[lower, upper]`` (post-processing: exactly ``ε``-DP)."""

    def __init__(self, *, epsilon, sensitivity=1, lower, upper, random_state=None):
        super().__init__(epsilon=epsilon, sensitivity=sensitivity, lower=lower, upper=upper,
                         random_state=random_state)
        _setup(self, random_state)

    def randomise(self, value):
        """Randomise an integer or an integer numpy array: noise and clamping are computed
        in int64 (a narrow dtype's own range would overflow before the clamp) and the
        result is returned in the input's dtype when ``[lower, upper]`` fits it."""
        if not isinstance(value, np.ndarray) or value.dtype.kind not in "iu":
            out = self._noisy(value)
            return out if isinstance(out, np.ndarray) else int(self._truncate(out))
        if value.size and value.dtype == np.uint64 and int(value.max()) > 2 ** 63 - 1:
            raise OverflowError("uint64 values above 2**63 - 1 are not supported")
        out = self._noisy(value.astype(np.int64))
        info = np.iinfo(np.int64)
        if math.isfinite(self.lower) and self.lower > info.min:
            np.maximum(out, min(int(self.lower), info.max), out=out)
        if math.isfinite(self.upper) and self.upper < info.max:
            np.minimum(out, max(int(self.upper), info.min), out=out)
        target = np.iinfo(value.dtype)
        if target.min <= self.lower and self.upper <= target.max:
            return out.astype(value.dtype)
        return out


class GeometricFolded(_ExactGeometric, _dm.GeometricFolded):
    """diffprivlib's ``GeometricFolded``: exact :class:`Geometric` then folding into
    ``[lower, upper]`` (post-processing: exactly ``ε``-DP)."""

    def __init__(self, *, epsilon, sensitivity=1, lower, upper, random_state=None):
        super().__init__(epsilon=epsilon, sensitivity=sensitivity, lower=lower, upper=upper,
                         random_state=random_state)
        _setup(self, random_state)

    def randomise(self, value):
        out = self._noisy(value)
        if isinstance(out, np.ndarray):
            return np.vectorize(lambda v: int(np.round(self._fold(v))), otypes=[np.int64])(out)
        return int(np.round(self._fold(out)))


# ----------------------------------------------------------------------------- Gaussian
class _GridGaussian(_Mixin):
    def _noisy(self, value: Any) -> Any:
        arr = as_array(value, _REAL_KINDS, "a number")
        self._check_all(0.0 if arr is not None else value)
        sigma, g = self._scale, self._granularity
        if arr is not None:
            if sigma == 0:
                return arr.astype(np.float64)
            return noisy_finite(arr, lambda x: dpfast.gaussian(x, sigma, rng=self._gen,
                                                               granularity=g))
        if sigma == 0:
            return float(value)
        noise = self._buffer.take((sigma, g), lambda n: dpfast.gaussian(
            np.zeros(n), sigma, rng=self._gen, granularity=g))
        return grid_add(value, g, noise)


class GaussianAnalytic(_GridGaussian, _dm.GaussianAnalytic):
    r"""diffprivlib's ``GaussianAnalytic`` on dpfast's secure grid Gaussian.

    Privacy
    -------
    Neighbouring values differ by at most ``sensitivity`` = Δ (L2).  The noise is
    :class:`dpfast.GaussianMechanism` ``(ε, δ, Δ)``: analytic Gaussian calibration (Balle &
    Wang 2018) for the sensitivity ``Δ + g`` that includes the grid rounding, at
    ``δ - η`` where ``η <= 1.5e-12 (1 + e^ε)`` bounds the discrete-versus-continuous
    difference, all rounded to the safe side.  Guarantee: ``(ε, δ)``-DP exactly as
    diffprivlib states, ``P[M(x) ∈ S] <= e^ε P[M(x') ∈ S] + δ``.  **Difference**: grid
    (discrete Gaussian) noise instead of float normals, and ``_scale`` (σ) is dpfast's
    rigorous calibration (it may differ from diffprivlib's float bisection in the last
    digits).  ``delta >= 1``, ``sensitivity == 0`` or ``epsilon == inf`` add no noise.
    ``random_state`` as in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, delta, sensitivity, random_state=None):
        super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                         random_state=random_state)
        _setup(self, random_state)
        self._granularity = 0.0
        if self.sensitivity == 0 or self.epsilon == math.inf or self.delta >= 1:
            self._scale = 0.0
        else:
            self._scale, self._granularity = _gaussian_calibration(
                float(self.epsilon), float(self.delta), float(self.sensitivity))

    def randomise(self, value):
        """Randomise a number or a numpy array (new float array)."""
        return self._noisy(value)


class GaussianDiscrete(_dm.GaussianDiscrete):
    r"""diffprivlib's ``GaussianDiscrete`` drawn with dpfast's exact discrete Gaussian.

    Privacy
    -------
    An integer value whose neighbours differ by at most ``sensitivity`` = Δ (a scalar query,
    as diffprivlib's mechanism is; an array gets independent noise per element, each element
    its own scalar release).  σ is :class:`dpfast.DiscreteGaussianMechanism`
    ``(ε, δ, Δ, max_changed=1)``: the exact one-dimensional ``(ε, δ)`` formula of Canonne,
    Kamath & Steinke 2020, Thm. 7, evaluated rigorously and rounded up, so the release is
    ``(ε, δ)``-DP.  **Difference**: ``_scale`` is that rigorous calibration, which
    can be smaller than diffprivlib's bisection result (e.g. ε = 3, δ = 4.009e-10: 1.9573
    versus 2.0; Thm. 7's δ is not monotone in σ and both satisfy it).  ``random_state`` as
    in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, delta, sensitivity=1, random_state=None):
        super().__init__(epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                         random_state=random_state)
        _setup(self, random_state)

    def _find_scale(self):
        if self.sensitivity == 0 or self.epsilon == math.inf or self.delta >= 1:
            return 0
        return _discrete_gaussian_sigma(float(self.epsilon), float(self.delta),
                                        int(self.sensitivity))

    def randomise(self, value):
        """Randomise an integer or an integer numpy array (new array of its dtype)."""
        arr = as_array(value, _INT_KINDS, "an integer")
        self._check_all(0 if arr is not None else value)
        sigma = self._scale
        if arr is not None:
            arr = arr.astype(np.int64) if arr.dtype.kind == "b" else arr
            return arr.copy() if sigma == 0 else dpfast.discrete_gaussian(arr, sigma, rng=self._gen)
        if sigma == 0:
            return int(value)
        z = self._buffer.take(sigma, lambda n: dpfast.discrete_gaussian(
            np.zeros(n, np.int64), sigma, rng=self._gen))
        return int(value) + int(z)
