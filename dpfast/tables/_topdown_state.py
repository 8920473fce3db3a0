"""The checks of a :class:`~dpfast.tables.TopDownRelease` state (:meth:`from_state`): every
field a user or the session's result cache hands in is checked here, before any kernel
(the rounding of :meth:`~dpfast.tables.TopDownRelease.rounded`, the lattice half-widths of
:meth:`~dpfast.tables.TopDownRelease.confidence_halfwidth`) reads it.  Those numba kernels
do no bounds checks: a level with more columns than its parents, a non-finite value, or a
value beyond int64 after rounding would read out of bounds, return garbage or never end."""

from __future__ import annotations

import binascii
import math
import numbers
from typing import Any

import numpy as np

from dpfast.tables import state as _state

__all__ = ["LevelArrays", "check_levels", "check_flag", "check_scalars", "decode_field",
           "MAX_EXACT"]

#: values that :meth:`~dpfast.tables.TopDownRelease.rounded` casts to int64 must lie below
#: this in magnitude (every integer up to it is a float64, and the rounding's sums stay
#: far from int64's range)
MAX_EXACT = 2.0 ** 53


def decode_field(d: object, name: str) -> np.ndarray:
    """One array of the state (ValueError naming ``name`` when it is not an encoded
    array)."""
    if not isinstance(d, dict):
        raise ValueError(f"state's {name} must be an encoded array")
    try:
        return _state.decode_array(d)
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise ValueError(f"state's {name} is not a valid encoded array") from exc


def _list(state: dict[str, Any], name: str, n: int | None = None) -> list[Any]:
    x = state.get(name)
    if not isinstance(x, list):
        raise ValueError(f"state's {name} must be a list")
    if n is not None and len(x) != n:
        raise ValueError(f"state's {name} must hold one entry per level ({n}), got {len(x)}")
    return x


def _finite(a: np.ndarray, name: str) -> None:
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise ValueError(f"state's {name} must be finite")


class LevelArrays:
    """The per-level arrays of a state, checked: ``consistent`` and ``variances`` float64,
    ``estimates`` int64 (``integer``) or float64, ``noisy`` int64 or None; every level of
    one ndim (1 or 2) and one column count; ``estimates[j]`` and ``noisy[j]`` of
    ``consistent[j]``'s shape, ``variances[j]`` of shape ``(n_j,)``; all finite,
    variances ``>= 0``.  ``sizes``: the level sizes ``n_j``."""

    def __init__(self, state: dict[str, Any], integer: bool) -> None:
        raw = _list(state, "consistent")
        if not raw:
            raise ValueError("state's consistent must hold at least one level")
        L = len(raw)
        self.consistent = [decode_field(d, f"consistent[{j}]") for j, d in enumerate(raw)]
        first = self.consistent[0]
        if first.ndim not in (1, 2):
            raise ValueError("state's consistent[0] must be 1-D or 2-D")
        for j, c in enumerate(self.consistent):
            name = f"consistent[{j}]"
            if c.dtype != np.float64:
                raise ValueError(f"state's {name} must be float64, got {c.dtype}")
            if c.ndim != first.ndim or c.shape[1:] != first.shape[1:]:
                raise ValueError(f"state's {name} must have consistent[0]'s ndim and "
                                 f"columns {first.shape[1:]}, got shape {c.shape}")
            _finite(c, name)
        self.sizes = [int(c.shape[0]) for c in self.consistent]
        est_dtype = np.dtype(np.int64) if integer else np.dtype(np.float64)
        self.estimates = []
        for j, d in enumerate(_list(state, "estimates", L)):
            e = decode_field(d, f"estimates[{j}]")
            self._like(e, j, f"estimates[{j}]", est_dtype)
            self.estimates.append(e)
        self.noisy: list[np.ndarray | None] = []
        for j, d in enumerate(_list(state, "noisy", L)):
            if d is None:
                self.noisy.append(None)
                continue
            n = decode_field(d, f"noisy[{j}]")
            self._like(n, j, f"noisy[{j}]", np.dtype(np.int64))
            self.noisy.append(n)
        self.variances = []
        for j, d in enumerate(_list(state, "variances", L)):
            name = f"variances[{j}]"
            v = decode_field(d, name)
            if v.dtype != np.float64 or v.shape != (self.sizes[j],):
                raise ValueError(f"state's {name} must be float64 of shape ({self.sizes[j]},) "
                                 f"(one per unit of consistent[{j}]), got {v.dtype} "
                                 f"{v.shape}")
            _finite(v, name)
            if (v < 0).any():
                raise ValueError(f"state's {name} must be >= 0")
            self.variances.append(v)

    def _like(self, a: np.ndarray, j: int, name: str, dtype: np.dtype[Any]) -> None:
        if a.dtype != dtype or a.shape != self.consistent[j].shape:
            raise ValueError(f"state's {name} must be {dtype} of consistent[{j}]'s shape "
                             f"{self.consistent[j].shape}, got {a.dtype} {a.shape}")
        _finite(a, name)

    def check_roundable(self) -> None:
        """The values :meth:`~dpfast.tables.TopDownRelease.rounded` casts to int64 (the
        BLUE, :attr:`consistent`) of magnitude below ``2^53`` (ValueError otherwise)."""
        for j, c in enumerate(self.consistent):
            if c.size and float(np.abs(c).max()) >= MAX_EXACT:
                raise ValueError(f"state's consistent[{j}] must be below 2^53 in magnitude "
                                 "(rounded() casts it to integers)")


def check_levels(state: dict[str, Any], integer: bool) -> LevelArrays:
    """:class:`LevelArrays` of ``state`` (ValueError naming the field)."""
    return LevelArrays(state, integer)


def check_scalars(values: object, name: str, n: int, *, allow_none: bool = False
                  ) -> list[Any]:
    """``values`` decoded: one finite number ``>= 0`` per level (``n``), or None where
    ``allow_none`` (ValueError naming ``name`` otherwise)."""
    if not isinstance(values, list) or len(values) != n:
        got = len(values) if isinstance(values, list) else type(values).__name__
        raise ValueError(f"state's {name} must hold one entry per level ({n}), got {got}")
    out: list[Any] = []
    for j, x in enumerate(values):
        if x is None and allow_none:
            out.append(None)
            continue
        try:
            v = _state.decode_scalar(x)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"state's {name}[{j}] is not a number") from exc
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or \
                not (math.isfinite(float(v)) and float(v) >= 0):
            raise ValueError(f"state's {name}[{j}] must be a finite number >= 0, got {v!r}")
        out.append(float(v))
    return out


def check_flag(state: dict[str, Any], name: str) -> bool:
    """``state[name]``, a bool (ValueError otherwise)."""
    v = state.get(name)
    if not isinstance(v, bool):
        raise ValueError(f"state's {name} must be a bool, got {v!r}")
    return v
