"""Kernels' buffer refills through the C ChaCha20 (called by its symbol name): the same
stream as the numba copy and as ``dpfast.keystream``, extensions included."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import dpfast
from dpfast import _native
from dpfast._kernels import chacha as ck

from .helpers import KEY


def _nonce(stream: int) -> np.ndarray:
    """The nonce words of stream id ``stream`` < 2^64 (extension 0)."""
    return np.array([stream & 0xFFFFFFFF, stream >> 32, 0], np.uint32)


def _row(words_left: int, block: int, cols: int = ck.ST_COLS) -> np.ndarray:
    row = np.zeros(cols, np.int64)
    row[ck.ST_POS], row[ck.ST_BLOCK] = words_left, block
    return row


def _read(buf: np.ndarray, row: np.ndarray, key_words: np.ndarray, nonce: np.ndarray,
          n: int) -> np.ndarray:
    words, pos = [], int(row[ck.ST_POS])
    for _ in range(n):
        x, pos = ck.next_u64(buf, pos, row, key_words, nonce)
        words.append(int(x))
    return np.array(words, np.uint64)


@given(key=st.binary(min_size=32, max_size=32), stream=st.integers(0, 2**64 - 1),
       blocks=st.integers(1, 40), n=st.integers(1, 700))
def test_c_refill_is_the_keystream(key: bytes, stream: int, blocks: int, n: int) -> None:
    key_words = np.frombuffer(key, "<u4").astype(np.uint32)
    nonce = _nonce(stream)
    buf = np.empty(8 * blocks, np.uint64)
    got = _read(buf, _row(buf.shape[0], 0), key_words, nonce, n)
    want = np.frombuffer(dpfast.keystream(key, stream, 8 * n), "<u8")
    assert np.array_equal(got, want)


def test_c_refill_moves_to_the_extension_like_the_numba_copy() -> None:
    """6 blocks left on the counter, 4 blocks per refill: one refill, then extension 1
    (id 5 + 2^64) from block 0 -- the words the numba copy computes for those blocks.  A
    three-column state row (the bounding kernels') refills the same way."""
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    for cols in (ck.ST_COLS, 3):
        nonce = _nonce(5)
        buf = np.empty(32, np.uint64)  # 4 blocks per refill
        row = _row(32, 2**32 - 6, cols)
        got = _read(buf, row, key_words, nonce, 100)
        assert int(nonce[2]) == 1 and row[ck.ST_BLOCK] == 12 and row[ck.ST_WRAP] == 0
        # words 0..31: the 4 blocks from 2^32 - 6; 32..99: extension 1 from block 0 (its
        # last 2 blocks are never used), as the numba copy computes them
        ref = np.empty(128, np.uint64)
        ck.chacha_words(key_words, _nonce(5), 2**32 - 6, ref[:32])
        ck.chacha_words(key_words, np.array([5, 0, 1], np.uint32), 0, ref[32:])
        assert np.array_equal(got, ref[:100])
        assert np.array_equal(got[32:64],
                              np.frombuffer(dpfast.keystream(KEY, 5 + 2**64, 256), "<u8"))


def test_refills_benchmark_kernel_reads_the_stream() -> None:
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    nonce = np.array([3, 0, 0], np.uint32)
    buf = np.empty(64, np.uint64)
    acc = int(ck.refills(buf, _row(64, 0), key_words, nonce, 640))
    ks = np.frombuffer(dpfast.keystream(KEY, 3, 8 * 640), "<u8")
    assert acc == int(np.bitwise_xor.reduce(ks))


def test_the_kernels_name_the_c_function_and_it_is_registered() -> None:
    """Refills call ``dpf_chacha20_blocks`` by name (no address in the cached code); the
    kernels package registered that name with LLVM at the C function's address."""
    from llvmlite import binding

    assert ck.C_BLOCKS_SYMBOL in _native.KERNEL_SYMBOLS
    assert binding.address_of_symbol(ck.C_BLOCKS_SYMBOL) == _native.blocks_address()


def test_addressed_chunks_refill_from_the_c_keystream(monkeypatch) -> None:
    """``dpfast.noise._addressed.run_chunks`` refills a dry buffer through the C ChaCha20,
    and the words are those of a buffer large enough never to run dry: one-block
    pre-fills make every chunk refill many times."""
    from dpfast.noise import _addressed

    kw = _addressed.key_words(KEY)
    nch, cells = 3, 5000
    nonces = np.array([[c, 0, 9] for c in range(nch)], np.uint32)
    starts = np.arange(nch, dtype=np.int64) * cells
    ends = starts + cells

    def run(kind: int, t: Fraction) -> np.ndarray:
        out = np.zeros(nch * cells, np.int64)
        _addressed.run_chunks(kw, nonces, starts, ends, kind, t, out)
        return out

    for kind, t in ((0, Fraction(100)), (1, Fraction(20)), (0, Fraction(1, 2))):
        want = run(kind, t)  # default pre-fill: no chunk runs dry
        monkeypatch.setattr(_addressed, "_prefill_words", lambda longest, w: 8)
        got = run(kind, t)
        monkeypatch.undo()
        assert np.array_equal(got, want)
