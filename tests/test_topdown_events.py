"""TopDown's privacy event: one exact discrete Gaussian per measured level, composed.

Checked: the event's fields (the sigma the noise is drawn with, sensitivity 1), that the
RDP / zCDP charge equals the former single ``Zcdp(rho_total)`` up to float rounding upwards,
that :class:`~dpfast.accounting.PldAccountant` gives a smaller epsilon that agrees with the
exact hockey-stick divergence (mpmath: the composed pair's loss is a function of the sum of
the outputs for equal sigmas; a direct double sum for two levels), and that budget ledgers
holding the former ``Zcdp`` records still load and compose with the new events.
"""

from __future__ import annotations

import functools
import json
import math
import subprocess
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpfast
from dpfast import tables
from dpfast.accounting import PldAccountant, RdpAccountant, ZcdpAccountant
from dpfast.accounting import events as ev
from dpfast.accounting.zcdp import zcdp_epsilon, zcdp_rho
from dpfast.budget.records import deserialize_event, serialize_event

from .helpers import KEY, cks20_delta, dgauss_pmf_table
from .test_topdown import census_like

DELTA = 1e-10
# census-shaped: nation, states, counties, tracts, block groups, blocks
CENSUS = (1, 51, 300, 1500, 3000, 12000)


@pytest.fixture(scope="module")
def census():
    return census_like(np.random.default_rng(11), CENSUS)


def _old_rho_total(sigma: list[float]) -> float:
    """The former event's rho: the exact sum of 1 / (2 sigma_j^2), rounded up once."""
    total = sum((1 / (2 * Fraction(s) ** 2) for s in sigma if s), Fraction(0))
    f = float(total)
    return f if Fraction(f) >= total else math.nextafter(f, math.inf)


# ----------------------------------------------------------------- exact references


@functools.cache
def _sum_pmf(sigma: float, n: int) -> dict[int, mpmath.mpf]:
    """pmf of the sum of n independent N_Z(0, sigma^2), in mpmath (40 digits)."""
    one = dgauss_pmf_table(sigma)
    out = dict(one)
    with mpmath.workdps(40):
        for _ in range(n - 1):
            nxt: dict[int, mpmath.mpf] = {}
            for y, p in out.items():
                for x, q in one.items():
                    nxt[y + x] = nxt.get(y + x, 0) + p * q
            out = nxt
    return out


def _composed_delta_exact(sigma: float, n: int, eps: float) -> mpmath.mpf:
    """delta(eps) of n levels of N_Z(0, s^2) vs N_Z(1, s^2), all with one sigma.

    The privacy loss (n - 2 sum_j x_j) / (2 s^2) is a function of y = sum_j x_j, so the
    hockey-stick divergence of the vectors is that of y: P(y) vs P(y - n).
    """
    pmf = _sum_pmf(sigma, n)
    with mpmath.workdps(40):
        e = mpmath.exp(mpmath.mpf(eps))
        return mpmath.fsum(max(p - e * pmf.get(y - n, 0), 0) for y, p in pmf.items())


def _composed_epsilon_exact(sigma: float, n: int, delta: float) -> float:
    """The smallest eps with delta(eps) <= delta (bisection to 1e-12 relative)."""
    lo, hi = 0.0, 1.0
    while _composed_delta_exact(sigma, n, hi) > delta:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2
        if _composed_delta_exact(sigma, n, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def _two_level_delta_exact(s1: float, s2: float, eps: float) -> mpmath.mpf:
    """delta(eps) = E_P[(1 - e^(eps - L))_+] over both levels' outputs, L the summed loss
    (1 - 2 x_1) / (2 s_1^2) + (1 - 2 x_2) / (2 s_2^2), by a direct double sum."""
    t1, t2 = dgauss_pmf_table(s1), dgauss_pmf_table(s2)
    with mpmath.workdps(40):
        a1, a2 = 2 * mpmath.mpf(s1) ** 2, 2 * mpmath.mpf(s2) ** 2
        e = mpmath.mpf(eps)
        terms = []
        for x1, p1 in t1.items():
            l1 = (1 - 2 * x1) / a1
            for x2, p2 in t2.items():
                loss = l1 + (1 - 2 * x2) / a2
                if loss > e:
                    terms.append(p1 * p2 * (1 - mpmath.exp(e - loss)))
        return mpmath.fsum(terms)


# ----------------------------------------------------------------- the event


def test_event_is_one_exact_discrete_gaussian_per_level():
    pop, levels = census_like(np.random.default_rng(3), (1, 5, 50, 500))
    r = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.3, 0.4], rng=dpfast.default_rng(KEY))
    assert isinstance(r.event, ev.Composed) and len(r.event.events) == 4
    for e, s, m in zip(r.event.events, r.sigma, r._mechs, strict=True):
        assert type(e) is ev.DiscreteGaussian
        assert e.sensitivity == 1 and e.noise_multiplier == s == m.sigma
        assert e.neighbouring == ev.ADD_REMOVE  # the tree's sensitivities: add/remove one
        assert e == ev.with_neighbouring(
            dpfast.DiscreteGaussianMechanism(rho=m.rho, max_changed=1).event, ev.ADD_REMOVE)
    assert r.rho_total == _old_rho_total(r.sigma) and r.rho_total <= 1.0
    # the event's sigmas are the ones the noise was drawn with: redraw it from the key
    gen = dpfast.default_rng(KEY)  # a generator rebuilt from the key replays the release
    truth = tables.aggregate_levels(pop, levels)
    for j, e in enumerate(r.event.events):
        redrawn = dpfast.discrete_gaussian(truth[j], e.noise_multiplier, rng=gen)
        np.testing.assert_array_equal(redrawn, r.noisy[j])
    # serialises (ledgers, privacy.json) and reads back equal
    assert deserialize_event(serialize_event(r.event)) == r.event
    assert ev.relations_of(r.event) == {ev.ADD_REMOVE}  # issue 22: stated, add/remove one


def test_total_invariant_and_cells():
    pop, levels = census_like(np.random.default_rng(4), (2, 6, 40))
    cells = np.stack([pop, pop // 2, pop % 3], axis=1)
    r = tables.topdown(cells, levels, rho=0.6, total_invariant=True, rng=KEY)
    # level 0 is not measured: two events, equal sigmas (rho split over two levels)
    assert [e.noise_multiplier for e in r.event.events] == r.sigma[1:]
    assert r.sigma[0] == 0.0 and r.sigma[1] == r.sigma[2]
    assert all(e.sensitivity == 1 for e in r.event.events)
    assert r.rho_total == _old_rho_total(r.sigma) <= 0.6


# ----------------------------------------------------------------- RDP / zCDP unchanged


@pytest.mark.parametrize("rho", [0.5, [0.05, 0.1, 0.15, 0.2, 0.25, 0.3], 1e-3, 7.0])
def test_rdp_and_zcdp_charge_equals_the_former_zcdp_event(census, rho):
    pop, levels = census
    r = tables.topdown(pop, levels, rho=rho, rng=KEY)
    old = ev.Zcdp(_old_rho_total(r.sigma))
    assert old.rho == r.rho_total
    # zCDP: the per-level costs are rounded up before the sum: equal up to a few ulps
    new_rho = zcdp_rho(r.event)
    assert old.rho <= new_rho <= old.rho * (1 + 8 * 2.0**-52)
    if not isinstance(rho, list):
        assert new_rho <= rho  # the split never spends above the total asked for
    for d in (1e-10, 1e-6):
        z_old = ZcdpAccountant().compose(old).get_epsilon(d)
        z_new = ZcdpAccountant().compose(r.event).get_epsilon(d)
        assert z_old <= z_new <= z_old * (1 + 1e-12)
        assert r.epsilon(d) == zcdp_epsilon(r.rho_total, d) == z_old  # the default
        a_old = RdpAccountant().compose(old).get_epsilon(d)
        a_new = RdpAccountant().compose(r.event).get_epsilon(d)
        assert a_old <= a_new <= a_old * (1 + 1e-12)
        assert r.epsilon(d, accounting="rdp") == a_new


@pytest.mark.parametrize("accounting", ["zcdp", "rdp"])
def test_budget_charge_equals_the_former_zcdp_event(census, accounting):
    pop, levels = census
    new = dpfast.Budget(10.0, 1e-10, accounting=accounting)
    r = tables.topdown(pop, levels, rho=0.5, rng=KEY, budget=new, note="census")
    old = dpfast.Budget(10.0, 1e-10, accounting=accounting)
    old.spend(ev.Zcdp(r.rho_total))
    (c_new,), (c_old,) = new.history(), old.history()
    assert c_new.event == r.event and c_new.note == "census"
    if accounting == "zcdp":
        assert c_old.cost.rho <= c_new.cost.rho <= c_old.cost.rho * (1 + 8 * 2.0**-52)
    else:
        for a, b in zip(c_old.cost.rdp, c_new.cost.rdp, strict=True):
            assert a <= b <= a * (1 + 1e-13)
    assert old.spent().epsilon <= new.spent().epsilon <= old.spent().epsilon * (1 + 1e-12)


# ----------------------------------------------------------------- PLD: exact and smaller


def test_pld_census_release_is_smaller_and_exact(census):
    pop, levels = census
    r = tables.topdown(pop, levels, rho=0.5, rng=KEY)
    n = len(CENSUS)
    share = r.rho[0]
    assert r.rho == [share] * n and r.sigma == [r.sigma[0]] * n
    pld = r.epsilon(DELTA, accounting="pld")
    rdp = r.epsilon(DELTA, accounting="rdp")
    zcdp = r.epsilon(DELTA)
    assert pld < rdp and pld < zcdp
    assert pld < 0.97 * min(rdp, zcdp)  # measured: 6.551 vs 6.84 (4% less)
    # the same as the hand-built composition of the mechanisms' own events
    mech = dpfast.DiscreteGaussianMechanism(rho=share, max_changed=1)
    hand = ev.with_neighbouring(ev.Composed(tuple(mech.event for _ in range(n))), ev.ADD_REMOVE)
    assert hand == r.event
    assert PldAccountant().compose(hand).get_epsilon(DELTA) == pld
    selfc = PldAccountant().compose(ev.SelfComposed(mech.event, n)).get_epsilon(DELTA)
    assert selfc == pytest.approx(pld, rel=1e-9)
    # against the exact divergence of the six composed levels
    sigma = r.sigma[0]
    exact = _composed_epsilon_exact(sigma, n, DELTA)
    lo, up = PldAccountant().compose(r.event).get_epsilon_bounds(DELTA)
    assert lo <= exact <= up == pld
    # measured: exact 6.5487, PLD 6.5509 (0.03% above), lower bound 6.5483; RDP / zCDP
    # 6.8393
    assert pld <= exact * (1 + 1e-3)
    for eps in (2.0, 5.0, exact):
        d_exact = float(_composed_delta_exact(sigma, n, eps))
        d_pld = PldAccountant().compose(r.event).get_delta(eps)
        assert d_exact <= d_pld <= d_exact * (1 + 1e-6) + 1e-11


@pytest.mark.parametrize("dx", [1e-3, 3e-4, 1e-4])
def test_finer_user_grids_do_not_loosen_the_bounds(census, dx):
    """A user grid finer than the automatic one (dp_accounting's default is 1e-4) keeps
    both bounds around the exact epsilon and the upper one within 0.1% of it.  The atoms
    (1/sigma^2 apart) then sit ~1600 grid points apart, so the spectra do not decay:
    before the normwise inverse-FFT bound, the long-double tail sums and the split from
    above, the float allowances grew with the number of points (6.60 at 1e-3, inf at
    1e-4)."""
    pop, levels = census
    r = tables.topdown(pop, levels, rho=0.5, rng=KEY)
    exact = _composed_epsilon_exact(r.sigma[0], len(CENSUS), DELTA)
    acct = PldAccountant(value_discretization_interval=dx).compose(r.event)
    lo, up = acct.get_epsilon_bounds(DELTA)
    assert lo <= exact <= up <= exact * (1 + 1e-3)
    assert lo >= exact * (1 - 1e-3)


def test_pld_one_level_against_cks20():
    """One measured level: the PLD accountant's delta is CKS20 Thm. 7's exact sum."""
    pop, levels = census_like(np.random.default_rng(5), (3, 30))
    r = tables.topdown(pop, levels, rho=[0.0, 0.3], total_invariant=True, rng=KEY)
    (e,) = r.event.events
    sigma = r.sigma[1]
    for eps in (0.3, 1.0, 2.5):
        exact = float(cks20_delta(eps, sigma, 1))
        assert exact == pytest.approx(float(_composed_delta_exact(sigma, 1, eps)),
                                      rel=1e-20, abs=1e-30)
        d = PldAccountant().compose(r.event).get_delta(eps)
        assert exact <= d <= exact + 2e-12
    pld = r.epsilon(1e-6, accounting="pld")
    assert pld < r.epsilon(1e-6) and pld < r.epsilon(1e-6, accounting="rdp")
    assert float(cks20_delta(pld, sigma, 1)) <= 1e-6


def test_pld_unequal_levels_against_double_sum():
    pop, levels = census_like(np.random.default_rng(6), (4, 40))
    r = tables.topdown(pop, levels, rho=[0.1, 0.4], rng=KEY)
    s1, s2 = r.sigma
    assert s1 != s2
    acct = PldAccountant().compose(r.event)
    for eps in (0.5, 1.5, 3.0):
        exact = float(_two_level_delta_exact(s1, s2, eps))
        d = acct.get_delta(eps)
        assert exact <= d <= exact * (1 + 1e-6) + 1e-11
    assert r.epsilon(1e-8, accounting="pld") < r.epsilon(1e-8, accounting="rdp")


def test_replace_one_is_the_event_twice():
    """A moved record changes two cells per level by 1 (independent coordinates): the
    documented cover is SelfComposed(event, 2), i.e. 2 rho in zCDP."""
    pop, levels = census_like(np.random.default_rng(7), (1, 4, 20))
    r = tables.topdown(pop, levels, rho=0.4, rng=KEY)
    twice = ev.SelfComposed(r.event, 2)
    assert zcdp_rho(twice) == pytest.approx(2 * r.rho_total, rel=1e-15)
    s = r.sigma[0]
    # one level, two coordinates shifted by 1 each = the sum statistic of two draws
    d2 = PldAccountant().compose(ev.SelfComposed(r.event.events[0], 2)).get_delta(1.0)
    exact = float(_composed_delta_exact(s, 2, 1.0))
    assert exact <= d2 <= exact * (1 + 1e-6) + 1e-11


def test_epsilon_accounting_argument_and_summary():
    pop, levels = census_like(np.random.default_rng(8), (1, 3, 9))
    r = tables.topdown(pop, levels, rho=1.0, rng=KEY)
    with pytest.raises(ValueError, match="accounting"):
        r.epsilon(1e-6, accounting="basic")
    with pytest.raises(ValueError, match="delta"):
        r.epsilon(1.5, accounting="pld")
    with pytest.raises(ValueError, match="delta"):
        r.epsilon(0.0, accounting="rdp")
    text = r.summary()
    assert f"{r.epsilon(1e-10, accounting='pld'):.4g} by PLD" in text
    assert f"rho = {r.rho_total:.6g} zCDP" in text
    # noise beyond the PLD accountant's range: the summary omits the PLD figure
    tiny = tables.topdown(pop, levels, rho=1e-13, rng=KEY)
    with pytest.raises(dpfast.accounting.UnsupportedEventError):
        tiny.epsilon(1e-10, accounting="pld")
    assert "by PLD" not in tiny.summary()


# ----------------------------------------------------------------- ledgers


@pytest.mark.parametrize("accounting", ["zcdp", "rdp"])
def test_ledger_with_former_zcdp_records_still_loads(tmp_path, accounting):
    pop, levels = census_like(np.random.default_rng(9), (1, 5, 50))
    path = tmp_path / "ledger.sqlite"
    # a ledger as the former topdown wrote it: one Zcdp(rho_total) record per release
    before = dpfast.Budget(8.0, 1e-8, ledger=path, accounting=accounting)
    r0 = tables.topdown(pop, levels, rho=0.3, rng=KEY)
    before.spend(ev.Zcdp(_old_rho_total(r0.sigma)), note="topdown: 3 levels")
    before.close()
    (row,) = dpfast.Budget.from_ledger(path).history()
    assert json.loads(row.event_json) == {"type": "Zcdp", "rho": r0.rho_total}
    # reopened: the old record is read back and composes with the new event
    b = dpfast.Budget.from_ledger(path)
    assert b.history()[0].event == ev.Zcdp(r0.rho_total)
    r1 = tables.topdown(pop, levels, rho=0.3, rng=KEY, budget=b)
    hist = b.history()
    assert [type(c.event) for c in hist] == [ev.Zcdp, ev.Composed]
    assert hist[1].event == r1.event
    ref = dpfast.Budget(8.0, 1e-8, accounting=accounting)
    ref.spend(ev.Zcdp(r0.rho_total))
    ref.spend(r1.event)
    assert b.spent() == ref.spent()
    b.close()
    res = subprocess.run([sys.executable, "-m", "dpfast", "ledger", "verify", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


# ----------------------------------------------------------------- command line


def test_cli_privacy_json_states_the_event(tmp_path):
    src = tmp_path / "blocks.csv"
    src.write_text("state,block,pop\nA,1,4\nA,2,0\nB,3,9\nB,4,2\n")
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "dpfast", "topdown", str(src), "--level",
                          "state", "--level", "block", "--count", "pop", "--rho", "0.5",
                          "-o", str(out)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    privacy = json.loads((out / "privacy.json").read_text())
    event = ev.from_dict(privacy["event"])
    assert isinstance(event, ev.Composed) and len(event.events) == 3
    assert [e.noise_multiplier for e in event.events] == privacy["sigma_per_level"]
    for d in ("1e-10", "1e-6"):
        pld = privacy[f"epsilon_pld_at_delta_{d}"]
        assert pld == PldAccountant().compose(event).get_epsilon(float(d))
        assert pld < privacy[f"epsilon_at_delta_{d}"]
    assert "by PLD" in res.stdout
