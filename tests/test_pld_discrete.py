"""PldAccountant on the discrete Gaussian and discrete Laplace (exact atomic pairs).

References: the exact hockey-stick divergence of the discrete Gaussian pair (CKS20,
Thm. 7: a sum over the integers, in mpmath), the composed pair (the loss is a function of
the sum of the outputs: positive convolutions in float64, each entry to ~1e-13 relative),
the composition with a continuous Gaussian (Balle & Wang's closed form per atom), the
discrete Laplace pair (a finite sum over its D + 1 loss values) and dp_accounting's
``PLDAccountant`` (pessimistic, interval 1e-4).
"""

from __future__ import annotations

import functools
import json
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from dpfast import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from dpfast.accounting import PldAccountant, RdpAccountant, ZcdpAccountant
from dpfast.accounting import events as ev
from dpfast.accounting.pld import UnsupportedEventError
from dpfast.accounting.pld import _discrete as dz
from dpfast.accounting.pld import _pmf as pm
from dpfast.accounting.pld._lower import connect_dots_lower
from dpfast.budget.records import deserialize_event, serialize_event


@pytest.fixture(autouse=True)
def _mp_precision():
    with mpmath.workdps(40):
        yield


# ----------------------------------------------------------------- exact references


@functools.cache
def _dg_exact_pair(m: float, sens: int) -> tuple[list, list, list]:
    """Losses (decreasing), P- and Q-masses of N_Z(0, s^2) vs N_Z(sens, s^2), s = m sens,
    at x = -n .. n + sens (the rest: below 1e-40 of the total), in mpmath."""
    s = mpmath.mpf(m) * sens
    n = int(14 * float(s)) + 2 * sens + 10
    w = [mpmath.exp(-mpmath.mpf(x) ** 2 / (2 * s * s)) for x in range(-n - sens, n + sens + 1)]
    z = mpmath.fsum(w[sens:-sens])  # x in [-n, n]
    xs = range(-n, n + sens + 1)
    off = n + sens  # w[i] is the weight of x = i - off
    losses = [(sens * sens - 2 * sens * mpmath.mpf(x)) / (2 * s * s) for x in xs]
    return losses, [w[x + off] / z for x in xs], [w[x - sens + off] / z for x in xs]


def _dg_delta_exact(m: float, sens: int, eps: float) -> float:
    """sum_x (P(x) - e^eps Q(x))_+ (CKS20, Thm. 7's pair), exactly (40 digits)."""
    _, p, q = _dg_exact_pair(m, sens)
    e = mpmath.exp(eps)
    return float(mpmath.fsum(max(a - e * b, 0) for a, b in zip(p, q, strict=True)))


def _dg_epsilon_exact(m: float, sens: int, delta: float) -> float:
    """The smallest eps >= 0 with delta(eps) <= delta: on [l_c, l_(c-1)) the outputs with
    loss > eps are the first c, delta = A_c - e^eps B_c, inverted in closed form."""
    losses, p, q = _dg_exact_pair(m, sens)
    a = b = mpmath.mpf(0)
    for c in range(1, len(losses)):  # from the top interval down
        a, b = a + p[c - 1], b + q[c - 1]
        floor = max(losses[c], 0)
        if a > delta:  # delta(eps) = delta inside or below this interval
            e = mpmath.log((a - delta) / b)
            if e >= floor:
                return float(e)
        if floor == 0:
            return 0.0
    return 0.0


def _dg_pmf(m: float, sens: int) -> tuple[np.ndarray, int]:
    s = m * sens
    n = int(14 * s) + 2
    x = np.arange(-n, n + 1, dtype=np.float64)
    w = np.exp(-x * x / (2 * s * s))
    return w / math.fsum(w), n


def _dg_composed_delta(m: float, sens: int, k: int, eps: float) -> float:
    """Exact delta of k discrete Gaussians: the loss is (k D^2 - 2 D S) / (2 s^2) with S
    the sum of the outputs, P(S) the k-fold convolution, Q(S) = P(S - k D)."""
    p, _ = _dg_pmf(m, sens)
    out = np.ones(1)
    for _ in range(k):
        out = np.convolve(out, p)  # positive terms: relative accuracy
    q = np.zeros_like(out)
    q[k * sens:] = out[: out.size - k * sens]
    d = out - math.exp(eps) * q
    return math.fsum(d[d > 0.0])


def _dlap_delta_exact(m: float, sens: int, eps: float, count: int = 1) -> float:
    """Exact delta of ``count`` discrete Laplace releases of a shift ``sens`` (the loss
    values of one are (D - 2x) / t, x = 0..D; ``count`` of them by enumeration)."""
    t = mpmath.mpf(m) * sens
    r = mpmath.exp(-1 / t)
    masses = [(1 - r) / (1 + r) * r**x for x in range(sens + 1)]
    masses[0], masses[-1] = 1 / (1 + r), r**sens / (1 + r)
    dist = {0: mpmath.mpf(1)}  # sum of (D - 2x) -> probability
    for _ in range(count):
        nxt: dict[int, mpmath.mpf] = {}
        for k, v in dist.items():
            for x, px in enumerate(masses):
                nxt[k + sens - 2 * x] = nxt.get(k + sens - 2 * x, 0) + v * px
        dist = nxt
    return float(mpmath.fsum(v * (1 - mpmath.exp(eps - k / t))
                             for k, v in dist.items() if k / t > eps))


# ----------------------------------------------------------------- the discrete Gaussian


@pytest.mark.parametrize(("m", "sens"), [(0.5, 1), (1.0, 1), (2.0, 3), (7.0, 3), (0.8, 10),
                                         (3.0, 10), (20.0, 10)])
def test_discrete_gaussian_single_event_is_exact(m: float, sens: int) -> None:
    acct = PldAccountant().compose(ev.DiscreteGaussian(m, sensitivity=sens))
    for eps in [0.0, 0.1, 0.5, 1.0, 2.0, 4.0]:
        exact = _dg_delta_exact(m, sens, eps)
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact <= up, (eps, lo, exact, up)
        assert up <= exact * (1 + 1e-6) + 2e-12, (eps, exact, up)
    delta = 1e-6
    eps_exact = _dg_epsilon_exact(m, sens, delta)
    assert _dg_delta_exact(m, sens, eps_exact) == pytest.approx(delta, rel=1e-9)
    lo, up = acct.get_epsilon_bounds(delta)
    assert lo <= eps_exact * (1 + 1e-9) and eps_exact <= up * (1 + 1e-9)
    assert up <= eps_exact * (1 + 1e-6) + 1e-9


@pytest.mark.parametrize(("m", "sens", "k"), [(0.5, 1, 5), (2.0, 1, 5), (1.0, 3, 5),
                                              (2.0, 1, 100), (1.0, 3, 100), (5.0, 2, 100)])
def test_discrete_gaussian_composition_against_convolution(m: float, sens: int, k: int
                                                           ) -> None:
    acct = PldAccountant().compose(ev.DiscreteGaussian(m, sensitivity=sens), k)
    for eps in [0.5, 2.0, 5.0, 20.0]:
        exact = _dg_composed_delta(m, sens, k, eps)
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact * (1 + 1e-12) + 1e-300 and exact <= up, (eps, lo, exact, up)
        assert up <= exact * (1 + 1e-4) + 1e-10, (eps, exact, up)
    lo, up = acct.get_epsilon_bounds(1e-6)
    assert 0.0 <= lo <= up


def test_discrete_gaussian_off_lattice_grid_is_pessimistic() -> None:
    # a user grid that does not divide the loss lattice: every atom is split between two
    # grid points (connect the dots) and rounded down for the lower bound
    m, sens, k = 1.3, 2, 20
    for dx in (0.0137, 0.11):
        acct = PldAccountant(dx).compose(ev.DiscreteGaussian(m, sensitivity=sens), k)
        for eps in [1.0, 3.0, 6.0]:
            exact = _dg_composed_delta(m, sens, k, eps)
            lo, up = acct.get_delta_bounds(eps)
            assert lo <= exact <= up, (dx, eps, lo, exact, up)
            assert up <= exact * 1.05 + 1e-10
        lo_e, up_e = acct.get_epsilon_bounds(1e-5)
        assert lo_e <= up_e <= lo_e + 2 * k * dx


def test_discrete_gaussian_composed_with_a_gaussian() -> None:
    # no common lattice: the automatic grid; exact reference: one discrete Gaussian atom
    # at a time, the Gaussian's delta in closed form (Balle & Wang; any sign of eps)
    m, sens, sigma = 1.5, 2, 2.0
    acct = PldAccountant().compose(ev.DiscreteGaussian(m, sensitivity=sens)).compose(
        ev.Gaussian(sigma))
    p, n = _dg_pmf(m, sens)
    x = np.arange(-n, n + 1, dtype=np.float64)
    s = m * sens
    losses = (sens * sens - 2.0 * sens * x) / (2 * s * s)
    for eps in [0.5, 1.5, 3.0]:
        e = eps - losses
        dg = special.ndtr(1 / (2 * sigma) - e * sigma) - np.exp(e) * special.ndtr(
            -1 / (2 * sigma) - e * sigma)
        exact = math.fsum(p * dg)
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact <= up
        assert up <= exact * (1 + 2e-3) + 1e-12


def test_two_discrete_pairs_without_a_common_lattice() -> None:
    # a discrete Gaussian and a discrete Laplace: incommensurate lattices, so the automatic
    # grid splits the atoms; exact reference: the product of the two atomic pairs
    # (delta = sum over atom pairs of p_a p_b (1 - e^(eps - l_a - l_b))_+)
    g, lap = dz.discrete_gaussian(1.5, 2), dz.discrete_laplace(0.8, 3)
    acct = PldAccountant().compose(ev.DiscreteGaussian(1.5, sensitivity=2)).compose(
        ev.DiscreteLaplace(0.8, sensitivity=3), 2)
    lap2 = np.add.outer(lap.l, lap.l).ravel(), np.multiply.outer(lap.m, lap.m).ravel()
    losses = np.add.outer(g.l, lap2[0]).ravel()
    masses = np.multiply.outer(g.m, lap2[1]).ravel()
    for eps in [0.5, 2.0, 4.0]:
        w = np.maximum(-np.expm1(np.minimum(eps - losses, 700.0)), 0.0)
        exact = math.fsum(masses * w)
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact <= up, (eps, lo, exact, up)
        assert up <= exact * 1.01 + 1e-11


@settings(max_examples=25, deadline=None)
@given(m=st.floats(0.3, 30.0), sens=st.integers(1, 12), frac=st.floats(0.003, 0.5),
       one_sided=st.booleans())
def test_atomic_discretisations_bracket_the_curve(m: float, sens: int, frac: float,
                                                 one_sided: bool) -> None:
    curve = dz.discrete_gaussian(m, sens)
    dx = frac * (curve.hi - curve.lo) / 20.0
    up = pm.connect_dots(curve, dx, 2**20)
    low = connect_dots_lower(curve, dx, 2**20, one_sided)
    for pmf in (up, low):
        assert np.all(pmf.p >= 0.0) and pmf.inf >= 0.0
    assert math.fsum(low.p) + low.inf <= 1.0 + 1e-15
    assert abs(math.fsum(up.p) + up.inf - 1.0) < 1e-12
    for e in np.concatenate([np.linspace(curve.lo - 0.1, curve.hi + 0.1, 31), [0.0]]):
        exact = float(curve.delta(np.array([e]))[0])
        vals = []
        for pmf in (up, low):
            losses = (np.arange(pmf.p.size) + pmf.lo) * dx
            w = np.maximum(-np.expm1(np.minimum(e - losses, 700.0)), 0.0)
            vals.append(math.fsum(pmf.p * w) + pmf.inf)
        assert vals[0] + up.err >= exact - 1e-16 * abs(exact), (e, vals[0], exact)
        assert vals[1] - low.err <= exact + 1e-15, (e, vals[1], exact)


def test_large_sigma_is_fast_and_tight() -> None:
    # sigma = 10^4: 1.9 * 10^5 atoms, split and accumulated in one vectorised pass
    curve = dz.discrete_gaussian(1e4, 1)
    assert curve.l.size > 1.8 * 10**5
    acct = PldAccountant().compose(ev.DiscreteGaussian(10.0, sensitivity=1000), 100)
    up = acct.get_epsilon(1e-6)
    # nearly continuous: close to the Gaussian with the same noise multiplier
    gauss = PldAccountant().compose(ev.Gaussian(10.0), 100).get_epsilon(1e-6)
    assert up == pytest.approx(gauss, rel=2e-3)


def test_lattice_grid_and_memory_bound() -> None:
    acct = PldAccountant().compose(ev.DiscreteGaussian(2.0, sensitivity=3), 10)
    acct.get_epsilon(1e-6)
    lattice = 3 / (2 * 6.0**2)  # D / (2 s^2) for odd D
    ratio = lattice / acct.value_discretization_interval
    assert abs(ratio - round(ratio)) < 1e-9
    huge = ev.DiscreteGaussian(1e6, sensitivity=1)  # 2 * 10^7 atoms: over the bound
    assert not PldAccountant().supports(huge)
    with pytest.raises(UnsupportedEventError, match="RdpAccountant"):
        PldAccountant().compose(huge)
    # noise so small that a loss exceeds 700 (e^L overflows): refused, not mis-computed
    for tiny in (ev.DiscreteGaussian(0.01, sensitivity=1), ev.DiscreteLaplace(1e-3, 2)):
        assert not PldAccountant().supports(tiny)
        with pytest.raises(UnsupportedEventError, match="700"):
            PldAccountant().compose(tiny)
    # the same for pure / randomized-response events (was a wrong epsilon above ~709)
    for big in (ev.Epsilon(800.0), ev.RandomizedResponse(701.0, 3), ev.DiscreteLaplace(1e-3)):
        assert not PldAccountant().supports(big)
    assert PldAccountant().compose(ev.Epsilon(650.0)).get_epsilon(1e-6) >= 650.0 - 1e-5
    # the truncated tails: at +inf on the pessimistic side only
    curve = dz.discrete_gaussian(1.5, 2)
    assert curve.inf_mass == 0.0 and 0.0 < curve.cut_mass < 1e-19
    assert pm.connect_dots(curve, 0.01, 2**20).inf >= curve.cut_mass


def test_discrete_gaussian_without_sensitivity_is_refused() -> None:
    acct = PldAccountant()
    assert not acct.supports(ev.DiscreteGaussian(1.0))
    assert acct.supports(ev.DiscreteGaussian(1.0, sensitivity=1))
    with pytest.raises(UnsupportedEventError, match="sensitivity=.*RdpAccountant"):
        acct.compose(ev.DiscreteGaussian(1.0))
    assert not acct.supports(ev.Composed([ev.DiscreteGaussian(1.0, sensitivity=2),
                                          ev.DiscreteGaussian(1.0)]))


# ----------------------------------------------------------------- the discrete Laplace


@pytest.mark.parametrize(("m", "sens"), [(1.0, 1), (0.4, 3), (2.5, 7)])
def test_discrete_laplace_single_event_is_exact(m: float, sens: int) -> None:
    acct = PldAccountant().compose(ev.DiscreteLaplace(m, sensitivity=sens))
    for eps in [0.0, 0.05, 0.3, 0.9 / m, 1.5]:
        exact = _dlap_delta_exact(m, sens, eps)
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact <= up
        assert up <= exact * (1 + 1e-9) + 1e-12
    assert acct.get_delta(1.0 / m + 1e-6) <= 1e-12  # pure 1/m-DP


def test_discrete_laplace_composition_exact() -> None:
    m, sens, k = 0.8, 3, 6
    acct = PldAccountant().compose(ev.DiscreteLaplace(m, sensitivity=sens), k)
    for eps in [0.5, 2.0, 5.0]:
        exact = _dlap_delta_exact(m, sens, eps, k)
        lo, up = acct.get_delta_bounds(eps)
        assert lo <= exact <= up <= exact * (1 + 1e-6) + 1e-11


@pytest.mark.parametrize(("t", "sens", "count", "delta"), [
    (1.0, 1, 1, 1e-6), (2.0, 3, 10, 1e-6), (5.0, 10, 50, 1e-5), (0.5, 2, 100, 1e-8),
    (10.0, 7, 200, 1e-6), (3.0, 5, 1, 1e-3)])
def test_discrete_laplace_matches_dp_accounting(t: float, sens: int, count: int,
                                                delta: float) -> None:
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant as ppa

    theirs = ppa.PLDAccountant(value_discretization_interval=1e-4)
    theirs.compose(dp_event.DiscreteLaplaceDpEvent(1.0 / t, sens), count)
    ref = theirs.get_epsilon(delta)
    acct = PldAccountant().compose(ev.DiscreteLaplace(t / sens, sensitivity=sens), count)
    lo, up = acct.get_epsilon_bounds(delta)
    assert 0.995 * ref <= up <= 1.005 * ref
    assert lo <= up


def test_discrete_laplace_without_sensitivity_keeps_randomized_response() -> None:
    a = PldAccountant().compose(ev.DiscreteLaplace(2.0), 5)
    b = PldAccountant().compose(ev.RandomizedResponse(0.5), 5)
    assert a.get_epsilon(1e-6) == b.get_epsilon(1e-6)
    # valid for every sensitivity: never below the exact scalar pair
    c = PldAccountant().compose(ev.DiscreteLaplace(2.0, sensitivity=4), 5)
    assert c.get_epsilon(1e-6) <= a.get_epsilon(1e-6) * (1 + 1e-9)


# ----------------------------------------------------------------- the events


@pytest.mark.parametrize("cls", [ev.DiscreteGaussian, ev.DiscreteLaplace])
def test_sensitivity_field(cls) -> None:
    old = cls(2.0)
    assert old.sensitivity is None
    assert repr(old) == f"{cls.__name__}(noise_multiplier=2.0)"
    assert old.to_dict() == {"type": cls.__name__, "noise_multiplier": 2.0}
    new = cls(2.0, sensitivity=np.int64(3))
    assert new.sensitivity == 3 and type(new.sensitivity) is int
    assert repr(new) == f"{cls.__name__}(noise_multiplier=2.0, sensitivity=3)"
    assert new != old and hash(new) == hash(cls(2.0, 3)) and new == cls(2.0, 3)
    for e in (old, new):  # JSON, and the budget ledger's serialisation
        assert ev.from_dict(json.loads(json.dumps(e.to_dict()))) == e
        assert deserialize_event(serialize_event(e)) == e
    # a record written before the field existed
    assert deserialize_event(f'{{"type":"{cls.__name__}","noise_multiplier":2.0}}') == old
    assert ev.from_dict({"type": cls.__name__, "noise_multiplier": 2.0,
                         "sensitivity": None}) == old
    with pytest.raises(ValueError, match="sensitivity"):
        cls(2.0, sensitivity=0)
    with pytest.raises(TypeError, match="sensitivity"):
        cls(2.0, sensitivity=1.5)
    with pytest.raises(TypeError, match="sensitivity"):
        cls(2.0, sensitivity=True)
    with pytest.raises(ValueError, match="sensitivity"):
        ev.from_dict({"type": cls.__name__, "noise_multiplier": 2.0, "sensitivity": -2})


def test_other_accountants_ignore_the_field() -> None:
    for plain, with_sens in [(ev.DiscreteGaussian(1.7), ev.DiscreteGaussian(1.7, 4)),
                             (ev.DiscreteLaplace(1.7), ev.DiscreteLaplace(1.7, 4))]:
        for cls in (RdpAccountant, ZcdpAccountant):
            a = cls().compose(plain, 3).get_epsilon(1e-6)
            b = cls().compose(with_sens, 3).get_epsilon(1e-6)
            assert a == b


def test_mechanisms_fill_the_field_only_for_scalar_releases() -> None:
    scalar = DiscreteGaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=3, max_changed=1)
    assert scalar.event.sensitivity == 3
    assert DiscreteGaussianMechanism(rho=0.1, sensitivity=2, max_changed=1).event.sensitivity == 2
    assert DiscreteGaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=3).event.sensitivity \
        is None
    assert DiscreteLaplaceMechanism(epsilon=1.0, sensitivity=3).event.sensitivity is None
    # sigma was calibrated with CKS20's exact formula: the exact PLD gives the target back
    acct = PldAccountant().compose(scalar.event)
    assert acct.get_delta(1.0) <= 1e-6 * (1 + 1e-6)
    assert acct.get_epsilon(1e-6) == pytest.approx(1.0, rel=1e-4)
