"""OpenDP (its Polars context) on the comparison: one context and query per statistic.

The aircraft is the privacy unit (``identifier=tailnum``) and the query truncates each
aircraft to ``MAX_PER_PARTITION`` rows per key and ``MAX_PARTITIONS`` keys, as the other
libraries bound contributions; public keys are joined in (OpenDP's key sanitisation).
OpenDP has no variance in its Polars context (reported as not offered).
"""

from __future__ import annotations

import warnings

import pandas as pd

from . import flights as F

NAME = "OpenDP"


def _query(df: pd.DataFrame, expr_of, public: list | None):
    import opendp.prelude as dp
    import polars as pl
    dp.enable_features("contrib")
    margins = [dp.polars.Margin(max_length=len(df)),
               dp.polars.Margin(by=["dest"], max_length=len(df),
                                max_groups=len(public) if public else None)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = dp.Context.compositor(
            data=pl.from_pandas(df).lazy(),
            privacy_unit=dp.unit_of(contributions=1, identifier=pl.col("tailnum")),
            privacy_loss=dp.loss_of(epsilon=F.EPSILON, delta=F.DELTA),
            split_evenly_over=1, margins=margins)
        q = (ctx.query().truncate_per_group(F.MAX_PER_PARTITION, by=["dest"])
             .truncate_num_groups(F.MAX_PARTITIONS, by=["dest"], keep="first")
             .group_by("dest").agg(expr_of(dp, pl)))
        if public is not None:
            q = q.join(pl.LazyFrame({"dest": public}), on="dest", how="right")
        out = q.release().collect().to_pandas()
    col = [c for c in out.columns if c != "dest"][0]
    return pd.Series(out[col].to_numpy(dtype=float), index=out["dest"], dtype=float)


_EXPRS = {
    "count": lambda dp, pl: dp.len(),
    "privacy_id_count": lambda dp, pl: pl.col.tailnum.dp.n_unique(),
    "sum": lambda dp, pl: pl.col.arr_delay.dp.sum(F.BOUNDS),
    "mean": lambda dp, pl: pl.col.arr_delay.dp.mean(F.BOUNDS),
    "median": lambda dp, pl: pl.col.arr_delay.dp.median(
        [float(x) for x in range(int(F.BOUNDS[0]), int(F.BOUNDS[1]) + 1)]),
}


def release(df: pd.DataFrame, stat: str, keys: list) -> pd.Series | None:
    if stat not in _EXPRS:
        return None
    return _query(df, _EXPRS[stat], keys)


def select(df: pd.DataFrame) -> set:
    return set(_query(df, _EXPRS["count"], None).index)
