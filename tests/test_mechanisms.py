"""Mechanisms: calibration against exact formulas, events, confidence intervals, validation."""

from __future__ import annotations

import importlib
import importlib.util
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpfast._core.rounding import ceil_sqrt as _ceil_sqrt
from dpfast.mechanisms._discretisation import grid_terms
from dpfast.mechanisms._tails import _discrete_gaussian_halfwidth

from .helpers import (
    KEY,
    analytic_gaussian_delta,
    cks20_delta,
    cor13_delta,
    dgauss_pmf_float,
    dgauss_pmf_table,
    dgauss_tail,
    dlap_tail,
    mp,
)


def mechanisms():
    """dpfast.mechanisms, or a skip while the modules it builds on have not landed."""
    for dep in ("dpfast.noise", "dpfast.mechanisms._calibrate"):
        if importlib.util.find_spec(dep) is None:
            pytest.skip(f"{dep} has not landed yet")
    return importlib.import_module("dpfast.mechanisms")


def prev_float(x: float) -> float:
    return math.nextafter(x, 0.0)




# --------------------------------------------------------------------------- Laplace


@pytest.mark.parametrize("eps, sens, m", [(1.0, 1.0, 1), (0.1, 2.0, 1), (0.37, 1.5, 1000),
                                          (5.0, 1e-3, 7)])
def test_laplace_calibration_is_smallest_safe_scale(eps, sens, m):
    M = mechanisms()
    from dpfast import noise

    mech = M.LaplaceMechanism(eps, sens, max_changed=m)
    g = mech.granularity
    assert g == noise.granularity(mech.scale)
    assert math.frexp(g)[0] == 0.5
    # (Delta + m g) / scale <= epsilon, exactly
    assert (Fraction(sens) + m * Fraction(g)) / Fraction(mech.scale) <= Fraction(eps)
    # the next float down fails the same test (with its own grid)
    s = prev_float(mech.scale)
    assert (Fraction(sens) + m * Fraction(noise.granularity(s))) / Fraction(s) > Fraction(eps)
    # the event's noise multiplier is a lower bound: 1/nm >= true epsilon, ~ target
    nm = Fraction(mech.event.noise_multiplier)
    assert 1 / nm >= (Fraction(sens) + m * Fraction(g)) / Fraction(mech.scale)
    assert float(1 / nm) <= eps * (1 + 1e-12)
    assert type(mech.event).__name__ == "Laplace"


def test_discrete_laplace_calibration():
    M = mechanisms()
    for eps, sens in [(1.0, 1), (0.3, 1), (0.1, 3), (2.0, 5)]:
        mech = M.DiscreteLaplaceMechanism(eps, sens)
        assert Fraction(mech.scale) >= Fraction(sens) / Fraction(eps)
        assert Fraction(prev_float(mech.scale)) < Fraction(sens) / Fraction(eps)
        assert Fraction(mech.event.noise_multiplier) <= Fraction(mech.scale) / sens
        assert type(mech.event).__name__ == "DiscreteLaplace"


@pytest.mark.parametrize("scale_eps", [0.05, 0.3, 1 / 3.7, 1.0, 0.01])
@pytest.mark.parametrize("alpha", [0.5, 0.05, 1e-3, 1e-9])
def test_discrete_laplace_confidence_interval_exact(scale_eps, alpha):
    M = mechanisms()
    mech = M.DiscreteLaplaceMechanism(scale_eps)
    w = mech.confidence_interval(alpha)
    assert isinstance(w, int) and w >= 0
    assert dlap_tail(mech.scale, w) <= alpha
    if w > 0:
        assert dlap_tail(mech.scale, w - 1) > alpha


def test_laplace_confidence_interval_on_grid():
    M = mechanisms()
    mech = M.LaplaceMechanism(0.5, 2.0)
    g = mech.granularity
    for alpha in (0.05, 1e-6):
        w = mech.confidence_interval(alpha)
        k = Fraction(w) / Fraction(g)
        assert k.denominator == 1
        # exact tail check in grid units, and minimality
        t = Fraction(mech.scale) / Fraction(g)
        with mpmath.workprec(256):
            tt = mp(t)
            p = mpmath.exp(-1 / tt)

            def tail(j, tt=tt, p=p):
                return 2 * mpmath.exp(-(j + 1) / tt) / (1 + p)

            assert tail(int(k)) <= alpha < tail(int(k) - 1)
        # continuous Laplace quantile scale * ln(1/alpha), within a grid step
        assert abs(w - mech.scale * math.log(1 / alpha)) <= 2 * g


# --------------------------------------------------------------------------- Gaussian


@pytest.mark.parametrize("sigma", [0.3, 1.0, 2.3, 31.5, 100.0, 400.0])
@pytest.mark.parametrize("alpha", [0.5, 0.05, 1e-6])
def test_discrete_gaussian_halfwidth_exact(sigma, alpha):
    table = dgauss_pmf_table(sigma)
    w = _discrete_gaussian_halfwidth(Fraction(sigma), Fraction(alpha))
    assert dgauss_tail(table, w) <= alpha
    if w > 0:
        assert dgauss_tail(table, w - 1) > alpha


@pytest.mark.parametrize("rho, sens, m", [(0.5, 1.0, 1), (0.01, 3.0, 1), (0.1, 1.0, 10**6)])
def test_gaussian_zcdp_calibration(rho, sens, m):
    M = mechanisms()
    mech = M.GaussianMechanism(rho=rho, sensitivity=sens, max_changed=m)
    d_eff = Fraction(sens) + _ceil_sqrt(m) * Fraction(mech.granularity)
    assert d_eff**2 / (2 * Fraction(mech.sigma) ** 2) <= Fraction(rho)
    assert mech.sigma <= float(d_eff) / math.sqrt(2 * rho) * (1 + 1e-12)
    assert Fraction(mech.event.noise_multiplier) <= Fraction(mech.sigma) / d_eff
    assert mech.scale == mech.sigma


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-5, 1.0), (0.1, 1e-6, 2.0), (4.0, 1e-9, 1.0),
                                             (10.0, 1e-9, 1.0)])
def test_gaussian_analytic_calibration(eps, delta, sens):
    M = mechanisms()
    mech = M.GaussianMechanism(eps, delta, sensitivity=sens)  # (10, 1e-9) raised before
    g = Fraction(mech.granularity)
    d_eff = Fraction(sens) + g
    e2, d2 = grid_terms(Fraction(eps), Fraction(delta), 1, Fraction(mech.sigma) / g)
    # the grid costs almost nothing (no term grows with e^eps) ...
    assert eps - 1e-9 < e2 <= eps and delta * (1 - 1e-9) < d2 <= delta
    # ... the continuous profile at Delta + g and the adjusted (eps', delta') holds ...
    assert analytic_gaussian_delta(e2, mech.sigma, d_eff) <= d2
    # ... and the calibration is tight: 1e-5 less noise would break even the plain target
    assert analytic_gaussian_delta(eps, mech.sigma * (1 - 1e-5), d_eff) > delta


@pytest.mark.parametrize("s, k", [(400.0, 100), (400.0, 250), (1000.5, 600)])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_grid_terms_bound_the_exact_discrete_profile(s, k, eps):
    """The lemma behind grid_terms, checked where the discrete delta is exactly computable.

    For N_Z(0, s^2) noise and an integer shift k (1-D), CKS20 Thm. 7 gives the exact
    delta.  grid_terms promises: if the continuous Gaussian (sigma = s, shift k) is
    (eps', delta')-DP then the discrete one is (eps, target)-DP.  Find the smallest
    target for which the premise holds and compare with the exact discrete delta.
    """
    def premise(target: mpmath.mpf) -> bool:
        e2, d2 = grid_terms(Fraction(eps), Fraction(float(target)), 1, Fraction(s))
        return analytic_gaussian_delta(e2, s, k) <= d2

    lo = analytic_gaussian_delta(eps, s, k) / 2  # premise fails: delta' < delta_cont(eps)
    hi = lo * 64
    assert not premise(lo) and premise(hi)
    for _ in range(30):
        mid = mpmath.sqrt(lo * hi)
        lo, hi = (lo, mid) if premise(mid) else (mid, hi)
    exact = cks20_delta(eps, s, k)
    assert exact <= lo  # the promise holds at (just below) the smallest target it makes
    assert hi <= 4 * exact  # and the bound is not vacuous


@pytest.mark.parametrize("eps, delta, sens", [(1.0, 1e-5, 1), (0.5, 1e-6, 2), (3.0, 1e-8, 1)])
def test_discrete_gaussian_cks20_calibration(eps, delta, sens):
    M = mechanisms()
    mech = M.DiscreteGaussianMechanism(eps, delta, sensitivity=sens, max_changed=1)
    assert cks20_delta(eps, mech.sigma, sens) <= delta
    assert cks20_delta(eps, mech.sigma * (1 - 1e-6), sens) > delta
    assert Fraction(mech.event.noise_multiplier) <= Fraction(mech.sigma) / sens
    assert type(mech.event).__name__ == "DiscreteGaussian"


def test_discrete_gaussian_zcdp_and_multi_coordinate():
    M = mechanisms()
    mech = M.DiscreteGaussianMechanism(rho=0.1, sensitivity=2)
    assert Fraction(4) / (2 * Fraction(mech.sigma) ** 2) <= Fraction(1, 10)
    assert prev_float(mech.sigma) < math.sqrt(4 / 0.2)
    multi = M.DiscreteGaussianMechanism(1.0, 1e-5, max_changed=3)
    # CKS20 Cor. 13 at rho = 1/(2 sigma^2): any order a > 1 gives a valid delta bound
    rho = Fraction(1) / (2 * Fraction(multi.sigma) ** 2)
    assert cor13_delta(rho, 1.0) <= 1e-5
    # tight: 1e-6 less noise breaks it (at the best order, found numerically)
    assert cor13_delta(rho / (1 - Fraction(1, 10**6)) ** 2, 1.0) > 1e-5
    one = M.DiscreteGaussianMechanism(1.0, 1e-5, max_changed=1)
    assert multi.sigma > one.sigma
    assert multi.sigma < 1.25 * one.sigma
    assert M.DiscreteGaussianMechanism(1.0, 1e-5).sigma == multi.sigma  # default: any shift


def _shift_delta(eps: float, sigma: float, shift: tuple[int, ...]) -> float:
    """Exact delta of the multivariate discrete Gaussian for one integer shift.

    The privacy loss at y ~ N_Z(shift, sigma^2 I) is (2 <y, shift> - |shift|^2) / (2 s^2),
    a function of <Y, shift> with Y ~ N_Z(0, sigma^2 I): its pmf is a convolution.
    delta = E[(1 - exp(eps - L))_+] (float64, error far below the 0.4% the test resolves).
    """
    ks, p = dgauss_pmf_float(sigma)
    support, pmf = np.array([0]), np.array([1.0])
    for c in shift:
        if c == 0:
            continue
        lo = support[0] + c * ks[0] if c > 0 else support[0] + c * ks[-1]
        comp = np.zeros(abs(c) * (len(ks) - 1) + 1)
        comp[:: abs(c)] = p if c > 0 else p[::-1]
        pmf = np.convolve(pmf, comp)
        support = lo + np.arange(len(pmf))
    n2 = sum(c * c for c in shift)
    loss = (2.0 * support + n2) / (2.0 * sigma * sigma)  # <y, shift> = <Y, shift> + |shift|^2
    gain = -np.expm1(np.minimum(eps - loss, 0.0))
    return math.fsum(pmf * gain)


def test_discrete_gaussian_default_covers_every_l2_shift():
    """Issue 17 item 10: with L2 sensitivity 2 the shift (1,1,1,1) is allowed; the 1-D
    formula (the old default) gives delta above the target there."""
    M = mechanisms()
    eps, delta = 1.0, 1e-5
    default = M.DiscreteGaussianMechanism(eps, delta, sensitivity=2)
    for shift in [(2,), (1, 1, 1, 1), (1, 1, 1), (1, 1)]:
        assert _shift_delta(eps, default.sigma, shift) <= delta, shift
    one_d = M.DiscreteGaussianMechanism(eps, delta, sensitivity=2, max_changed=1)
    assert _shift_delta(eps, one_d.sigma, (2,)) <= delta
    assert _shift_delta(eps, one_d.sigma, (1, 1, 1, 1)) > delta  # why it is not the default


def test_gaussian_confidence_interval_on_grid():
    M = mechanisms()
    mech = M.GaussianMechanism(1.0, 1e-6)
    w = mech.confidence_interval(0.05)
    assert (Fraction(w) / Fraction(mech.granularity)).denominator == 1
    z = float(mpmath.sqrt(2) * mpmath.erfinv(0.95))
    assert abs(w - mech.sigma * z) <= 2 * mech.granularity


# --------------------------------------------------------------------------- snapping


def test_snapping_calibration():
    M = mechanisms()
    from dpfast import noise

    for eps, sens, bound in [(1.0, 1.0, 100.0), (0.5, 2.0, 1e4)]:
        mech = M.SnappingMechanism(eps, sens, bound)
        e = noise.snapping_epsilon(mech.scale, bound, sens)
        assert e <= eps
        assert mech.event.epsilon == e
        try:
            assert noise.snapping_epsilon(prev_float(mech.scale), bound, sens) > eps
        except ValueError:
            pass
        assert mech.snap >= mech.scale and math.frexp(mech.snap)[0] == 0.5
        w = mech.confidence_interval(0.05)
        assert mech.scale * math.log(20) + mech.snap / 2 <= w <= 2 * bound


def test_snapping_release():
    M = mechanisms()
    mech = M.SnappingMechanism(1.0, 1.0, 50.0)
    x = np.array([-100.0, -3.0, 0.0, 2.5, 49.0, 1e9])
    y = np.asarray(mech(x, rng=KEY))
    assert y.shape == x.shape
    assert np.all(np.abs(y) <= 50.0)
    # coverage of the (rigorous) half-width, relative to the clamped input
    xs = np.zeros(20_000)
    ys = np.asarray(mech(xs, rng=KEY))
    w = mech.confidence_interval(0.1)
    assert np.mean(np.abs(ys) <= w) >= 0.9 - 5 * math.sqrt(0.09 / xs.size)


# --------------------------------------------------------------------------- releases


def test_releases_and_coverage():
    M = mechanisms()
    n = 100_000
    x_int = np.arange(n, dtype=np.int64) % 7
    x_flt = np.linspace(-3.0, 3.0, n)
    alpha = 0.1
    tol = 5 * math.sqrt(alpha * (1 - alpha) / n)
    for mech, x in [
        (M.DiscreteLaplaceMechanism(0.7), x_int),
        (M.DiscreteGaussianMechanism(1.0, 1e-6), x_int),
        (M.DiscreteGaussianMechanism(rho=0.02, sensitivity=3), x_int),
    ]:
        before = x.copy()
        y = mech(x, rng=KEY)
        np.testing.assert_array_equal(x, before)
        assert y.dtype == x.dtype and y.shape == x.shape
        np.testing.assert_array_equal(mech(x, rng=KEY), y)  # replayable with a key
        w = mech.confidence_interval(alpha)
        cover = np.mean(np.abs(y - x) <= w)
        assert cover >= 1 - alpha - tol, (mech, cover)
    for mech in [M.LaplaceMechanism(0.7), M.GaussianMechanism(1.0, 1e-6),
                 M.GaussianMechanism(rho=0.3, sensitivity=2.0)]:
        before = x_flt.copy()
        y = mech(x_flt, rng=KEY)
        np.testing.assert_array_equal(x_flt, before)
        assert y.dtype == np.float64 and y.shape == x_flt.shape
        g = mech.granularity
        assert np.all(np.mod(y, g) == 0)  # every output on the grid
        w = mech.confidence_interval(alpha)
        cover = np.mean(np.abs(y - x_flt) <= w + g / 2)
        assert cover >= 1 - alpha - tol, (mech, cover)


def test_events_are_accounting_events():
    M = mechanisms()
    from dpfast.accounting import events

    for mech in [M.LaplaceMechanism(1.0), M.DiscreteLaplaceMechanism(1.0),
                 M.GaussianMechanism(1.0, 1e-5), M.DiscreteGaussianMechanism(rho=1.0),
                 M.SnappingMechanism(1.0, 1.0, 10.0)]:
        assert isinstance(mech.event, events.DpEvent)
        assert events.from_dict(mech.event.to_dict()) == mech.event
        assert type(mech).__name__ in repr(mech)


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-1.0, ValueError),
                                      (float("nan"), ValueError), (float("inf"), ValueError),
                                      ("1", TypeError), (True, TypeError), (None, None)])
def test_epsilon_validation(bad, exc):
    M = mechanisms()
    if exc is None:
        with pytest.raises((TypeError, ValueError), match="epsilon"):
            M.LaplaceMechanism(bad)
        return
    for ctor in (M.LaplaceMechanism, M.DiscreteLaplaceMechanism,
                 lambda e: M.GaussianMechanism(e, 1e-5),
                 lambda e: M.DiscreteGaussianMechanism(e, 1e-5),
                 lambda e: M.SnappingMechanism(e, 1.0, 10.0)):
        with pytest.raises(exc, match="epsilon"):
            ctor(bad)


def test_other_validation():
    M = mechanisms()
    cases = [
        (lambda: M.LaplaceMechanism(1.0, 0.0), "sensitivity"),
        (lambda: M.LaplaceMechanism(1.0, float("nan")), "sensitivity"),
        (lambda: M.LaplaceMechanism(1.0, max_changed=0), "max_changed"),
        (lambda: M.LaplaceMechanism(1.0, max_changed=1.5), "max_changed"),
        (lambda: M.DiscreteLaplaceMechanism(1.0, 1.5), "sensitivity"),
        (lambda: M.DiscreteGaussianMechanism(rho=1.0, sensitivity=0.5), "sensitivity"),
        (lambda: M.GaussianMechanism(1.0, 0.0), "delta"),
        (lambda: M.GaussianMechanism(1.0, 1.0), "delta"),
        (lambda: M.GaussianMechanism(1.0), "delta"),
        (lambda: M.GaussianMechanism(), "rho"),
        (lambda: M.GaussianMechanism(1.0, 1e-5, rho=1.0), "rho"),
        (lambda: M.GaussianMechanism(rho=-1.0), "rho"),
        (lambda: M.DiscreteGaussianMechanism(delta=1e-5), "epsilon"),
        (lambda: M.SnappingMechanism(1.0, 1.0, 0.0), "bound"),
        (lambda: M.SnappingMechanism(1.0, -1.0, 10.0), "sensitivity"),
        (lambda: M.LaplaceMechanism(1e-13), "epsilon"),
    ]
    for make, word in cases:
        with pytest.raises(ValueError, match=word):
            make()
    mech = M.DiscreteGaussianMechanism(rho=1.0)
    for bad in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="alpha"):
            mech.confidence_interval(bad)
