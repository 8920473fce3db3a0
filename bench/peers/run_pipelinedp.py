"""PipelineDP (LocalBackend) on the comparison: one ``DPEngine.aggregate`` per statistic."""

from __future__ import annotations

from typing import Any

import pandas as pd

from . import flights as F

NAME = "PipelineDP"


def _metric(stat: str) -> Any:
    import pipeline_dp
    m = pipeline_dp.Metrics
    return {"count": m.COUNT, "privacy_id_count": m.PRIVACY_ID_COUNT, "sum": m.SUM,
            "mean": m.MEAN, "variance": m.VARIANCE, "median": m.PERCENTILE(50)}[stat]


def _run(df: pd.DataFrame, stat: str, public: list | None) -> pd.Series:
    import pipeline_dp
    rows = list(zip(df["dest"], df["tailnum"], df["arr_delay"], strict=True))
    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=F.EPSILON, total_delta=F.DELTA)
    engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        metrics=[_metric(stat)], noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        max_partitions_contributed=F.MAX_PARTITIONS,
        max_contributions_per_partition=F.MAX_PER_PARTITION,
        min_value=F.BOUNDS[0], max_value=F.BOUNDS[1])
    ext = pipeline_dp.DataExtractors(partition_extractor=lambda r: r[0],
                                     privacy_id_extractor=lambda r: r[1],
                                     value_extractor=lambda r: r[2])
    out = engine.aggregate(rows, params, ext, public_partitions=public)
    acc.compute_budgets()
    res = dict(out)
    field = "percentile_50" if stat == "median" else stat
    return pd.Series({k: float(getattr(v, field)) for k, v in res.items()}, dtype=float)


def release(df: pd.DataFrame, stat: str, keys: list) -> pd.Series:
    """``stat`` per key over the public ``keys``."""
    return _run(df, stat, keys)


def select(df: pd.DataFrame) -> set:
    """The keys a private-partition count publishes."""
    return set(_run(df, "count", None).index)
