"""dpfast.accuracy_to_epsilon / epsilon_to_accuracy: exact round trips."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import mpmath
import pytest
from hypothesis import given

import dpfast
from dpfast import planning

CASES = [
    ("discrete_laplace", 0.0, {}),
    ("laplace", 0.0, {}),
    ("discrete_gaussian", 1e-6, {}),
    ("gaussian", 1e-6, {}),
    ("discrete_laplace", 0.0, {"max_partitions": 3, "max_per_partition": 2}),
    ("laplace", 0.0, {"max_partitions": 4}),
    ("discrete_gaussian", 1e-5, {"max_partitions": 3, "max_per_partition": 2}),
    ("gaussian", 1e-5, {"max_per_partition": 5}),
]


@pytest.mark.parametrize("mechanism,delta,bounds", CASES)
@pytest.mark.parametrize("accuracy,alpha", [(10, 0.05), (3.5, 0.01)])
def test_round_trip(mechanism, delta, bounds, accuracy, alpha) -> None:
    kw = dict(mechanism=mechanism, delta=delta, **bounds)
    eps = dpfast.accuracy_to_epsilon(accuracy, alpha, **kw)
    assert 0 < eps < 1e4
    assert dpfast.epsilon_to_accuracy(eps, alpha, **kw) <= accuracy
    below = math.nextafter(eps, 0.0)
    assert dpfast.epsilon_to_accuracy(below, alpha, **kw) > accuracy


@pytest.mark.parametrize("accuracy,alpha,sens", [(10, 0.05, 1), (0, 0.2, 1), (25, 0.001, 3)])
def test_discrete_laplace_against_closed_form(accuracy, alpha, sens) -> None:
    """P(|K| > w) = 2 p^(w+1) / (1 + p), p = exp(-1/t), t the smallest float >= sens/eps."""
    eps = dpfast.accuracy_to_epsilon(accuracy, alpha, sensitivity=sens)
    w = math.floor(accuracy)

    def tail(e: float) -> mpmath.mpf:
        t = dpfast.DiscreteLaplaceMechanism(epsilon=e, sensitivity=sens).scale
        with mpmath.workdps(60):
            p = mpmath.exp(-1 / mpmath.mpf(t))
            return 2 * p ** (w + 1) / (1 + p)

    assert tail(eps) <= alpha
    assert tail(math.nextafter(eps, 0.0)) > alpha
    # and it agrees with the textbook approximation eps ~ sens * ln(1/alpha) / (w + 1)
    if w >= 10:
        assert eps == pytest.approx(sens * math.log(1 / alpha) / (w + 1), rel=0.35)
    else:  # w = 0: P(K != 0) = 2p / (1 + p) = alpha at p = alpha / (2 - alpha)
        assert eps == pytest.approx(math.log((2 - alpha) / alpha) * sens, rel=1e-12)


def test_matches_mechanism_interval() -> None:
    eps = dpfast.accuracy_to_epsilon(10, 0.05, mechanism="discrete_gaussian", delta=1e-6)
    # a single query is a scalar: planned (and released) with max_changed=1 (CKS20 Thm. 7)
    mech = dpfast.DiscreteGaussianMechanism(epsilon=eps, delta=1e-6, max_changed=1)
    assert mech.confidence_interval(0.05) <= 10
    assert dpfast.DiscreteGaussianMechanism(epsilon=math.nextafter(eps, 0), delta=1e-6,
                                            max_changed=1).confidence_interval(0.05) > 10
    assert dpfast.epsilon_to_accuracy(1.0, 0.05) == dpfast.DiscreteLaplaceMechanism(
        1.0).confidence_interval(0.05)


def test_contribution_bounds_cost_more() -> None:
    e1 = dpfast.accuracy_to_epsilon(10, 0.05)
    e6 = dpfast.accuracy_to_epsilon(10, 0.05, max_partitions=3, max_per_partition=2)
    # L1 sensitivity 6: the scale needed is the same, so epsilon is 6 times larger (to the
    # float rounding of the scale)
    assert e6 == pytest.approx(6 * e1, rel=1e-9)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="mechanism"):
        planning.accuracy_to_epsilon(10, 0.05, mechanism="cauchy")
    with pytest.raises(ValueError, match="alpha"):
        planning.accuracy_to_epsilon(10, 1.5)
    with pytest.raises(ValueError, match="accuracy"):
        planning.accuracy_to_epsilon(-1, 0.05)
    with pytest.raises(ValueError, match="delta"):
        planning.accuracy_to_epsilon(10, 0.05, mechanism="gaussian")
    with pytest.raises(ValueError, match="delta"):
        planning.accuracy_to_epsilon(10, 0.05, delta=1e-6)
    with pytest.raises(ValueError, match="sensitivity"):
        planning.accuracy_to_epsilon(10, 0.05, sensitivity=1.5)
    with pytest.raises(TypeError, match="max_partitions"):
        planning.accuracy_to_epsilon(10, 0.05, max_partitions=2.0)
    with pytest.raises(ValueError, match="max_per_partition"):
        planning.accuracy_to_epsilon(10, 0.05, max_per_partition=0)
    with pytest.raises(ValueError, match="epsilon"):
        planning.epsilon_to_accuracy(0.0, 0.05)
    with pytest.raises(ValueError, match="out of reach with gaussian"):
        planning.accuracy_to_epsilon(1e-3, 0.05, mechanism="gaussian", delta=1e-6)
    # the grid's discretisation term no longer grows with e^epsilon (issue 17 item 11)
    assert planning.accuracy_to_epsilon(0.5, 0.05, mechanism="gaussian", delta=1e-6) < 100
    with pytest.raises(TypeError, match="accuracy"):
        planning.accuracy_to_epsilon("10", 0.05)


def test_cli_plan() -> None:
    import subprocess
    import sys

    from tests.forkrun import cli_here

    res = subprocess.run([sys.executable, "-m", "dpfast", "plan", "--use-case", "healthcare",
                          "--accuracy", "10", "--alpha", "0.05", "--sensitivity", "1"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    eps = dpfast.accuracy_to_epsilon(10, 0.05)
    assert f"epsilon needed: {eps:.6g}" in res.stdout
    assert "Healthcare analytics: below the 0.5-2 range" in res.stdout
    assert "US Census 2020" in res.stdout
    assert "budget left: 1.716 of 2" in res.stdout
    # the CLI's main in this process (tests/forkrun.cli_here) for the other two
    res = cli_here("plan", "--accuracy", "2", "--mechanism", "gaussian", "--delta", "1e-6",
                   "--budget", "1")
    assert res.returncode == 0, res.stderr
    assert "more than the 1 of --budget" in res.stdout
    res = cli_here("plan", "--accuracy", "10", "--use-case", "astrology")
    assert res.returncode == 2 and "use_case must be one of" in res.stderr


@given(st.floats(0.01, 500), st.floats(1e-6, 0.5), st.integers(1, 5),
       st.sampled_from(["discrete_laplace", "laplace"]))
def test_round_trip_property(accuracy, alpha, sens, mechanism) -> None:
    kw = dict(mechanism=mechanism, sensitivity=sens)
    eps = dpfast.accuracy_to_epsilon(accuracy, alpha, **kw)
    assert dpfast.epsilon_to_accuracy(eps, alpha, **kw) <= accuracy
    assert dpfast.epsilon_to_accuracy(math.nextafter(eps, 0.0), alpha, **kw) > accuracy


@pytest.mark.parametrize("sens", [1, 3])
def test_discrete_gaussian_plan_is_scalar_and_pld_exact(sens) -> None:
    """A single discrete-Gaussian query is a scalar: planned with max_changed=1 (CKS20
    Thm. 7's exact curve), its event carries the sensitivity, and the PLD accountant
    recovers the planned epsilon (RDP / zCDP need more)."""
    from dpfast.accounting import PldAccountant, RdpAccountant, ZcdpAccountant
    from dpfast.accounting import events as ev

    from .helpers import cks20_delta

    delta = 1e-6
    kw = dict(mechanism="discrete_gaussian", delta=delta, sensitivity=sens)
    eps = dpfast.accuracy_to_epsilon(10 * sens, 0.05, **kw)
    mech = planning._Plan("discrete_gaussian", sens, delta, None, None).mechanism_for(eps)
    assert mech.max_changed == 1
    assert mech.event == ev.DiscreteGaussian(mech.sigma / sens, sensitivity=sens)
    # the exact delta at the planned epsilon is within the target (CKS20 Thm. 7)
    exact = float(cks20_delta(eps, mech.sigma, sens))
    assert exact <= delta
    pld = PldAccountant().compose(mech.event)
    assert exact <= pld.get_delta(eps) <= exact + 2e-12
    assert pld.get_epsilon(delta) == pytest.approx(eps, rel=1e-3)
    rdp = RdpAccountant().compose(mech.event).get_epsilon(delta)
    zcdp = ZcdpAccountant().compose(mech.event).get_epsilon(delta)
    assert pld.get_epsilon(delta) < min(rdp, zcdp)
    # smaller than the zCDP-calibrated plan (the former behaviour) for the same accuracy
    old = dpfast.DiscreteGaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens)
    assert old.sigma > mech.sigma
    # tables (max_partitions / max_per_partition): calibrated as dpfast.tables, no scalar
    # event (the unit-sensitivity sigma at rho / l2sq)
    table = planning._Plan("discrete_gaussian", sens, delta, 2, 1).mechanism_for(eps)
    assert table.event.sensitivity is None
