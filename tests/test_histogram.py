"""dpfast.histogram / histogram2d / histogramdd: numpy's binning exactly, then exact noise."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dpfast
from dpfast.accounting import events as ev
from tests.helpers import KEY

BIG = 1e7  # noise exactly 0 with probability ~1

floats = hnp.arrays(np.float64, st.integers(0, 200),
                    elements=st.floats(-5, 5, allow_nan=False, width=64))


@given(floats, st.integers(1, 30), st.floats(-6, 0), st.floats(0.01, 6))
def test_edges_and_assignment_match_numpy(a, bins, lo, width) -> None:
    rng_ = (lo, lo + width)
    h, edges = dpfast.histogram(a, bins, range=rng_, epsilon=BIG, rng=KEY)
    h_np, e_np = np.histogram(a, bins, range=rng_)
    assert np.array_equal(edges, e_np)
    assert np.array_equal(h, h_np) and h.dtype == np.int64


def test_random_inputs_and_edge_arrays_match_numpy() -> None:
    r = np.random.default_rng(0)
    for trial in range(20):
        a = r.normal(size=r.integers(1, 3000)) * r.uniform(0.1, 10)
        if trial % 3 == 0:
            a = np.round(a, 1)  # many values exactly on edges
        edges = np.unique(np.round(r.uniform(-8, 8, r.integers(2, 40)), 1))
        if len(edges) < 2:
            continue
        h, e = dpfast.histogram(a, edges, epsilon=BIG, rng=KEY)
        assert np.array_equal(h, np.histogram(a, edges)[0]) and np.array_equal(e, edges)
        h, e = dpfast.histogram(a, 17, range=(-3, 3), epsilon=BIG, rng=KEY)
        assert np.array_equal(h, np.histogram(a, 17, range=(-3, 3))[0])
        w = r.integers(0, 5, a.size)
        h, _ = dpfast.histogram(a, 9, range=(-2, 2), weights=w, weight_bounds=(0, 4),
                                epsilon=BIG, rng=KEY)
        assert np.array_equal(h, np.histogram(a, 9, range=(-2, 2), weights=w)[0])
        x, y = r.normal(size=(2, 500))
        H, xe, ye = dpfast.histogram2d(x, y, [5, 7], range=[(-2, 2), (-1, 3)], epsilon=BIG,
                                       rng=KEY)
        Hn, xn, yn = np.histogram2d(x, y, [5, 7], range=[(-2, 2), (-1, 3)])
        assert np.array_equal(H, Hn) and np.array_equal(xe, xn) and np.array_equal(ye, yn)
        s = r.uniform(-1, 1, (400, 3)).round(1)
        bins = [np.linspace(-1, 1, 5), 3, np.array([-1.0, 0.0, 0.5, 1.0])]
        rng3 = [None, (-0.5, 0.5), None]
        D, de = dpfast.histogramdd(s, bins, rng3, epsilon=BIG, rng=KEY)
        Dn, dn = np.histogramdd(s, bins, [(-1, 1), (-0.5, 0.5), (-1, 1)])
        assert np.array_equal(D, Dn) and all(np.array_equal(p, q) for p, q in zip(de, dn))


def test_noise_event_and_density() -> None:
    a = np.random.default_rng(1).uniform(0, 10, 100000)
    h, e, rel = dpfast.histogram(a, 10, range=(0, 10), epsilon=0.5, rng=KEY,
                                 return_release=True)
    assert isinstance(rel.event, ev.DiscreteLaplace)
    assert rel.sensitivity["l1"] == 1 and 1 / rel.event.noise_multiplier <= 0.5
    h_np = np.histogram(a, 10, range=(0, 10))[0]
    assert not np.array_equal(h, h_np) and np.abs(h - h_np).max() < 60
    d, _ = dpfast.histogram(a, 10, range=(0, 10), density=True, epsilon=0.5, rng=KEY)
    assert d.sum() * 1.0 == pytest.approx(1.0)
    neg, _ = dpfast.histogram(np.zeros(0), 50, range=(0, 1), epsilon=0.1, nonnegative=True,
                              rng=KEY)
    assert neg.min() >= 0


def test_privacy_ids_bound_contributions() -> None:
    a = np.repeat(np.arange(10) + 0.5, 100)  # one person with 100 rows per bin
    ids = np.zeros(1000, np.int64)
    h, _, rel = dpfast.histogram(a, 10, range=(0, 10), privacy_ids=ids, max_partitions=2,
                                 max_per_partition=3, epsilon=BIG, rng=KEY,
                                 return_release=True)
    assert h.sum() == 6 and set(h.tolist()) == {0, 3}
    assert rel.sensitivity["l1"] == 6


def test_gaussian_and_float_weights_and_budget() -> None:
    r = np.random.default_rng(2)
    a = r.uniform(0, 1, 5000)
    w = r.uniform(0, 2, 5000)
    budget = dpfast.Budget(epsilon=1.0, delta=1e-6, accounting="zcdp")
    h, _ = dpfast.histogram(a, 4, range=(0, 1), weights=w, weight_bounds=(0.0, 2.0), rho=0.02,
                            budget=budget, integer=True, rng=KEY)
    assert h.dtype == np.float64 and np.array_equal(h, np.rint(h))
    assert len(budget.history()) == 1


@pytest.mark.parametrize("kw,exc,word", [
    (dict(bins=10), ValueError, "range"),
    (dict(bins="auto", range=(0, 1)), TypeError, "bins"),
    (dict(bins=10, range=(1, 0)), ValueError, "range"),
    (dict(bins=10, range=(0, 1), weights=np.ones(3)), ValueError, "weight_bounds"),
    (dict(bins=10, range=(0, 1), epsilon=None), ValueError, "epsilon"),
    (dict(bins=2.5, range=(0, 1)), TypeError, "bins"),
])
def test_bad_input(kw, exc, word) -> None:
    args = dict(epsilon=1.0, rng=KEY)
    args.update(kw)
    with pytest.raises(exc, match=word):
        dpfast.histogram(np.array([0.1, 0.5, 0.9]), **args)
    # a NaN sample is no longer an error (issue 36): it falls in no bin, as in numpy
    # (tests/test_tables_values_policy.py)


def test_public_names_and_callable_module() -> None:
    import dpfast.tables.histogram as mod

    assert hasattr(dpfast, "histogram") and hasattr(dpfast, "histogram2d")
    h, _ = dpfast.histogram([0.5], 2, range=(0, 1), epsilon=BIG, rng=KEY)
    assert h.tolist() == [0, 1]
    assert mod([0.5], 2, range=(0, 1), epsilon=BIG, rng=KEY)[0].tolist() == [0, 1]


_PLAN_CASES = [
    dict(bins=10, range=(0.0, 1.0), epsilon=1.0),
    dict(bins=[0.0, 0.2, 0.5, 1.0], epsilon=0.5, delta=1e-6, noise="gaussian"),
    dict(bins=4, range=(0, 1), rho=0.3, ids=True, max_partitions=3, max_per_partition=2),
    dict(bins=6, range=(0, 1), epsilon=1.0, weights="int", weight_bounds=(0, 3)),
    dict(bins=6, range=(0, 1), epsilon=1.0, weights="float", weight_bounds=(-1.0, 2.5),
         ids=True),
    dict(bins=3, range=(0, 1), epsilon=1.0, use_case="healthcare"),
    # refused, before any work (the same error from both)
    dict(bins="auto", epsilon=1.0),
    dict(bins=4, epsilon=1.0),
    dict(bins=4, range=(0, 1)),
    dict(bins=4, range=(1, 0), epsilon=1.0),
    dict(bins=4, range=(0, 1), epsilon=1.0, weight_bounds=(0, 1)),
    dict(bins=4, range=(0, 1), epsilon=1.0, weights="int"),
    dict(bins=4, range=(0, 1), epsilon=1.0, max_partitions=0, ids=True),
    dict(bins=4, range=(0, 1), epsilon=1.0, use_case="nope"),
    dict(bins=4, range=(0, 1), epsilon=1.0, note=5),
]


@pytest.mark.parametrize("case", _PLAN_CASES, ids=[str(i) for i in range(len(_PLAN_CASES))])
def test_plan_histogram_is_the_histograms_plan(case: dict) -> None:
    """:func:`plan_histogram` (what a Session charges) gives, from the parameters and the
    columns' types alone, the event and edges :func:`dpfast.histogram` releases on the
    rows, and refuses what it refuses with the same error: both build the release's spec
    with one helper (the Session's probe ran the histogram on a synthetic row instead)."""
    import warnings

    from dpfast.tables.histogram import plan_histogram

    case = dict(case)
    r = np.random.default_rng(3)
    a = r.random(300)
    ids = r.integers(0, 100, 300) if case.pop("ids", False) else None
    kind = case.pop("weights", None)
    w = None if kind is None else (r.integers(0, 4, 300) if kind == "int" else r.random(300))
    bins, rng_ = case.pop("bins"), case.pop("range", None)

    def both() -> tuple[object, object]:
        out = []
        for f in (lambda: plan_histogram(a[:0], bins, rng_, None if w is None else w[:0],
                                         privacy_ids=None if ids is None else ids[:0],
                                         **case),
                  lambda: dpfast.histogram(a, bins, rng_, w, privacy_ids=ids, rng=KEY,
                                           return_release=True, **case)):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)  # a use case's guideline
                    out.append(f())
            except (ValueError, TypeError) as e:
                out.append((type(e), str(e)))
        return out[0], out[1]

    plan, released = both()
    if isinstance(released, tuple) and len(released) == 2:  # refused: alike
        assert plan == released
        return
    _h, edges, rel = released
    assert plan.event == rel.event
    assert plan.edges.tobytes() == edges.tobytes()
