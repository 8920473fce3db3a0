"""TopDown with a privacy unit (privacy_ids, max_partitions, max_per_partition): per-person
bounding, the exact per-level sensitivity, the noise, the event and the summary."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfast
from dpfast import tables as dpt
from dpfast.accounting import events as ev
from dpfast.tables import _topdown_units as U
from tests.helpers import KEY


def _levels(n_leaves: int, *groups: int) -> list[np.ndarray]:
    """Root, then levels of units of ``groups[i]`` consecutive leaves, then the leaves."""
    out = [np.zeros(n_leaves, np.int64)]
    for g in groups:
        out.append(np.arange(n_leaves) // g)
    out.append(np.arange(n_leaves))
    return out


@settings(max_examples=40, deadline=None)
@given(units=st.lists(st.integers(1, 4), min_size=1, max_size=5), k=st.integers(1, 6),
       c=st.integers(1, 3))
def test_level_sensitivity_is_the_exact_worst_case(units: list[int], k: int, c: int) -> None:
    """Brute force over every set of at most k distinct leaves, each changed by c."""
    level = np.repeat(np.arange(len(units)), units)
    n = level.shape[0]
    best = 0
    for r in range(0, min(k, n) + 1):
        for chosen in itertools.combinations(range(n), r):
            m = np.bincount(level[list(chosen)], minlength=len(units))
            best = max(best, int((c * m) @ (c * m)))
    assert U.level_l2sq(level, k, c) == best


def test_per_person_release_bounds_then_measures() -> None:
    r = np.random.default_rng(2)
    n_leaves = 40
    levels = _levels(n_leaves, 10)
    recs = r.integers(0, n_leaves, 6000)
    ids = r.integers(0, 700, 6000)
    rel = dpt.topdown(recs, levels, rho=2.0, privacy_ids=ids, max_partitions=3,
                      max_per_partition=2, rng=dpfast.default_rng(KEY))
    # the bounded leaf counts are those of bound_contributions with the release's generator
    _, counts, _ = dpt.bound_contributions(recs, ids, max_partitions=3, max_per_partition=2,
                                           rng=dpfast.default_rng(KEY))
    assert int(rel.estimates[0][0]) == int(rel.estimates[-1].sum())
    assert counts.sum() <= 3 * 2 * 700
    # sensitivities: k c where a unit holds >= k leaves, sqrt(k) c at the leaves
    assert rel.sensitivity == [6.0, 6.0, math.sqrt(12)]
    assert rel.privacy_unit.startswith("person")
    assert "guarantee per person" in rel.summary()
    spent = Fraction(0)
    for s, d, e, target in zip(rel.sigma, rel.sensitivity, rel.event.events, rel.rho):
        assert isinstance(e, ev.Zcdp) and e.neighbouring == "add_remove"
        rho_j = Fraction(round(d * d)) / (2 * Fraction(s) ** 2)
        assert rho_j <= Fraction(target) and Fraction(e.rho) >= rho_j
        spent += rho_j
    assert spent <= 2 and rel.rho_total >= float(spent) * (1 - 1e-15)
    assert rel.epsilon(1e-6, accounting="rdp") > 0


def test_per_person_noise_has_the_calibrated_sigma() -> None:
    """100000 leaves each held by one person with 2 records (k = 1, c = 2): the leaf level's
    raw measurement minus the bounded truth has variance sigma_L^2 (the discrete
    Gaussian's variance is within 1e-9 of sigma^2 for sigma >= 2), within 4.5 standard
    errors (about 2% of the variance)."""
    n = 100000
    levels = [np.zeros(n, np.int64), np.arange(n)]
    recs = np.repeat(np.arange(n), 3)
    ids = np.repeat(np.arange(n), 3)
    rel = dpt.topdown(recs, levels, rho=[0.5, 0.02], privacy_ids=ids, max_per_partition=2,
                      rng=dpfast.default_rng(KEY), nonnegative=False, integer=False)
    assert rel.sensitivity == [2.0, 2.0]
    sigma = rel.sigma[1]
    assert 4 / (2 * sigma * sigma) <= 0.02
    err = rel.noisy[1].astype(np.float64) - 2.0
    var = float(np.mean(err * err))
    assert abs(var / sigma**2 - 1) < 4.5 * math.sqrt(2 / n)
    assert abs(float(np.mean(err))) < 4.5 * sigma / math.sqrt(n)


def test_one_record_per_person_matches_the_per_record_release() -> None:
    """k = c = 1 and one record per person: the same sigmas and the exact scalar events
    of the per-record release, and the same estimates."""
    levels = _levels(12, 4)
    recs = np.arange(12).repeat(np.arange(1, 13))
    ids = np.arange(recs.shape[0])
    a = dpt.topdown(recs, levels, rho=1.0, privacy_ids=ids, rng=dpfast.default_rng(KEY))
    b = dpt.topdown(np.bincount(recs, minlength=12), levels, rho=1.0,
                    rng=dpfast.default_rng(KEY))
    assert a.sigma == b.sigma and a.event == b.event
    assert all(np.array_equal(x, y) for x, y in zip(a.estimates, b.estimates))
    assert b.privacy_unit == "record" and "guarantee per record" in b.summary()


def test_per_person_input_errors_are_named() -> None:
    levels = _levels(4, 2)
    # a record whose leaf is not one of the hierarchy (5, 0.5) is dropped, not an error
    # (issue 36: an error would depend on the private records; like a key outside a domain)
    ref = dpt.topdown([0], levels, rho=1.0, privacy_ids=[1], rng=dpfast.default_rng(KEY))
    for leaf in ([0, 5], [0.0, 0.5]):
        got = dpt.topdown(leaf, levels, rho=1.0, privacy_ids=[1, 2],
                          rng=dpfast.default_rng(KEY))
        assert all(np.array_equal(a, b) for a, b in zip(got.estimates, ref.estimates))
    with pytest.raises(TypeError, match="leaf indices"):
        dpt.topdown(["a", "b"], levels, rho=1.0, privacy_ids=[1, 2])
    with pytest.raises(ValueError, match="privacy_ids"):
        dpt.topdown([0, 1, 2], levels, rho=1.0, privacy_ids=[1, 2])
    with pytest.raises(ValueError, match="max_partitions"):
        dpt.topdown([0, 1], levels, rho=1.0, privacy_ids=[1, 2], max_partitions=0)
    with pytest.raises(ValueError, match="bounding"):
        dpt.topdown([0, 1], levels, rho=1.0, privacy_ids=[1, 2], bounding="x")
    data = np.array([0, 1, 1])
    before = data.copy()
    dpt.topdown(data, levels, rho=1.0, privacy_ids=[7, 7, 8], rng=KEY)
    assert np.array_equal(data, before)  # the caller's data is never modified
