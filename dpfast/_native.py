"""The only importer of the compiled ``dpfast._cffi`` module (C kernels in ``csrc/``).

Functions here take numpy arrays, check the buffers they hand to C (dtype, contiguity,
size) and call C on whole arrays; cffi releases the GIL during each call.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from dpfast._cffi import ffi, lib

__all__ = ["chacha20_blocks", "chacha20_blocks_impl", "chacha20_streams", "chacha20_keystream",
           "chacha20_stream_head",
           "simd_level", "blocks_address", "BLOCK_IMPLS", "blake2b_keyed_many",
           "register_kernel_symbols"]

#: values of the environment variable DPFAST_SIMD, which caps the ChaCha20 path the C
#: code picks (read once, by C): e.g. "avx2" measures the AVX2 path on an AVX-512 host
SIMD_CAPS = ("avx512", "avx2", "portable")
if os.environ.get("DPFAST_SIMD", "") not in ("", *SIMD_CAPS):
    warnings.warn(f"DPFAST_SIMD={os.environ['DPFAST_SIMD']!r} is not one of {SIMD_CAPS}: "
                  "ignored (the widest path the CPU runs is used)", RuntimeWarning,
                  stacklevel=2)

# fewest messages per thread of blake2b_keyed_many (below: one thread, no pool)
_BLAKE2B_PART = 1 << 15

# implementation numbers of dpf_chacha20_blocks_impl (csrc/chacha20.c)
BLOCK_IMPLS = {"scalar": 0, "portable8": 1, "avx2": 2, "portable16": 3, "avx512": 4}


def _u32(a: np.ndarray, n: int | None = None) -> object:
    if a.dtype != np.uint32 or not a.flags.c_contiguous:
        raise TypeError("internal: expected a C-contiguous uint32 array")
    if n is not None and a.size < n:
        raise ValueError("internal: buffer too small")
    return ffi.cast("uint32_t *", ffi.from_buffer(a))


def chacha20_blocks(key_words: np.ndarray, nonce_words: np.ndarray, counter: int,
                    nblocks: int, out: np.ndarray) -> None:
    """Write ``nblocks`` keystream blocks starting at ``counter`` into ``out`` (uint32)."""
    if counter < 0 or counter + nblocks > 1 << 32:
        raise ValueError("internal: block counter would wrap")
    lib.dpf_chacha20_blocks(_u32(key_words, 8), _u32(nonce_words, 3), counter, nblocks,
                            _u32(out, 16 * nblocks))


def blocks_address() -> int:
    """The address of ``dpf_chacha20_blocks`` (what callers store in the kernels'
    ``st[:, ST_FILL]``)."""
    return int(ffi.cast("uintptr_t", lib.dpf_chacha20_blocks))


#: C functions the numba kernels call by name (``dpfast._kernels.chacha._c_blocks``,
#: ``_c_streams``; ``dpfast._kernels.table._c_fast``)
KERNEL_SYMBOLS = ("dpf_chacha20_blocks", "dpf_chacha20_streams", "dpf_table_fast")


def register_kernel_symbols() -> None:
    """Tell LLVM where the C functions the kernels call by name are (idempotent).  The
    kernels package (``dpfast._kernels``) calls it when it loads, before any kernel can
    be compiled or loaded from numba's cache (an unresolved name would abort)."""
    from llvmlite import binding

    for name in KERNEL_SYMBOLS:
        binding.add_symbol(name, int(ffi.cast("uintptr_t", getattr(lib, name))))


def chacha20_blocks_impl(impl: str, key_words: np.ndarray, nonce_words: np.ndarray,
                         counter: int, nblocks: int, out: np.ndarray) -> bool:
    """Like :func:`chacha20_blocks` with one named implementation (``BLOCK_IMPLS``).

    Returns False (writing nothing) when this CPU cannot run it.  For equality tests.
    """
    if counter < 0 or counter + nblocks > 1 << 32:
        raise ValueError("internal: block counter would wrap")
    rc = lib.dpf_chacha20_blocks_impl(BLOCK_IMPLS[impl], _u32(key_words, 8),
                                      _u32(nonce_words, 3), counter, nblocks,
                                      _u32(out, 16 * nblocks))
    return rc == 0


def chacha20_streams(key_words: np.ndarray, nonces: np.ndarray, counters: np.ndarray,
                     nblocks: int, out: np.ndarray) -> None:
    """Fill ``out[i]`` with ``nblocks`` blocks of stream ``nonces[i]`` from ``counters[i]``."""
    n = nonces.shape[0]
    if np.any(counters.astype(np.uint64) + np.uint64(nblocks) > np.uint64(1 << 32)):
        raise ValueError("internal: block counter would wrap")
    lib.dpf_chacha20_streams(_u32(key_words, 8), _u32(nonces, 3 * n), _u32(counters, n), n,
                             nblocks, _u32(out, 16 * nblocks * n))


def chacha20_stream_head(key_words: np.ndarray, stream: int, nblocks: int,
                         out: np.ndarray) -> None:
    """The first ``nblocks`` blocks (counter 0) of stream id ``stream`` (< 2**64) into
    ``out`` (uint32): what :func:`chacha20_streams` writes for one stream from counter 0,
    with less per-call work (for small draws)."""
    if not (0 <= stream < 1 << 64 and 0 <= nblocks <= 1 << 32):
        raise ValueError("internal: stream id or block count out of range")
    nonce = ffi.new("uint32_t[3]", (stream & 0xFFFFFFFF, stream >> 32, 0))
    lib.dpf_chacha20_blocks(_u32(key_words, 8), nonce, 0, nblocks, _u32(out, 16 * nblocks))


def chacha20_keystream(key: bytes, nonce: bytes, counter: int, nbytes: int) -> bytes:
    """RFC 8439 keystream bytes (caller validated the arguments).

    The keystream is written straight into the returned ``bytes`` object: it is created
    here, nothing else holds a reference to it yet, and it has not been hashed, so
    filling it in place (as C extensions do with ``PyBytes_FromStringAndSize(NULL, n)``)
    saves the copy a ``bytearray`` would need.  Lengths 0 and 1 are shared singletons
    in CPython and are filled through a ``bytearray`` instead.
    """
    if nbytes < 2:
        small = bytearray(nbytes)
        if nbytes:
            lib.dpf_chacha20_keystream(key, nonce, counter, ffi.from_buffer(small), nbytes)
        return bytes(small)
    out = bytes(nbytes)
    lib.dpf_chacha20_keystream(key, nonce, counter,
                               ffi.from_buffer("uint8_t[]", out, require_writable=False),
                               nbytes)
    return out


def blake2b_keyed_many(key: bytes, tag: int, buf: np.ndarray, off: np.ndarray,
                       outlen: int, threads: int = 1) -> np.ndarray:
    """``out[i] = BLAKE2b(key, bytes([tag]) + buf[off[i]:off[i+1]], digest_size=outlen)``
    for every message (``out`` an ``(n, outlen)`` uint8 array), equal to hashlib's.

    ``buf`` the messages' bytes (C-contiguous uint8), ``off`` their ``n + 1`` int64
    offsets (nondecreasing, within ``buf``).  With ``threads > 1`` and many messages,
    contiguous parts run on that many threads (C releases the GIL); the digests do not
    depend on the split.
    """
    if not (1 <= len(key) <= 64 and 1 <= outlen <= 64 and 0 <= tag < 256):
        raise ValueError("internal: key, digest length or tag out of range")
    if (buf.dtype != np.uint8 or off.dtype != np.int64 or not buf.flags.c_contiguous
            or not off.flags.c_contiguous or off.ndim != 1 or off.shape[0] < 1):
        raise TypeError("internal: expected a C-contiguous uint8 buffer and int64 offsets")
    n = off.shape[0] - 1
    if n and (off[0] < 0 or off[-1] > buf.shape[0] or np.any(off[1:] < off[:-1])):
        raise ValueError("internal: message offsets out of range")
    out = np.empty((n, outlen), np.uint8)
    if not n:
        return out
    kb = bytes(key)
    data = ffi.cast("uint8_t *", ffi.from_buffer(buf if buf.shape[0] else np.zeros(1, np.uint8)))
    offp = ffi.cast("int64_t *", ffi.from_buffer(off))
    outp = ffi.cast("uint8_t *", ffi.from_buffer(out))

    def part(lo: int, hi: int) -> None:
        lib.dpf_blake2b_keyed_many(kb, len(kb), tag, data, offp + lo, hi - lo,
                                   outp + lo * outlen, outlen)

    parts = max(1, min(int(threads), n // _BLAKE2B_PART))
    if parts == 1:
        part(0, n)
        return out
    from concurrent.futures import ThreadPoolExecutor

    bounds = [n * j // parts for j in range(parts + 1)]
    with ThreadPoolExecutor(parts) as pool:  # per call: nothing survives a fork
        for f in [pool.submit(part, bounds[j], bounds[j + 1]) for j in range(parts)]:
            f.result()
    return out


def simd_level() -> int:
    """3 if the 16-lane AVX-512F keystream path runs on this CPU, 2 for 8-lane AVX2, 1
    portable (within the cap of the environment variable ``DPFAST_SIMD``, if set)."""
    return int(lib.dpf_chacha20_simd_level())


def table_simd() -> int:
    """2 if the envelope-table kernel's common case runs its four-word AVX2 loops and the
    wide loop's AVX-512VL build (``csrc/table_avx2.c``; not under ``DPFAST_SIMD=avx2``), 1
    for the AVX2 loops alone, 0 for its scalar loops (no AVX2, or
    ``DPFAST_SIMD=portable``).  Every level gives the same output."""
    return int(lib.dpf_table_simd())


class BitgenState:
    """C state of a numpy ``bitgen_t`` over ChaCha20 (keeps its cdata alive)."""

    def __init__(self, key_words: np.ndarray, nonce_words: np.ndarray) -> None:
        self._state = ffi.new("dpf_bitgen_state *")
        self._bitgen = ffi.new("dpf_bitgen_t *")
        self.rekey(key_words, nonce_words)
        lib.dpf_bitgen_init(self._bitgen, self._state)

    def rekey(self, key_words: np.ndarray, nonce_words: np.ndarray) -> None:
        """Move to a new key and stream; drops buffered words."""
        for i in range(8):
            self._state.key[i] = int(key_words[i])
        for i in range(3):
            self._state.nonce[i] = int(nonce_words[i])
        self._state.counter = 0
        self._state.stream_index = 0
        self._state.pos = 16 * 8

    @property
    def address(self) -> int:
        """Address of the ``bitgen_t`` struct (for a PyCapsule)."""
        return int(ffi.cast("uintptr_t", self._bitgen))

    @property
    def stream_index(self) -> int:
        return int(self._state.stream_index)

    def fill(self, out: np.ndarray) -> None:
        """Fill a C-contiguous uint64 array with the next words."""
        if out.dtype != np.uint64 or not out.flags.c_contiguous:
            raise TypeError("internal: expected a C-contiguous uint64 array")
        lib.dpf_bitgen_fill(self._state, ffi.cast("uint64_t *", ffi.from_buffer(out)), out.size)
