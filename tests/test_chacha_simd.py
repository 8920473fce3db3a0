"""Every compiled ChaCha20 block path (scalar, 8-lane, 16-lane; portable and SIMD) is
bit-identical to the RFC 8439 keystream.

The portable 16-lane clone is the same vector-extension source as the AVX-512F path, so it
is tested on every machine; the AVX2 / AVX-512F clones are tested where the CPU has them.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
from hypothesis import given
from hypothesis import strategies as st

from dpfast import _native


def reference(key: bytes, nonce_words: np.ndarray, counter: int, nblocks: int) -> np.ndarray:
    nonce = counter.to_bytes(4, "little") + nonce_words.astype("<u4").tobytes()
    enc = Cipher(algorithms.ChaCha20(key, nonce), mode=None).encryptor()
    return np.frombuffer(enc.update(bytes(64 * nblocks)), "<u4").astype(np.uint32)


@pytest.mark.parametrize("impl", sorted(_native.BLOCK_IMPLS))
@given(key=st.binary(min_size=32, max_size=32),
       nonce=st.lists(st.integers(0, 2**32 - 1), min_size=3, max_size=3),
       counter=st.integers(0, 2**32 - 70), nblocks=st.integers(0, 69))
def test_block_paths_match_rfc(impl: str, key: bytes, nonce: list[int], counter: int,
                               nblocks: int) -> None:
    kw = np.frombuffer(key, "<u4").astype(np.uint32)
    nw = np.array(nonce, np.uint32)
    out = np.empty(16 * nblocks, np.uint32)
    if not _native.chacha20_blocks_impl(impl, kw, nw, counter, nblocks, out):
        pytest.skip(f"this CPU cannot run the {impl} path")
    np.testing.assert_array_equal(out, reference(key, nw, counter, nblocks))


def test_portable_paths_always_run() -> None:
    kw = np.arange(8, dtype=np.uint32)
    nw = np.zeros(3, np.uint32)
    for impl in ("scalar", "portable8", "portable16"):
        assert _native.chacha20_blocks_impl(impl, kw, nw, 0, 16, np.empty(256, np.uint32))


def test_counter_end_of_stream() -> None:
    """The last blocks before the 32-bit counter limit, through every path."""
    key = bytes(range(32))
    kw = np.frombuffer(key, "<u4").astype(np.uint32)
    nw = np.array([1, 2, 3], np.uint32)
    counter, nblocks = 2**32 - 35, 35
    ref = reference(key, nw, counter, nblocks)
    for impl in _native.BLOCK_IMPLS:
        out = np.empty(16 * nblocks, np.uint32)
        if _native.chacha20_blocks_impl(impl, kw, nw, counter, nblocks, out):
            np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("nbytes", [0, 1, 2, 63, 64, 65, 64 * 256 - 1, 64 * 256,
                                    64 * 256 * 3 + 17])
def test_keystream_lengths(nbytes: int) -> None:
    key = bytes(range(1, 33))
    nonce_words = np.array([5, 6, 7], np.uint32)
    got = _native.chacha20_keystream(key, nonce_words.astype("<u4").tobytes(), 9, nbytes)
    assert isinstance(got, bytes) and len(got) == nbytes
    ref = reference(key, nonce_words, 9, (nbytes + 63) // 64).tobytes()[:nbytes]
    assert got == ref


def test_keystream_results_are_independent_objects() -> None:
    """The in-place fill never touches a shared bytes object."""
    key = bytes(32)
    a = _native.chacha20_keystream(key, bytes(12), 0, 128)
    b = _native.chacha20_keystream(key, bytes(12), 1, 128)
    assert a is not b and a != b and bytes(128) == b"\x00" * 128
    assert _native.chacha20_keystream(key, bytes(12), 0, 128) == a


@pytest.mark.parametrize(("cap", "level"), [("avx2", 2), ("portable", 1), ("avx512", 3)])
def test_simd_cap_environment_variable(cap: str, level: int) -> None:
    # DPFAST_SIMD caps the path (to measure the AVX2 path on an AVX-512 host); the
    # keystream is the same whatever the path
    import subprocess
    import sys

    code = ("from dpfast import _native, keystream; import hashlib; "
            "print(_native.simd_level(), hashlib.sha256(keystream(bytes(32), 0, 1 << 20))"
            ".hexdigest())")
    env = {**os.environ, "DPFAST_SIMD": cap}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    ref = subprocess.run([sys.executable, "-c", code], env={
        k: v for k, v in os.environ.items() if k != "DPFAST_SIMD"}, capture_output=True,
        text=True, check=True).stdout.split()
    assert int(out[0]) == min(level, _native.simd_level())
    assert out[1] == ref[1]


def test_unknown_simd_cap_warns() -> None:
    import subprocess
    import sys

    env = {**os.environ, "DPFAST_SIMD": "avx1024"}
    res = subprocess.run([sys.executable, "-W", "error", "-c", "import dpfast._native"],
                         env=env, capture_output=True, text=True)
    assert res.returncode != 0 and "DPFAST_SIMD='avx1024'" in res.stderr


def _streams_digest_code() -> str:
    return ("import hashlib, numpy as np; from dpfast import _native; "
            "g = np.random.default_rng(7); n = 53; "
            "kw = g.integers(0, 2**32, 8, dtype=np.uint64).astype(np.uint32); "
            "no = g.integers(0, 2**32, (n, 3), dtype=np.uint64).astype(np.uint32); "
            "ct = g.integers(0, 2**32 - 1, n, dtype=np.uint64).astype(np.uint32); "
            "out = np.empty((n, 16), np.uint32); "
            "_native.chacha20_streams(kw, no, ct, 1, out); "
            "print(hashlib.sha256(out.tobytes()).hexdigest())")


@given(key=st.binary(min_size=32, max_size=32), n=st.integers(0, 40), data=st.data())
def test_streams_one_block_each_match_rfc(key: bytes, n: int, data) -> None:
    """``dpf_chacha20_streams`` with one block per stream runs 16 streams per SIMD call,
    one lane each (the bounding kernels' per-id streams): every stream's block is the
    RFC block of its own nonce and counter, full groups of 16 and the tail alike."""
    kw = np.frombuffer(key, "<u4").astype(np.uint32)
    words = st.integers(0, 2**32 - 1)
    nonces = np.array([data.draw(st.lists(words, min_size=3, max_size=3)) for _ in range(n)],
                      np.uint32).reshape(n, 3)
    counters = np.array([data.draw(st.integers(0, 2**32 - 2)) for _ in range(n)], np.uint32)
    out = np.empty((n, 16), np.uint32)
    _native.chacha20_streams(kw, nonces, counters, 1, out)
    for i in range(n):
        np.testing.assert_array_equal(out[i], reference(key, nonces[i], int(counters[i]), 1))


def test_streams_portable_lanes_equal_the_simd_ones() -> None:
    """The portable 16-lane clone of the multi-stream path (``DPFAST_SIMD=portable``)
    writes the same blocks as the default path."""
    import subprocess
    import sys

    code = _streams_digest_code()
    base = {k: v for k, v in os.environ.items() if k != "DPFAST_SIMD"}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
            for env in (base, {**base, "DPFAST_SIMD": "portable"})]
    assert runs[0] == runs[1] and len(runs[0]) == 64


@pytest.mark.parametrize("impl", sorted(_native.BLOCK_IMPLS))
@pytest.mark.parametrize("nblocks", [7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 47, 48, 49, 63,
                                     64, 65, 95, 96, 100, 255, 256, 257])
def test_block_paths_every_group_boundary(impl: str, nblocks: int) -> None:
    """The 16-lane kernels run two sets of lane groups through the rounds together (32
    blocks per pass), then one group; the 8-lane kernels (the AVX2 one in inline assembly)
    one group of 8 per pass; then scalar blocks: block counts on each side of every
    boundary (and the refills' 256) give the RFC keystream."""
    key = bytes(range(7, 39))
    kw = np.frombuffer(key, "<u4").astype(np.uint32)
    nw = np.array([0xDEADBEEF, 1, 2**32 - 1], np.uint32)
    out = np.full(16 * nblocks + 16, 0xA5A5A5A5, np.uint32)
    if not _native.chacha20_blocks_impl(impl, kw, nw, 1000, nblocks, out[:16 * nblocks]):
        pytest.skip(f"this CPU cannot run the {impl} path")
    np.testing.assert_array_equal(out[:16 * nblocks], reference(key, nw, 1000, nblocks))
    assert np.all(out[16 * nblocks:] == 0xA5A5A5A5)  # nothing written past the end


@pytest.mark.parametrize("impl", sorted(_native.BLOCK_IMPLS))
@pytest.mark.parametrize("offset", [1, 3, 8])
def test_block_paths_unaligned_output(impl: str, offset: int) -> None:
    """The kernels keep their state in aligned scratch and store each block with unaligned
    stores: an output that starts 4, 12 or 32 bytes into a buffer (a refill buffer need
    only be 4-byte aligned) gets the RFC keystream, and the words around it are untouched."""
    key = bytes(range(40, 72))
    kw = np.frombuffer(key, "<u4").astype(np.uint32)
    nw = np.array([3, 2**31, 77], np.uint32)
    nblocks = 41
    buf = np.full(16 * nblocks + 2 * offset, 0x5A5A5A5A, np.uint32)
    out = buf[offset:offset + 16 * nblocks]
    if not _native.chacha20_blocks_impl(impl, kw, nw, 5, nblocks, out):
        pytest.skip(f"this CPU cannot run the {impl} path")
    np.testing.assert_array_equal(out, reference(key, nw, 5, nblocks))
    assert np.all(buf[:offset] == 0x5A5A5A5A) and np.all(buf[offset + 16 * nblocks:] == 0x5A5A5A5A)


def _cpu_flags() -> set[str] | None:
    """The CPU's feature flags as Linux reports them (None where it does not)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        return None
    return None


@pytest.mark.parametrize("cap", [None, "avx512", "avx2", "portable"])
def test_dispatch_picks_the_widest_path_the_cpu_supports(cap: str | None) -> None:
    """The run-time dispatch (``__builtin_cpu_supports``, no -march flags) uses AVX-512F
    only on a CPU that reports avx512f and AVX2 only on one that reports avx2 (an
    instruction the CPU lacks would kill the process), and the widest such path within
    the ``DPFAST_SIMD`` cap; the chosen path's kernel runs and gives the RFC keystream."""
    import platform
    import subprocess
    import sys

    flags = _cpu_flags()
    if flags is None or platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("needs an x86-64 CPU whose flags /proc/cpuinfo reports")
    best = 3 if "avx512f" in flags else 2 if "avx2" in flags else 1
    want = min(best, {None: 3, "avx512": 3, "avx2": 2, "portable": 1}[cap])
    env = {k: v for k, v in os.environ.items() if k != "DPFAST_SIMD"}
    if cap is not None:
        env["DPFAST_SIMD"] = cap
    code = ("import numpy as np; from dpfast import _native; "
            "lvl = _native.simd_level(); "
            "impl = {3: 'avx512', 2: 'avx2', 1: 'portable8'}[lvl]; "
            "kw = np.arange(8, dtype=np.uint32); nw = np.array([1, 2, 3], np.uint32); "
            "o = np.empty(16 * 40, np.uint32); d = np.empty(16 * 40, np.uint32); "
            "ok = _native.chacha20_blocks_impl(impl, kw, nw, 5, 40, o); "
            "_native.chacha20_blocks(kw, nw, 5, 40, d); "
            "print(lvl, ok, o.tobytes().hex() == d.tobytes().hex(), o[:4].tolist())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split(maxsplit=3)
    assert int(out[0]) == want
    assert out[1] == "True" and out[2] == "True"
    ref = reference(np.arange(8, dtype="<u4").tobytes(), np.array([1, 2, 3], np.uint32), 5, 1)
    assert out[3].strip() == str(ref[:4].tolist())
