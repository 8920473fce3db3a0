"""DP-SGD helpers: per-example clipping and secure Gaussian noise on the clipped sum.

One step of DP-SGD (Abadi et al., CCS 2016) clips every per-example gradient to L2 norm
``clip_norm``, sums the clipped gradients, adds Gaussian noise of standard deviation
``noise_multiplier * clip_norm`` and divides by the batch size.  :func:`clip_and_noise`
does this with exact, secure noise (a discrete Gaussian on a 2^k grid, see
:func:`dpfast.gaussian`) and an exact integer sum, so that the stated guarantee holds
for the floating-point computation actually performed, not just for its real-number
idealisation.  The privacy cost of a training run is computed by the accountant::

    from dpfast.accounting import calibrate_noise_multiplier, dpsgd_epsilon
    sigma = calibrate_noise_multiplier(target_epsilon, delta, sampling_rate, steps)
    ...
    update = clip_and_noise(per_example_grads, clip_norm, sigma, batch_size=rate * n)

Public as ``dpfast.dpsgd`` (the top-level facade: ``dpfast.dpsgd.clip_and_noise``).
"""

from __future__ import annotations

import functools
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._core.rounding import ceil_sqrt as _ceil_sqrt
from dpfast._core.rounding import float_up
from dpfast._core.validate import check_finite
from dpfast._kernels import dpsgd as _k
from dpfast.random import RngLike

__all__ = ["clip_and_noise", "clip_per_example", "noise_sigma"]

_U = Fraction(1, 2**53)  # unit roundoff of float64
_MIN_CLIP = 2.0**-400
_MAX_CLIP = 2.0**400


# --------------------------------------------------------------------------- validation


def _check_clip_norm(clip_norm: Any) -> float:
    c = check_finite(clip_norm, "clip_norm")
    if not (_MIN_CLIP <= c <= _MAX_CLIP):
        raise ValueError(f"clip_norm must lie in [2**-400, 2**400], got {c!r}")
    return c


def _check_grads(per_example_grads: Any) -> np.ndarray:
    a = np.asarray(per_example_grads)
    if a.dtype == np.bool_ or a.dtype.kind not in "fiu":
        raise TypeError(
            f"per_example_grads must be a real (float or integer) array, got dtype {a.dtype}"
        )
    if a.ndim != 2:
        raise ValueError(
            f"per_example_grads must be 2-D (batch, params), got shape {a.shape}"
        )
    a = np.ascontiguousarray(a, dtype=np.float64)  # copies unless already float64 C-order
    if not np.isfinite(a).all():
        raise ValueError("per_example_grads must be finite (found NaN or inf)")
    return a


# --------------------------------------------------------------------------- exact bounds


def _gamma(n: int) -> Fraction:
    """Higham's gamma_n = n u / (1 - n u), bound on the relative error of n roundings."""
    return n * _U / (1 - n * _U)


@functools.lru_cache(maxsize=256)
def _clip_bound_factor(n_params: int) -> Fraction:
    """rho >= 1 with ||clipped row||_2 <= rho * clip_norm for the floating-point clipping.

    The squared norm is a left-to-right float sum of ``n_params`` squares (relative error
    <= gamma_{n}; underflowing squares add < n * 2^-1074, which is below
    ``gamma_1 * clip_norm^2`` for clip_norm >= 2^-400 and n <= 2^60), the square root,
    the division and each product round once more.
    """
    g = _gamma(n_params + 2)
    return (1 + _U) ** 3 / ((1 - _U) * (1 - g))


def noise_sigma(clip_norm: float, noise_multiplier: float, n_params: int) -> tuple[float, float]:
    """Standard deviation and grid actually used by :func:`clip_and_noise`.

    Parameters
    ----------
    clip_norm, noise_multiplier : float
        As for :func:`clip_and_noise`.
    n_params : int
        Number of parameters (columns of the per-example gradients).

    Returns
    -------
    sigma : float
        The smallest float with ``sigma >= noise_multiplier * sensitivity`` where
        ``sensitivity = rho * clip_norm + sqrt(n_params) * g`` bounds the L2 change of the
        grid-rounded clipped sum when one example is added or removed (``rho - 1`` is a
        few ``n_params * 2^-53`` from floating-point clipping; ``g`` the grid).
    granularity : float
        The grid ``g = dpfast.granularity(sigma)`` (a power of two, about ``sigma/2^40``),
        found as a fixed point since it depends on ``sigma``.
    """
    c = _check_clip_norm(clip_norm)
    nm = check_finite(noise_multiplier, "noise_multiplier")
    if nm <= 0:
        raise ValueError(f"noise_multiplier must be > 0, got {nm!r}")
    if isinstance(n_params, bool) or not isinstance(n_params, numbers.Integral) or n_params < 1:
        raise ValueError(f"n_params must be a positive integer, got {n_params!r}")
    return _noise_sigma(c, nm, int(n_params))


@functools.lru_cache(maxsize=256)
def _noise_sigma(clip_norm: float, noise_multiplier: float, n_params: int) -> tuple[float, float]:
    """Cached body of :func:`noise_sigma` (validated arguments)."""
    from dpfast import noise

    c = Fraction(clip_norm)
    nm = noise_multiplier
    n = n_params
    base = Fraction(nm) * _clip_bound_factor(n) * c
    root = _ceil_sqrt(n)
    sigma = float_up(base)
    for _ in range(200):
        g = float(noise.granularity(sigma))
        need = float_up(base + Fraction(nm) * root * Fraction(g))
        if need <= sigma:
            return sigma, g
        sigma = need
    raise RuntimeError("noise_sigma: granularity fixed point did not converge")  # pragma: no cover


# --------------------------------------------------------------------------- public API


def clip_per_example(per_example_grads: Any, clip_norm: float) -> np.ndarray:
    """Clip each row of ``per_example_grads`` to L2 norm at most ``clip_norm``.

    Row ``i`` is multiplied by ``min(1, clip_norm / ||g_i||_2)``, where the norm is the
    square root of the sum of squares accumulated left to right (rows within the bound
    are returned unchanged, bit for bit).  Runs in parallel over rows.

    Parameters
    ----------
    per_example_grads : array_like, shape (batch, params)
        Real-valued per-example gradients; not modified.
    clip_norm : float
        The L2 bound, in ``[2**-400, 2**400]``.

    Returns
    -------
    numpy.ndarray
        A new float64 array of the same shape.

    Notes
    -----
    Floating-point rounding can leave a clipped row a few ``params * 2^-53`` (relative)
    above ``clip_norm``; :func:`clip_and_noise` accounts for this in its noise.
    """
    a = _check_grads(per_example_grads)
    c = _check_clip_norm(clip_norm)
    norms = np.empty(a.shape[0], np.float64)
    factors = np.empty(a.shape[0], np.float64)
    out = np.empty_like(a)
    if a.size >= _k.PARALLEL_MIN:
        _k.clip_factors(a, c, norms, factors)
        _k.clip_rows(a, factors, out)
    elif a.size:
        _k.clip_factors_serial(a, c, norms, factors)
        np.multiply(a, factors[:, None], out=out)
    return out


def clip_and_noise(
    per_example_grads: Any,
    clip_norm: float,
    noise_multiplier: float,
    *,
    rng: RngLike = None,
    batch_size: float | None = None,
) -> np.ndarray:
    """Clip per-example gradients, sum them, add secure Gaussian noise, return the mean.

    Parameters
    ----------
    per_example_grads : array_like, shape (batch, params)
        Real-valued per-example gradients (one row per example); not modified.  May have
        zero rows (an empty Poisson sample), then ``batch_size`` is required.
    clip_norm : float
        L2 bound ``C`` each row is clipped to, in ``[2**-400, 2**400]``.
    noise_multiplier : float
        ``z > 0``: the noise standard deviation is ``z * C`` (slightly more, see
        Numerics), i.e. the Gaussian mechanism with noise multiplier ``z``.
    rng : None, dpfast.Generator or bytes, optional
        Source of randomness: the process-wide default generator, a generator, or a
        32-byte key (replayable; whoever holds the key can remove the noise).
    batch_size : float, optional
        Denominator of the mean.  Default: the number of rows.  Under Poisson sampling the
        actual batch size is itself private, so pass the *expected* batch size
        ``sampling_rate * dataset_size`` (as Opacus does); dividing by a public constant
        is post-processing.

    Returns
    -------
    numpy.ndarray, shape (params,)
        ``(sum_i clip(g_i) + noise) / batch_size`` as float64.

    Privacy
    -------
    Neighbouring relation: add or remove one example (one row).  The noisy sum
    ``S(D) + N`` is the Gaussian mechanism with noise multiplier ``z``: with
    ``Delta = sup ||S(D) - S(D')||_2 <= C`` it satisfies ``D_alpha <= alpha / (2 z^2)``
    (Renyi DP of order ``alpha`` for all ``alpha > 1``, i.e. ``1/(2 z^2)``-zCDP), which
    holds for the discrete Gaussian exactly as for the continuous one (Canonne, Kamath,
    Steinke 2020, Thm. 4 and Sec. 5).  A training run of ``T`` steps with Poisson sampling
    rate ``q`` is described by ``SelfComposed(PoissonSampled(Gaussian(z), q), T)``; use
    :func:`dpfast.accounting.dpsgd_epsilon` (Abadi et al. 2016; Mironov, Talwar, Zhang
    2019) for its ``(epsilon, delta)``.  The subsampled-Gaussian RDP analysis is proven
    for continuous noise; the discrete Gaussian used here has ``sigma / g >= 2^39`` grid
    steps and matches it up to that resolution (the same convention as OpenDP's and
    Google's secure Gaussian samplers).

    Numerics
    --------
    Each clipped coordinate is rounded to the grid ``g = dpfast.granularity(sigma)``
    (a power of two, about ``sigma / 2^40``) and the rows are summed exactly in int64, so
    the sum does not depend on order or thread count and its sensitivity is bounded
    rigorously: ``Delta <= rho C + sqrt(params) g`` with ``rho - 1 <= (params + 5) 2^-53``
    covering the floating-point norm and scaling.  The standard deviation actually used is
    ``sigma = z * (rho C + sqrt(params) g)`` rounded up (:func:`noise_sigma`), so the
    effective noise multiplier is never below ``z``.  Noise is an exact discrete Gaussian
    with parameter ``sigma / g`` (:func:`dpfast.discrete_gaussian`) added to the integer
    sum; conversion to float and division by ``batch_size`` are post-processing.

    Raises
    ------
    TypeError
        For a non-real array or non-numeric parameters.
    ValueError
        For a wrong shape, non-finite gradients, or out-of-range parameters.
    OverflowError
        If the grid sum could overflow int64 (``noise_multiplier`` far below 2^-20).
    """
    from dpfast import noise

    a = _check_grads(per_example_grads)
    c = _check_clip_norm(clip_norm)
    n_rows, n_cols = a.shape
    if n_cols == 0:
        raise ValueError("per_example_grads must have at least one column (params)")
    if batch_size is None:
        if n_rows == 0:
            raise ValueError(
                "per_example_grads has no rows: pass batch_size (the expected batch size "
                "under Poisson sampling)"
            )
        denom = float(n_rows)
    else:
        denom = check_finite(batch_size, "batch_size")
        if denom <= 0:
            raise ValueError(f"batch_size must be > 0, got {denom!r}")
    sigma, g = noise_sigma(c, noise_multiplier, n_cols)

    # |rint(c_ij / g)| <= rho C / g + 1 per row; the int64 sum must not overflow
    per_row = float(_clip_bound_factor(n_cols)) * c / g + 2.0
    if per_row * max(n_rows, 1) >= 2.0**62:
        raise OverflowError(
            "clip_and_noise: the grid sum could overflow int64; noise_multiplier is too small "
            "relative to the batch size"
        )
    total = np.zeros(n_cols, np.int64)
    if n_rows:
        norms = np.empty(n_rows, np.float64)
        factors = np.empty(n_rows, np.float64)
        if a.size >= _k.PARALLEL_MIN:
            _k.clip_factors(a, c, norms, factors)
            _k.clipped_grid_sum(a, factors, 1.0 / g, total)
        else:
            _k.clip_factors_serial(a, c, norms, factors)
            _k.clipped_grid_sum_serial(a, factors, 1.0 / g, total)
    noisy = noise.discrete_gaussian(total, sigma / g, rng=rng, out=total)  # sigma/g exact
    return noisy.astype(np.float64) * g / denom
