"""RDP curves against exact mpmath references and dp_accounting; conversions; accountant."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast.accounting import events as ev
from dpfast.accounting.rdp import (
    DEFAULT_ORDERS,
    RdpAccountant,
    _orders_info,
    _sgm_epsilon,
    delta_from_rdp,
    epsilon_from_rdp,
    rdp_epsilons,
    subsampled_gaussian_rdp,
)

# --------------------------------------------------------------------------- references


def ref_sgm(q: float, sigma: float, alpha: float) -> mp.mpf:
    """Exact MTZ19 RDP by 25-digit quadrature of E_{N(0,s^2)}[(1-q+q e^{(2z-1)/2s^2})^a]."""
    with mp.workdps(25):
        q, s, a = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)
        z0 = s**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2

        def f(z):
            return mp.npdf(z, 0, s) * (1 - q + q * mp.exp((2 * z - 1) / (2 * s**2))) ** a

        pts = sorted({-mp.inf, -10 * s, mp.mpf(0), mp.mpf(1), z0, a, a + 10 * s, mp.inf})
        return mp.log(mp.quad(f, pts, maxdegree=10)) / (a - 1)


def ref_sgm_int(q: float, sigma: float, alpha: int) -> mp.mpf:
    """Exact MTZ19 RDP at an integer order: the finite binomial sum in 40 digits."""
    with mp.workdps(40):
        q, s = mp.mpf(q), mp.mpf(sigma)
        a_ = mp.fsum(
            mp.binomial(alpha, k) * (1 - q) ** (alpha - k) * q**k * mp.exp((k * k - k) / (2 * s**2))
            for k in range(alpha + 1)
        )
        return mp.log(a_) / (alpha - 1)


def rel_err(x: float, ref: mp.mpf) -> float:
    return float((mp.mpf(x) - ref) / ref)


FRAC_GRID = [
    (1e-5, 0.5), (1e-3, 0.8), (0.01, 1.1), (0.01, 0.3), (0.1, 2.0), (0.5, 1.0), (0.9, 5.0),
    (0.3, 100.0),
]


@pytest.mark.parametrize(("q", "sigma"), FRAC_GRID)
def test_subsampled_gaussian_fractional_orders_exact(q, sigma):
    orders = [1.01, 1.5, 2.5, 4.7, 10.9]
    got = subsampled_gaussian_rdp(q, sigma, orders)
    for a, x in zip(orders, got, strict=True):
        r = rel_err(x, ref_sgm(q, sigma, a))
        assert 0.0 <= r < 1e-10, (q, sigma, a, r)


@pytest.mark.parametrize(("q", "sigma"), FRAC_GRID)
def test_subsampled_gaussian_integer_orders_exact(q, sigma):
    orders = [2, 3, 8, 32, 256]
    got = subsampled_gaussian_rdp(q, sigma, orders)
    for a, x in zip(orders, got, strict=True):
        r = rel_err(x, ref_sgm_int(q, sigma, a))
        assert 0.0 <= r < 1e-10, (q, sigma, a, r)


def test_reference_quadrature_matches_finite_sum():
    for q, s, a in [(0.01, 1.1, 5), (0.3, 2.0, 3)]:
        assert abs(ref_sgm(q, s, a) / ref_sgm_int(q, s, a) - 1) < 1e-18


def test_subsampled_gaussian_edge_rates():
    o = [1.5, 2.0, 7.0]
    assert np.all(subsampled_gaussian_rdp(0.0, 1.0, o) == 0)
    np.testing.assert_allclose(subsampled_gaussian_rdp(1.0, 2.0, o), np.array(o) / 8, rtol=1e-14)
    assert np.all(subsampled_gaussian_rdp(1.0, 2.0, o) >= np.array(o) / 8)
    with pytest.raises(ValueError, match="sampling_rate"):
        subsampled_gaussian_rdp(1.5, 1.0, o)
    with pytest.raises(ValueError, match="noise_multiplier"):
        subsampled_gaussian_rdp(0.1, 0.0, o)
    with pytest.raises(ValueError, match="orders"):
        subsampled_gaussian_rdp(0.1, 1.0, [1.0, 2.0])
    with pytest.raises(ValueError, match="orders"):
        subsampled_gaussian_rdp(0.1, 1.0, [float("nan")])


# --------------------------------------------------------------------------- dp_accounting


@pytest.fixture(scope="module")
def dpa_rdp():
    return pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")


@pytest.mark.parametrize(("q", "sigma"), [(0.01, 1.1), (0.001, 0.8), (0.1, 3.0), (0.05, 0.6)])
def test_curve_vs_dp_accounting(dpa_rdp, q, sigma):
    o = np.array(DEFAULT_ORDERS)
    ours = subsampled_gaussian_rdp(q, sigma, o)
    theirs = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, o)
    is_int = o == np.floor(o)
    np.testing.assert_allclose(ours[is_int], theirs[is_int], rtol=1e-9, atol=0)
    # fractional: dp_accounting adds |binomial terms| and overestimates; dpfast lies between
    # the exact value (checked above) and dp_accounting's (up to dpfast's 1e-12 guard)
    assert np.all(ours[~is_int] <= theirs[~is_int] * (1 + 1e-11))


def test_fractional_between_exact_and_dp_accounting(dpa_rdp):
    for q, sigma, a in [(0.01, 1.1, 1.5), (0.01, 0.7, 3.3), (0.1, 2.0, 6.5)]:
        exact = ref_sgm(q, sigma, a)
        ours = subsampled_gaussian_rdp(q, sigma, [a])[0]
        theirs = dpa_rdp._compute_rdp_poisson_subsampled_gaussian(q, sigma, [a])[0]
        assert exact <= ours <= theirs
        assert theirs > exact * (1 + 1e-6)  # dp_accounting's overestimate is real here


DPSGD_GRID = [
    (0.01, 1.1, 10_000, 1e-5),
    (0.001, 0.8, 10_000, 1e-6),
    (0.1, 3.0, 1_000, 1e-5),
    (0.004, 1.0, 100_000, 1e-5),
    (0.3, 20.0, 10, 1e-5),
    (0.02, 0.7, 500, 1e-7),
    (0.5, 5.0, 50, 1e-3),
]


@pytest.mark.parametrize(("q", "sigma", "steps", "delta"), DPSGD_GRID)
def test_epsilon_vs_dp_accounting(q, sigma, steps, delta):
    dpa = pytest.importorskip("dp_accounting")
    acct = dpa.rdp.RdpAccountant()
    acct.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)
    e_theirs, o_theirs = acct.get_epsilon_and_optimal_order(delta)
    mine = RdpAccountant().compose(ev.PoissonSampled(ev.Gaussian(sigma), q), steps)
    e_ours, o_ours = mine.get_epsilon_and_order(delta)
    assert e_ours <= e_theirs * (1 + 1e-9)
    if float(o_theirs).is_integer() and float(o_ours).is_integer():
        assert e_ours == pytest.approx(e_theirs, rel=1e-9)
    # the pruned hot path gives the same answer as the full curve
    e_fast, o_fast = _sgm_epsilon(q, sigma, steps, delta, _orders_info(DEFAULT_ORDERS))
    assert e_fast == pytest.approx(e_ours, rel=1e-12) and o_fast == o_ours


def test_conversions_vs_dp_accounting(dpa_rdp):
    rng = np.random.default_rng(7)
    o = np.array(DEFAULT_ORDERS)
    for _ in range(20):
        rdp = np.sort(rng.uniform(0, 5, size=o.size)) * rng.uniform(0.01, 1)
        delta = 10 ** rng.uniform(-9, -2)
        e1, a1 = epsilon_from_rdp(o, rdp, delta)
        e2, a2 = dpa_rdp.compute_epsilon(o, rdp, delta)
        assert e1 == pytest.approx(e2, rel=1e-12, abs=1e-14) and e1 >= e2
        eps = rng.uniform(0.1, 10)
        d1, _ = delta_from_rdp(o, rdp, eps)
        d2, _ = dpa_rdp.compute_delta(o, rdp, eps)
        assert d1 == pytest.approx(d2, rel=1e-10) and d1 >= d2


def test_conversion_edge_cases():
    o = [2.0, 4.0]
    assert epsilon_from_rdp(o, [0.0, 0.0], 0.0) == (0.0, 2.0)
    assert epsilon_from_rdp(o, [0.1, 0.2], 0.0)[0] == math.inf
    assert epsilon_from_rdp(o, [math.inf, math.inf], 1e-5)[0] == math.inf
    # total-variation case: tiny divergence, large delta -> epsilon 0
    assert epsilon_from_rdp(o, [1e-8, 2e-8], 0.1)[0] == 0.0
    with pytest.raises(ValueError, match="delta"):
        epsilon_from_rdp(o, [0.1, 0.2], 1.5)
    with pytest.raises(ValueError, match="rdp"):
        epsilon_from_rdp(o, [-0.1, 0.2], 1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        delta_from_rdp(o, [0.1, 0.2], float("nan"))


# --------------------------------------------------------------------------- other curves


def test_gaussian_and_zcdp_curves():
    o = np.array([1.5, 2.0, 10.0])
    np.testing.assert_allclose(rdp_epsilons(ev.Gaussian(2.0), o), o / 8, rtol=1e-14)
    np.testing.assert_allclose(rdp_epsilons(ev.DiscreteGaussian(2.0), o), o / 8, rtol=1e-14)
    np.testing.assert_allclose(rdp_epsilons(ev.Zcdp(0.3), o), 0.3 * o, rtol=1e-14)
    assert np.all(rdp_epsilons(ev.Gaussian(2.0), o) >= o / 8)


@pytest.mark.parametrize("b", [0.05, 0.5, 2.0, 1e4])
def test_laplace_curve_exact(b):
    o = [1.001, 1.1, 2.0, 7.5, 64.0]
    got = rdp_epsilons(ev.Laplace(b), o)
    with mp.workdps(50):
        for a, x in zip(o, got, strict=True):
            A, B = mp.mpf(a), 1 / mp.mpf(b)
            ref = mp.log(A / (2 * A - 1) * mp.exp((A - 1) * B) + (A - 1) / (2 * A - 1)
                         * mp.exp(-A * B)) / (A - 1)
            assert 0 <= rel_err(x, ref) < 1e-12


@pytest.mark.parametrize(("eps", "k"), [(1e-4, 2), (0.5, 2), (3.0, 2), (1.0, 5), (40.0, 3)])
def test_randomized_response_and_pure_curves_exact(eps, k):
    o = [1.01, 1.5, 3.0, 20.0, 1024.0]
    got = rdp_epsilons(ev.RandomizedResponse(eps, k), o)
    with mp.workdps(60):
        E = mp.mpf(eps)
        for a, x in zip(o, got, strict=True):
            A = mp.mpf(a)
            ref = mp.log((mp.exp(A * E) + mp.exp((1 - A) * E) + k - 2) / (mp.exp(E) + k - 1))
            ref = min(ref / (A - 1), E)
            assert 0 <= rel_err(x, ref) < 1e-12
    if k == 2:
        # pure eps-DP bound = binary RR = Bun & Steinke's sinh formula
        pure = rdp_epsilons(ev.Epsilon(eps), o)
        with mp.workdps(60):
            E = mp.mpf(eps)
            for a, x in zip(o, pure, strict=True):
                A = mp.mpf(a)
                ref = mp.log((mp.sinh(A * E) - mp.sinh((A - 1) * E)) / mp.sinh(E)) / (A - 1)
                assert 0 <= rel_err(x, min(ref, E)) < 1e-12


def test_randomized_response_vs_dp_accounting(dpa_rdp):
    for eps, k in [(0.5, 2), (2.0, 7)]:
        p = k / (math.exp(eps) + k - 1)
        o = [1.5, 4.0, 32.0]
        theirs = [dpa_rdp._randomized_response_rdp_replace_one(p, k, a) for a in o]
        np.testing.assert_allclose(rdp_epsilons(ev.RandomizedResponse(eps, k), o), theirs,
                                   rtol=1e-10)


def test_discrete_laplace_is_exact_shift_one():
    t = 1.7
    o = [1.5, 3.0, 12.0]
    got = rdp_epsilons(ev.DiscreteLaplace(t), o)
    with mp.workdps(40):
        T = mp.mpf(t)
        c = (1 - mp.exp(-1 / T)) / (1 + mp.exp(-1 / T))

        def p(x):
            return c * mp.exp(-abs(x) / T)

        for a, x in zip(o, got, strict=True):
            s = mp.nsum(lambda y, a=a: p(y) ** a * p(y - 1) ** (1 - a), [-mp.inf, mp.inf])
            assert 0 <= rel_err(x, mp.log(s) / (a - 1)) < 1e-12


def test_exponential_curve():
    o = np.array([1.5, 2.0, 100.0])
    got = rdp_epsilons(ev.Exponential(0.4), o)
    expect = np.minimum(o * 0.4**2 / 8, rdp_epsilons(ev.Epsilon(0.4), o))
    np.testing.assert_allclose(got, expect, rtol=1e-14)
    assert got[0] == pytest.approx(1.5 * 0.02, rel=1e-14) and got[2] < 0.4


def test_sampling_without_replacement_theorem9():
    sigma, m, n = 1.5, 50, 1000
    o = [2.0, 3.0, 5.0, 2.5]
    got = rdp_epsilons(ev.SampledWithoutReplacement(ev.Gaussian(sigma), m, n), o)
    g = mp.mpf(m) / n

    def k_int(a):  # WBK19 Theorem 9 with eps(j) = j / (2 sigma^2), eps(inf) = inf
        with mp.workdps(40):
            e = [None, None] + [mp.mpf(j) / (2 * sigma**2) for j in range(2, a + 1)]
            tot = 1 + g**2 * mp.binomial(a, 2) * min(4 * (mp.exp(e[2]) - 1), 2 * mp.exp(e[2]))
            tot += mp.fsum(g**j * mp.binomial(a, j) * mp.exp((j - 1) * e[j]) * 2
                           for j in range(3, a + 1))
            return mp.log(tot)

    refs = [k_int(2), k_int(3) / 2, k_int(5) / 4, (k_int(2) + k_int(3)) / 2 / 1.5]
    for x, r in zip(got, refs, strict=True):
        assert 0 <= rel_err(x, r) < 1e-12
    # and it amplifies: far below the unsampled Gaussian
    assert np.all(got < np.array(o) / (2 * sigma**2))


# --------------------------------------------------------------------------- accountant


def test_accountant_composition_rules():
    g = ev.PoissonSampled(ev.Gaussian(1.2), 0.02)
    a = RdpAccountant().compose(g, 100)
    b = RdpAccountant().compose(ev.SelfComposed(g, 100))
    c = RdpAccountant()
    for _ in range(4):
        c.compose(ev.Composed([g] * 25))
    for other in (b, c):
        np.testing.assert_allclose(other.rdp, a.rdp, rtol=1e-13)
        assert other.get_epsilon(1e-5) == pytest.approx(a.get_epsilon(1e-5), rel=1e-12)
    assert RdpAccountant().compose(g, 0).get_epsilon(1e-5) == 0.0
    # composed Gaussians on one subsample = one Gaussian with sigma_eff
    two = ev.PoissonSampled(ev.Composed([ev.Gaussian(1.0), ev.Gaussian(1.0)]), 0.1)
    one = ev.PoissonSampled(ev.Gaussian(1 / math.sqrt(2)), 0.1)
    np.testing.assert_allclose(rdp_epsilons(two), rdp_epsilons(one), rtol=1e-12)
    assert np.all(rdp_epsilons(two) >= rdp_epsilons(one))


def test_accountant_mixes_approximate_events():
    a = RdpAccountant().compose(ev.Gaussian(3.0), 2).compose(ev.EpsilonDelta(0.2, 1e-7), 3)
    base = RdpAccountant().compose(ev.Gaussian(3.0), 2)
    e = a.get_epsilon(1e-5)
    assert e >= base.get_epsilon(1e-5 - 3e-7) + 0.6
    assert e == pytest.approx(base.get_epsilon(1e-5 - 3e-7) + 0.6, rel=1e-12)
    assert a.get_epsilon(2e-7) == math.inf
    assert a.get_delta(0.1) == 1.0
    assert a.get_delta(e) <= 1e-5 * (1 + 1e-6)


def test_accountant_errors_leave_state_unchanged():
    a = RdpAccountant().compose(ev.Gaussian(2.0))
    before = a.rdp
    with pytest.raises(ValueError, match="PoissonSampled"):
        a.compose(ev.Composed([ev.Gaussian(1.0), ev.PoissonSampled(ev.Laplace(1.0), 0.1)]))
    np.testing.assert_array_equal(a.rdp, before)
    with pytest.raises(TypeError, match="count"):
        a.compose(ev.Gaussian(1.0), 1.5)
    with pytest.raises(ValueError, match="count"):
        a.compose(ev.Gaussian(1.0), -1)
    with pytest.raises(TypeError, match="event"):
        a.compose("gaussian")
    with pytest.raises(ValueError, match="delta"):
        a.get_epsilon(-1e-5)
    with pytest.raises(ValueError, match="orders"):
        RdpAccountant(orders=[0.5, 2.0])
    assert np.all(rdp_epsilons(ev.EpsilonDelta(1.0, 1e-6), [2.0]) == math.inf)


@settings(derandomize=True, max_examples=40)
@given(
    q=st.floats(1e-4, 0.9),
    s1=st.floats(0.4, 20.0),
    ratio=st.floats(1.01, 3.0),
)
def test_more_noise_never_costs_more(q, s1, ratio):
    o = [1.5, 2.0, 3.5, 16.0]
    c1 = subsampled_gaussian_rdp(q, s1, o)
    c2 = subsampled_gaussian_rdp(q, s1 * ratio, o)
    assert np.all(c2 <= c1 * (1 + 1e-12))
    assert np.all(np.diff(c1) >= -1e-12 * c1[1:])  # non-decreasing in the order
