"""Validation of the data and ``out`` arguments of the noising functions."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast.noise import _drive


def int_input(x: Any, out: Any) -> tuple[np.ndarray, np.ndarray | None]:
    arr = np.asarray(x)
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


def float_input(x: Any, out: Any) -> tuple[np.ndarray, np.ndarray | None]:
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"x must be a real (float or integer) array, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and arr.size and not (np.isfinite(np.max(arr))
                                                   and np.isfinite(np.min(arr))):
        # max/min propagate NaN and see inf, without allocating a mask of x's size
        raise ValueError("x must be finite (no NaN or inf)")
    if out is not None:
        _check_out(out, arr.shape)
        if out.dtype != np.float64:
            raise TypeError(f"out must have dtype float64, got {out.dtype}")
        _check_writeable(out)
    return arr, out


def _check_out(out: Any, shape: tuple[int, ...]) -> None:
    """``out`` is a numpy array of x's shape (its dtype rule is the caller's)."""
    if not isinstance(out, np.ndarray):
        raise TypeError("out must be a numpy array")
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
