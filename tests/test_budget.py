"""Budget: the privacy filters (basic, zCDP, RDP), the API and its validation.

Durability and concurrency of the ledger are in ``test_budget_ledger.py``.
"""

from __future__ import annotations

import math
import pickle
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpfast.accounting import events as ev
from dpfast.budget import (
    DEFAULT_ORDERS,
    Budget,
    BudgetExceededError,
    Charge,
    Cost,
    Remaining,
)

from .helpers import KEY

# --------------------------------------------------------------------------- helpers


class StubMechanism:
    """Any object with ``.event`` and ``__call__(x, *, rng=None)``."""

    def __init__(self, event, budget=None, fail=False):
        self.event = event
        self.budget = budget
        self.fail = fail
        self.calls = []

    def __call__(self, x, *, rng=None):
        charged = len(self.budget.history()) if self.budget is not None else None
        self.calls.append((x, rng, charged))
        if self.fail:
            raise RuntimeError("mechanism failed")
        return x + 0.5


def mp_delta_of_rdp(alpha, rdp, epsilon):
    """CKS20 Prop. 12, forward: (alpha, rdp)-RDP => (epsilon, delta)-DP for this delta."""
    with mpmath.workprec(300):
        a = mpmath.mpf(alpha)
        return (
            mpmath.exp((a - 1) * (mpmath.mpf(rdp) - mpmath.mpf(epsilon)))
            * (1 - 1 / a) ** (a - 1)
            / a
        )


def mp_delta_of_zcdp(rho, epsilon):
    """CKS20 Cor. 13, forward: inf over alpha > 1 of the Prop. 12 delta at (alpha, alpha*rho)."""
    with mpmath.workprec(300):
        rho = mpmath.mpf(rho)
        eps = mpmath.mpf(epsilon)

        def logd(a):
            return (a - 1) * (a * rho - eps) + (a - 1) * mpmath.log(1 - 1 / a) - mpmath.log(a)

        # log-delta is convex in alpha: its derivative 2*rho*a - rho - eps + log(1 - 1/a)
        # is increasing; bisect for the root
        lo, hi = mpmath.mpf(1) + mpmath.mpf(10) ** -30, mpmath.mpf(10) ** 12
        for _ in range(400):
            mid = (lo + hi) / 2
            if 2 * rho * mid - rho - eps + mpmath.log(1 - 1 / mid) < 0:
                lo = mid
            else:
                hi = mid
        return mpmath.exp(logd((lo + hi) / 2))


def reference_filter(thresholds, rule, cost_rows):
    """Independent filter: exact Fraction sums; rule 'all' (basic/zcdp) or 'any' (rdp)."""
    sums = [Fraction(0)] * len(thresholds)
    decisions = []
    for costs in cost_rows:
        new = [
            None if math.isinf(c) else s + Fraction(c) for s, c in zip(sums, costs, strict=True)
        ]
        fits = [n is not None and n <= Fraction(t) for n, t in zip(new, thresholds, strict=True)]
        ok = any(fits) if rule == "any" else all(fits)
        decisions.append(ok)
        if ok:
            sums = [
                math.inf if (n is None or s == math.inf) else n
                for s, n in zip(sums, new, strict=True)
            ]
    return decisions


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        ((True,), {"accounting": "basic"}, TypeError, "epsilon"),
        (("1",), {"accounting": "basic"}, TypeError, "epsilon"),
        ((0.0,), {"accounting": "basic"}, ValueError, "epsilon"),
        ((-1.0,), {"accounting": "basic"}, ValueError, "epsilon"),
        ((math.inf,), {"accounting": "basic"}, ValueError, "epsilon"),
        ((math.nan,), {"accounting": "basic"}, ValueError, "epsilon"),
        ((1.0, -1e-9), {"accounting": "basic"}, ValueError, "delta"),
        ((1.0, 1.0), {"accounting": "basic"}, ValueError, "delta"),
        ((1.0, math.nan), {"accounting": "basic"}, ValueError, "delta"),
        ((1.0, "0"), {"accounting": "basic"}, TypeError, "delta"),
        ((1.0,), {"accounting": "rdp"}, ValueError, "delta"),  # rdp needs delta > 0
        ((1.0, 0.0), {"accounting": "advanced"}, ValueError, "delta"),
        ((0.03, 1e-6), {"accounting": "rdp", "orders": [2.0, 4.0]}, ValueError,
             "born exhausted"),
        ((1.0, 0.0), {"accounting": "zcdp"}, ValueError, "delta"),
        ((1.0, 1e-6), {"accounting": "RDP"}, ValueError, "accounting"),
        ((1.0, 1e-6), {"accounting": 3}, TypeError, "accounting"),
        ((1.0, 1e-6), {"orders": [1.0, 2.0]}, ValueError, "orders"),
        ((1.0, 1e-6), {"orders": [2.0, math.nan]}, ValueError, "orders"),
        ((1.0, 1e-6), {"orders": [2.0, True]}, TypeError, "orders"),
        ((1.0, 1e-6), {"orders": []}, ValueError, "orders"),
        ((1.0, 1e-6), {"orders": [2.0, 2.0]}, ValueError, "orders"),
        ((1.0, 1e-6), {"orders": "2"}, TypeError, "orders"),
        ((1.0, 1e-6), {"orders": 2.0}, TypeError, "orders"),
        ((1.0, 1e-6), {"accounting": "zcdp", "orders": [2.0]}, ValueError, "orders"),
        ((1.0, 1e-6), {"ledger": 3}, TypeError, "ledger"),
        ((1.0, 1e-6), {"ledger": ""}, ValueError, "ledger"),
        ((1.0, 1e-6), {"timeout": -1.0}, ValueError, "timeout"),
    ],
)
def test_constructor_validation(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        Budget(*args, **kwargs)


def test_numpy_scalars_and_orders_accepted():
    b = Budget(np.float64(1.0), np.float32(1e-6), orders=np.array([64, 128.5, 96]),
               accounting="rdp")
    assert b.epsilon == 1.0 and b.orders == (64.0, 96.0, 128.5)
    assert isinstance(b.epsilon, float)


def test_spend_validation():
    b = Budget(1.0, accounting="basic")
    with pytest.raises(TypeError, match="event"):
        b.spend(0.1)
    with pytest.raises(TypeError, match="event"):
        b.spend({"type": "Epsilon", "epsilon": 0.1})
    with pytest.raises(TypeError, match="note"):
        b.spend(ev.Epsilon(0.1), note=None)
    with pytest.raises(TypeError, match="analyst"):
        b.spend(ev.Epsilon(0.1), analyst=7)
    with pytest.raises(TypeError, match="mechanism"):
        b.release(object(), 1.0)
    assert b.history() == []


# --------------------------------------------------------------------------- basic


def test_basic_exact_binary_sums():
    b = Budget(1.0, accounting="basic")
    for _ in range(4):
        b.spend(ev.Epsilon(0.25))
    assert b.remaining().epsilon == 0.0
    assert b.remaining().exhausted
    with pytest.raises(BudgetExceededError):
        b.spend(ev.Epsilon(5e-324))  # the smallest positive double does not fit
    b.spend(ev.Epsilon(0.0))  # a free charge still fits

    # ten times the double 0.1 is 1 + 5.55e-17 > 1: the tenth charge is refused
    c = Budget(1.0, accounting="basic")
    assert sum(Fraction(0.1) for _ in range(10)) > 1
    for _ in range(9):
        c.spend(ev.Epsilon(0.1))
    with pytest.raises(BudgetExceededError):
        c.spend(ev.Epsilon(0.1))
    rem = c.remaining().epsilon
    exact = Fraction(1) - 9 * Fraction(0.1)
    assert Fraction(rem) <= exact and exact - Fraction(rem) < Fraction(2.0**-52)


def test_basic_delta_is_a_second_constraint():
    b = Budget(1.0, 1e-6, accounting="basic")
    b.spend(ev.EpsilonDelta(0.1, 6e-7))
    with pytest.raises(BudgetExceededError, match="delta"):
        b.spend(ev.EpsilonDelta(0.1, 6e-7))  # epsilon fits, delta does not
    b.spend(ev.Epsilon(0.5))  # pure charges still fit
    rem = b.remaining()
    assert rem.delta == pytest.approx(4e-7, rel=1e-12) and rem.delta <= 1e-6 - 6e-7
    spent = b.spent()
    assert spent.delta == 6e-7 and Fraction(spent.epsilon) >= Fraction(0.1) + Fraction(0.5)


def test_refused_charge_is_recorded_but_not_counted():
    b = Budget(1.0, accounting="basic")
    b.spend(ev.Epsilon(0.75), note="first")
    before = (b.history(), b.remaining(), b.spent())
    with pytest.raises(BudgetExceededError) as info:
        b.spend(ev.Epsilon(0.5), note="too much", analyst="eve")
    err = info.value
    assert (b.history(), b.remaining(), b.spent()) == before
    refused = b.history(include_refused=True)[-1]
    assert (refused.status, refused.analyst, refused.note) == ("refused", "eve", "too much")
    assert refused.cost == Cost(epsilon=0.5, delta=0.0) and refused.id == 2
    assert err.event == ev.Epsilon(0.5)
    assert err.cost == Cost(epsilon=0.5, delta=0.0)
    assert err.remaining.epsilon == 0.25
    assert err.ledger is None
    assert "0.5" in str(err) and "0.25" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (again.event, again.cost, again.remaining, str(again)) == (
        err.event,
        err.cost,
        err.remaining,
        str(err),
    )


def test_basic_adaptive_sequence_matches_reference():
    """Each charge depends on the previous noisy output (fully adaptive)."""
    rng = np.random.default_rng(20240601)
    b = Budget(3.0, 1e-5, accounting="basic")
    from dpfast.accounting.pure import approx_dp

    mech_value = 0.0
    events, decisions = [], []
    for _ in range(300):
        # the analyst picks the next mechanism from the last released value
        e = float(abs(mech_value) % 0.07) + 1e-3
        event = ev.EpsilonDelta(e, 1e-7) if mech_value > 0 else ev.Laplace(1.0 / e)
        events.append(event)
        mech = StubMechanism(event)
        try:
            mech_value = b.release(mech, float(rng.normal()))
            decisions.append(True)
        except BudgetExceededError:
            mech_value = float(rng.normal())
            decisions.append(False)
    rows = [approx_dp(e) for e in events]
    assert decisions == reference_filter((3.0, 1e-5), "all", rows)
    assert 0 < sum(decisions) < len(decisions)
    assert len(b.history()) == sum(decisions)


# --------------------------------------------------------------------------- release


def test_release_charges_before_drawing_noise():
    b = Budget(1.0, accounting="basic")
    mech = StubMechanism(ev.Epsilon(0.5), budget=b)
    rng = object()
    assert b.release(mech, 2.0, note="n", analyst="a", rng=rng) == 2.5
    assert mech.calls == [(2.0, rng, 1)]  # the charge was in the ledger during the call
    (charge,) = b.history()
    assert (charge.note, charge.analyst, charge.event) == ("n", "a", ev.Epsilon(0.5))


def test_release_refused_never_calls_the_mechanism():
    b = Budget(1.0, accounting="basic")
    mech = StubMechanism(ev.Epsilon(1.5), budget=b)
    with pytest.raises(BudgetExceededError):
        b.release(mech, 2.0)
    assert mech.calls == [] and b.history() == []


def test_release_failure_keeps_the_charge():
    b = Budget(1.0, accounting="basic")
    mech = StubMechanism(ev.Epsilon(0.5), budget=b, fail=True)
    with pytest.raises(RuntimeError, match="mechanism failed"):
        b.release(mech, 2.0)
    assert len(b.history()) == 1 and b.remaining().epsilon == 0.5
    assert b.history()[0].status == "failed"


def test_release_with_real_mechanisms():
    from dpfast import mechanisms, random

    mech = mechanisms.DiscreteLaplaceMechanism(epsilon=0.5, sensitivity=1)
    b = Budget(1.25, accounting="basic")  # two releases (about 0.5 each) fit, not three
    rng = random.default_rng(key=KEY)
    x = np.arange(10)
    y = b.release(mech, x, rng=rng, note="counts")
    assert np.shape(y) == x.shape and y.dtype == x.dtype
    assert b.history()[0].event == mech.event
    b.release(mech, x, rng=rng)
    with pytest.raises(BudgetExceededError):
        b.release(mech, x, rng=rng)
    g = mechanisms.GaussianMechanism(epsilon=0.5, delta=1e-7, sensitivity=1.0)
    r = Budget(1.0, 1e-6)
    r.release(g, np.zeros(3), rng=rng)
    assert r.history()[0].event == g.event


def test_quick_start_budget_allows_two_half_epsilon_releases():
    """Issue: the README's Budget(1.0, 1e-6) allowed one DiscreteLaplaceMechanism(0.5)."""
    from dpfast import mechanisms

    mech = mechanisms.DiscreteLaplaceMechanism(epsilon=0.5)
    b = Budget(1.0, 1e-6)
    counts = np.array([3, 4])
    b.release(mech, counts)
    b.release(mech, counts)  # the pure-DP member accepts what basic composition accepts
    assert len(b.history()) == 2


@pytest.mark.parametrize(
    ("x", "exc"),
    [
        (np.array([1.5]), TypeError),  # float data into a discrete mechanism
        (np.array([True]), TypeError),
        (np.array(["a"]), TypeError),
    ],
)
def test_release_validates_before_charging(tmp_path, x, exc):
    from dpfast import mechanisms

    b = Budget(1.0, ledger=tmp_path / "l.sqlite")
    with pytest.raises(exc):
        b.release(mechanisms.DiscreteLaplaceMechanism(0.5), x)
    assert b.history(include_refused=True) == [] and b.remaining().epsilon == 1.0
    g = mechanisms.LaplaceMechanism(0.5)
    for bad in (np.array([np.nan]), np.array([np.inf, 1.0]), np.array([1e308])):
        with pytest.raises(ValueError):
            b.release(g, bad)
    with pytest.raises(TypeError, match="rng"):
        b.release(g, np.array([1.0]), rng=object())
    with pytest.raises(ValueError, match="rng"):
        b.release(g, np.array([1.0]), rng=b"short")
    assert b.history(include_refused=True) == [] and b.spent().epsilon == 0.0
    b.close()
    reopened = Budget(1.0, ledger=tmp_path / "l.sqlite")
    assert reopened.history(include_refused=True) == []


def test_release_noise_dependent_failure_is_charged_and_recorded_failed(tmp_path):
    from dpfast import mechanisms

    mech = mechanisms.DiscreteLaplaceMechanism(0.5)
    b = Budget(1.0, ledger=tmp_path / "l.sqlite")
    top = np.array([np.iinfo(np.int64).max - 1] * 64, dtype=np.int64)
    with pytest.raises(OverflowError):  # x + noise leaves int64: depends on the noise
        b.release(mech, top, note="near the limit")
    (charge,) = b.history()
    assert charge.status == "failed" and charge.note == "near the limit"
    assert b.remaining().epsilon < 1.0  # it cost budget
    b.close()
    again = Budget(1.0, ledger=tmp_path / "l.sqlite")
    assert [c.status for c in again.history()] == ["failed"]
    assert again.spent().epsilon == charge.cost.epsilon


# --------------------------------------------------------------------------- history


def test_history_records_and_events_round_trip():
    b = Budget(200.0, 1e-5)  # large: this test is about the records, not the filter
    nested = [  # one neighbouring relation per budget: add/remove-one here
        ev.Gaussian(3.0),
        ev.PoissonSampled(ev.Gaussian(1.1), 0.01),
        ev.SelfComposed(ev.PoissonSampled(ev.Gaussian(1.1), 0.01), 10),
        ev.Composed([ev.Laplace(20.0), ev.Gaussian(30.0), ev.Composed([ev.Zcdp(0.001)])]),
        ev.Epsilon(0.1),
    ]
    replace_one = Budget(200.0, 1e-5)
    for e in (ev.RandomizedResponse(0.5, k=3),
              ev.SampledWithoutReplacement(ev.Gaussian(2.0), 10, 1000)):
        assert replace_one.spend(e).event == e
    assert [c.event.neighbouring for c in replace_one.history()] == ["replace_one"] * 2
    returned = [b.spend(e, note=f"n{i}", analyst="ana") for i, e in enumerate(nested)]
    hist = b.history()
    assert [h.event for h in hist] == nested
    assert [h.id for h in hist] == [r.id for r in returned] == sorted({h.id for h in hist})
    for i, (h, r) in enumerate(zip(hist, returned, strict=True)):
        assert isinstance(h, Charge)
        assert (h.note, h.analyst) == (f"n{i}", "ana")
        assert h.time.tzinfo is not None
        assert abs((h.time - r.time).total_seconds()) < 1e-3
        assert h.cost == r.cost and h.cost.orders == b.orders
        assert ev.from_dict(__import__("json").loads(h.event_json)) == h.event


# --------------------------------------------------------------------------- zCDP


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.1, 1e-9), (8.0, 1e-5), (3.0, 0.01)])
def test_zcdp_threshold_is_cks20_cor13_inverse(epsilon, delta):
    b = Budget(epsilon, delta, accounting="zcdp")
    (rho,) = b.thresholds
    # valid: CKS20 Cor. 13 converts rho-zCDP to (epsilon, <= delta)
    assert mp_delta_of_zcdp(rho, epsilon) <= delta
    # and (nearly) the largest such rho
    assert mp_delta_of_zcdp(rho * (1 + 1e-9), epsilon) > delta
    # better than the classic Bun-Steinke conversion eps = rho + 2 sqrt(rho log(1/delta))
    bs = (math.sqrt(math.log(1 / delta) + epsilon) - math.sqrt(math.log(1 / delta))) ** 2
    assert rho >= bs


def test_zcdp_filter_counts():
    b = Budget(1.0, 1e-6, accounting="zcdp")
    (rho_b,) = b.thresholds
    step = 2.0**-10
    n = 0
    while True:
        try:
            b.spend(ev.Zcdp(step))
        except BudgetExceededError:
            break
        n += 1
    assert n == math.floor(Fraction(rho_b) / Fraction(step))
    rem = b.remaining()
    assert rem.rho == rho_b - n * step and 0 <= rem.rho < step
    assert Fraction(rem.epsilon) ** 2 / 2 <= Fraction(rem.rho)
    assert rem.delta == 1e-6
    # an epsilon-DP charge of remaining().epsilon fits (up to the accountant's rounding up)
    b.spend(ev.Epsilon(rem.epsilon * (1 - 1e-9)))


def test_zcdp_refuses_events_without_zcdp_and_records_nothing():
    b = Budget(1.0, 1e-6, accounting="zcdp")
    with pytest.raises(ValueError):
        b.spend(ev.EpsilonDelta(0.1, 1e-9))
    assert b.history() == []


def test_zcdp_gaussian_cost_by_hand():
    b = Budget(1.0, 1e-6, accounting="zcdp")
    charge = b.spend(ev.Gaussian(10.0))
    # Gaussian with sigma / sensitivity = 10 is 1/(2*10^2)-zCDP (Bun & Steinke 2016)
    assert charge.cost.rho >= 0.005 and charge.cost.rho == pytest.approx(0.005, rel=1e-12)


# --------------------------------------------------------------------------- RDP


def live_orders(b):
    """(alpha, cap) of the live finite orders of an rdp budget, and their number m."""
    out = [
        (a, c)
        for a, c in zip(b.orders, b.thresholds, strict=True)
        if math.isfinite(a) and c != -math.inf
    ]
    return out, len(out)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.5, 1e-8), (8.0, 1e-5)])
def test_rdp_thresholds_by_hand(epsilon, delta):
    b = Budget(epsilon, delta, orders=DEFAULT_ORDERS, accounting="rdp")
    live, m = live_orders(b)
    assert 0 < m < len(DEFAULT_ORDERS) - 1  # some orders are dead for these budgets
    assert b.orders[-1] == math.inf and b.thresholds[-1] == epsilon  # the pure member
    for alpha, cap in live:
        # CKS20 Prop. 12 maps (alpha, cap)-RDP to (epsilon, <= delta/m)-DP ...
        assert mp_delta_of_rdp(alpha, cap, epsilon) <= mpmath.mpf(delta) / m
        # ... and cap is the largest such value (up to its rounding down)
        assert mp_delta_of_rdp(alpha, cap + 1e-12 * max(1.0, abs(cap)), epsilon) > (
            mpmath.mpf(delta) / m
        )
        # closed form: B = eps + (log(delta/m) + log(alpha)) / (alpha - 1) - log(1 - 1/alpha)
        closed = (
            epsilon + (math.log(delta / m) + math.log(alpha)) / (alpha - 1) - math.log1p(-1 / alpha)
        )
        assert cap == pytest.approx(closed, rel=1e-12, abs=1e-12) and cap > 0
    # an order is dead iff its cap with delta split over all finite orders is not positive
    n_finite = len(DEFAULT_ORDERS) - 1
    for alpha, cap in zip(b.orders[:-1], b.thresholds[:-1], strict=True):
        first = (
            epsilon
            + (math.log(delta / n_finite) + math.log(alpha)) / (alpha - 1)
            - math.log1p(-1 / alpha)
        )
        assert (cap == -math.inf) == (first <= 0)


def test_rdp_thresholds_match_dp_accounting_conversion():
    rdp_mod = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    b = Budget(2.0, 1e-6, orders=DEFAULT_ORDERS, accounting="rdp")
    live, m = live_orders(b)
    for alpha, cap in live:
        eps, _ = rdp_mod.compute_epsilon([alpha], [cap], 1e-6 / m)
        assert eps == pytest.approx(2.0, abs=1e-12)


def test_rdp_identical_gaussians_count_by_hand():
    """N identical Gaussian charges: N = max over orders of floor(B_alpha / (alpha/(2 s^2)))."""
    sigma = 7.3
    epsilon, delta = 2.0, 1e-6
    b = Budget(epsilon, delta, orders=DEFAULT_ORDERS, accounting="rdp")
    live, m = live_orders(b)
    with mpmath.workprec(200):
        s2 = mpmath.mpf(sigma) ** 2
        counts = []
        for alpha, _ in live:
            a = mpmath.mpf(alpha)
            cap = (
                epsilon
                + (mpmath.log(mpmath.mpf(delta) / m) + mpmath.log(a)) / (a - 1)
                - mpmath.log(1 - 1 / a)
            )
            ratio = cap / (a / (2 * s2))
            counts.append(ratio)
        best = max(counts)
        expected = int(mpmath.floor(best)) if best > 0 else 0
        assert best - expected > 1e-6 and expected + 1 - best > 1e-6  # not on a boundary
    n = 0
    while True:
        try:
            b.spend(ev.Gaussian(sigma))
        except BudgetExceededError as err:
            # the refusal says which Gaussian would still fit: a larger noise multiplier
            assert err.remaining.sigma > sigma
            break
        n += 1
    assert n == expected


def test_rdp_at_least_one_order_rule_and_reference():
    """Charges stay accepted while at least one order fits; decisions match a reference."""
    from dpfast.accounting.rdp import rdp_epsilons

    orders = (4.0, 8.0, 32.0)
    b = Budget(6.0, 1e-5, orders=orders, accounting="rdp")
    caps = b.thresholds
    assert all(c > 0 for c in caps)
    # Gaussians are cheap at low orders (cost grows with alpha); Laplace and pure-DP charges
    # are nearly flat in alpha, so different orders become decisive along the way
    rng = np.random.default_rng(7)
    events = []
    for _ in range(200):
        u = rng.random()
        if u < 0.4:
            events.append(ev.Gaussian(float(rng.uniform(2.0, 12.0))))
        elif u < 0.8:
            events.append(ev.Laplace(float(rng.uniform(2.0, 40.0))))
        else:
            events.append(ev.Epsilon(float(rng.uniform(0.01, 0.3))))
    decisions = []
    for e in events:
        try:
            b.spend(e)
            decisions.append(True)
        except BudgetExceededError:
            decisions.append(False)
    rows = [tuple(float(v) for v in rdp_epsilons(e, orders)) for e in events]
    assert decisions == reference_filter(caps, "any", rows)
    # the scenario exercises the rule: some order died while charges were still accepted
    rem = b.remaining()
    assert min(rem.rdp) < 0  # an order was overrun while charges were still accepted
    accepted = [r for r, d in zip(rows, decisions, strict=True) if d]
    sums = [math.fsum(col) for col in zip(*accepted, strict=True)]
    dead_early = [k for k in range(3) if sums[k] > caps[k]]
    assert dead_early, "no order was exhausted before the end; scenario too weak"
    assert len(b.history()) == sum(decisions)


def test_rdp_remaining_epsilon_charge_fits():
    def fresh():
        b = Budget(1.0, 1e-6, orders=DEFAULT_ORDERS, accounting="rdp")
        for _ in range(3):
            b.spend(ev.Gaussian(20.0))
        return b

    b = fresh()
    rem = b.remaining()
    assert isinstance(rem, Remaining) and rem.orders == DEFAULT_ORDERS
    # remaining().epsilon is exactly the filter's answer: Epsilon(rem.epsilon) fits ...
    b.spend(ev.Epsilon(rem.epsilon))
    # ... and the next double does not
    with pytest.raises(BudgetExceededError):
        fresh().spend(ev.Epsilon(math.nextafter(rem.epsilon, math.inf)))
    # the same for the smallest Gaussian noise multiplier
    g = fresh()
    sigma = g.remaining().sigma
    assert 1 < sigma < math.inf
    with pytest.raises(BudgetExceededError):
        g.spend(ev.Gaussian(math.nextafter(sigma, 0.0)))
    g.spend(ev.Gaussian(sigma))
    # every live order of the final state converts to (epsilon, delta/m) non-adaptively
    rdp_mod = pytest.importorskip("dp_accounting.rdp.rdp_privacy_accountant")
    spent = b.spent().rdp
    live, m = live_orders(b)
    caps = dict(live)
    alive = [
        (a, s) for a, s in zip(b.orders, spent, strict=True) if a in caps and s <= caps[a]
    ]
    assert alive
    for a, s in alive:
        eps, _ = rdp_mod.compute_epsilon([a], [s], 1e-6 / m)
        assert eps <= 1.0 + 1e-12


def test_rdp_event_without_rdp_bound():
    b = Budget(1.0, 1e-6, accounting="rdp")
    with pytest.raises(ValueError, match="accounting='mixed' charges it"):
        b.spend(ev.EpsilonDelta(0.1, 1e-9))
    assert b.history() == []


def test_pickling_and_closing(tmp_path):
    mem = Budget(1.0, accounting="basic")
    with pytest.raises(TypeError, match="in-memory"):
        pickle.dumps(mem)
    path = tmp_path / "b.sqlite"
    with Budget(1.0, accounting="basic", ledger=path) as b:
        b.spend(ev.Epsilon(0.25))
        clone = pickle.loads(pickle.dumps(b))
        clone.spend(ev.Epsilon(0.25))
        assert b.remaining().epsilon == 0.5  # same ledger, not a copy
        clone.close()
    with pytest.raises(ValueError, match="closed"):
        b.spend(ev.Epsilon(0.1))
    assert "basic" in repr(b)


@pytest.mark.parametrize(("epsilon", "delta"), [(1.0, 1e-6), (0.1, 1e-9), (8.0, 1e-5)])
def test_caps_agree_with_dpfast_conversions(epsilon, delta):
    """The caps invert dpfast's own conversions (which round up by a few ulps)."""
    from dpfast.accounting.rdp import epsilon_from_rdp
    from dpfast.accounting.zcdp import zcdp_epsilon

    (rho,) = Budget(epsilon, delta, accounting="zcdp").thresholds
    assert zcdp_epsilon(rho, delta) == pytest.approx(epsilon, rel=1e-12)
    assert zcdp_epsilon(rho * (1 + 1e-9), delta) > epsilon
    b = Budget(epsilon, delta, orders=DEFAULT_ORDERS, accounting="rdp")
    live, m = live_orders(b)
    for alpha, cap in live:
        eps, _ = epsilon_from_rdp([alpha], [cap], delta / m)
        assert eps == pytest.approx(epsilon, rel=1e-12)


# --------------------------------------------------------------------------- RDP default filter


def prefix(budget, events):
    """Number of charges accepted before the first refusal (or unsupported event)."""
    n = 0
    for e in events:
        try:
            budget.spend(e)
        except (BudgetExceededError, ValueError):
            break
        n += 1
    return n


def test_rdp_default_is_the_zcdp_order_plus_inf():
    from dpfast._core.conversions import zcdp_cap

    for epsilon, delta in [(1.0, 1e-6), (0.03, 1e-6), (8.0, 1e-5)]:
        b = Budget(epsilon, delta, accounting="rdp")
        rho, alpha = zcdp_cap(epsilon, delta)
        assert b.orders == (alpha, math.inf)
        cap, pure = b.thresholds
        assert pure == epsilon
        assert mp_delta_of_rdp(alpha, cap, epsilon) <= delta  # the whole delta, one order
        # the same cap as the zCDP filter's rho_B at alpha*, up to one rounding each
        assert Fraction(rho) * Fraction(alpha) <= Fraction(cap) * (1 + Fraction(1, 10**15))
    # the example: born exhausted before, now 100 charges of 0.0003 (as basic)
    tiny = Budget(0.03, 1e-6, accounting="rdp")
    assert prefix(tiny, [ev.Epsilon(0.0003)] * 200) >= prefix(
        Budget(0.03, 1e-6, accounting="basic"), [ev.Epsilon(0.0003)] * 200
    ) >= 99


charge_st = st.one_of(
    st.floats(1e-4, 0.6).map(ev.Epsilon),
    st.floats(0.5, 300.0).map(ev.Gaussian),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([(1.0, 1e-6), (0.3, 1e-8), (4.0, 1e-5)]),
    st.lists(charge_st, min_size=1, max_size=60),
)
def test_rdp_accepts_at_least_what_basic_and_zcdp_accept(budget_def, charges):
    """Prefix theorem: every prefix that basic (pure charges) or zCDP accepts, rdp accepts."""
    from dpfast.accounting.zcdp import zcdp_rho

    eps, delta = budget_def
    n_rdp = prefix(Budget(eps, delta, accounting="rdp"), charges)
    n_basic = prefix(Budget(eps, delta, accounting="basic"), charges)
    zcdp = Budget(eps, delta, accounting="zcdp")
    n_zcdp = prefix(zcdp, charges)
    assert n_rdp >= n_basic
    if n_rdp < n_zcdp:
        # only inside the accountants' rounding window (about 1e-15 relative) of the cap
        total = math.fsum(zcdp_rho(e) for e in charges[: n_rdp + 1])
        (rho_b,) = zcdp.thresholds
        assert abs(total - rho_b) <= 1e-12 * rho_b


# --------------------------------------------------------------------------- advanced


def test_advanced_accepts_many_more_small_charges():
    adv = prefix(Budget(1.0, 1e-6, accounting="advanced"), [ev.Epsilon(0.01)] * 1000)
    basic = prefix(Budget(1.0, 1e-6, accounting="basic"), [ev.Epsilon(0.01)] * 1000)
    assert adv >= 200 and basic == 99  # the double 0.01 is above 1/100
    assert adv == 333  # sqrt(2 log(2e6) k 1e-4) + k 5e-5 <= 1 iff k <= 333
    # one large charge: the basic member accepts it, the advanced bound alone would not
    assert prefix(Budget(1.0, 1e-6, accounting="advanced"), [ev.Epsilon(1.0)]) == 1


def theorem_ok(eps_list, delta_list, epsilon, delta):
    """Whitehouse et al. 2023 filter condition (delta' = delta'' = delta/2), 300 bits."""
    s = sum((Fraction(e) ** 2 for e in eps_list), Fraction(0))
    d = sum((Fraction(x) for x in delta_list), Fraction(0))
    with mpmath.workprec(300):
        sm = mpmath.mpf(s.numerator) / s.denominator
        bound = mpmath.sqrt(2 * mpmath.log(2 / mpmath.mpf(delta)) * sm) + sm / 2
        return bound <= epsilon and d <= Fraction(delta) / 2, float(bound - epsilon)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([(1.0, 1e-6), (0.5, 1e-9), (3.0, 1e-5)]),
    st.lists(
        st.tuples(st.floats(1e-4, 0.4), st.sampled_from([0.0, 0.0, 1e-9, 1e-8])),
        min_size=1,
        max_size=120,
    ),
)
def test_advanced_never_certifies_more_than_the_theorem(budget_def, charges):
    epsilon, delta = budget_def
    b = Budget(epsilon, delta, accounting="advanced")
    accepted: list[tuple[float, float]] = []
    for e, d in charges:
        event = ev.EpsilonDelta(e, d) if d else ev.Epsilon(e)
        try:
            b.spend(event)
            ok = True
        except BudgetExceededError:
            ok = False
        trial = [*accepted, (e, d)]
        basic_ok = sum(Fraction(x) for x, _ in trial) <= Fraction(epsilon) and all(
            y == 0 for _, y in trial
        )
        adv_ok, margin = theorem_ok([x for x, _ in trial], [y for _, y in trial], epsilon, delta)
        if ok:
            assert basic_ok or adv_ok  # never beyond what a theorem gives
        elif abs(margin) > 1e-12:
            assert not (basic_ok or adv_ok)  # and refuses only what neither gives
        if ok:
            accepted = trial
    spent = b.spent()
    assert spent.epsilon <= epsilon and spent.delta <= delta


# --------------------------------------------------------------------------- plain answers


@pytest.mark.parametrize("accounting", ["basic", "advanced", "zcdp", "rdp"])
def test_remaining_gives_the_next_release_that_fits(accounting):
    def fresh():
        b = Budget(1.0, 1e-6, accounting=accounting)
        b.spend(ev.Epsilon(0.125))
        b.spend(ev.Epsilon(0.0625))
        return b

    rem = fresh().remaining()
    assert rem.accounting == accounting and 0 < rem.epsilon < 1
    fresh().spend(ev.Epsilon(rem.epsilon))
    with pytest.raises(BudgetExceededError):
        fresh().spend(ev.Epsilon(math.nextafter(rem.epsilon, math.inf)))
    if accounting in ("basic", "advanced"):
        assert rem.sigma == math.inf and rem.rho is None
    else:
        fresh().spend(ev.Gaussian(rem.sigma))
        with pytest.raises(BudgetExceededError):
            fresh().spend(ev.Gaussian(math.nextafter(rem.sigma, 0.0)))
        if accounting == "rdp":  # the rho of that Gaussian, rounded down
            assert Fraction(rem.rho) <= 1 / (2 * Fraction(rem.sigma) ** 2)
        else:  # zcdp: the rho left, which that Gaussian's rounded-up cost fits
            b = fresh()
            assert rem.rho == b.thresholds[0] - b.spent().rho
            assert Fraction(rem.rho) >= 1 / (2 * Fraction(rem.sigma) ** 2)
    spent = fresh().spent()
    assert spent.epsilon is not None and spent.delta is not None
    assert Fraction(0.1875) <= Fraction(spent.epsilon) <= 1.0
    text = repr(fresh())
    assert "spent (epsilon=" in text and "next release fits if pure epsilon <=" in text


def test_spent_certifies_pure_charges_exactly_and_gaussians_by_conversion():
    from dpfast.accounting.zcdp import zcdp_epsilon

    b = Budget(1.0, 1e-6)
    b.spend(ev.Epsilon(0.25))
    assert (b.spent().epsilon, b.spent().delta) == (0.25, 0.0)  # basic, no delta used
    z = Budget(1.0, 1e-6, accounting="zcdp")
    z.spend(ev.Gaussian(10.0))
    assert z.spent().epsilon == zcdp_epsilon(z.spent().rho, 1e-6) and z.spent().delta == 1e-6


def test_budget_without_delta_is_pure():
    b = Budget(epsilon=1.0)
    assert (b.accounting, b.delta) == ("basic", 0.0)
    with pytest.raises(ValueError, match="delta"):
        b.spend(ev.Gaussian(3.0))  # a Gaussian has no pure-DP guarantee
    with pytest.raises(ValueError, match=r"pass delta, e\.g\. Budget\(1\.0, 1e-6\)"):
        Budget(1.0, accounting="rdp")


def test_use_case_warns_outside_its_range():
    import warnings

    with pytest.warns(UserWarning, match="healthcare"):
        Budget(5.0, use_case="healthcare")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Budget(1.0, use_case="healthcare")
    with pytest.raises(ValueError):
        Budget(1.0, use_case="no such use case")


def test_docs_budget_example_runs(capsys):
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "budget.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "docs/budget.md", "exec"), {})
    out = capsys.readouterr().out
    assert "spent (epsilon=0.5, delta=0); next release fits if pure epsilon <= 0.5" in out
    assert "exceeds the remaining budget" in out


def test_rdp_default_on_dpsgd_steps_is_close_to_offline_accounting():
    """Subsampled Gaussians charged one step at a time: within 3% of the offline count."""
    from dpfast.accounting import RdpAccountant

    epsilon, delta = 1.0, 1e-5
    step = ev.PoissonSampled(ev.Gaussian(1.5), 0.01)
    lo, hi = 0, 4000  # largest count the offline (non-adaptive) accountant certifies
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if RdpAccountant().compose(step, mid).get_epsilon(delta) <= epsilon:
            lo = mid
        else:
            hi = mid
    online = prefix(Budget(epsilon, delta, accounting="rdp"), [step] * (lo + 100))
    assert 0.97 * lo <= online <= 1.01 * lo
