# Copyright 2022 OpenMined.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
from absl.testing import parameterized

from pipeline_dp import aggregate_params as ap
from pipeline_dp import dp_engine as dpeng
from pipeline_dp import budget_accounting, aggregate_params
from pipeline_dp import pipeline_backend
"""Aggregate Params Test"""

Metric = aggregate_params.Metric


class MetricsTest(parameterized.TestCase):

    def test_eq(self):
        self.assertEqual(Metric("name"), Metric("name"))
        self.assertEqual(Metric("name", 1), Metric("name", 1))
        self.assertNotEqual(Metric("name"), Metric("other_name"))
        self.assertNotEqual(Metric("name", 1), Metric("name", 2))
        self.assertNotEqual(Metric("name"), "name")  # different type

    def test_str(self):
        self.assertEqual(str(Metric("name")), "name")
        self.assertEqual(str(Metric("name", 10)), "name(10)")

    def test_hash(self):
        self.assertEqual(hash(Metric("name")), hash("name"))
        self.assertEqual(hash(Metric("name", 10)), hash("name(10)"))


class AggregateParamsTest(parameterized.TestCase):

    @parameterized.named_parameters(
        dict(testcase_name='negative max_partitions_contributed',
             error_msg='max_partitions_contributed has to be positive integer',
             min_value=None,
             max_value=None,
             max_partitions_contributed=-1,
             max_contributions_per_partition=1,
             max_contributions=None,
             metrics=[ap.Metrics.PRIVACY_ID_COUNT]),
        dict(testcase_name='negative max_contributions_per_partition',
             error_msg=
             'max_contributions_per_partition has to be positive integer',
             min_value=None,
             max_value=None,
             max_partitions_contributed=1,
             max_contributions_per_partition=-1,
             max_contributions=None,
             metrics=[ap.Metrics.PRIVACY_ID_COUNT]),
        dict(testcase_name='float max_partitions_contributed',
             error_msg='max_partitions_contributed has to be positive integer',
             min_value=None,
             max_value=None,
             max_partitions_contributed=1.5,
             max_contributions_per_partition=1,
             max_contributions=None,
             metrics=[ap.Metrics.PRIVACY_ID_COUNT]),
        dict(testcase_name='float max_contributions_per_partition',
             error_msg=
             'max_contributions_per_partition has to be positive integer',
             min_value=None,
             max_value=None,
             max_partitions_contributed=1,
             max_contributions_per_partition=1.5,
             max_contributions=None,
             metrics=[ap.Metrics.PRIVACY_ID_COUNT]),
        dict(
            testcase_name='min_value is not set, max_value is set SUM',
            error_msg='min_value and max_value should be both set or both None',
            min_value=None,
            max_value=1,
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            max_contributions=None,
            metrics=[ap.Metrics.SUM]),
        dict(
            testcase_name='unspecified max_value SUM',
            error_msg='min_value and max_value should be both set or both None',
            min_value=1,
            max_value=None,
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            max_contributions=None,
            metrics=[ap.Metrics.SUM]),
        dict(
            testcase_name='unspecified min_value MEAN',
            error_msg='min_value and max_value should be both set or both None',
            min_value=None,
            max_value=1,
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            max_contributions=None,
            metrics=[ap.Metrics.MEAN]),
        dict(
            testcase_name='unspecified max_value MEAN',
            error_msg='min_value and max_value should be both set or both None',
            min_value=1,
            max_value=None,
            max_partitions_contributed=1,
            max_contributions_per_partition=1,
            max_contributions=None,
            metrics=[ap.Metrics.MEAN]),
        dict(testcase_name='min_value > max_value',
             error_msg='must be equal to or greater',
             min_value=2,
             max_value=1,
             max_partitions_contributed=1,
             max_contributions_per_partition=1,
             max_contributions=None,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name='max_contrib and max_partitions are set',
             error_msg='only one in max_contributions or',
             min_value=0,
             max_value=1,
             max_partitions_contributed=1,
             max_contributions_per_partition=1,
             max_contributions=1,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name='max_partitions_contributed not set',
             error_msg='either none or both',
             min_value=0,
             max_value=1,
             max_partitions_contributed=None,
             max_contributions_per_partition=1,
             max_contributions=None,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name='contributions not set',
             error_msg='either max_contributions must',
             min_value=0,
             max_value=1,
             max_partitions_contributed=None,
             max_contributions_per_partition=None,
             max_contributions=None,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name='vector sum computed with scalar sum',
             error_msg=
             'vector sum can not be computed together with scalar metrics',
             min_value=0,
             max_value=1,
             max_partitions_contributed=1,
             max_contributions_per_partition=1,
             max_contributions=1,
             metrics=[ap.Metrics.VECTOR_SUM, ap.Metrics.SUM]),
        dict(testcase_name='vector sum computed with scalar mean',
             error_msg=
             'vector sum can not be computed together with scalar metrics',
             min_value=0,
             max_value=1,
             max_partitions_contributed=1,
             max_contributions_per_partition=1,
             max_contributions=1,
             metrics=[ap.Metrics.VECTOR_SUM, ap.Metrics.MEAN]),
        dict(testcase_name='vector sum computed with scalar variance',
             error_msg=
             'vector sum can not be computed together with scalar metrics',
             min_value=0,
             max_value=1,
             max_partitions_contributed=1,
             max_contributions_per_partition=1,
             max_contributions=1,
             metrics=[ap.Metrics.VECTOR_SUM, ap.Metrics.VARIANCE]),
    )
    def test_check_invalid_bounding_params(self, error_msg, min_value,
                                           max_value,
                                           max_partitions_contributed,
                                           max_contributions_per_partition,
                                           max_contributions, metrics):
        with self.assertRaisesRegex(ValueError, error_msg):
            budget_accountant = budget_accounting.NaiveBudgetAccountant(
                total_epsilon=1, total_delta=1e-10)
            engine = dpeng.DPEngine(budget_accountant=budget_accountant,
                                    backend=pipeline_backend.LocalBackend())
            engine.aggregate(
                [0],
                ap.AggregateParams(
                    noise_kind=ap.NoiseKind.GAUSSIAN,
                    max_partitions_contributed=max_partitions_contributed,
                    max_contributions_per_partition=
                    max_contributions_per_partition,
                    min_value=min_value,
                    max_value=max_value,
                    max_contributions=max_contributions,
                    metrics=metrics), self._get_default_extractors())

    @parameterized.named_parameters(
        dict(testcase_name=
             'min_sum_per_partition is set, max_sum_per_partition is not set',
             error_msg=
             'min_sum_per_partition and max_sum_per_partition should be both '
             'set or both None',
             min_sum_per_partition=0,
             max_sum_per_partition=None,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name=
             'min_sum_per_partition is not set, max_sum_per_partition is set',
             error_msg=
             'min_sum_per_partition and max_sum_per_partition should be both '
             'set or both None',
             min_sum_per_partition=None,
             max_sum_per_partition=1,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name='min_sum_per_partition > max_sum_per_partition',
             error_msg='max_sum_per_partition must be equal to or greater than '
             'min_sum_per_partition',
             min_sum_per_partition=1,
             max_sum_per_partition=0,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name='min_sum_per_partition not compatible with mean',
             error_msg='min_sum_per_partition is not compatible with metrics',
             min_sum_per_partition=0,
             max_sum_per_partition=1,
             metrics=[ap.Metrics.MEAN]),
        dict(testcase_name='min_sum_per_partition not compatible with variance',
             error_msg='min_sum_per_partition is not compatible with metrics',
             min_sum_per_partition=0,
             max_sum_per_partition=1,
             metrics=[ap.Metrics.VARIANCE]),
        dict(testcase_name='all bounds per partition not set, metrics is SUM',
             error_msg='bounds per partition are required',
             min_sum_per_partition=None,
             max_sum_per_partition=None,
             metrics=[ap.Metrics.SUM]),
        dict(testcase_name='all bounds per partition not set, metrics is MEAN',
             error_msg='bounds per partition are required',
             min_sum_per_partition=None,
             max_sum_per_partition=None,
             metrics=[ap.Metrics.MEAN]),
        dict(testcase_name=
             'all bounds per partition not set, metrics is VARIANCE',
             error_msg='bounds per partition are required',
             min_sum_per_partition=None,
             max_sum_per_partition=None,
             metrics=[ap.Metrics.VARIANCE]),
    )
    def test_check_sum_per_partition_params(self, error_msg,
                                            min_sum_per_partition,
                                            max_sum_per_partition, metrics):
        with self.assertRaisesRegex(ValueError, error_msg):
            budget_accountant = budget_accounting.NaiveBudgetAccountant(
                total_epsilon=1, total_delta=1e-10)
            engine = dpeng.DPEngine(budget_accountant=budget_accountant,
                                    backend=pipeline_backend.LocalBackend())
            engine.aggregate(
                [0],
                ap.AggregateParams(noise_kind=ap.NoiseKind.GAUSSIAN,
                                   min_value=None,
                                   max_value=None,
                                   max_partitions_contributed=1,
                                   max_contributions_per_partition=1,
                                   min_sum_per_partition=min_sum_per_partition,
                                   max_sum_per_partition=max_sum_per_partition,
                                   max_contributions=1,
                                   metrics=metrics),
                self._get_default_extractors())

    @parameterized.named_parameters(
        dict(testcase_name='both metrics and custom_combiners are set',
             error_msg='Custom combiners can not be used with standard metrics',
             metrics=[ap.Metrics.SUM],
             custom_combiners=[0],
             contribution_bounds_already_enforced=None),
        dict(testcase_name='metrics is PRIVACY_ID_COUNT and '
             'contribution_bounds_already_enforced is True',
             error_msg=
             'PRIVACY_ID_COUNT when contribution_bounds_already_enforced is '
             'set to True',
             metrics=[ap.Metrics.PRIVACY_ID_COUNT],
             custom_combiners=None,
             contribution_bounds_already_enforced=True),
    )
    def test_check_metrics_with_parameters_not_allowed(
            self, error_msg, metrics, custom_combiners,
            contribution_bounds_already_enforced):
        with self.assertRaisesRegex(ValueError, error_msg):
            budget_accountant = budget_accounting.NaiveBudgetAccountant(
                total_epsilon=1, total_delta=1e-10)
            engine = dpeng.DPEngine(budget_accountant=budget_accountant,
                                    backend=pipeline_backend.LocalBackend())
            engine.aggregate(
                [0],
                ap.AggregateParams(noise_kind=ap.NoiseKind.GAUSSIAN,
                                   min_value=1,
                                   max_value=1,
                                   metrics=metrics,
                                   custom_combiners=custom_combiners,
                                   contribution_bounds_already_enforced=
                                   contribution_bounds_already_enforced),
                self._get_default_extractors())

    @parameterized.parameters(0.1, -1, 0)
    def test_invalid_pre_threshold(self, pre_threshold):
        with self.assertRaisesRegex(ValueError,
                                    "pre_threshold has to be positive integer"):
            ap.AggregateParams(noise_kind=ap.NoiseKind.GAUSSIAN,
                               max_partitions_contributed=1,
                               max_contributions_per_partition=1,
                               metrics=[ap.Metrics.COUNT],
                               pre_threshold=pre_threshold)

    @parameterized.parameters(1, 42)
    def test_valid_pre_threshold(self, pre_threshold):
        ap.AggregateParams(noise_kind=ap.NoiseKind.GAUSSIAN,
                           max_partitions_contributed=1,
                           max_contributions_per_partition=1,
                           metrics=[ap.Metrics.COUNT],
                           pre_threshold=pre_threshold)


class SelectPartitionsParamsTest(parameterized.TestCase):

    @parameterized.parameters(0.1, -1, 0)
    def test_invalid_pre_threshold(self, pre_threshold):
        with self.assertRaisesRegex(ValueError,
                                    "pre_threshold has to be positive integer"):
            ap.SelectPartitionsParams(max_partitions_contributed=1,
                                      pre_threshold=pre_threshold)

    @parameterized.parameters(1, 42)
    def test_valid_pre_threshold(self, pre_threshold):
        ap.SelectPartitionsParams(max_partitions_contributed=1,
                                  pre_threshold=pre_threshold)


class CalculatePrivateContributionBoundsParamsTest(parameterized.TestCase):

    @parameterized.named_parameters(
        dict(testcase_name='invalid aggregation_noise_kind',
             error_msg='aggregation_noise_kind must be set',
             aggregation_noise_kind=None,
             aggregation_eps=0.01,
             aggregation_delta=0.0001,
             calculation_eps=0.01,
             max_partitions_contributed_upper_bound=100),
        dict(testcase_name='invalid aggregation_eps',
             error_msg='epsilon must be positive',
             aggregation_noise_kind=ap.NoiseKind.LAPLACE,
             aggregation_eps=0,
             aggregation_delta=0.0001,
             calculation_eps=0.01,
             max_partitions_contributed_upper_bound=100),
        dict(testcase_name='invalid aggregation_delta',
             error_msg='.*Gaussian noise.*aggregation_delta.*greater than 0.*',
             aggregation_noise_kind=ap.NoiseKind.GAUSSIAN,
             aggregation_eps=0.001,
             aggregation_delta=0,
             calculation_eps=0.01,
             max_partitions_contributed_upper_bound=100),
        dict(testcase_name='invalid calculation_eps',
             error_msg='epsilon must be positive',
             aggregation_noise_kind=ap.NoiseKind.GAUSSIAN,
             aggregation_eps=0.01,
             aggregation_delta=0.0001,
             calculation_eps=-1,
             max_partitions_contributed_upper_bound=100),
        dict(testcase_name='invalid max_partitions_contributed_upper_bound',
             error_msg='max_partitions_contributed_upper_bound has to be '
             'positive integer',
             aggregation_noise_kind=ap.NoiseKind.LAPLACE,
             aggregation_eps=0.001,
             aggregation_delta=0,
             calculation_eps=0.01,
             max_partitions_contributed_upper_bound=0),
    )
    def test_parameters_validation(self, error_msg, aggregation_noise_kind,
                                   aggregation_eps, aggregation_delta,
                                   calculation_eps,
                                   max_partitions_contributed_upper_bound):
        with self.assertRaisesRegex(ValueError, error_msg):
            ap.CalculatePrivateContributionBoundsParams(
                aggregation_noise_kind, aggregation_eps, aggregation_delta,
                calculation_eps, max_partitions_contributed_upper_bound)


class ToAggregateParamsTest(parameterized.TestCase):

    def test_count_params(self):
        count_params = ap.CountParams(noise_kind=ap.NoiseKind.GAUSSIAN,
                                      max_partitions_contributed=1,
                                      max_contributions_per_partition=2,
                                      partition_extractor=None,
                                      budget_weight=3,
                                      contribution_bounds_already_enforced=True,
                                      pre_threshold=4)
        agg_params = count_params.to_aggregate_params()
        self.assertEqual(agg_params.noise_kind, ap.NoiseKind.GAUSSIAN)
        self.assertEqual(agg_params.metrics, [ap.Metrics.COUNT])
        self.assertEqual(agg_params.max_partitions_contributed, 1)
        self.assertEqual(agg_params.max_contributions_per_partition, 2)
        self.assertEqual(agg_params.budget_weight, 3)
        self.assertTrue(agg_params.contribution_bounds_already_enforced)
        self.assertEqual(agg_params.pre_threshold, 4)

    def test_sum_params(self):
        sum_params = ap.SumParams(noise_kind=ap.NoiseKind.LAPLACE,
                                  max_partitions_contributed=1,
                                  max_contributions_per_partition=2,
                                  min_value=3,
                                  max_value=4,
                                  budget_weight=5,
                                  partition_extractor=None,
                                  value_extractor=None,
                                  contribution_bounds_already_enforced=True,
                                  pre_threshold=6)
        agg_params = sum_params.to_aggregate_params()
        self.assertEqual(agg_params.noise_kind, ap.NoiseKind.LAPLACE)
        self.assertEqual(agg_params.metrics, [ap.Metrics.SUM])
        self.assertEqual(agg_params.max_partitions_contributed, 1)
        self.assertEqual(agg_params.max_contributions_per_partition, 2)
        self.assertEqual(agg_params.min_value, 3)
        self.assertEqual(agg_params.max_value, 4)
        self.assertEqual(agg_params.budget_weight, 5)
        self.assertTrue(agg_params.contribution_bounds_already_enforced)
        self.assertEqual(agg_params.pre_threshold, 6)

    def test_mean_params(self):
        mean_params = aggregate_params.MeanParams(
            noise_kind=ap.NoiseKind.LAPLACE,
            max_partitions_contributed=1,
            max_contributions_per_partition=2,
            min_value=3,
            max_value=4,
            budget_weight=5,
            partition_extractor=None,
            value_extractor=None,
            contribution_bounds_already_enforced=True,
            pre_threshold=6)
        agg_params = mean_params.to_aggregate_params()
        self.assertEqual(agg_params.noise_kind, ap.NoiseKind.LAPLACE)
        self.assertEqual(agg_params.metrics, [ap.Metrics.MEAN])
        self.assertEqual(agg_params.max_partitions_contributed, 1)
        self.assertEqual(agg_params.max_contributions_per_partition, 2)
        self.assertEqual(agg_params.min_value, 3)
        self.assertEqual(agg_params.max_value, 4)
        self.assertEqual(agg_params.budget_weight, 5)
        self.assertTrue(agg_params.contribution_bounds_already_enforced)
        self.assertEqual(agg_params.pre_threshold, 6)

    def test_variance_params(self):
        variance_params = aggregate_params.VarianceParams(
            noise_kind=ap.NoiseKind.LAPLACE,
            max_partitions_contributed=1,
            max_contributions_per_partition=2,
            min_value=3,
            max_value=4,
            budget_weight=5,
            partition_extractor=None,
            value_extractor=None,
            contribution_bounds_already_enforced=True,
            pre_threshold=6)
        agg_params = variance_params.to_aggregate_params()
        self.assertEqual(agg_params.noise_kind, ap.NoiseKind.LAPLACE)
        self.assertEqual(agg_params.metrics, [ap.Metrics.VARIANCE])
        self.assertEqual(agg_params.max_partitions_contributed, 1)
        self.assertEqual(agg_params.max_contributions_per_partition, 2)
        self.assertEqual(agg_params.min_value, 3)
        self.assertEqual(agg_params.max_value, 4)
        self.assertEqual(agg_params.budget_weight, 5)
        self.assertTrue(agg_params.contribution_bounds_already_enforced)
        self.assertEqual(agg_params.pre_threshold, 6)

    def test_privacy_id_count_params(self):
        privacy_id_count_params = ap.PrivacyIdCountParams(
            noise_kind=ap.NoiseKind.GAUSSIAN,
            max_partitions_contributed=1,
            budget_weight=3,
            partition_extractor=None,
            contribution_bounds_already_enforced=False,
            pre_threshold=4)
        agg_params = privacy_id_count_params.to_aggregate_params()
        self.assertEqual(agg_params.noise_kind, ap.NoiseKind.GAUSSIAN)
        self.assertEqual(agg_params.metrics, [ap.Metrics.PRIVACY_ID_COUNT])
        self.assertEqual(agg_params.max_partitions_contributed, 1)
        self.assertEqual(agg_params.max_contributions_per_partition, 1)
        self.assertEqual(agg_params.budget_weight, 3)
        self.assertFalse(agg_params.contribution_bounds_already_enforced)
        self.assertEqual(agg_params.pre_threshold, 4)
