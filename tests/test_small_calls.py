"""The small-call fast paths (issue 25): same keystream words and outputs as the general
paths, same errors, caches that never change a result."""

from __future__ import annotations

import math
from fractions import Fraction

import numba
import numpy as np
import pytest

import dpfast
from dpfast import _native
from dpfast.noise import _chunks, _params, grid
from dpfast.random import _streams
from dpfast.selection import _small, _validate

KEY = bytes(range(32))


def _general(monkeypatch) -> None:
    """Route every selection call through the general (batched) path."""
    monkeypatch.setattr(_small, "SMALL_CELLS", 0)
    monkeypatch.setattr(_validate, "_SMALL_CELLS", 0)


def _selections(seed: int) -> list[np.ndarray]:
    r = np.random.default_rng(seed)
    gen = dpfast.default_rng(KEY)
    out = []
    for n in (1, 2, 3, 10, 257, 4096):
        for shape in ((n,), (1, n), (5, n)):
            u = r.normal(size=shape) * 4
            out.append(np.asarray(dpfast.permute_and_flip(u, 1.3, rng=gen)))
            out.append(np.asarray(dpfast.exponential(u, 0.7, 2.0, rng=gen)))
            out.append(np.asarray(dpfast.permute_and_flip(u.tolist(), 2, rng=gen)))
            out.append(np.asarray(dpfast.permute_and_flip(np.rint(u).astype(np.int64), 0.5,
                                                          rng=gen)))
    # rows beyond one small call: the general path in both runs
    out.append(np.asarray(dpfast.permute_and_flip(r.normal(size=(5000, 2)), 1.0, rng=gen)))
    return out


def test_small_selection_path_is_bit_identical_to_the_general_path(monkeypatch) -> None:
    """For a given key, permute-and-flip and the exponential mechanism give the same
    outputs (and leave the generator at the same stream) with or without the fast path."""
    fast = _selections(1)
    with monkeypatch.context() as m:
        _general(m)
        slow = _selections(1)
    assert len(fast) == len(slow)
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)


def test_small_selection_exact_path_is_unchanged(monkeypatch) -> None:
    """Under ``force_exact`` (every coin and row decided by the exact continuation) the
    fast path reads the same words too."""
    def run() -> list[int]:
        gen = dpfast.default_rng(KEY)
        with dpfast.selection.force_exact():
            return [int(dpfast.permute_and_flip([0.0, -1.0, -0.5], 1.0, rng=gen))
                    for _ in range(20)] + [int(dpfast.exponential([0.0, 2.0], 1.0, rng=gen))
                                           for _ in range(20)]

    fast = run()
    with monkeypatch.context() as m:
        _general(m)
        assert run() == fast


@pytest.mark.parametrize("bad, exc", [([0.0, math.nan], ValueError),
                                      ([0.0, math.inf], ValueError),
                                      ([], ValueError), ([True, False], TypeError),
                                      ([[[0.0]]], ValueError)])
def test_small_selection_refuses_what_the_general_path_refuses(bad, exc) -> None:
    with pytest.raises(exc):
        dpfast.permute_and_flip(np.asarray(bad) if bad else np.zeros(0), 1.0, rng=KEY)


def test_coefficient_cache_keeps_results_and_errors() -> None:
    """The cached ``epsilon / (2 sensitivity)``: equal exact inputs give the one exact
    value; refused inputs raise every time (errors are never cached)."""
    assert _validate._coefficient(1.5, 2, 2) == _validate._coefficient_of(1.5, 2, 2)
    assert _validate._coefficient(1, 2.0, 2) == (Fraction(1, 4), 0.25)
    assert _validate._coefficient(Fraction(1, 3), 1, 2)[0] == Fraction(1, 6)  # uncached type
    for _ in range(2):
        with pytest.raises(ValueError, match="epsilon"):
            _validate._coefficient(math.nan, 1.0, 2)
        with pytest.raises(ValueError, match="epsilon"):
            _validate._coefficient(-1.0, 1.0, 2)
        with pytest.raises(TypeError, match="sensitivity"):
            _validate._coefficient(1.0, True, 2)
        with pytest.raises(ValueError, match="out of the supported range"):
            _validate._coefficient(1e-300, 1e300, 2)


def test_parse_param_cache_matches_the_uncached_parser() -> None:
    for v in (1, 2.0, 0.1, 3.5, 2.0 ** -100, 2 ** 50):
        assert _params.parse_param(v, "scale") == _params._parse_param(v, "scale")
    assert _params.parse_param(0.0, "gamma", allow_zero=True) == (Fraction(0), ())
    for _ in range(2):  # refused values raise every time, with the parameter's name
        for bad in (0.0, -1.0, math.nan, math.inf, 2.0 ** 51, 2.0 ** -101):
            with pytest.raises(ValueError, match="scale"):
                _params.parse_param(bad, "scale")
        with pytest.raises(TypeError, match="scale"):
            _params.parse_param(True, "scale")


def test_grid_scale_cache_refuses_every_time() -> None:
    assert grid._grid_scale(Fraction(3, 2), 2.0 ** -40, "scale") == Fraction(3, 2) * 2 ** 40
    assert grid._grid_setup_cached(1.5, "scale", None) == grid._grid_setup(1.5, "scale", None)
    for _ in range(2):
        with pytest.raises(ValueError, match="exceeds 2\\*\\*50"):
            dpfast.laplace(np.zeros(2), 1.0, granularity=2.0 ** -60, rng=KEY)
        with pytest.raises(ValueError, match="granularity"):
            dpfast.laplace(np.zeros(2), 1.0, granularity=0.3, rng=KEY)
        with pytest.raises(TypeError, match="granularity"):
            dpfast.laplace(np.zeros(2), 1.0, granularity=True, rng=KEY)
        with pytest.raises(ValueError, match="scale"):
            dpfast.laplace(np.zeros(2), -1.0, rng=KEY)
        with pytest.raises(TypeError, match="sigma must be a scalar"):
            dpfast.gaussian(np.zeros(2), [1.0, 2.0], rng=KEY)


@pytest.mark.parametrize("first", [1, 7, (1 << 32) - 1, 1 << 32, (1 << 64) - 1])
def test_single_nonce_and_stream_head_match_the_general_forms(first: int) -> None:
    """The one-stream nonce and keystream shortcuts write what the general helpers write."""
    one = _streams.nonce_words(first, 1)
    assert one.dtype == np.uint32 and one.shape == (1, 3)
    expect = np.array([[first & 0xFFFFFFFF, (first >> 32) & 0xFFFFFFFF, 0]], np.uint32)
    assert np.array_equal(one, expect)
    key_words = np.frombuffer(KEY, "<u4").astype(np.uint32)
    a = np.empty(16 * 5, np.uint32)
    _native.chacha20_streams(key_words, expect, np.zeros(1, np.uint32), 5, a)
    b = np.empty(16 * 5, np.uint32)
    _native.chacha20_stream_head(key_words, first, 5, b)
    assert np.array_equal(a, b)
    with pytest.raises(ValueError):
        _native.chacha20_stream_head(key_words, 1 << 64, 1, b)


def test_one_thread_context_restores_the_thread_count() -> None:
    old = numba.get_num_threads()
    with _chunks.threads_for(1, 1):
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == old
    with pytest.raises(KeyError), _chunks.threads_for(1):
        raise KeyError
    assert numba.get_num_threads() == old


def test_small_noise_calls_replay_with_a_key() -> None:
    """Scalar and small-array noise: deterministic for a key, and a scalar call gives what
    a one-cell array gives (same words)."""
    def run() -> list:
        g = dpfast.default_rng(KEY)
        return [dpfast.discrete_laplace(np.arange(3), 2.0, rng=g),
                dpfast.discrete_laplace(np.int64(4), 0.5, rng=g),
                dpfast.laplace(np.linspace(0, 1, 4), 0.7, rng=g),
                dpfast.gaussian(np.zeros(2), 1.5, rng=g),
                dpfast.discrete_gaussian(np.arange(3), 3.0, rng=g)]

    a, b = run(), run()
    for x, y in zip(a, b):
        assert np.array_equal(x, y)
    s = dpfast.laplace(0.25, 0.7, rng=KEY)
    v = dpfast.laplace(np.array([0.25]), 0.7, rng=KEY)
    assert float(s) == float(v[0])


def _reference_calibration(eps: float, delta: float, sens: float, lower: float,
                           upper: float) -> tuple:
    """The plain doubling-and-bisection search (the algorithm before the bracket)."""
    from dpfast.compat.diffprivlib import _bounded as b

    extra = -math.log1p(-delta) if delta > 0 else 0.0
    extra = max(0.0, math.nextafter(math.nextafter(extra, 0.0), 0.0))
    target = b.float_down((Fraction(eps) + Fraction(extra)) * (1 - b._MARGIN))

    def ok(s: float) -> bool:
        return b._loss(s, *b._layout(s, sens, lower, upper)) * (1 + b._ALLOW) <= target

    lo = hi = sens / target
    while not ok(hi):
        lo, hi = hi, hi * 2
    while True:
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return (hi, *b._layout(hi, sens, lower, upper))


def test_bounded_domain_calibration_bracket_finds_the_bisection_scale() -> None:
    """LaplaceBoundedDomain's calibration (a fixed-point bracket, then bisection) returns
    the scale the plain bisection finds, on domains bounded, half-bounded and unbounded."""
    pytest.importorskip("diffprivlib")
    from dpfast.compat.diffprivlib import _bounded as b

    r = np.random.default_rng(5)
    cases = [(1.0, 0.0, 1.0, 0.0, 1.0), (0.01, 0.0, 1.0, 0.0, 1.0),
             (1.0, 0.0, 0.5, 0.0, math.inf), (2.0, 1e-5, 0.1, -1.0, 3.0),
             (1.0, 0.0, 1.0, -math.inf, math.inf), (30.0, 0.0, 1.0, 0.0, 1e-3)]
    for _ in range(60):
        lo = float(r.normal())
        w = float(r.exponential() * 10.0 ** r.integers(-3, 4))
        cases.append((float(10 ** r.uniform(-3, 1.5)), float(r.choice([0.0, 1e-6, 0.1])),
                      float(w * r.uniform(0.01, 2)), lo, lo + w if r.random() < 0.9
                      else math.inf))
    for c in cases:
        assert b.calibrate.__wrapped__(*c) == _reference_calibration(*c), c


@pytest.mark.parametrize("allow_zero", [False, True])
def test_parse_param_array_fast_accept_agrees_with_the_checks(allow_zero: bool) -> None:
    """Arrays accepted by the two-reduction test are exactly those the full checks
    accept; refused arrays raise the same errors."""
    good = [np.array([1.0, 2.0]), np.array([2.0 ** -100, 2.0 ** 50]), np.array([3, 4])]
    bad = [np.array([-1.0]), np.array([np.nan, 1.0]), np.array([np.inf]),
           np.array([2.0 ** 51])]
    edge = [np.array([0.0, 1.0]), np.array([2.0 ** -101])]  # valid only with allow_zero
    for a in good + (edge if allow_zero else []):
        parsed, shape = _params.parse_param(a, "scale", allow_zero=allow_zero)
        assert shape == a.shape and np.array_equal(parsed, a.astype(np.float64))
    for a in bad + ([] if allow_zero else edge):
        with pytest.raises(ValueError, match="scale"):
            _params.parse_param(a, "scale", allow_zero=allow_zero)


def test_bounded_domain_scalar_path_is_the_rejection_sampler() -> None:
    """A scalar LaplaceBoundedDomain draw: the first in-domain candidate -- drawn one at a
    time by the pure-Python exact sampler when the acceptance is at least 1/32, else from
    the batches of exact discrete Laplace draws the array loop takes (same words for a
    seed)."""
    pytest.importorskip("diffprivlib")
    from dpfast.compat._random_state import generator_for
    from dpfast.compat.diffprivlib import _bounded as b
    from dpfast.compat.diffprivlib import _small

    for upper in (10.0, math.inf, 1e-3):
        mech = b.LaplaceBoundedDomain(epsilon=0.5, sensitivity=4.0, lower=0.0, upper=upper,
                                      random_state=11)
        got = [mech.randomise(v) for v in (3.0, 0.0, 9.9)]
        bs, g, _, lo, hi = mech._grid()
        t = Fraction(bs) / Fraction(g)
        q = math.exp(-g / bs)
        p_min = 0.5 if hi is None else -math.expm1((hi - lo + 1) * math.log(q)) / (1 + q)
        per = max(1, math.ceil(4 / p_min))
        gen = generator_for(11)
        words = _small.words_for(gen)
        want = []
        for v in (3.0, 0.0, 9.9):
            c = int(min(max(np.rint(min(max(v, 0.0), upper) / g), lo),
                        hi if hi is not None else math.inf))
            while p_min >= 1 / 32:
                yi = c + _small.discrete_laplace(words, t, float(t))
                if yi >= lo and (hi is None or yi <= hi):
                    want.append(float(min(max(float(yi) * g, 0.0), upper)))
                    break
            while p_min < 1 / 32:
                y = b._discrete_laplace(per, t, gen) + c
                ok = (y >= lo) & (y <= hi if hi is not None else True)
                if ok.any():
                    want.append(float(min(max(float(y[ok.argmax()]) * g, 0.0), upper)))
                    break
        assert got == want


def test_small_sampler_calls_run_the_serial_kernels_on_the_calling_thread(monkeypatch) -> None:
    """A small call of every sampler (one chunk, or few cells in all) runs its serial
    kernel with the empty claim on the calling thread: no claimed launch, no helper
    thread, so a first small call compiles and starts nothing parallel (the threaded
    launch needs more than ``SERIAL_CELLS`` cells over several chunks)."""
    import threading

    from dpfast._kernels import _launch
    from dpfast._kernels import samplers as sk
    from dpfast._kernels import table as tk

    calls: list[tuple[str, int, int]] = []

    def counting(kernel, name):
        def counted(*args):
            calls.append((name, int(args[-1].shape[0]), threading.get_ident()))
            return kernel(*args)
        return counted

    # the serial kernels as the small-call paths call them, and inside the launchers
    for mod, name in ((tk, "table_kernel_serial"), (sk, "discrete_kernel_serial")):
        monkeypatch.setattr(mod, name, counting(getattr(mod, name), name))
    for launcher, name in ((tk.table_kernel, "table_kernel_serial"),
                           (sk.discrete_kernel, "discrete_kernel_serial"),
                           (sk.bernoulli_exp_kernel, "bernoulli_exp_kernel_serial")):
        monkeypatch.setattr(launcher, "_kernel", counting(launcher._kernel, name))
    real = _launch._Claimed.launch

    def one_chunk_only(self, args, threads):  # a launcher reached with one chunk only
        full = self._prepare(args) if self._prepare is not None else args
        assert self._count(full) <= 1, "a small call took the threaded launch"
        return real(self, args, threads)

    monkeypatch.setattr(_launch._Claimed, "launch", one_chunk_only)
    monkeypatch.setattr(_launch, "thread_count", lambda: 4)
    gen = dpfast.default_rng(KEY)
    n = 1000
    dpfast.discrete_laplace(np.arange(n), 7.0, rng=gen)
    dpfast.discrete_gaussian(np.arange(n), 3.5, rng=gen)
    dpfast.discrete_laplace(np.arange(n), 0.4, rng=gen)
    dpfast.discrete_gaussian(np.arange(n), np.linspace(0.5, 9.0, n), rng=gen)
    dpfast.laplace(np.linspace(-3.0, 3.0, n), 2.0, rng=gen)
    dpfast.gaussian(np.linspace(-3.0, 3.0, n), 2.0, rng=gen)
    gen.bernoulli_exp(np.linspace(0.0, 3.0, n))
    me = threading.get_ident()
    assert {c[0] for c in calls} == {"table_kernel_serial", "discrete_kernel_serial",
                                     "bernoulli_exp_kernel_serial"}
    assert all(claim == 0 and tid == me for _, claim, tid in calls)
