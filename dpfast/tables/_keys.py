"""Validate step: canonical keys and privacy ids.

Keys and ids arrive as array-likes of ints, floats, strings or bytes, pandas Series, or
(keys only) tuples of such columns / DataFrames.  This module checks them (no missing
values, one kind per column, equal lengths), never writes to them, and *factorizes* them:
integer codes ``0..K-1`` numbered in the canonical order of the keys (numbers ascending,
strings by code point, bytes bytewise, multi-column keys lexicographically), so every later
step is a function of the keys' values, never of the row order.

Privacy ids also get a 64-bit canonical value, a function of each id's value alone (the
integer itself for integer ids and integral floats, a digest for other floats, strings and
bytes: :mod:`dpfast._core.idhash`) that keys the per-id randomness of contribution
bounding.  A privacy-id column may mix ints, floats, strings and bytes (one person's id of
another type must not make a release fail or re-key everyone else); key columns may not.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Sized
from typing import overload

import numpy as np
import numpy.typing as npt

from dpfast._core import scratch
from dpfast._core.idhash import factorize_mixed
from dpfast._core.idhash import id_hashes as id_hashes  # the per-id canonical value
from dpfast._kernels import grouping as _kg

_DENSE_MIN = 1 << 20  # dense integer codes when max - min < max(2n, this)
#: below this many rows, factorizing, grouping and bounding run in numpy and serial
#: kernels: a first call on small data compiles no parallel kernel (each costs seconds of
#: LLVM on first use); from it on, the parallel kernels (same results)
SERIAL_ROWS = 1 << 15

#: the distinct keys: one array, or a tuple of arrays (one per key column)
Uniques = np.ndarray | tuple[np.ndarray, ...]
#: key columns as a caller gives them: one array-like (an array, a Series, a DataFrame) or a
#: tuple of key columns
KeyColumns = npt.ArrayLike | tuple[npt.ArrayLike, ...]


@dataclasses.dataclass(frozen=True)
class Factorized:
    """Integer codes of the rows and the distinct values in canonical order.

    ``uniques`` is one array, or a tuple of arrays for multi-column keys.
    """

    codes: np.ndarray  # int64, one per row
    uniques: Uniques
    multi: bool

    @property
    def size(self) -> int:
        u = self.uniques[0] if self.multi else self.uniques
        return int(len(u))


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def _missing(x: object) -> bool:
    isna = getattr(x, "isna", None)
    if callable(isna):
        try:
            return bool(np.asarray(isna()).any())
        except Exception:  # pragma: no cover - exotic array types
            return False
    return False


def column(x: object, name: str, *, mixed: bool = False) -> np.ndarray:
    """A 1-D numpy array of ints, floats, str or bytes (the caller's data is not modified).

    Raises ValueError for missing values (NaN, None, pandas NA) and ragged shapes,
    TypeError for other element types.  ``mixed`` (privacy ids): an object column may mix
    those types (returned as an object array; each id keeps its own encoding), and
    integers beyond uint64 are kept as Python ints.
    """
    if isinstance(x, (str, bytes)) or np.isscalar(x):
        raise TypeError(f"{name} must be a 1-D array-like, got a scalar {type(x).__name__}")
    if _missing(x):
        raise ValueError(f"{name} contains missing values (NA/NaN/None)")
    to_numpy = getattr(x, "to_numpy", None)
    arr = to_numpy() if callable(to_numpy) else np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got {arr.ndim} dimensions")
    kind = arr.dtype.kind
    if kind == "b":
        return arr.astype(np.int64)
    if kind in "iu":
        return arr
    if kind == "f":  # ±inf is an ordinary key; NaN is missing (releases drop those rows)
        if arr.size and np.isnan(arr).any():
            raise ValueError(f"{name} contains missing values (NA/NaN/None)")
        return arr
    if kind in "US":
        return arr
    if kind == "O":
        return _object_column(arr, name, mixed)
    raise TypeError(f"{name} must hold ints, floats, str or bytes, got dtype {arr.dtype}")


def _object_column(arr: np.ndarray, name: str, mixed: bool = False) -> np.ndarray:
    if arr.size == 0:
        return np.zeros(0, np.int64)
    try:  # fast path (C): one pass over the objects
        from pandas.api.types import infer_dtype

        inferred = infer_dtype(arr, skipna=False)
    except ImportError:  # pragma: no cover - pandas is in the test extra
        inferred = None
    if inferred in ("string", "bytes"):
        return arr
    kinds = set()
    for v in arr:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise ValueError(f"{name} contains missing values (NA/NaN/None)")
        if isinstance(v, str):
            kinds.add("str")
        elif isinstance(v, bytes):
            kinds.add("bytes")
        elif isinstance(v, (bool, np.bool_, int, np.integer)):
            kinds.add("int")
        elif isinstance(v, (float, np.floating)):
            kinds.add("float")
        else:
            raise TypeError(f"{name} must hold ints, floats, str or bytes, got "
                            f"{type(v).__name__}")
        if len(kinds) > 1 and not mixed:
            raise TypeError(f"{name} mixes element types {sorted(kinds)}; use one type")
    if len(kinds) > 1:  # privacy ids of several types: each keeps its own encoding
        return arr
    kind = kinds.pop()
    if kind == "int":
        vals = [int(v) for v in arr]
        try:
            return np.array(vals, dtype=np.int64)
        except OverflowError:
            try:
                return np.array(vals, dtype=np.uint64)
            except OverflowError:
                if mixed:  # ids beyond uint64: Python ints (never a data-dependent error)
                    return np.array(vals, dtype=object)
                raise
    if kind == "float":
        return column(np.array([float(v) for v in arr]), name)
    return arr  # str or bytes objects (sorted by Python's order = code point / bytewise)


def columns(keys: object, name: str = "keys") -> list[np.ndarray]:
    """The key columns: one for a 1-D key, several for a tuple of arrays or a DataFrame."""
    if hasattr(keys, "columns") and hasattr(keys, "iloc"):  # a DataFrame
        cols = [column(keys.iloc[:, j], f"{name}[{c!r}]") for j, c in enumerate(keys.columns)]
    elif isinstance(keys, tuple):
        if not keys:
            raise ValueError(f"{name} is an empty tuple; give at least one key column")
        cols = [column(k, f"{name}[{j}]") for j, k in enumerate(keys)]
    else:
        cols = [column(keys, name)]
    n = len(cols[0])
    for j, c in enumerate(cols):
        if len(c) != n:
            raise ValueError(f"{name}: column {j} has {len(c)} rows, column 0 has {n}")
    return cols


def _missing_rows(x: object) -> np.ndarray:
    """Per row: is the value missing (None, NaN, pandas NA / NaT)?"""
    isna = getattr(x, "isna", None)
    if callable(isna):
        return np.asarray(isna(), dtype=bool).reshape(-1)
    arr = np.asarray(x)
    if arr.dtype.kind == "f":
        return np.isnan(arr).reshape(-1)
    if arr.dtype.kind == "O":
        try:
            import pandas as pd

            return np.asarray(pd.isna(arr), dtype=bool).reshape(-1)
        except ImportError:  # pragma: no cover - pandas is in the test extra
            return np.array([v is None or (isinstance(v, float) and math.isnan(v))
                             for v in arr.reshape(-1).tolist()], dtype=bool)
    return np.zeros(arr.shape[0] if arr.ndim else 1, dtype=bool)


def _take(x: object, keep: np.ndarray) -> npt.ArrayLike:
    iloc = getattr(x, "iloc", None)
    if iloc is not None:
        return iloc[np.flatnonzero(keep)]
    return np.asarray(x)[keep]


def _key_masks(keys: object) -> list[np.ndarray]:
    if hasattr(keys, "columns") and hasattr(keys, "iloc"):  # a DataFrame
        return [_missing_rows(keys.iloc[:, j]) for j in range(len(keys.columns))]
    if isinstance(keys, tuple):
        return [_missing_rows(k) for k in keys]
    return [_missing_rows(keys)]


def _rows_of(x: object) -> int | None:
    if not isinstance(x, Sized):
        return None
    try:
        return len(x)
    except TypeError:
        return None


def null_mask(keys: object, privacy_ids: object, *values: object) -> np.ndarray | None:
    """Per row: is its key (any key column), privacy id or value (any of ``values``)
    missing -- None, NaN, pandas NA / NaT?  None when no row is (or when the shapes do not
    match: the callers' checks then name the column)."""
    if isinstance(keys, (str, bytes)) or np.isscalar(keys) or keys is None:
        return None  # column() raises the TypeError naming keys
    try:
        masks = _key_masks(keys)
    except Exception:  # pragma: no cover - exotic inputs: column() names the problem
        return None
    if not masks or any(m.ndim != 1 for m in masks):
        return None
    n = masks[0].shape[0]
    if any(m.shape[0] != n for m in masks):
        return None
    for x in (privacy_ids, *values):
        if x is None:
            continue
        if _rows_of(x) != n:
            return None
        m = _missing_rows(x)
        if m.shape != (n,):
            return None
        masks.append(m)
    drop = np.logical_or.reduce(masks)
    return drop if drop.any() else None


@overload
def drop_nulls(keys: tuple[npt.ArrayLike, ...], privacy_ids: object,
               *values: object
               ) -> tuple[tuple[npt.ArrayLike, ...], object,
                          tuple[object, ...]]: ...
@overload
def drop_nulls(keys: npt.ArrayLike, privacy_ids: object,
               *values: object
               ) -> tuple[npt.ArrayLike, object,
                          tuple[object, ...]]: ...
def drop_nulls(keys: KeyColumns, privacy_ids: object,
               *values: object
               ) -> tuple[KeyColumns, object, tuple[object, ...]]:
    """The NULL policy of every release: the rows whose key (any key column), privacy id
    or value (any of ``values``) is missing -- None, NaN, pandas NA / NaT -- removed from
    all the columns (new objects; the caller's are not modified).

    A per-row filter: a person's rows leave or stay by their own content only, so the
    filtered data of neighbouring inputs are neighbours and every sensitivity holds.  It
    never raises on the rows' contents (a raise would tell the analyst whether some row
    is NULL); shapes that do not match are public, and the callers raise ValueError for
    them.  ``±inf`` is not missing: a value is clamped to the bounds, a key is an ordinary
    float key.
    """
    drop = null_mask(keys, privacy_ids, *values)
    if drop is None:
        return keys, privacy_ids, values
    keep = ~drop
    if isinstance(keys, tuple):
        keys = tuple(_take(k, keep) for k in keys)
    else:
        keys = _take(keys, keep)
    return (keys, None if privacy_ids is None else _take(privacy_ids, keep),
            tuple(None if v is None else _take(v, keep) for v in values))


def keys_and_ids(keys: object, privacy_ids: object) -> tuple[list[np.ndarray], int,
                                                         np.ndarray | None]:
    """The key columns, their row count and the privacy-id column (None if not given),
    checked to have as many rows as the keys."""
    cols = columns(keys)
    n = len(cols[0])
    ids = None
    if privacy_ids is not None:
        ids = column(privacy_ids, "privacy_ids", mixed=True)
        if len(ids) != n:
            raise ValueError(f"privacy_ids has {len(ids)} rows, keys have {n}")
    return cols, n, ids


# ----------------------------------------------------------------------------- factorize
def _factorize_int(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = x.shape[0]
    if n == 0:
        return np.zeros(0, np.int64), x[:0].copy()
    lo, hi = int(x.min()), int(x.max())
    if hi - lo < max(2 * n, _DENSE_MIN) and -(1 << 62) < lo and hi < (1 << 62):
        x64 = x.astype(np.int64, copy=False)
        if n < SERIAL_ROWS:
            present = np.zeros(hi - lo + 1, np.uint8)
            present[x64 - lo] = 1
            remap = np.cumsum(present, dtype=np.int64) - 1
            return remap[x64 - lo], (np.flatnonzero(present) + lo).astype(x.dtype)
        # temporaries (and, when the caller holds a scratch lease, the codes) reuse the
        # thread's scratch pages (:mod:`dpfast._core.scratch`)
        present = scratch.zeros(hi - lo + 1, np.uint8)
        _kg.mark_present(x64, lo, present, _threads())
        remap = scratch.empty(hi - lo + 1, np.int64)
        marked = scratch.empty(min(n, hi - lo + 1), np.int64)
        uniques = marked[:_kg.dense_remap(present, lo, remap, marked)].astype(x.dtype)
        codes = scratch.empty(n, np.int64)
        _kg.take_codes(x64, lo, remap, codes)
        return codes, uniques
    if n >= SERIAL_ROWS:  # a sparse range: hash, then sort the uniques only (np.unique
        try:              # sorts every row: 2-3x the time for 6*10^6 ids over 10^8)
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is in the test extra
            pd = None
        if pd is not None:
            codes, uniques = pd.factorize(x, sort=True)
            return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=x.dtype)
    uniques, codes = np.unique(x, return_inverse=True)
    return codes.astype(np.int64).reshape(-1), uniques


def _factorize_general(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if x.dtype.kind == "f":
        x = x + 0.0  # -0.0 -> 0.0 (one canonical zero); a copy, the input is untouched
    try:
        import pandas as pd  # optional: hashing is faster than sorting strings
    except ImportError:  # pragma: no cover - pandas is in the test extra
        pd = None
    if pd is not None and x.dtype.kind == "O" and not _one_kind(x):
        return factorize_mixed(x)  # privacy ids of several types
    if pd is not None and x.dtype.kind in "OUf":
        codes, uniques = pd.factorize(x, sort=True)
        return codes.astype(np.int64, copy=False), np.asarray(uniques, dtype=x.dtype)
    uniques, codes = np.unique(x, return_inverse=True)
    return codes.astype(np.int64).reshape(-1), uniques


def _one_kind(x: np.ndarray) -> bool:
    """Whether an object column holds one kind of element (all str, all bytes or all
    numbers): pandas sorts those; a mix of kinds is sorted by :func:`factorize_mixed`."""
    from pandas.api.types import infer_dtype

    return infer_dtype(x, skipna=False) in ("string", "bytes", "integer", "floating",
                                            "mixed-integer-float", "boolean", "empty")


def factorize_column(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, sorted uniques) of one validated column."""
    if x.dtype.kind in "iu":
        return _factorize_int(x)
    return _factorize_general(x)


def factorize(cols: list[np.ndarray]) -> Factorized:
    """Factorize validated key columns (see :func:`columns`) in canonical order."""
    if len(cols) == 1:
        codes, uniques = factorize_column(cols[0])
        return Factorized(codes, uniques, False)
    parts = [factorize_column(c) for c in cols]
    codes, sizes = parts[0][0], [len(parts[0][1])]
    combo_uniques = np.arange(sizes[0], dtype=np.int64)[:, None]  # rows: per-column codes
    for c2, u2 in parts[1:]:
        k2 = max(1, len(u2))
        k1 = max(1, combo_uniques.shape[0])
        if k1 * k2 >= 1 << 62:  # pragma: no cover - needs > 2**31 rows
            # the pair codes would not fit int64: factorize the pairs by sorting them (the
            # same canonical order, lexicographic in the per-column codes) -- never an
            # error that depends on the number of distinct keys
            pairs, inv = np.unique(np.stack([codes, c2], axis=1), axis=0,
                                   return_inverse=True)
            codes = inv.astype(np.int64).reshape(-1)
            combo_uniques = np.concatenate([combo_uniques[pairs[:, 0]], pairs[:, 1:]], axis=1)
            continue
        if codes.shape[0] < SERIAL_ROWS:
            comb = codes * np.int64(k2) + c2
        else:
            comb = np.empty(codes.shape[0], np.int64)
            _kg.combine_codes(codes, c2, np.int64(k2), comb)
        codes, u = _factorize_int(comb)
        u = u.astype(np.int64)
        combo_uniques = np.concatenate(
            [combo_uniques[u // k2], (u % k2)[:, None]], axis=1)
    return Factorized(codes, tuple(p[1][combo_uniques[:, j]] for j, p in enumerate(parts)),
                      True)


# ----------------------------------------------------------------------------- ids
def _encode_one(v: object) -> bytes:
    if isinstance(v, (bool, np.bool_, int, np.integer)):
        i = int(v)
        return b"i" + i.to_bytes(16, "little", signed=True)
    if isinstance(v, (float, np.floating)):
        return b"f" + np.float64(float(v) + 0.0).tobytes()
    if isinstance(v, str):
        raw = v.encode("utf-8", "surrogatepass")
        return b"s" + len(raw).to_bytes(8, "little") + raw
    if isinstance(v, bytes):
        return b"b" + len(v).to_bytes(8, "little") + v
    raise TypeError(f"cannot encode a key of type {type(v).__name__}")


def canonical_encoding(uniques: Uniques) -> list[bytes]:
    """The canonical byte encoding of each key (one array, or a tuple of key columns).

    A function of the key's value alone (not of its dtype or position): integers as
    ``b"i"`` + 16 bytes little-endian two's complement, floats as ``b"f"`` + IEEE binary64
    (``-0.0`` as ``0.0``), strings as ``b"s"`` + length + UTF-8, bytes as ``b"b"`` + length +
    bytes; a multi-column key is the concatenation of its columns' encodings.  Injective, so
    per-key randomness addressed by it (a keyed hash of it) never confuses two keys.
    """
    cols = uniques if isinstance(uniques, tuple) else (uniques,)
    lists = [np.asarray(c).tolist() for c in cols]
    return [b"".join(_encode_one(v) for v in row) for row in zip(*lists)]


def _encode_column(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows of bytes as an (n, w) uint8 array, None) for numbers; for str / bytes a flat
    buffer and per-row lengths.  Returns (buffer, lengths) in both cases."""
    n = len(col)
    kind = col.dtype.kind
    if kind in "iub":
        out = np.zeros((n, 17), np.uint8)
        out[:, 0] = ord("i")
        hi: np.ndarray
        if kind == "u" and col.dtype.itemsize == 8:
            lo = col.astype(np.uint64)
            hi = np.zeros(n, np.uint64)
        else:
            v = col.astype(np.int64)
            lo = v.view(np.uint64)
            hi = np.where(v < 0, np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64(0))
        out[:, 1:9] = lo.astype("<u8").view(np.uint8).reshape(n, 8)
        out[:, 9:17] = hi.astype("<u8").view(np.uint8).reshape(n, 8)
        return out.reshape(-1), np.full(n, 17, np.int64)
    if kind == "f":
        out = np.zeros((n, 9), np.uint8)
        out[:, 0] = ord("f")
        out[:, 1:9] = (col.astype(np.float64) + 0.0).astype("<f8").view(np.uint8).reshape(n, 8)
        return out.reshape(-1), np.full(n, 9, np.int64)
    parts = [_encode_one(v) for v in col.tolist()]
    lens = np.fromiter((len(p) for p in parts), np.int64, n)
    return np.frombuffer(b"".join(parts), np.uint8), lens


def canonical_encoding_flat(uniques: Uniques) -> tuple[np.ndarray, np.ndarray]:
    """:func:`canonical_encoding` as one uint8 buffer and ``n + 1`` offsets (vectorised
    for numeric columns): row i is ``buf[off[i]:off[i+1]]``."""
    cols = uniques if isinstance(uniques, tuple) else (uniques,)
    cols = tuple(np.asarray(c) for c in cols)
    n = len(cols[0])
    encs = [_encode_column(c) for c in cols]
    total = np.zeros(n, np.int64)
    for _, lens in encs:
        total += lens
    off = np.zeros(n + 1, np.int64)
    np.cumsum(total, out=off[1:])
    if len(encs) == 1:
        return np.ascontiguousarray(encs[0][0]), off
    buf = np.empty(int(off[-1]), np.uint8)
    pos = off[:-1].copy()
    for b, lens in encs:
        src = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=src[1:])
        # scatter each row's bytes of this column to its place in the joint row
        idx = np.repeat(pos - src[:-1], lens) + np.arange(int(src[-1]), dtype=np.int64)
        buf[idx] = b
        pos += lens
    return buf, off


def key_hashes(uniques: Uniques, key: bytes, tag: bytes) -> np.ndarray:
    """uint64 per key: BLAKE2b-64 keyed with ``key`` of ``tag`` + the canonical encoding."""
    out = np.empty(len(uniques[0] if isinstance(uniques, tuple) else uniques), np.uint64)
    for i, enc in enumerate(canonical_encoding(uniques)):
        h = hashlib.blake2b(tag + enc, key=key, digest_size=8).digest()
        out[i] = int.from_bytes(h, "little")
    return out


def joint(domain_cols: list[np.ndarray], cols: list[np.ndarray], name: str = "domain"
          ) -> list[np.ndarray]:
    """Concatenate domain and data columns column-wise, with compatible dtypes."""
    if len(domain_cols) != len(cols):
        raise ValueError(f"{name} has {len(domain_cols)} key columns, keys have {len(cols)}")
    out = []
    for j, (d, c) in enumerate(zip(domain_cols, cols)):
        kd, kc = _kind(d), _kind(c)
        if kd != kc and len(d) and len(c):
            raise TypeError(f"{name} column {j} holds {kd} values but keys column {j} holds "
                            f"{kc}")
        if kd == "int" and (d.dtype.kind != c.dtype.kind or d.dtype != c.dtype):
            big = max(int(d.max()) if len(d) else 0, int(c.max()) if len(c) else 0)
            dt = np.uint64 if big >= 1 << 63 else np.int64
            if dt == np.uint64 and ((len(d) and d.min() < 0) or (len(c) and c.min() < 0)):
                # negative and >= 2**63 integers: as Python ints (exact; sorted as numbers),
                # never an error that would depend on the private keys' values
                d = np.array([int(v) for v in d.tolist()], dtype=object)
                c = np.array([int(v) for v in c.tolist()], dtype=object)
            else:
                d, c = d.astype(dt), c.astype(dt)
        if d.dtype.kind == "O" or c.dtype.kind == "O":
            d, c = d.astype(object), c.astype(object)
        out.append(np.concatenate([d, c]))
    return out


def _kind(a: np.ndarray) -> str:
    k = a.dtype.kind
    if k in "iu":
        return "int"
    if k == "f":
        return "float"
    if k == "U":
        return "str"
    if k == "S":
        return "bytes"
    if len(a) == 0:
        return "empty"
    if isinstance(a[0], (int, np.integer)) and not isinstance(a[0], (bool, np.bool_)):
        return "int"
    return "str" if isinstance(a[0], str) else "bytes"
