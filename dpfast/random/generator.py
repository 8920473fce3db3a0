"""Generators: keyed roots (stream sources), the ``Generator`` class, ``default_rng``."""

from __future__ import annotations

import hashlib
import os
import threading
import weakref
from typing import Any, TypeAlias

import numpy as np

from dpfast import _native
from dpfast._core.validate import check_int as _check_int
from dpfast._core.validate import check_key as _check_key
from dpfast._core.validate import check_size as _check_size
from dpfast.random import _streams
from dpfast.random.chacha import _WORDS_PER_BLOCK, _WORDS_PER_STREAM, _nonce_words

__all__ = ["Generator", "default_rng", "as_generator", "RngLike"]


# --------------------------------------------------------------------------- key roots
class _Root(_streams.KeyedStreams):
    """Key material shared by a generator and everything spawned from it.

    Holds the key and the allocator of stream ids for that key (the
    :class:`~dpfast._streams.StreamSource` the drivers use).  Re-keyed in a forked child
    (see the module docstring).
    """

    def __init__(self, key: bytes, first_free_stream: int = 1) -> None:
        super().__init__(key, first_free_stream)
        self.bitgens: weakref.WeakSet = weakref.WeakSet()
        _ROOTS.add(self)

    def _set_key(self, key: bytes) -> None:
        self.set_key(key)

    def rekey_after_fork(self) -> None:
        self.lock = threading.RLock()  # a lock held by another thread at fork time is dead
        h = hashlib.blake2b(digest_size=32)
        h.update(self.key)
        h.update(os.urandom(32))
        h.update(os.getpid().to_bytes(8, "little"))
        self._set_key(h.digest())
        for bg in list(self.bitgens):
            bg._after_fork()


_ROOTS: weakref.WeakSet[_Root] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for root in list(_ROOTS):
        root.rekey_after_fork()
    global _DEFAULT, _DEFAULT_LOCK
    _DEFAULT_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# --------------------------------------------------------------------------- Generator
class Generator:
    """Cryptographically secure generator over one ChaCha20 stream.

    Create it with :func:`default_rng`.  Thread-safe: each draw reserves its keystream
    words under a lock before computing them.

    Notes
    -----
    Every method that consumes a data-dependent number of words (``integers``, the exact
    samplers) runs on fresh streams taken from the key's allocator, split into fixed-size
    chunks, so its output for a given key does not depend on the number of threads.
    """

    def __init__(self, _root: _Root, _stream: int) -> None:
        if not isinstance(_root, _Root):
            raise TypeError("use dpfast.default_rng() to create a Generator")
        self._root = _root
        self._stream = _stream
        self._pos = 0  # next uint64 word of the stream

    # -- introspection
    @property
    def stream(self) -> int:
        """Current stream id (changes only if a stream's block counter is used up)."""
        return self._stream

    def __repr__(self) -> str:
        return f"dpfast.Generator(ChaCha20, stream={self._stream})"

    # -- raw words
    def _reserve(self, nwords: int) -> list[tuple[int, int, int]]:
        """Reserve ``nwords`` words: a list of (stream, first word, count) segments."""
        segments = []
        with self._root.lock:
            while nwords > 0:
                room = _WORDS_PER_STREAM - self._pos
                if room == 0:
                    self._stream = self._root.allocate(1)
                    self._pos = 0
                    continue
                take = min(room, nwords)
                segments.append((self._stream, self._pos, take))
                self._pos += take
                nwords -= take
        return segments

    def _words(self, nwords: int) -> np.ndarray:
        out = np.empty(nwords, np.uint64)
        done = 0
        key_words = self._root.key_words
        for stream, first, count in self._reserve(nwords):
            nonce = _nonce_words([stream])[0]
            # whole blocks go straight into out; partial blocks at the ends via a copy
            head = min(count, -first % _WORDS_PER_BLOCK)
            body = (count - head) // _WORDS_PER_BLOCK * _WORDS_PER_BLOCK
            for a, n in ((first, head), (first + head + body, count - head - body)):
                if n:
                    b0 = a // _WORDS_PER_BLOCK
                    tmp = np.empty(16, np.uint32)
                    _native.chacha20_blocks(key_words, nonce, b0, 1, tmp)
                    off = a - b0 * _WORDS_PER_BLOCK
                    dst = done + (a - first)
                    out[dst:dst + n] = tmp.view("<u8")[off:off + n]
            if body:
                whole = out[done + head:done + head + body]
                _native.chacha20_blocks(key_words, nonce, (first + head) // _WORDS_PER_BLOCK,
                                        body // _WORDS_PER_BLOCK, whole.view(np.uint32))
            done += count
        return out

    def random_raw(self, size: Any = None) -> np.ndarray | int:
        """Consecutive 64-bit words of this generator's keystream (little-endian).

        Parameters
        ----------
        size : int or tuple of ints, optional
            Output shape; ``None`` returns one Python int.
        """
        shape = _check_size(size)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        words = self._words(n)
        return int(words[0]) if size is None else words.reshape(shape)

    def random(self, size: Any = None) -> np.ndarray | float:
        """Uniform doubles on the grid ``k / 2**53``, ``k`` in ``[0, 2**53)``: ``[0, 1)``."""
        shape = _check_size(size)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        out = (self._words(n) >> np.uint64(11)).astype(np.float64) * (2.0 ** -53)
        return float(out[0]) if size is None else out.reshape(shape)

    def integers(self, low: int, high: int | None = None, size: Any = None,
                 dtype: Any = None) -> np.ndarray | int:
        """Exactly uniform integers in ``[low, high)`` (Lemire's method, no modulo bias).

        Parameters
        ----------
        low, high : int
            Bounds; with ``high=None`` the range is ``[0, low)``.  The range may have up
            to ``2**64`` values and must fit ``dtype``.
        size : int or tuple of ints, optional
            Output shape; ``None`` returns one Python int.
        dtype : {None, numpy.int64, numpy.uint64, numpy.int32, ...}
            Integer dtype of the result.  ``None`` (default): int64, or uint64 when the
            range lies in ``[0, 2**64)`` but not in int64, or Python ints (object array)
            when it fits neither (e.g. ``[-1, 2**63 + 1)``).
        """
        if high is None:
            low, high = 0, low
        low = _check_int(low, "low")
        high = _check_int(high, "high")
        if low >= high:
            raise ValueError(f"low must be < high, got low={low}, high={high}")
        span = high - low
        if span > 1 << 64:
            raise ValueError("high - low must be at most 2**64")
        if dtype is None:
            if -(1 << 63) <= low and high - 1 < 1 << 63:
                dtype = np.int64
            elif low >= 0 and high - 1 < 1 << 64:
                dtype = np.uint64
            else:
                dtype = object
        dt = np.dtype(dtype)
        if dt.kind not in "iuO":
            raise TypeError(f"dtype must be an integer dtype, got {dt}")
        if dt.kind != "O":
            info = np.iinfo(dt)
            if low < info.min or high - 1 > info.max:
                raise ValueError(f"[low, high) = [{low}, {high}) does not fit dtype {dt}")
        shape = _check_size(size)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        from dpfast.noise import _drive  # local: keeps import dpfast light

        vals = _drive.uniform_below(self, span, n)  # uint64 in [0, span)
        if dt.kind == "O":
            out = np.array([low + int(v) for v in vals], dtype=object)
            return out[0] if size is None else out.reshape(shape)
        # low + offset modulo 2**64, read back in two's complement: exact, since the true
        # values fit dtype (checked above)
        vals += np.uint64(low % (1 << 64))
        out = vals.view(np.int64) if dt.kind == "i" else vals
        out = out.astype(dt, copy=False)
        return int(out[0]) if size is None else out.reshape(shape)

    def spawn(self, n: int) -> list[Generator]:
        """``n`` generators on fresh stream ids of the same key.

        The ids come from the key's allocator, so children never overlap each other,
        the parent, or anything else drawn from this key.
        """
        n = _check_int(n, "n")
        if n < 0:
            raise ValueError(f"n must be non-negative, got {n}")
        first = self._root.allocate(n)
        return [Generator(self._root, first + i) for i in range(n)]

    # -- exact samplers (kernels in dpfast._kernels, slow path in dpfast.noise._exact)
    def bernoulli_exp(self, gamma: Any, size: Any = None) -> np.ndarray | bool:
        """Exact Bernoulli(exp(-gamma)) for rational ``gamma >= 0`` (CKS20 Alg. 1 target).

        ``gamma`` may be a float (taken as the exact binary rational it encodes), an int,
        a ``fractions.Fraction``, or an array of floats broadcast against ``size``.
        See :mod:`dpfast.noise` for the exactness argument.
        """
        from dpfast.noise import _drive

        return _drive.bernoulli_exp(self, gamma, size)

    def discrete_laplace(self, scale: Any, size: Any = None) -> np.ndarray | int:
        """Exact discrete Laplace noise, ``P(x) ∝ exp(-|x| / scale)`` on the integers.

        ``scale`` may be a positive float/int/Fraction or an array of positive floats
        broadcast against ``size`` (per-cell noise levels).
        """
        from dpfast.noise import _drive

        return _drive.discrete_laplace(self, scale, size)

    def discrete_gaussian(self, sigma: Any, size: Any = None) -> np.ndarray | int:
        """Exact discrete Gaussian noise, ``P(x) ∝ exp(-x**2 / (2 sigma**2))``.

        ``sigma`` may be a positive float/int/Fraction or an array of positive floats
        broadcast against ``size``.
        """
        from dpfast.noise import _drive

        return _drive.discrete_gaussian(self, sigma, size)

    # -- plumbing for the drivers
    @property
    def streams(self) -> _streams.StreamSource:
        """The stream source behind this generator: its key words and the allocator of
        fresh stream ids (what :mod:`dpfast.noise._drive` uses; shared with spawned
        generators)."""
        return self._root

    @property
    def _key(self) -> bytes:
        return self._root.key


def default_rng(key: bytes | None = None) -> Generator:
    """A new ChaCha20 :class:`Generator`.

    Parameters
    ----------
    key : bytes, optional
        32-byte key for a replayable stream.  ``None`` (the default, and the right choice
        for real releases) keys from ``os.urandom``.  **Whoever holds the key can remove
        the noise.**

    Returns
    -------
    Generator
        On stream 0 of the key; spawned generators and parallel chunks use fresh ids.
    """
    key = os.urandom(32) if key is None else _check_key(key)
    return Generator(_Root(key), 0)


_DEFAULT: Generator | None = None
_DEFAULT_LOCK = threading.Lock()


def _default_generator() -> Generator:
    """The process-wide generator used when ``rng=None`` (urandom-keyed, fork-safe)."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = default_rng()
    return _DEFAULT


#: What every ``rng=`` parameter accepts: ``None`` (the process-wide default generator),
#: a :class:`Generator`, or a 32-byte key (a fresh generator keyed with it: replayable).
RngLike: TypeAlias = Generator | bytes | bytearray | memoryview | None


def as_generator(rng: RngLike, name: str = "rng") -> Generator:
    """Resolve an ``rng`` argument: None, a :class:`Generator` or a 32-byte key."""
    if rng is None:
        return _default_generator()
    if isinstance(rng, Generator):
        return rng
    if isinstance(rng, (bytes, bytearray, memoryview)):
        return default_rng(_check_key(rng, name))
    kind = type(rng).__name__
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        why = (f"got the int {rng!r}: an integer seed is too small and too guessable to "
               "key private noise")
    elif isinstance(rng, (np.random.Generator, np.random.BitGenerator,
                          np.random.RandomState)):
        why = (f"got a numpy {kind}: numpy's generators are not cryptographically secure "
               "and their state can be recovered from outputs")
    else:
        why = f"got {kind}"
    raise TypeError(f"{name} must be None, a dpfast.Generator or a 32-byte key, {why}. "
                    f"Pass {name}=None (a fresh key from the OS), {name}=dpfast.default_rng() "
                    f"(a generator to reuse), or {name}=<32 bytes> such as os.urandom(32) "
                    "(replayable; whoever holds the key can remove the noise)")
