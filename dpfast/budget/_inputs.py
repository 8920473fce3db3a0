"""What :meth:`Budget.release` checks before it charges: everything that can fail
without the noise (input dtype, finiteness, range, the ``rng`` argument).

A mechanism may define ``validate(x, rng=None)`` (raise ``TypeError``/``ValueError``/
``OverflowError`` for input it would refuse before drawing noise); it is called before
the charge.  dpfast's own mechanisms are checked here by the kind of data they take.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["validate_release"]

_INTEGER = ("DiscreteLaplaceMechanism", "DiscreteGaussianMechanism")
_GRID = ("LaplaceMechanism", "GaussianMechanism")
_REAL = ("SnappingMechanism",)


def _dpfast_kind(mechanism: Any) -> str | None:
    cls = type(mechanism)
    if not cls.__module__.startswith("dpfast.mechanisms"):
        return None
    for names, kind in ((_INTEGER, "int"), (_GRID, "grid"), (_REAL, "real")):
        if cls.__name__ in names:
            return kind
    return None


def _check_rng(rng: Any) -> None:
    if rng is None or isinstance(rng, (bytes, bytearray, memoryview)):
        if rng is not None and len(bytes(rng)) != 32:
            raise ValueError(f"rng must be a 32-byte key, got {len(bytes(rng))} bytes")
        return
    from dpfast.random import Generator

    if not isinstance(rng, Generator):
        raise TypeError(
            f"rng must be None, a dpfast.Generator or a 32-byte key, got {type(rng).__name__}"
        )


def _real_array(x: Any) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"x must be a real (float or integer) array, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and arr.size and not (
        np.isfinite(np.max(arr)) and np.isfinite(np.min(arr))
    ):
        raise ValueError("x must be finite (no NaN or inf)")
    return arr


def validate_release(mechanism: Any, x: Any, rng: Any) -> None:
    """Raise what ``mechanism(x, rng=rng)`` would raise before drawing any noise."""
    own = getattr(mechanism, "validate", None)
    if callable(own):
        own(x, rng=rng)
        return
    kind = _dpfast_kind(mechanism)
    if kind is None:
        return
    _check_rng(rng)
    if kind == "int":
        arr = np.asarray(x)
        if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
            hint = "; use a float mechanism for floats" if arr.dtype.kind == "f" else ""
            raise TypeError(f"x must be an integer array, got dtype {arr.dtype}{hint}")
        return
    arr = _real_array(x)
    if kind == "grid" and arr.size:
        g = float(mechanism.granularity)
        biggest = max(abs(float(arr.max())), abs(float(arr.min())))
        if not math.isfinite(biggest / g):
            raise ValueError("x / granularity overflows; x is too large for this granularity")
