"""ChaCha20 (RFC 8439) keystream bytes, and stream ids as nonces."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpfast import _native
from dpfast._core.validate import check_int as _check_int
from dpfast._core.validate import check_key as _check_key
from dpfast.random import _streams

__all__ = ["keystream"]

_WORDS_PER_BLOCK = _streams.WORDS_PER_BLOCK
_BLOCKS_PER_STREAM = _streams.BLOCKS_PER_STREAM
_WORDS_PER_STREAM = _WORDS_PER_BLOCK * _BLOCKS_PER_STREAM
_MAX_STREAM = 1 << 96


def _nonce(stream: int) -> bytes:
    return stream.to_bytes(12, "little")


def _nonce_words(streams: np.ndarray | Sequence[int]) -> np.ndarray:
    """(n, 3) uint32 little-endian nonce words for consecutive stream ids."""
    out = np.empty((len(streams), 3), np.uint32)
    for i, s in enumerate(streams):
        out[i] = (s & 0xFFFFFFFF, (s >> 32) & 0xFFFFFFFF, (s >> 64) & 0xFFFFFFFF)
    return out


def keystream(key: bytes, stream: int, nbytes: int, counter: int = 0) -> bytes:
    """RFC 8439 ChaCha20 keystream.

    Parameters
    ----------
    key : bytes
        32-byte key.
    stream : int
        Stream id in ``[0, 2**96)``; the nonce is ``stream.to_bytes(12, "little")``.
    nbytes : int
        Number of bytes (any non-negative length, not only multiples of 64).
    counter : int, optional
        32-bit block counter of the first block.

    Returns
    -------
    bytes
        Equal to the ``cryptography`` package's ChaCha20 keystream with the 16-byte
        nonce ``counter.to_bytes(4, "little") + stream.to_bytes(12, "little")``.

    Raises
    ------
    ValueError
        If the block counter would pass ``2**32 - 1`` (it never wraps), or an argument is
        out of range.
    """
    key = _check_key(key)
    stream = _check_int(stream, "stream")
    nbytes = _check_int(nbytes, "nbytes")
    counter = _check_int(counter, "counter")
    if not 0 <= stream < _MAX_STREAM:
        raise ValueError(f"stream must be in [0, 2**96), got {stream}")
    if nbytes < 0:
        raise ValueError(f"nbytes must be non-negative, got {nbytes}")
    if not 0 <= counter < _BLOCKS_PER_STREAM:
        raise ValueError(f"counter must be in [0, 2**32), got {counter}")
    if counter + (nbytes + 63) // 64 > _BLOCKS_PER_STREAM:
        raise ValueError("counter + nbytes/64 exceeds 2**32 blocks: the 32-bit block counter "
                         "would wrap (use another stream)")
    return _native.chacha20_keystream(key, _nonce(stream), counter, nbytes)
