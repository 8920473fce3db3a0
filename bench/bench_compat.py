"""dpfast under diffprivlib and PipelineDP: patched vs unpatched, same run.

Targets (issue 15):

* ``diffprivlib.tools.histogram`` of 10^6 values into 10^5 bins, with
  ``dpfast.compat.diffprivlib`` installed, at least 50x faster than diffprivlib's own
  per-bin loop;
* PipelineDP's vector-noise addition (``dp_computations.add_noise_vector``) on a
  10^6-element vector, with ``dpfast.compat.pipeline_dp`` installed, at least 100x faster.

Ratio = unpatched time / patched time.  The unpatched paths take seconds, so they are
timed fewer times; the patched ones over several repeats; the two alternate so that
background load hits both alike, and each side's figure is the median of the rounds.

Issue 25 (whole tools, models and pipelines under ``install()``, where dpfast's part is a
fraction of the run and the margin to measure is a few percent): interleaved plain /
installed pairs in process CPU time, ratio = median of the per-pair ratios, with the
lowest and highest pair and the wall-clock ratio beside it (:func:`_timing.paired`).
"""

from __future__ import annotations

from typing import Any

import _timing as _t
import numpy as np
import pytest

diffprivlib = pytest.importorskip("diffprivlib")
pipeline_dp = pytest.importorskip("pipeline_dp")
from pipeline_dp import aggregate_params as ap  # noqa: E402
from pipeline_dp import dp_computations as dc  # noqa: E402

import dpfast  # noqa: E402
from dpfast.compat import diffprivlib as dpl  # noqa: E402
from dpfast.compat import pipeline_dp as dpf_pdp  # noqa: E402

KEY = bytes(range(32))


def _ratio(patched, unpatched, rounds: int, fast_repeat: int, slow_repeat: int):
    """Median seconds per call of each side, over interleaved rounds (medians, not
    best-of: the fastest run is an optimistic outlier on a shared host)."""
    p = _t.pairs([lambda: [patched() for _ in range(fast_repeat)],
                  lambda: [unpatched() for _ in range(slow_repeat)]], repeat=max(5, rounds))
    return p.median(0) / fast_repeat, p.median(1) / slow_repeat


def test_diffprivlib_histogram_patched_vs_unpatched(benchmark, report) -> None:
    data = np.random.default_rng(0).random(10 ** 6)
    acc = diffprivlib.BudgetAccountant()  # unlimited budget, not the global default

    def run():
        return diffprivlib.tools.histogram(data, epsilon=1.0, bins=10 ** 5, range=(0.0, 1.0),
                                           accountant=acc)

    def patched():
        with dpl.patched():
            return run()

    hist, _ = patched()  # load kernels
    assert hist.shape == (10 ** 5,) and np.all(hist >= 0)
    t_fast, t_slow = _ratio(patched, run, rounds=2, fast_repeat=5, slow_repeat=1)
    benchmark.pedantic(patched, rounds=3, iterations=1)
    ratio = t_slow / t_fast
    benchmark.extra_info.update({"patched_ms": t_fast * 1e3, "unpatched_ms": t_slow * 1e3,
                                 "ratio": ratio})
    report("diffprivlib.tools.histogram 1e6 values / 1e5 bins",
           f"patched {t_fast * 1e3:.1f} ms vs diffprivlib {t_slow * 1e3:.0f} ms: "
           f"{ratio:.0f}x (target >= 50x)")
    print(f"\ndiffprivlib histogram: {ratio:.0f}x")


def test_pipeline_dp_vector_noise_patched_vs_unpatched(benchmark, report) -> None:
    vec = np.random.default_rng(1).random(10 ** 6)
    params = dc.AdditiveVectorNoiseParams(
        eps=1.0, delta=1e-6, max_norm=1.0, l0_sensitivity=1, linf_sensitivity=1.0,
        norm_kind=ap.NormKind.Linf, noise_kind=ap.NoiseKind.LAPLACE)

    def run():
        return dc.add_noise_vector(vec, params)

    def patched():
        with dpf_pdp.patched():
            return run()

    out = patched()
    assert out.shape == vec.shape
    t_fast, t_slow = _ratio(patched, run, rounds=1, fast_repeat=5, slow_repeat=1)
    benchmark.pedantic(patched, rounds=3, iterations=1)
    ratio = t_slow / t_fast
    benchmark.extra_info.update({"patched_ms": t_fast * 1e3, "unpatched_ms": t_slow * 1e3,
                                 "ratio": ratio})
    report("PipelineDP add_noise_vector 1e6 (Laplace)",
           f"patched {t_fast * 1e3:.1f} ms vs PipelineDP {t_slow * 1e3:.0f} ms: "
           f"{ratio:.0f}x (target >= 100x)")
    print(f"\nPipelineDP vector noise: {ratio:.0f}x")


# ----------------------------------------------------------------------------- issue 25
def _diffprivlib_cases() -> dict:
    from diffprivlib import mechanisms as dm
    from diffprivlib import models, tools

    acc = diffprivlib.BudgetAccountant()  # unlimited budget, not the global default
    rng = np.random.default_rng(2)
    x = rng.random(1000)
    big = rng.random(10 ** 6)
    X = rng.random((500, 4))
    y = (X[:, 0] > 0.5).astype(int)
    return {
        "tools.mean 1e3": lambda: tools.mean(x, epsilon=1.0, bounds=(0, 1), accountant=acc),
        "tools.var 1e3 eps=0.01": lambda: tools.var(x, epsilon=0.01, bounds=(0, 1),
                                                    accountant=acc),
        "tools.std 1e3": lambda: tools.std(x, epsilon=1.0, bounds=(0, 1), accountant=acc),
        "tools.mean 1e6": lambda: tools.mean(big, epsilon=1.0, bounds=(0, 1), accountant=acc),
        "tools.histogram 1e3/100 bins": lambda: tools.histogram(
            x, epsilon=1.0, bins=100, range=(0, 1), accountant=acc),
        "GaussianNB.fit 500x4": lambda: models.GaussianNB(
            epsilon=1.0, bounds=(0, 1), accountant=acc).fit(X, y),
        "LogisticRegression.fit 500x4": lambda: models.LogisticRegression(
            epsilon=1.0, data_norm=2.0, accountant=acc).fit(X, y),
        "PCA.fit 500x4": lambda: models.PCA(2, epsilon=1.0, data_norm=2.0, bounds=(0, 1),
                                            accountant=acc).fit(X),
        "DecisionTreeClassifier.fit 500x4": lambda: models.DecisionTreeClassifier(
            epsilon=1.0, bounds=(0, 1), classes=[0, 1], accountant=acc).fit(X, y),
        "RandomForestClassifier.fit 500x4": lambda: models.RandomForestClassifier(
            n_estimators=10, epsilon=1.0, bounds=(0, 1), classes=[0, 1],
            accountant=acc).fit(X, y),
        # one value from a new mechanism object (diffprivlib's name: the replacement when
        # installed), the way diffprivlib's tools use them
        "mechanisms.Gaussian new + 1 value": lambda: dm.Gaussian(
            epsilon=0.5, delta=1e-5, sensitivity=1.0).randomise(0.5),
        "mechanisms.Staircase new + 1 value": lambda: dm.Staircase(
            epsilon=1.0, sensitivity=1.0).randomise(0.5),
        "mechanisms.LaplaceBoundedNoise new + 1 value": lambda: dm.LaplaceBoundedNoise(
            epsilon=1.0, delta=0.1, sensitivity=1.0).randomise(0.5),
        "mechanisms.LaplaceBoundedDomain new + 1 value": lambda: dm.LaplaceBoundedDomain(
            epsilon=1.0, sensitivity=1.0, lower=0.0, upper=4.0).randomise(0.5),
        "mechanisms.PermuteAndFlip new + 1 draw": lambda: dm.PermuteAndFlip(
            epsilon=1.0, sensitivity=1, monotonic=True, utility=[40, 12]).randomise(),
    }


@pytest.mark.parametrize("name", list(_diffprivlib_cases()))
def test_diffprivlib_installed_vs_plain(benchmark, report, name: str) -> None:
    """diffprivlib's tools and models with ``install()`` vs plain diffprivlib, same run:
    interleaved pairs timed in process CPU time (:func:`_timing.paired`); ratio = median over
    pairs of plain time / installed time (> 1: faster).  Model fits whose time depends on the
    noise drawn (L-BFGS iterations, Bingham rejections) get more pairs."""
    import warnings

    fn = _diffprivlib_cases()[name]
    budget = 12.0 if name.startswith(("LogisticRegression", "PCA")) else 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # diffprivlib's PrivacyLeakWarning etc.
        fn()
        with dpl.patched():
            fn()  # load kernels, fill the calibration caches
        m = _t.paired(fn, fn, dpl.patched, budget_s=budget)
        with dpl.patched():
            benchmark.pedantic(fn, rounds=3, iterations=1)
    benchmark.extra_info.update(_t.extra_info(m))
    report(f"diffprivlib {name}", _t.describe(m))


def _pipeline_dp_aggregate(noise: Any, public: bool, rows: list) -> list:
    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=noise, metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM],
        max_partitions_contributed=3, max_contributions_per_partition=2, min_value=0.0,
        max_value=1.0)
    ext = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                     partition_extractor=lambda r: r[1],
                                     value_extractor=lambda r: r[2])
    res = engine.aggregate(rows, params, ext,
                           public_partitions=list(range(200)) if public else None)
    acc.compute_budgets()
    return list(res)


@pytest.mark.parametrize("noise", ["LAPLACE", "GAUSSIAN"])
@pytest.mark.parametrize("public", [True, False], ids=["public", "private"])
def test_pipeline_dp_aggregate_installed_vs_plain(benchmark, report, noise: str,
                                                  public: bool) -> None:
    """``DPEngine.aggregate`` (COUNT and SUM over 200 partitions, LocalBackend) with
    ``dpfast.compat.pipeline_dp`` installed vs plain PipelineDP, same run: interleaved pairs
    in process CPU time (:func:`_timing.paired`); ratio = median of plain / installed."""
    rng = np.random.default_rng(3)
    rows = [(int(u), int(p), float(v)) for u, p, v in zip(
        rng.integers(0, 1000, 5000), rng.integers(0, 200, 5000), rng.random(5000))]
    kind = getattr(pipeline_dp.NoiseKind, noise)

    def fn():
        return _pipeline_dp_aggregate(kind, public, rows)

    fn()
    with dpf_pdp.patched():
        fn()
    m = _t.paired(fn, fn, dpf_pdp.patched, budget_s=8.0)
    with dpf_pdp.patched():
        benchmark.pedantic(fn, rounds=2, iterations=1)
    benchmark.extra_info.update(_t.extra_info(m))
    name = f"PipelineDP aggregate {noise} {'public' if public else 'private'}"
    report(name, _t.describe(m))


@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
@pytest.mark.parametrize("value", [3.25, 3], ids=["float", "int"])
def test_pipeline_dp_scalar_noise_installed_vs_plain(benchmark, report, kind: str,
                                                     value: Any) -> None:
    """One ``add_noise`` of a scalar on an existing PipelineDP mechanism (the per-partition
    path of ``DPEngine.aggregate``) with ``dpfast.compat.pipeline_dp`` installed vs PyDP's
    own noise, same run, medians of repeats of 2,000 calls; ratio = plain time /
    installed time."""

    from pipeline_dp import budget_accounting as ba

    def make():  # as DPEngine.aggregate makes it: a spec and (l0, linf) sensitivities
        mtype = ba.MechanismType.LAPLACE if kind == "laplace" else ba.MechanismType.GAUSSIAN
        spec = ba.MechanismSpec(mtype, _eps=1.0, _delta=0.0 if kind == "laplace" else 1e-6)
        return dc.create_additive_mechanism(spec, dc.Sensitivities(l0=3, linf=2.0))

    plain = make()
    with dpf_pdp.patched():
        inst = make()

        def fast():
            for _ in range(2000):
                inst.add_noise(value)

        fast()
        t_inst = _t.median_time(fast, 7)
    t_plain = _t.median_time(lambda: [plain.add_noise(value) for _ in range(2000)], 7)
    with dpf_pdp.patched():
        benchmark.pedantic(fast, rounds=3, iterations=1)
    ratio = t_plain / t_inst
    benchmark.extra_info.update({"installed_us": t_inst / 2000 * 1e6,
                                 "plain_us": t_plain / 2000 * 1e6, "ratio": ratio})
    report(f"PipelineDP add_noise {kind} {type(value).__name__}",
           f"installed {t_inst / 2000 * 1e6:.2f} us vs plain {t_plain / 2000 * 1e6:.2f} us: "
           f"{ratio:.2f}x")


@pytest.mark.parametrize(("n_rows", "n_parts"), [(20_000, 1000), (100_000, 10)],
                         ids=["small-partitions", "large-partitions"])
def test_pipeline_dp_percentile_installed_vs_plain(benchmark, report, n_rows: int,
                                                   n_parts: int) -> None:
    """``DPEngine.aggregate`` with PERCENTILE(25, 50, 75) (LocalBackend, public partitions):
    dpfast's exact quantile installed vs PyDP's quantile tree, same run: interleaved pairs in
    process CPU time; ratio = median of plain / installed."""
    rows = [(u, u % n_parts, float(u % 1000)) for u in range(n_rows)]

    def fn():
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=[pipeline_dp.Metrics.PERCENTILE(p) for p in (25, 50, 75)],
            max_partitions_contributed=1, max_contributions_per_partition=1,
            min_value=0.0, max_value=1000.0)
        ex = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                        partition_extractor=lambda r: r[1],
                                        value_extractor=lambda r: r[2])
        res = engine.aggregate(rows, params, ex, public_partitions=list(range(n_parts)))
        accountant.compute_budgets()
        return list(res)

    fn()
    with dpf_pdp.patched():
        fn()
    # one call per side and pair (seconds each); no untimed warm-up call (nothing is cached
    # per installation: the combiner is new in every call)
    m = _t.paired(fn, fn, dpf_pdp.patched, repeat=1, warm=False, budget_s=0.0,
                  min_pairs=6 if n_parts == 10 else 10)
    with dpf_pdp.patched():
        benchmark.pedantic(fn, rounds=1, iterations=1)
    benchmark.extra_info.update(_t.extra_info(m))
    report(f"PipelineDP PERCENTILE {n_rows} rows / {n_parts} partitions", _t.describe(m))


# ----------------------------------------------------------------------------- issue 25
def _small_call_cases() -> dict:
    """(dpfast call, diffprivlib's own equivalent: a new mechanism and one draw)."""
    from diffprivlib import mechanisms as dm

    gen = dpfast.default_rng(KEY)
    u2, u10 = np.array([3.0, 5.0]), np.linspace(0.0, 9.0, 10)
    x1, x10 = np.array([0.5]), np.linspace(0.0, 1.0, 10)
    i1 = np.array([3])
    return {
        "permute_and_flip 2 candidates": (
            lambda: dpfast.permute_and_flip(u2, 1.0, rng=gen),
            lambda: dm.PermuteAndFlip(epsilon=1.0, sensitivity=1.0, utility=list(u2),
                                      random_state=None).randomise()),
        "permute_and_flip 10 candidates": (
            lambda: dpfast.permute_and_flip(u10, 1.0, rng=gen),
            lambda: dm.PermuteAndFlip(epsilon=1.0, sensitivity=1.0, utility=list(u10),
                                      random_state=None).randomise()),
        "laplace 1 value": (
            lambda: dpfast.laplace(x1, 2.0, rng=gen),
            lambda: dm.Laplace(epsilon=0.5, sensitivity=1.0).randomise(0.5)),
        "laplace 10 values": (
            lambda: dpfast.laplace(x10, 2.0, rng=gen),
            lambda: [dm.Laplace(epsilon=0.5, sensitivity=1.0).randomise(v) for v in x10]),
        "discrete_laplace 1 value": (
            lambda: dpfast.discrete_laplace(i1, 2.0, rng=gen),
            lambda: dm.Geometric(epsilon=0.5, sensitivity=1).randomise(3)),
    }


@pytest.mark.parametrize("name", list(_small_call_cases()))
def test_small_call_vs_diffprivlib(benchmark, report, name: str) -> None:
    """Per-call cost of a small dpfast draw (fixed overhead) against diffprivlib's own
    mechanism for the same small job (object plus draw), same run, medians of interleaved
    repeats of 200 calls; ratio = diffprivlib time / dpfast time."""
    import warnings

    fast, slow = _small_call_cases()[name]

    def many(fn):
        return lambda: [fn() for _ in range(200)]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast(), slow()
        _p = _t.pairs([many(fast), many(slow)], repeat=7)
        t_fast, t_slow = _p.median(0), _p.median(1)
        benchmark.pedantic(fast, rounds=50, iterations=1)
    t_fast, t_slow = t_fast / 200, t_slow / 200
    ratio = t_slow / t_fast
    benchmark.extra_info.update({"dpfast_us": t_fast * 1e6, "diffprivlib_us": t_slow * 1e6,
                                 "ratio": ratio})
    report(f"small call {name}", f"dpfast {t_fast * 1e6:.1f} us vs diffprivlib "
           f"{t_slow * 1e6:.1f} us: {ratio:.2f}x")
