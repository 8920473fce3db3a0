"""Every calibration loop is bounded and every error names what the caller passed (issue 22,
item 10).

``DiscreteGaussianMechanism(0.1, delta=5e-324)`` never returned (``log(1/delta)``
overflowed, the bisection for rho reached 0 and doubled 0 forever); ``GaussianMechanism(0.1,
delta=1e-300)`` said "delta must lie in (0, 1), got -0.0" (the grid term's delta was
quantised to 2^-400); partition selection thresholds for ``delta < 1e-77`` were too small
(``1 - (1 - p)^k`` evaluated to 0).
"""

from __future__ import annotations

import math
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfast as dp
from dpfast._core import search
from dpfast.accounting import calibrate_noise_multiplier
from dpfast.mechanisms import _calibrate
from dpfast.mechanisms.gaussian import _largest_rho
from dpfast.tables import partition_threshold
from dpfast.tables.partition import selection_delta
from tests.helpers import SUBPROCESS_TIMEOUT_S

TINY = 5e-324  # the smallest positive double


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """Fail instead of hanging (the defect was a loop that never ended)."""

    def alarm(*_: Any) -> None:
        raise TimeoutError(f"did not return within {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _calls(fn: Callable[[float], bool]) -> tuple[Callable[[float], bool], list[float]]:
    seen: list[float] = []

    def wrapped(x: float) -> bool:
        seen.append(x)
        return fn(x)

    return wrapped, seen


# ----------------------------------------------------------------- the cases


def test_discrete_gaussian_at_the_smallest_delta_returns_a_valid_sigma() -> None:
    with _deadline(SUBPROCESS_TIMEOUT_S):
        m = dp.DiscreteGaussianMechanism(0.1, delta=TINY)
        m1 = dp.DiscreteGaussianMechanism(0.1, delta=TINY, max_changed=1)
    # default route: rho = 1 / (2 sigma^2) implies (0.1, 5e-324) by CKS20 Cor. 13
    rho = 1 / (2 * (m.sigma / m.sensitivity) ** 2)
    assert _calibrate.zcdp_delta(rho * (1 - 1e-12), 0.1) <= TINY  # (float rho: 1 ulp)
    # more noise than at delta = 1e-300, as it must be
    assert m.sigma > dp.DiscreteGaussianMechanism(0.1, delta=1e-300).sigma
    # max_changed=1: CKS20 Thm. 7's exact delta
    assert _calibrate.discrete_gaussian_delta(0.1, m1.sigma, 1) <= TINY
    assert math.isfinite(m.confidence_interval(0.05))


def test_gaussian_at_tiny_delta() -> None:
    with _deadline(SUBPROCESS_TIMEOUT_S):
        m = dp.GaussianMechanism(0.1, delta=1e-300)
    assert _calibrate.analytic_gaussian_delta(0.1, m.sigma) <= 1e-300
    assert m.sigma > dp.GaussianMechanism(0.1, delta=1e-100).sigma
    # below what the float grid's discretisation term leaves: a clear error naming delta
    with pytest.raises(ValueError, match=r"delta=5e-324.*DiscreteGaussianMechanism"):
        dp.GaussianMechanism(0.1, delta=TINY)
    # the continuous calibration itself works there
    s = _calibrate.analytic_gaussian_sigma(0.1, TINY)
    assert math.isfinite(s) and _calibrate.analytic_gaussian_delta(0.1, s) <= TINY


@pytest.mark.parametrize("delta", [1e-310, TINY])
def test_calibration_functions_at_subnormal_delta(delta: float) -> None:
    with _deadline(SUBPROCESS_TIMEOUT_S):
        s = _calibrate.discrete_gaussian_sigma(0.1, delta)
        r = _largest_rho(0.1, delta)
    assert _calibrate.discrete_gaussian_delta(0.1, s) <= delta
    assert r > 0 and _calibrate.zcdp_delta(r, 0.1) <= delta
    assert _calibrate.zcdp_delta(r * 1.01, 0.1) > delta  # and not far from the largest


@pytest.mark.parametrize(("make", "named"), [
    (lambda: dp.GaussianMechanism(rho=TINY), "rho=5e-324"),
    (lambda: dp.GaussianMechanism(TINY, 1e-5), "epsilon=5e-324"),
    (lambda: dp.DiscreteGaussianMechanism(1e-300, TINY), "delta=5e-324"),
    (lambda: dp.DiscreteLaplaceMechanism(TINY), "epsilon=5e-324"),
    (lambda: dp.LaplaceMechanism(1e-310), "epsilon=1e-310"),
    (lambda: calibrate_noise_multiplier(1e-300, 1e-300, 0.01, 10),
     r"target_epsilon=1e-300, delta=1e-300.*none up to 1e\+12"),
])
def test_errors_name_the_callers_value(make: Callable[[], Any], named: str) -> None:
    with _deadline(SUBPROCESS_TIMEOUT_S), pytest.raises(ValueError, match=named):
        make()


def test_dpsgd_calibration_is_bounded_at_tiny_delta() -> None:
    with _deadline(SUBPROCESS_TIMEOUT_S):
        s = calibrate_noise_multiplier(1.0, TINY, 0.01, 100)
        assert dp.accounting.dpsgd_epsilon(0.01, s, 100, TINY) <= 1.0
        # the PLD accountant certifies no delta that small: a clear error, not a hang
        # (it widened sigma by 5% forever)
        with pytest.raises(ValueError, match=r"delta=5e-324.*accountant='rdp'"):
            calibrate_noise_multiplier(1.0, TINY, 0.01, 100, accountant="pld")


def test_planning_at_tiny_delta() -> None:
    with _deadline(SUBPROCESS_TIMEOUT_S):
        e = dp.accuracy_to_epsilon(2000.0, 0.05, mechanism="gaussian", delta=1e-310)
    assert 0 < e < math.inf


# ----------------------------------------------------------------- partition selection


@pytest.mark.parametrize("delta", [1e-5, 1e-100, 1e-300, TINY])
def test_partition_threshold_is_exact_at_tiny_delta(delta: float) -> None:
    with _deadline(SUBPROCESS_TIMEOUT_S):
        tau = partition_threshold(2.0, delta, 3, 2)
    assert selection_delta(2.0, tau, 3, 2) <= delta < selection_delta(2.0, tau - 1, 3, 2)
    # against the closed form 1 - (1 - a^m / (1 + a))^k, a = e^(-1/t), m = tau - c
    with mpmath.workdps(60):
        a = mpmath.exp(-mpmath.mpf(1) / 2)
        p = a ** (tau - 2) / (1 + a)
        exact = -mpmath.expm1(3 * mpmath.log1p(-p))
        got = selection_delta(2.0, tau, 3, 2)
        assert exact <= got and got - exact <= max(exact * 1e-12, TINY)  # (subnormal: 1 ulp)


def test_partition_thresholds_grow_with_log_one_over_delta() -> None:
    # the defect: every delta below ~1e-77 got the same (too small) threshold
    taus = [partition_threshold(2.0, d, 3, 2) for d in (1e-100, 1e-200, 1e-300)]
    assert taus[0] < taus[1] < taus[2]


# ----------------------------------------------------------------- the search helpers


def test_searches_never_loop() -> None:
    ok, seen = _calls(lambda _x: False)
    with pytest.raises(ValueError, match="what was asked: no finite value"):
        search.smallest_true(ok, 1.0, rtol=1e-12, what="what was asked")
    assert len(seen) <= search.MAX_STEPS + 1
    ok, seen = _calls(lambda _x: True)
    assert search.smallest_true(ok, 1.0, rtol=1e-12, what="w") == TINY
    assert len(seen) <= search.MAX_STEPS + 1
    with pytest.raises(ValueError, match="no positive value"):
        search.largest_true(lambda _x: False, 1.0, rtol=1e-12, what="w")
    with pytest.raises(ValueError, match="holds for every value"):
        search.largest_true(lambda _x: True, 1.0, rtol=1e-12, what="w")
    with pytest.raises(ValueError, match="down to 1e-06"):
        search.smallest_true(lambda _x: True, 1.0, rtol=1e-12, what="w", lo_limit=1e-6)
    with pytest.raises(ValueError, match="none up to 1e"):
        search.smallest_true(lambda x: x > 1e20, 1.0, rtol=1e-12, what="w", hi_limit=1e12)
    # a non-finite guess (log(1/delta) overflowed) starts from 1
    assert search.smallest_true(lambda x: x >= 3.0, math.inf, rtol=0.0, what="w") == 3.0
    assert search.largest_true(lambda x: x <= 3.0, math.nan, rtol=0.0, what="w") == 3.0


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1e-300, max_value=1e300), st.floats(min_value=1e-300,
                                                                 max_value=1e300))
def test_searches_find_the_boundary(boundary: float, guess: float) -> None:
    ok, seen = _calls(lambda x: x >= boundary)
    x = search.smallest_true(ok, guess, rtol=0.0, what="w")
    assert x == boundary or (x > boundary and math.nextafter(x, 0.0) <= boundary * (1 + 1e-15))
    assert len(seen) <= 2 * search.MAX_STEPS
    y = search.largest_true(lambda v: v <= boundary, guess, rtol=1e-12, what="w")
    assert y <= boundary and y >= boundary * (1 - 2e-12)
