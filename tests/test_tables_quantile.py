"""Per-key quantiles, median, min, max (issue 23): exact law, rank-error statement, inputs."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dpfast
import dpfast.tables as dpt
from dpfast.accounting import events as ev
from dpfast.selection import force_exact
from dpfast.tables import _quantile_em as em
from dpfast.tables import keynoise

from .helpers import KEY


def _replay() -> dpfast.Generator:
    return dpfast.default_rng(KEY)


# ----------------------------------------------------------------------------- exact law
def _definition(q: float, n: int) -> tuple[Fraction, int, int]:
    """(target rank, units per rank D, sensitivity per row S) from the definition (not the
    module): ``q = num/den`` exactly with ``den <= 2**16``: target ``q n``, ``D = den``,
    ``S = max(num, den - num)``; any other q: Smith's ``floor(q n)``, ``D = S = 1``."""
    fq = Fraction(q)
    if fq.denominator <= 1 << 16:
        return fq * n, fq.denominator, max(fq.numerator, fq.denominator - fq.numerator)
    return Fraction((fq.numerator * n) // fq.denominator), 1, 1


def _utilities(rows: list[float], grid: list[float], q: float) -> list[int]:
    """``-D dist(target, [a, b])`` per candidate (``a`` / ``b``: rows ``<`` / ``<=`` g)."""
    t, d, _ = _definition(q, len(rows))
    us = []
    for g in grid:
        a = sum(1 for x in rows if x < g)
        b = sum(1 for x in rows if x <= g)
        u = -d * max(a - t, t - b, 0)
        assert u.denominator == 1
        us.append(int(u))
    return us


def _law_of(us: list[int], eps: float, sens: int) -> list[mpmath.mpf]:
    with mpmath.workprec(100):
        c = mpmath.mpf(Fraction(eps).numerator) / Fraction(eps).denominator / (2 * sens)
        w = [mpmath.exp(c * u) for u in us]
        z = mpmath.fsum(w)
        return [x / z for x in w]


def _exact_law(rows: list[float], grid: list[float], q: float, eps: float, c: int
               ) -> list[mpmath.mpf]:
    """The target law, from the definition (independently of the kernels):
    ``P ∝ exp(eps u / (2 S c))``, ``u`` of :func:`_utilities` (``c`` rows per person)."""
    return _law_of(_utilities(rows, grid, q), eps, _definition(q, len(rows))[2] * c)


def _chi2_p(counts: np.ndarray, probs: list[mpmath.mpf]) -> float:
    n = counts.sum()
    p = np.array([float(x) for x in probs])
    e = n * p
    return float(stats.chi2.sf(((counts - e) ** 2 / e).sum(), len(p) - 1))


def _many_keys_table(rows: list[float], grid: np.ndarray, nkeys: int):
    """The sparse slot table of ``nkeys`` keys that all hold ``rows``."""
    s = em.slots_of(np.array(rows), grid)
    u, cnt = np.unique(s, return_counts=True)
    codes = np.repeat(np.arange(nkeys, dtype=np.int64), u.shape[0])
    return codes, np.tile(u, nkeys), np.tile(cnt, nkeys).astype(np.int64)


@pytest.mark.parametrize("q,eps", [(0.3, 0.9), (0.5, 0.9), (0.75, 2.7)])
def test_sampler_law_equals_the_exact_law_and_would_catch_a_one_percent_error(q, eps) -> None:
    """10^6 independent keys (per-key addressed words) with the same rows: the empirical
    law of the released candidate equals the exact exponential-mechanism law (chi-square),
    and the same test rejects the law of an epsilon off by 1%.  ``q = 0.3`` (not a short
    binary fraction): Smith's utility; 0.5, 0.75: the scaled utility (0.75: S = 3 for a step
    of 4, so a larger ε for the same sharpness)."""
    rows = [1.0, 2.0, 2.0, 2.5, 4.0, 4.0, 4.0, 6.0, 9.0]
    grid = np.arange(0.0, 11.0)  # 2.5 falls between candidates, 2 / 4 are ties
    sens, nkeys = 1, 1_000_000
    table = _many_keys_table(rows, grid, nkeys)
    cand = np.arange(nkeys, dtype=np.int64)
    rkey = keynoise.release_key(KEY, 5)
    idx = em.sample(table, cand, cand, (q,), eps, sens, grid.shape[0], rkey)[:, 0]
    counts = np.bincount(idx, minlength=grid.shape[0])
    law = _exact_law(rows, list(grid), q, eps, sens)
    assert _chi2_p(counts, law) > 1e-4
    assert _chi2_p(counts, _exact_law(rows, list(grid), q, eps * 1.01, sens)) < 1e-6
    assert _chi2_p(counts, _exact_law(rows, list(grid), q, eps * 0.99, sens)) < 1e-6
    # a per-key addressed stream: the first keys alone give the same draws
    few = em.sample(_many_keys_table(rows, grid, 10), cand[:10], cand[:10], (q,), eps, sens,
                    grid.shape[0], rkey)[:, 0]
    np.testing.assert_array_equal(few, idx[:10])


def test_release_law_scales_with_epsilon_per_key_and_rows_per_person() -> None:
    """Through the whole release (ids, k = 2 keys, c = 2 rows): each key's law is the
    exponential mechanism at ε / (k · len(q)) with sensitivity c."""
    person_rows = [[3, 5], [5], [7, 8], [8], [1, 9]]  # each person <= 2 rows per key
    nk = 20_000
    keys, ids, vals = [], [], []
    for key in range(nk):
        for p, rs in enumerate(person_rows):
            for v in rs:
                keys.append(key)
                ids.append(key * 10 + p)
                vals.append(v)
    rel = dpt.quantile(np.array(vals), np.array(keys), np.array(ids), q=[0.5, 0.8],
                       bounds=(0, 10), epsilon=2.4, max_partitions=2, max_per_partition=2,
                       domain=np.arange(nk), rng=_replay())
    assert rel.epsilon_per_key == 0.6 and rel.sensitivity == 2
    assert rel.event == ev.with_neighbouring(ev.SelfComposed(ev.Exponential(0.6), 4),
                                             ev.ADD_REMOVE)
    flat = sorted(v for rs in person_rows for v in rs)
    grid = list(range(11))
    for j, q in enumerate((0.5, 0.8)):
        counts = np.bincount(rel.values[:, j], minlength=11)
        assert _chi2_p(counts, _exact_law(flat, grid, q, 0.6, 2)) > 1e-4
        assert _chi2_p(counts, _exact_law(flat, grid, q, 1.2, 2)) < 1e-6  # not sens 1


def test_exact_path_gives_the_same_law() -> None:
    """Under the test hook every row is decided by the exact continuation (fresh per-key
    words): same law (coarser check: the exact path is slow)."""
    rows = [2.0, 3.0, 3.0, 7.0]
    grid = np.arange(0.0, 9.0)
    nkeys = 3000
    table = _many_keys_table(rows, grid, nkeys)
    cand = np.arange(nkeys, dtype=np.int64)
    with force_exact():
        idx = em.sample(table, cand, cand, (0.5,), 1.5, 1, grid.shape[0],
                        keynoise.release_key(KEY, 9))[:, 0]
    counts = np.bincount(idx, minlength=grid.shape[0])
    assert _chi2_p(counts, _exact_law(rows, list(grid), 0.5, 1.5, 1)) > 1e-4


# ----------------------------------------------------------------------------- accuracy
@pytest.mark.parametrize("eps,m,alpha,q", [(1.0, 11, 0.05, 0.5), (0.5, 40, 0.1, 0.5),
                                           (2.0, 200, 0.01, 0.5), (1.0, 30, 0.05, 0.25),
                                           (1.0, 30, 0.05, 0.3)])
def test_rank_error_bound_holds_for_the_exact_law(eps: float, m: int, alpha: float,
                                                  q: float) -> None:
    """P(distance > best + r) <= alpha under the exact law (enumerated), r the smallest such
    integer bound of McSherry-Talwar in ranks (the utility is -D times the rank distance,
    its sensitivity S), and the empirical coverage agrees."""
    rng = np.random.default_rng(int(eps * 10) + m)
    rows = sorted(rng.integers(0, m, 61).astype(float).tolist())  # odd n: q n not whole
    grid = list(np.arange(float(m)))
    t, d, sens = _definition(q, len(rows))
    r = em.rank_error(eps, 1, m, alpha, q)
    assert m * math.exp(-eps * d * r / (2 * sens)) <= alpha
    assert alpha < m * math.exp(-eps * d * (r - 1) / (2 * sens))
    law = _exact_law(rows, grid, q, eps, 1)
    dist = [max(sum(x < g for x in rows) - t, t - sum(x <= g for x in rows), 0) for g in grid]
    best = min(dist)
    p_bad = mpmath.fsum(p for p, x in zip(law, dist) if x > best + r)
    assert p_bad <= alpha
    rel = dpt.quantile(np.tile(rows, 2000), np.repeat(np.arange(2000), len(rows)), q=q,
                       bounds=(0, m - 1), n_candidates=m, epsilon=eps,
                       domain=np.arange(2000), rng=_replay())
    assert rel.rank_error(alpha) == r == rel.rank_error(alpha, q=q)
    got = np.array([dist[int(v)] for v in rel.values])
    assert np.mean(got > best + r) <= alpha
    acc = rel.accuracy(alpha)
    assert acc["rank_error"] == r and str(r) in acc["statement"]
    assert ("floor(q n)" in acc["statement"]) == (q == 0.3)


def test_median_rank_error_is_half_of_smiths_and_min_max_unchanged() -> None:
    """The median's scaled utility (step 2 per rank, sensitivity 1) halves the rank error
    of Smith's utility at the same ε; for q = 0 / 1 the two coincide; a state saved by an
    older version (Smith's utility) keeps its own statement."""
    for eps, m, c in [(0.1, 256, 30), (1.0, 241, 1), (0.129, 241, 30)]:
        old = em.rank_error(eps, c, m, 0.05)
        new = em.rank_error(eps, c, m, 0.05, 0.5)
        assert new in (math.ceil(old / 2) - 1, math.ceil(old / 2), math.ceil(old / 2) + 1)
        assert em.rank_error(eps, c, m, 0.05, 0.0) == old == em.rank_error(eps, c, m, 0.05, 1.0)
        assert em.rank_error(eps, c, m, 0.05, 0.9) == old  # 0.9: Smith's utility
        # q = 1/4: S = 3, D = 4, 4/3 of the resolution
        assert em.rank_error(eps, c, m, 0.05, 0.25) < old
    rel = dpt.median(np.arange(50), np.zeros(50, int), bounds=(0, 49), epsilon=1.0,
                     domain=[0], rng=_replay())
    assert rel.rank_utility == "scaled"
    state = rel.to_state()
    assert type(rel).from_state(state).rank_error(0.05) == rel.rank_error(0.05)
    del state["rank_utility"]
    older = type(rel).from_state(state)
    assert older.rank_utility == "floor"
    assert older.rank_error(0.05) == em.rank_error(1.0, 1, 50, 0.05) > rel.rank_error(0.05)
    assert "floor(q n)" in older.accuracy()["statement"]
    state["rank_utility"] = "other"
    with pytest.raises(ValueError, match="rank utility"):
        type(rel).from_state(state)
    with pytest.raises(ValueError, match="q must be one of"):
        rel.rank_error(0.05, q=0.25)


def test_median_min_max_accuracy_on_real_sized_data() -> None:
    rng = np.random.default_rng(3)
    nk, per = 50, 4000
    keys = np.repeat(np.arange(nk), per)
    vals = rng.normal(0, 1, nk * per) + np.repeat(np.arange(nk) * 0.1, per)
    kw = dict(bounds=(-10.0, 20.0), epsilon=1.0, domain=np.arange(nk), rng=_replay())
    med = dpt.median(vals, keys, **kw)
    truth = np.array([np.median(vals[keys == k]) for k in range(nk)])
    step = 30 / 255
    assert np.max(np.abs(med.values - truth)) < 0.1 + step
    lo = dpt.min(vals, keys, **kw)
    hi = dpt.max(vals, keys, **kw)
    r = lo.rank_error(0.01)
    for k in range(0, nk, 7):  # rank statements: at most r rows beyond the released points
        v = vals[keys == k]
        assert np.sum(v < lo.values[k]) <= r and np.sum(v > hi.values[k]) <= r
    assert (lo.values < hi.values).all()
    assert med.to_pandas().columns.tolist() == ["median"]


# ----------------------------------------------------------------------------- releases
def test_selection_path_and_event() -> None:
    rng = np.random.default_rng(1)
    keys = np.concatenate([np.repeat([10, 20, 30], 3000), [40, 50]])  # 40, 50: one row
    vals = rng.integers(0, 100, keys.shape[0])
    rel = dpt.quantile(vals, keys, q=0.5, bounds=(0, 99), epsilon=1.0, delta=1e-6,
                       rng=_replay())
    assert rel.keys.tolist() == [10, 20, 30] and rel.threshold is not None
    assert rel.event == ev.with_neighbouring(ev.EpsilonDelta(1.0, 1e-6), ev.ADD_REMOVE)
    assert rel.epsilon_per_key == 0.5 and rel.values.dtype == np.int64
    assert np.all(np.abs(rel.values - 50) < 10)


def test_replay_budget_and_fresh_noise() -> None:
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 30, 5000)
    vals = rng.random(5000)
    kw = dict(q=0.25, bounds=(0.0, 1.0), epsilon=0.2, domain=np.arange(30))
    a = dpt.quantile(vals, keys, rng=_replay(), **kw)
    b = dpt.quantile(vals, keys, rng=_replay(), **kw)
    np.testing.assert_array_equal(a.values, b.values)
    c1 = dpt.quantile(vals, keys, rng=KEY, **kw)
    c2 = dpt.quantile(vals, keys, rng=KEY, **kw)
    assert c1.release_id != c2.release_id and not np.array_equal(c1.values, c2.values)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    rel = dpt.quantile(vals, keys, rng=_replay(), budget=budget, note="q", **kw)
    h = budget.history()
    assert len(h) == 1 and h[0].event == rel.event and h[0].note == "q"


def test_keys_are_addressed_subset_of_domain_gives_same_values() -> None:
    rng = np.random.default_rng(4)
    keys = rng.integers(0, 12, 3000)
    vals = rng.integers(0, 50, 3000)
    kw = dict(bounds=(0, 49), epsilon=0.5)
    full = dpt.median(vals, keys, domain=np.arange(12), rng=_replay(), **kw)
    part = dpt.median(vals, keys, domain=[3, 7, 1], rng=_replay(), **kw)
    assert part.keys.tolist() == [3, 7, 1]
    np.testing.assert_array_equal(part.values, full.values[[3, 7, 1]])


def test_user_grid_and_caller_data_untouched() -> None:
    vals = np.array([0.5, 1.5, 2.5, 3.5, 100.0])
    keep = vals.copy()
    g = [0.0, 1.0, 2.0, 4.0, 8.0]
    rel = dpt.median(vals, np.zeros(5, int), candidates=g, epsilon=1.0, domain=[0],
                     rng=_replay())
    assert rel.values[0] in g and rel.grid.tolist() == g
    np.testing.assert_array_equal(vals, keep)
    ints = dpt.median(np.arange(10), np.zeros(10, int), candidates=[0.5, 4.5, 9.5],
                      epsilon=1.0, domain=[0], rng=_replay())
    assert ints.values.dtype == np.float64


BAD = [
    (dict(q=1.5), ValueError, "q must be in"),
    (dict(q=True), TypeError, "q must be"),
    (dict(q=[]), ValueError, "q must be"),
    (dict(n_candidates=0), ValueError, "n_candidates"),
    (dict(n_candidates=2.0), TypeError, "n_candidates"),
    (dict(bounds=None), ValueError, "bounds"),
    (dict(candidates=[0, 2, 1], bounds=None), ValueError, "candidates"),
    (dict(candidates=[0, 1]), ValueError, "bounds or candidates"),
    (dict(epsilon=-1.0), ValueError, "epsilon"),
    (dict(epsilon=None), ValueError, "epsilon"),
    (dict(domain=None), ValueError, "delta"),
    (dict(max_partitions=0), ValueError, "max_partitions"),
    (dict(note=3), TypeError, "note"),
    (dict(budget=object()), TypeError, "budget"),
    (dict(bounds="auto"), TypeError, "bounds"),
]


@pytest.mark.parametrize("kw,exc,msg", BAD)
def test_bad_input_names_the_parameter(kw: dict, exc: type, msg: str) -> None:
    base = dict(q=0.5, bounds=(0, 10), epsilon=1.0, domain=[0, 1], rng=_replay())
    base.update(kw)
    with pytest.raises(exc, match=msg):
        dpt.quantile(np.arange(6), np.array([0, 1] * 3), np.arange(6), **base)


def test_bad_values() -> None:
    with pytest.raises(TypeError, match="values"):
        dpt.median(None, [0, 1], bounds=(0, 1), epsilon=1.0, domain=[0, 1])
    # a NaN value drops its row (issue 36): tests/test_tables_values_policy.py
    with pytest.raises(ValueError, match="alpha"):
        dpt.median([0, 1], [0, 1], bounds=(0, 1), epsilon=1.0, domain=[0, 1],
                   rng=_replay()).rank_error(1.5)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6), st.integers(-5, 30)),
                min_size=1, max_size=40),
       st.floats(0, 1), st.integers(1, 3), st.integers(1, 3), st.integers(2, 40))
def test_any_input_gives_grid_points_in_the_domain_order(rows, q, k, c, m) -> None:
    keys = np.array([r[0] for r in rows])
    ids = np.array([r[1] for r in rows])
    vals = np.array([r[2] for r in rows])
    dom = [4, 0, 2, 3, 1]
    rel = dpt.quantile(vals, keys, ids, q=q, bounds=(-2, 25), n_candidates=m, epsilon=1.0,
                       max_partitions=k, max_per_partition=c, domain=dom, rng=_replay())
    assert rel.keys.tolist() == dom and rel.values.shape == (5,)
    assert set(rel.values.tolist()) <= set(rel.grid.astype(int).tolist())
    assert rel.grid[0] == -2 and rel.grid[-1] == 25 and rel.grid.shape[0] <= m
    again = dpt.quantile(vals, keys, ids, q=q, bounds=(-2, 25), n_candidates=m,
                         epsilon=1.0, max_partitions=k, max_per_partition=c, domain=dom,
                         rng=_replay())
    np.testing.assert_array_equal(rel.values, again.values)


_QS = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 0.5, 0.25, 0.75, 0.125, 0.375]),
                st.integers(0, 1 << 16).map(lambda i: i / (1 << 16)),
                st.integers(0, 1 << 17).map(lambda i: i / (1 << 17)))  # den 2**17: Smith's


def _kernel_utilities(rows: list[int], grid: np.ndarray, q: float) -> np.ndarray:
    from dpfast._kernels import quantile as kq

    x = np.clip(np.array(rows, float), grid[0], grid[-1])
    tc, ts, tn = em.slot_table(np.zeros(len(rows), np.int64), em.slots_of(x, grid),
                               2 * grid.shape[0])
    u = np.empty((1, grid.shape[0]))
    kq.fill_utilities(np.array([0]), np.array([tc.shape[0]]), ts, tn,
                      em.targets(np.array([len(rows)]), q), em.scale(q)[0], grid.shape[0],
                      u)
    return u[0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-3, 12), min_size=0, max_size=30), _QS)
def test_slot_table_ranks_match_the_definition(vals, q) -> None:
    """The kernel's utilities equal the definition for any rows (ties, ends, empty) and
    any q (scaled or Smith's utility), and (D, S) are those of the definition."""
    grid = np.array([-3.0, 0.0, 0.5, 4.0, 12.0])
    x = np.clip(np.array(vals, float), -3, 12).tolist()
    assert _kernel_utilities(vals, grid, q).tolist() == _utilities(x, grid.tolist(), q)
    _, d, sens = _definition(q, len(vals))
    assert em.scale(q) == (d, sens)


def test_utilities_are_capped_at_2_53_and_huge_keys_raise() -> None:
    """|u| is capped at 2**53 (exact in float64; the cap is 1-Lipschitz) and a key with
    more than 2**46 rows raises instead of overflowing int64."""
    from dpfast._kernels import quantile as kq

    q = 1 / (1 << 16)  # D = 2**16
    n = 1 << 45
    u = np.empty((1, 3))
    kq.fill_utilities(np.array([0]), np.array([1]), np.array([0]), np.array([n]),
                      em.targets(np.array([n]), q), 1 << 16, 3, u)
    assert u[0].tolist() == [-float(1 << 53)] * 3  # all rows below every candidate
    assert em.targets(np.array([1 << 46]), q).tolist() == [1 << 46]
    with pytest.raises(OverflowError, match=r"2\*\*46"):
        em.targets(np.array([(1 << 46) + 1]), 0.5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(-2, 14)), min_size=0, max_size=20),
       st.lists(st.integers(-2, 14), min_size=1, max_size=5), _QS, st.integers(1, 3),
       st.integers(3, 9), st.sampled_from([0.3, 1.0, 2.5]))
def test_adding_or_removing_one_person_changes_no_probability_by_more_than_e_eps(
        base, extra, q, c, m, eps) -> None:
    """The privacy claim, exactly: through the real bounding (``c`` rows per person and
    key, a per-person keyed choice) and kernels, adding one person (rows ``extra``) to the
    people ``base`` ((person id, value) rows) moves each utility by at most ``S c``, and
    every output's probability under the mechanism's law ``exp(ε u / (2 S c))``
    (enumerated at 100 bits) changes by a factor ``<= e^ε`` in both directions (add and
    remove)."""
    from dpfast._kernels import quantile as kq
    from dpfast.tables import bounding

    grid = em.grid((0, 12), m, None, True)
    skey = bounding.subkey(_replay())
    d, s_row = em.scale(q)

    def utilities(people: list[tuple[int, int]]) -> np.ndarray:
        ids = np.array([p for p, _ in people], np.int64)
        x = np.clip(np.array([v for _, v in people], float), 0, 12)
        kc, ks = em.bound_slots(np.zeros(len(people), np.int64), ids, 1, c, skey,
                                em.slots_of(x, grid))
        tc, ts, tn = em.slot_table(kc, ks, 2 * grid.shape[0])
        u = np.empty((1, grid.shape[0]))
        kq.fill_utilities(np.array([0]), np.array([tc.shape[0]]), ts, tn,
                          em.targets(np.array([int(tn.sum())]), q), d, grid.shape[0], u)
        return u[0]

    u0 = utilities(base)
    u1 = utilities(base + [(99, v) for v in extra])
    assert np.max(np.abs(u1 - u0)) <= s_row * c
    p0 = _law_of([int(x) for x in u0], eps, s_row * c)
    p1 = _law_of([int(x) for x in u1], eps, s_row * c)
    with mpmath.workprec(100):
        bound = mpmath.exp(mpmath.mpf(Fraction(eps).numerator) / Fraction(eps).denominator)
        for a, b in zip(p0, p1):
            assert a <= bound * b * (1 + mpmath.mpf(2) ** -80)  # removing the person
            assert b <= bound * a * (1 + mpmath.mpf(2) ** -80)  # adding the person


def test_the_median_sensitivity_is_attained_so_it_is_not_loose() -> None:
    """One row moves a median utility by exactly S = 1 (and a q = 1/4 utility by S = 3):
    the stated sensitivity is tight, the factor 2 of the median comes from the step."""
    grid = np.arange(0.0, 6.0)
    base = [1, 2, 3, 4]
    for q, s_row in [(0.5, 1), (0.25, 3), (0.75, 3)]:
        worst = 0.0
        for v in range(6):
            for rows in (base + [v], base[:1] + base[2:]):
                worst = max(worst, float(np.max(np.abs(
                    _kernel_utilities(rows, grid, q) - _kernel_utilities(base, grid, q)))))
        assert worst == s_row == em.scale(q)[1]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 4), st.integers(0, 9)),
                min_size=1, max_size=60), st.integers(1, 3), st.integers(1, 3),
       st.randoms(use_true_random=False))
def test_bounding_keeps_at_most_k_keys_c_rows_and_ignores_row_order(rows, k, c, rnd) -> None:
    """What a person keeps: at most ``k`` keys, ``c`` rows per key, among their own rows;
    the sparse table does not depend on the row order."""
    from dpfast.tables import bounding

    skey = bounding.subkey(_replay())
    keys = np.array([r[0] for r in rows], np.int64)
    ids = np.array([r[1] for r in rows], np.int64)
    slots = np.array([r[2] for r in rows], np.int64)
    table = em.slot_table(*em.bound_slots(keys, ids, k, c, skey, slots), 10)
    perm = list(range(len(rows)))
    rnd.shuffle(perm)
    p = np.array(perm)
    table2 = em.slot_table(*em.bound_slots(keys[p], ids[p], k, c, skey, slots[p]), 10)
    for a, b in zip(table, table2):
        np.testing.assert_array_equal(a, b)
    for person in np.unique(ids):  # one person alone: at most k keys, c rows each
        mine = ids == person
        kc, ks = em.bound_slots(keys[mine], ids[mine], k, c, skey, slots[mine])
        assert len(np.unique(kc)) <= k
        assert all((kc == x).sum() <= c for x in np.unique(kc))
        own = sorted(zip(keys[mine].tolist(), slots[mine].tolist()))
        kept = sorted(zip(kc.tolist(), ks.tolist()))
        assert all(kept.count(x) <= own.count(x) for x in set(kept))
    total = em.bound_slots(keys, ids, k, c, skey, slots)
    assert total[0].shape[0] == sum(
        em.bound_slots(keys[ids == i], ids[ids == i], k, c, skey, slots[ids == i])[0].shape[0]
        for i in np.unique(ids))


@pytest.mark.parametrize("n_codes,n_slots", [(1, 6), (50, 20), (3000, 514)])
def test_both_table_kernels_and_both_slot_searches_agree_with_numpy(n_codes, n_slots) -> None:
    """The dense (bucketed) and the per-key-run table kernels, and the guessed and the
    binary slot search, against np.unique / np.searchsorted."""
    from dpfast._kernels import quantile as kq

    r = np.random.default_rng(n_codes)
    n = 20_000
    codes = r.integers(0, n_codes, n)
    slots = r.integers(0, n_slots, n)
    w = r.integers(1, 4, n)
    u, inv = np.unique(codes * n_slots + slots, return_inverse=True)
    want = np.zeros(u.shape[0], np.int64)
    np.add.at(want, inv.reshape(-1), w)
    for kernel in ("dense", "runs"):
        out = [np.empty(n, np.int64) for _ in range(3)]
        if kernel == "dense":
            shift = max(0, 17 - int(n_slots - 1).bit_length())
            size = kq.key_slot_dense(codes, slots, w, True, n_codes, n_slots, shift, *out)
        else:
            size = kq.key_slot_counts(codes, slots, w, True, n_codes, n_slots, *out)
        assert size == u.shape[0]
        np.testing.assert_array_equal(out[0][:size], u // n_slots)
        np.testing.assert_array_equal(out[1][:size], u % n_slots)
        np.testing.assert_array_equal(out[2][:size], want)
    g = np.linspace(-1.0, 3.0, n_slots // 2 + 1)
    v = np.clip(np.concatenate([g, r.normal(1, 1, 5000), np.nextafter(g, 9)]), -1, 3)
    p = np.searchsorted(g, v)
    ref = 2 * p + (g[np.minimum(p, g.shape[0] - 1)] == v)
    for guess in (True, False):
        got = np.empty(v.shape[0], np.int64)
        kq.grid_slots(v, g, -1.0, (g.shape[0] - 1) / 4.0 if guess else 0.0, guess, got)
        np.testing.assert_array_equal(got, ref)
    np.testing.assert_array_equal(em.slots_of(v, g), ref)


def test_zcdp_share_is_valid_tight_and_used_only_when_it_gives_more() -> None:
    import mpmath

    from dpfast.tables.quantiles import zcdp_share

    for eps, delta, m in [(1.0, 1e-5, 10), (0.5, 1e-8, 40), (2.0, 1e-6, 3), (1.0, 1e-3, 2)]:
        e_q = zcdp_share(eps, delta, m)
        with mpmath.workprec(200):
            big_l = mpmath.log(1 / mpmath.mpf(delta))
            rho = m * mpmath.mpf(e_q) ** 2 / 8
            assert rho + 2 * mpmath.sqrt(rho * big_l) <= eps          # valid
            rho2 = m * mpmath.mpf(e_q * (1 + 1e-9)) ** 2 / 8
            assert rho2 + 2 * mpmath.sqrt(rho2 * big_l) > eps         # and tight
    assert zcdp_share(1.0, 1e-5, 10) > 0.129 > 1.0 / 10
    r = np.random.default_rng(5)
    keys = r.integers(0, 20, 20000)
    ids = r.integers(0, 4000, 20000)
    vals = r.normal(50, 10, 20000)
    dom = np.arange(20)
    kw = dict(bounds=(0.0, 100.0), epsilon=1.0, domain=dom, max_partitions=10,
              rng=dpfast.default_rng(bytes(32)))
    pure = dpt.median(vals, keys, ids, **kw)
    assert pure.epsilon_per_key == pytest.approx(0.1) and isinstance(pure.event,
                                                                     ev.SelfComposed)
    approx = dpt.median(vals, keys, ids, delta=1e-5, **kw)
    assert approx.epsilon_per_key == zcdp_share(1.0, 1e-5, 10)
    assert approx.event == ev.with_neighbouring(ev.EpsilonDelta(1.0, 1e-5), ev.ADD_REMOVE)
    two = dpt.median(vals, keys, ids, delta=1e-5, **{**kw, "max_partitions": 2})
    assert two.epsilon_per_key == pytest.approx(0.5)  # basic composition gives more here
