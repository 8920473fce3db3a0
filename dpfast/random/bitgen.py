"""numpy interop: a ``BitGenerator`` over dpfast's ChaCha20."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpfast import _native
from dpfast._core.validate import check_key as _check_key
from dpfast._core.validate import check_size as _check_size
from dpfast.random.chacha import _nonce_words
from dpfast.random.generator import _Root

__all__ = ["ChaCha20"]

# --------------------------------------------------------------------------- numpy interop
_STREAMS_PER_BITGEN = 1  # plus its extension streams id + k 2**64 (dpfast._streams)
_CAPSULE_NAME = b"BitGenerator"
_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)


class ChaCha20(np.random.BitGenerator):
    """numpy ``BitGenerator`` over dpfast's ChaCha20: ``np.random.Generator(ChaCha20())``.

    Parameters
    ----------
    key : bytes, optional
        32-byte key (replayable; whoever holds it can remove the noise), or ``None`` for
        a key from ``os.urandom``.

    Notes
    -----
    The bit generator reserves one stream id of its key and, whenever that stream's 32-bit
    block counter is used up, moves to the id's next extension stream ``id + k 2**64``
    (which no allocator hands out), so it never reuses keystream.  It is re-keyed in
    forked children like every dpfast generator.  Only the bits are secure: numpy's
    distribution code (``normal``, ``laplace`` ...) is still floating point and not
    exact; use dpfast's samplers for DP noise.
    """

    def __init__(self, key: bytes | None = None) -> None:
        super().__init__(0)
        key = os.urandom(32) if key is None else _check_key(key)
        self._root = _Root(key)
        self._first_stream = self._root.allocate(_STREAMS_PER_BITGEN)
        self._state = _native.BitgenState(self._root.key_words,
                                          _nonce_words([self._first_stream])[0])
        self._capsule = _PyCapsule_New(self._state.address, _CAPSULE_NAME, None)
        self._root.bitgens.add(self)

    def _after_fork(self) -> None:
        self._state.rekey(self._root.key_words, _nonce_words([self._first_stream])[0])

    @property
    def capsule(self) -> Any:  # numpy's Generator reads this attribute
        return self._capsule

    @property
    def state(self) -> dict[str, Any]:
        return {"bit_generator": "dpfast.ChaCha20", "stream": self._first_stream
                + (self._state.stream_index << 64)}

    @state.setter
    def state(self, value: Mapping[str, Any]) -> None:
        raise TypeError("the state of a dpfast.ChaCha20 bit generator cannot be set")

    def random_raw(self, size: Any = None, output: bool = True) -> Any:
        """Raw 64-bit words (``size=None``: one int)."""
        shape = _check_size(size)
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        out = np.empty(n, np.uint64)
        with self.lock:
            self._state.fill(out)
        if not output:
            return None
        return int(out[0]) if size is None else out.reshape(shape)

    def spawn(self, n_children: int) -> list[ChaCha20]:
        raise TypeError("use dpfast.Generator.spawn; ChaCha20 bit generators do not spawn")

    def __reduce__(self) -> Any:
        raise TypeError("dpfast.ChaCha20 cannot be pickled (it would duplicate keystream)")
