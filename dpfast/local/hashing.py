"""Hashing shared by clients and servers: fingerprints and public tabulation hashes.

See :mod:`dpfast.local` (Hashing).
"""

from __future__ import annotations

import hashlib
import numbers
from typing import Any

import numpy as np

from dpfast.local._validate import _array, _int
from dpfast.random import as_generator, keystream

_FP_PERSON = b"dpfast.local"
_TAB_STREAM = 0x6C6F63616C5F746162  # b"local_tab": stream id of the hash tables


def fingerprint(items: Any) -> np.ndarray:
    """64-bit fingerprints of items: the hash input shared by clients and servers.

    Parameters
    ----------
    items : array_like
        Integers (any integer dtype or bool; values must fit int64 or uint64), or strings
        / bytes (a list, a numpy ``str``/``bytes`` array or an object array of ``str``,
        ``bytes`` and ints).

    Returns
    -------
    numpy.ndarray of uint64, flattened
        Integers map to their 64-bit two's-complement pattern (injective); a string maps
        to the little-endian integer of ``BLAKE2b(utf8, digest_size=8,
        person=b"dpfast.local")`` and bytes to the same digest of the bytes themselves
        (distinct strings collide with probability about ``2^-64``).
    """
    if not isinstance(items, np.ndarray) and isinstance(items, (list, tuple)) and any(
            isinstance(x, (str, bytes, bytearray)) for x in items):
        arr = np.empty(len(items), dtype=object)  # keep ints as ints (asarray: strings)
        arr[:] = list(items)
    else:
        arr = _array(items)
    if arr.dtype == np.bool_:
        return arr.astype(np.uint64).reshape(-1)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64).reshape(-1).view(np.uint64).copy()
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64).reshape(-1)
    if arr.dtype.kind in "USO":
        flat = arr.reshape(-1)
        if flat.size == 0:
            return np.zeros(0, np.uint64)
        try:
            uniq, inv = np.unique(flat, return_inverse=True)
        except TypeError:  # unorderable mixed objects
            return np.array([_fp_one(x) for x in flat], np.uint64)
        fps = np.array([_fp_one(x) for x in uniq], np.uint64)
        return fps[inv.reshape(-1)]
    raise TypeError(f"items must be integers, strings or bytes, got dtype {arr.dtype}")


def _fp_one(x: Any) -> int:
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (numbers.Integral,)):
        v = int(x)
        if not -(1 << 63) <= v < (1 << 64):
            raise ValueError(f"integer item {v} does not fit 64 bits")
        return v % (1 << 64)
    if isinstance(x, str):
        data = x.encode("utf-8")
    elif isinstance(x, (bytes, bytearray, memoryview)):
        data = bytes(x)
    else:
        raise TypeError(f"items must be integers, strings or bytes, got {type(x).__name__}")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8, person=_FP_PERSON).digest(),
                          "little")


def _seed_key(hash_seed: Any) -> bytes:
    if isinstance(hash_seed, (bytes, bytearray, memoryview)):
        key = bytes(hash_seed)
        if len(key) != 32:
            raise ValueError(f"hash_seed must be 32 bytes or an int, got {len(key)} bytes")
        return key
    v = _int(hash_seed, "hash_seed", 0, (1 << 256) - 1)
    return v.to_bytes(32, "little")


def hash_tables(hash_seed: int | bytes, num: int) -> np.ndarray:
    """Simple-tabulation tables of ``num`` public hash functions, ``(num, 8, 256)`` uint32.

    Hash function ``f`` maps a fingerprint ``x`` (bytes ``x_0 .. x_7``, little-endian) to
    ``T[f, 0, x_0] ^ ... ^ T[f, 7, x_7]``.  The tables are the RFC 8439 ChaCha20 keystream
    under the key ``hash_seed`` (an int is written as 32 little-endian bytes), stream
    ``0x6c6f63616c5f746162``, read as little-endian 32-bit words.  Random tables make the
    functions 3-independent and mutually independent (Patrascu & Thorup 2012).
    """
    num = _int(num, "num", 1, 1 << 20)
    key = _seed_key(hash_seed)
    data = keystream(key, _TAB_STREAM, num * 8 * 256 * 4)
    return np.frombuffer(data, "<u4").astype(np.uint32).reshape(num, 8, 256)


def _resolve_seed(hash_seed: Any) -> int | bytes:
    if hash_seed is None:
        words = np.asarray(as_generator(None).random_raw(4), np.uint64)
        return words.astype("<u8").tobytes()
    _seed_key(hash_seed)  # validate
    return hash_seed



