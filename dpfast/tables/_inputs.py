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
from typing import SupportsInt

import numpy as np

from dpfast.tables import _keys


@dataclasses.dataclass
class _Data:
    codes: np.ndarray  # key code per kept row
    n_codes: int
    uniques: _keys.Uniques  # canonical key values per code
    ids: np.ndarray | None
    values: np.ndarray | None
    domain_codes: np.ndarray | None  # code of each domain key, in the domain's order
    key_names: tuple[str, ...] | None


def _names(keys: object) -> tuple[str, ...] | None:
    if hasattr(keys, "columns") and hasattr(keys, "iloc"):
        return tuple(str(c) for c in keys.columns)
    items = keys if isinstance(keys, tuple) else (keys,)
    names = [getattr(k, "name", None) for k in items]
    if all(isinstance(n, str) for n in names):
        return tuple(names)  # type: ignore[arg-type]
    return None


def _bounds(bounds: object, integer_values: bool) -> tuple[float, float]:
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


#: The largest input a release takes: ``2**40`` rows (ValueError beyond).  Every exact
#: accumulation is sized for it (two-word totals hold ``2**40`` summands of ``2**54``), so
#: no data within it can overflow; an input this long does not fit a machine's memory.
MAX_ROWS = 1 << 40


def check_rows(n: int) -> None:
    """ValueError unless ``n < MAX_ROWS`` (``2**40``): the input's length, checked before
    anything is summed (an input this long does not fit one machine's memory; on a
    cluster it is the total over the partitions)."""
    if n >= MAX_ROWS:
        raise ValueError(f"the input has {n} rows; a release takes fewer than 2**40")


def check_int_summands(c: int, mag: SupportsInt, what: str) -> None:
    """ValueError (public parameters, before the charge) unless ``c`` integer summands of
    magnitude ``mag`` -- one person's rows in one key -- sum exactly in int64.  Beyond a
    person's partial sum nothing can overflow: totals are exact in two words
    (:class:`~dpfast.tables._fixed.FixedSums`) for fewer than :data:`MAX_ROWS` rows."""
    if c * int(mag) >= 1 << 62:
        raise ValueError(f"max_per_partition * bound = {c * int(mag)} is too large for "
                         f"exact int64 sums of {what} (at most 2**62)")


def as_numbers(values: object, name: str = "values") -> np.ndarray:
    """A value column as a numeric numpy array (ints or floats; TypeError naming ``name``
    for anything else).  An object column of numbers (what dropping the NULL rows of a
    list with None leaves) becomes an int or float array."""
    to_numpy = getattr(values, "to_numpy", None)
    raw = to_numpy() if callable(to_numpy) else np.asarray(values)
    if raw.dtype.kind == "O":
        items = raw.tolist()
        if all(isinstance(v, (int, float, np.integer, np.floating))
               and not isinstance(v, (bool, np.bool_)) for v in items):
            raw = np.array(items) if items else np.zeros(0, np.float64)
    if raw.dtype == np.bool_ or raw.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be numbers, got dtype {raw.dtype}")
    return raw


def number_kind(values: object, name: str = "values") -> str:
    """The dtype kind (``"i"``, ``"u"`` or ``"f"``) of a value column, as
    :func:`as_numbers` reads it (TypeError naming ``name`` for anything else): public
    schema, read before the plan.  Missing entries (None, NaN, pandas NA) do not count:
    the rows holding them are dropped by the NULL policy."""
    dtype = getattr(values, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind in "iuf":
        return dtype.kind
    missing = _keys._missing_rows(values)
    if missing.any():
        values = _keys._take(values, ~missing)
    return as_numbers(values, name).dtype.kind


def clamp(raw: np.ndarray, bnd: tuple[float, float]) -> np.ndarray:
    """The values clamped to the bounds (a new array): int64 for integers, float64 for
    floats, where ``±inf`` becomes ``lo`` / ``hi`` like any other value out of range."""
    if raw.dtype.kind in "iu":
        lo, hi = bnd
        if raw.dtype.kind == "u":  # compare as Python ints: no uint64 / int64 mixing
            raw = np.minimum(raw, np.uint64(max(hi, 0))).astype(np.int64)
        return np.clip(raw, lo, hi).astype(np.int64, copy=False)
    return np.clip(raw.astype(np.float64), bnd[0], bnd[1])


def _validate(keys: _keys.KeyColumns, privacy_ids: object,
              values: object, bounds: object, domain: object
              ) -> tuple[_Data, tuple[float, float] | None]:
    """The rows through the NULL policy (rows with a missing key, id or value leave
    first, a per-row filter: :func:`~dpfast.tables._keys.drop_nulls`), then
    :func:`_validate_present`."""
    keys, privacy_ids, (values,) = _keys.drop_nulls(keys, privacy_ids, values)
    return _validate_present(keys, privacy_ids, values, bounds, domain)


def _validate_present(keys: _keys.KeyColumns, privacy_ids: object,
                      values: object, bounds: object, domain: object
                      ) -> tuple[_Data, tuple[float, float] | None]:
    """Rows that hold no NULL (the caller applied the NULL policy) checked, the values
    clamped to the bounds and the keys factorized with the public domain: the
    :class:`_Data` and the bounds."""
    cols, n, ids = _keys.keys_and_ids(keys, privacy_ids)
    check_rows(n)
    vals = None
    bnd = None
    if values is not None:
        raw = as_numbers(values)
        if raw.shape != (n,):
            raise ValueError(f"values has shape {raw.shape}, keys have {n} rows")
        integer = raw.dtype.kind in "iu"
        bnd = _bounds(bounds, integer)
        vals = clamp(raw, bnd)  # ±inf: clamped like every other value
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
