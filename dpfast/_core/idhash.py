"""The 64-bit canonical value of a privacy id, element by element.

Contribution bounding keys its per-id randomness by this value (:func:`id_hashes`), so it
must be a function of the id's *value* alone -- never of the column's dtype or of the other
ids.  Otherwise one person changes everyone's kept rows: a missing id turns a pandas int
column into float64 (or object), a string id among integers makes the column object, and a
column-level encoding would then re-key every other person's bounding (issue 36, found by
the neighbour audit).  The rule, per element:

* an integer ``i`` (Python, numpy, bool) with ``-2**63 <= i < 2**64``: its two's-complement
  bits, ``i mod 2**64`` (injective on int64, and on uint64);
* a float that is an integer in ``[-2**63, 2**63)``: the value of that integer (so ``7.0``
  in a float column is the id ``7`` of an int column; ``-0.0`` is ``0``);
* any other float (fractions, ±inf, beyond int64): the splitmix64 finaliser of its IEEE
  bits xor a tag (a bijection of the bits; a collision with an integer id has probability
  ``2**-64`` per pair);
* a string: BLAKE2b-64 of ``b"s" + UTF-8``; bytes: of ``b"b" + bytes``; an integer beyond
  ``2**64``: of ``b"i" + its decimal digits``.

A collision only makes two ids share bounding randomness: the per-id bound itself holds
regardless.  :func:`route_hashes` is the same rule for the Dask shuffle's routing of rows to
partitions (an id's rows meet in one partition whatever the dtypes of the input partitions).
"""

from __future__ import annotations

import hashlib
from typing import cast

import numpy as np

__all__ = ["id_hashes", "id_hash_one", "factorize_mixed", "route_hashes"]

_MASK = (1 << 64) - 1
_FLOAT_TAG = np.uint64(0x9E3779B97F4A7C15)
_TWO63 = float(1 << 63)


def _digest(raw: bytes) -> int:
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little")


def _mix(bits: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection of uint64; arrays wrap without a warning)."""
    z = bits ^ _FLOAT_TAG
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _float_hashes(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64) + 0.0  # -0.0 -> 0.0; a copy
    out = np.empty(x.shape[0], np.uint64)
    with np.errstate(invalid="ignore"):
        integral = np.isfinite(x) & (np.floor(x) == x) & (x >= -_TWO63) & (x < _TWO63)
    out[integral] = x[integral].astype(np.int64).view(np.uint64)
    rest = ~integral
    if rest.any():
        out[rest] = _mix(x[rest].astype("<f8").view("<u8").astype(np.uint64))
    return out


def id_hash_one(v: object) -> int:
    """The canonical value (module docstring) of one id."""
    if isinstance(v, (bool, np.bool_, int, np.integer)):
        i = int(v)
        if -(1 << 63) <= i < (1 << 64):
            return i & _MASK
        return _digest(b"i" + str(i).encode("ascii"))
    if isinstance(v, (float, np.floating)):
        return int(_float_hashes(np.array([float(v)]))[0])
    if isinstance(v, str):
        return _digest(b"s" + v.encode("utf-8", "surrogatepass"))
    if isinstance(v, (bytes, np.bytes_)):
        return _digest(b"b" + bytes(v))
    raise TypeError(f"privacy_ids must hold ints, floats, str or bytes, got "
                    f"{type(v).__name__}")


def id_hashes(uniques: np.ndarray) -> np.ndarray:
    """64-bit canonical values (uint64) of distinct privacy ids (module docstring)."""
    kind = uniques.dtype.kind
    if kind == "i":
        return uniques.astype(np.int64).view(np.uint64)
    if kind in "ub":
        return uniques.astype(np.uint64)
    if kind == "f":
        return _float_hashes(uniques)
    out = np.empty(len(uniques), np.uint64)
    for i, v in enumerate(uniques.tolist() if kind in "US" else uniques):
        out[i] = id_hash_one(v)
    return out


def _sort_key(v: object) -> tuple[int, object]:
    if isinstance(v, (bool, np.bool_, int, np.integer, float, np.floating)):
        return (0, v)  # numbers by value (an int and an equal float are one id)
    if isinstance(v, str):
        return (1, v)
    return (2, bytes(cast(bytes, v)))  # ids are numbers, str or bytes (validated)


def factorize_mixed(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, uniques) of an object column of ids of several types (numbers, then strings,
    then bytes, each ascending): the order and the ids are functions of the values."""
    import pandas as pd

    codes, uniq = pd.factorize(x, sort=False)
    uniq = np.asarray(uniq, dtype=object)
    order = sorted(range(len(uniq)), key=lambda i: _sort_key(uniq[i]))
    remap = np.empty(len(uniq), np.int64)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(uniq), dtype=np.int64)
    return remap[codes.astype(np.int64, copy=False)], uniq[order]


def route_hashes(ids: np.ndarray) -> np.ndarray:
    """Per row of an object / string id column (no missing values), a uint64 that depends
    only on the row's id: strings by ``pandas.util.hash_array`` (each alone), every other
    id by its canonical value (:func:`id_hashes`), mixed.  Rows of one id hash alike in
    every partition of a Dask graph, whatever else each partition holds."""
    import pandas as pd
    from pandas.api.types import infer_dtype

    arr = np.asarray(ids, dtype=object)
    if infer_dtype(arr, skipna=False) == "string":  # all str (one C pass): the common case
        return np.asarray(pd.util.hash_array(arr))
    is_str = np.fromiter((isinstance(v, str) for v in arr), bool, arr.shape[0])
    if is_str.all():
        return np.asarray(pd.util.hash_array(arr))
    out = np.empty(arr.shape[0], np.uint64)
    if is_str.any():
        out[is_str] = pd.util.hash_array(arr[is_str])
    other = ~is_str
    codes, uniq = pd.factorize(arr[other], sort=False)
    canon = np.fromiter((id_hash_one(v) for v in uniq), np.uint64, len(uniq))
    out[other] = pd.util.hash_array(canon)[codes]
    return out
