"""Argument validation shared by the public modules (errors name the parameter)."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["check_key", "check_int", "check_size"]


def check_key(key: Any, name: str = "key") -> bytes:
    if isinstance(key, (bytes, bytearray, memoryview)):
        key = bytes(key)
    else:
        raise TypeError(f"{name} must be 32 bytes, got {type(key).__name__}")
    if len(key) != 32:
        raise ValueError(f"{name} must be exactly 32 bytes, got {len(key)}")
    return key


def check_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None


def check_size(size: Any, name: str = "size") -> tuple[int, ...]:
    """Normalize a numpy-style size (None, int or sequence of ints) to a shape."""
    if size is None:
        return ()
    if isinstance(size, (Sequence, np.ndarray)) and not isinstance(size, (str, bytes)):
        shape = tuple(check_int(s, name) for s in size)
    else:
        shape = (check_int(size, name),)
    if any(s < 0 for s in shape):
        raise ValueError(f"{name} must be non-negative, got {size!r}")
    return shape
