"""Validation of the data and ``out`` arguments of the noising functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast._kernels import grid as _gk
from dpfast.noise import _drive


def _as_array(x: Any, name: str = "x") -> np.ndarray:
    """``np.asarray(x)``, refusing what it would change silently: a masked array (its
    mask would be dropped) and longdouble (rounded to float64)."""
    _drive.refuse_masked(x, name)
    arr = np.asarray(x)
    _drive.refuse_wide_float(arr.dtype, name)
    return arr


def int_input(x: Any, out: Any) -> tuple[np.ndarray, np.ndarray | None]:
    arr = _as_array(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f":
            raise TypeError("x must be an integer array; use dpfast.laplace / dpfast.gaussian "
                            "for floats")
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    if out is not None:
        _check_out(out, arr.shape)
        if out.dtype != arr.dtype:
            raise TypeError(f"out has dtype {out.dtype}, x has dtype {arr.dtype}")
        _check_writeable(out)
    return arr, out


def like_input(result: np.ndarray, arr: np.ndarray) -> np.ndarray:
    """A new result (``out`` not given) in the layout of ``x``: a Fortran-ordered input
    gives a Fortran-ordered result (the noise of each cell is unchanged: cells are
    addressed by their C-order index), and a float32 input a float32 result (the float64
    value rounded once to float32: post-processing, so the guarantee is unchanged)."""
    if arr.dtype == np.float32 and result.dtype == np.float64:
        result = result.astype(np.float32, order="K")
    if arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous:
        result = np.asfortranarray(result)
    return result


def float_input(x: Any, out: Any, *,
                float32_out: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """``x`` as a real array and ``out`` checked (x's values are not: see
    :func:`check_fit`); with ``float32_out`` a float32 ``out`` is accepted too."""
    arr = _as_array(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"x must be a real (float or integer) array, got dtype {arr.dtype}")
    if out is not None:
        _check_out(out, arr.shape)
        if out.dtype != np.float64 and not (float32_out and out.dtype == np.float32):
            allowed = "float64 or float32" if float32_out else "float64"
            raise TypeError(f"out must have dtype {allowed}, got {out.dtype}")
        _check_writeable(out)
    return arr, out


_PARALLEL_MAX = 1 << 16  # float arrays from this size get max |x| from a parallel kernel


def max_abs(arr: np.ndarray) -> float:
    """max |x| as a float (NaN or inf if x holds one; 0 for an empty array): one parallel
    pass over the bits for large C-contiguous float64 / float32 arrays, numpy's max and
    min else."""
    if arr.size == 0:
        return 0.0
    if arr.dtype in (np.float64, np.float32) and arr.flags.c_contiguous and (
            arr.size >= _PARALLEL_MAX):
        part = np.empty(-(-arr.size // _gk.MAXABS_BLOCK), np.uint64)
        with _drive.threads_for(part.size, 1):
            top = _gk.max_abs_bits(arr.reshape(-1), part)
        ut = np.uint64 if arr.dtype == np.float64 else np.uint32
        return float(np.array([top], ut).view(arr.dtype)[0])
    # max/min propagate NaN and see inf, without allocating a mask of x's size
    return max(abs(float(np.max(arr))), abs(float(np.min(arr))))


def check_fit(arr: np.ndarray, g: float) -> None:
    """``x`` finite and ``x / g`` finite (``g`` a grid's power of two), else ValueError
    naming which: a pass over ``x`` (:func:`max_abs`)."""
    big = max_abs(arr)
    if not np.isfinite(big):
        raise ValueError("x must be finite (no NaN or inf)")
    if not np.isfinite(big / g):
        raise ValueError("x / granularity overflows; x is too large for this granularity")


def _check_out(out: Any, shape: tuple[int, ...]) -> None:
    """``out`` is a numpy array of x's shape (its dtype rule is the caller's)."""
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a numpy array")
    _drive.refuse_masked(out, "out")
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, x has shape {shape}")


def _check_writeable(out: np.ndarray) -> None:
    if not out.flags.writeable:
        raise ValueError("out is read-only")


def param_for(value: Any, name: str, shape: tuple[int, ...]) -> _drive.Param:
    parsed, pshape = _drive.parse_param(value, name)
    if pshape:
        try:
            if np.broadcast_shapes(pshape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"{name} with shape {pshape} does not broadcast to x's shape "
                             f"{shape}") from None
    return _drive.make_param(parsed, shape)


def same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """True if ``a`` and ``b`` address exactly the same elements in the same order."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.size == b.size and a.dtype.itemsize == b.dtype.itemsize
            and (a.size <= 1 or (a.flags.c_contiguous and b.flags.c_contiguous)
                 or (a.shape == b.shape and a.strides == b.strides)))
