"""The CSPRNG: ChaCha20 (RFC 8439) keystream, generators and numpy interop.

Every random bit dpfast uses comes from ChaCha20 keyed from ``os.urandom`` (or from a
key the caller supplies for replayable runs).  Streams are counter based: a stream is
the keystream of ``(key, stream id, block counter)`` with the 96-bit RFC 8439 nonce
``stream.to_bytes(12, "little")``.

Keystream policy (never reuse)
------------------------------
* A :class:`Generator` hands out consecutive words of its stream; each draw reserves its
  words under a lock before they are computed, so threads sharing a generator never get
  the same bytes.
* The 32-bit block counter never wraps: a :class:`Generator` moves to a fresh stream id,
  kernel chunks and the numpy bit generator to their own extension ids ``id + k 2**64``
  (allocators hand out ids below ``2**64`` only; :mod:`dpfast.random._streams`).
* Stream ids are handed out by one allocator per key, the stream source a generator
  gives the drivers (:attr:`Generator.streams`): the generator made by
  :func:`default_rng` uses stream 0; :meth:`Generator.spawn`, the samplers' parallel
  chunks and :class:`ChaCha20` take fresh ids from the allocator, so no two consumers of
  one key ever share a stream.
* Layout: :mod:`~dpfast.random.chacha` (RFC 8439 bytes), :mod:`~dpfast.random.generator`
  (keyed roots, :class:`Generator`, :func:`default_rng`), :mod:`~dpfast.random.bitgen`
  (:class:`ChaCha20` for numpy), ``_streams`` (stream ids, sources, extensions).
* After ``os.fork()`` the child re-keys every generator with
  ``BLAKE2b(old key || 32 bytes of os.urandom || pid)`` (``os.register_at_fork``), also
  for explicitly keyed generators: the child moves to a key the parent cannot reach and
  never repeats its parent's bytes.  Output drawn in a forked child is therefore not
  reproducible from the parent's key.

Reproducibility: ``default_rng(key)`` with an explicit 32-byte key replays the same
output for the same sequence of calls (tests, audits, distributed recomputation).
**Whoever holds the key can regenerate, and so remove, the noise**: keep such keys as
secret as the data, and use ``default_rng()`` (fresh OS entropy) for real releases.
"""

from __future__ import annotations

from dpfast.random.bitgen import ChaCha20
from dpfast.random.chacha import (  # noqa: F401
    _BLOCKS_PER_STREAM,
    _WORDS_PER_BLOCK,
    _WORDS_PER_STREAM,
    _nonce,
    _nonce_words,
    keystream,
)
from dpfast.random.generator import (  # noqa: F401  (private names: tests and drivers)
    Generator,
    RngLike,
    _default_generator,
    _Root,
    as_generator,
    default_rng,
)

__all__ = ["keystream", "Generator", "default_rng", "ChaCha20", "as_generator", "RngLike"]
