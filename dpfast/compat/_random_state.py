"""``random_state`` arguments of other libraries mapped onto dpfast generators.

Security meaning (documented in the public classes): ``None`` (and the "no seed" markers
diffprivlib uses internally: ``secrets.SystemRandom`` instances and numpy's global
``RandomState``) gives a generator keyed from ``os.urandom`` -- the secure default.  An
integer seed gives a ChaCha20 key derived from the seed with SHA-256: the output is
replayable, and *whoever knows or guesses the seed can remove the noise* (an int seed has
few bits of entropy).  A numpy ``RandomState``/``Generator`` gives a key made of 32 bytes
drawn from it: replayable from that generator's state, which is not secret-grade either.
Seeds are for tests and audits only.  Unseeded mechanisms share one process-wide
generator and pre-drawn noise blocks (:func:`shared_generator`, :data:`SHARED_BUFFERS`).
"""

from __future__ import annotations

import hashlib
import numbers
import os
import secrets
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

import dpfast
from dpfast.noise import _exact

_SEED_DOMAIN = b"dpfast.compat.random_state.v1\x00"


def is_unseeded(random_state: Any) -> bool:
    """Whether ``random_state`` asks for fresh secure randomness (None and diffprivlib's
    internal "no seed" markers)."""
    return (random_state is None or isinstance(random_state, secrets.SystemRandom)
            or random_state is np.random.mtrand._rand
            or getattr(random_state, "unseeded", False) is True)


_SHARED_LOCK = threading.Lock()
# process generation: 0 in the process that imported this module, bumped in every forked
# child (cheaper than an os.getpid() system call on every scalar draw)
_FORK = [0]


def _after_fork_in_child() -> None:
    _FORK[0] += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def process_generation() -> int:
    """A number that changes in every forked child (fork detection without a system call)."""
    return _FORK[0]

_SHARED_GEN: list[Any] = []  # [process generation, generator]


def shared_generator() -> Any:
    """One process-wide generator keyed from ``os.urandom`` for every unseeded mechanism
    (diffprivlib's tools and models build a new mechanism per call: one key per process
    instead of one ``os.urandom`` read and one generator each; a forked child gets a fresh
    key, never its parent's stream)."""
    with _SHARED_LOCK:
        if not _SHARED_GEN or _SHARED_GEN[0] != _FORK[0]:
            _SHARED_GEN[:] = [_FORK[0], dpfast.default_rng()]
        return _SHARED_GEN[1]


def generator_for(random_state: Any) -> Any:
    """A :class:`dpfast.Generator` for a diffprivlib/scikit-learn style ``random_state``.

    Raises
    ------
    ValueError
        ``random_state`` is none of None, an int, a ``secrets.SystemRandom``, a numpy
        ``RandomState`` or ``Generator``.
    """
    if is_unseeded(random_state):
        return shared_generator()
    hook = getattr(random_state, "dpfast_generator", None)
    if hook is not None:  # a RandomState over dpfast's ChaCha20 (compat.diffprivlib)
        return hook()
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        digest = hashlib.sha256(_SEED_DOMAIN + str(int(random_state)).encode()).digest()
        return dpfast.default_rng(key=digest)
    if isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        return dpfast.default_rng(key=bytes(random_state.bytes(32)))
    raise ValueError(f"random_state={random_state!r} cannot be used to seed a dpfast generator "
                     "(use None, an int, or a numpy RandomState/Generator)")


class NoiseBuffer:
    """Pre-drawn i.i.d. noise for scalar calls (one dpfast call serves many scalars).

    Values are drawn in blocks (``first``, 16 by default, doubling up to 4096) from
    ``draw(n)`` and handed out in order; a new ``tag`` (the noise parameters) discards the
    rest.  An object that usually draws once (diffprivlib's trees build one selection
    mechanism per leaf) passes ``first=1``.  Independent identically
    distributed draws handed out one by one have the same joint distribution as drawing
    one at a time, so the mechanisms' output distributions are unchanged.  Each value is
    handed out once: a lock serialises threads, and a forked child discards the values its
    parent drew (it never repeats the parent's noise).
    """

    _MAX = 4096

    def __init__(self, first: int = 16) -> None:
        self._tag: Any = None
        self._values: np.ndarray = np.empty(0)
        self._pos = 0
        self._first = first
        self._block = first
        self._pid = _FORK[0]
        self._lock = threading.Lock()

    def take(self, tag: Any, draw: Callable[[int], np.ndarray]) -> Any:
        with self._lock:
            pid = _FORK[0]
            if tag != self._tag or self._pos >= self._values.size or pid != self._pid:
                if tag != self._tag:
                    self._block = self._first
                self._values = draw(self._block)
                self._block = min(self._block * 2, self._MAX)
                self._tag, self._pid, self._pos = tag, pid, 0
            value = self._values[self._pos]
            self._pos += 1
            return value


class SharedNoiseBuffers:
    """Process-wide :class:`NoiseBuffer` s for unseeded mechanisms, one per noise law and
    parameters: a new mechanism object with the same parameters (diffprivlib builds one per
    ``tools.mean`` call) continues the same pre-drawn block instead of drawing its own.

    A buffer is found by ``(draw.__code__, tag)``: the drawing function's code names the law
    (Laplace, geometric, ...), ``tag`` its parameters.  Draws come from
    :func:`shared_generator`; each value is handed out once (the buffers' locks), at most
    ``MAX_BUFFERS`` are kept, and a forked child starts empty.
    """

    MAX_BUFFERS = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffers: dict[Any, NoiseBuffer] = {}
        self._pid = _FORK[0]

    def clear(self) -> None:
        """Discard every pre-drawn block (a backend installed with a new generator)."""
        with self._lock:
            self._buffers = {}

    def buffer(self, key: Any) -> NoiseBuffer:
        """The buffer of ``key`` (created if needed).  A caller may keep it for later takes:
        its values are still handed out once, and after a fork it discards its block."""
        with self._lock:
            if self._pid != _FORK[0]:
                self._buffers, self._pid = {}, _FORK[0]
            buf = self._buffers.get(key)
            if buf is None:
                if len(self._buffers) >= self.MAX_BUFFERS:
                    self._buffers.pop(next(iter(self._buffers)))
                buf = self._buffers[key] = NoiseBuffer()
        return buf

    def take(self, tag: Any, draw: Callable[[int], np.ndarray]) -> Any:
        return self.buffer((draw.__code__, tag)).take(tag, draw)


SHARED_BUFFERS = SharedNoiseBuffers()


# ----------------------------------------------------------------------------- raw words
class Words(_exact.WordSource):
    """Uniform 64-bit words of one dpfast generator, fetched in blocks and handed out once
    (a lock serialises threads; a forked child discards its parent's unused words).  A
    :class:`dpfast.noise._exact.WordSource` (its ``next``), so exact continuations refine
    uniforms with the same words."""

    _MAX = 4096

    def __init__(self, gen: Any) -> None:  # (WordSource's fetch is not used)
        self._gen = gen
        self._buf: list[int] = []
        self._block = 64
        self._pid = _FORK[0]
        self._lock = threading.Lock()

    def next(self) -> int:
        """The next word (the :class:`dpfast.noise._exact.WordSource` interface)."""
        with self._lock:
            gen = _FORK[0]
            if self._pid != gen:
                self._buf, self._pid, self._block = [], gen, 64
            if not self._buf:
                self._buf = self._gen.random_raw(self._block).tolist()[::-1]
                self._block = min(2 * self._block, self._MAX)
            return self._buf.pop()


_WORDS: weakref.WeakKeyDictionary[Any, Words] = weakref.WeakKeyDictionary()
_WORDS_LOCK = threading.Lock()


def words_for(gen: Any) -> Words:
    """The :class:`Words` of ``gen`` (one per generator, so no word is handed out twice)."""
    words = _WORDS.get(gen)
    if words is None:
        with _WORDS_LOCK:
            words = _WORDS.get(gen)
            if words is None:
                words = _WORDS[gen] = Words(gen)
    return words


def uniform_below(words: Words, k: int) -> int:
    """Exactly uniform on ``{0, ..., k - 1}`` (``1 <= k < 2^64``): rejection of the top
    ``2^64 mod k`` words."""
    if k == 1:
        return 0
    limit = (1 << 64) - (1 << 64) % k
    while True:
        w = words.next()
        if w < limit:
            return w % k
