"""Goodness of fit of the exact samplers against exact pmfs (mpmath), fixed key.

Each case: chi-square over bins with at least ~50 expected counts (merged by exact
quantiles), plus z-tests of the mean and of the second moment against exact values.
With 10^6 samples a 1% error in the scale moves the second moment by ~2%, i.e. > 10
standard errors, so the tests have power; the forced exact-continuation path is tested
the same way with 10^5 samples (~3-4 standard errors for a 1% scale error).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from scipy import stats

import dpfast
from dpfast.noise import _exact

from .conftest import KEY


@pytest.fixture(autouse=True)
def _mp_precision():
    """This module's mpmath precision, for its tests only (a module-level assignment
    would leak into every test module collected after it)."""
    with mp.workprec(113):
        yield


N = 1_000_000
N_FORCED = 100_000
P_MIN = 1e-4  # p-value threshold for each test (deterministic: fixed key)


# ----------------------------------------------------------------------------- exact laws
class DiscreteLaplaceLaw:
    """P(k) = (1-q)/(1+q) q^|k|, q = exp(-1/t), closed forms."""

    def __init__(self, t: Fraction) -> None:
        self.q = mp.exp(-1 / mp.mpf(t.numerator) * t.denominator)
        q = self.q
        self.var = 2 * q / (1 - q) ** 2
        # E X^4 = 2(1-q)/(1+q) * sum k^4 q^k, sum k^4 q^k = q(1+q)(1+10q+q^2)/(1-q)^5
        self.m4 = 2 * (1 - q) / (1 + q) * q * (1 + q) * (1 + 10 * q + q * q) / (1 - q) ** 5

    def cdf(self, k: int) -> mp.mpf:  # P(X <= k)
        q = self.q
        if k >= 0:
            return 1 - q ** (k + 1) / (1 + q)
        return q ** (-k) / (1 + q)


class DiscreteGaussianLaw:
    """P(k) ∝ exp(-k^2 / (2 sigma^2)) by direct summation (tails beyond 40 sigma are
    below 1e-300 relative)."""

    def __init__(self, sigma: Fraction) -> None:
        s2 = mp.mpf(sigma.numerator) ** 2 / mp.mpf(sigma.denominator) ** 2
        self.kmax = int(40 * float(sigma)) + 2
        if float(sigma) >= 50:
            # Poisson summation: the j != 0 terms are O(exp(-2 pi^2 sigma^2)) < 1e-20000
            self._norm = mp.sqrt(2 * mp.pi * s2)
            self.var = s2
            self.m4 = 3 * s2 * s2
            self._s2 = s2
            self._direct = False
            return
        ks = range(-self.kmax, self.kmax + 1)
        w = [mp.exp(-mp.mpf(k * k) / (2 * s2)) for k in ks]
        z = mp.fsum(w)
        self._pmf = {k: wi / z for k, wi in zip(ks, w)}
        self.var = mp.fsum(k * k * p for k, p in self._pmf.items())
        self.m4 = mp.fsum(k ** 4 * p for k, p in self._pmf.items())
        self._direct = True

    def cdf(self, k: int) -> mp.mpf:
        if self._direct:
            return mp.fsum(p for j, p in self._pmf.items() if j <= k)
        raise NotImplementedError

    def bin_probs(self, edges: list[int]) -> list[mp.mpf]:
        """P(edges[i] <= X < edges[i+1]) for interior bins (large sigma: summed terms)."""
        s2 = self._s2
        out = []
        for a, b in zip(edges[:-1], edges[1:]):
            terms = np.arange(a, b, dtype=np.float64)
            # float64 terms, summed exactly enough (relative 1e-15) with fsum
            vals = np.exp(-terms * terms / (2 * float(s2)))
            out.append(mp.mpf(math.fsum(vals)) / self._norm)
        return out


def _quantile_edges(law, lo: int, hi: int, nbins: int) -> list[int]:
    """Integer bin edges at (approximately) equal exact probability."""
    targets = [mp.mpf(i) / nbins for i in range(1, nbins)]
    edges = [lo]
    k = lo
    for tq in targets:
        a, b = max(k, lo), hi
        while a < b:  # smallest k with cdf(k) >= tq
            m = (a + b) // 2
            if law.cdf(m) >= tq:
                b = m
            else:
                a = m + 1
        if a + 1 > edges[-1]:
            edges.append(a + 1)
        k = a
    edges.append(hi + 1)
    return edges


def check_fit(x: np.ndarray, law, *, nbins: int = 60, bins_from_cdf: bool = True) -> None:
    n = x.size
    sd = float(mp.sqrt(law.var))
    span = int(12 * sd) + 3
    if bins_from_cdf:
        edges = _quantile_edges(law, -span, span, nbins)
        cdf = [law.cdf(e - 1) for e in edges]
        probs = [cdf[i + 1] - cdf[i] for i in range(len(edges) - 1)]
        probs[0] += cdf[0]
        probs[-1] += 1 - cdf[-1]
    else:
        inner = np.unique(np.round(np.linspace(-4 * sd, 4 * sd, nbins + 1)).astype(np.int64))
        edges = [int(e) for e in inner]
        probs = law.bin_probs(edges)
        left = law.bin_probs([-span, edges[0]])[0]
        right = law.bin_probs([edges[-1], span])[0]
        probs[0] += left + (1 - sum(probs) - left - right) / 2
        probs[-1] += right + 0  # remaining mass beyond 12 sd is < 1e-30
    p = np.array([float(v) for v in probs])
    p /= p.sum()
    idx = np.searchsorted(np.array(edges[1:-1]), x, side="right")
    counts = np.bincount(idx, minlength=len(p))
    # merge bins with small expectation
    exp_counts = p * n
    keep_c, keep_e, acc_c, acc_e = [], [], 0, 0.0
    for c, e in zip(counts, exp_counts):
        acc_c += c
        acc_e += e
        if acc_e >= 50:
            keep_c.append(acc_c)
            keep_e.append(acc_e)
            acc_c, acc_e = 0, 0.0
    if acc_e > 0:
        keep_c[-1] += acc_c
        keep_e[-1] += acc_e
    if len(keep_c) >= 2:
        pv = stats.chisquare(keep_c, np.array(keep_e) * (n / sum(keep_e))).pvalue
        assert pv > P_MIN, f"chi-square p = {pv}"
    var = float(law.var)
    xf = x.astype(np.float64)
    z_mean = xf.mean() / math.sqrt(var / n)
    assert abs(z_mean) < 4.5, f"mean z = {z_mean}"
    m2 = np.mean(xf * xf)
    z_m2 = (m2 - var) / math.sqrt(max(float(law.m4) - var * var, 1e-300) / n)
    assert abs(z_m2) < 4.5, f"second moment z = {z_m2} (m2={m2}, exact {var})"


# ----------------------------------------------------------------------------- tests
# 100, 1000, 5000: wide bins with a direct table (the offset in the proposal's first half);
# 10 * 2^36: the float grid's default scale (one-word proposals with the fewest bits);
# 2^45: two-word proposals (dpfast.noise._kernel_table.layout)
LAPLACE_SCALES = [0.1, 0.5, 1.0, 3.7, 100.0, 1000.0, 5000.0, 1e6, Fraction(7, 3),
                  10 * 2.0**36, 2.0**45]


@pytest.mark.parametrize("scale", LAPLACE_SCALES, ids=str)
def test_discrete_laplace_fit(scale) -> None:
    x = dpfast.default_rng(KEY).discrete_laplace(scale, N)
    check_fit(x, DiscreteLaplaceLaw(Fraction(scale)))


GAUSS_SIGMAS = [0.3, 1.0, 2.3, 100.0, 1000.0, 1e4]


@pytest.mark.parametrize("sigma", GAUSS_SIGMAS, ids=str)
def test_discrete_gaussian_fit(sigma) -> None:
    x = dpfast.default_rng(KEY).discrete_gaussian(sigma, N)
    law = DiscreteGaussianLaw(Fraction(sigma))
    check_fit(x, law, bins_from_cdf=sigma < 50)


@pytest.mark.parametrize("mode,scale,per_cell", [
    (1, 0.7, False), (1, Fraction(2, 3), False), (1, 3.7, True), (1, 100.0, True),
    (2, 100.0, True), (2, 1e6, True),  # geometric kernel (scalar scale < 1, or per-cell)
    (3, 3.7, False), (3, Fraction(7, 3), False),  # envelope table (scalar scale >= 1)
    (3, 100.0, False), (3, Fraction(1000, 3), False), (3, 1e6, False),
], ids=str)
def test_discrete_laplace_exact_continuation_fit(mode, scale, per_cell) -> None:
    """Scalar scales >= 1 run the envelope-table sampler, the others the geometric one."""
    param = np.full(N_FORCED, float(scale)) if per_cell else scale
    with _exact.force_exact(mode):
        x = dpfast.default_rng(KEY).discrete_laplace(param, N_FORCED)
    check_fit(x, DiscreteLaplaceLaw(Fraction(scale)), nbins=30)


@pytest.mark.parametrize("scale", [0.1, 3.7, 100.0, 1e6])
def test_discrete_laplace_per_cell_kernel_fit(scale) -> None:
    x = dpfast.default_rng(KEY).discrete_laplace(np.full(N, scale), N)
    check_fit(x, DiscreteLaplaceLaw(Fraction(scale)))


@pytest.mark.parametrize("mode,sigma,per_cell", [
    (1, 2.3, True), (3, 1.0, True), (3, 100.0, True), (2, 100.0, True),  # CKS20 kernel
    (3, 2.3, False), (3, 100.0, False), (3, 1e4, False),  # envelope-table kernel
], ids=str)
def test_discrete_gaussian_exact_continuation_fit(mode, sigma, per_cell) -> None:
    """Scalar sigma runs the envelope-table sampler, per-cell sigma the CKS20 kernel."""
    param = np.full(N_FORCED, sigma) if per_cell else sigma
    with _exact.force_exact(mode):
        x = dpfast.default_rng(KEY).discrete_gaussian(param, N_FORCED)
    check_fit(x, DiscreteGaussianLaw(Fraction(sigma)), nbins=30, bins_from_cdf=sigma < 50)


@pytest.mark.parametrize("sigma", [0.3, 2.3, 100.0])
def test_discrete_gaussian_per_cell_kernel_fit(sigma) -> None:
    x = dpfast.default_rng(KEY).discrete_gaussian(np.full(N, sigma), N)
    check_fit(x, DiscreteGaussianLaw(Fraction(sigma)), bins_from_cdf=sigma < 50)


@pytest.mark.parametrize("law,param", [("gauss", 0.5), ("gauss", 1.0), ("laplace", 0.5),
                                       ("laplace", 0.2)])
def test_envelope_tail_item_is_exact(law, param) -> None:
    """The tail item (|k| >= M, probability < 1e-14 per sample) is finished in Python:
    conditioned on acceptance it must follow w(m) restricted to m >= M.  The restart
    after a rejection is a fresh exact sample, so here we look at accepted tails only."""
    from dpfast.noise import _drive, _envelope

    tab = _envelope.table(law, Fraction(param))
    mt = tab.m_tail
    gen = dpfast.default_rng(KEY)
    ex = _drive._SlowStream(gen).exact
    restart = 10**9
    ex.discrete_gaussian = lambda s: restart  # mark restarts (instance attributes)
    ex.discrete_laplace = lambda t: restart
    vals = [_envelope.finish_tail(ex, tab, 0) for _ in range(4000)]
    acc = np.array([v for v in vals if v != restart])
    assert acc.size > 100 and np.all(acc >= mt)  # c_A can be small: tails are rare
    # exact conditional law: P(m) ∝ w(m) = exp(-x(m)), m >= M
    ms = np.arange(mt, mt + 12)
    # mpmath takes no Fraction: numerator / denominator
    dx = [tab.x(int(m)) - tab.x(mt) for m in ms]
    w = np.array([float(mp.exp(-mp.mpf(d.numerator) / d.denominator)) for d in dx])
    w /= w.sum()
    counts = np.array([(acc == m).sum() for m in ms])
    keep = w * acc.size >= 5
    exp_c = w[keep] * acc.size
    obs = counts[keep]
    if keep.sum() >= 2:
        assert stats.chisquare(obs, exp_c * obs.sum() / exp_c.sum()).pvalue > P_MIN
    else:  # one dominant value: binomial z-test of its frequency
        z = (obs[0] - w[0] * acc.size) / math.sqrt(acc.size * w[0] * (1 - w[0]) + 1e-12)
        assert abs(z) < 4.5


@pytest.mark.parametrize("gamma", [0.0, 0.25, 1.0, 2.5, Fraction(1, 3), 7.0])
def test_bernoulli_exp_rate(gamma) -> None:
    g = dpfast.default_rng(KEY)
    p = float(mp.exp(-mp.mpf(Fraction(gamma).numerator) / Fraction(gamma).denominator))
    for forced in (False, True):
        n = N_FORCED if forced else N
        if forced:
            with _exact.force_exact(3):
                b = g.bernoulli_exp(gamma, n)
        else:
            b = g.bernoulli_exp(gamma, n)
        assert b.dtype == np.bool_
        if p == 1.0:
            assert b.all()
            continue
        z = (b.mean() - p) / math.sqrt(p * (1 - p) / n)
        assert abs(z) < 4.5, (gamma, forced, z)


def test_bernoulli_exp_array_parameter() -> None:
    gam = np.array([0.0, 0.5, 3.0])
    b = dpfast.default_rng(KEY).bernoulli_exp(gam, (200_000, 3))
    rates = b.mean(axis=0)
    assert rates[0] == 1.0
    assert abs(rates[1] - math.exp(-0.5)) < 5e-3
    assert abs(rates[2] - math.exp(-3.0)) < 3e-3


def test_per_cell_scales() -> None:
    scales = np.array([1.0, 10.0, 1000.0])
    x = dpfast.default_rng(KEY).discrete_laplace(scales, (300_000, 3))
    for j, s in enumerate(scales):
        law = DiscreteLaplaceLaw(Fraction(s))
        v = np.mean(x[:, j].astype(float) ** 2)
        assert abs(v / float(law.var) - 1) < 0.03
    y = dpfast.default_rng(KEY).discrete_gaussian([0.5, 50.0], (200_000, 2))
    assert abs(y[:, 1].std() / 50.0 - 1) < 0.01


def test_parameter_validation() -> None:
    g = dpfast.default_rng(KEY)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="scale"):
            g.discrete_laplace(bad, 3)
        with pytest.raises(ValueError, match="sigma"):
            g.discrete_gaussian(bad, 3)
    with pytest.raises(TypeError, match="scale"):
        g.discrete_laplace(True, 3)
    with pytest.raises(TypeError, match="scale"):
        g.discrete_laplace(np.array([1 + 1j]), 3)
    with pytest.raises(ValueError, match="gamma"):
        g.bernoulli_exp(-0.5, 3)
    with pytest.raises(ValueError, match="scale"):
        g.discrete_laplace(2.0 ** 60, 3)
    with pytest.raises(ValueError, match="size"):
        g.discrete_laplace(np.ones(3), (2, 2))


# ----------------------------------------------------------------------------- exact core
@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(7, 2),
                               Fraction(123, 7), Fraction(2**52 + 1, 2**52), Fraction(60)])
def test_exp_neg_bounds_enclose(x: Fraction) -> None:
    with mp.workprec(400):
        true = mp.exp(-mp.mpf(x.numerator) / x.denominator)
        for prec in (64, 128, 200):
            lo, hi = _exact.exp_neg_bounds(x, prec)
            assert lo <= true * 2 ** prec <= hi
            assert hi - lo <= 4


def test_exact_comparison_refines_until_decided() -> None:
    # U's first 64 bits straddle exp(-1) so the comparison must draw more bits
    c = mp.exp(-1)
    m = int(mp.floor(c * 2**64))
    words = iter([0, 2**64 - 1])
    src = _exact.WordSource(lambda n: np.array([next(words)], dtype=np.uint64), batch=1)
    u = _exact.LazyUniform(m, src)
    # m/2^64 <= c < (m+1)/2^64: refining with all-zero bits puts U just above m/2^64
    assert _exact.u_less_exp(u, Fraction(1)) is True
    assert u.n > 64


@pytest.mark.parametrize("law,params", [
    ("laplace", [32, 33.3, 100, 1000, 12345.678, 2.0**20 + 1, 2.0**45]),
    ("gauss", [0.3, 1, 2.7, 10, 77.7, 1000, 2.0**30 + 3]),
])
def test_envelope_factor_relative_error_every_bin(law, params) -> None:
    """Hardening item 3: the kernel certifies U < f exp(-g) assuming each bin's factor
    f = w(a) / ê'_i is known to 2^-52 *relative*; far-out bins (tiny w) must be too."""
    from dpfast.noise import _envelope

    with mp.workprec(400):
        for prm in params:
            tab = _envelope.table(law, Fraction(prm))
            for i in range(tab.nb):
                x = tab.x(i << tab.p)
                exact = mp.exp(-mp.mpf(x.numerator) / x.denominator) / (
                    mp.mpf(tab.ehat[i].numerator) / tab.ehat[i].denominator)
                rel = abs(mp.mpf(float(tab.f[i])) - exact) / exact
                assert rel <= mp.mpf(2) ** -52, (law, prm, i, float(rel))
