"""The mixed filter (accounting="mixed"): pure, approximate and Gaussian releases in one
fully adaptive ledger.  Validity against an independent computation (mpmath, fractions,
the exact privacy curve of composed Gaussians), tightness against the basic and zCDP
filters, refusals in user terms, and the ledger round trip."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast.accounting import events as ev
from dpfast.budget import BasicFilter, Budget, BudgetExceededError, MixedFilter, ZcdpFilter

# --------------------------------------------------------------------------- independent model

mpmath.mp.prec = 200


def _rr_rdp(eps: float, a: float) -> mpmath.mpf:
    """RDP of binary randomized response with pure epsilon ``eps`` at order ``a``."""
    e, a = mpmath.mpf(eps), mpmath.mpf(a)
    return mpmath.log(mpmath.cosh((a - 0.5) * e) / mpmath.cosh(e / 2)) / (a - 1)


def _model(event) -> tuple[float | None, float, float | None]:
    """(pure epsilon or None, delta, sigma or None) of the events used here."""
    if isinstance(event, ev.Epsilon):
        return event.epsilon, 0.0, None
    if isinstance(event, ev.EpsilonDelta):
        return event.epsilon, event.delta, None
    assert isinstance(event, ev.Gaussian)
    return None, 0.0, event.noise_multiplier


def _r(event, a: float) -> mpmath.mpf:
    eps, _, sigma = _model(event)
    if sigma is not None:
        return mpmath.mpf(a) / (2 * mpmath.mpf(sigma) ** 2)
    return _rr_rdp(eps, a)


def _cap(eps: float, delta: float, a: float) -> mpmath.mpf:
    """CKS20 Prop. 12 cap: (a, B)-RDP gives (eps, delta)-DP."""
    a = mpmath.mpf(a)
    return (mpmath.mpf(eps) + (mpmath.log(mpmath.mpf(delta)) + mpmath.log(a)) / (a - 1)
            - mpmath.log(1 - 1 / a))


def certify(accepted, epsilon: float, delta: float, orders) -> None:
    """Independently re-derive that an accepted sequence is within (epsilon, delta):
    the phase-1 prefix by exact basic composition, phase 2 by an RDP member at one order
    (recomputed with mpmath) or the pure member, its deltas within half the rest."""
    E, D = Fraction(0), Fraction(0)
    k = 0
    while k < len(accepted):
        eps, dlt, _ = _model(accepted[k])
        if eps is None or E + Fraction(eps) > Fraction(epsilon) or \
                D + Fraction(dlt) > Fraction(delta):
            break
        E, D = E + Fraction(eps), D + Fraction(dlt)
        k += 1
    rest = accepted[k:]
    assert E <= Fraction(epsilon) and D <= Fraction(delta)
    if not rest:
        return
    eps2, dlt2 = Fraction(epsilon) - E, Fraction(delta) - D
    d_charges = sum((Fraction(_model(e)[1]) for e in rest), Fraction(0))
    assert d_charges <= dlt2 / 2
    pure = [_model(e)[0] for e in rest]
    if all(p is not None for p in pure) and sum(map(Fraction, pure)) <= eps2:
        return  # the pure member: basic composition of the rest
    d_rdp = dlt2 - dlt2 / 2
    # some order of the grid must certify (eps2, d_rdp) for the RDP of the good steps
    best = -mpmath.inf
    for a in orders:
        if math.isinf(a):
            continue
        total = sum(_r(e, a) for e in rest)
        slack = _cap(float(eps2), float(d_rdp) * (1 - 1e-12), a) - total
        best = max(best, slack)
    assert best >= -1e-12, f"no order certifies the phase-2 charges (slack {best})"


def _events(rng: random.Random, n: int):
    out = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.35:
            out.append(ev.Epsilon(rng.choice([0.01, 0.05, 0.1, 0.2, 0.3])))
        elif kind < 0.6:
            out.append(ev.EpsilonDelta(rng.choice([0.05, 0.1, 0.25]),
                                       rng.choice([1e-8, 1e-7, 3e-7])))
        else:
            out.append(ev.Gaussian(rng.choice([2.0, 5.0, 10.0, 20.0, 40.0])))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_mixed_sequences_stay_within_the_certified_budget(seed):
    rng = random.Random(seed)
    epsilon, delta = rng.choice([(1.0, 1e-6), (2.0, 1e-5), (0.5, 1e-6), (4.0, 1e-7)])
    b = Budget(epsilon, delta, accounting="mixed")
    accepted = []
    for e in _events(rng, 40):
        try:
            b.spend(e)
            accepted.append(e)
        except BudgetExceededError:
            pass
    certify(accepted, epsilon, delta, b.orders)
    spent = b.spent()
    assert spent.epsilon <= epsilon and spent.delta <= delta
    assert accepted  # something always fits a fresh budget here


def _gauss_delta(mu: float, eps: float) -> mpmath.mpf:
    """Exact delta(eps) of a Gaussian privacy curve with mu = sqrt(sum 1/sigma_i^2)."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("epsilon,delta,sigma", [(1.0, 1e-6, 6.0), (3.0, 1e-5, 3.0),
                                                 (0.5, 1e-8, 20.0)])
def test_gaussian_sequences_are_within_budget_by_the_exact_curve(epsilon, delta, sigma):
    b = Budget(epsilon, delta, accounting="mixed")
    n = 0
    while True:
        try:
            b.spend(ev.Gaussian(sigma))
        except BudgetExceededError:
            break
        n += 1
    assert n > 0
    assert _gauss_delta(math.sqrt(n) / sigma, epsilon) <= delta
    # and the Gaussian after a pure release uses what is left
    c = Budget(epsilon, delta, accounting="mixed")
    c.spend(ev.Epsilon(epsilon / 2))
    m = 0
    while True:
        try:
            c.spend(ev.Gaussian(sigma))
        except BudgetExceededError:
            break
        m += 1
    assert m < n
    if m:
        assert _gauss_delta(math.sqrt(m) / sigma, epsilon / 2) <= delta


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, 1e-9, 1e-7, 4e-7]),
                          st.sampled_from([0.03125, 0.1, 0.25, 0.5, 0.7])),
                min_size=1, max_size=25),
       st.sampled_from([(1.0, 1e-6), (2.0, 0.0), (1.5, 1e-5)]))
def test_as_tight_as_basic_on_pure_and_approximate_sequences(seq, budget):
    """Every charge basic composition accepts, the mixed filter accepts (the same
    decisions while basic composition accepts; phase 2 can only add)."""
    epsilon, delta = budget
    basic, mixed = BasicFilter(epsilon, delta), MixedFilter(epsilon, delta)
    sb, sm = basic.new_state(), mixed.new_state()
    for d, e in seq:
        event = ev.EpsilonDelta(e, d) if d else ev.Epsilon(e)
        cb, cm = basic.costs(event), mixed.costs(event)
        ok_b = basic.fits(sb, cb)
        ok_m = mixed.fits(sm, cm)
        assert ok_m or not ok_b
        if ok_b:
            basic.add(sb, cb)
        if ok_m:
            mixed.add(sm, cm)
    assert mixed.largest_pure_epsilon(sm) >= 0.0


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (0.25, 1e-6), (4.0, 1e-5),
                                           (1.0, 1e-10), (10.0, 1e-3)])
def test_equal_to_basic_on_pure_budgets_and_large_charges(epsilon, delta):
    for eps_i in (epsilon / 4, epsilon / 3, 0.3 * epsilon):
        counts = []
        for acc in ("basic", "mixed"):
            b = Budget(epsilon, delta, accounting=acc)
            n = 0
            while n < 100:
                try:
                    b.spend(ev.EpsilonDelta(eps_i, delta / 10))
                except BudgetExceededError:
                    break
                n += 1
            counts.append(n)
        assert counts[0] == counts[1]
    # a pure budget: exactly basic composition, remaining epsilon included
    b, m = Budget(epsilon, accounting="basic"), Budget(epsilon, accounting="mixed")
    for x in (b, m):
        x.spend(ev.Epsilon(epsilon / 8))
    assert b.remaining().epsilon == m.remaining().epsilon
    assert m.remaining().sigma == math.inf  # no Gaussian without delta


#: the stated factor: on Gaussian charges from a fresh budget the mixed filter admits at
#: least this fraction of the zCDP filter's rho (it converts with delta/2): 0.9 when
#: delta <= 1e-5 (0.92 to 0.97 measured for epsilon in [0.1, 8]), 0.8 up to delta = 1e-3
ZCDP_FACTOR = 0.9


@pytest.mark.parametrize("epsilon,delta", [(1.0, 1e-6), (0.1, 1e-5), (3.0, 1e-5),
                                           (1.0, 1e-10), (8.0, 1e-7), (0.1, 1e-3),
                                           (0.5, 1e-3)])
def test_within_a_stated_factor_of_zcdp_on_gaussian_sequences(epsilon, delta):
    factor = ZCDP_FACTOR if delta <= 1e-5 else 0.8
    z, m = ZcdpFilter(epsilon, delta), MixedFilter(epsilon, delta)
    rz = z.remaining(z.new_state()).rho
    rm = m.remaining(m.new_state()).rho
    assert rz is not None and rm is not None
    assert factor * rz <= rm <= rz
    # the same in numbers of charges of one Gaussian
    sigma = (1 + 1e-9) / math.sqrt(2 * rz / 20)  # zCDP fits 20 of them
    counts = []
    for f in (z, m):
        s, n = f.new_state(), 0
        c = f.costs(ev.Gaussian(sigma))
        while f.fits(s, c):
            f.add(s, c)
            n += 1
        counts.append(n)
    assert counts[0] == 20 and counts[1] >= math.floor(factor * 20)


def test_count_with_key_selection_then_topdown_share_one_ledger(tmp_path):
    """The events of a count with key selection (Laplace + approximate selection) and of
    TopDown (discrete Gaussians) are charged to one ledger, which reopens the same."""
    path = tmp_path / "shared.sqlite"
    b = Budget(2.0, 1e-5, ledger=path, accounting="mixed")
    count = ev.Composed([ev.Laplace(2.0), ev.EpsilonDelta(0.5, 1e-7)])
    topdown = ev.Composed([ev.DiscreteGaussian(8.0, 1), ev.DiscreteGaussian(10.0, 1)])
    b.spend(count, note="count")
    b.spend(topdown, note="topdown")
    b.spend(ev.Laplace(10.0), note="sum")
    left, spent = b.remaining(), b.spent()
    b.close()
    again = Budget.from_ledger(path)
    assert again.accounting == "mixed"
    assert again.remaining() == left and again.spent() == spent
    assert spent.epsilon <= 2.0 and spent.delta <= 1e-5
    again.close()


def test_a_mixed_composition_is_charged_as_the_sum_of_its_parts():
    m = MixedFilter(1.0, 1e-6)
    both = m.costs(ev.Composed([ev.Gaussian(10.0), ev.EpsilonDelta(0.1, 1e-8)]))
    g, a = m.costs(ev.Gaussian(10.0)), m.costs(ev.EpsilonDelta(0.1, 1e-8))
    assert both[-1] == 1e-8 and math.isinf(both[-2])  # delta, no pure bound
    for k in range(len(m.orders) - 1):
        assert both[k] >= g[k] + a[k] - 1e-15 * both[k]
    assert m.costs(ev.SelfComposed(ev.Epsilon(0.125), 4))[-2] == 0.5


@pytest.mark.parametrize("budget,event", [
    ((1.0, 0.0), ev.Gaussian(5.0)),
    ((1.0, 1e-6), ev.Gaussian(0.1)),
    ((1.0, 1e-6), ev.Epsilon(1.5)),
    ((1.0, 1e-6), ev.EpsilonDelta(0.5, 1e-5)),
])
def test_refusals_speak_in_user_terms(budget, event):
    b = Budget(*budget, accounting="mixed")
    with pytest.raises(BudgetExceededError) as info:
        b.spend(event)
    msg = str(info.value)
    assert "this release costs" in msg and "fits if its epsilon is at most" in msg
    for internal in ("approx_dp", "rdp_epsilons", "zcdp_rho", "Accountant", "accounting=",
                     "order", "_"):
        assert internal not in msg, msg
    if budget[1] == 0.0:
        assert "needs a budget with delta > 0" in msg


def test_mixed_ledger_checkpoints_keep_the_phase(tmp_path, monkeypatch):
    from dpfast.budget import checkpoint

    monkeypatch.setattr(checkpoint, "EVERY", 4)
    path = tmp_path / "m.sqlite"
    b = Budget(1.0, 1e-6, ledger=path, accounting="mixed")
    for e in (ev.Epsilon(0.125), ev.EpsilonDelta(0.125, 1e-7), ev.Gaussian(20.0),
              ev.Epsilon(0.01), ev.Gaussian(30.0)):
        b.spend(e)
    left = b.remaining()
    b.close()
    again = Budget(1.0, 1e-6, ledger=path, accounting="mixed")
    assert again.remaining() == left
    assert again.filter.fits(again._sync.state, again.filter.costs(ev.Gaussian(30.0))) == \
        (left.sigma <= 30.0)
    again.close()
