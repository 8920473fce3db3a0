"""Exact discrete Laplace and discrete Gaussian noise for integer data."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast.noise import _drive, _inputs, _progress, _windows, _wrap
from dpfast.random import as_generator

__all__ = ["discrete_laplace", "discrete_gaussian"]


def _add_discrete(kind: int, x: Any, param: Any, name: str, rng: Any, out: Any,
                  progress: Any = False) -> Any:
    x, rewrap = _wrap.unwrap(x)
    arr, out = _inputs.int_input(x, out)
    if out is None:
        return rewrap(_inputs.like_input(_noised(kind, arr, param, name, rng, None, progress),
                                         arr))
    return _noised(kind, arr, param, name, rng, out, progress)


def _noised(kind: int, arr: np.ndarray, param: Any, name: str, rng: Any, out: Any,
            progress: Any) -> np.ndarray:
    gen = as_generator(rng)
    p = _inputs.param_for(param, name, arr.shape)
    tick, close = _progress.ticker(progress, arr.size)
    try:
        return _noised_into(kind, gen, p, arr, out, tick)
    finally:
        close()


def _noised_into(kind: int, gen: Any, p: _drive.Param, arr: np.ndarray, out: Any,
                 tick: Any) -> np.ndarray:
    n = arr.size
    dt = arr.dtype
    if out is not None and np.shares_memory(out, arr) and not _inputs.same_buffer(out, arr):
        arr = arr.copy()  # out overlaps x only in part: read x from a copy
    in_place = out is not None and _inputs.same_buffer(out, arr)
    native64 = dt.kind == "i" and dt.itemsize == 8 and dt.isnative
    if native64 and arr.flags.c_contiguous and (out is None or out.flags.c_contiguous):
        # the kernel adds the noise straight into the result (no buffer), in one pass; in
        # place, on overflow the cells written so far are restored (x unchanged)
        target = _drive.new_output(arr.shape, np.int64) if out is None else out
        if n:
            _drive.run_discrete(gen, kind, p, n, target.reshape(-1), x=arr.reshape(-1),
                                in_place=in_place, progress=tick)
        return target
    # other dtypes / byte orders / layouts: the noise window by window (bounded memory),
    # each range added with an exact range check in x's dtype
    target = np.empty(arr.shape, dt) if out is None else out
    if n:
        _windowed_add(kind, gen, p, arr, target, in_place, tick)
    return target


def _windowed_add(kind: int, gen: Any, p: _drive.Param, arr: np.ndarray, target: np.ndarray,
                  in_place: bool, tick: Any) -> None:
    """``target = arr + noise`` (flat C order) in windows, in one pass; OverflowError if a
    cell does not fit, with ``target`` then left as it was when it is ``arr`` itself (the
    written ranges are undone from a replay)."""
    wn = _windows.WindowedNoise(gen, kind, p, arr.size)
    src = arr.reshape(-1) if arr.flags.c_contiguous else None  # a view, or read .flat
    dst = target.reshape(-1) if target.flags.c_contiguous else None

    def read(a: int, b: int) -> np.ndarray:
        return src[a:b] if src is not None else arr.flat[a:b]

    def put(a: int, b: int, values: np.ndarray) -> None:
        if dst is not None:
            dst[a:b] = values
        else:
            target.flat[a:b] = values

    def write_range(a: int, b: int, z: np.ndarray) -> None:
        put(a, b, _add_checked(read(a, b), z, arr.dtype))

    def write_cell(i: int, v: int) -> None:
        put(i, i + 1, _add_cell(read(i, i + 1), v, arr.dtype))

    def undo_range(a: int, b: int, z: np.ndarray) -> None:
        put(a, b, _sub(read(a, b), z, arr.dtype))

    def undo_cell(i: int, v: int) -> None:
        put(i, i + 1, _add_cell(read(i, i + 1), -v, arr.dtype))

    try:
        wn.run(write_range, write_cell, progress=tick)
    except OverflowError:
        if in_place:  # subtract again the noise of every range and cell written
            wn.replay(undo_range, undo_cell)
        raise


def _overflow(dt: np.dtype) -> OverflowError:
    return OverflowError(f"noisy value does not fit the dtype {dt} of x")


def _add_checked(xs: np.ndarray, z: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``xs + z`` in dtype ``dt`` (exact: the sum is formed in the native int64 or uint64
    domain with a wrap test, then range-checked), OverflowError if a cell does not fit."""
    info = np.iinfo(dt)
    if dt.kind == "u" and dt.itemsize == 8:
        xu = xs.astype(np.uint64)
        res: np.ndarray = xu + z.view(np.uint64)  # modulo 2^64
        bad = np.where(z >= 0, res < xu, res > xu)
    elif dt.itemsize == 8:  # int64 of any byte order or layout
        x64 = xs.astype(np.int64)
        res = (x64.view(np.uint64) + z.view(np.uint64)).view(np.int64)  # modulo 2^64
        bad = ((x64 ^ res) & (z ^ res)) < 0  # two's-complement overflow test
    else:
        x64 = xs.astype(np.int64)
        res = x64 + z
        # |x| < 2^32, |noise| < 2^63: detect int64 overflow before the range test
        bad = ((x64 ^ res) & (z ^ res)) < 0
        bad |= (res < info.min) | (res > info.max)
    if bad.any():
        raise _overflow(dt)
    return res.astype(dt)


def _sub(xs: np.ndarray, z: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``xs - z`` where ``xs = x + z`` was written in dtype ``dt`` (so the result is x)."""
    if dt.itemsize == 8:
        base = np.uint64 if dt.kind == "u" else np.int64
        return (xs.astype(base).view(np.uint64) - z.view(np.uint64)).view(base).astype(dt)
    return (xs.astype(np.int64) - z).astype(dt)


def _add_cell(xs: np.ndarray, v: int, dt: np.dtype) -> np.ndarray:
    """One cell ``x + v`` in Python integers, OverflowError if it does not fit ``dt``."""
    info = np.iinfo(dt)
    r = int(xs[0]) + int(v)
    if not info.min <= r <= info.max:
        raise _overflow(dt)
    return np.array([r], dtype=dt)


def discrete_laplace(x: Any, scale: Any, *, rng: Any = None,
                     out: np.ndarray | None = None, progress: Any = False) -> Any:
    """Add exact discrete Laplace noise to integer data.

    Parameters
    ----------
    x : array_like of integers, pandas Series or DataFrame
        Any shape, memory order and integer dtype (not bool).  A scalar gives a numpy
        scalar; a pandas object gives the same kind with the same index (missing values
        are refused).
    scale : float, int, Fraction or array_like
        ``t > 0``: noise ``P(k) = (1 - e^{-1/t}) / (1 + e^{-1/t}) * e^{-|k|/t}``.  A float
        is the exact binary rational it encodes; an array broadcasts to ``x`` (per-cell
        noise levels).  Supported range ``[2**-100, 2**50]`` (``ValueError`` outside).
    rng : None, Generator or bytes, optional
        None: the process-wide urandom-keyed generator; a 32-byte key replays.
    out : ndarray, optional
        Same shape and dtype as ``x`` (``out=x`` noises in place).
    progress : bool or callable, optional
        ``True``: a progress bar on stderr (tqdm if installed); a callable is called as
        ``progress(done_cells, total_cells)``.  Off by default.

    Returns
    -------
    ndarray
        ``x + noise`` with x's dtype and shape.

    Raises
    ------
    OverflowError
        If a noisy value does not fit the dtype (it never wraps).  ``x`` is then left
        exactly as it was, also with ``out=x`` (an in-place call undoes the cells it
        already wrote).  A separate ``out`` is written in one pass, as numpy's ``out=``
        is, so an overflow leaves its contents unspecified: cells hold their noisy
        values, what they held, or (a few next to the failing cell) x's values.
    ValueError
        If ``scale`` is outside its supported range.

    Privacy
    -------
    For integer queries with L1 sensitivity ``Δ`` (neighbouring datasets differ in one
    individual; add/remove or replace as the sensitivity was computed), the release is
    ``ε = Δ / t`` differentially private: the pmf ratio at any output is at most
    ``e^{|k - k'| / t}``.  Canonne, Kamath & Steinke, "The Discrete Gaussian for
    Differential Privacy", NeurIPS 2020 (CKS20), Sec. 2; Ghosh, Roughgarden & Sundararajan
    2012 (geometric mechanism).

    Numerics
    --------
    Exact: a scalar scale >= 1 uses rejection from a piecewise-constant envelope held in
    an exact integer alias table (:mod:`dpfast.noise._envelope`); smaller or per-cell scales a
    geometric by inversion (with a power-of-two split for per-cell scales >= 32).  Every
    float decision is certified by a rigorous error bound and undecided cases are
    finished with integer interval arithmetic on a lazily refined uniform (never
    resampled).
    """
    return _add_discrete(_drive.LAPLACE, x, scale, "scale", rng, out, progress)


def discrete_gaussian(x: Any, sigma: Any, *, rng: Any = None,
                      out: np.ndarray | None = None, progress: Any = False) -> Any:
    """Add exact discrete Gaussian noise to integer data.

    Parameters
    ----------
    x : array_like of integers
        Any shape, memory order and integer dtype (not bool).
    sigma : float, int, Fraction or array_like
        ``σ > 0``: noise ``P(k) ∝ exp(-k² / (2σ²))`` on the integers; arrays broadcast to
        ``x``.  Supported range ``[2**-100, 2**50]``.
    rng : None, Generator or bytes, optional
        As in :func:`discrete_laplace`.
    out : ndarray, optional
        Same shape and dtype as ``x``.
    progress : bool or callable, optional
        As in :func:`discrete_laplace`.

    Returns
    -------
    ndarray
        ``x + noise`` with x's dtype and shape.

    Raises
    ------
    OverflowError
        As in :func:`discrete_laplace` (``out=x`` is restored; a separate ``out`` may be
        partly written).

    Privacy
    -------
    For integer vector queries with L2 sensitivity ``Δ₂`` this is ``ρ = Δ₂² / (2σ²)``
    zero-concentrated DP and satisfies the (ε, δ) curve of CKS20 Theorem 7 (at least as
    good as the continuous Gaussian's up to a negligible term).  CKS20, Sec. 2-4.

    Numerics
    --------
    A scalar ``σ`` uses the envelope table (:mod:`dpfast.noise._envelope`); per-cell ``σ``
    CKS20 Algorithm 3 (discrete Laplace proposal with scale ``floor(σ) + 1``, Bernoulli
    acceptance ``exp(-(|y| - σ²/t)² / (2σ²))``).  Every decision is certified or
    finished exactly as in :func:`discrete_laplace`.
    """
    return _add_discrete(_drive.GAUSSIAN, x, sigma, "sigma", rng, out, progress)
