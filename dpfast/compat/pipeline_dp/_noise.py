"""Additive noise (scalar, vector, the mean/variance parts) and the exponential mechanism of
PipelineDP drawn by dpfast (the guarantees: :mod:`dpfast.compat.pipeline_dp`)."""

from __future__ import annotations

import contextlib
import functools
import math
import weakref
from fractions import Fraction
from typing import Any

import numpy as np
from pipeline_dp import aggregate_params as _ap
from pipeline_dp import dp_computations as _dc

import dpfast
from dpfast._core.rounding import float_down, float_up
from dpfast.compat.pipeline_dp._state import ORIGINAL, SCALAR_BUFFERS
from dpfast.compat.pipeline_dp._state import gen as _gen

_EXACT_INT = float(2 ** 53)
_SCALARS = frozenset({float, int, np.float64, np.int64})
# per mechanism object: (installed generator, {on integers: scalar plan}); weak, so that
# PipelineDP's mechanisms stay picklable and are freed with their combiners
_MEMO: weakref.WeakKeyDictionary[Any, tuple[Any, dict[bool, Any]]] = (
    weakref.WeakKeyDictionary())


def _on_integers(x: np.ndarray) -> bool:
    if x.ndim == 0:  # a scalar (the per-partition path): no array reductions
        v = float(x)
        return math.isfinite(v) and v == round(v) and abs(v) < _EXACT_INT
    return bool(np.all(np.isfinite(x)) and np.all(x == np.rint(x))
                and np.all(np.abs(x) < _EXACT_INT))


@functools.lru_cache(maxsize=4096)
def _laplace_params(eps: float, sens: float, m: int) -> tuple[float, float]:
    """(scale, g) of :class:`dpfast.LaplaceMechanism` (cached: no per-call calibration)."""
    mech = dpfast.LaplaceMechanism(epsilon=eps, sensitivity=sens, max_changed=m)
    return mech.scale, mech.granularity


@functools.lru_cache(maxsize=4096)
def _laplace_epsilon(sens: float, b: float) -> float:
    """PipelineDP's ``ε = Δ₁ / b`` rounded down (cached: a new mechanism per partition)."""
    return float_down(Fraction(sens) / Fraction(b))


@functools.lru_cache(maxsize=4096)
def _gaussian_params(sigma: float, sens: float, m: int, eps: float, delta: float
                     ) -> tuple[float, float]:
    """(σ_final, g): RDP-preserving inflation of σ for the grid, and at least dpfast's
    rigorous (ε, δ) calibration when (ε, δ) are known (cached by parameters)."""
    sigma_cal, g = 0.0, dpfast.granularity(sigma)
    if eps > 0 and 0 < delta < 1 and m <= (1 << 20):
        with contextlib.suppress(ValueError):
            mech = dpfast.GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens,
                                            max_changed=m)
            sigma_cal, g = mech.sigma, mech.granularity
    root_m = math.isqrt(m - 1) + 1 if m > 1 else 1  # ceil(sqrt(m))
    inflated = float_up(Fraction(sigma) * (Fraction(sens) + root_m * Fraction(g))
                         / Fraction(sens))
    return max(sigma_cal, inflated), g


def _draw(kind: str, scale: float, g: float, n: int, gen: Any = None) -> np.ndarray:
    fn = dpfast.laplace if kind == "laplace" else dpfast.gaussian
    return fn(np.zeros(n), scale, rng=_gen() if gen is None else gen, granularity=g)


def _scalar_noise(kind: str, scale: float, g: float) -> float:
    """One grid noise value from the shared pre-drawn blocks of the installed generator."""
    gen = _gen()
    return float(SCALAR_BUFFERS.take((kind, scale, g, id(gen)),
                                      lambda n: _draw(kind, scale, g, n, gen)))


def _noise_params(mech: Any, x: np.ndarray) -> tuple[str, float, float] | None:
    """(kind, scale, grid) for ``mech`` on ``x``, or None to keep PyDP's noise."""
    l0 = getattr(mech, "_dpfast_l0", None)
    # (changed coordinates, whether the grid must be <= 1): integers lie on every grid g <= 1
    candidates = [(1, True)] if _on_integers(x) else []
    if l0 is not None:
        candidates.append((int(l0) * max(1, x.size), False))
    sens = float(mech.sensitivity)
    for m, fine in candidates:
        if isinstance(mech, _dc.LaplaceMechanism):
            params = ("laplace", *_laplace_params(
                _laplace_epsilon(sens, float(mech.noise_parameter)), sens, m))
        else:
            pydp = mech._mechanism
            params = ("gaussian", *_gaussian_params(float(mech.std), sens, m,
                                                    float(pydp.epsilon), float(pydp.delta)))
        if not fine or params[2] <= 1:
            return params
    return None


def _scalar_plan(mech: Any, v: float, on_int: bool) -> Any:
    """``(kind, scale, g, buffer, draw, tag)`` of ``mech`` for a finite scalar, memoized
    per mechanism object (weakly: nothing is added to the object, which stays picklable)
    and installed generator (PipelineDP calls one mechanism per partition and metric; its
    parameters never change); None: sensitivity 0 (no noise); "pydp": keep PyDP's noise."""
    gen = _gen()
    memo: tuple[Any, dict[bool, Any]] | None = _MEMO.get(mech)
    if memo is None or memo[0] is not gen:
        memo = _MEMO[mech] = (gen, {})
    plan = memo[1].get(on_int, False)
    if plan is False:
        params = (None if mech.sensitivity == 0
                  else _noise_params(mech, np.asarray(v, dtype=np.float64)))
        if mech.sensitivity == 0:
            plan = None
        elif params is None:
            plan = "pydp"
        else:
            kind, scale, g = params

            def draw(n: int) -> np.ndarray:
                return _draw(kind, scale, g, n, gen)

            tag = (kind, scale, g, id(gen))
            plan = (kind, scale, g, SCALAR_BUFFERS.buffer(("scalar", tag)), draw, tag)
        memo[1][on_int] = plan
    return plan


def _add_noise(self: Any, value: Any) -> Any:
    """dpfast replacement of ``AdditiveMechanism.add_noise`` (see the module docstring)."""
    if type(value) in _SCALARS:  # the per-partition path (SUM's are numpy.float64): no arrays
        v = float(value)
        if math.isfinite(v):
            plan = _scalar_plan(self, v, v == round(v) and abs(v) < _EXACT_INT)
            if plan is None:  # sensitivity 0
                return v
            if plan == "pydp":
                return ORIGINAL["add_noise"](self, value)
            _, _, g, buf, draw, tag = plan
            q = v / g
            if not math.isfinite(q):
                raise ValueError("value / granularity overflows; value is too large for "
                                 "this noise")
            return float(round(q)) * g + float(buf.take(tag, draw))
    x = np.asarray(value, dtype=np.float64)
    if self.sensitivity == 0:
        return x.copy() if isinstance(value, np.ndarray) else float(x)
    params = _noise_params(self, x)
    if params is None:
        return ORIGINAL["add_noise"](self, value)
    kind, scale, g = params
    if isinstance(value, np.ndarray):
        fn = dpfast.laplace if kind == "laplace" else dpfast.gaussian
        return fn(x, scale, rng=_gen(), granularity=g)
    noise = _scalar_noise(kind, scale, g)
    q = float(x) / g
    if not math.isfinite(q):
        raise ValueError("value / granularity overflows; value is too large for this noise")
    return float(round(q)) * g + float(noise)


def _create_additive_mechanism(mechanism_spec: Any, sensitivities: Any) -> Any:
    mech = ORIGINAL["create_additive_mechanism"](mechanism_spec, sensitivities)
    if sensitivities.l0 is not None:
        mech._dpfast_l0 = int(sensitivities.l0)
    return mech


def _vector_sensitivity(vec: np.ndarray, p: Any) -> float:
    l0, noise, norm = p.l0_sensitivity, p.noise_kind, p.norm_kind
    if noise == _ap.NoiseKind.LAPLACE:
        if norm == _ap.NormKind.L1:
            return p.max_norm * l0
        if norm == _ap.NormKind.Linf:
            return p.max_norm * vec.size * l0
        raise ValueError(f"Unknown or invalid norm kind {norm} for Laplace mechanism.")
    if noise == _ap.NoiseKind.GAUSSIAN:
        if norm == _ap.NormKind.L2:
            return p.max_norm * math.sqrt(l0)
        if norm == _ap.NormKind.Linf:
            return p.max_norm * math.sqrt(vec.size) * math.sqrt(l0)
        raise ValueError(f"Unknown or invalid norm kind {norm} for Gaussian mechanism.")
    raise ValueError("Unknown noise kind.")


def _add_noise_vector(vec: np.ndarray, noise_params: Any) -> np.ndarray:
    """dpfast replacement of ``dp_computations.add_noise_vector``: PipelineDP's sensitivity,
    one vectorized dpfast mechanism with ``max_changed = l0 · d`` (rigorous)."""
    x = np.asarray(vec, dtype=np.float64)
    sens = _vector_sensitivity(x, noise_params)
    m = int(math.ceil(noise_params.l0_sensitivity)) * max(1, x.size)
    if noise_params.noise_kind == _ap.NoiseKind.LAPLACE:
        mech = dpfast.LaplaceMechanism(epsilon=noise_params.eps, sensitivity=sens, max_changed=m)
        return mech(x, rng=_gen())
    eps, delta = noise_params.eps, noise_params.delta
    sigma, g = _gaussian_params(_dc.compute_sigma(eps, delta, sens), sens, m, eps, delta)
    return dpfast.gaussian(x, sigma, rng=_gen(), granularity=g)


def _add_random_noise(value, eps, delta, l0_sensitivity, linf_sensitivity, noise_kind):
    """dpfast replacement of ``dp_computations._add_random_noise`` (mean/variance parts)."""
    m = int(math.ceil(l0_sensitivity))
    if noise_kind == _ap.NoiseKind.LAPLACE:
        sens = float(_dc.compute_l1_sensitivity(l0_sensitivity, linf_sensitivity))
        kind, (scale, g) = "laplace", _laplace_params(float(eps), sens, m)
    elif noise_kind == _ap.NoiseKind.GAUSSIAN:
        sens = float(_dc.compute_l2_sensitivity(l0_sensitivity, linf_sensitivity))
        kind, (scale, g) = "gaussian", _gaussian_mech_params(float(eps), float(delta), sens, m)
    else:
        raise ValueError("Noise kind must be either Laplace or Gaussian.")
    v = float(value)
    if sens == 0 or not math.isfinite(v):
        return v
    q = v / g
    if not math.isfinite(q):
        raise ValueError("value / granularity overflows; value is too large for this noise")
    return float(round(q)) * g + _scalar_noise(kind, scale, g)


@functools.lru_cache(maxsize=4096)
def _gaussian_mech_params(eps: float, delta: float, sens: float, m: int) -> tuple[float, float]:
    """(sigma, g) of :class:`dpfast.GaussianMechanism` (cached by parameters)."""
    mech = dpfast.GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens, max_changed=m)
    return mech.sigma, mech.granularity


# ----------------------------------------------------------------------------- exponential
def _exponential_apply(self: Any, eps: float, inputs_to_score_col: list) -> Any:
    """dpfast replacement of ``ExponentialMechanism.apply``: exact exponential mechanism."""
    f = self._scoring_function
    scores = np.array([f.score(k) for k in inputs_to_score_col], dtype=np.float64)
    i = dpfast.exponential(scores, epsilon=eps, sensitivity=f.global_sensitivity,
                           monotonic=bool(f.is_monotonic), rng=_gen())
    return inputs_to_score_col[int(i)]


