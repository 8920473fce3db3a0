"""dpfast.compat.pipeline_dp: PipelineDP's noise drawn by dpfast, nothing else changed."""

from __future__ import annotations

import math
import random
import secrets

import numpy as np
import pytest

from tests.helpers import KEY, chisquare_pvalue

pipeline_dp = pytest.importorskip("pipeline_dp")
from pipeline_dp import aggregate_params as ap  # noqa: E402
from pipeline_dp import dp_computations as dc  # noqa: E402
from pipeline_dp import partition_selection as ps  # noqa: E402

import dpfast  # noqa: E402
from dpfast.compat import pipeline_dp as compat  # noqa: E402

_NUMPY_FUNCS = ["default_rng", "random", "rand", "randn", "randint", "choice", "laplace",
                "normal", "uniform", "exponential", "gumbel", "shuffle", "permutation",
                "standard_normal"]
_PY_FUNCS = ["random", "randint", "randrange", "choice", "choices", "sample", "gauss",
             "normalvariate", "uniform", "getrandbits", "shuffle", "expovariate"]


@pytest.fixture
def rng_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every call of numpy's and Python's random functions (they still run)."""
    calls: list[str] = []

    def spy(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls.append(f"{owner.__name__}.{name}")
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    for name in _NUMPY_FUNCS:
        spy(np.random, name)
    for name in _PY_FUNCS:
        spy(random, name)
    spy(secrets, "randbelow")
    spy(secrets, "token_bytes")
    return calls


def _aggregate(noise_kind, public: bool = True):
    # 300 privacy units, one row each, in 3 partitions: no contribution sampling needed
    rows = [(uid, f"p{uid % 3}", 1.5) for uid in range(300)]
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=noise_kind, metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM],
        max_partitions_contributed=1, max_contributions_per_partition=1,
        min_value=0.0, max_value=2.0)
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                            partition_extractor=lambda r: r[1],
                                            value_extractor=lambda r: r[2])
    result = engine.aggregate(rows, params, extractors,
                              public_partitions=["p0", "p1", "p2"] if public else None)
    accountant.compute_budgets()
    return dict(result)


@pytest.mark.parametrize("noise_kind", [pipeline_dp.NoiseKind.LAPLACE,
                                        pipeline_dp.NoiseKind.GAUSSIAN])
def test_aggregate_count_sum_uses_dpfast_only(noise_kind, rng_spy) -> None:
    with compat.patched(key=KEY):
        first = _aggregate(noise_kind)
    assert rng_spy == []  # no numpy / Python RNG anywhere in the run (noise included)
    assert not compat.is_installed()
    with compat.patched(key=KEY):
        second = _aggregate(noise_kind)
    assert first == second  # the noise is dpfast's keyed ChaCha20, not PyDP's
    assert set(first) == {"p0", "p1", "p2"}
    for metrics in first.values():
        # true count 100, sum 150; budget (0.5, 5e-7) each: Laplace scales 2 and 4
        assert abs(metrics.count - 100) < 60 and abs(metrics.sum - 150) < 120
        assert metrics.count != 100 and metrics.sum != 150


def test_private_partition_selection_uses_dpfast(rng_spy) -> None:
    with compat.patched(key=KEY):
        first = _aggregate(pipeline_dp.NoiseKind.LAPLACE, public=False)
    assert rng_spy == []
    with compat.patched(key=KEY):
        second = _aggregate(pipeline_dp.NoiseKind.LAPLACE, public=False)
    assert first == second and set(first) == {"p0", "p1", "p2"}


def test_spy_sees_pipeline_dps_own_exponential_rng(rng_spy) -> None:
    """Control: unpatched, PipelineDP's exponential mechanism calls numpy's RNG."""

    class Score(dc.ExponentialMechanism.ScoringFunction):
        def score(self, k):
            return float(k)

        global_sensitivity = 1.0
        is_monotonic = True

    dc.ExponentialMechanism(Score()).apply(1.0, [0, 1, 2])
    assert "numpy.random.default_rng" in rng_spy


def test_exponential_mechanism_exact_frequencies(rng_spy) -> None:
    class Score(dc.ExponentialMechanism.ScoringFunction):
        def score(self, k):
            return float(k)

        global_sensitivity = 2.0
        is_monotonic = False

    candidates = [0, 1, 2, 3]
    n = 4000
    with compat.patched(key=KEY):
        mech = dc.ExponentialMechanism(Score())
        picks = [mech.apply(2.0, candidates) for _ in range(n)]
    assert rng_spy == []
    weights = np.exp(np.array(candidates) * 2.0 / (2 * 2.0))
    expected = weights / weights.sum() * n
    observed = np.bincount(picks, minlength=4)
    assert chisquare_pvalue(observed, expected, min_expected=5) > 1e-4


def _laplace_mech(eps: float, l0: int, linf: float):
    spec = pipeline_dp.budget_accounting.MechanismSpec(ap.MechanismType.LAPLACE)
    spec.set_eps_delta(eps, 0.0)
    return dc.create_additive_mechanism(spec, dc.Sensitivities(l0=l0, linf=linf))


def test_scalar_laplace_noise_has_the_stated_scale() -> None:
    with compat.patched(key=KEY):
        mech = _laplace_mech(0.5, 2, 1.5)  # L1 sensitivity 3, PyDP scale 6
        b = mech.noise_parameter
        noisy = mech.add_noise(np.full(10 ** 6, 0.25))  # vectorized path
        scalars = np.array([mech.add_noise(0.25) for _ in range(2000)])  # buffered path
    assert b == pytest.approx(6.0)
    # dpfast's scale for sensitivity 3 + 2 grid steps at eps = 3/6: within 2^-36 of b
    scale = dpfast.LaplaceMechanism(epsilon=0.5, sensitivity=3.0, max_changed=2).scale
    assert b <= scale <= b * (1 + 2.0 ** -36)
    noise = noisy - 0.25
    assert abs(np.mean(np.abs(noise)) / scale - 1) < 0.005  # E|X| = b, SE 0.1%
    assert abs(np.mean(noise)) < 0.03
    assert abs(np.mean(np.abs(scalars - 0.25)) / scale - 1) < 0.1


def test_gaussian_vector_noise_and_rdp_preserving_inflation() -> None:
    params = dc.AdditiveVectorNoiseParams(
        eps=1.0, delta=1e-6, max_norm=1.0, l0_sensitivity=1, linf_sensitivity=1.0,
        norm_kind=ap.NormKind.L2, noise_kind=pipeline_dp.NoiseKind.GAUSSIAN)
    x = np.linspace(-1, 1, 10 ** 6)
    with compat.patched(key=KEY):
        noisy = dc.add_noise_vector(x, params)
    sigma = dc.compute_sigma(1.0, 1e-6, 1.0)  # PipelineDP's (PyDP's) sigma
    assert abs(np.std(noisy - x) / sigma - 1) < 0.005  # SE 0.07%; inflation is ~1e-9
    assert x[0] == -1.0  # input untouched


def test_laplace_vector_noise_matches_unpatched_distribution() -> None:
    params = dc.AdditiveVectorNoiseParams(
        eps=2.0, delta=0.0, max_norm=3.0, l0_sensitivity=1, linf_sensitivity=3.0,
        norm_kind=ap.NormKind.L1, noise_kind=pipeline_dp.NoiseKind.LAPLACE)
    x = np.zeros(2 * 10 ** 5)
    with compat.patched(key=KEY):
        noisy = dc.add_noise_vector(x, params)
    # PipelineDP: Laplace scale = sensitivity / eps = 1.5; dpfast adds d grid steps (2^-39 b)
    assert abs(np.mean(np.abs(noisy)) / 1.5 - 1) < 0.01


@pytest.mark.parametrize("name", ["laplace", "gaussian"])
def test_thresholding_keep_probability(name) -> None:
    strategy_enum = {"laplace": pipeline_dp.PartitionSelectionStrategy.LAPLACE_THRESHOLDING,
                     "gaussian": pipeline_dp.PartitionSelectionStrategy.GAUSSIAN_THRESHOLDING}
    with compat.patched(key=KEY):
        s = ps.create_partition_selection_strategy(strategy_enum[name], 1.0, 1e-5, 2)
        n = int(s.threshold)  # keep probability a bit below 1/2
        trials = 20000
        kept = sum(s.should_keep(n) for _ in range(trials))
        values = [s.noised_value_if_should_keep(n) for _ in range(200)]
    p = s.probability_of_keep(n)  # PyDP's continuous keep probability
    assert 0.2 < p < 0.6
    assert abs(kept / trials - p) < 4.5 * math.sqrt(p * (1 - p) / trials)
    released = [v for v in values if v is not None]
    assert released and all(v >= s.threshold for v in released)


def test_truncated_geometric_selection_exact_bernoulli() -> None:
    with compat.patched(key=KEY):
        s = ps.create_partition_selection_strategy(
            pipeline_dp.PartitionSelectionStrategy.TRUNCATED_GEOMETRIC, 1.0, 1e-5, 1)
        n = 11
        p = s.probability_of_keep(n)
        trials = 20000
        kept = sum(s.should_keep(n) for _ in range(trials))
    assert 0.05 < p < 0.95
    assert abs(kept / trials - p) < 4.5 * math.sqrt(p * (1 - p) / trials)


def test_install_nests_and_uninstall_restores() -> None:
    originals = (dc.AdditiveMechanism.add_noise, dc.add_noise_vector, dc.create_additive_mechanism,
                 dc.ExponentialMechanism.apply, ps.create_partition_selection_strategy)
    compat.install()
    compat.install()
    compat.uninstall()
    assert compat.is_installed() and dc.add_noise_vector is not originals[1]
    compat.uninstall()
    compat.uninstall()  # extra uninstall is harmless
    assert not compat.is_installed()
    assert originals == (dc.AdditiveMechanism.add_noise, dc.add_noise_vector,
                         dc.create_additive_mechanism, dc.ExponentialMechanism.apply,
                         ps.create_partition_selection_strategy)


def test_strategies_created_while_installed_work_after_uninstall() -> None:
    """A selection strategy keeps the generator installed when it was created."""
    made = []
    with compat.patched(key=KEY):
        for strategy in (pipeline_dp.PartitionSelectionStrategy.TRUNCATED_GEOMETRIC,
                         pipeline_dp.PartitionSelectionStrategy.LAPLACE_THRESHOLDING,
                         pipeline_dp.PartitionSelectionStrategy.GAUSSIAN_THRESHOLDING):
            made.append(ps.create_partition_selection_strategy(strategy, 1.0, 1e-5, 1))
    assert not compat.is_installed()
    for s in made:
        assert sum(s.should_keep(50) for _ in range(20)) == 20  # 50 users: kept (p ~ 1)
        assert s.should_keep(0) in (True, False)


def test_scalar_noise_calibrated_once_and_blocks_shared() -> None:
    """Scalar noise: the calibration is cached by parameters and the pre-drawn blocks are
    shared by every mechanism object (PipelineDP builds one per partition)."""
    from dpfast.compat.pipeline_dp import _noise as mod

    with compat.patched(key=KEY):
        mod._gaussian_mech_params.cache_clear()
        values = [dc._add_random_noise(10.0, 1.0, 1e-6, 1, 1.0, ap.NoiseKind.GAUSSIAN)
                  for _ in range(50)]
        info = mod._gaussian_mech_params.cache_info()
    assert info.misses == 1 and info.hits == 49
    assert len(set(values)) == 50 and abs(np.mean(values) - 10.0) < 3.0


@pytest.mark.parametrize("strategy", ["LAPLACE_THRESHOLDING", "GAUSSIAN_THRESHOLDING",
                                      "TRUNCATED_GEOMETRIC"])
def test_pre_threshold_selection_is_replaced(strategy: str, rng_spy) -> None:
    """With pre_threshold p the replaced strategy decides on n - p + 1 units (n < p: dropped),
    PyDP's own definition: keep frequencies match PyDP's probability_of_keep; it keeps working
    after uninstall()."""
    enum = getattr(pipeline_dp.PartitionSelectionStrategy, strategy)
    with compat.patched(key=KEY):
        s = ps.create_partition_selection_strategy(enum, 1.0, 1e-5, 2, pre_threshold=6)
        assert s.pre_threshold == 6 and type(s).__module__.startswith("dpfast.")
        assert not any(s.should_keep(5) for _ in range(200))
        n = next(k for k in range(6, 200) if s.probability_of_keep(k) > 0.3)
        p = s.probability_of_keep(n)
        trials = 20000
        kept = sum(s.should_keep(n) for _ in range(trials))
    assert abs(kept / trials - p) < 4.5 * math.sqrt(p * (1 - p) / trials)
    assert sum(s.should_keep(n + 60) for _ in range(20)) == 20
    assert rng_spy == []  # no numpy / Python random draws


# ----------------------------------------------------------------------------- PERCENTILE
def _quantile_combiner(percentiles, eps, k=1, c=1, lo=0.0, hi=8.0, n_candidates=None,
                       noise_kind=None):
    from pipeline_dp import budget_accounting as ba
    from pipeline_dp import combiners as cb

    from dpfast.compat.pipeline_dp import _quantile

    noise_kind = noise_kind or ap.NoiseKind.LAPLACE
    spec = ba.MechanismSpec(ap.MechanismType.LAPLACE if noise_kind == ap.NoiseKind.LAPLACE
                            else ap.MechanismType.GAUSSIAN, _eps=eps, _delta=0.0)
    params = pipeline_dp.AggregateParams(
        noise_kind=noise_kind, metrics=[pipeline_dp.Metrics.PERCENTILE(50)],
        max_partitions_contributed=k, max_contributions_per_partition=c,
        min_value=lo, max_value=hi)
    cls = _quantile.QuantileCombiner
    if n_candidates is not None:
        cls = type("SmallGrid", (cls,), {"n_candidates": n_candidates})
    return cls(cb.CombinerParams(spec, params), list(percentiles))


@pytest.mark.parametrize("forced", [False, True])
def test_percentile_exact_distribution(forced: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The released cell follows exp(eps_q u / 2c) exactly (9-point grid: cells [j, j+1)),
    u = -max(A_p - t, t + 1 - A_{p+1}, 0), t = floor(q (n - 1)); eps_q = eps / (k L).
    ``forced``: every draw through the exact (interval-arithmetic) continuation."""
    from dpfast.compat import _measure

    monkeypatch.setattr(_measure, "FORCE_EXACT", forced)
    values = [0.5, 1.5, 1.5, 2.5, 3.5, 6.5, 8.0]  # n = 7, q = 0.5: t = 3, x_(3) = 2.5
    # L near-identical percentiles: L samples, eps_q = eps / (k L) = 0.8
    L, k, c = (1500 if forced else 6000), 2, 2
    percentiles = [50 + i * 1e-9 for i in range(L)]
    with compat.patched(key=KEY):
        comb = _quantile_combiner(percentiles, eps=0.8 * k * L, k=k, c=c, n_candidates=9)
        out = comb.compute_metrics(comb.create_accumulator(values))
    assert len(out) == L
    cells = np.floor(np.array(list(out.values()))).astype(int)  # midpoints j + 0.5
    counts = np.bincount(cells, minlength=8)
    below = [sum(v < j for v in values) for j in range(8)] + [len(values)]
    t = 3
    u = [-max(below[j] - t, t + 1 - below[j + 1], 0) for j in range(8)]
    assert u.index(0) == 2  # the cell [2, 3) holds x_(3)
    probs = [math.exp(0.8 * uj / (2 * c)) for uj in u]
    assert chisquare_pvalue(counts, probs) > 1e-4


def test_percentile_accumulators_merge_and_pickle() -> None:
    """List and sparse accumulators merge to the same counts as one accumulator of all the
    values; combiner and accumulators pickle (Beam) without the generator."""
    import pickle

    from dpfast.compat.pipeline_dp import _quantile

    rng = np.random.default_rng(5)
    values = list(rng.uniform(-3, 12, 9000))  # beyond the list form's limit, clamped to [0, 8]
    with compat.patched(key=KEY):
        comb = _quantile_combiner([10, 50, 90], eps=1.0, hi=8.0)
        whole = comb.create_accumulator(values)
        parts = [comb.create_accumulator(values[i:i + 700]) for i in range(0, 9000, 700)]
        merged = parts[0]
        for p in parts[1:]:
            merged = comb.merge_accumulators(merged, pickle.loads(pickle.dumps(p)))
        g = comb._grid()
        s1, c1 = whole.sparse(g)
        s2, c2 = merged.sparse(g)
        assert np.array_equal(s1, s2) and np.array_equal(c1, c2) and c1.sum() == 9000
        again = pickle.loads(pickle.dumps(comb))
    assert type(again) is _quantile.QuantileCombiner and again._dpfast_gen is None
    out = again.compute_metrics(merged)  # after uninstall: its own OS-keyed generator
    assert list(out) == ["percentile_10", "percentile_50", "percentile_90"]
    assert 0 <= out["percentile_10"] < out["percentile_90"] <= 8


def test_percentile_aggregate_uses_dpfast_and_is_accurate(rng_spy) -> None:
    """DPEngine.aggregate with PERCENTILE under install(): no PyDP quantile tree, no numpy or
    Python randomness, replayable with a key, and close to the true percentiles."""
    from pipeline_dp import combiners as cb

    rows = [(uid, f"p{uid % 2}", float(uid % 100)) for uid in range(4000)]

    def run():
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=2.0, total_delta=1e-6)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=[pipeline_dp.Metrics.PERCENTILE(25), pipeline_dp.Metrics.PERCENTILE(75)],
            max_partitions_contributed=1, max_contributions_per_partition=1,
            min_value=0.0, max_value=100.0)
        ex = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                        partition_extractor=lambda r: r[1],
                                        value_extractor=lambda r: r[2])
        out = engine.aggregate(rows, params, ex, public_partitions=["p0", "p1"])
        accountant.compute_budgets()
        return dict(out)

    original = cb.QuantileCombiner
    with compat.patched(key=KEY):
        assert cb.QuantileCombiner is not original
        first = run()
    assert cb.QuantileCombiner is original
    with compat.patched(key=KEY):
        second = run()
    assert first == second and rng_spy == []
    for metrics in first.values():  # 2000 values per partition, 0..98 step 2 (or 1..99)
        assert abs(metrics.percentile_25 - 25) < 3 and abs(metrics.percentile_75 - 75) < 3


def test_percentile_pld_epsilon_is_dominated_by_the_laplace_profile() -> None:
    """pld_epsilon(σ): randomized response at ε' (which dominates every ε'-DP mechanism) has
    hockey-stick divergences at most those of Laplace(b = σ/√2) of sensitivity 1, and the
    bound is tight at x = 0."""
    import mpmath

    from dpfast.compat.pipeline_dp import _quantile

    for sigma in (0.05, 0.7, 1.0, 3.0, 40.0):
        with mpmath.workdps(60):
            e1 = mpmath.mpf(_quantile.pld_epsilon(sigma))
            eps = mpmath.sqrt(2) / mpmath.mpf(sigma)
            for x in mpmath.linspace(0, e1, 400):
                rr = (mpmath.exp(e1) - mpmath.exp(x)) / (1 + mpmath.exp(e1))
                lap = 1 - mpmath.exp((x - eps) / 2)
                assert rr <= lap
            gap = (1 - mpmath.exp(-eps / 2)) - mpmath.tanh(e1 / 2)
            assert 0 <= gap < 1e-12


def test_percentile_pld_gaussian_epsilon_is_dominated() -> None:
    """pld_epsilon_gaussian(σ): randomized response at ε' has hockey-stick divergences at
    most the sensitivity-1 Gaussian's (checked in mpmath on a grid other than the
    implementation's), within 1% of the x = 0 bound; a PLD-accounted Gaussian PERCENTILE
    uses it."""
    import mpmath
    from pipeline_dp import budget_accounting as ba

    from dpfast.compat.pipeline_dp import _quantile

    for sigma in (0.3, 1.0, 2.5, 10.0):
        e1 = _quantile.pld_epsilon_gaussian(sigma)
        with mpmath.workdps(40):
            mu, e = 1 / mpmath.mpf(sigma), mpmath.mpf(e1)
            for x in mpmath.linspace(0, e, 997):
                rr = (mpmath.exp(e) - mpmath.exp(x)) / (1 + mpmath.exp(e))
                dg = mpmath.ncdf(mu / 2 - x / mu) - mpmath.exp(x) * mpmath.ncdf(-mu / 2 - x / mu)
                assert rr <= dg
            bound = 2 * mpmath.atanh(2 * mpmath.ncdf(mu / 2) - 1)
        assert 0.99 * float(bound) <= e1 <= float(bound)
    comb = _quantile_combiner([50], eps=1.0, noise_kind=ap.NoiseKind.GAUSSIAN)
    comb._params.mechanism_spec = ba.MechanismSpec(ap.MechanismType.GAUSSIAN,
                                                   _noise_standard_deviation=2.0)
    with compat.patched(key=KEY):
        out = comb.compute_metrics(comb.create_accumulator([1.0, 2.0]))
    assert 0 <= out["percentile_50"] <= 8


# ----------------------------------------------------------------------------- sampling
def _sampling_rows():
    # 60 privacy units, each in 6 partitions with 3 rows each: both samplings are needed
    return [(u, f"p{(u + j) % 8}", 1.0) for u in range(60) for j in range(6) for _ in range(3)]


def _sampled_aggregate():
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE, metrics=[pipeline_dp.Metrics.COUNT],
        max_partitions_contributed=2, max_contributions_per_partition=1)
    ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                     partition_extractor=lambda r: r[1],
                                     value_extractor=lambda r: r[2])
    res = engine.aggregate(_sampling_rows(), params, ext,
                           public_partitions=[f"p{i}" for i in range(8)])
    accountant.compute_budgets()
    return dict(res)


def test_contribution_sampling_drawn_by_dpfast(rng_spy) -> None:
    """Contribution bounding's sampling: numpy's global RNG plain, dpfast's keyed ChaCha20
    installed (replayable with the key), and the bounds hold (60 units x 2 partitions)."""
    _sampled_aggregate()
    assert "numpy.random.choice" in rng_spy  # plain PipelineDP: np.random.choice
    rng_spy.clear()
    with compat.patched(key=KEY):
        first = _sampled_aggregate()
    assert rng_spy == []
    with compat.patched(key=KEY):
        second = _sampled_aggregate()
    assert first == second
    # Laplace scale 2 per count (l0 = 2, eps = 1): the true counts total 120
    assert abs(sum(m.count for m in first.values()) - 120) < 60


def test_sample_indices_exact_uniform_ordered_subsets() -> None:
    """sample_indices(k, n): every ordered n-subset of range(k) with probability
    (k - n)! / k! -- here the 12 ordered pairs of range(4), 240,000 draws."""
    from dpfast.compat._random_state import Words
    from dpfast.compat.pipeline_dp._sampling import sample_indices

    words = Words(dpfast.default_rng(KEY))
    counts: dict[tuple[int, ...], int] = {}
    for _ in range(240_000):
        t = tuple(sample_indices(4, 2, words))
        counts[t] = counts.get(t, 0) + 1
    assert set(counts) == {(a, b) for a in range(4) for b in range(4) if a != b}
    assert chisquare_pvalue(list(counts.values()), [1 / 12] * 12) > 1e-4
    assert sorted(sample_indices(5, 5, words)) == list(range(5))
    assert sample_indices(3, 0, words) == []


def test_sampling_replacements_keep_pipeline_dps_contract() -> None:
    """Short lists come back unchanged (the same object); long ones as a new list of
    distinct elements of the requested size; the installation's generator is kept by a
    lazy collection evaluated after uninstall()."""
    from pipeline_dp import pipeline_backend as pb
    from pipeline_dp import sampling_utils as su

    a = [1, 2, 3]
    with compat.patched(key=KEY):
        assert su.choose_from_list_without_replacement(a, 3) is a
        picked = su.choose_from_list_without_replacement(list(range(10)), 4)
        col = pb.LocalBackend().sample_fixed_per_key([("k", i) for i in range(9)] + [("j", 0)],
                                                      2)
    assert len(set(picked)) == 4 and set(picked) <= set(range(10))
    assert not compat.is_installed()
    out = dict(col)  # evaluated now, after uninstall
    assert len(out["k"]) == 2 and len(set(out["k"])) == 2 and out["j"] == [0]


def test_numpy_scalar_accumulators_take_the_scalar_path() -> None:
    """SUM's accumulators are numpy.float64: the same keyed noise as a float value (the
    memoised scalar path), not a per-call recalibration."""
    from dpfast.compat.pipeline_dp import _noise

    with compat.patched(key=KEY):
        mech = _laplace_mech(1.0, 3, 2.0)
        as_float = [mech.add_noise(3.25) for _ in range(5)]
    with compat.patched(key=KEY):
        mech = _laplace_mech(1.0, 3, 2.0)
        _noise._laplace_params.cache_clear()
        as_numpy = [mech.add_noise(np.float64(3.25)) for _ in range(5)]
        assert _noise._laplace_params.cache_info().misses == 1  # one plan for the object
    assert as_float == as_numpy and all(type(v) is float for v in as_numpy)
    assert len(set(as_float)) == 5
