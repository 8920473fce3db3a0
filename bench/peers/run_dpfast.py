"""dpfast on the comparison: one ``dpfast.tables`` release per statistic.

``STAT_BOUNDING`` is the bounding policy of the per-key statistics and ``SELECT_BOUNDING``
that of the private key selection's count (``compare.py --dpfast-bounding`` sets both):
``"frequent"`` keeps each aircraft's 10 destinations with the most flights, ``"uniform"``
10 of its destinations at random.  Either way the same ε, δ, k, c and bounds as every peer.
"""

from __future__ import annotations

import pandas as pd

import dpfast
from dpfast import tables

from . import flights as F

NAME = "dpfast"
STAT_BOUNDING = "frequent"    # lower MAE than "uniform" on every statistic here
SELECT_BOUNDING = "uniform"   # publishes more keys than "frequent" here (54 vs 49 of 104)


def _common(rng: bytes, bounding: str) -> dict:
    return dict(epsilon=F.EPSILON, max_partitions=F.MAX_PARTITIONS,
                max_per_partition=F.MAX_PER_PARTITION, rng=dpfast.default_rng(rng),
                bounding=bounding)


def release(df: pd.DataFrame, stat: str, keys: list, seed: int = 0) -> pd.Series | None:
    """``stat`` per key over the public ``keys`` (None: not offered by this version)."""
    kw = _common(seed.to_bytes(32, "little"), STAT_BOUNDING) | {"domain": keys}
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
        if stat == "median":  # the peers spend δ; so does dpfast (zCDP composition)
            kw["delta"] = F.DELTA
        r = fn(v, d, ids, bounds=F.BOUNDS, **kw)
    return pd.Series(r.values, index=list(r.keys), dtype=float)


def select(df: pd.DataFrame, seed: int = 0) -> set:
    """The keys a private-partition count publishes."""
    kw = _common(seed.to_bytes(32, "little"), SELECT_BOUNDING) | {"delta": F.DELTA}
    r = tables.count(df["dest"], df["tailnum"], **kw)
    return set(r.keys)
