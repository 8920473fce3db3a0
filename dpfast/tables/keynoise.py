"""Noise step: per-key addressed noise of a release.

The noise added to the aggregate of key ``K`` in part ``P`` (0: the counts, which also
decide the private partition selection; 1: the sums) of a release is a function of
(the generator's key, the release's stream id ``r``, ``P``, the canonical encoding of
``K``) only -- not of the other keys, the row order, the partitioning of the data or the
thread count.  So the same rows released on one machine or on a cluster
(:mod:`dpfast.dask`) give the same table bit for bit, and a public domain and its subsets
noise the keys they share identically.

Fresh noise per release
-----------------------
A key never makes two releases share streams.  ``rng`` of a release resolves to the
release's generator (:func:`release_generator`): a :class:`dpfast.Generator` is used as
given (its allocator numbers its releases: two releases from one generator never share a
stream id; a generator rebuilt from the same key replays the same *sequence* of
releases -- the replay mechanism for tests and audits); a raw 32-byte key (or a worker
key of :mod:`dpfast.dask`) is never used as it is: each release draws a fresh 127-bit
release id from ``os.urandom`` on the driver when it is built (:func:`fresh_release_id`,
recorded as :attr:`TableRelease.release_id`) and runs on the generator keyed with
``BLAKE2b(key=key, data=RELEASE_TAG || release id)`` (:func:`keyed_generator`).  So the
same raw key used for many releases gives independent noise, while re-running one
release object (a recomputed dask graph, which carries the release id) reproduces it.

Addressing
----------
* ``r`` is one fresh stream id taken from the release generator's allocator when the
  release starts (:func:`release_stream`): two releases from one generator never share
  it.
* The release's ChaCha20 key is ``BLAKE2b(key=generator key, data=KEY_NOISE_TAG || r)``
  (:func:`dpfast.noise._addressed.derive_key`): not the generator's key, so the per-key streams
  share no keystream with anything the allocator hands out, nor with the bounding
  streams (their own tag), nor with another release.
* Key ``K`` of part ``P`` draws from the 96-bit nonce
  ``BLAKE2b(key=release key, data=P || canonical_encoding(K), digest_size=12)`` (computed
  for all keys at once in C, :func:`dpfast._native.blake2b_keyed_many`, equal to
  hashlib's), one exact sampler run per key (:func:`dpfast.noise._addressed.run_chunks`
  with one-cell chunks).  The nonces of the keys of a release are checked to be distinct
  (a 96-bit collision, with probability below ``n**2 / 2**97``, raises ``RuntimeError``
  rather than reuse keystream).
"""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np

from dpfast import _native
from dpfast import random as _random
from dpfast.noise import _addressed, _drive
from dpfast.tables import _fixed, _keys
from dpfast.tables._law import NoiseLaw

__all__ = ["KEY_NOISE_TAG", "RELEASE_TAG", "fresh_release_id", "keyed_generator",
           "release_generator", "release_stream", "release_key", "key_nonces", "noise_keys"]

KEY_NOISE_TAG = b"dpfast.tables.key-noise v1"
RELEASE_TAG = b"dpfast.release-id v1"
_FRESH_BIT = 1 << 127  # fresh release ids lie in [2**127, 2**128)
COUNT_PART = 0
SUM_PART = 1
_DBL_MAX = float(np.finfo(np.float64).max)


def fresh_release_id() -> int:
    """A release id never drawn before: 127 bits from ``os.urandom`` (the top bit set), so
    two releases with one raw key collide with probability below ``n**2 / 2**128``."""
    return int.from_bytes(os.urandom(16), "little") | _FRESH_BIT


def keyed_generator(key: bytes, release_id: int) -> _random.Generator:
    """The generator of release ``release_id`` under the raw key ``key``:
    ``default_rng(BLAKE2b(key=key, data=RELEASE_TAG || release_id))`` (a keyed PRF: the
    generators of distinct release ids are independent)."""
    return _random.default_rng(_addressed.derive_key(bytes(key), RELEASE_TAG, release_id))


def release_generator(rng: _random.RngLike, name: str = "rng"
                      ) -> tuple[_random.Generator, int | None]:
    """``(generator, release id)`` of a new release made with ``rng``.

    A :class:`dpfast.Generator` (or None: the process-wide one) is used as given, release
    id None (its allocator numbers the release).  A raw 32-byte key gets a fresh release id
    and :func:`keyed_generator`: a raw key never replays an earlier release's noise.
    """
    if isinstance(rng, (bytes, bytearray, memoryview)):
        key = _random.as_generator(rng, name)._key  # validates the key (32 bytes)
        rid = fresh_release_id()
        return keyed_generator(key, rid), rid
    return _random.as_generator(rng, name), None


def release_stream(gen: _random.Generator) -> int:
    """One fresh stream id of ``gen``'s allocator: the release's id."""
    return int(gen.streams.allocate(1))


def release_key(key: bytes, stream: int) -> bytes:
    """The release's derived ChaCha20 key."""
    return _addressed.derive_key(key, KEY_NOISE_TAG, stream)


def key_nonces(rkey: bytes, uniques: np.ndarray | tuple[np.ndarray, ...], part: int) -> np.ndarray:
    """(n, 3) uint32 nonces of the keys ``uniques`` (one array or a tuple of columns)."""
    buf, off = _keys.canonical_encoding_flat(uniques)
    n = off.shape[0] - 1
    digests = _native.blake2b_keyed_many(rkey, part, buf, off, 12, _keys._threads())
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


def _grid(r: np.ndarray, big: dict[int, int], z: np.ndarray, g: float) -> np.ndarray:
    """The exact grid value ``(r + z) g`` rounded once, saturated at ±DBL_MAX (``r`` the
    aggregates in grid steps, ``big`` those beyond int64's fast path)."""
    res = r.astype(np.float64) * g + z.astype(np.float64) * g  # exact terms, one rounding
    slow = (np.abs(r) >= 1 << 53) | (np.abs(z) >= 1 << 53) | ~np.isfinite(res)
    if g < 2.0 ** -968:  # a product r g may be subnormal (inexact): all in integers
        slow[:] = True
    gf = Fraction(g)
    for i in np.flatnonzero(slow).tolist():
        res[i] = _drive.grid_value(int(r[i]) + int(z[i]), gf, _DBL_MAX)
    for i, v in big.items():
        res[i] = _drive.grid_value(v + int(z[i]), gf, _DBL_MAX)
    return res


def noise_keys(law: NoiseLaw, x: np.ndarray | _fixed.FixedSums, rkey: bytes,
               uniques: np.ndarray | tuple[np.ndarray, ...], part: int) -> np.ndarray:
    """Noise the aggregates ``x`` of the keys ``uniques`` (aligned) with ``law``, each on
    its own addressed stream (see the module docstring).

    ``x``: int64 for the discrete laws, or exact integer totals (``FixedSums`` with
    ``exp == 0``, saturated at ``±2**62``: 1-Lipschitz, so the sensitivity holds, and the
    noise of a scale ``<= 2**50`` then leaves int64 with probability below ``exp(-4096)``);
    for the float grid laws the exact fixed-point totals
    (:class:`~dpfast.tables._fixed.FixedSums`), each rounded once to the grid (ties to
    even) before the grid noise is added."""
    kw = _addressed.key_words(rkey)
    nonces = key_nonces(rkey, uniques, part)
    if law.kind in ("discrete_laplace", "discrete_gaussian"):
        kind = 0 if law.kind == "discrete_laplace" else 1
        if isinstance(x, _fixed.FixedSums):  # exact integer totals: saturated at ±2**62
            x = _fixed.saturated(x)
        return _discrete(kind, Fraction(law.scale), np.asarray(x, np.int64), kw, nonces)
    kind = 0 if law.kind == "laplace" else 1
    if not isinstance(x, _fixed.FixedSums):
        raise TypeError("float grid noise takes exact fixed-point totals (FixedSums), got "
                        f"{type(x).__name__}")
    g = float(law.granularity)
    t = Fraction(law.scale) / Fraction(g)
    r, big = _fixed.grid_steps(x, g)
    z = _discrete(kind, t, None, kw, nonces)
    return _grid(r, big, z, g)
