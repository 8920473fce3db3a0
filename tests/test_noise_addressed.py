"""Cell-addressed noise (issue 12): the noise of a cell is a function of (key, stream id,
flat index) only -- whole array, slices with offsets, 1 or N threads give the same bits."""

from __future__ import annotations

import re

import numba
import numpy as np
import pytest

import dpfast
from dpfast.noise import _addressed, _drive, _exact
from dpfast.noise import addressed as A
from dpfast.tables import keynoise

from .helpers import KEY

N = 3 * _drive.CHUNK + 1234


def test_slices_with_offsets_reproduce_the_whole() -> None:
    x = np.arange(N, dtype=np.int64) - N // 2
    whole = A.discrete_laplace(x, 5.0, rng=KEY, stream=7)
    cuts = [0, 1, 999, _drive.CHUNK - 1, _drive.CHUNK, 2 * _drive.CHUNK + 17, N - 3, N]
    parts = [A.discrete_laplace(x[a:b], 5.0, rng=KEY, stream=7, offset=a)
             for a, b in zip(cuts[:-1], cuts[1:])]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    assert not np.array_equal(whole, A.discrete_laplace(x, 5.0, rng=KEY, stream=8))
    g = A.discrete_gaussian(x.reshape(-1, 1).astype(np.int32)[:5000], 40.0, rng=KEY,
                            stream=1)
    h = A.discrete_gaussian(x.astype(np.int32)[3000:5000], 40.0, rng=KEY, stream=1,
                            offset=3000)
    np.testing.assert_array_equal(g.reshape(-1)[3000:], h)
    assert g.dtype == np.int32 and g.shape == (5000, 1)


def test_one_and_many_threads_and_continuation() -> None:
    x = np.zeros(N, np.int64)
    many = A.discrete_laplace(x, 100.0, rng=KEY, stream=3)
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = A.discrete_laplace(x, 100.0, rng=KEY, stream=3)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(one, many)
    with _exact.force_exact(1):  # each cell through its chunk's continuation (scale < 1)
        w = A.discrete_laplace(np.zeros(_drive.CHUNK + 50, np.int64), 0.7, rng=KEY, stream=2)
        p = A.discrete_laplace(np.zeros(60, np.int64), 0.7, rng=KEY, stream=2,
                               offset=_drive.CHUNK - 10)
    np.testing.assert_array_equal(w[_drive.CHUNK - 10:], p)


def test_no_two_cells_share_keystream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks used by two addressed calls, a per-key release and the allocator's streams:
    every (key, nonce, counter) once."""
    used: list[tuple[bytes, tuple, int]] = []
    real_fill = _addressed._drive.fill_streams
    real_blocks = _addressed._native.chacha20_blocks

    def fill(kw, nonces, words):  # type: ignore[no-untyped-def]
        for row in nonces.tolist():
            used.extend((kw.tobytes(), tuple(row), b) for b in range(words // 8))
        return real_fill(kw, nonces, words)

    def blocks(kw, nonce, counter, nblocks, out):  # type: ignore[no-untyped-def]
        used.extend((kw.tobytes(), tuple(nonce.tolist()), counter + b) for b in range(nblocks))
        real_blocks(kw, nonce, counter, nblocks, out)

    monkeypatch.setattr(_addressed._drive, "fill_streams", fill)
    monkeypatch.setattr(_addressed._native, "chacha20_blocks", blocks)
    x = np.zeros(2 * _drive.CHUNK + 5, np.int64)
    with _exact.force_exact(1):
        A.discrete_laplace(x[:300], 0.7, rng=KEY, stream=0)
        A.discrete_laplace(x[:300], 0.7, rng=KEY, stream=1)
    A.discrete_laplace(x, 3.0, rng=KEY, stream=2)
    keynoise.noise_keys(keynoise.NoiseLaw("discrete_laplace", 3.0), np.zeros(5, np.int64),
                        keynoise.release_key(KEY, 0), np.arange(5), 0)
    assert len(set(used)) == len(used)
    assert any(c >= _addressed.SLOW_COUNTER for _, _, c in used)
    gk = np.frombuffer(KEY, "<u4").astype(np.uint32).tobytes()
    assert all(k != gk for k, _, _ in used)  # never the allocator's key
    assert len({k for k, _, _ in used}) == 4  # one derived key per call / release


def test_law_and_bad_input() -> None:
    z = A.discrete_laplace(np.zeros(40_000, np.int64), 2.0, rng=KEY, stream=11)
    a = float(np.exp(-0.5))
    p0 = (1 - a) / (1 + a)
    assert abs(np.mean(z == 0) - p0) < 5 * np.sqrt(p0 * (1 - p0) / z.size)
    with pytest.raises(TypeError, match="stream"):
        A.discrete_laplace(np.zeros(3, np.int64), 1.0, rng=KEY, stream=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="offset"):
        A.discrete_laplace(np.zeros(3, np.int64), 1.0, rng=KEY, stream=1, offset=-1)
    with pytest.raises(TypeError, match="integer"):
        A.discrete_laplace(np.zeros(3), 1.0, rng=KEY, stream=1)
    with pytest.raises(OverflowError):
        A.discrete_laplace(np.full(5, 127, np.int8), 1000.0, rng=KEY, stream=1)
    x = np.arange(5)
    A.discrete_laplace(x, 1.0, rng=KEY, stream=1)
    np.testing.assert_array_equal(x, np.arange(5))  # input untouched
    assert isinstance(dpfast.default_rng(KEY), dpfast.Generator)


@pytest.mark.parametrize("fn", [A.laplace, A.gaussian])
def test_float_slices_threads_and_grid(fn) -> None:
    rs = np.random.default_rng(5)
    x = rs.normal(0, 100, N)
    x0 = x.copy()
    whole = fn(x, 2.5, rng=KEY, stream=9)
    np.testing.assert_array_equal(x, x0)  # x is never mutated
    g = dpfast.noise.granularity(2.5)
    assert np.all(np.isfinite(whole)) and np.all(whole / g == np.rint(whole / g))
    for _ in range(3):  # several random slicings reproduce the whole call bit for bit
        cuts = np.unique(np.r_[0, rs.integers(0, N, 6), N])
        parts = [fn(x[a:b], 2.5, rng=KEY, stream=9, offset=int(a))
                 for a, b in zip(cuts[:-1], cuts[1:])]
        np.testing.assert_array_equal(np.concatenate(parts), whole)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = fn(x, 2.5, rng=KEY, stream=9)
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(one, whole)
    assert not np.array_equal(whole, fn(x, 2.5, rng=KEY, stream=10))
    out = np.empty((N // 2, 2))
    r = fn(x[:N - N % 2].reshape(-1, 2), 2.5, rng=KEY, stream=9, out=out)
    assert r is out
    np.testing.assert_array_equal(out.reshape(-1), whole[:N - N % 2])


@pytest.mark.parametrize("fn,dfn", [(A.laplace, A.discrete_laplace),
                                    (A.gaussian, A.discrete_gaussian)])
def test_float_integer_part_is_the_addressed_discrete_noise(fn, dfn) -> None:
    g = 2.0 ** -10
    x = np.random.default_rng(6).uniform(-50, 50, 20_000)
    res = fn(x[100:], 3.0, rng=KEY, stream=4, offset=100, granularity=g)
    z = res / g - np.rint(x[100:] / g)  # exact: |values| < 2**27 grid units
    want = dfn(np.zeros(20_000, np.int64), 3.0 / g, rng=KEY, stream=4)[100:]
    np.testing.assert_array_equal(z.astype(np.int64), want)
    assert z.std() > 0.5 * 3.0 / g


def test_float_validation_matches_the_ordinary_functions() -> None:
    bad = [((np.zeros(3), -1.0), {}), ((np.zeros(3), 1.0), {"granularity": 3.0}),
           ((np.array([np.nan]), 1.0), {}), ((np.zeros(3), 2.0 ** 60), {"granularity": 1.0}),
           ((np.zeros(3), np.ones(3)), {}), ((np.array(["a"]), 1.0), {}),
           ((np.zeros(3), 1.0), {"out": np.zeros(3, np.float16)})]
    for fn, ofn in [(A.laplace, dpfast.laplace), (A.gaussian, dpfast.gaussian)]:
        for args, kw in bad:
            with pytest.raises((ValueError, TypeError)) as want:
                ofn(*args, rng=KEY, **kw)
            with pytest.raises(want.type, match=re.escape(str(want.value))):
                fn(*args, rng=KEY, stream=1, **kw)
    with pytest.raises(ValueError, match="offset"):
        A.laplace(np.zeros(3), 1.0, rng=KEY, stream=1, offset=-1)
    with pytest.raises(TypeError, match="stream"):
        A.gaussian(np.zeros(3), 1.0, rng=KEY, stream=1.5)  # type: ignore[arg-type]
