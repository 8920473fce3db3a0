"""Private selection: exact distributions (chi-square against exact formulas), the exact
continuation (forced, and on constructed bit patterns), certified bounds, validation."""

from __future__ import annotations

import functools
import itertools
import math
from fractions import Fraction

import mpmath
import numba
import numpy as np
import pytest

from dpfast import selection as sel
from dpfast._kernels import selection as ks
from dpfast.accounting import events
from dpfast.noise import _exact
from dpfast.selection import _bits, gumbel, noisy_max
from dpfast.selection import continuation as cont

from .helpers import KEY, chisquare_pvalue

PMIN = 1e-4  # fixed keys: deterministic; a correct sampler passes with this margin


def key(i: int) -> bytes:
    return bytes((b + i) % 256 for b in range(32))


# chi-square p-value, cells pooled to an expected count >= 5
chi2_pvalue = functools.partial(chisquare_pvalue, min_expected=5)


def _mp(v):
    """mpf of a float, int or Fraction (mpmath 1.3, pulled in by sympy, refuses Fractions)."""
    if isinstance(v, Fraction):
        return mpmath.mpf(v.numerator) / v.denominator
    return mpmath.mpf(v)


def em_probs(u, c) -> np.ndarray:
    with mpmath.workdps(40):
        w = [mpmath.exp(_mp(c) * _mp(x)) for x in u]
        s = mpmath.fsum(w)
        return np.array([float(x / s) for x in w])


def pf_probs(u, c) -> np.ndarray:
    """Permute-and-flip by brute force over all n! orders (n <= 5)."""
    n = len(u)
    with mpmath.workdps(40):
        um = max(u)
        p = [mpmath.exp(_mp(c) * (_mp(x) - um)) for x in u]
        out = [mpmath.mpf(0)] * n
        for perm in itertools.permutations(range(n)):
            stay = mpmath.mpf(1)
            for i in perm:
                out[i] += stay * p[i]
                stay *= 1 - p[i]
        tot = math.factorial(n)
        return np.array([float(x / tot) for x in out])


def pl_probs(u, c, k) -> dict[tuple[int, ...], float]:
    """Plackett-Luce (sequential sampling without replacement) probabilities."""
    with mpmath.workdps(40):
        w = [mpmath.exp(_mp(c) * _mp(x)) for x in u]
        out = {}
        for seq in itertools.permutations(range(len(u)), k):
            rest = mpmath.fsum(w)
            p = mpmath.mpf(1)
            for i in seq:
                p *= w[i] / rest
                rest -= w[i]
            out[seq] = float(p)
        return out


# --------------------------------------------------------------------------- exponential


@pytest.mark.parametrize("u, eps, sens, mono", [
    ([0.0, 1.0, 2.5, -1.0, 0.3], 1.0, 1.0, False),
    ([3.0, 3.0, 2.0, -4.0], 2.0, 0.5, True),
    ([0.1, 0.2, 0.3], 0.7, 3.0, False),
])
def test_exponential_distribution(u, eps, sens, mono) -> None:
    rows = 10 ** 6
    U = np.tile(np.array(u), (rows, 1))
    idx = sel.exponential(U, eps, sens, monotonic=mono, rng=key(1))
    assert idx.shape == (rows,) and idx.dtype == np.int64
    c = Fraction(eps) / (Fraction(sens) * (1 if mono else 2))
    counts = np.bincount(idx, minlength=len(u))
    assert chi2_pvalue(counts, em_probs(u, c)) > PMIN


def test_exponential_multi_segment_rows(monkeypatch) -> None:
    """Rows split into several parallel segments combine to the same distribution."""
    monkeypatch.setattr(gumbel, "_SEG", 3)
    u = [0.5, -0.5, 1.0, 0.0, 2.0, 1.5, -2.0]
    U = np.tile(np.array(u), (300_000, 1))
    idx = sel.exponential(U, 1.0, rng=key(2))
    counts = np.bincount(idx, minlength=len(u))
    assert chi2_pvalue(counts, em_probs(u, Fraction(1, 2))) > PMIN


@pytest.mark.slow
def test_exponential_forced_exact_distribution() -> None:
    u = [0.0, -1.0, -3.0]
    with sel.force_exact():
        idx = sel.exponential(np.tile(np.array(u), (3000, 1)), 2.0, rng=key(3))
    counts = np.bincount(idx, minlength=3)
    assert chi2_pvalue(counts, em_probs(u, 1)) > PMIN


def test_exponential_1d_and_large_row() -> None:
    i = sel.exponential([1.0, 2.0, 3.0], 1.0, rng=KEY)
    assert isinstance(i, int) and 0 <= i < 3
    assert sel.exponential([5.0], 1.0, rng=KEY) == 0
    u = np.zeros(300_000)
    u[123_456] = 60.0  # c = 1: every other candidate is 60 units behind
    assert sel.exponential(u, 2.0, rng=KEY) == 123_456


def test_draw_words_layout() -> None:
    """One word per cell; a short tail chunk is the prefix of its own stream."""
    from dpfast import default_rng

    a = _bits._draw_words(default_rng(KEY), 3 * 65536 + 13)
    b = _bits._draw_words(default_rng(KEY), 3 * 65536 + 13 + 100)
    assert a.shape == (3 * 65536 + 13,) and np.array_equal(a, b[:a.shape[0]])
    assert len(np.unique(a)) == a.shape[0]


def test_exponential_deterministic_and_thread_independent(monkeypatch) -> None:
    from dpfast.selection import _validate

    u = np.random.default_rng(5).normal(size=(50, 40_000))
    a = sel.exponential(u, 3.0, rng=key(4))
    b = sel.exponential(u, 3.0, rng=key(4))
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        c = sel.exponential(u, 3.0, rng=key(4))
    finally:
        numba.set_num_threads(old)
    # the parallel kernels (row maxima, scan), which small calls skip, give the same
    monkeypatch.setattr(gumbel, "_PARALLEL_SCAN", 0)
    monkeypatch.setattr(_validate, "_MIN_PARALLEL_ROWS", 1)
    monkeypatch.setattr(_validate, "_PARALLEL_WORK", 0)
    d = sel.exponential(u, 3.0, rng=key(4))
    e = sel.exponential(u[0], 3.0, rng=key(4))
    assert np.array_equal(a, b) and np.array_equal(a, c) and np.array_equal(a, d)
    assert e == sel.exponential(u[:1], 3.0, rng=key(4))[0]


def test_shift_invariance() -> None:
    rng = np.random.default_rng(7)
    u = rng.integers(-400, 400, size=(200, 300)) / 8.0  # exact after adding 2**20
    for shift in (1024.0, -(2.0 ** 20)):
        v = u + shift
        assert np.array_equal(sel.exponential(u, 1.5, rng=key(5)),
                              sel.exponential(v, 1.5, rng=key(5)))
        assert np.array_equal(sel.permute_and_flip(u, 1.5, rng=key(5)),
                              sel.permute_and_flip(v, 1.5, rng=key(5)))
        assert np.array_equal(sel.top_k(u, 3, 1.5, rng=key(5)),
                              sel.top_k(v, 3, 1.5, rng=key(5)))
        assert sel.exponential(u[0], 1.5, rng=key(6)) == sel.exponential(v[0], 1.5, rng=key(6))
        with sel.force_exact():
            assert np.array_equal(sel.exponential(u[:20, :6], 1.5, rng=key(7)),
                                  sel.exponential(v[:20, :6], 1.5, rng=key(7)))


# --------------------------------------------------------------------------- far behind


def _source(first: list[int], seed: int) -> _exact.WordSource:
    """Word source: the given words first, then seeded pseudo-random words."""
    gen = np.random.default_rng(seed)
    pending = [np.array(first, dtype=np.uint64)]

    def fetch(n: int) -> np.ndarray:
        head = pending.pop() if pending else np.empty(0, np.uint64)
        tail = gen.integers(0, 2 ** 64, size=n, dtype=np.uint64, endpoint=False)
        return np.concatenate([head, tail])[:max(n, head.size)]

    return _exact.WordSource(fetch)


ALL_ONES = (1 << 64) - 1


def test_far_candidate_wins_when_its_bits_say_so() -> None:
    """Exact comparison returns the candidate 60 units behind when its uniform is close
    enough to 1 (its first 64 bits all ones, then 128 more), and not otherwise."""
    words = np.array([1 << 63, ALL_ONES], np.uint64)  # U_best ~ 1/2, U_far >= 1 - 2^-64
    u = np.array([0.0, -60.0])
    for forced in (True, False):
        # the contenders are refined together, so every refinement word is the same
        src = _source([ALL_ONES] * 4, seed=1)
        assert cont._exact_top(words, u, Fraction(1), 1.0, 1, lambda s=src: s, forced) == [1]
        src = _source([0] * 4, seed=2)
        assert cont._exact_top(words, u, Fraction(1), 1.0, 1, lambda s=src: s, forced) == [0]
    # the kernel never certifies a row with an all-ones word
    lo, hi, sp = ks.cell_bounds(np.uint64(ALL_ONES), -60.0)
    assert sp and hi == math.inf


@pytest.mark.slow
def test_far_candidate_exact_conditional_probability() -> None:
    """Given U_far in [1 - 2^-87, 1) (64 ones, then 23 ones, then random bits), the far
    candidate (c * 60 behind, c = 1) wins with probability
    P(1 - U_far < exp(-(60 + G_best))) / 2^-87, observed through the exact path."""
    m_best = int(0.593 * 2 ** 64)
    with mpmath.workdps(50):
        ub = mpmath.mpf(m_best) / mpmath.mpf(2) ** 64
        g_best = -mpmath.log(-mpmath.log(ub))
        p = float((1 - mpmath.exp(-mpmath.exp(-(60 + g_best)))) * mpmath.mpf(2) ** 87)
    assert 0.3 < p < 0.95
    words = np.array([m_best, ALL_ONES], np.uint64)
    u = np.array([0.0, -60.0])
    gen = np.random.default_rng(11)
    trials = 1500
    wins = 0
    for t in range(trials):
        w0, w2 = (int(x) for x in gen.integers(0, 2 ** 64, size=2, dtype=np.uint64))
        crafted = (((1 << 23) - 1) << 41) | (w2 >> 23)
        src = _source([w0, crafted], seed=100 + t)
        wins += cont._exact_top(words, u, Fraction(1), 1.0, 1, lambda s=src: s, True) == [1]
    se = math.sqrt(p * (1 - p) / trials)
    assert abs(wins / trials - p) < 4.5 * se


def _constructed_bits(monkeypatch, words, first: list[int], seed: int) -> None:
    """Make the next :func:`sel.exponential` call read ``words`` as its bulk keystream
    (one 64-bit word per candidate) and ``first`` as the first refinement words of its
    exact path (then seeded pseudo-random words)."""
    src = _source(first, seed)
    w = np.array(words, np.uint64)
    monkeypatch.setattr(gumbel, "_draw_words", lambda gen, n: w[:n].copy())
    monkeypatch.setattr(gumbel, "_LazySource", lambda gen: (lambda: src))


def _float_gumbel_max(words, u, c) -> int:
    """What a float Gumbel-max (53-bit uniform, as numpy's) selects from the same bits."""
    uf = (np.array(words, np.uint64) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    with np.errstate(divide="ignore"):
        return int(np.argmax(c * np.asarray(u) - np.log(-np.log(uf))))


@pytest.mark.parametrize("gap", [60.0, 200.0])
def test_far_behind_wins_exactly_when_its_bits_say_so(monkeypatch, gap) -> None:
    """A candidate ``gap`` nats behind (a float Gumbel-max gives it probability exactly 0:
    53-bit uniforms bound the Gumbel to [-3.6, 36.8]) wins through the public function
    when its uniform is close enough to 1, and loses otherwise."""
    u = [0.0, -gap]  # epsilon = 2, sensitivity 1: c = 1
    m_best = int(0.593 * 2 ** 64)
    words = [m_best, ALL_ONES]
    # the far candidate (unbounded interval) is refined first, then the leader: it gets
    # every other word, so U_far >= 1 - 2^-(64 (ones + 1)) and G_far > gap + 20
    ones = int(gap + 30) // 64 + 2
    _constructed_bits(monkeypatch, words, [ALL_ONES, 0] * ones, seed=1)
    assert sel.exponential(u, 2.0, rng=KEY) == 1
    assert _float_gumbel_max(words, u, 1.0) == 0  # the float sampler cannot
    _constructed_bits(monkeypatch, words, [0] * 4, seed=2)
    assert sel.exponential(u, 2.0, rng=KEY) == 0


@pytest.mark.slow
def test_far_behind_conditional_frequency_public_path(monkeypatch) -> None:
    """60 nats behind, through :func:`sel.exponential`: given U_far in [1 - 2^-87, 1)
    (a bulk word of 64 ones, then 23 ones), the far candidate wins with probability
    (1 - exp(-exp(-(60 + G_best)))) 2^87; a float Gumbel-max never lets it win."""
    m_best = int(0.593 * 2 ** 64)
    with mpmath.workdps(50):
        g_best = -mpmath.log(-mpmath.log(mpmath.mpf(m_best) / mpmath.mpf(2) ** 64))
        p = float((1 - mpmath.exp(-mpmath.exp(-(60 + g_best)))) * mpmath.mpf(2) ** 87)
    assert 0.3 < p < 0.95
    words = [m_best, ALL_ONES]
    gen = np.random.default_rng(12)
    trials = 1500
    wins = 0
    for t in range(trials):
        w0, w2 = (int(x) for x in gen.integers(0, 2 ** 64, size=2, dtype=np.uint64))
        crafted = (((1 << 23) - 1) << 41) | (w2 >> 23)
        # the exact path ranks the far candidate (unbounded interval) first: it is
        # refined first, then the leader
        _constructed_bits(monkeypatch, words, [crafted, w0], seed=200 + t)
        wins += sel.exponential([0.0, -60.0], 2.0, rng=KEY) == 1
        assert _float_gumbel_max(words, [0.0, -60.0], 1.0) == 0
    se = math.sqrt(p * (1 - p) / trials)
    assert abs(wins / trials - p) < 4.5 * se


# words the kernel cannot order (adjacent 64-bit prefixes), refined by known words
W = 0x9E3779B97F4A7C15
ADJACENT = [W + 1, W, W]
REFINE_SOURCES = [[0, ALL_ONES, ALL_ONES], [0, 0, 0], [ALL_ONES, ALL_ONES, ALL_ONES],
                  [1 << 63, ALL_ONES, 5]]


def _continuation_winners(monkeypatch, forced: bool) -> list[int]:
    out = []
    for t, first in enumerate(REFINE_SOURCES):
        _constructed_bits(monkeypatch, ADJACENT, first, seed=300 + t)
        if forced:
            with sel.force_exact():
                out.append(sel.exponential([0.0, 0.0, 0.0], 1.0, rng=KEY))
        else:
            out.append(sel.exponential([0.0, 0.0, 0.0], 1.0, rng=KEY))
    return out


@pytest.mark.parametrize("forced", [False, True])
def test_continuation_keeps_the_kernel_bits(monkeypatch, forced) -> None:
    """Equal utilities; candidate 0's uniform lies in [W + 1, W + 2) / 2^64, above the
    others' [W, W + 1) / 2^64, so it wins whatever the refinement bits: the float
    certificate cannot tell (the intervals are 2^-64 apart), the continuation must."""
    lo = np.empty(3)
    hi = np.empty(3)
    ks.row_bounds(np.array(ADJACENT, np.uint64), np.zeros(3), 0.0, 0.5, lo, hi)
    assert lo[0] <= hi[1]  # undecided by the floats: the exact path decides
    assert _continuation_winners(monkeypatch, forced) == [0] * len(REFINE_SOURCES)


def test_resampling_variant_is_caught(monkeypatch) -> None:
    """A continuation that throws away the kernel's 64 bits and draws fresh ones (the
    biased "resample" the exactness rule forbids) fails the test above."""
    orig = gumbel._exact_top

    def resampling(words, u_row, c, c_f, k, src, forced):
        fresh = np.array([src().next() for _ in range(words.shape[0])], np.uint64)
        return orig(fresh, u_row, c, c_f, k, src, forced)

    monkeypatch.setattr(gumbel, "_exact_top", resampling)
    assert _continuation_winners(monkeypatch, False) != [0] * len(REFINE_SOURCES)


# --------------------------------------------------------------------------- certified bounds


def test_ln_bounds_enclose() -> None:
    rng = np.random.default_rng(3)
    cases = [(1, 1), (2, 1), (1, 2), (3, 7), (ALL_ONES, 1 << 64), (1, 1 << 64), (10 ** 30, 3)]
    cases += [(int(a) + 1, int(b) + 1) for a, b in rng.integers(0, 2 ** 62, size=(20, 2))]
    with mpmath.workprec(400):
        for num, den in cases:
            for w in (10, 64, 200):
                lo, hi = sel.ln_bounds(num, den, w)
                v = mpmath.log(mpmath.mpf(num) / den) * mpmath.mpf(2) ** w
                assert lo <= v <= hi and hi - lo <= 8


def _g(x) -> mpmath.mpf:
    return -mpmath.log(-mpmath.log(x))


def test_cell_bounds_are_rigorous() -> None:
    """Kernel score intervals contain the exact score over the whole interval of U."""
    rng = np.random.default_rng(4)
    ms = [int(x) for x in rng.integers(0, 2 ** 64, size=300, dtype=np.uint64)]
    ms += [1 << 12, (1 << 12) + 1, 5, 0, (1 << 63) - 1, 1 << 63, (1 << 64) - (1 << 12) - 1,
           (1 << 64) - (1 << 12), ALL_ONES]
    ms += [(1 << 64) - (1 << k) for k in range(13, 64, 7)] + [1 << k for k in range(0, 64, 7)]
    utils = rng.normal(scale=30, size=len(ms))
    utils[:5] = [1e-300, -1e300, 1e300, 0.0, 3.0]
    um = 2.5
    c = Fraction(3, 7)
    m_arr = np.array(ms, np.uint64)
    lo = np.empty(len(ms))
    hi = np.empty(len(ms))
    ks.row_bounds(m_arr, utils, um, float(c), lo, hi)
    with mpmath.workprec(300):
        two64 = mpmath.mpf(2) ** 64
        for j, m in enumerate(ms):
            a = Fraction(c) * (Fraction(float(utils[j])) - Fraction(um))
            am = mpmath.mpf(a.numerator) / a.denominator
            s_lo = -mpmath.inf if m == 0 else am + _g(mpmath.mpf(m) / two64)
            s_hi = mpmath.inf if m == ALL_ONES else am + _g(mpmath.mpf(m + 1) / two64)
            assert lo[j] <= s_lo and s_hi <= hi[j], (m, utils[j])
            if (1 << 30) <= m < (1 << 64) - (1 << 30) and abs(float(am)) < 1e3:
                assert hi[j] - lo[j] < 1e-9  # and tight


def test_gumbel_interval_exact_path() -> None:
    with mpmath.workprec(400):
        for m, n in [(1, 64), (ALL_ONES - 1, 64), (12345, 64), (2, 2), ((1 << 128) - 2, 128)]:
            glo, ghi = cont._gumbel_interval(m, n, n + 64)
            lo_true = _g(mpmath.mpf(m) / mpmath.mpf(2) ** n)
            hi_true = _g(mpmath.mpf(m + 1) / mpmath.mpf(2) ** n)
            assert mpmath.mpf(glo.numerator) / glo.denominator <= lo_true
            assert hi_true <= mpmath.mpf(ghi.numerator) / ghi.denominator
    assert cont._gumbel_interval(0, 64, 128)[0] == -math.inf
    assert cont._gumbel_interval(ALL_ONES, 64, 128)[1] == math.inf


def test_scan_marks_near_one_words_pending() -> None:
    m = np.array([1 << 62, (1 << 64) - 100, 1 << 63], np.uint64)
    u = np.array([5.0, 0.0, 1.0])
    out = np.empty(1, np.int64)
    j1, lo1, hi1, hi2 = np.empty(1, np.int64), np.empty(1), np.empty(1), np.empty(1)
    sp = np.empty(1, np.bool_)
    ks.em_scan(m, u, np.array([5.0]), 3, 16, 0.5, ks.GTABLE, j1, lo1, hi1, hi2, sp)
    ks.em_combine(1, j1, lo1, hi1, hi2, sp, False, out)
    assert sp[0] and out[0] == -1


def test_certified_rows_match_high_precision_argmax() -> None:
    """Rows the kernel certifies agree with the argmax of exact scores at U's midpoint."""
    rng = np.random.default_rng(9)
    rows, n = 300, 50
    m = rng.integers(0, 2 ** 64, size=rows * n, dtype=np.uint64)
    u = rng.normal(scale=0.01, size=rows * n)  # close races
    umax = u.reshape(rows, n).max(axis=1)
    out = np.empty(rows, np.int64)
    j1, lo1, hi1, hi2 = (np.empty(rows, np.int64), np.empty(rows), np.empty(rows),
                         np.empty(rows))
    sp = np.empty(rows, np.bool_)
    ks.em_scan(m, u, umax, n, 64, 0.5, ks.GTABLE, j1, lo1, hi1, hi2, sp)
    ks.em_combine(1, j1, lo1, hi1, hi2, sp, False, out)
    with mpmath.workprec(200):
        for r in range(rows):
            sc = [mpmath.mpf(0.5) * (mpmath.mpf(float(u[r * n + j])) - float(umax[r]))
                  + _g((mpmath.mpf(int(m[r * n + j])) + 0.5) / mpmath.mpf(2) ** 64)
                  for j in range(n)]
            best = max(range(n), key=lambda j: sc[j])
            assert out[r] in (-1, best)
    assert (out >= 0).mean() > 0.99


@pytest.mark.parametrize("seg", [7, 64])
def test_scan_from_the_best_cell_equals_a_full_left_to_right_scan(seg: int) -> None:
    """The scan visits each segment from its best utility on (wrapping round) and skips
    cells: per segment its two largest upper bounds, its special flag and (when the largest
    is unique) the winner and lower bound are those of evaluating every cell left to right;
    peaked integer utilities with ties, rows of several segments (the row maximum in
    another segment), words near 0 and near 1."""
    rng = np.random.default_rng(11)
    rows, n = 60, 40
    m = rng.integers(0, 2 ** 64, size=rows * n, dtype=np.uint64)
    m[::97] = np.uint64(5)                    # U < 2^-52
    m[::89] = np.uint64((1 << 64) - 7)        # special
    peak = rng.integers(0, n, rows)
    u = -np.abs(np.arange(n)[None, :] - peak[:, None]).astype(np.float64) * 2.0
    u[::5] = np.round(u[::5] / 4.0)           # ties
    u = u.reshape(-1)
    umax = u.reshape(rows, n).max(axis=1)
    nps = -(-n // seg)
    outs = [np.empty(rows * nps, np.int64), np.empty(rows * nps), np.empty(rows * nps),
            np.empty(rows * nps), np.empty(rows * nps, np.bool_)]
    ks.em_scan(m, u, umax, n, seg, 0.7, ks.GTABLE, *outs)
    j1, lo1, hi1, hi2, sp = outs
    for r in range(rows):
        for p in range(nps):
            s = r * nps + p
            cells = []
            for j in range(p * seg, min(n, (p + 1) * seg)):
                a = max(0.7 * (u[r * n + j] - umax[r]), -1e300)
                cells.append((j, *ks.cell_bounds(m[r * n + j], a)))
            his = sorted((c[2] for c in cells), reverse=True) + [-math.inf]
            assert hi1[s] == his[0] and hi2[s] == his[1], (r, p)
            assert sp[s] == any(c[3] for c in cells)
            if his[0] > his[1]:
                top = max(cells, key=lambda c: c[2])
                assert j1[s] == top[0] and lo1[s] == top[1]


# --------------------------------------------------------------------------- permute-and-flip


@pytest.mark.parametrize("u, eps, sens", [
    ([0.0, 1.0, 2.5, -1.0, 0.3], 1.0, 1.0),
    ([2.0, 2.0, 1.0, -3.0], 3.0, 2.0),
])
def test_permute_and_flip_distribution(u, eps, sens) -> None:
    rows = 10 ** 6
    idx = sel.permute_and_flip(np.tile(np.array(u), (rows, 1)), eps, sens, rng=key(8))
    counts = np.bincount(idx, minlength=len(u))
    assert chi2_pvalue(counts, pf_probs(u, Fraction(eps) / (2 * Fraction(sens)))) > PMIN


def test_permute_and_flip_forced_exact() -> None:
    u = [0.0, -0.5, -2.0, 1.0]
    with sel.force_exact():
        idx = sel.permute_and_flip(np.tile(np.array(u), (4000, 1)), 2.0, rng=key(9))
    counts = np.bincount(idx, minlength=4)
    assert chi2_pvalue(counts, pf_probs(u, 1)) > PMIN


def test_report_noisy_max_dispatch() -> None:
    u = np.random.default_rng(1).normal(size=(100, 20))
    assert np.array_equal(sel.report_noisy_max(u, 1.0, noise="gumbel", rng=key(10)),
                          sel.exponential(u, 1.0, rng=key(10)))
    assert np.array_equal(sel.report_noisy_max(u, 1.0, rng=key(11)),
                          sel.permute_and_flip(u, 1.0, rng=key(11)))
    assert isinstance(sel.report_noisy_max(u[0], 1.0, rng=KEY), int)


# --------------------------------------------------------------------------- top-k


def _topk_check(u, k, idx, c) -> float:
    probs = pl_probs(u, c, k)
    seqs = list(probs)
    lookup = {s: i for i, s in enumerate(seqs)}
    codes = np.array([lookup[tuple(r)] for r in map(tuple, idx)])
    counts = np.bincount(codes, minlength=len(seqs))
    return chi2_pvalue(counts, [probs[s] for s in seqs])


def test_top_k_distribution() -> None:
    u = [0.0, 1.0, -0.5, 2.0]
    rows = 10 ** 6
    idx = sel.top_k(np.tile(np.array(u), (rows, 1)), 2, 1.0, rng=key(12))
    assert idx.shape == (rows, 2)
    # fast vectorized encoding of ordered pairs
    codes = idx[:, 0] * 4 + idx[:, 1]
    probs = pl_probs(u, Fraction(1, 2), 2)
    counts = np.bincount(codes, minlength=16)
    exp = np.array([probs.get((a, b), 0.0) for a in range(4) for b in range(4)])
    assert counts[exp == 0].sum() == 0
    assert chi2_pvalue(counts[exp > 0], exp[exp > 0]) > PMIN


@pytest.mark.slow
def test_top_k_forced_and_python_path() -> None:
    u = [0.0, 1.0, -0.5, 2.0, 0.5]
    with sel.force_exact():
        idx = sel.top_k(np.tile(np.array(u), (2000, 1)), 3, 2.0, rng=key(13))
    assert _topk_check(u, 3, idx, Fraction(1)) > PMIN
    # k above the kernel's limit: the numpy/exact path orders everything
    v = np.linspace(0, 3, 70)
    out = sel.top_k(v, 70, 4.0, rng=key(14))
    assert sorted(out.tolist()) == list(range(70))
    one = sel.top_k(v, 1, 4.0, rng=key(15))
    assert one.shape == (1,)


def test_top_k_python_path_distribution(monkeypatch) -> None:
    """The per-row path (float blocks + exact ranking), used for k > 64, is exact too."""
    monkeypatch.setattr(noisy_max, "_TOPK_KERNEL", 0)
    u = [0.0, 1.0, -0.5, 2.0]
    idx = sel.top_k(np.tile(np.array(u), (20_000, 1)), 2, 1.0, rng=key(17))
    assert _topk_check(u, 2, idx, Fraction(1, 2)) > PMIN


@pytest.mark.parametrize("forced", [False, True])
def test_exact_top_matches_high_precision_order(forced) -> None:
    rng = np.random.default_rng(21)
    n, k = 25, 5
    for trial in range(40):
        words = rng.integers(0, 2 ** 64, size=n, dtype=np.uint64)
        u = rng.normal(scale=0.3, size=n)
        src = _source([], seed=trial)
        got = cont._exact_top(words, u, Fraction(1), 1.0, k, lambda s=src: s, forced)
        with mpmath.workprec(200):
            um = float(u.max())
            sc = [mpmath.mpf(float(u[j])) - um
                  + _g((mpmath.mpf(int(words[j])) + 0.5) / mpmath.mpf(2) ** 64)
                  for j in range(n)]
        order = sorted(range(n), key=lambda j: -sc[j])
        gaps = [sc[order[t]] - sc[order[t + 1]] for t in range(k)]
        if min(gaps) > 1e-12:  # midpoint order is the exact order
            assert got == order[:k]


def test_top_k_matches_exponential_for_k1() -> None:
    u = np.random.default_rng(2).normal(size=(500, 30))
    assert np.array_equal(sel.top_k(u, 1, 1.0, rng=key(16))[:, 0],
                          sel.exponential(u, 1.0, rng=key(16)))


# --------------------------------------------------------------------------- events, validation


def test_events() -> None:
    assert sel.exponential_event(1.5) == events.Exponential(1.5)
    assert sel.permute_and_flip_event(0.5) == events.Epsilon(0.5)
    assert sel.report_noisy_max_event(0.5, "gumbel") == events.Exponential(0.5)
    assert sel.report_noisy_max_event(0.5) == events.Epsilon(0.5)
    assert sel.top_k_event(0.25, 4) == events.SelfComposed(events.Exponential(0.25), 4)
    third = sel.exponential_event(Fraction(1, 3)).epsilon
    assert Fraction(third) >= Fraction(1, 3) and third == math.nextafter(1 / 3, 1)
    with pytest.raises(ValueError, match="epsilon"):
        sel.exponential_event(0.0)
    with pytest.raises(ValueError, match="k"):
        sel.top_k_event(1.0, 0)


FUNCS = [
    lambda u, **kw: sel.exponential(u, kw.get("epsilon", 1.0), kw.get("sensitivity", 1.0),
                                    rng=KEY),
    lambda u, **kw: sel.permute_and_flip(u, kw.get("epsilon", 1.0), kw.get("sensitivity", 1.0),
                                         rng=KEY),
    lambda u, **kw: sel.report_noisy_max(u, kw.get("epsilon", 1.0), kw.get("sensitivity", 1.0),
                                         noise="gumbel", rng=KEY),
    lambda u, **kw: sel.top_k(u, 1, kw.get("epsilon", 1.0), kw.get("sensitivity", 1.0),
                              rng=KEY),
]


@pytest.mark.parametrize("f", FUNCS)
def test_validation(f) -> None:
    for bad in ([1.0, np.nan], [np.inf, 0.0], [[0.0, -np.inf]]):
        with pytest.raises(ValueError, match="utilities"):
            f(bad)
    for empty in ([], np.zeros((3, 0)), np.zeros((0, 3))):
        with pytest.raises(ValueError, match="utilities"):
            f(empty)
    with pytest.raises(ValueError, match="utilities"):
        f(np.zeros((2, 2, 2)))
    with pytest.raises(TypeError, match="utilities"):
        f([True, False])
    with pytest.raises(TypeError, match="utilities"):
        f(["a", "b"])
    with pytest.raises(ValueError, match="utilities"):
        f(np.array([2 ** 60, 0]))
    for eps in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="epsilon"):
            f([1.0, 2.0], epsilon=eps)
    with pytest.raises(TypeError, match="epsilon"):
        f([1.0, 2.0], epsilon=True)
    with pytest.raises(TypeError, match="epsilon"):
        f([1.0, 2.0], epsilon="1")
    for s in (0.0, -2.0, math.nan):
        with pytest.raises(ValueError, match="sensitivity"):
            f([1.0, 2.0], sensitivity=s)
    with pytest.raises(ValueError, match="epsilon / sensitivity"):
        f([1.0, 2.0], epsilon=1e-300, sensitivity=1e300)


def test_validation_specific() -> None:
    with pytest.raises(ValueError, match="k"):
        sel.top_k([1.0, 2.0], 0, 1.0)
    with pytest.raises(ValueError, match="k"):
        sel.top_k([1.0, 2.0], 3, 1.0)
    with pytest.raises(TypeError, match="k"):
        sel.top_k([1.0, 2.0], 1.5, 1.0)
    with pytest.raises(ValueError, match="noise"):
        sel.report_noisy_max([1.0, 2.0], 1.0, noise="laplace")
    with pytest.raises(TypeError, match="noise"):
        sel.report_noisy_max([1.0, 2.0], 1.0, noise=None)
    with pytest.raises(TypeError, match="monotonic"):
        sel.exponential([1.0, 2.0], 1.0, monotonic=1)
    with pytest.raises(TypeError, match="rng"):
        sel.exponential([1.0, 2.0], 1.0, rng=3)


def test_inputs_not_mutated_and_dtypes() -> None:
    u = np.array([[3.0, 1.0, 2.0], [0.0, 0.0, 5.0]])
    keep = u.copy()
    for f in (sel.exponential, sel.permute_and_flip):
        f(u, 1.0, rng=KEY)
    sel.top_k(u, 2, 1.0, rng=KEY)
    assert np.array_equal(u, keep)
    # int and float32 utilities are taken exactly; non-contiguous input works
    a = sel.exponential(np.array([1, 5, 3]), 1.0, rng=key(20))
    b = sel.exponential(np.array([1, 5, 3], np.float32), 1.0, rng=key(20))
    assert a == b
    w = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert sel.exponential(w, 1.0, rng=KEY).shape == (3,)
    assert isinstance(sel.permute_and_flip([1.0], 1.0, rng=KEY), int)
    assert sel.exponential([1.0, 2.0], Fraction(1, 3), 2, rng=KEY) in (0, 1)


def test_extreme_utilities() -> None:
    """Huge spreads (overflowing differences) and tiny ones stay exact and valid."""
    u = np.tile(np.array([1e308, -1e308, 0.0, 1e308]), (4000, 1))
    for f in (sel.exponential, sel.permute_and_flip):  # the two maxima tie: 1/2 each
        counts = np.bincount(f(u, 1.0, rng=key(22)), minlength=4)
        assert counts[1] == counts[2] == 0 and chi2_pvalue(counts[[0, 3]], [1, 1]) > PMIN
    top = sel.top_k(u, 2, 1.0, rng=key(23))
    assert np.all(np.sort(top, axis=1) == [0, 3])
    assert chi2_pvalue(np.bincount(top[:, 0], minlength=4)[[0, 3]], [1, 1]) > PMIN
    tiny = np.array([0.0, 5e-324, 1e-300])
    counts = np.bincount(sel.exponential(np.tile(tiny, (30_000, 1)), 1.0, rng=key(21)),
                         minlength=3)
    assert chi2_pvalue(counts, [1, 1, 1]) > PMIN


# --------------------------------------------------------------------------- permute-and-flip bits
with mpmath.workprec(300):
    _E = int(mpmath.floor(mpmath.exp(-1) * mpmath.mpf(2) ** 128))
E1, E2 = _E >> 64, _E & ALL_ONES  # exp(-1) = 0.E1 E2 ... (base 2^64)
PF_CASES = [  # (bulk word of the coin, refinement words, coin comes up heads)
    (int(0.2 * 2 ** 64), [ALL_ONES] * 2, True),
    (int(0.5 * 2 ** 64), [0] * 2, False),
    (E1, [E2 - 1, ALL_ONES], True),  # U = 0.E1 (E2 - 1) ... < exp(-1)
    (E1, [E2 + 1, 0], False),  # U = 0.E1 (E2 + 1) ... > exp(-1)
]


def _pf_outcomes(monkeypatch, forced: bool) -> list[bool]:
    """Coin of candidate 1 (one nat behind) with constructed bits, read off through the
    public permute_and_flip: the pick is pinned to the last head."""
    from dpfast.selection import permute_flip

    monkeypatch.setattr(permute_flip, "_uniform_spans",
                        lambda gen, counts: counts.astype(np.uint64) - np.uint64(1))
    out = []
    for t, (word, first, _) in enumerate(PF_CASES):
        src = _source(first, seed=400 + t)
        monkeypatch.setattr(permute_flip, "_draw_words",
                            lambda gen, n, w=word: np.array([0, w], np.uint64)[:n])
        monkeypatch.setattr(permute_flip, "_LazySource", lambda gen, s=src: (lambda: s))
        if forced:
            with sel.force_exact():
                out.append(sel.permute_and_flip([0.0, -1.0], 2.0, rng=KEY) == 1)
        else:
            out.append(sel.permute_and_flip([0.0, -1.0], 2.0, rng=KEY) == 1)
    return out


@pytest.mark.parametrize("forced", [False, True])
def test_permute_and_flip_coin_continues_from_the_kernel_bits(monkeypatch, forced) -> None:
    """Bernoulli(exp(-1)) coins decided from known bits: the 64-bit word alone where it
    settles the comparison, and the refinement words where the word is exp(-1)'s own
    leading 64 bits (the float certificate cannot decide those: the exact path does)."""
    assert 0 < E2 - 1 and E2 + 1 < ALL_ONES
    flags = np.empty(2, np.uint8)
    ks.pf_flips(np.array([0, E1], np.uint64), np.array([0.0, -1.0]), np.array([0.0]), 2,
                64, 1.0, False, flags)
    assert flags[1] == ks.PENDING
    assert _pf_outcomes(monkeypatch, forced) == [c[2] for c in PF_CASES]


def test_permute_and_flip_resampling_variant_is_caught(monkeypatch) -> None:
    from types import SimpleNamespace

    from dpfast.selection import permute_flip

    fresh = SimpleNamespace(u_less_exp=_exact.u_less_exp,
                            LazyUniform=lambda m, src: _exact.LazyUniform(src.next(), src))
    monkeypatch.setattr(permute_flip, "_exact", fresh)
    assert _pf_outcomes(monkeypatch, True) != [c[2] for c in PF_CASES]


# top-k: candidate 0's prefix is above the others'; 1 and 2 share W, their first refinement
# words differ, so the ordered top 2 is known exactly
TOPK_CASES = [([0, ALL_ONES, 5], [0, 1]), ([0, 5, ALL_ONES], [0, 2]),
              ([ALL_ONES, 0, 1], [0, 2]), ([7, 1 << 63, (1 << 63) - 1], [0, 1])]


def _topk_outcomes(monkeypatch, forced: bool) -> list[list[int]]:
    out = []
    for t, (first, _) in enumerate(TOPK_CASES):
        src = _source(first, seed=500 + t)
        w = np.array(ADJACENT, np.uint64)
        monkeypatch.setattr(noisy_max, "_draw_words", lambda gen, n, w=w: w[:n].copy())
        monkeypatch.setattr(noisy_max, "_LazySource", lambda gen, s=src: (lambda: s))
        if forced:
            with sel.force_exact():
                out.append(sel.top_k([0.0, 0.0, 0.0], 2, 1.0, rng=KEY).tolist())
        else:
            out.append(sel.top_k([0.0, 0.0, 0.0], 2, 1.0, rng=KEY).tolist())
    return out


@pytest.mark.parametrize("forced", [False, True])
def test_top_k_continuation_keeps_the_kernel_bits(monkeypatch, forced) -> None:
    assert _topk_outcomes(monkeypatch, forced) == [want for _, want in TOPK_CASES]


def test_top_k_resampling_variant_is_caught(monkeypatch) -> None:
    orig = noisy_max._exact_top

    def resampling(words, u_row, c, c_f, k, src, forced):
        fresh = np.array([src().next() for _ in range(words.shape[0])], np.uint64)
        return orig(fresh, u_row, c, c_f, k, src, forced)

    monkeypatch.setattr(noisy_max, "_exact_top", resampling)
    assert _topk_outcomes(monkeypatch, False) != [want for _, want in TOPK_CASES]
