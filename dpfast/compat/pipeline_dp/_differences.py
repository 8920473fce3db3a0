"""The intentional differences between dpfast's PipelineDP backend and PipelineDP 0.3.1.

One table, keyed by the node id of the PipelineDP test (repository snapshot vendored in
tests/vendor/pipelinedp_suite/, folders ``tests/`` and ``analysis/``) that each difference
makes fail when that suite runs with :func:`dpfast.compat.pipeline_dp.install` active for
the whole session, with the reason; and the tests that are not applicable (not run), each
with its reason.  The package docstring shows the same tables;
tests/test_compat_pipeline_dp_suite.py checks that every failure of the suite is listed in
:data:`DIFFERENCES` and that each folder passes at least 98% of the tests it runs.
"""

from __future__ import annotations

__all__ = ["DIFFERENCES", "NOT_APPLICABLE"]

_OVERFLOW = (
    "correct calibration: PipelineDP's Gaussian sigma comes from PyDP, whose calibration "
    "overflows e^eps for every eps > 709.78 and returns sigma = 2.2e-308 -- no noise, not the "
    "stated (eps, delta)-DP; dpfast draws grid Gaussian noise with at least the analytic "
    "Gaussian's sigma for that (eps, delta) (Balle & Wang 2018)")

DIFFERENCES: dict[str, str] = {
    "tests/combiners_test.py::CountCombinerTest::test_compute_metrics_no_noise": (
        _OVERFLOW + "; the test's 'no noise' (eps, delta) = (1e5, 1 - 1e-5): sigma = "
        "0.0022 * sensitivity, the test asserts abs(noise) < 1e-5"),
    "tests/combiners_test.py::PrivacyIdCountCombinerTest::test_compute_metrics_no_noise": (
        _OVERFLOW + "; (1e5, 1 - 1e-5), the test asserts abs(noise) < 1e-5"),
    "tests/combiners_test.py::SumCombinerTest::"
    "test_compute_metrics_no_noise_per_contribution_bound": (
        _OVERFLOW + "; (1e5, 1 - 1e-5), the test asserts abs(noise) < 1e-5"),
    "tests/combiners_test.py::SumCombinerTest::test_compute_metrics_no_noise_per_partition_bound": (
        _OVERFLOW + "; (1e5, 1 - 1e-5), the test asserts abs(noise) < 1e-5"),
    "tests/combiners_test.py::MeanCombinerTest::test_compute_metrics_no_noise": (
        _OVERFLOW + "; (1e5, 1 - 1e-5), the test asserts abs(noise) < 1e-5"),
    "tests/combiners_test.py::VarianceCombinerTest::test_compute_metrics_no_noise": (
        _OVERFLOW + "; (1e5, 1 - 1e-5), the test asserts abs(noise) < 1e-5"),
    "tests/combiners_test.py::CompoundCombinerTest::test_compute_metrics_no_noise": (
        _OVERFLOW + "; (1e5, 1 - 1e-5), the test asserts abs(noise) < 1e-5"),
    "tests/combiners_test.py::VectorSumCombinerTest::test_compute_metrics_no_noise": (
        _OVERFLOW + "; (1e5, 1 - 1e-5) on a vector, the test asserts abs(noise) < 1e-5"),
    "tests/dp_engine_test.py::DpEngineTest::"
    "test_aggregate_private_partition_selection_keep_everything": (
        _OVERFLOW + "; total (1e5, 1e-10): the count's sigma is 0.0032, the test asserts "
        "abs(noise) < 1e-3"),
    "tests/dp_engine_test.py::DpEngineTest::"
    "test_aggregate_public_partitions_add_empty_public_partitions": (
        _OVERFLOW + "; total (1e5, 1 - 1e-10) over three metrics: sigma = 0.0039, the test "
        "asserts abs(noise) < 5e-8"),
    "tests/dp_engine_test.py::DpEngineTest::"
    "test_contribution_bounds_already_enforced_sensible_result": (
        _OVERFLOW + "; total (1000, 0.999): the test asserts abs(noise) < 5e-8"),
}

_MOCKS_PYDP = ("not applicable: mocks PyDP's C++ strategy method {}.noised_value_if_should_keep "
               "and asserts it is called; under install() the decision is dpfast's")
_PLAIN = ("not applicable: fails with plain PipelineDP 0.3.1 too -- the vendored snapshot is "
          "the last repository commit before the 0.3.1 wheel and asserts {}")
_SPARK = ("not applicable: needs pyspark and a JVM (Spark is not in the test extra; a JVM is "
          "not a pip dependency)")

#: tests (and whole test files) not run, each with the reason
NOT_APPLICABLE: dict[str, str] = {
    "tests/combiners_test.py::PostAggregationThresholdingCombinerTest::"
    "test_noised_value_if_should_keep": _MOCKS_PYDP.format("GaussianPartitionSelectionStrategy"),
    "tests/dp_computations_test.py::ThresholdingMechanismTests::"
    "test_noised_value_if_should_keep": _MOCKS_PYDP.format("LaplacePartitionSelectionStrategy"),
    "tests/combiners_test.py::QuantileCombinerTest::test_create_accumulator": _PLAIN.format(
        "QuantileCombiner._create_empty_quantile_tree, which the wheel removed"),
    "tests/dp_engine_test.py::DpEngineTest::test_pld_not_supported_metrics": _PLAIN.format(
        "the error message 'Metrics {VARIANCE} do not support PLD budget accounting', which "
        "the wheel changed"),
    "tests/dataframes_test.py": _SPARK,
    "tests/private_spark_test.py": _SPARK,
    "tests/spark_rdd_backend_test.py": _SPARK,
}
