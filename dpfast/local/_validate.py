"""Parameter and input validation shared by the local-DP protocols."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from dpfast._core.validate import check_exact, check_exact_positive, check_int

_MAX_EPSILON = 1024.0
_MAX_DOMAIN = 1 << 31


def _epsilon(value: Any, name: str = "epsilon") -> Fraction:
    """A finite epsilon in (0, 1024], as the exact rational it encodes (floats exactly)."""
    q = check_exact_positive(value, name)
    if q > _MAX_EPSILON:
        raise ValueError(f"{name} must be finite and in (0, {_MAX_EPSILON:g}], got {value!r}")
    return q


def _int(value: Any, name: str, lo: int, hi: int | None = None) -> int:
    v = check_int(value, name)
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be {rng}, got {v}")
    return v


def _prob(value: Any, name: str) -> Fraction:
    """A probability in [0, 1] as the exact rational it encodes."""
    q = check_exact(value, name)
    if not 0 <= q <= 1:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return q


def _array(values: Any) -> np.ndarray:
    """``np.asarray``, except that an empty input (``[]``) is an empty int64 array: numpy
    would make it float64, which no report or value array may be."""
    arr = np.asarray(values)
    if arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    return arr


def _indices(values: Any, name: str, hi: int, *, allow_bool: bool = False) -> np.ndarray:
    """An integer array with entries in ``[0, hi)``, flattened to int64.

    Floats are refused (a cast would truncate them silently).
    """
    arr = _array(values)
    if arr.dtype == np.bool_ and allow_bool:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array of indices in [0, {hi}), got "
                        f"dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= hi:
        raise ValueError(f"{name} must lie in [0, {hi}), got max {int(arr.max())}")
    flat = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)
    if flat.size and (int(np.min(flat)) < 0 or int(np.max(flat)) >= hi):
        raise ValueError(f"{name} must lie in [0, {hi}), got range "
                         f"[{int(np.min(flat))}, {int(np.max(flat))}]")
    return flat


def _domain_values(values: Any, k: int, name: str = "values") -> np.ndarray:
    """Domain indices in ``[0, k)`` (bool allowed), flattened to int64."""
    try:
        return _indices(values, name, k, allow_bool=True)
    except ValueError as exc:
        raise ValueError(f"{exc} (the domain)") from None


def _binary(values: Any, name: str) -> np.ndarray:
    """A bool or 0/1 integer array, any shape (returned as given)."""
    arr = _array(values)
    if arr.dtype == np.bool_:
        return arr
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be bool or 0/1 integers, got dtype {arr.dtype}")
    if arr.size and (int(arr.min()) < 0 or int(arr.max()) > 1):
        raise ValueError(f"{name} must be 0 or 1 (no randomizer outputs anything else), got "
                         f"values in [{int(arr.min())}, {int(arr.max())}]")
    return arr


def _counts(values: Any, name: str, shape: tuple[int, ...], n: int) -> np.ndarray:
    """Integer tallies of the given shape with entries in ``[0, n]`` (int64 copy)."""
    arr = _array(values)
    if arr.dtype.kind == "f" and arr.size and np.all(np.isfinite(arr)) and \
            np.array_equal(arr, np.round(arr)):
        arr = arr.astype(np.int64)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integer counts, got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    out = arr.astype(np.int64)
    if out.size and (int(np.min(out)) < 0 or int(np.max(out)) > n):
        raise ValueError(f"{name} must lie in [0, n={n}] (counts of n reports), got range "
                         f"[{int(np.min(out))}, {int(np.max(out))}]")
    return out


def _unpack_bits(bits: Any, n: int, m: int, name: str) -> np.ndarray:
    """Packed report bits (``(n, ceil(m / 8))`` uint8, little bit order) as ``(n,
    ceil(m / 64))`` uint64 words; the padding bits above ``m`` must be 0."""
    arr = _array(bits)
    nbytes = -(-m // 8)
    if arr.size == 0 and n == 0:
        arr = np.zeros((0, nbytes), np.uint8)
    if arr.dtype != np.uint8 or arr.shape != (n, nbytes):
        raise ValueError(f"{name} must be a ({n}, {nbytes}) uint8 array, got {arr.dtype} "
                         f"{arr.shape}")
    if m % 8 and n and np.any(arr[:, -1] >> (m % 8)):
        raise ValueError(f"{name}: padding bits above bit {m} are set (no client sets them)")
    nw = -(-m // 64)
    words = np.zeros((n, nw * 8), np.uint8)
    words[:, :nbytes] = arr
    return words.view(np.uint64)


def _pack_bits(words: np.ndarray, m: int) -> np.ndarray:
    """``(n, ceil(m / 64))`` uint64 words as ``(n, ceil(m / 8))`` packed uint8 bits."""
    n = words.shape[0]
    nbytes = -(-m // 8)
    return np.ascontiguousarray(words.view(np.uint8).reshape(n, 8 * words.shape[1])[:, :nbytes])


def _mpf(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator



