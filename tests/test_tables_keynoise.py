"""Per-key addressed noise of the release tables (issue 12): the noise of a key is a function
of (key, the release's stream id, the key's canonical encoding) only."""

from __future__ import annotations

import numpy as np
import pytest

import dpfast
import dpfast.tables as dpt
from dpfast.noise import _addressed, _exact
from dpfast.tables import _keys, keynoise
from dpfast.tables.release import NoiseLaw

from .helpers import KEY


def _replay() -> dpfast.Generator:
    """A generator rebuilt from the fixed key: replays a release (a raw key never does)."""
    return dpfast.default_rng(KEY)


def _noise_of(rel: dpt.TableRelease, truth: dict) -> dict:
    return {k: int(v) - truth.get(k, 0) for k, v in zip(rel.keys.tolist(), rel.values)}


def test_domain_noise_is_per_key_for_subsets_supersets_and_row_order() -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 50, 400)
    big = np.arange(-20, 80)
    small = np.array([3, 17, 49, 60, -5])
    truth = dict(zip(*np.unique(keys, return_counts=True)))
    truth = {int(k): int(v) for k, v in truth.items()}
    a = _noise_of(dpt.count(keys, epsilon=1.0, domain=big, rng=_replay()), truth)
    b = _noise_of(dpt.count(keys[::-1], epsilon=1.0, domain=small, rng=_replay()), truth)
    perm = rng.permutation(len(keys))
    c = _noise_of(dpt.count(keys[perm], epsilon=1.0, domain=small[::-1], rng=_replay()), truth)
    assert b == c
    assert all(a[k] == b[k] for k in small.tolist())
    assert len(set(a.values())) > 5  # real noise


def test_selection_noise_is_per_key() -> None:
    rng = np.random.default_rng(2)
    ids = np.arange(3000)
    keys = rng.integers(0, 5, 3000)
    extra_keys = np.concatenate([keys, np.full(500, 9)])
    extra_ids = np.concatenate([ids, np.arange(3000, 3500)])
    r1 = dpt.count(keys, ids, epsilon=1.0, delta=1e-6, rng=_replay())
    r2 = dpt.count(extra_keys, extra_ids, epsilon=1.0, delta=1e-6, rng=_replay())
    d1 = dict(zip(r1.keys.tolist(), r1.values.tolist()))
    d2 = dict(zip(r2.keys.tolist(), r2.values.tolist()))
    assert 9 in d2 and 9 not in d1
    assert all(d1[k] == d2[k] for k in d1)


def test_sum_and_mean_per_key_string_keys_and_multicolumn() -> None:
    rng = np.random.default_rng(3)
    n = 600
    k1 = rng.choice(np.array(["a", "b", "é", "dd"]), n)
    k2 = rng.integers(0, 3, n)
    v = rng.integers(-5, 10, n)
    ids = rng.integers(0, 200, n)
    dom = (np.array(["a", "b", "é", "dd", "zz"]).repeat(3), np.tile(np.arange(3), 5))
    p = rng.permutation(n)
    sub = (dom[0][:6], dom[1][:6])
    # with privacy ids: the full domain, any row order
    s1 = dpt.sum(v, (k1, k2), ids, bounds=(-5, 10), epsilon=1.0, domain=dom, rng=_replay(),
                 max_partitions=2)
    s2 = dpt.sum(v[p], (k1[p], k2[p]), ids[p], bounds=(-5, 10), epsilon=1.0, domain=dom,
                 rng=_replay(), max_partitions=2)
    np.testing.assert_array_equal(s1.values, s2.values)
    # one row per person (bounding keeps everything): a subset of the domain
    s1 = dpt.sum(v, (k1, k2), bounds=(-5, 10), epsilon=1.0, domain=dom, rng=_replay())
    s2 = dpt.sum(v[p], (k1[p], k2[p]), bounds=(-5, 10), epsilon=1.0, domain=sub, rng=_replay())
    np.testing.assert_array_equal(s1.values[:6], s2.values)
    m1 = dpt.mean(v, (k1, k2), bounds=(-5, 10), epsilon=1.0, domain=dom, rng=_replay())
    m2 = dpt.mean(v[p], (k1[p], k2[p]), bounds=(-5, 10), epsilon=1.0, domain=sub, rng=_replay())
    np.testing.assert_array_equal(m1.values[:6], m2.values)
    f1 = dpt.sum(v.astype(float) / 4, k2, bounds=(-2.0, 2.5), epsilon=1.0,
                 domain=np.arange(4), rng=_replay())
    f2 = dpt.sum(v[p].astype(float) / 4, k2[p], bounds=(-2.0, 2.5), epsilon=1.0,
                 domain=np.array([2, 1]), rng=_replay())
    np.testing.assert_array_equal(f1.values[[2, 1]], f2.values)


def test_release_stream_separates_releases_and_replays() -> None:
    keys = np.zeros(10, np.int64)
    gen = dpfast.default_rng(KEY)
    a = dpt.count(keys, epsilon=1.0, domain=np.arange(30), rng=gen)
    b = dpt.count(keys, epsilon=1.0, domain=np.arange(30), rng=gen)
    assert not np.array_equal(a.values, b.values)  # second release: next stream id
    gen2 = dpfast.default_rng(KEY)
    a2 = dpt.count(keys, epsilon=1.0, domain=np.arange(30), rng=gen2)
    b2 = dpt.count(keys, epsilon=1.0, domain=np.arange(30), rng=gen2)
    np.testing.assert_array_equal(a.values, a2.values)
    np.testing.assert_array_equal(b.values, b2.values)


def test_exact_continuation_is_addressed_too() -> None:
    """Cells forced through the exact continuation read their key's own continuation
    blocks, so the result still depends on nothing but the key."""
    rkey = keynoise.release_key(KEY, 5)
    law = NoiseLaw("discrete_laplace", 0.7)  # scale < 1: the geometric kernel
    uniq = np.arange(40)
    with _exact.force_exact(1):
        whole = keynoise.noise_keys(law, np.zeros(40, np.int64), rkey, uniq, 0)
        part = keynoise.noise_keys(law, np.zeros(7, np.int64), rkey, uniq[[30, 2, 11, 5, 0,
                                                                           39, 20]], 0)
    np.testing.assert_array_equal(whole[[30, 2, 11, 5, 0, 39, 20]], part)
    plain = keynoise.noise_keys(law, np.zeros(40, np.int64), rkey, uniq, 0)
    assert not np.array_equal(plain, whole)  # the continuation really ran
    for law2 in (NoiseLaw("discrete_gaussian", 2.5), NoiseLaw("discrete_laplace", 100.0)):
        with _exact.force_exact(1 if law2.kind == "discrete_laplace" else 3):
            w = keynoise.noise_keys(law2, np.zeros(40, np.int64), rkey, uniq, 1)
            p = keynoise.noise_keys(law2, np.zeros(3, np.int64), rkey, uniq[[9, 1, 33]], 1)
        np.testing.assert_array_equal(w[[9, 1, 33]], p)


def test_no_two_keys_share_a_keystream_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every (key, nonce, block counter) that feeds a release's noise is used once."""
    used: list[tuple[bytes, tuple[int, int, int], int]] = []
    real_fill = _addressed._drive.fill_streams
    real_blocks = _addressed._native.chacha20_blocks

    def fill(kw: np.ndarray, nonces: np.ndarray, words: int) -> np.ndarray:
        for row in nonces.tolist():
            used.extend((kw.tobytes(), tuple(row), b) for b in range(words // 8))
        return real_fill(kw, nonces, words)

    def blocks(kw: np.ndarray, nonce: np.ndarray, counter: int, nblocks: int,
               out: np.ndarray) -> None:
        used.extend((kw.tobytes(), tuple(nonce.tolist()), counter + b) for b in range(nblocks))
        real_blocks(kw, nonce, counter, nblocks, out)

    monkeypatch.setattr(_addressed._drive, "fill_streams", fill)
    monkeypatch.setattr(_addressed._native, "chacha20_blocks", blocks)
    # the geometric kernel at these scales, so that force mode 1 sends cells to the
    # continuation (the envelope table decides most forced cells from the bits it has)
    monkeypatch.setattr(_addressed._drive, "TABLE_MIN_LAPLACE_SCALE", 32)
    keys = np.array(["x", "y", "z", "w"] * 50)
    ids = np.arange(200)
    vals = np.arange(200) % 7
    gen = dpfast.default_rng(KEY)  # two releases of one generator
    with _exact.force_exact(1):  # the continuation blocks are recorded too
        dpt.sum(vals, keys, ids, bounds=(0, 6), epsilon=1.0, delta=1e-3, rng=gen)
        dpt.sum(vals, keys, ids, bounds=(0, 6), epsilon=1.0, delta=1e-3, rng=gen)
    assert len(used) > 16
    assert len(set(used)) == len(used)
    gk = np.frombuffer(KEY, "<u4").astype(np.uint32).tobytes()
    assert all(k != gk for k, _, _ in used)  # never the generator's own key
    main = [c for _, _, c in used if c < _addressed.SLOW_COUNTER]
    assert main and max(main) < _addressed.MAIN_BLOCKS
    assert any(c >= _addressed.SLOW_COUNTER for _, _, c in used)  # continuation ran


def test_nonces_distinct_and_injective_encoding() -> None:
    rkey = keynoise.release_key(KEY, 1)
    uniq = (np.array([1, 1, 12, 1]), np.array(["2", "12", "", "2x"]))
    n0 = keynoise.key_nonces(rkey, uniq, 0)
    n1 = keynoise.key_nonces(rkey, uniq, 1)
    rows = {tuple(r) for r in np.concatenate([n0, n1]).tolist()}
    assert len(rows) == 8
    assert len(set(_keys.canonical_encoding(uniq))) == 4
    assert keynoise.release_key(KEY, 1) != keynoise.release_key(KEY, 2)
    assert _addressed.derive_key(KEY, b"a", 1) != _addressed.derive_key(KEY, b"b", 1)
    with pytest.raises(ValueError, match="call id"):
        _addressed.derive_key(KEY, b"a", -1)


def test_per_key_noise_law() -> None:
    """The per-key sampler is the exact discrete Laplace: compare the frequencies of 0 and
    |1| over many keys to the exact probabilities."""
    t = 2.0
    n = 40000
    rkey = keynoise.release_key(KEY, 7)
    z = keynoise.noise_keys(NoiseLaw("discrete_laplace", 2.0), np.zeros(n, np.int64),
                            rkey, np.arange(n), 0)
    a = float(np.exp(-1.0 / t))
    p0 = (1 - a) / (1 + a)
    p1 = 2 * p0 * a
    for obs, p in ((np.mean(z == 0), p0), (np.mean(np.abs(z) == 1), p1)):
        assert abs(obs - p) < 5 * np.sqrt(p * (1 - p) / n)
    assert abs(np.mean(z)) < 5 * np.sqrt(2 * a / (1 - a) ** 2 / n)


def test_c_blake2b_equals_hashlib_at_every_block_boundary() -> None:
    """The C keyed BLAKE2b (dpfast._native) equals hashlib for messages of 0..300 bytes
    and around the 128-byte block edges (the tag byte makes 127 a full block), for key
    lengths 1/32/64 and digest sizes 1..64; split over threads, the same digests."""
    import hashlib

    from dpfast import _native

    rng = np.random.default_rng(9)
    lens = list(range(0, 300)) + [383, 384, 385, 511, 512, 1000]
    msgs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lens]
    buf = np.frombuffer(b"".join(msgs), np.uint8).copy()
    off = np.zeros(len(msgs) + 1, np.int64)
    off[1:] = np.cumsum([len(m) for m in msgs])
    for key in (b"k", bytes(range(32)), bytes(range(64))):
        for outlen in (1, 8, 12, 32, 64):
            got = _native.blake2b_keyed_many(key, 7, buf, off, outlen)
            want = [hashlib.blake2b(b"\x07" + m, key=key, digest_size=outlen).digest()
                    for m in msgs]
            assert [r.tobytes() for r in got] == want, (len(key), outlen)
    many = rng.integers(0, 256, (3 * (1 << 15) + 5, 9), dtype=np.uint8)
    moff = np.arange(0, many.size + 1, 9, dtype=np.int64)
    one = _native.blake2b_keyed_many(KEY, 1, many.reshape(-1), moff, 12)
    three = _native.blake2b_keyed_many(KEY, 1, many.reshape(-1), moff, 12, threads=3)
    np.testing.assert_array_equal(one, three)
    for i in (0, 1 << 15, len(many) - 1):
        assert one[i].tobytes() == hashlib.blake2b(b"\x01" + many[i].tobytes(), key=KEY,
                                                   digest_size=12).digest()
    with pytest.raises(ValueError, match="internal"):
        _native.blake2b_keyed_many(bytes(65), 0, buf, off, 12)


def test_vectorised_nonces_equal_hashlib() -> None:
    """The C keyed BLAKE2b and the flat encoding equal hashlib over the canonical encoding."""
    import hashlib

    rng = np.random.default_rng(4)
    cases = [np.array([0, -1, 2**62, -(2**63), 5]), np.array([2**64 - 1, 0], np.uint64),
             np.array([0.0, 1.5, -2e300]), np.array(["", "a", "é" * 70, "x" * 300]),
             np.array([b"", b"\x00" * 129, b"ab"], dtype=object),
             (np.array([1, -2, 3]), np.array(["u", "", "vw"]), np.array([0.5, 1.0, -3.0])),
             rng.integers(-10**12, 10**12, 500)]
    for rkey in (keynoise.release_key(KEY, 3), bytes(32)):
        for uniq in cases:
            for part in (0, 1):
                got = keynoise.key_nonces(rkey, uniq, part)
                ref = [hashlib.blake2b(bytes([part]) + e, key=rkey, digest_size=12).digest()
                       for e in _keys.canonical_encoding(uniq)]
                want = np.frombuffer(b"".join(ref), "<u4").reshape(-1, 3)
                np.testing.assert_array_equal(got, want)
