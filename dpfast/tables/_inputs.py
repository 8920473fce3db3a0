"""Validation of a group-by release's inputs: keys, privacy ids, values, bounds, domain.

The first step of the :mod:`dpfast.tables` pipeline (:mod:`dpfast.tables.groupby`,
:mod:`dpfast.dask`): :func:`_validate` checks the columns, clamps the values to the
bounds (a new array) and factorizes the keys (with the public ``domain``, if any) into
the :class:`_Data` that the bounding and release steps consume.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast.tables import _keys


@dataclasses.dataclass
class _Data:
    codes: np.ndarray  # key code per kept row
    n_codes: int
    uniques: Any  # canonical key values per code
    ids: np.ndarray | None
    values: np.ndarray | None
    domain_codes: np.ndarray | None  # code of each domain key, in the domain's order
    key_names: tuple[str, ...] | None


def _names(keys: Any) -> tuple[str, ...] | None:
    if hasattr(keys, "columns") and hasattr(keys, "iloc"):
        return tuple(str(c) for c in keys.columns)
    items = keys if isinstance(keys, tuple) else (keys,)
    names = [getattr(k, "name", None) for k in items]
    if all(isinstance(n, str) for n in names):
        return tuple(names)  # type: ignore[arg-type]
    return None


def _bounds(bounds: Any, integer_values: bool) -> tuple[Any, Any]:
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise TypeError("bounds must be a pair (lo, hi)")
    lo, hi = bounds
    for name, v in (("bounds[0]", lo), ("bounds[1]", hi)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.number)):
            raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
        if not math.isfinite(float(v)):
            raise ValueError(f"{name} must be finite, got {v!r}")
    if float(lo) > float(hi):
        raise ValueError(f"bounds must have lo <= hi, got ({lo!r}, {hi!r})")
    if integer_values:
        for name, v in (("bounds[0]", lo), ("bounds[1]", hi)):
            if Fraction(v).denominator != 1:
                raise ValueError(f"{name} must be an integer for integer values, got {v!r} "
                                 "(pass float values to sum on a grid)")
            if abs(int(v)) >= 1 << 53:
                raise ValueError(f"{name} must have magnitude < 2**53, got {v!r}")
        return int(lo), int(hi)
    return float(lo), float(hi)


def check_int_sum(n: int, bnd: tuple[int, int]) -> None:
    """OverflowError unless ``n`` integer values clamped to ``bnd`` sum (also centred for a
    mean) exactly in int64: ``n max(|lo|, |hi|, 1) < 2**62``."""
    lo, hi = bnd
    if n * max(abs(lo), abs(hi), 1) >= 1 << 62:
        raise OverflowError("sum of the clamped values could overflow int64")


def _validate(keys: Any, privacy_ids: Any, values: Any, bounds: Any, domain: Any
              ) -> tuple[_Data, Any]:
    cols, n, ids = _keys.keys_and_ids(keys, privacy_ids)
    vals = None
    bnd = None
    if values is not None:
        if _keys._missing(values):
            raise ValueError("values contains missing values (NA/NaN/None)")
        to_numpy = getattr(values, "to_numpy", None)
        raw = to_numpy() if callable(to_numpy) else np.asarray(values)
        if raw.dtype == np.bool_ or raw.dtype.kind not in "iuf":
            raise TypeError(f"values must be numbers, got dtype {raw.dtype}")
        if raw.shape != (n,):
            raise ValueError(f"values has shape {raw.shape}, keys have {n} rows")
        if raw.dtype.kind == "f" and raw.size and not np.isfinite(raw).all():
            raise ValueError("values contains NaN or infinite values")
        integer = raw.dtype.kind in "iu"
        bnd = _bounds(bounds, integer)
        if integer:
            lo, hi = bnd
            check_int_sum(n, bnd)
            vals = np.clip(raw, lo, hi).astype(np.int64, copy=False)  # a new array
        else:
            vals = np.clip(raw.astype(np.float64), bnd[0], bnd[1])
    domain_codes = None
    if domain is None:
        fk = _keys.factorize(cols)
        codes = fk.codes
    else:
        dcols = _keys.columns(domain, "domain")
        nd = len(dcols[0])
        if nd == 0:
            raise ValueError("domain is empty")
        fk = _keys.factorize(_keys.joint(dcols, cols))
        domain_codes = fk.codes[:nd]
        if len(np.unique(domain_codes)) != nd:
            raise ValueError("domain contains duplicate keys")
        codes = fk.codes[nd:]
        member = np.zeros(fk.size, np.bool_)
        member[domain_codes] = True
        keep = member[codes]
        if not keep.all():  # rows whose key is not public are dropped before bounding
            codes = codes[keep]
            ids = None if ids is None else ids[keep]
            vals = None if vals is None else vals[keep]
    data = _Data(np.ascontiguousarray(codes), fk.size, fk.uniques, ids, vals,
                 domain_codes, _names(keys))
    return data, bnd
