"""Private partition selection: the threshold's guarantee, checked exactly and by sampling."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpfast
from dpfast import tables as dpt
from dpfast.tables.partition import selection_delta
from tests.helpers import KEY, dlap_tail


def _replay() -> dpfast.Generator:
    """A generator rebuilt from the fixed key: replays a release (a raw key never does)."""
    return dpfast.default_rng(KEY)


def _tail(t: float, m: int) -> float:
    """P(K >= m) for m >= 1: half of P(|K| > m - 1)."""
    return float(dlap_tail(t, m - 1) / 2)


@pytest.mark.parametrize("t,delta,k,c", [(1.0, 1e-6, 1, 1), (3.0, 1e-9, 3, 1),
                                         (2.5, 1e-5, 5, 4), (40.0, 1e-10, 10, 2),
                                         (0.25, 0.3, 2, 1)])
def test_threshold_is_the_smallest_that_fits(t, delta, k, c) -> None:
    tau = dpt.partition_threshold(t, delta, k, c)
    exact = 1 - (1 - mpmath.mpf(_tail(t, tau - c))) ** k
    before = 1 - (1 - mpmath.mpf(_tail(t, tau - 1 - c))) ** k if tau - 1 - c >= 1 else 1
    assert exact <= delta * (1 + 1e-12) and before > delta * (1 - 1e-12)
    assert selection_delta(Fraction(t), tau, k, c) <= delta


def test_bad_delta() -> None:
    with pytest.raises(ValueError, match="delta"):
        dpt.partition_threshold(1.0, 0.0)
    with pytest.raises(TypeError, match="delta"):
        dpt.partition_threshold(1.0, "0.1")


def test_a_singleton_key_is_published_with_the_stated_probability() -> None:
    """40000 keys, each held by one person (one row; Laplace thresholding of the unit
    counts at epsilon/2 = 1): each is published iff 1 + Z >= tau, probability exactly
    a^(tau - 1) / (1 + a); it must be at most delta."""
    n = 40000
    keys = np.arange(n)
    rel = dpt.count(keys, keys, epsilon=2.0, delta=0.05, rng=_replay(), selection="laplace")
    assert rel.selection.law.scale == 1.0 and rel.law.scale == 1.0
    p = _tail(1.0, rel.threshold - 1)
    assert p <= 0.05
    sd = math.sqrt(n * p * (1 - p))
    assert abs(len(rel) - n * p) < 4.5 * sd


def test_max_partitions_guarantee_per_person() -> None:
    """Each person holds 3 keys of their own, 2 rows each (k = 3, c = 2): each key has one
    unit; the chance that at least one of a person's keys is published is
    1 - (1 - p)^3 <= delta (Laplace thresholding of the unit counts, scale k / (epsilon/2),
    independent of c)."""
    people = 20000
    ids = np.repeat(np.arange(people), 6)
    keys = np.repeat(np.arange(3 * people), 2)
    rel = dpt.count(keys, ids, epsilon=3.0, delta=0.05, max_partitions=3,
                    max_per_partition=2, rng=_replay(), selection="laplace")
    t = rel.selection.law.scale
    assert t == 2.0
    p = _tail(t, rel.threshold - 1)
    q = 1 - (1 - p) ** 3
    assert q <= 0.05
    per_key_sd = math.sqrt(3 * people * p * (1 - p))
    assert abs(len(rel) - 3 * people * p) < 4.5 * per_key_sd
    hit = np.zeros(people, bool)
    hit[np.asarray(rel.keys) // 3] = True
    assert abs(hit.mean() - q) < 4.5 * math.sqrt(q * (1 - q) / people)


def test_sum_and_mean_select_on_unit_counts() -> None:
    r = np.random.default_rng(3)
    keys = np.concatenate([r.integers(0, 4, 4000), [99]])
    vals = np.concatenate([r.integers(0, 10, 4000), [5]])
    s = dpt.sum(vals, keys, bounds=(0, 9), epsilon=1.0, delta=1e-8, rng=_replay())
    m = dpt.mean(vals, keys, bounds=(0, 9), epsilon=1.0, delta=1e-8, rng=_replay())
    for rel in (s, m):
        assert set(rel.keys.tolist()) == {0, 1, 2, 3}
        assert rel.event.epsilon == 1.0 and rel.event.delta == 1e-8
    assert np.all(np.abs(m.values - 4.5) < 1.0)


def test_gaussian_selection_needs_epsilon_delta_and_splits_delta() -> None:
    with pytest.raises(ValueError, match="rho"):
        dpt.count([1, 2], rho=0.5, delta=1e-6, rng=_replay())
    # Gaussian statistics with private key selection: delta/2 each, eps/2 each
    keys = np.repeat(np.arange(6), 400)
    rel = dpt.count(keys, np.arange(keys.size), epsilon=1.0, delta=1e-6, noise="gaussian",
                    rng=_replay())
    assert rel.law.kind == "discrete_gaussian" and set(rel.keys.tolist()) == set(range(6))
    assert rel.selection.epsilon == 0.5 and rel.selection.target_delta == 5e-7
    assert rel.event.epsilon == 1.0 and rel.selection.delta < rel.event.delta <= 1e-6
    mech = dpfast.DiscreteGaussianMechanism(epsilon=0.5, delta=5e-7, sensitivity=1)
    assert rel.law.scale <= mech.sigma * (1 + 1e-9)  # calibrated at (eps/2, delta/2)
    rel = dpt.count(np.arange(100) % 5, epsilon=1.0, delta=1e-6, noise="gaussian",
                    domain=np.arange(5), rng=_replay())
    assert rel.law.kind == "discrete_gaussian"
    assert rel.event.epsilon == 1.0 and rel.event.delta == 1e-6
