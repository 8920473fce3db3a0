"""bounds="auto" (issue 23): a stated share of ε on private quantiles picks the bounds."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import dpfast
import dpfast.tables as dpt
from dpfast.accounting import PureDpAccountant
from dpfast.accounting import events as ev
from dpfast.tables import autobounds as ab

from .helpers import KEY


def _replay() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


def _data(n: int = 100_000, seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 10, n), rng.lognormal(3, 1, n)


def test_auto_bounds_are_the_private_percentiles_on_the_power_grid() -> None:
    # a strong rank signal: the bounds are the grid points nearest the percentiles
    keys, vals = _data()
    b = dpt.auto_bounds(vals, keys, epsilon=0.2, rng=_replay())
    lo_t, hi_t = np.quantile(vals, [0.01, 0.99])
    assert lo_t / 2 <= b.lo <= lo_t * 2 and hi_t / 2 <= b.hi <= hi_t * 2
    assert b.lo in ab.default_grid(False) and b.hi in ab.default_grid(False)
    eps_s, eps_c, eps_q = ab._bem.split(0.2)
    assert eps_s == eps_c and Fraction(eps_s) <= Fraction(0.2) / 6
    assert Fraction(eps_q) <= Fraction(0.2) / 3 and 0.2 - 2 * eps_s - 2 * eps_q < 1e-15
    assert b.event == ev.with_neighbouring(ev.Composed((
        ev.SelfComposed(ev.Exponential(eps_s), 2),
        ev.SelfComposed(ev.Exponential(eps_q), 2))), ev.ADD_REMOVE)
    assert PureDpAccountant().compose(b.event).get_epsilon(0.0) <= 0.2
    assert b.scale == b.centre == (16.0, 32.0)  # the median is e^3 = 20
    again = dpt.auto_bounds(vals, keys, epsilon=0.2, rng=_replay())
    assert again.bounds == b.bounds
    r = b.rank_error(0.05)
    assert 0 < r < 0.01 * len(vals) and r == ab._em.rank_error(eps_q, 1, 187, 0.05)
    assert b.penalty == 31 and b.steps_beyond(0.05) == 5  # ceil(2 / eps_q) ranks a step
    ints = dpt.auto_bounds(np.round(vals).astype(np.int64), epsilon=0.2, rng=_replay())
    assert isinstance(ints.lo, int) and ints.lo < ints.hi


@pytest.mark.parametrize("stat", ["sum", "mean"])
def test_sum_and_mean_with_auto_bounds_charge_one_composed_event(stat: str) -> None:
    keys, vals = _data()
    fn = getattr(dpt, stat)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    rel = fn(vals, keys, bounds="auto", epsilon=1.0, domain=np.arange(10), rng=_replay(),
             budget=budget, note="auto")
    h = budget.history()
    assert len(h) == 1 and h[0].event == rel.event
    assert isinstance(rel.event, ev.Composed)
    first, rest = rel.event.events
    eps_b, eps_rest = ab.split(1.0)
    assert first == ev.with_neighbouring(ab.bounds_event(eps_b), ev.ADD_REMOVE)
    assert PureDpAccountant().compose(first).get_epsilon(0.0) <= eps_b
    assert rest == ev.with_neighbouring(ev.Epsilon(eps_rest), ev.ADD_REMOVE)
    assert Fraction(eps_b) + Fraction(eps_rest) <= 1 and abs(eps_b - 0.1) < 1e-15
    assert PureDpAccountant().compose(rel.event).get_epsilon(0.0) <= 1.0
    lo, hi = rel.bounds
    assert lo < hi and (rel.sensitivity["bounds_lo"], rel.sensitivity["bounds_hi"]) == (lo, hi)
    clipped = np.clip(vals, lo, hi)
    truth = np.array([(clipped[keys == k].sum() if stat == "sum"
                       else clipped[keys == k].mean()) for k in range(10)])
    assert np.allclose(rel.values, truth, rtol=0.02)


def test_auto_bounds_with_selection_and_integer_values() -> None:
    rng = np.random.default_rng(5)
    keys = rng.integers(0, 5, 60_000)
    vals = rng.integers(0, 1000, 60_000)
    rel = dpt.sum(vals, keys, bounds="auto", epsilon=1.0, delta=1e-6, rng=_replay())
    first, rest = rel.event.events
    assert rest == ev.with_neighbouring(ev.EpsilonDelta(ab.split(1.0)[1], 1e-6),
                                        ev.ADD_REMOVE)
    assert rel.keys.tolist() == [0, 1, 2, 3, 4]
    assert rel.bounds in ((8, 1024), (16, 1024)) and rel.values.dtype == np.int64  # p1 ~ 10


def test_auto_bounds_bad_input() -> None:
    keys, vals = _data(100)
    with pytest.raises(ValueError, match="bounds"):
        dpt.sum(vals, keys, bounds="automatic", epsilon=1.0, domain=np.arange(10))
    with pytest.raises(ValueError, match="rho"):
        dpt.mean(vals, keys, bounds="auto", rho=0.5, domain=np.arange(10))
    with pytest.raises(ValueError, match="quantiles"):
        dpt.auto_bounds(vals, epsilon=1.0, quantiles=(0.9, 0.1))
    with pytest.raises(TypeError, match="quantiles"):
        dpt.auto_bounds(vals, epsilon=1.0, quantiles=0.5)
    with pytest.raises(ValueError, match="epsilon"):
        dpt.auto_bounds(vals, epsilon=0.0)
    with pytest.raises(TypeError, match="values"):
        dpt.auto_bounds(None, epsilon=1.0)
    with pytest.raises(ValueError, match="max_per_partition"):
        dpt.auto_bounds(vals, keys, np.arange(100), epsilon=1.0, max_per_partition=0)


def test_auto_bounds_refused_by_the_budget_draws_nothing() -> None:
    keys, vals = _data(1000)
    gen = _replay()
    before = gen._root.next_stream
    budget = dpfast.Budget(epsilon=0.5, accounting="basic")
    with pytest.raises(dpfast.BudgetExceededError):
        dpt.mean(vals, keys, bounds="auto", epsilon=1.0, domain=np.arange(10), rng=gen,
                 budget=budget)
    assert gen._root.next_stream == before
