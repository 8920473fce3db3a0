"""dpfast.tables.topdown: consistency, non-negativity, integrality, least squares, accuracy."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import mpmath
import numpy as np
import pytest
from hypothesis import given

import dpfast
from dpfast import tables
from dpfast.tables import _wls

from .helpers import KEY, dgauss_pmf_table

# --------------------------------------------------------------------------- trees


def random_tree(g: np.random.Generator, sizes: list[int], shuffle: bool = True,
                extra_leaves: int = 0):
    """levels (coarse to fine) for a random tree with the given unit counts per level; the
    finest level's units get one leaf each plus ``extra_leaves`` more (shared units)."""
    parents = []
    for j in range(1, len(sizes)):
        p = np.concatenate([np.arange(sizes[j - 1]),
                            g.integers(0, sizes[j - 1], sizes[j] - sizes[j - 1])])
        g.shuffle(p)
        parents.append(p)
    finest = np.concatenate([np.arange(sizes[-1]), g.integers(0, sizes[-1], extra_leaves)])
    if shuffle:
        g.shuffle(finest)
    levels = [finest]
    for p in reversed(parents):
        levels.insert(0, p[levels[0]])
    return levels


def census_like(g: np.random.Generator, sizes=(1, 51, 400, 4000, 80000)):
    levels = random_tree(g, list(sizes))
    n = levels[-1].shape[0]
    pop = np.where(g.random(n) < 0.35, 0, np.rint(g.lognormal(3.6, 1.1, n))).astype(np.int64)
    return pop, levels


def children_sums(levels, est):
    """For each level j >= 1: the sums of level j's estimates per level-(j-1) unit."""
    out = []
    for j in range(1, len(levels)):
        par = np.full(est[j].shape[0], -1, np.int64)
        par[levels[j]] = levels[j - 1]
        flat = est[j].reshape(est[j].shape[0], -1)
        s = np.zeros((est[j - 1].shape[0], flat.shape[1]), dtype=flat.dtype)
        np.add.at(s, par, flat)
        out.append(s.reshape(est[j - 1].shape))
    return out


@st.composite
def trees(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    g = np.random.default_rng(seed)
    depth = draw(st.integers(1, 4))
    sizes = [draw(st.integers(1, 3))]
    for _ in range(depth - 1):
        sizes.append(sizes[-1] + draw(st.integers(0, 12)))
    extra = draw(st.integers(0, 10))
    levels = random_tree(g, sizes, extra_leaves=extra)
    cells = draw(st.sampled_from([None, 1, 3]))
    n = levels[-1].shape[0]
    scale = draw(st.sampled_from([0, 1, 5, 1000]))
    shape = (n,) if cells is None else (n, cells)
    counts = g.poisson(scale, shape) * (g.random(shape) < 0.6)
    return counts.astype(np.int64), levels


# --------------------------------------------------------------------------- structure


@given(trees(), st.booleans(), st.booleans(), st.booleans(), st.integers(0, 2**31))
def test_consistent_nonnegative_integral_every_level(tree, nonneg, integer, invariant, seed):
    counts, levels = tree
    if invariant and len(levels) == 1:
        levels = [np.zeros_like(levels[0])] + levels
    before = counts.copy()
    rho = [0.0] + [0.3] * (len(levels) - 1) if invariant else 0.05
    r = tables.topdown(counts, levels, rho=rho, nonnegative=nonneg, integer=integer,
                       total_invariant=invariant, rng=seed.to_bytes(32, "little"))
    np.testing.assert_array_equal(counts, before)  # never mutated
    truth = tables.aggregate_levels(counts, levels)
    assert len(r.estimates) == len(levels)
    for j, e in enumerate(r.estimates):
        assert e.shape == truth[j].shape
        if integer:
            assert e.dtype == np.int64
        if nonneg:
            assert (e >= 0).all()
    sums = children_sums(levels, r.estimates)
    for j, s in enumerate(sums):
        if integer:
            np.testing.assert_array_equal(s, r.estimates[j])
        else:
            np.testing.assert_allclose(s, r.estimates[j], rtol=1e-9, atol=1e-6)
    if invariant:
        np.testing.assert_array_equal(r.estimates[0], truth[0])
        assert r.noisy[0] is None
    # the least-squares estimates are consistent too
    for j, s in enumerate(children_sums(levels, r.consistent)):
        np.testing.assert_allclose(s, r.consistent[j], rtol=1e-9, atol=1e-6)


def test_dense_census_like_tree_exact_sums():
    g = np.random.default_rng(3)
    pop, levels = census_like(g, (1, 51, 300, 3000, 60000))
    r = tables.topdown(pop, levels, rho=0.5, rng=KEY)
    for j, s in enumerate(children_sums(levels, r.estimates)):
        np.testing.assert_array_equal(s, r.estimates[j])
    assert all((e >= 0).all() and e.dtype == np.int64 for e in r.estimates)


# --------------------------------------------------------------------------- least squares


def _dense_gls(levels, noisy, var, n_cells):
    """GLS by dense linear algebra: unknown finest-level values b, every unit's value A b."""
    n_f = int(levels[-1].max()) + 1
    rows, ys, ws = [], [], []
    mats = []
    for j, lev in enumerate(levels):
        n_j = int(lev.max()) + 1
        A = np.zeros((n_j, n_f))
        A[lev, levels[-1]] = 1.0  # unit of level j contains finest unit
        mats.append(A)
        rows.append(A)
        ys.append(noisy[j].reshape(n_j, n_cells))
        ws.append(np.full(n_j, 1.0 / var[j]))
    A = np.vstack(rows)
    Y = np.vstack(ys)
    Wd = np.concatenate(ws)
    M = A.T @ (Wd[:, None] * A)
    cov = np.linalg.inv(M)
    b = cov @ (A.T @ (Wd[:, None] * Y))
    est = [(Aj @ b) for Aj in mats]
    variances = [np.einsum("ij,jk,ik->i", Aj, cov, Aj) for Aj in mats]
    return est, variances


@pytest.mark.parametrize("seed", range(5))
def test_least_squares_matches_dense_gls(seed):
    g = np.random.default_rng(seed)
    sizes = [1, 3, 8, 20]
    levels = random_tree(g, sizes, shuffle=True)
    counts = g.poisson(20, (levels[-1].shape[0], 2))
    rho = [0.05, 0.2, 0.1, 0.5]
    r = tables.topdown(counts, levels, rho=rho, nonnegative=False, integer=False,
                       rng=bytes([seed]) * 32)
    var = [s * s for s in r.sigma]
    est, variances = _dense_gls(levels, r.noisy, var, 2)
    for j in range(len(levels)):
        np.testing.assert_allclose(r.consistent[j], est[j], rtol=1e-9, atol=1e-8)
        np.testing.assert_allclose(r.estimates[j], est[j], rtol=1e-9, atol=1e-8)
        np.testing.assert_allclose(r.variances[j], variances[j], rtol=1e-9)
        # never worse than the raw measurement (exact)
        assert (r.variances[j] <= var[j] * (1 + 1e-12)).all()


def test_variance_bound_exact_on_census_shape():
    g = np.random.default_rng(7)
    pop, levels = census_like(g, (1, 51, 300, 3000, 60000))
    r = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.2, 0.3, 0.2], rng=KEY)
    for j in range(5):
        assert (r.variances[j] <= r.sigma[j] ** 2).all()
    # the root's variance from the formula: V_root = 1 / (1/s0^2 + 1/sum_children V)
    tree = _wls.build_tree(levels, pop.shape[0])
    assert tree.sizes == [1, 51, 300, 3000, 60000]


# --------------------------------------------------------------------------- noise law


def _dg_variance(sigma: float) -> float:
    table = dgauss_pmf_table(sigma)  # exact pmf on +-15 sigma (mass beyond: < e^-112)
    with mpmath.workdps(40):
        return float(mpmath.fsum(k * k * v for k, v in table.items()))


def test_measurements_are_discrete_gaussian_with_level_sigma():
    g = np.random.default_rng(11)
    levels = random_tree(g, [1, 200, 300_000], shuffle=False)
    counts = g.poisson(4, levels[-1].shape[0])
    r = tables.topdown(counts, levels, rho=[0.5, 0.5, 0.125], rng=KEY)
    truth = tables.aggregate_levels(counts, levels)
    noise = r.noisy[2] - truth[2]
    assert r.sigma[2] == 2.0
    v = float(np.mean(noise.astype(np.float64) ** 2))
    exact = _dg_variance(r.sigma[2])
    se = exact * math.sqrt(2.0 / noise.size)
    assert abs(v - exact) < 4 * se  # 4 se is about 1% here
    assert abs(float(noise.mean())) < 4 * math.sqrt(exact / noise.size)
    assert np.all(noise == np.rint(noise))


# --------------------------------------------------------------------------- accuracy


def test_accuracy_no_worse_than_raw_every_level():
    """Paired errors over replicates on a census-shaped tree: released (non-negative,
    integer) vs the raw measurement of the same unit, per level above the leaves; and the
    least-squares estimates at every level including the leaves.

    What holds at the leaves: the least-squares leaves are no worse than raw (exact
    theory, tested here); the released leaves differ from their projection by < 1, which
    on sparse census-like blocks (a third empty) makes them better than raw (tested), but
    on dense leaves with small sigma rounding may cost up to about 1/12 in variance.
    """
    g = np.random.default_rng(5)
    pop, levels = census_like(g, (1, 51, 300, 3000, 30000))
    truth = tables.aggregate_levels(pop, levels)
    rng = dpfast.default_rng(KEY)
    L = len(levels)
    d_rel: list[list[np.ndarray]] = [[] for _ in range(L)]
    d_ls: list[list[np.ndarray]] = [[] for _ in range(L)]
    raw_sq: list[list[np.ndarray]] = [[] for _ in range(L)]
    for _ in range(60):
        r = tables.topdown(pop, levels, rho=0.25, rng=rng)
        for j in range(L):
            raw = (r.noisy[j] - truth[j]).astype(np.float64) ** 2
            rel = (r.estimates[j] - truth[j]).astype(np.float64) ** 2
            ls = (r.consistent[j] - truth[j]) ** 2
            raw_sq[j].append(raw)
            d_rel[j].append(rel - raw)
            d_ls[j].append(ls - raw)
    for j in range(L):
        dr = np.concatenate(d_rel[j])
        dl = np.concatenate(d_ls[j])
        raw_mse = float(np.concatenate(raw_sq[j]).mean())
        se_r = dr.std() / math.sqrt(dr.size)
        se_l = dl.std() / math.sqrt(dl.size)
        assert dl.mean() <= 3 * se_l, (j, dl.mean(), se_l)
        assert dr.mean() <= 3 * se_r, (j, dr.mean(), se_r, raw_mse)
        if j >= 2:  # many units: the improvement itself is significant
            assert dl.mean() < -3 * se_l
            assert dr.mean() < -3 * se_r


def test_confidence_interval_coverage():
    g = np.random.default_rng(9)
    pop, levels = census_like(g, (1, 20, 200, 2000))
    truth = tables.aggregate_levels(pop, levels)
    r = tables.topdown(pop, levels, rho=0.2, rng=KEY)
    alpha = 0.1
    ci = r.confidence_halfwidth(alpha)
    intervals = r.confidence_interval(alpha)
    raw_w = r.noisy_confidence_interval(alpha)
    for j in (2, 3):
        covered = np.abs(r.consistent[j] - truth[j]) <= ci[j]
        assert covered.mean() >= 1 - alpha
        low, high = intervals[j]
        assert (low <= r.estimates[j]).all() and (r.estimates[j] <= high).all()
        assert (low >= 0).all()
        assert ((low <= truth[j]) & (truth[j] <= high)).mean() >= 1 - alpha
        raw_cov = np.abs(r.noisy[j] - truth[j]) <= raw_w[j]
        assert raw_cov.mean() >= 1 - alpha - 3 * math.sqrt(alpha * (1 - alpha) / raw_cov.size)
    summaries = r.accuracy(truth, alpha=alpha)
    assert isinstance(summaries[3], tables.AccuracySummary)
    assert summaries[3].n_keys == 2000 and summaries[3].coverage >= 1 - alpha
    assert summaries[3].rmse <= 1.5 * summaries[3].expected_rmse
    assert r.accuracy()[0].mae is None
    mech = dpfast.DiscreteGaussianMechanism(rho=0.05)
    assert raw_w[0] == mech.confidence_interval(alpha)


# --------------------------------------------------------------------------- release conventions


def test_event_epsilon_and_replay():
    g = np.random.default_rng(1)
    pop, levels = census_like(g, (1, 5, 50, 500))
    r1 = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.3, 0.4], rng=dpfast.default_rng(KEY))
    r2 = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.3, 0.4], rng=dpfast.default_rng(KEY))
    for a, b in zip(r1.estimates, r2.estimates):  # a generator rebuilt from a key replays
        np.testing.assert_array_equal(a, b)
    r4 = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.3, 0.4], rng=KEY)
    r5 = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.3, 0.4], rng=KEY)
    assert not np.array_equal(r4.noisy[3], r5.noisy[3])  # a raw key never replays
    assert r1.release_id is None and r4.release_id != r5.release_id
    from dpfast.tables import keynoise

    r6 = tables.topdown(pop, levels, rho=[0.1, 0.2, 0.3, 0.4],
                        rng=keynoise.keyed_generator(KEY, r4.release_id))
    np.testing.assert_array_equal(r6.noisy[3], r4.noisy[3])  # its release generator does
    # one exact discrete Gaussian event per level (tests/test_topdown_events.py)
    assert isinstance(r1.event, dpfast.events.Composed) and len(r1.event.events) == 4
    assert [e.noise_multiplier for e in r1.event.events] == r1.sigma
    assert 1.0 - 1e-12 <= r1.rho_total <= 1.0  # spent: sigma rounded up
    eps = r1.epsilon(1e-10)
    assert eps <= 1.0 + 2 * math.sqrt(1.0 * math.log(1e10)) + 1e-9
    assert eps > 1.0
    text = r1.summary(truth=tables.aggregate_levels(pop, levels))
    assert "rho = 1" in text and "level 3" in text
    rows = r1.report(0.05)
    assert [row["level"] for row in rows] == [0, 1, 2, 3]
    # a scalar rho is split equally and never exceeds the total
    r3 = tables.topdown(pop, levels, rho=0.3, rng=KEY)
    assert r3.rho_total <= 0.3 and r3.rho[0] == r3.rho[3]


def test_budget_charged_before_noise():
    g = np.random.default_rng(2)
    pop, levels = census_like(g, (1, 3, 9, 30))
    budget = dpfast.Budget(epsilon=5.0, delta=1e-6, accounting="zcdp")
    tables.topdown(pop, levels, rho=0.2, rng=KEY, budget=budget, note="first")
    assert len(budget.history()) == 1
    with pytest.raises(dpfast.BudgetExceededError):
        tables.topdown(pop, levels, rho=50.0, rng=KEY, budget=budget)
    assert len(budget.history()) == 1


def test_use_case_warning():
    g = np.random.default_rng(2)
    pop, levels = census_like(g, (1, 3, 9, 30))
    with pytest.warns(UserWarning, match="government statistics"):
        tables.topdown(pop, levels, rho=1.0, rng=KEY, use_case="government_statistics")
    with pytest.raises(ValueError, match="use_case"):
        tables.topdown(pop, levels, rho=1.0, rng=KEY, use_case="astrology")


def test_one_level_and_1d_2d_shapes():
    counts = np.array([[1, 2], [3, 4], [0, 0]])
    r = tables.topdown(counts, [np.array([0, 1, 1])], rho=1.0, rng=KEY)
    assert r.estimates[0].shape == (2, 2)
    r1 = tables.topdown(counts[:, 0], [np.zeros(3, int), np.arange(3)], rho=1.0, rng=KEY)
    assert r1.estimates[1].shape == (3,) and r1.noisy[1].shape == (3,)


# --------------------------------------------------------------------------- bad input


def test_bad_input():
    lv = [np.zeros(4, int), np.array([0, 0, 1, 1])]
    c = np.array([1, 2, 3, 4])
    with pytest.raises(TypeError, match="leaf_counts"):
        tables.topdown(c.astype(float), lv, rho=1.0)
    with pytest.raises(ValueError, match="leaf_counts"):
        tables.topdown(-c, lv, rho=1.0)
    with pytest.raises(ValueError, match="levels\\[1\\]"):
        tables.topdown(c, [np.zeros(4, int), np.array([0, 0, 1])], rho=1.0)
    with pytest.raises(ValueError, match="do not nest"):
        tables.topdown(c, [np.array([0, 0, 1, 1]), np.array([0, 1, 1, 2])], rho=1.0)
    with pytest.raises(ValueError, match="id 1 has no leaf"):
        tables.topdown(c, [np.zeros(4, int), np.array([0, 0, 2, 2])], rho=1.0)
    with pytest.raises(ValueError, match="rho"):
        tables.topdown(c, lv, rho=0.0)
    with pytest.raises(ValueError, match="rho"):
        tables.topdown(c, lv, rho=[1.0])
    with pytest.raises(ValueError, match="rho\\[0\\]"):
        tables.topdown(c, lv, rho=[1.0, 1.0], total_invariant=True)
    with pytest.raises(TypeError, match="nonnegative"):
        tables.topdown(c, lv, rho=1.0, nonnegative=1)
    with pytest.raises(TypeError, match="levels\\[0\\]"):
        tables.topdown(c, [np.zeros(4)], rho=1.0)
    with pytest.raises(OverflowError):
        tables.topdown(np.array([2**61, 2**61, 2**61]), [np.zeros(3, int)], rho=1.0)


# --------------------------------------------------------------------------- command line

BLOCKS_CSV = """state,county,block,pop,households
CA,001,1,12,4
CA,001,2,0,0
CA,003,1,40,15
NY,001,1,7,3
NY,001,2,3,1
NY,005,1,0,0
NY,001,3,5,2
"""


def _cli(*args, cwd=None):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "dpfast", *args], capture_output=True,
                          text=True, cwd=cwd)


@pytest.mark.slow
def test_cli_topdown_csv(tmp_path):
    import csv
    import json

    src = tmp_path / "blocks.csv"
    src.write_text(BLOCKS_CSV)
    (tmp_path / "key").write_bytes(KEY)
    out = tmp_path / "out"
    res = _cli("topdown", str(src), "--level", "state", "--level", "county", "--level",
               "block", "--count", "pop", "--count", "households", "--rho", "0.5",
               "--seed-key-file", str(tmp_path / "key"), "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert "rho = 0.5" in res.stdout
    files = sorted(p.name for p in out.iterdir())
    assert files == ["level_0_total.csv", "level_1_state.csv", "level_2_county.csv",
                     "level_3_block.csv", "privacy.json"]
    rows = {}
    for p in files:
        if p.endswith(".csv"):
            with open(out / p, newline="") as fh:
                rows[p] = list(csv.DictReader(fh))
    assert len(rows["level_1_state.csv"]) == 2
    assert len(rows["level_2_county.csv"]) == 4  # CA/001, CA/003, NY/001, NY/005
    assert len(rows["level_3_block.csv"]) == 7
    assert list(rows["level_2_county.csv"][0]) == [
        "state", "county", "pop_released", "pop_measured", "households_released",
        "households_measured"]
    for col in ("pop_released", "households_released"):
        total = int(rows["level_0_total.csv"][0][col])
        for name in ("level_1_state.csv", "level_2_county.csv", "level_3_block.csv"):
            vals = [int(r[col]) for r in rows[name]]
            assert sum(vals) == total and min(vals) >= 0
        # each county is the sum of its blocks
        for c in rows["level_2_county.csv"]:
            blocks = [int(r[col]) for r in rows["level_3_block.csv"]
                      if (r["state"], r["county"]) == (c["state"], c["county"])]
            assert sum(blocks) == int(c[col])
    privacy = json.loads((out / "privacy.json").read_text())
    assert privacy["rho"] <= 0.5 and privacy["epsilon_at_delta_1e-10"] > 0.5
    # replay with the same key gives the same tables
    out2 = tmp_path / "out2"
    res = _cli("topdown", str(src), "--level", "state", "--level", "county", "--level",
               "block", "--count", "pop", "--count", "households", "--rho", "0.5",
               "--seed-key-file", str(tmp_path / "key"), "-o", str(out2))
    assert (out2 / "level_3_block.csv").read_text() == (out / "level_3_block.csv").read_text()


@pytest.mark.slow
def test_cli_topdown_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    src = tmp_path / "b.parquet"
    pq.write_table(pa.table({"region": ["a", "a", "b"], "zone": [1, 2, 1],
                             "count": [5, 6, 7]}), src)
    res = _cli("topdown", str(src), "--level", "region", "--level", "zone", "--rho", "0.2",
               "0.3", "0.5", "-o", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    t = pq.read_table(tmp_path / "o" / "level_2_zone.parquet")
    assert t.num_rows == 3 and sum(t.column("count_released").to_pylist()) >= 0
    assert "count_measured" in t.column_names


@pytest.mark.slow
def test_cli_topdown_errors(tmp_path):
    src = tmp_path / "blocks.csv"
    src.write_text(BLOCKS_CSV)
    res = _cli("topdown", str(src), "--level", "nope", "--count", "pop", "--rho", "1",
               "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "nope" in res.stderr and "Traceback" not in res.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("g,count\na,1.5\n")
    res = _cli("topdown", str(bad), "--level", "g", "--rho", "1", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "not a count" in res.stderr
    res = _cli("topdown", str(src), "--level", "state", "--count", "pop", "--rho", "1", "2",
               "3", "-o", str(tmp_path / "o"))
    assert res.returncode == 2 and "rho" in res.stderr
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_docs_topdown_example_runs() -> None:
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "topdown.md").read_text()
    code = re.search(r"# Releasing a hierarchy \(TopDown\)\n.*?```python\n(.*?)```", text,
                     re.S).group(1)
    exec(compile(code, "docs/topdown.md", "exec"), {})


# --------------------------------------------------------------------------- kernels


@given(st.lists(st.floats(-50, 50), min_size=1, max_size=12), st.integers(0, 200),
       st.integers(0, 2**32 - 1))
def test_projection_kernel_is_the_weighted_projection(vals, target, seed):
    """``c = max(0, v - lam w)`` with ``sum c = target``: checked against a bisection on
    ``lam`` (the KKT conditions of min sum (c - v)^2 / w s.t. c >= 0, sum c = target)."""
    from dpfast._kernels import topdown as k

    v = np.array(vals, dtype=np.float64)
    w = np.random.default_rng(seed).uniform(0.5, 3.0, v.size)
    got = np.empty_like(v)
    k._project(v.copy(), w, v.size, float(target), True, np.empty(v.size, np.int64), got)
    assert (got >= 0).all()
    assert abs(got.sum() - target) <= 1e-9 * (1 + target + np.abs(v).sum())
    if target > 0:
        lo, hi = ((v - target) / w).min() - 1.0, (v / w).max() + 1.0
        for _ in range(200):
            mid = (lo + hi) / 2
            if np.maximum(v - mid * w, 0).sum() > target:
                lo = mid
            else:
                hi = mid
        ref = np.maximum(v - hi * w, 0)
        np.testing.assert_allclose(got, ref, atol=1e-7 * (1 + target))
    # without the sign constraint: a shift proportional to w
    free = np.empty_like(v)
    k._project(v.copy(), w, v.size, float(target), False, np.empty(v.size, np.int64), free)
    lam = (v.sum() - target) / w.sum()
    np.testing.assert_allclose(free, v - lam * w, rtol=1e-12, atol=1e-9)


@given(st.lists(st.floats(0, 30), min_size=1, max_size=12), st.integers(-3, 3))
def test_rounding_kernel_repairs_any_sum(vals, offset):
    """Largest remainder keeps the exact integer total even when the float values do not
    sum to it (the repair paths: total below or above the floors' sum)."""
    from dpfast._kernels import topdown_round as k

    v = np.array(vals, dtype=np.float64)
    target = int(np.floor(v).sum()) + offset * v.size if offset < 0 else \
        int(round(v.sum())) + offset * v.size
    target = max(target, 0)
    out = np.empty(v.size, np.int64)
    k._round(v, v.size, np.int64(target), True, out, np.empty(v.size),
             np.empty(v.size, np.int64))
    assert int(out.sum()) == target
    assert (out >= 0).all()
    if abs(v.sum() - target) < 1e-9:
        assert (np.abs(out - v) < 1).all()
        # the units added go to the largest fractional parts
        up = out > np.floor(v)
        if up.any() and (~up).any():
            assert (v - np.floor(v))[up].min() >= (v - np.floor(v))[~up].max()


@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 0.1, 0.9, 1e-300]), min_size=1,
                max_size=80))
def test_remainder_order_is_numpys_stable_argsort(fracs):
    """The rounding's order of remainders (plain loops) is numpy's stable argsort of
    ``-frac``: larger first, ties to the lower index (many ties, runs past 16 merged)."""
    from dpfast._kernels import topdown_round as k

    f = np.array(fracs)
    idx = np.empty(f.size, np.int64)
    k._argsort_desc(f, f.size, idx, np.empty(f.size, np.int64))
    np.testing.assert_array_equal(idx, np.argsort(-f, kind="mergesort"))


@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 0.1, 0.9, 1e-300]), min_size=1,
                max_size=120), st.data())
def test_selection_is_the_stable_argsorts_first_r(fracs, data):
    """The rounding picks its ``r`` units by selection, not a sort: the same set as the
    first ``r`` of numpy's stable argsort of ``-frac`` (larger first, ties to the lower
    index), many ties included; and ``_round`` adds them exactly there."""
    from dpfast._kernels import topdown_round as k

    f = np.array(fracs)
    n = f.size
    r = data.draw(st.integers(1, n))
    idx = np.empty(n, np.int64)
    k._select_first(f, n, r, idx)
    want = np.argsort(-f, kind="mergesort")[:r]
    assert set(idx[:r].tolist()) == set(want.tolist())
    v = np.arange(n, dtype=np.float64) + f  # floors 0..n-1
    target = int(np.floor(v).sum()) + r
    out = np.empty(n, np.int64)
    k._round(v, n, np.int64(target), True, out, np.empty(n), np.empty(n, np.int64))
    ref = np.floor(v).astype(np.int64)
    ref[np.argsort(-(v - np.floor(v)), kind="mergesort")[:r]] += 1
    np.testing.assert_array_equal(out, ref)


def _project_reference(v, w, target, nonneg):
    """Michelot's iteration as first written (a mask over all coordinates, the sums taken
    afresh each round), in Python floats (IEEE doubles, the kernel's operations)."""
    n = len(v)
    v = [float(a) for a in v]
    if nonneg and target <= 0.0:
        return [0.0] * n
    active = [True] * n
    while True:
        sv = 0.0
        sw = 0.0
        for i in range(n):
            if active[i]:
                sv += v[i]
                sw += w[i]
        lam = (sv - target) / sw
        if not nonneg:
            break
        changed = False
        for i in range(n):
            if active[i] and v[i] - lam * w[i] <= 0.0:
                active[i] = False
                changed = True
        if not changed:
            break
    out = []
    for i in range(n):
        c = v[i] - lam * w[i] if active[i] else 0.0
        out.append(c if (c > 0.0 or not nonneg) else 0.0)
    return out


@given(st.lists(st.floats(-50, 50), min_size=1, max_size=40), st.integers(0, 300),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_projection_kernel_is_bit_identical_to_the_reference_iteration(vals, target, one_w,
                                                                       seed):
    """The kernel keeps the active coordinates as a list and sums while it filters: the
    same bits as the masked iteration that recomputes every sum."""
    from dpfast._kernels import topdown as k

    v = np.array(vals, dtype=np.float64)
    w = np.full(v.size, 2.5) if one_w else \
        np.random.default_rng(seed).uniform(0.5, 3.0, v.size)
    for nonneg in (True, False):
        got = np.empty_like(v)
        k._project(v.copy(), w, v.size, float(target), nonneg, np.empty(v.size, np.int64),
                   got)
        want = np.array(_project_reference(v, w.tolist(), float(target), nonneg))
        assert got.tobytes() == want.tobytes()


def _round_reference(v, target):
    """Floor, then one more unit to the ``target - sum floor`` largest remainders, ties to
    the lower index (numpy's stable argsort), for targets the floors leave in [0, n)."""
    f = np.floor(v)
    out = f.astype(np.int64)
    r = int(target - out.sum())
    out[np.argsort(-(v - f), kind="mergesort")[:r]] += 1
    return out


@given(st.integers(1, 300), st.sampled_from(["spread", "ties", "binades", "zeros"]),
       st.integers(0, 2**32 - 1), st.data())
def test_threshold_selection_is_the_stable_argsorts_first_r(n, kind, seed, data):
    """The rounding's search for the ``r``-th remainder by its value (counting passes,
    the bracket snapped to remainders) picks the set of the stable argsort, on spread
    remainders, few distinct values, and the ties of the finest level (children equal to
    integers plus one shared float shift, whose remainders differ in their last bits
    between binades), with exact zeros (children projected to 0)."""
    from dpfast._kernels import topdown_round as k

    g = np.random.default_rng(seed)
    if kind == "spread":
        v = g.uniform(0, 50, n)
    elif kind == "ties":
        v = g.integers(0, 40, n) + g.choice([0.0, 0.25, 0.5, 0.75], n)
    else:
        shift = float(g.uniform(-0.5, 0.5))
        v = np.maximum(g.integers(0, 3000, n).astype(np.float64) + shift, 0.0)
        if kind == "zeros":
            v[g.random(n) < 0.4] = 0.0
    r = data.draw(st.integers(0, n - 1))
    target = int(np.floor(v).sum()) + r
    out = np.empty(n, np.int64)
    k._round(v, n, np.int64(target), True, out, np.empty(n), np.empty(n, np.int64))
    np.testing.assert_array_equal(out, _round_reference(v, target))


def test_split_children_one_weight_and_parent_order_are_the_general_path() -> None:
    """``w`` empty (every child weighs ``wc``) and ``order`` empty (children in parent
    order) give the bits of the explicit weights and order."""
    from dpfast._kernels import topdown as k

    rng = np.random.default_rng(5)
    n_par, n_ch, kk = 60, 3000, 2
    par = np.sort(rng.integers(0, n_par, n_ch))
    offsets = np.empty(n_par + 1, np.int64)
    assert k.csr_offsets(par, n_par, offsets)
    order = np.empty(n_ch, np.int64)
    k.csr_order(par, offsets, order)
    np.testing.assert_array_equal(order, np.arange(n_ch))
    x = rng.integers(-3, 40, (n_ch, kk)) + 0.37
    target = np.rint(rng.uniform(0, 900, (n_par, kk)))
    none_i, none_f = np.empty(0, np.int64), np.empty(0)
    for nonneg in (False, True):
        for integer in (False, True):
            outs = []
            for w, wc, o in ((np.full(n_ch, 2.5), 0.0, order), (none_f, 2.5, none_i)):
                out_i = np.zeros((n_ch if integer else 0, kk), np.int64)
                out_f = np.zeros((0 if integer else n_ch, kk))
                k.split_children_serial(target, x, w, wc, offsets, o, nonneg, integer, out_f,
                                        out_i)
                outs.append(out_i if integer else out_f)
            assert outs[0].tobytes() == outs[1].tobytes()
    shuffled = rng.permutation(par)
    assert not k.csr_offsets(shuffled, n_par, offsets)
    k.csr_order(shuffled, offsets, order)
    for g in range(n_par):
        kids = order[offsets[g]:offsets[g + 1]]
        np.testing.assert_array_equal(kids, np.flatnonzero(shuffled == g))


@pytest.mark.parametrize("cells", [1, 2])
def test_one_leaf_per_unit_is_the_grouped_path(cells: int) -> None:
    """Leaves that are the finest units (``levels[-1] == arange``: no parent map, no
    grouping) release the bits of the same counts given as two leaves per unit (the
    general path: parents, grouped sums), from the same key."""
    from dpfast.perf.suite import census_tree

    pop, levels = census_tree(40_000, seed=4)
    leaves = np.stack([pop + j for j in range(cells)], 1) if cells > 1 else pop
    a = tables.topdown(leaves, levels, rho=1.0, rng=dpfast.default_rng(KEY))
    half = leaves // 2
    split = np.concatenate([half, leaves - half])  # every unit's count in two leaves
    b = tables.topdown(split, [np.concatenate([lv, lv]) for lv in levels], rho=1.0,
                       rng=dpfast.default_rng(KEY))
    assert _wls.build_tree(levels, pop.shape[0]).leaf_units
    for name in ("estimates", "noisy", "consistent", "variances"):
        for u, v in zip(getattr(a, name), getattr(b, name), strict=True):
            assert u.dtype == v.dtype and u.tobytes() == v.tobytes()


@pytest.mark.parametrize("cells", [1, 3])
def test_fused_downward_pass_is_bit_identical_to_numpy(cells: int) -> None:
    """From ``SERIAL_ROWS`` units on, the least-squares downward pass is one fused kernel
    per level: its estimates and variances are the numpy expressions' bits."""
    from dpfast.perf.suite import census_tree
    from dpfast.tables import _keys, _wls

    pop, levels = census_tree(120_000, seed=3)
    leaves = np.stack([pop + j for j in range(cells)], 1)
    tree = _wls.build_tree(levels, leaves.shape[0])
    g = np.random.default_rng(0)
    noisy = [t + g.integers(-30, 30, t.shape) for t in _wls.aggregate(tree, leaves)]
    var = [1.3, 2.7, 0.9, 4.1, 2.2]
    fused = _wls.least_squares(tree, noisy, var)
    old = _keys.SERIAL_ROWS
    _keys.SERIAL_ROWS = 1 << 40  # numpy at every level
    try:
        ref = _wls.least_squares(tree, noisy, var)
    finally:
        _keys.SERIAL_ROWS = old
    for a, b in zip(fused, ref, strict=True):
        for u, v in zip(a, b, strict=True):
            assert u.dtype == v.dtype and u.shape == v.shape
            assert u.tobytes() == v.tobytes()


def test_split_children_serial_equals_parallel() -> None:
    """The serial kernel (small trees) and the parallel one (large) give the same
    children, rounded or not, with or without the sign constraint."""
    from dpfast._kernels import topdown as k

    rng = np.random.default_rng(3)
    n_par, n_ch, kk = 50, 400, 2
    par = np.sort(rng.integers(0, n_par, n_ch))
    offsets = np.empty(n_par + 1, np.int64)
    order = np.empty(n_ch, np.int64)
    assert k.csr_offsets(par, n_par, offsets)
    k.csr_order(par, offsets, order)
    x = rng.normal(3.0, 4.0, (n_ch, kk))
    w = rng.uniform(0.5, 2.0, n_ch)
    target = np.rint(rng.uniform(0, 60, (n_par, kk)))
    for nonneg in (False, True):
        for integer in (False, True):
            outs = []
            for fn in (k.split_children_serial, k.split_children):
                out_i = np.zeros((n_ch if integer else 0, kk), np.int64)
                out_f = np.zeros((0 if integer else n_ch, kk))
                args = (target, x, w, 0.0, offsets, order, nonneg, integer, out_f, out_i)
                fn(*args, *(() if fn is k.split_children_serial else (2,)))  # 2 threads
                outs.append(out_i if integer else out_f)
            np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("seed", range(3))
def test_least_squares_with_exact_total_matches_constrained_gls(seed):
    """total_invariant: equality-constrained GLS (KKT system) on the measured levels."""
    g = np.random.default_rng(100 + seed)
    levels = random_tree(g, [1, 3, 8, 20], shuffle=True)
    counts = g.poisson(20, levels[-1].shape[0])
    r = tables.topdown(counts, levels, rho=[0.0, 0.2, 0.1, 0.5], nonnegative=False,
                       integer=False, total_invariant=True, rng=bytes([seed + 1]) * 32)
    n_f = 20
    mats = []
    for lev in levels:
        A = np.zeros((int(lev.max()) + 1, n_f))
        A[lev, levels[-1]] = 1.0
        mats.append(A)
    A = np.vstack(mats[1:])
    Y = np.concatenate([r.noisy[j] for j in range(1, 4)]).astype(np.float64)
    Wd = np.concatenate([np.full(mats[j].shape[0], 1 / r.sigma[j] ** 2) for j in range(1, 4)])
    M = A.T @ (Wd[:, None] * A)
    C = mats[0]  # (1, n_f): the total
    kkt = np.block([[M, C.T], [C, np.zeros((1, 1))]])
    rhs = np.concatenate([A.T @ (Wd * Y), [counts.sum()]])
    b = np.linalg.solve(kkt, rhs)[:n_f]
    Mi = np.linalg.inv(M)
    P = Mi - Mi @ C.T @ np.linalg.inv(C @ Mi @ C.T) @ C @ Mi
    for j in range(4):
        np.testing.assert_allclose(r.consistent[j], mats[j] @ b, rtol=1e-9, atol=1e-8)
        np.testing.assert_allclose(r.variances[j], np.einsum("ij,jk,ik->i", mats[j], P,
                                                             mats[j]), rtol=1e-7, atol=1e-9)
    assert r.estimates[0][0] == counts.sum()


@pytest.mark.slow
def test_cli_topdown_ledger(tmp_path):
    src = tmp_path / "blocks.csv"
    src.write_text(BLOCKS_CSV)
    ledger = tmp_path / "budget.sqlite"
    args = ["topdown", str(src), "--level", "state", "--level", "county", "--count", "pop",
            "--ledger", str(ledger)]
    res = _cli(*args, "--rho", "0.1", "--budget-epsilon", "5", "-o", str(tmp_path / "a"))
    assert res.returncode == 0, res.stderr
    assert f"ledger {ledger}" in res.stdout
    res = _cli(*args, "--rho", "50", "-o", str(tmp_path / "b"))
    assert res.returncode == 1 and "refused" in res.stderr
    assert not (tmp_path / "b").exists()
    # dpfast plan reads what the ledger has left
    res = _cli("plan", "--accuracy", "10", "--ledger", str(ledger))
    assert res.returncode == 0, res.stderr
    assert "epsilon left of 5" in res.stdout and "fits" in res.stdout
    res = _cli("plan", "--accuracy", "10", "--ledger", str(tmp_path / "missing.sqlite"))
    assert res.returncode == 2 and "does not exist" in res.stderr


def test_to_columns_and_pandas():
    g = np.random.default_rng(4)
    pop, levels = census_like(g, (1, 3, 9, 30))
    r = tables.topdown(pop, levels, rho=1.0, rng=KEY)
    cols = r.to_columns(2)
    assert list(cols) == ["unit", "released", "measured", "ci_low", "ci_high"]
    np.testing.assert_array_equal(cols["released"], r.estimates[2])
    assert (cols["ci_low"] <= cols["released"]).all()
    with pytest.raises(ValueError, match="level"):
        r.to_columns(4)
    r2 = tables.topdown(np.stack([pop, pop], axis=1), levels, rho=1.0, rng=KEY,
                        total_invariant=True, nonnegative=False, integer=False)
    cols = r2.to_columns(0)
    assert "released_1" in cols and cols["measured_0"][0] == pop.sum()
    pd = pytest.importorskip("pandas")
    df = r.to_pandas(3)
    assert isinstance(df, pd.DataFrame) and len(df) == 30 and df.index.name == "unit"
    assert list(df.columns) == ["released", "measured", "ci_low", "ci_high"]
