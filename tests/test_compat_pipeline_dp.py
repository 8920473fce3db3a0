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
