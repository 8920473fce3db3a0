"""The numpy randomness diffprivlib's models and tools draw themselves, from dpfast's ChaCha20.

diffprivlib's models and tools turn their ``random_state`` into a numpy ``RandomState`` with
``diffprivlib.utils.check_random_state`` (tree features and thresholds, data shuffles, the
forest's per-tree seeds, k-means centres, ``quantile``'s uniform within the chosen interval,
the ``Vector``/``Bingham`` draws of the models that call them with a ``RandomState``).
:func:`check_random_state` is installed in their place (by
:func:`dpfast.compat.diffprivlib.install`) and returns a ``RandomState`` whose bit generator
is :class:`dpfast.random.ChaCha20`:

* ``None`` (diffprivlib: numpy's global Mersenne Twister) -> one process-wide
  :class:`DpfastRandomState` keyed from ``os.urandom`` (re-keyed in forked children, as every
  dpfast generator is);
* an int -> a :class:`DpfastRandomState` keyed by SHA-256 of the seed (replayable: tests
  only);
* ``secure=True`` calls (diffprivlib's mechanisms) and ``RandomState`` instances -> exactly
  diffprivlib's own behaviour.

Only the bits change: numpy's distribution code (``uniform``, ``permutation``,
``standard_normal``) is used as diffprivlib uses it, so those draws have the same
floating-point laws as under diffprivlib, now on cryptographic bits instead of MT19937.
A :class:`DpfastRandomState` handed to a dpfast mechanism (a tree passes its own to every
leaf) gives that mechanism a dpfast generator directly: the process generator when unseeded,
one generator per seeded object otherwise (a fresh stream id of the object's own key).
"""

from __future__ import annotations

import hashlib
import numbers
import threading
from typing import Any

import numpy as np
from diffprivlib import utils as _du

from dpfast.compat._random_state import process_generation
from dpfast.random import ChaCha20, Generator

__all__ = ["DpfastRandomState", "check_random_state", "ORIGINAL_CHECK_RANDOM_STATE"]

ORIGINAL_CHECK_RANDOM_STATE = _du.check_random_state
_SEED_DOMAIN = b"dpfast.compat.diffprivlib.check_random_state.v1\x00"


class DpfastRandomState(np.random.RandomState):
    """A numpy ``RandomState`` over :class:`dpfast.random.ChaCha20`.

    ``unseeded`` marks the process-wide instance keyed from ``os.urandom``.  Copies and
    pickles never duplicate keystream: an unseeded instance copies to a fresh unseeded one,
    a seeded one to a new instance keyed by 32 bytes drawn from it (replayable from the
    original's seed).  ``seed()``/``set_state`` are refused (the ChaCha20 state cannot be
    set).
    """

    def __init__(self, key: bytes | None = None, *, unseeded: bool = False) -> None:
        self._chacha = ChaCha20(key)
        super().__init__(self._chacha)
        self.unseeded = unseeded
        self._dpfast_gen: Any = None
        self._gen_lock = threading.Lock()

    def dpfast_generator(self) -> Any:
        """The :class:`dpfast.Generator` a dpfast mechanism given this object uses (seeded:
        created once, on a fresh stream of this object's key)."""
        if self.unseeded:
            from dpfast.compat._random_state import shared_generator

            return shared_generator()
        with self._gen_lock:
            if self._dpfast_gen is None:
                # a fresh stream id of this object's own key (the key's allocator never hands
                # one out twice): independent keystream, no new key schedule per tree
                root = self._chacha._root
                self._dpfast_gen = Generator(root, root.allocate(1))
            return self._dpfast_gen

    def __reduce__(self) -> Any:
        if self.unseeded:
            return (DpfastRandomState, (None,), {"unseeded": True})
        return (DpfastRandomState, (bytes(self.bytes(32)),), {"unseeded": False})

    def __setstate__(self, state: Any) -> None:
        self.unseeded = bool(state["unseeded"])

    def __deepcopy__(self, memo: Any) -> DpfastRandomState:
        return self.__copy__()

    def __copy__(self) -> DpfastRandomState:
        if self.unseeded:
            return DpfastRandomState(unseeded=True)
        return DpfastRandomState(bytes(self.bytes(32)))


_SHARED: list[Any] = []
_SHARED_LOCK = threading.Lock()


def _shared() -> DpfastRandomState:
    with _SHARED_LOCK:
        if not _SHARED or _SHARED[0] != process_generation():
            # (ChaCha20 re-keys itself in a forked child; a new object per process keeps the
            # dpfast generator it hands out per process too)
            _SHARED[:] = [process_generation(), DpfastRandomState(unseeded=True)]
        return _SHARED[1]


def check_random_state(seed: Any, secure: bool = False) -> Any:
    """``diffprivlib.utils.check_random_state`` with dpfast's bits for the models' numpy
    draws (see the module docstring); ``secure=True`` and ``RandomState`` instances behave as
    diffprivlib's."""
    if secure:
        return ORIGINAL_CHECK_RANDOM_STATE(seed, True)
    if seed is None or seed is np.random.mtrand._rand:
        return _shared()
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return DpfastRandomState(hashlib.sha256(_SEED_DOMAIN + str(int(seed)).encode()).digest())
    return ORIGINAL_CHECK_RANDOM_STATE(seed, False)
