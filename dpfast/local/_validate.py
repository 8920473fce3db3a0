"""Parameter and input validation shared by the local-DP protocols."""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

_MAX_EPSILON = 1024.0
_MAX_DOMAIN = 1 << 31


def _epsilon(value: Any, name: str = "epsilon") -> Fraction:
    """A finite epsilon in (0, 1024], as the exact binary rational of the float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x) or not 0.0 < x <= _MAX_EPSILON:
        raise ValueError(f"{name} must be finite and in (0, {_MAX_EPSILON:g}], got {value!r}")
    return Fraction(value) if isinstance(value, (int, Fraction)) else Fraction(x)


def _int(value: Any, name: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    if not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be {rng}, got {v}")
    return v


def _prob(value: Any, name: str) -> Fraction:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return Fraction(value) if isinstance(value, Fraction) else Fraction(x)


def _domain_values(values: Any, k: int, name: str = "values") -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array of domain indices, got dtype "
                        f"{arr.dtype}")
    flat = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1) if arr.size else \
        np.zeros(0, np.int64)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= k:
        raise ValueError(f"{name} must lie in [0, {k}) (the domain), got max {int(arr.max())}")
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= k):
        raise ValueError(f"{name} must lie in [0, {k}) (the domain), got range "
                         f"[{int(flat.min())}, {int(flat.max())}]")
    return flat


def _float_up(x: mpmath.mpf) -> float:
    """The smallest float >= x (x a positive mpf computed at high precision)."""
    v = float(x)
    if mpmath.mpf(v) < x:
        v = math.nextafter(v, math.inf)
    return v


def _mpf(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator



