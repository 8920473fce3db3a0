"""Cell-addressed integer noise: noise a slice of an array on its own, bit for bit.

``discrete_laplace(x, scale, rng=key, stream=s, offset=a)`` adds to ``x`` the noise that
cells ``a, a + 1, ...`` of the call ``(key, s)`` get: noising a whole array with
``offset=0`` or any of its slices ``x[a:b]`` with ``offset=a`` (in any process, on any
number of threads) gives the same values for the same cells.  The noise of flat cell
``i`` is a function of (key, ``stream``, ``i``) only.  :func:`laplace` / :func:`gaussian`
are the float grid mechanisms of :mod:`dpfast.noise.grid` with this integer noise as ``Z``.

Streams: the call's ChaCha20 key is ``derive_key(key, ADDRESSED_ARRAY_TAG, stream)``
(:func:`dpfast.noise._addressed.derive_key`), never the generator's key itself, so addressed
calls share no keystream with the generator's allocator, the per-key table noise (its own
tag) or each other (distinct ``stream``).  Cells ``[j CHUNK, (j + 1) CHUNK)`` are drawn in
order from nonce ``(j mod 2**32, j >> 32, 0)``, block counters ``[0, 2**31)``; their
undecided cells continue exactly on the same nonce from counter ``2**31``.  A slice
starting inside a chunk recomputes that chunk's first cells (at most ``CHUNK - 1``) and
discards them.

Pick ``stream`` values the way you pick file names: two *different* calls with the same
key and ``stream`` get the same noise (that is the point of addressing); use each
``stream`` for one array.
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast._kernels import grid as _gk
from dpfast.noise import _addressed, _drive, _inputs, grid
from dpfast.noise.integers import _add_checked

__all__ = ["discrete_laplace", "discrete_gaussian", "laplace", "gaussian", "noise_cells",
           "ADDRESSED_ARRAY_TAG"]

ADDRESSED_ARRAY_TAG = b"dpfast.addressed-array v1"
_SLICE = 1 << 20  # the float functions work in slices of this many cells (bounded memory)


def _index(v: Any, name: str, upper: int) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    v = int(v)
    if not 0 <= v < upper:
        raise ValueError(f"{name} must be in [0, 2**{upper.bit_length() - 1}), got {v}")
    return v


def noise_cells(kind: int, t: Fraction, key: bytes, stream: int, offset: int, n: int
                ) -> np.ndarray:
    """int64 noise of flat cells ``offset .. offset + n - 1`` of the call ``(key, stream)``
    (kind 0: discrete Laplace of scale ``t``; 1: discrete Gaussian of sigma ``t``)."""
    chunk = _drive.CHUNK
    if n == 0:
        return np.zeros(0, np.int64)
    kw = _addressed.key_words(_addressed.derive_key(key, ADDRESSED_ARRAY_TAG, stream))
    j0 = offset // chunk
    j1 = -(-(offset + n) // chunk)
    base = j0 * chunk
    js = np.arange(j0, j1, dtype=np.uint64)
    nonces = np.zeros((j1 - j0, 3), np.uint32)
    nonces[:, 0] = (js & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    nonces[:, 1] = (js >> np.uint64(32)).astype(np.uint32)
    starts = np.arange(j1 - j0, dtype=np.int64) * chunk
    ends = np.minimum(starts + chunk, offset + n - base)
    tmp = np.empty(offset + n - base, np.int64)
    _addressed.run_chunks(kw, nonces, starts, ends, kind, t, tmp)
    return tmp[offset - base:]


def _add(kind: int, x: Any, param: Any, name: str, rng: Any, stream: Any, offset: Any
         ) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    s = _index(stream, "stream", 1 << 64)
    a = _index(offset, "offset", 1 << 62)
    if a + arr.size >= 1 << 62:
        raise ValueError("offset + x.size must be below 2**62")
    parsed, pshape = _drive.parse_param(param, name)
    if pshape:
        raise TypeError(f"{name} must be a scalar for addressed calls")
    assert isinstance(parsed, Fraction)
    gen = _random.as_generator(rng)
    z = noise_cells(kind, parsed, gen._key, s, a, arr.size)
    # x + z in x's dtype, OverflowError if a cell does not fit (the integer samplers' add)
    return _add_checked(arr.reshape(-1), z, arr.dtype).reshape(arr.shape)


def discrete_laplace(x: Any, scale: Any, *, rng: Any = None, stream: int,
                     offset: int = 0) -> np.ndarray:
    """``x`` plus cell-addressed discrete Laplace noise (a new array).

    Parameters
    ----------
    x : array_like of integers
        Cells ``offset, offset + 1, ...`` (C order) of the call.
    scale : float, int or Fraction
        Scalar scale, as in :func:`dpfast.discrete_laplace`.
    rng : None, Generator or bytes
        Supplies the key (only its key: nothing is drawn from its streams).  A replayable
        key makes the call's noise recomputable by whoever holds it.
    stream : int
        The call's id in ``[0, 2**64)``.
    offset : int
        Flat index of ``x``'s first cell in the whole array.

    Returns
    -------
    ndarray
        Same shape and dtype as ``x``; ``OverflowError`` if a noisy value does not fit.

    Privacy
    -------
    As :func:`dpfast.discrete_laplace`: ``ε = Δ1 / scale`` (CKS20), provided each cell of
    the whole array is noised under one ``(key, stream)`` and released once (releasing two
    arrays noised with the same key and stream reuses their noise).
    """
    return _add(0, x, scale, "scale", rng, stream, offset)


def discrete_gaussian(x: Any, sigma: Any, *, rng: Any = None, stream: int,
                      offset: int = 0) -> np.ndarray:
    """``x`` plus cell-addressed discrete Gaussian noise (see :func:`discrete_laplace`).

    Privacy
    -------
    As :func:`dpfast.discrete_gaussian`: ``ρ = Δ2² / (2σ²)``-zCDP (CKS20), with the same
    one-release-per-(key, stream) condition.
    """
    return _add(1, x, sigma, "sigma", rng, stream, offset)


def _add_grid(kind: int, x: Any, param: Any, name: str, rng: Any, stream: Any, offset: Any,
              gran: Any, out: Any) -> np.ndarray:
    """The law of :func:`dpfast.noise.grid.laplace` / ``gaussian``: ``(rint(x/g) + Z) g``
    rounded once, with ``Z`` the addressed integer noise of cells ``offset, ...``."""
    arr, out = _inputs.float_input(x, out, float32_out=True)
    s = _index(stream, "stream", 1 << 64)
    a = _index(offset, "offset", 1 << 62)
    if a + arr.size >= 1 << 62:
        raise ValueError("offset + x.size must be below 2**62")
    g, t = grid._grid_setup(param, name, gran)  # the grid mechanisms' own checks
    gen = _random.as_generator(rng)
    _inputs.check_fit(arr, g)
    n = arr.size
    if out is not None and np.shares_memory(out, arr) and not _inputs.same_buffer(out, arr):
        arr = arr.copy()  # out overlaps x only in part: read x from a copy
    # x read slice by slice (a float64 view, or one slice converted at a time); the grid
    # values written straight into the result: a new float64 array, or out itself when
    # it is C-contiguous (no full-size temporary and no copy into out: a separate out
    # costs what allocating costs).  Each slice of x is read before its slice of out is
    # written, so out may be x.
    src = arr.reshape(-1) if arr.flags.c_contiguous else np.array(arr, np.float64).reshape(-1)
    if out is None:
        result = np.empty(arr.shape, np.float64)
    elif out.flags.c_contiguous:
        result = out
    else:  # a strided out: the grid values in a new array, then copied into out
        result = np.empty(arr.shape, np.float64)
    dst = result.reshape(-1)
    f32 = dst.dtype == np.float32
    sat = grid._DBL_MAX
    step = _SLICE
    nbig = np.zeros(-(-max(1, min(step, n)) // _gk.GRID_BLOCK), np.int64)
    tmp = np.empty(min(step, n), np.float64) if f32 else None
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        xs = np.ascontiguousarray(src[lo:hi], dtype=np.float64)
        z = np.ascontiguousarray(noise_cells(kind, t, gen._key, s, a + lo, hi - lo))
        res = dst[lo:hi] if tmp is None else tmp[:hi - lo]
        with _drive.threads_for(-(-(hi - lo) // _drive.CHUNK), _drive.CHUNK // _gk.GRID_BLOCK):
            _gk.grid_add(xs, z, g, sat, res, nbig)
        if nbig.any():
            grid._grid_fix(xs, z, g, sat, res, nbig)
            nbig[:] = 0
        if tmp is not None:  # rounded once more, saturated as dpfast.laplace does
            np.clip(res, -grid._FLT_MAX, grid._FLT_MAX, out=res)
            dst[lo:hi] = res
    if out is None or result is out:
        return result
    if out.dtype == np.float32:  # rounded once more, saturated as dpfast.laplace does
        np.clip(result, -grid._FLT_MAX, grid._FLT_MAX, out=result)
    out[...] = result
    return out


def laplace(x: Any, scale: Any, *, rng: Any = None, stream: int, offset: int = 0,
            granularity: Any = None, out: np.ndarray | None = None) -> np.ndarray:
    """Cell-addressed secure Laplace noise for real-valued data, on a power-of-two grid.

    The output law of :func:`dpfast.laplace`: ``(rint(x/g) + Z) g`` rounded once, ``Z``
    the discrete Laplace of scale ``scale / g`` that cells ``offset, offset + 1, ...`` get
    in :func:`discrete_laplace` ``(..., scale / g, rng=rng, stream=stream)``, so a slice
    ``x[a:b]`` with ``offset=a`` reproduces the whole call's values bit for bit.

    Parameters
    ----------
    x : array_like of floats (or integers)
        Finite values; cells ``offset, offset + 1, ...`` (C order) of the call.
    scale : float, int or Fraction
        As in :func:`dpfast.laplace`.
    rng : None, Generator or bytes
        Supplies the key only (see :func:`discrete_laplace`).
    stream : int
        The call's id in ``[0, 2**64)``.
    offset : int
        Flat index of ``x``'s first cell in the whole array.
    granularity : float, optional
        Output grid ``g``, as in :func:`dpfast.laplace` (use the same for every slice).
    out : ndarray of float64 or float32, optional
        Same shape as ``x`` (float32: the float64 result rounded once more, as in
        :func:`dpfast.laplace`).

    Returns
    -------
    ndarray of float64

    Privacy
    -------
    As :func:`dpfast.laplace`: ``ε = (Δ + g) / b`` (Google DP team, "Secure Noise
    Generation", 2020; CKS20), provided each cell of the whole array is noised under one
    ``(key, stream)`` and released once.

    Numerics
    --------
    As :func:`dpfast.laplace` (exact grid value rounded once; saturates at ``±max
    double``).
    """
    return _add_grid(0, x, scale, "scale", rng, stream, offset, granularity, out)


def gaussian(x: Any, sigma: Any, *, rng: Any = None, stream: int, offset: int = 0,
             granularity: Any = None, out: np.ndarray | None = None) -> np.ndarray:
    """Cell-addressed secure Gaussian noise on a power-of-two grid (see :func:`laplace`);
    ``Z`` is the noise of :func:`discrete_gaussian` ``(..., sigma / g, ...)``.

    Privacy
    -------
    As :func:`dpfast.gaussian`: ``ρ = Δ₂'² / (2σ²)``-zCDP with ``Δ₂' = Δ₂ + g sqrt(d)``
    (CKS20), with the same one-release-per-(key, stream) condition.

    Numerics
    --------
    As :func:`dpfast.laplace`.
    """
    return _add_grid(1, x, sigma, "sigma", rng, stream, offset, granularity, out)
