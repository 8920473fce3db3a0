"""A privacy-unit column of Python objects, read through DuckDB id by id.

DuckDB types a pandas object column by its values: one that mixes ints and strings becomes
``VARCHAR``, every int its decimal text.  For the privacy unit that is a sensitivity bug
(an int ``1`` and a string ``"1"`` become one person) and a re-keying of everyone's
contribution bounding by one person (a string id among integers turns every integer id
into a string, whose canonical value, :mod:`dpfast._core.idhash`, is another).

So the frame the session registers on its engine (:func:`frame_view`) carries a privacy-unit
column of Python objects -- a pandas ``object`` column that is not all strings, or a Polars
``Object`` column (which DuckDB cannot read at all) -- replaced by a typed text encoding
of each id *by itself* (:func:`encode_one`), injective, and the session decodes the ids it
reads back into the same Python values (:func:`decode`).  The tables layer then sees each
id as the value it is: an int ``7`` is the id ``7`` whether or not a string id is present,
and whatever the column's dtype (the encoding is invisible to contribution bounding).

The encoding (``P`` is the reserved character ``"\\x1f"``): a string is itself unless it
starts with ``P`` (then ``P + "s:" + s``); an integer (Python, numpy, bool) or a float
that is an integer in ``[-2**63, 2**63)`` is ``P + "i:" + its hexadecimal digits`` (``7.0``
is the id ``7``, as in :mod:`dpfast._core.idhash`); any other float ``P + "f:" +
float.hex()``; bytes ``P + "b:" + hex``; a ``Decimal`` that equals an integer or a float
is that number; a missing value (None, NaN, NA) stays missing (NULL), and so does a value
of any other type (a timestamp, an object): its rows are dropped like those of a missing
id, a per-row filter (the NULL policy), so such an id can make no release fail.  A column
of strings only (and a numeric, string or any other typed column) is registered as it is.
"""

from __future__ import annotations

import decimal
import numbers
from collections.abc import Collection
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["PREFIX", "decode", "encode_one", "frame_view"]

#: the reserved first character of an encoded id that is not a plain string
PREFIX = "\x1f"
_TWO63 = 1 << 63


def encode_one(v: object) -> str | None:
    """The text of one privacy id (module docstring); None for a missing one, or for one
    whose type or value defies encoding.  Never raises: it runs before the charge (the
    fingerprint reads the encoded frame)."""
    try:
        return _encode_one(v)
    except Exception:  # noqa: BLE001 - whatever it is, it may not tell before the charge
        return None


def _int(i: int) -> str:
    return f"{PREFIX}i:{i:x}"  # hex: no digit limit (Python caps int -> decimal text)


def _encode_one(v: object) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        plain = str.__str__(v)
        return PREFIX + "s:" + plain if plain.startswith(PREFIX) else plain
    if isinstance(v, (bool, np.bool_, int, np.integer)):
        return _int(int(v))
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if f != f:
            return None  # NaN: a missing id, as DuckDB reads it
        if f.is_integer() and -_TWO63 <= f < _TWO63:
            return _int(int(f))
        return f"{PREFIX}f:{f.hex()}"
    if isinstance(v, (bytes, np.bytes_)):
        return f"{PREFIX}b:{bytes(v).hex()}"
    if isinstance(v, numbers.Integral):
        return _int(int(v))
    if isinstance(v, decimal.Decimal):
        if v.is_nan():
            return None
        if v.is_finite() and v.adjusted() < 4000 and v == v.to_integral_value():
            return _int(int(v))
        if decimal.Decimal(float(v)) == v:  # a float exactly (2.5, inf): that float
            return _encode_one(float(v))
    try:
        import pandas as pd

        if v is pd.NA or v is pd.NaT:
            return None
    except ImportError:  # pragma: no cover - a pandas frame implies pandas
        pass
    return None  # a type no privacy id may have: dropped as a missing id


def _decode_one(v: str) -> int | float | bytes | str:
    tag, body = v[1:3], v[3:]
    if tag == "i:":
        return int(body, 16)
    if tag == "f:":
        return float.fromhex(body)
    if tag == "b:":
        return bytes.fromhex(body)
    return body  # "s:"


def decode(arr: np.ndarray) -> np.ndarray:
    """The ids of an encoded column as read back (an object array of ints, floats,
    strings, bytes); an array of another dtype is returned as it is."""
    a = np.asarray(arr)
    if a.dtype != np.dtype(object):
        return a
    hits = [i for i, v in enumerate(a.tolist()) if isinstance(v, str) and v[:1] == PREFIX]
    if not hits:
        return a
    out = a.copy()
    for i in hits:
        out[i] = _decode_one(a[i])
    return out


def _encode_all(values: Collection[object]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = encode_one(v)
    return out


def frame_view(frame: object, unit: str | None) -> tuple[object, bool]:
    """``(frame to register, whether its column unit is encoded)``: ``frame`` itself unless
    its privacy-unit column ``unit`` is a pandas object column that is not all strings or
    a Polars ``Object`` column; then a shallow copy of ``frame`` with that one column
    replaced by its encoding (the caller's frame is never changed).  Recomputed for every
    read: a frame changed in place is read as it is now."""
    if unit is None:
        return frame, False
    module = type(frame).__module__
    if module.startswith("pandas"):
        return _pandas_view(frame, unit)
    if module.startswith("polars"):
        return _polars_view(cast("pl.DataFrame", frame), unit)
    return frame, False


def _pandas_view(frame: pd.DataFrame, unit: str) -> tuple[pd.DataFrame, bool]:
    import pandas as pd
    from pandas.api.types import infer_dtype

    if list(frame.columns).count(unit) != 1:
        return frame, False
    col = frame[unit]
    if col.dtype != np.dtype(object) or infer_dtype(col, skipna=True) in ("string", "empty"):
        return frame, False
    view = frame.copy(deep=False)
    view[unit] = pd.Series(_encode_all(col.to_numpy(dtype=object)), index=frame.index,
                           dtype=object, name=unit)
    return view, True


def _polars_view(frame: pl.DataFrame, unit: str) -> tuple[pl.DataFrame, bool]:
    import polars as pl

    if unit not in frame.columns or frame.schema[unit] != pl.Object:
        return frame, False
    enc = _encode_all(frame[unit].to_list())
    return frame.with_columns(pl.Series(unit, enc.tolist(), dtype=pl.String)), True
