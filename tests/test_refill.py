"""Kernels' buffer refills through the C ChaCha20 (``st[ST_FILL]``): the same stream as
the numba copy and as ``dpfast.keystream``, extensions included."""

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


def _row(words_left: int, block: int, fill: bool) -> np.ndarray:
    row = np.zeros(ck.ST_COLS, np.int64)
    row[ck.ST_POS], row[ck.ST_BLOCK] = words_left, block
    row[ck.ST_FILL] = _native.blocks_address() if fill else 0
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
    got = _read(buf, _row(buf.shape[0], 0, True), key_words, nonce, n)
    want = np.frombuffer(dpfast.keystream(key, stream, 8 * n), "<u8")
    assert np.array_equal(got, want)


def test_c_refill_moves_to_the_extension_like_the_numba_copy() -> None:
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    out = []
    for fill in (False, True):
        nonce = _nonce(5)
        buf = np.empty(32, np.uint64)  # 4 blocks per refill
        row = _row(32, 2**32 - 6, fill)  # 6 blocks left: one refill, then the extension
        out.append((_read(buf, row, key_words, nonce, 100), int(nonce[2]), row.copy()))
    (a, na, ra), (b, nb_, rb) = out
    assert np.array_equal(a, b) and na == nb_ == 1
    assert np.array_equal(ra[:ck.ST_FILL], rb[:ck.ST_FILL])
    # words 32..63: block 0 of extension 1 (id 5 + 2^64), not the stream's last 2 blocks
    assert np.array_equal(a[32:64], np.frombuffer(dpfast.keystream(KEY, 5 + 2**64, 256), "<u8"))


def test_refills_benchmark_kernel_reads_the_stream() -> None:
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    accs = []
    for fill in (False, True):
        nonce = np.array([3, 0, 0], np.uint32)
        buf = np.empty(64, np.uint64)
        accs.append(int(ck.refills(buf, _row(64, 0, fill), key_words, nonce, 640)))
    ks = np.frombuffer(dpfast.keystream(KEY, 3, 8 * 640), "<u8")
    assert accs[0] == accs[1] == int(np.bitwise_xor.reduce(ks))


def test_addressed_chunks_refill_from_the_c_keystream(monkeypatch) -> None:
    """``dpfast.noise._addressed.run_chunks`` refills a dry buffer through the C ChaCha20
    (``st[ST_FILL]``), and the words are those of the numba copy and of a buffer large
    enough never to run dry: one-block pre-fills make every chunk refill many times."""
    from dpfast.noise import _addressed

    kw = _addressed.key_words(KEY)
    nch, cells = 3, 5000
    nonces = np.array([[c, 0, 9] for c in range(nch)], np.uint32)
    starts = np.arange(nch, dtype=np.int64) * cells
    ends = starts + cells
    seen: list[int] = []
    real_fill = _addressed._fill_address

    def spy() -> int:
        seen.append(real_fill())
        return seen[-1]

    def run(kind: int, t: Fraction) -> np.ndarray:
        out = np.zeros(nch * cells, np.int64)
        _addressed.run_chunks(kw, nonces, starts, ends, kind, t, out)
        return out

    for kind, t in ((0, Fraction(100)), (1, Fraction(20)), (0, Fraction(1, 2))):
        want = run(kind, t)  # default pre-fill: no chunk runs dry
        monkeypatch.setattr(_addressed, "_prefill_words", lambda longest, w: 8)
        monkeypatch.setattr(_addressed, "_fill_address", spy)
        got_c = run(kind, t)
        monkeypatch.setattr(_addressed, "_fill_address", lambda: 0)
        got_numba = run(kind, t)
        monkeypatch.undo()
        assert np.array_equal(got_c, want) and np.array_equal(got_numba, want)
    assert seen and all(a == _native.blocks_address() != 0 for a in seen)
