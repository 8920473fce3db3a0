"""Scale-like parameters: validation against their supported ranges, exact values."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._core.validate import check_size

MIN_SCALE = 2.0 ** -100  # discrete scales / sigmas below this: ValueError (documented)
MAX_SCALE = 2.0 ** 50  # discrete scales beyond this would overflow int64 noise
MAX_GAMMA = 2.0 ** 60


def _bound_text(v: float) -> str:
    e = math.frexp(v)[1] - 1
    return f"2**{e}" if v == 2.0 ** e else f"{v:g}"


def describe(q: Fraction) -> str:
    """A positive rational for an error message: ``%g`` when it is a normal double, else
    ``about 2**k`` (formatting must never raise: ``float(q)`` overflows beyond 2**1024)."""
    try:
        f = float(q)
    except OverflowError:
        f = math.inf
    if math.isfinite(f) and f >= 2.0 ** -1022:
        return f"{f:g}"
    if q <= 0:
        return f"{float(q):g}"
    return f"about 2**{q.numerator.bit_length() - q.denominator.bit_length()}"


def refuse_wide_float(dtype: np.dtype, name: str) -> None:
    """TypeError for ``longdouble`` (wider than float64): dpfast computes in float64 and
    would round it silently."""
    if dtype.kind == "f" and dtype.itemsize > 8:
        raise TypeError(f"{name} has dtype {dtype} (longdouble), which dpfast would round to "
                        "float64; convert it explicitly (e.g. .astype(np.float64))")


def refuse_masked(value: Any, name: str) -> None:
    """TypeError for a numpy masked array: ``np.asarray`` would drop its mask silently."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array; dpfast would ignore its mask: pass "
                        f"{name}.compressed() or {name}.filled(value)")


class Param:
    """A positive rational parameter, scalar or per cell.

    ``values`` is float64 of length 1 (scalar, stride 0) or n; ``exact(i)`` returns the
    exact rational of cell i (a float is the binary rational it encodes).
    """

    def __init__(self, values: np.ndarray, exact_scalar: Fraction | None) -> None:
        self.values = values
        self.stride = 0 if values.size == 1 else 1
        self._exact_scalar = exact_scalar

    @property
    def scalar(self) -> Fraction | None:
        """The exact value of a scalar parameter (None when given per cell)."""
        return self._exact_scalar

    def exact(self, i: int) -> Fraction:
        if self._exact_scalar is not None:
            return self._exact_scalar
        return Fraction(float(self.values[i * self.stride]))


def parse_param(value: Any, name: str, *, allow_zero: bool = False,
                lower: float = MIN_SCALE, upper: float = MAX_SCALE
                ) -> tuple[np.ndarray | Fraction, tuple[int, ...]]:
    """Validate a scale-like parameter against its supported range.

    Positive parameters must lie in ``[lower, upper]``; with ``allow_zero`` the range is
    ``{0} ∪ [0, upper]``.  Returns (Fraction or float64 array, shape).  A plain Python
    float or int is looked up in a cache (its result depends only on its exact value;
    refused values raise every time, they are never cached).
    """
    if type(value) in _PLAIN:
        return _parse_scalar(value, name, allow_zero, lower, upper)
    return _parse_param(value, name, allow_zero=allow_zero, lower=lower, upper=upper)


_PLAIN = (float, int)


@functools.lru_cache(maxsize=1024)
def _parse_scalar(value: float | int, name: str, allow_zero: bool, lower: float,
                  upper: float) -> tuple[Fraction, tuple[int, ...]]:
    parsed, shape = _parse_param(value, name, allow_zero=allow_zero, lower=lower, upper=upper)
    assert isinstance(parsed, Fraction)
    return parsed, shape


def _parse_param(value: Any, name: str, *, allow_zero: bool = False,
                 lower: float = MIN_SCALE, upper: float = MAX_SCALE
                 ) -> tuple[np.ndarray | Fraction, tuple[int, ...]]:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number or an array of numbers, got bool")
    refuse_masked(value, name)
    if isinstance(value, (np.generic, np.ndarray)):
        refuse_wide_float(np.asarray(value).dtype, name)
    lo = 0.0 if allow_zero else lower

    def rng_text() -> str:  # built only for an error message
        return (f"in [0, {_bound_text(upper)}]" if allow_zero else
                f"in the supported range [{_bound_text(lo)}, {_bound_text(upper)}]")

    if isinstance(value, Fraction):
        exact = value
    elif isinstance(value, (int, np.integer)):
        exact = Fraction(int(value))
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
        exact = Fraction(float(value))
    else:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
            raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
        if arr.ndim == 0:
            return _parse_param(arr.item(), name, allow_zero=allow_zero, lower=lower,
                                upper=upper)
        arr = arr.astype(np.float64)
        if arr.size:  # two reductions decide a valid array (NaN fails both comparisons)
            mn, mx = arr.min(), arr.max()
            if (mn >= 0 if allow_zero else mn > 0 and mn >= lo) and mx <= upper:
                return arr, arr.shape
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        low_ok = np.all(arr >= 0) if allow_zero else np.all(arr > 0)
        if not low_ok:
            raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}")
        if np.any(arr > upper) or (not allow_zero and np.any(arr < lo)):
            raise ValueError(f"{name} must be {rng_text()}")
        return arr, arr.shape
    if exact < 0 or (exact == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")
    if exact > upper or (exact != 0 and exact < lo):
        raise ValueError(f"{name} must be {rng_text()}, got {value}")
    return exact, ()


def make_param(parsed: np.ndarray | Fraction, shape: tuple[int, ...]) -> Param:
    if isinstance(parsed, Fraction):
        return Param(np.array([float(parsed)]), parsed)
    return Param(np.ascontiguousarray(np.broadcast_to(parsed, shape)).reshape(-1), None)


def out_shape(size: Any, pshape: tuple[int, ...]) -> tuple[int, ...]:
    if size is None:
        return pshape
    shape = check_size(size)
    try:
        if np.broadcast_shapes(shape, pshape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"parameter shape {pshape} does not broadcast to size {shape}") from None
    return shape
