"""dpfast on the comparison: one ``dpfast.tables`` release per statistic."""

from __future__ import annotations

import pandas as pd

import dpfast
from dpfast import tables

from . import flights as F

NAME = "dpfast"


def _common(rng: bytes) -> dict:
    return dict(epsilon=F.EPSILON, max_partitions=F.MAX_PARTITIONS,
                max_per_partition=F.MAX_PER_PARTITION, rng=dpfast.default_rng(rng))


def release(df: pd.DataFrame, stat: str, keys: list, seed: int = 0) -> pd.Series | None:
    """``stat`` per key over the public ``keys`` (None: not offered by this version)."""
    kw = _common(seed.to_bytes(32, "little")) | {"domain": keys}
    d, ids, v = df["dest"], df["tailnum"], df["arr_delay"]
    if stat == "count":
        r = tables.count(d, ids, **kw)
    elif stat == "privacy_id_count":
        if not hasattr(tables, "privacy_id_count"):
            return None
        kw.pop("max_per_partition")
        r = tables.privacy_id_count(d, ids, **kw)
    else:
        fn = getattr(tables, stat, None)
        if fn is None:
            return None
        r = fn(v, d, ids, bounds=F.BOUNDS, **kw)
    return pd.Series(r.values, index=list(r.keys), dtype=float)


def select(df: pd.DataFrame, seed: int = 0) -> set:
    """The keys a private-partition count publishes."""
    kw = _common(seed.to_bytes(32, "little")) | {"delta": F.DELTA}
    r = tables.count(df["dest"], df["tailnum"], **kw)
    return set(r.keys)
