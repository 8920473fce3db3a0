"""Stream ids, nonces and the stream-source contract between generators and drivers.

A ChaCha20 stream is ``(key, 96-bit stream id, 32-bit block counter)``.  Stream ids are
split in two ranges so that no stream can ever be reused, by construction:

* ids below ``2**64`` are handed out by allocators (one per key, :class:`StreamSource`);
* a stream whose block counter is used up continues on its *extension* streams
  ``id + k * 2**64`` (k = 1, 2, ...: the nonce's top 32-bit word counts them), which no
  allocator hands out.  The numba refill (:func:`dpfast._kernels.chacha.refill`), the
  C bit generator (``csrc/bitgen.c``) and :class:`WordStream` all extend this way, so a
  counter never wraps and nobody's stream runs into somebody else's.

The drivers see a generator only through :class:`StreamSource`: its key words and an
allocator of fresh stream ids.
"""

from __future__ import annotations

import threading
from typing import Protocol

import numpy as np

from dpfast import _native

__all__ = ["StreamSource", "KeyedStreams", "WordStream", "nonce_words", "ALLOCATABLE",
           "BLOCKS_PER_STREAM", "WORDS_PER_BLOCK"]

WORDS_PER_BLOCK = 8  # uint64 words per 64-byte ChaCha20 block
BLOCKS_PER_STREAM = 1 << 32
ALLOCATABLE = 1 << 64  # allocators hand out ids in [0, 2**64); the rest are extensions
EXTENSIONS = 1 << 32  # extension streams per id (the nonce's top word)


class StreamSource(Protocol):
    """What a driver needs from a generator: key words and fresh stream ids."""

    @property
    def key_words(self) -> np.ndarray:
        """The 256-bit key as eight little-endian uint32 words."""
        ...

    def allocate(self, n: int) -> int:
        """Reserve ``n`` consecutive fresh stream ids below ``2**64``; return the first."""
        ...


class KeyedStreams:
    """A key and the allocator of its stream ids (a :class:`StreamSource`)."""

    def __init__(self, key: bytes, first_free_stream: int = 1) -> None:
        self.lock = threading.RLock()
        self.next_stream = first_free_stream
        self.set_key(key)

    def set_key(self, key: bytes) -> None:
        self.key = key
        self.key_words = np.frombuffer(key, dtype="<u4").astype(np.uint32)

    def allocate(self, n: int) -> int:
        with self.lock:
            first = self.next_stream
            if first + n > ALLOCATABLE:
                raise RuntimeError("stream ids of this key are exhausted; use a new key")
            self.next_stream = first + n
            return first


def nonce_words(first: int, n: int) -> np.ndarray:
    """(n, 3) uint32 little-endian nonce words of the stream ids first, ..., first+n-1."""
    if not (0 <= first and first + n <= 1 << 96):
        raise ValueError("internal: stream id out of range")
    if n == 1 and first < ALLOCATABLE:  # the common single-stream case, fewer steps
        return np.array([[first & 0xFFFFFFFF, first >> 32, 0]], np.uint32)
    if first + n <= ALLOCATABLE:
        ids = np.uint64(first) + np.arange(n, dtype=np.uint64)
        out = np.zeros((n, 3), np.uint32)
        out[:, 0] = (ids & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        out[:, 1] = (ids >> np.uint64(32)).astype(np.uint32)
        return out
    out = np.empty((n, 3), np.uint32)
    for i in range(n):
        s = first + i
        out[i] = (s & 0xFFFFFFFF, (s >> 32) & 0xFFFFFFFF, (s >> 64) & 0xFFFFFFFF)
    return out


class WordStream:
    """Consecutive 64-bit words of one stream id (< 2**64), across its extensions."""

    def __init__(self, source: StreamSource, stream: int | None = None) -> None:
        self._key_words = source.key_words
        self.stream = source.allocate(1) if stream is None else stream
        self.word = 0  # index of the next word, over the id and its extensions

    def fetch(self, n: int) -> np.ndarray:
        out = np.empty(n, np.uint64)
        done = 0
        while done < n:
            block, off = divmod(self.word, WORDS_PER_BLOCK)
            ext, counter = divmod(block, BLOCKS_PER_STREAM)
            if ext >= EXTENSIONS:  # 2**134 bytes: unreachable
                raise RuntimeError("stream exhausted")
            nblocks = min(BLOCKS_PER_STREAM - counter,
                          -(-(off + n - done) // WORDS_PER_BLOCK))
            tmp = np.empty(nblocks * 16, np.uint32)
            nonce = nonce_words(self.stream, 1)[0]
            nonce[2] = ext
            _native.chacha20_blocks(self._key_words, nonce, counter, nblocks, tmp)
            take = min(n - done, nblocks * WORDS_PER_BLOCK - off)
            out[done:done + take] = tmp.view("<u8")[off:off + take]
            done += take
            self.word += take
        return out
