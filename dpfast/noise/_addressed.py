"""Addressed noise: exact discrete samplers on streams named by *what* they noise.

The ordinary drivers (:mod:`dpfast.noise._drive`) take fresh stream ids from the generator's
allocator, so a call's noise is a function of the key and of the call sequence.  Addressed
noise is a function of the key, an explicit *call id* and the address of the noised item
only -- a cell's flat index, a released key's canonical encoding -- never of the thread
count, of the order of the items, of which other items are noised with it, or of which
process computes it.  That is what lets a cluster publish bit for bit what one machine
publishes.

Streams
-------
Addressed streams never use the generator's key itself: each *domain* (per-key table
noise, cell blocks of an array call) has its own ChaCha20 key derived from the generator's
key, ``BLAKE2b(key=generator key, data=tag || call id (16 bytes LE), digest_size=32)``
(:func:`derive_key`), so they share no keystream with the allocator's streams, with the
bounding streams (their own tag) or with each other, by construction.  Under a derived key
the caller gives one 96-bit nonce per *chunk* (a run of consecutive cells noised one after
another; a chunk of one cell is a per-key stream).  A chunk draws its words from block
counters ``[0, 2**31)`` of its stream; the exact continuation of its undecided cells
(:mod:`dpfast.noise._exact`, probability about ``2**-40`` per cell) reads, in cell order, the
blocks from ``SLOW_COUNTER = 2**31`` on.  A chunk that reached ``2**31`` blocks (2**34
words: unreachable) raises instead of running into its continuation.  Distinct nonces
under one derived key therefore never share a keystream block.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import _native
from dpfast._kernels import chacha as _ck
from dpfast._kernels import samplers as _sk
from dpfast._kernels import table as _tk
from dpfast.noise import _drive, _envelope, _exact

__all__ = ["derive_key", "key_words", "run_chunks", "SLOW_COUNTER", "MAIN_BLOCKS"]

SLOW_COUNTER = 1 << 31  # first block of a chunk's exact continuation
MAIN_BLOCKS = SLOW_COUNTER  # blocks [0, 2**31) feed the kernels
_BATCH_WORDS = 1 << 21  # pre-filled keystream words per batch (16 MiB)


def derive_key(key: bytes, tag: bytes, call: int) -> bytes:
    """The 32-byte ChaCha20 key of one addressed domain and call id.

    ``BLAKE2b(key=key, data=tag || call.to_bytes(16, "little"), digest_size=32)``: a keyed
    PRF, so derived keys of distinct (tag, call) pairs are independent keys.
    """
    if not 0 <= call < 1 << 128:
        raise ValueError(f"call id must be in [0, 2**128), got {call}")
    return hashlib.blake2b(tag + call.to_bytes(16, "little"), key=key,
                           digest_size=32).digest()


def key_words(key: bytes) -> np.ndarray:
    """A 32-byte key as eight little-endian uint32 words."""
    return np.frombuffer(key, dtype="<u4").astype(np.uint32)


class _SlowWords:
    """Words of a chunk's stream from block ``SLOW_COUNTER`` on (its exact continuation)."""

    def __init__(self, kw: np.ndarray, nonce: np.ndarray) -> None:
        self._kw = kw
        self._nonce = np.array(nonce, np.uint32)
        self._word = 0

    def fetch(self, n: int) -> np.ndarray:
        b0, off = divmod(self._word, 8)
        nblocks = -(-(off + n) // 8)
        if b0 + nblocks > SLOW_COUNTER:  # 2**34 words of continuation: unreachable
            raise RuntimeError("an addressed chunk exhausted its continuation stream")
        tmp = np.empty(16 * nblocks, np.uint32)
        _native.chacha20_blocks(self._kw, self._nonce, SLOW_COUNTER + b0, nblocks, tmp)
        self._word += n
        return tmp.view("<u8")[off:off + n].copy()


class _Sampler:
    """The kernel and exact finisher of one law (the choice of :func:`_drive.run_discrete`:
    envelope table for a Gaussian or a Laplace scale >= ``_drive.TABLE_MIN_LAPLACE_SCALE``
    (1), geometric inversion for smaller Laplace scales)."""

    def __init__(self, kind: int, t: Fraction) -> None:
        # the samplers' range (what the public entry points refuse with a ValueError naming
        # their parameter, before any budget is charged): beyond it a table kernel would not
        # terminate in any useful time (a scale of 1e40) and int64 cannot hold the noise
        if not _drive.MIN_SCALE <= t <= _drive.MAX_SCALE:
            raise ValueError(f"noise scale {_drive.describe(t)} is outside the samplers' "
                             "range [2**-100, 2**50]")
        self.kind = kind
        self.t = t
        self.p = _drive.Param(np.array([float(t)]), t)
        if kind == 1 or t >= _drive.TABLE_MIN_LAPLACE_SCALE:
            self.tab: Any = _envelope.table("laplace" if kind == 0 else "gauss", t)
            self.words = float(self.tab.words)
        else:
            self.tab = None
            self.words = _drive._words_per_cell(kind, self.p)
            p2 = np.floor(self.p.values) + 1.0 if kind == 1 else self.p.values
            self.params = (self.p.values, p2, 0)

    def kernel(self, streams: tuple, io: tuple, force: int, pend: tuple) -> None:
        if self.tab is not None:
            _tk.run_table_kernel(self.tab.law_code, streams, io, self.tab.kernel_args, force, pend)
        else:
            _sk.run_discrete_kernel(self.kind, streams, io, self.params, force, pend)

    def finish(self, ex: _exact.Exact, ints: np.ndarray, u64s: np.ndarray) -> int:
        if self.tab is not None:
            return int(_envelope.finish_pending(ex, self.tab, ints, u64s))
        fin = _drive._finish_laplace if self.kind == 0 else _drive._finish_gaussian
        return int(fin(ex, int(ints[_sk.P_STATUS]), int(ints[_sk.P_SIGN]),
                       int(ints[_sk.P_A]), int(ints[_sk.P_B]), int(u64s[_sk.U_W]), self.t))


def _prefill_words(longest: int, words_per_cell: float) -> int:
    """Words pre-filled per chunk (in bulk, C ChaCha20): the expected use plus headroom.
    A chunk that runs dry refills from its own stream in the kernel, so the words it
    reads never depend on this size."""
    return -(-(int(longest * words_per_cell * 1.05) + (8 if longest == 1 else 256)) // 8) * 8


def _fill_address() -> int:
    """The C block function the kernels refill a dry buffer with (``st[:, ST_FILL]``, as
    in :mod:`dpfast.noise._chunks`); 0 would select the numba copy (same words)."""
    return _native.blocks_address()


def _batches(nch: int, words: int) -> Iterator[tuple[int, int]]:
    per = max(1, _BATCH_WORDS // words)
    for c0 in range(0, nch, per):
        yield c0, min(nch, c0 + per)


def run_chunks(kw: np.ndarray, nonces: np.ndarray, starts: np.ndarray, ends: np.ndarray,
               kind: int, t: Fraction, out: np.ndarray, x: np.ndarray | None = None, *,
               collect: list | None = None, check_main: bool = True) -> None:
    """Discrete Laplace (kind 0, scale ``t``) / Gaussian (kind 1, sigma ``t``) noise into
    ``out`` (int64, 1-D), added to ``x`` (int64, 1-D) when given.

    Chunk ``c`` noises cells ``starts[c] .. ends[c] - 1`` of ``out`` in order, on stream
    ``nonces[c]`` (three uint32 words) under the key words ``kw``.  Raises OverflowError
    when a noisy value does not fit int64 (``out`` may then be partly written).

    With ``collect`` (a list) undecided cells are not finished here: each is appended as
    ``(cell, chunk, index within the chunk, ints row, u64s row)`` and its ``out`` is left
    unwritten (the caller finishes them, e.g. in the order of :mod:`dpfast.noise._drive`).
    ``check_main=False`` lets chunks run past ``MAIN_BLOCKS`` (for chunks on allocator
    streams, whose continuation is elsewhere).
    """
    nch = nonces.shape[0]
    if nch == 0:
        return
    smp = _Sampler(kind, t)
    longest = int(np.max(ends - starts))
    words = _prefill_words(longest, smp.words)
    fill = _fill_address()
    force = _exact.forced_mode()
    cap = max(1, min(64 if not force else longest, longest))
    if collect is not None:
        cap = _drive.CHUNK if force else 64  # as the ordinary driver
    mode = _sk.MODE_WRITE if x is None else _sk.MODE_ADD
    io = (out if x is None else x, out, mode, _sk.NO_GRID)
    per_task = max(1, _drive.CHUNK // max(1, longest))  # chunks a thread takes at a time
    for c0, c1 in _batches(nch, words):
        nb_ = np.ascontiguousarray(nonces[c0:c1], dtype=np.uint32).copy()
        buf = _drive.fill_streams(kw, nb_, words)
        st = np.zeros((c1 - c0, _ck.ST_COLS), np.int64)
        st[:, _ck.ST_BLOCK] = words // 8
        st[:, _ck.ST_FILL] = fill
        st[:, _ck.ST_CELL] = starts[c0:c1]
        st[:, _ck.ST_END] = ends[c0:c1]
        pend = (np.empty((c1 - c0, cap, _sk.P_COLS), np.int64),
                np.empty((c1 - c0, cap, _sk.U_COLS), np.uint64))
        slow: dict[int, _exact.Exact] = {}
        done: dict[int, int] = {}
        while True:
            with _drive.threads_for(c1 - c0, per_task):
                smp.kernel((buf, st, kw, nb_), io, force, pend)
            if np.any(st[:, _ck.ST_WRAP]) or (check_main and (
                    np.any(st[:, _ck.ST_BLOCK] > MAIN_BLOCKS)
                    or np.any(nb_[:, 2] != nonces[c0:c1, 2]))):
                raise RuntimeError("an addressed chunk used 2**31 blocks; keystream is never "
                                   "reused")  # unreachable: 2**34 words for one chunk
            if st[:, _ck.ST_OVERFLOW].any():
                raise OverflowError(_drive._OVERFLOW)
            ints, u64s = pend
            if collect is not None:
                for c in np.flatnonzero(st[:, _ck.ST_PENDING]):
                    seen = done.get(int(c0 + c), 0)
                    for k in range(int(st[c, _ck.ST_PENDING])):
                        collect.append((int(ints[c, k, _sk.P_CELL]), int(c0 + c), seen + k,
                                        ints[c, k].copy(), u64s[c, k].copy()))
                    done[int(c0 + c)] = seen + int(st[c, _ck.ST_PENDING])
                st[:, _ck.ST_PENDING] = 0
                if np.all(st[:, _ck.ST_CELL] >= st[:, _ck.ST_END]):
                    break
                continue
            for c in np.flatnonzero(st[:, _ck.ST_PENDING]):
                ex = slow.get(int(c))
                if ex is None:
                    src = _SlowWords(kw, nonces[c0 + int(c)])
                    ex = slow[int(c)] = _exact.Exact(_exact.WordSource(src.fetch))
                for k in range(int(st[c, _ck.ST_PENDING])):
                    i = int(ints[c, k, _sk.P_CELL])
                    v = smp.finish(ex, ints[c, k], u64s[c, k])
                    if x is not None:
                        v += int(x[i])
                    if not -(1 << 63) <= v < 1 << 63:
                        raise OverflowError(_drive._OVERFLOW)
                    out[i] = v
            st[:, _ck.ST_PENDING] = 0
            if np.all(st[:, _ck.ST_CELL] >= st[:, _ck.ST_END]):
                break
