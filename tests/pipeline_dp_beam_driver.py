"""Runs one PipelineDP aggregation on Beam's DirectRunner in multi-process mode (2 worker
processes); the workers append one JSON line per partition to the file named by
``DPFAST_BEAM_RESULTS``.  Used by tests/test_compat_pipeline_dp_beam.py.

``python -m tests.pipeline_dp_beam_driver PLUGIN[,PLUGIN...]`` (the Beam plugins every worker
imports at start-up); the driver itself runs with dpfast installed, as a user's would."""

from __future__ import annotations

import json
import os
import sys

import apache_beam as beam
import pipeline_dp
from apache_beam.options.pipeline_options import PipelineOptions

from dpfast.compat import pipeline_dp as dpf_pdp


def _write(kv: tuple, path: str) -> None:
    with open(path, "a") as f:
        f.write(json.dumps([kv[0], kv[1].count, kv[1].sum, kv[1].percentile_50]) + "\n")


def main(plugins: list[str]) -> None:
    dpf_pdp.install()
    options = PipelineOptions(direct_num_workers=2, direct_running_mode="multi_processing",
                              beam_plugins=plugins)
    rows = [(uid, f"p{uid % 4}", float(uid % 10)) for uid in range(400)]
    with beam.Pipeline(runner="DirectRunner", options=options) as p:
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=4.0, total_delta=1e-6)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.BeamBackend())
        params = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM,
                     pipeline_dp.Metrics.PERCENTILE(50)],
            max_partitions_contributed=1, max_contributions_per_partition=1,
            min_value=0.0, max_value=10.0)
        extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                                partition_extractor=lambda r: r[1],
                                                value_extractor=lambda r: r[2])
        result = engine.aggregate(p | beam.Create(rows), params, extractors,
                                  public_partitions=["p0", "p1", "p2", "p3"])
        accountant.compute_budgets()
        result | beam.Map(_write, os.environ["DPFAST_BEAM_RESULTS"])
    print("DRIVER", os.getpid(), flush=True)


if __name__ == "__main__":
    main([p for p in sys.argv[1].split(",") if p])
