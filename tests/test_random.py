"""ChaCha20 CSPRNG: RFC 8439 vectors, equality with `cryptography`, stream policy."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

import dpfast
from dpfast import random as dr
from dpfast._kernels import chacha as nchacha
from tests.helpers import SUBPROCESS_TIMEOUT_S

from .conftest import KEY


def h(s: str) -> bytes:
    return bytes.fromhex(s.replace(" ", "").replace("\n", ""))


def nonce_int(hexstr: str) -> int:
    return int.from_bytes(h(hexstr), "little")


def reference(key: bytes, stream: int, nbytes: int, counter: int) -> bytes:
    nonce = counter.to_bytes(4, "little") + stream.to_bytes(12, "little")
    enc = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
    return enc.update(bytes(nbytes))


# ------------------------------------------------------------------ RFC 8439 vectors
def test_rfc8439_2_3_2_block_function() -> None:
    out = dr.keystream(bytes(range(32)), nonce_int("000000090000004a00000000"), 64, 1)
    assert out == h(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")


def test_rfc8439_2_4_2_encryption() -> None:
    pt = (b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip "
          b"for the future, sunscreen would be it.")
    ks = dr.keystream(bytes(range(32)), nonce_int("000000000000004a00000000"), len(pt), 1)
    ct = bytes(a ^ b for a, b in zip(pt, ks))
    assert ct == h(
        "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
        "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
        "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
        "5af90bbf74a35be6b40b8eedf2785e42874d")


A1 = [  # RFC 8439 appendix A.1: (key, nonce, counter, block)
    (bytes(32), bytes(12), 0,
     "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
     "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"),
    (bytes(32), bytes(12), 1,
     "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
     "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"),
    (bytes(31) + b"\x01", bytes(12), 1,
     "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
     "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0"),
    (b"\x00\xff" + bytes(30), bytes(12), 2,
     "72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca"
     "13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096"),
    (bytes(32), bytes(11) + b"\x02", 0,
     "c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7"
     "8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d"),
]


@pytest.mark.parametrize("key,nonce,counter,block", A1)
def test_rfc8439_appendix_a1(key: bytes, nonce: bytes, counter: int, block: str) -> None:
    stream = int.from_bytes(nonce, "little")
    assert dr.keystream(key, stream, 64, counter) == h(block)
    assert reference(key, stream, 64, counter) == h(block)


# ------------------------------------------------------------------ implementations agree
@given(key=st.binary(min_size=32, max_size=32),
       stream=st.integers(0, 2**96 - 1),
       counter=st.integers(0, 2**32 - 1),
       nbytes=st.integers(0, 3000))
def test_keystream_matches_cryptography(key: bytes, stream: int, counter: int,
                                        nbytes: int) -> None:
    if counter + (nbytes + 63) // 64 > 2**32:
        with pytest.raises(ValueError, match="counter"):
            dr.keystream(key, stream, nbytes, counter)
        return
    assert dr.keystream(key, stream, nbytes, counter) == reference(key, stream, nbytes, counter)


@given(key=st.binary(min_size=32, max_size=32), stream=st.integers(0, 2**96 - 1),
       counter=st.integers(0, 2**32 - 64), nblocks=st.integers(1, 40))
def test_numba_keystream_matches_c(key: bytes, stream: int, counter: int, nblocks: int) -> None:
    key_words = np.frombuffer(key, "<u4").astype(np.uint32)
    nonce = dr._nonce_words([stream])[0]
    out = np.empty(8 * nblocks, np.uint64)
    nchacha.chacha_words(key_words, nonce, counter, out)
    assert out.astype("<u8").tobytes() == dr.keystream(key, stream, 64 * nblocks, counter)


def test_kernel_refill_continues_the_stream() -> None:
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    nonce = dr._nonce_words([7])[0]
    buf = np.zeros(16, np.uint64)
    st_ = np.array([16, 0, 0], np.int64)  # empty buffer, next block 0
    words = []
    pos = 16
    for _ in range(40):
        x, pos = nchacha.next_u64(buf, pos, st_, key_words, nonce)
        words.append(int(x))
    assert np.array(words, "<u8").tobytes() == dr.keystream(KEY, 7, 320)


def test_random_raw_is_stream_zero() -> None:
    g = dpfast.default_rng(KEY)
    a = g.random_raw(5)
    b = g.random_raw((2, 3))
    expect = np.frombuffer(dr.keystream(KEY, 0, 88), "<u8")
    assert np.array_equal(np.concatenate([a, b.ravel()]), expect)
    assert isinstance(g.random_raw(), int)


def test_random_raw_consecutive_across_odd_sizes() -> None:
    g = dpfast.default_rng(KEY)
    parts = [g.random_raw(n) for n in (3, 5, 8, 13, 1, 64, 7, 100, 0, 9)]
    words = np.concatenate(parts)
    assert np.array_equal(words, np.frombuffer(dr.keystream(KEY, 0, 8 * words.size), "<u8"))


def test_random_in_unit_interval() -> None:
    x = dpfast.default_rng(KEY).random(100_000)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert np.all(x * 2**53 == np.floor(x * 2**53))
    assert abs(x.mean() - 0.5) < 5 * np.sqrt(1 / 12 / x.size)


def test_reproducible_with_key_and_fresh_without() -> None:
    # with a key the output is a function of the keystream: integers over the full
    # 64-bit range are exactly the words of the first allocated stream (id 1)
    full = dpfast.default_rng(KEY).integers(0, 2**64, 50, dtype=np.uint64)
    assert np.array_equal(full, np.frombuffer(dr.keystream(KEY, 1, 400), "<u8"))
    assert dpfast.default_rng().random_raw() != dpfast.default_rng().random_raw()


# ------------------------------------------------------------------ integers
@pytest.mark.parametrize("span", [2, 3, 7, 1000, 2**32 + 1, 2**63 + 1, 2**64 - 1])
def test_integers_uniform_chi_square(span: int) -> None:
    g = dpfast.default_rng(KEY)
    n = 1_000_000
    dtype = np.uint64 if span > 2**63 else np.int64
    x = g.integers(0, span, n, dtype=dtype)
    bins = min(span, 64)
    # bucket b holds [ceil(b*span/bins), ceil((b+1)*span/bins)): exact expected counts
    edges = [-(-b * span // bins) for b in range(bins + 1)]
    probs = np.array([(edges[b + 1] - edges[b]) / span for b in range(bins)])
    idx = np.searchsorted(np.array(edges[1:], dtype=np.float64), x.astype(np.float64),
                          side="right") if span > 2**53 else (
        np.searchsorted(np.array(edges[1:]), x, side="right"))
    counts = np.bincount(idx, minlength=bins)
    p = stats.chisquare(counts, probs * n).pvalue
    assert p > 1e-4, (span, p)
    assert x.min() >= 0 and int(x.max()) < span


def test_integers_low_bits_uniform_on_huge_span() -> None:
    # For span = 2**63 + 1 every residue class must be hit: x mod 8 is uniform up to
    # 2**-60.  The common float shortcut floor(random() * span) fails the same test (its
    # 53-bit doubles make every output a multiple of 2**10), so the test has power.
    n = 1_000_000
    span = 2**63 + 1
    x = dpfast.default_rng(KEY).integers(0, span, n, dtype=np.uint64)
    counts = np.bincount((x % np.uint64(8)).astype(np.int64), minlength=8)
    assert stats.chisquare(counts).pvalue > 1e-4
    naive = np.floor(dpfast.default_rng(KEY).random(n) * float(span)).astype(np.uint64)
    naive_counts = np.bincount((naive % np.uint64(8)).astype(np.int64), minlength=8)
    assert stats.chisquare(naive_counts).pvalue < 1e-12


def test_integers_default_dtype_follows_the_range() -> None:
    g = dpfast.default_rng(KEY)
    assert g.integers(0, 7, 3).dtype == np.int64
    assert g.integers(0, 2**63 + 1, 3).dtype == np.uint64
    wide = g.integers(-1, 2**63 + 1, 1000)
    assert wide.dtype == object and min(wide) >= -1 and max(wide) <= 2**63
    assert isinstance(g.integers(2**64), int)


def test_integers_bounds_and_negative_low() -> None:
    g = dpfast.default_rng(KEY)
    x = g.integers(-3, 4, 70_000)
    assert set(np.unique(x)) == set(range(-3, 4))
    full = g.integers(-(2**63), 2**63, 1000)
    assert full.dtype == np.int64
    assert isinstance(g.integers(5), int)
    y = g.integers(0, 2**64, 1000, dtype=np.uint64)
    assert y.dtype == np.uint64


@pytest.mark.parametrize("call,match", [
    (lambda g: g.integers(5, 5), "low"),
    (lambda g: g.integers(0, 10, -1), "size"),
    (lambda g: g.integers(0, 2**65), "high"),
    (lambda g: g.integers(0, 300, dtype=np.uint8), "dtype"),
    (lambda g: g.integers(0.5, 3), "low"),
    (lambda g: g.random_raw(-2), "size"),
    (lambda g: g.spawn(-1), "n"),
])
def test_bad_arguments(call, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        call(dpfast.default_rng(KEY))


@pytest.mark.parametrize("args,match", [
    ((b"short", 0, 10), "key"),
    (("x" * 32, 0, 10), "key"),
    ((KEY, -1, 10), "stream"),
    ((KEY, 2**96, 10), "stream"),
    ((KEY, 0, -1), "nbytes"),
    ((KEY, 0, 10, -1), "counter"),
    ((KEY, 0, 10, 2**32), "counter"),
    ((KEY, 0, 65, 2**32 - 1), "counter"),
])
def test_keystream_bad_arguments(args, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        dr.keystream(*args)


def test_default_rng_bad_key() -> None:
    with pytest.raises(ValueError, match="key"):
        dpfast.default_rng(b"\x00" * 31)
    with pytest.raises(TypeError, match="key"):
        dpfast.default_rng("0" * 32)


# ------------------------------------------------------------------ streams never overlap
def test_spawn_streams_distinct() -> None:
    g = dpfast.default_rng(KEY)
    kids = g.spawn(4)
    grandkids = kids[0].spawn(2)
    ids = [g.stream] + [k.stream for k in kids + grandkids]
    assert len(set(ids)) == len(ids)
    draws = [x.random_raw(64).tobytes() for x in [g, *kids, *grandkids]]
    assert len(set(draws)) == len(draws)


def test_counter_exhaustion_moves_to_fresh_stream() -> None:
    g = dpfast.default_rng(KEY)
    g._pos = dr._WORDS_PER_STREAM - 3  # three words left in stream 0
    tail = g.random_raw(5)
    assert g.stream != 0
    last3 = np.frombuffer(dr.keystream(KEY, 0, 64, 2**32 - 1), "<u8")[5:]
    assert np.array_equal(tail[:3], last3)
    fresh = np.frombuffer(dr.keystream(KEY, g.stream, 16), "<u8")
    assert np.array_equal(tail[3:], fresh)


def test_threads_get_disjoint_words() -> None:
    g = dpfast.default_rng(KEY)
    results: list[np.ndarray] = []
    lock = threading.Lock()

    def work() -> None:
        mine = [g.random_raw(1 + i % 50) for i in range(300)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    allw = np.concatenate(results)
    assert len(np.unique(allw)) == allw.size
    # together they are exactly a prefix of stream 0
    expect = np.frombuffer(dr.keystream(KEY, 0, 8 * allw.size), "<u8")
    assert np.array_equal(np.sort(allw), np.sort(expect))


def _child_draw(conn) -> None:  # runs in a forked child
    default = dr._default_generator().random_raw(1 << 17).tobytes()
    keyed = _KEYED.random_raw(1 << 17).tobytes()
    conn.send_bytes(default + keyed)
    conn.close()


_KEYED = dpfast.default_rng(KEY)


def test_fork_children_never_repeat_parent() -> None:
    ctx = multiprocessing.get_context("fork")
    dr._default_generator().random_raw(10)  # make sure the default exists before forking
    chunks = []
    procs = []
    for _ in range(4):
        parent_conn, child_conn = ctx.Pipe()
        p = ctx.Process(target=_child_draw, args=(child_conn,))
        p.start()
        procs.append((p, parent_conn))
    for p, conn in procs:
        chunks.append(conn.recv_bytes())
        p.join(SUBPROCESS_TIMEOUT_S)
        assert p.exitcode == 0
    chunks.append(dr._default_generator().random_raw(1 << 17).tobytes()
                  + _KEYED.random_raw(1 << 17).tobytes())
    blocks = [c[i:i + 16] for c in chunks for i in range(0, len(c), 16)]
    assert len(blocks) == 5 * 2 * (1 << 20) // 16
    assert len(set(blocks)) == len(blocks)


# ------------------------------------------------------------------ numpy interop
def test_numpy_bit_generator() -> None:
    bg = dpfast.ChaCha20(KEY)
    assert isinstance(bg, np.random.BitGenerator)
    gen = np.random.Generator(bg)
    x = gen.random(1000)
    assert x.min() >= 0 and x.max() < 1
    raw = dpfast.ChaCha20(KEY).random_raw(16)
    # stream 1 (the first id the bit generator reserves), consecutive words
    assert raw.tobytes() == dr.keystream(KEY, 1, 128)
    assert np.random.Generator(dpfast.ChaCha20()).integers(0, 10, 5).shape == (5,)


def test_numpy_bit_generator_moves_to_its_own_extension_stream() -> None:
    """Hardening item 7: at the end of its block counter the bit generator moves to
    the extension stream id + 2**64 of its own id (which no allocator hands out), never
    to the next id (which belongs to somebody else)."""
    bg = dpfast.ChaCha20(KEY)
    bg._state._state.counter = 2**32 - 8  # last refill of the first stream
    words = bg.random_raw(64 + 16)
    first = np.frombuffer(dr.keystream(KEY, 1, 512, 2**32 - 8), "<u8")
    second = np.frombuffer(dr.keystream(KEY, 1 + 2**64, 128), "<u8")
    assert np.array_equal(words, np.concatenate([first, second]))
    assert bg.state["stream"] == 1 + 2**64
    bg._state._state.counter = 2**32 - 8
    bg._state._state.stream_index = 7
    bg._state._state.nonce[2] = 7
    bg.random_raw(200)  # past the last 8 blocks of extension 7
    assert bg.state["stream"] == 1 + 8 * 2**64  # stays on id 1's extensions


@pytest.mark.parametrize("counter", [0, 2**32 - 8 * 4])
def test_numpy_bit_generator_bulk_fill_is_word_by_word(counter: int) -> None:
    """``random_raw`` of many words writes whole refills straight from the block function
    (many refills a call): the words, the state after, the 32-bit word a 64-bit draw
    skips at the end of a refill, and the move to the extension stream at the end of the
    block counter are those of one-word draws."""
    bulk, single = dpfast.ChaCha20(KEY), dpfast.ChaCha20(KEY)
    for bg in (bulk, single):
        bg._state._state.counter = counter
    # odd 32-bit draws leave a 32-bit word at the end of the first refill
    a = np.random.Generator(bulk).integers(0, 2**32, 7, dtype=np.uint32)
    b = np.random.Generator(single).integers(0, 2**32, 7, dtype=np.uint32)
    assert np.array_equal(a, b)
    for n in (3, 64 * 5 + 7, 1, 64 * 2, 64 * 9 + 63):
        got = bulk.random_raw(n)
        want = np.array([single.random_raw() for _ in range(n)], np.uint64)
        assert np.array_equal(got, want)
        assert bulk.state == single.state
    assert bulk.state["stream"] == (1 if counter == 0 else 1 + 2**64)


def test_numba_refill_moves_to_extension_stream_instead_of_wrapping() -> None:
    """Hardening item 7: a chunk that uses up its 2**32 blocks continues on its
    extension stream (never on block 0 of the same stream, which it already used)."""
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    nonce = dr._nonce_words([5])[0].copy()
    buf = np.zeros(16, np.uint64)
    st_ = np.zeros(9, np.int64)
    st_[0], st_[1] = 16, 2**32 - 1  # empty buffer, one block left in the stream
    words = []
    pos = 16
    for _ in range(24):
        x, pos = nchacha.next_u64(buf, pos, st_, key_words, nonce)
        words.append(int(x))
    assert st_[2] == 0
    # the last block of stream 5 would need 2 blocks: skipped, extension 1 from block 0
    assert np.array_equal(np.array(words[:16], "<u8"),
                          np.frombuffer(dr.keystream(KEY, 5 + 2**64, 128), "<u8"))
    assert int(nonce[2]) == 1


def test_word_stream_crosses_into_extension() -> None:
    from dpfast.random import _streams

    src = _streams.KeyedStreams(KEY)
    ws = _streams.WordStream(src, stream=9)
    ws.word = 8 * (2**32 - 1) + 5  # 3 words left in stream 9
    got = ws.fetch(7)
    tail = np.frombuffer(dr.keystream(KEY, 9, 64, 2**32 - 1), "<u8")[5:]
    ext = np.frombuffer(dr.keystream(KEY, 9 + 2**64, 32), "<u8")
    assert np.array_equal(got, np.concatenate([tail, ext]))


def test_allocators_stay_below_the_extension_range() -> None:
    g = dpfast.default_rng(KEY)
    g.streams.next_stream = 2**64 - 2
    assert g.streams.allocate(2) == 2**64 - 2
    with pytest.raises(RuntimeError, match="exhausted"):
        g.streams.allocate(1)


# ------------------------------------------------------------------ fork safety (item 4)


def _fork_safe_layer() -> bool:
    import numba

    return numba.threading_layer() in ("tbb", "workqueue")


def _noise_a_million(q) -> None:
    try:
        y = dpfast.discrete_laplace(np.zeros(1_000_000, np.int64), 3.0)
        z = dpfast.discrete_gaussian(np.zeros(1_000_000, np.int64), 50.0)
        q.put(("ok", float(y.std()), float(z.std())))
    except RuntimeError as e:
        q.put(("refused", str(e), 0.0))


def _parent_noise() -> None:
    dpfast.discrete_laplace(np.zeros(1_000_000, np.int64), 3.0)  # pools and threads up
    dpfast.discrete_gaussian(np.zeros(1_000_000, np.int64), 50.0)
    dpfast.laplace(np.zeros(300_000), 1.0)


def test_os_fork_child_noises_after_parent() -> None:
    """Hardening item 4: parent noises (keystream pool and numba threads started),
    forks; the child noises 10^6 cells and exits 0 (no timing asserted: only a hang guard)."""
    import os
    import time

    _parent_noise()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(r)
            y = dpfast.discrete_laplace(np.zeros(1_000_000, np.int64), 3.0)
            os.write(w, b"ok" if y.std() > 1 else b"bad")
            code = 0
        except RuntimeError as e:
            os.write(w, b"refused:" + str(e).encode())
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S  # a hang guard, not a timing
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("forked child hung")
    msg = os.read(r, 1000)
    os.close(r)
    if _fork_safe_layer():
        assert os.waitstatus_to_exitcode(status) == 0 and msg == b"ok", msg
    else:  # GNU OpenMP: a clear refusal, not a hang or a kill
        assert os.waitstatus_to_exitcode(status) == 3 and msg.startswith(b"refused:")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_child_noises(method: str) -> None:
    _parent_noise()
    ctx = multiprocessing.get_context(method)
    q = ctx.Queue()
    p = ctx.Process(target=_noise_a_million, args=(q,))
    p.start()
    p.join(SUBPROCESS_TIMEOUT_S)
    if p.is_alive():
        p.kill()
        raise AssertionError(f"{method} child hung")
    status, a, b = q.get(timeout=SUBPROCESS_TIMEOUT_S)
    if method == "spawn" or _fork_safe_layer():
        assert p.exitcode == 0 and status == "ok" and a > 1 and b > 10
    else:
        assert status == "refused" and "tbb" in a
