"""Noise step: per-key addressed noise of a release.

The noise added to the aggregate of key ``K`` in part ``P`` (0: the counts, which also
decide the private partition selection; 1: the sums) of a release is a function of
(the generator's key, the release's stream id ``r``, ``P``, the canonical encoding of
``K``) only -- not of the other keys, the row order, the partitioning of the data or the
thread count.  So the same rows released on one machine or on a cluster
(:mod:`dpfast.dask`) give the same table bit for bit, and a public domain and its subsets
noise the keys they share identically.

Addressing
----------
* ``r`` is one fresh stream id taken from the generator's allocator when the release
  starts (:func:`release_stream`): two releases from one generator never share it, and
  an explicit 32-byte key replays it.
* The release's ChaCha20 key is ``BLAKE2b(key=generator key, data=KEY_NOISE_TAG || r)``
  (:func:`dpfast._addressed.derive_key`): not the generator's key, so the per-key streams
  share no keystream with anything the allocator hands out, nor with the bounding
  streams (their own tag), nor with another release.
* Key ``K`` of part ``P`` draws from the 96-bit nonce
  ``BLAKE2b(key=release key, data=P || canonical_encoding(K), digest_size=12)`` (computed
  for all keys at once by :mod:`dpfast._kernels.blake2b`, equal to hashlib's), one exact
  sampler run per key (:func:`dpfast._addressed.run_chunks` with one-cell chunks).  The
  nonces of the keys of a release are checked to be distinct (a 96-bit collision, with
  probability below ``n**2 / 2**97``, raises ``RuntimeError`` rather than reuse
  keystream).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import _addressed
from dpfast._kernels import blake2b as _kb
from dpfast.noise import _drive
from dpfast.tables import _keys
from dpfast.tables.release import NoiseLaw

__all__ = ["KEY_NOISE_TAG", "release_stream", "release_key", "key_nonces", "noise_keys"]

KEY_NOISE_TAG = b"dpfast.tables.key-noise v1"
COUNT_PART = 0
SUM_PART = 1
_DBL_MAX = float(np.finfo(np.float64).max)


def release_stream(gen: Any) -> int:
    """One fresh stream id of ``gen``'s allocator: the release's id."""
    return int(gen.streams.allocate(1))


def release_key(key: bytes, stream: int) -> bytes:
    """The release's derived ChaCha20 key."""
    return _addressed.derive_key(key, KEY_NOISE_TAG, stream)


def key_nonces(rkey: bytes, uniques: Any, part: int) -> np.ndarray:
    """(n, 3) uint32 nonces of the keys ``uniques`` (one array or a tuple of columns)."""
    buf, off = _keys.canonical_encoding_flat(uniques)
    n = off.shape[0] - 1
    digests = np.empty((n, 12), np.uint8)
    if n:
        _kb.keyed_many(_kb.keyed_state(rkey, 12), np.uint8(part), buf, off, digests, _kb.IV,
                       _kb.SIGMA)
    nonces = digests.view("<u4").astype(np.uint32).reshape(n, 3)
    if n > 1:
        if _repeats(digests):  # pragma: no cover - probability < n^2 / 2^97
            raise RuntimeError("two keys of this release got the same 96-bit stream id; "
                               "release again with another stream id")
    return nonces


def _repeats(digests: np.ndarray) -> bool:
    """Whether two rows of the (n, 12) digests are equal (sort on the first 8 bytes, then
    compare the rows whose first 8 bytes tie)."""
    first = digests[:, :8].copy().view("<u8").reshape(-1)
    order = np.argsort(first, kind="stable")
    fs = first[order]
    ties = np.flatnonzero(fs[1:] == fs[:-1]).tolist()
    return any(bool(np.array_equal(digests[order[i]], digests[order[i + 1]])) for i in ties)


def _discrete(kind: int, t: Fraction, x: np.ndarray | None, kw: np.ndarray,
              nonces: np.ndarray) -> np.ndarray:
    n = nonces.shape[0]
    out = np.empty(n, np.int64)
    idx = np.arange(n, dtype=np.int64)
    _addressed.run_chunks(kw, nonces, idx, idx + 1, kind, t, out,
                          None if x is None else np.ascontiguousarray(x, np.int64))
    return out


def _grid(x: np.ndarray, z: np.ndarray, g: float) -> np.ndarray:
    """The exact grid value ``(rint(x/g) + z) g`` rounded once, saturated at ±DBL_MAX."""
    r = np.rint(x / g)
    res = r * g + z.astype(np.float64) * g  # exact terms, one rounding (|r|, |z| < 2^53)
    big = (np.abs(r) >= 2.0 ** 53) | (np.abs(z) >= 1 << 53) | ~np.isfinite(res)
    gf = Fraction(g)
    for i in np.flatnonzero(big):
        res[i] = _drive.grid_value(int(r[i]) + int(z[i]), gf, _DBL_MAX)
    return res


def noise_keys(law: NoiseLaw, x: np.ndarray, rkey: bytes, uniques: Any, part: int
               ) -> np.ndarray:
    """Noise the aggregates ``x`` of the keys ``uniques`` (aligned) with ``law``, each on
    its own addressed stream (see the module docstring)."""
    kw = _addressed.key_words(rkey)
    nonces = key_nonces(rkey, uniques, part)
    if law.kind in ("discrete_laplace", "discrete_gaussian"):
        kind = 0 if law.kind == "discrete_laplace" else 1
        return _discrete(kind, Fraction(law.scale), np.asarray(x, np.int64), kw, nonces)
    kind = 0 if law.kind == "laplace" else 1
    g = float(law.granularity)
    t = Fraction(law.scale) / Fraction(g)
    xs = np.asarray(x, np.float64)
    if xs.size and not np.isfinite(np.max(np.abs(xs)) / g):
        raise ValueError("an aggregate / granularity overflows")
    z = _discrete(kind, t, None, kw, nonces)
    return _grid(xs, z, g)
