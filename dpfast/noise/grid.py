"""Secure real-valued Laplace and Gaussian noise on a power-of-two grid."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any, cast

import numpy as np

from dpfast._kernels import grid as _grid
from dpfast.noise import _drive, _inputs, _progress, _wrap
from dpfast.random import as_generator

__all__ = ["laplace", "gaussian", "granularity", "GRANULARITY_BITS", "MIN_FLOAT_SCALE",
           "MAX_FLOAT_SCALE", "MIN_GRANULARITY", "MAX_GRANULARITY"]

GRANULARITY_BITS = 40  # default grid: scale / granularity in (2^39, 2^40]
MIN_FLOAT_SCALE = 2.0 ** -1022  # laplace / gaussian scale range (docstrings, ValueError)
MAX_FLOAT_SCALE = 2.0 ** 1000


def granularity(scale: Any, bits: int = GRANULARITY_BITS) -> float:
    """The default output grid for a noise scale: the smallest power of two ``g`` with
    ``scale / g <= 2**bits`` (so the discrete noise keeps about ``bits`` significant bits
    below the scale)."""
    s = float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    m, e = math.frexp(s)  # s = m 2^e, m in [0.5, 1)
    k = e - bits if m > 0.5 else e - 1 - bits
    return math.ldexp(1.0, k)


MIN_GRANULARITY = 2.0 ** -1074  # the smallest positive double
MAX_GRANULARITY = 2.0 ** 960  # grid multiples stay exact up to the largest double
_DBL_MAX = float(np.finfo(np.float64).max)
_FLT_MAX = float(np.finfo(np.float32).max)  # saturation of a float32 out: finite there too


def _check_granularity(g: Any) -> float:
    if isinstance(g, (bool, np.bool_)):
        raise TypeError("granularity must be a power of two, got bool")
    try:
        gf = float(g)
    except (TypeError, ValueError):
        raise TypeError(f"granularity must be a power of two, got {g!r}") from None
    if not (math.isfinite(gf) and gf > 0 and math.frexp(gf)[0] == 0.5):
        raise ValueError(f"granularity must be a positive power of two, got {g!r}")
    if gf > MAX_GRANULARITY:
        raise ValueError(f"granularity must be at most 2**960, got {g!r}")
    return gf


def _grid_fix(flat: np.ndarray, z: np.ndarray, g: float, sat: float, res: np.ndarray,
              nbig: np.ndarray) -> None:
    """Cells ``grid_add`` left (|z| >= 2^53): the exact grid value rounded once."""
    blk = _grid.GRID_BLOCK
    gfrac = Fraction(g)
    for b in np.flatnonzero(nbig):
        lo = int(b) * blk
        zz = z[lo:lo + blk]
        for k in np.flatnonzero(np.abs(zz.astype(np.float64)) >= _grid.EXACT_Z):
            i = lo + int(k)
            res[i] = _drive.grid_value(int(np.rint(flat[i] / g)) + int(z[i]), gfrac, sat)


_PLAIN = (float, int)


def _grid_setup(param: Any, name: str, gran: Any) -> tuple[float, Fraction]:
    """(granularity g, exact scale / g) of a call, checked."""
    parsed, pshape = _drive.parse_param(param, name, lower=MIN_FLOAT_SCALE,
                                        upper=MAX_FLOAT_SCALE)
    if pshape:
        raise TypeError(f"{name} must be a scalar for the float mechanisms")
    scale = cast(Fraction, parsed)  # a scalar parameter parses to its exact Fraction
    g = granularity(float(scale)) if gran is None else _check_granularity(gran)
    return g, _grid_scale(scale, g, name)


@functools.lru_cache(maxsize=1024)
def _grid_setup_cached(param: float | int, name: str, gran: float | int | None
                       ) -> tuple[float, Fraction]:
    """:func:`_grid_setup` for plain float / int arguments (a scalar call's fixed cost;
    the result depends only on their exact values, and refused ones raise every time)."""
    return _grid_setup(param, name, gran)


@functools.lru_cache(maxsize=1024)
def _grid_scale(scale: Fraction, g: float, name: str) -> Fraction:
    """``scale / g`` exactly, checked against the samplers' range (cached: a scalar call's
    fixed cost; a refused pair raises every time)."""
    t = scale / Fraction(g)
    if t > _drive.MAX_SCALE:
        raise ValueError(f"{name} / granularity = {_drive.describe(t)} exceeds 2**50; use a "
                         "coarser granularity")
    if t < _drive.MIN_SCALE:
        raise ValueError(f"{name} / granularity = {_drive.describe(t)} is below 2**-100; use "
                         "a finer granularity")
    return t


def _add_grid(kind: int, x: Any, param: Any, name: str, rng: Any, out: Any,
              gran: Any, progress: Any = False) -> Any:
    x, rewrap = _wrap.unwrap(x)
    arr, out = _inputs.float_input(x, out, float32_out=True)
    new = out is None
    if new and arr.dtype == np.float32:
        # a float32 x gives a float32 result, written by the kernel itself (the float64
        # grid value rounded once more, saturated at FLT_MAX: post-processing) -- no
        # float64 result to convert
        fortran = arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous
        out = _drive.new_output(arr.shape, np.float32, order="F" if fortran else "C")
    tick, close = _progress.ticker(progress, arr.size)
    try:
        res = _grid_noised(kind, arr, param, name, rng, out, gran, tick)
    finally:
        close()
    return rewrap(_inputs.like_input(res, arr)) if new else res


def _grid_noised(kind: int, arr: np.ndarray, param: Any, name: str, rng: Any, out: Any,
                 gran: Any, tick: Any) -> np.ndarray:
    if type(param) in _PLAIN and (gran is None or type(gran) in _PLAIN):
        g, t = _grid_setup_cached(param, name, gran)
    else:
        g, t = _grid_setup(param, name, gran)
    gen = as_generator(rng)
    # x finite and x / g finite (_inputs.check_fit), checked in one of two ways.  Where the
    # output may overwrite x (out shares memory with it), in a pass before anything is
    # written, so x is never left half noised.  Else by the kernels, on every cell as they
    # read it (lim: |x| <= lim exactly when x / g is finite, g a power of two), with no
    # pass of its own: the call raises after its last batch (a failure whose timing does
    # not depend on where the unfit cell is), out (not x) then written but for a few
    # cells (see _grid_run for the kernels' reads).
    inplace = out is not None and np.may_share_memory(out, arr)
    if inplace:
        _inputs.check_fit(arr, g)
    try:
        return _grid_run(kind, gen, arr, g, t, out, not inplace, tick)
    except _drive.UnfitInput:
        _inputs.check_fit(arr, g)  # the precise reason
        raise  # pragma: no cover - check_fit raised


def _grid_run(kind: int, gen: Any, arr: np.ndarray, g: float, t: Fraction, out: Any,
              fused: bool, tick: Any) -> np.ndarray:
    """The noised grid values of x into out (a new float64 array if None); ``fused``: x is
    not checked yet (the kernels check the cells they read from an array they do not write,
    else x is checked here first)."""
    p = _drive.Param(np.array([float(t)]), t)
    n = arr.size
    # the largest grid value: DBL_MAX = (2^53 - 1) 2^971 is a multiple of g (a float32 out
    # saturates at FLT_MAX, a multiple of every g <= 2^104)
    f32 = out is not None and out.dtype == np.float32
    sat = _FLT_MAX if f32 else _DBL_MAX
    # The noise is fused into the grid output (no noise buffer), and the kernel reads each
    # cell before it writes it, so x may be the output itself.  x is read as float64,
    # or as it is when it is float32 going into a float32 out (float32 widens exactly);
    # memory: x of another dtype or layout is converted into the output and noised there
    # (no float64 copy of x) whenever the output has the dtype the kernel reads.
    if out is None or out.flags.c_contiguous:
        result = _drive.new_output(arr.shape, np.float64) if out is None else out
        dst = result.reshape(-1)
        rd = np.float32 if f32 and arr.dtype == np.float32 else np.float64
        if arr.dtype == rd and arr.flags.c_contiguous:
            src = arr.reshape(-1)
            if out is not None and np.shares_memory(out, arr) and not _inputs.same_buffer(
                    out, arr):
                src = src.copy()  # out overlaps x only in part: read x from a copy
        elif result.dtype == rd:
            if np.shares_memory(result, arr):
                arr = arr.copy()
            if fused:  # the kernel will read the output, noised as it goes: check x now
                _inputs.check_fit(arr, g)
                fused = False
            result[...] = arr  # x converted, the conversion the kernel saw before
            src = dst
        else:  # a float64 (or integer) x into a float32 out: read at full precision
            src = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)
        if n:
            _drive.run_discrete(gen, kind, p, n, dst, src, grid=(g, sat, _lim(g, fused)),
                                progress=tick)
        return result
    # a non-contiguous out: noise a contiguous copy of x in place, then copy it out
    if fused:
        _inputs.check_fit(arr, g)
    flat = np.array(arr, dtype=np.float64, order="C").reshape(-1)
    if n:
        _drive.run_discrete(gen, kind, p, n, flat, flat, grid=(g, sat, -1.0), progress=tick)
    out[...] = flat.reshape(arr.shape)
    return out


def _lim(g: float, fused: bool) -> float:
    """``run_discrete``'s ``lim``: ``max double * g`` (``max double`` for ``g > 1``), or
    -1 (x checked already)."""
    return min(_DBL_MAX * g, _DBL_MAX) if fused else -1.0


def laplace(x: Any, scale: Any, *, rng: Any = None, out: np.ndarray | None = None,
            granularity: Any = None, progress: Any = False) -> Any:
    """Secure Laplace noise for real-valued data, on a power-of-two grid.

    Parameters
    ----------
    x : array_like of floats (or integers), pandas Series or DataFrame
        Finite values, any shape (scalars give scalars, pandas gives pandas with the
        same index).
    scale : float, int or Fraction
        Laplace scale ``b``, supported range ``[2**-1022, 2**1000]``; ``b / g`` must lie
        in ``[2**-100, 2**50]``.
    rng : None, Generator or bytes, optional
        As in :func:`discrete_laplace`.
    out : ndarray of float64 or float32, optional
        Same shape as ``x``.  A float32 ``out`` receives the float64 result rounded once
        more to float32, written by the sampling kernel itself (no float64 buffer):
        post-processing of the exact grid value, so the guarantee is unchanged.  ``out``
        may be ``x`` (in place); an ``out`` that shares no memory with ``x`` is left
        partly written when the call raises ``ValueError`` for ``x`` (the kernels check
        ``x`` as they read it: no separate pass over ``x``), while ``x`` itself is never
        left half noised (where ``out`` may overwrite it, ``x`` is checked first).
    granularity : float, optional
        Output grid ``g`` (a power of two, at most ``2**960``).  Default
        :func:`dpfast.noise.granularity` ``(scale)``, the smallest power of two with
        ``scale / g <= 2**40``.

    Returns
    -------
    ndarray of float64 (float32 for a float32 ``x``; Fortran order kept)
        ``round_g(x) + g * Z``, ``Z`` discrete Laplace with scale ``b / g``, i.e. the exact
        grid value rounded once to the nearest double (then to the nearest float32 for a
        float32 ``x``: post-processing, the guarantee is unchanged).

    Raises
    ------
    ValueError
        ``x`` holds a NaN or an infinity, or ``x / g`` overflows (``x`` too large for the
        grid); also for a bad ``scale`` or ``granularity``.
    TypeError
        ``x`` is not real-valued, or ``out`` has another dtype than float64 / float32.

    Privacy
    -------
    Rounding to the grid moves each value by at most ``g / 2``, so neighbouring inputs with
    L1 sensitivity ``Δ`` give grid points at most ``Δ + g`` apart, and the release is
    ``ε = (Δ + g) / b`` differentially private (exactly: ``floor(Δ/g + 1) g / b``).  The
    output support is the grid ``g Z`` for every input, so the floating-point attacks of
    Mironov (CCS 2012) and Jin et al. (S&P 2022) do not apply.  Construction: Google DP
    team, "Secure Noise Generation" (2020); CKS20 for the discrete Laplace.

    Numerics
    --------
    The output is the exact grid value ``(rint(x/g) + Z) g`` rounded once: for
    ``|Z| < 2**53`` both terms are exact doubles and one addition rounds; larger ``Z``
    are added in exact integer arithmetic.  A value beyond the float64 range saturates
    at ``±max double`` (a multiple of every allowed ``g``), so the output is always
    finite and still a function of the exact grid value only (post-processing).  A
    float32 ``out`` holds that double rounded to float32 (saturated at ``±max float32``),
    again a function of the exact grid value only.
    """
    return _add_grid(_drive.LAPLACE, x, scale, "scale", rng, out, granularity, progress)


def gaussian(x: Any, sigma: Any, *, rng: Any = None, out: np.ndarray | None = None,
             granularity: Any = None, progress: Any = False) -> Any:
    """Secure Gaussian noise for real-valued data, on a power-of-two grid.

    Parameters
    ----------
    x : array_like of floats (or integers)
        Finite values, any shape.
    sigma : float, int or Fraction
        Standard deviation ``σ`` of the (discrete) Gaussian; ranges as ``scale`` in
        :func:`laplace`.
    rng, out, granularity, progress
        As in :func:`laplace`; the default grid is :func:`granularity` ``(sigma)``.

    Returns
    -------
    ndarray of float64 (float32 for a float32 ``x``; Fortran order kept)
        ``round_g(x) + g * Z``, ``Z`` discrete Gaussian with ``σ / g`` (rounded to float32
        for a float32 ``x``, as :func:`laplace`).

    Raises
    ------
    ValueError, TypeError
        As in :func:`laplace`.

    Privacy
    -------
    Grid rounding adds at most ``g`` to the L2 sensitivity of a vector of ``d`` values
    only per coordinate: use ``Δ₂' = Δ₂ + g sqrt(d)`` (or ``Δ₂ + g`` for a scalar).  The
    release is ``ρ = Δ₂'² / (2σ²)``-zCDP and satisfies the discrete Gaussian (ε, δ) curve
    of CKS20 Theorem 7 with sensitivity ``Δ₂' / g`` grid units.  Google DP team, "Secure
    Noise Generation" (2020); CKS20.

    Numerics
    --------
    As :func:`laplace`.
    """
    return _add_grid(_drive.GAUSSIAN, x, sigma, "sigma", rng, out, granularity, progress)
