"""dpfast on the comparison: one ``dpfast.tables`` release per statistic.

``STAT_BOUNDING`` is the bounding policy of the per-key statistics (a policy, or a dict
``{statistic: policy}`` over ``DEFAULT_BOUNDING``) and ``SELECT_BOUNDING`` that of the
private key selection's count (``compare.py --dpfast-bounding`` sets both to one policy):
``"frequent"`` keeps each aircraft's 10 destinations with the most flights, ``"uniform"``
10 of its destinations at random; ``"l2"`` (``privacy_id_count`` only, Gaussian noise at
the same ε, δ) counts an aircraft with ``t > 10`` destinations ``sqrt(10 / t)`` in each of
them: the same L2 sensitivity as 10 destinations counted once.  Otherwise the same ε, δ,
k, c and bounds as every peer.
"""

from __future__ import annotations

import pandas as pd

import dpfast
from dpfast import tables

from . import flights as F

NAME = "dpfast"
DEFAULT_BOUNDING = "frequent"  # lower MAE than "uniform" on every statistic here
# privacy_id_count: L2 bounding removes most of the undercount that L0 bounding (k keys per
# aircraft, any choice of them) leaves: MAE 109 against 174.9 uniform / 174.9 frequent
STAT_BOUNDING: str | dict[str, str] = {"privacy_id_count": "l2"}
SELECT_BOUNDING = "uniform"   # publishes more keys than "frequent" here (54 vs 49 of 104)


def bounding_of(stat: str) -> str:
    """The bounding policy of ``stat`` (``STAT_BOUNDING``, over ``DEFAULT_BOUNDING``)."""
    if isinstance(STAT_BOUNDING, str):
        return STAT_BOUNDING
    return STAT_BOUNDING.get(stat, DEFAULT_BOUNDING)


def _common(rng: bytes, bounding: str) -> dict:
    return dict(epsilon=F.EPSILON, max_partitions=F.MAX_PARTITIONS,
                max_per_partition=F.MAX_PER_PARTITION, rng=dpfast.default_rng(rng),
                bounding=bounding)


def release(df: pd.DataFrame, stat: str, keys: list, seed: int = 0) -> pd.Series | None:
    """``stat`` per key over the public ``keys`` (None: not offered by this version)."""
    kw = _common(seed.to_bytes(32, "little"), bounding_of(stat)) | {"domain": keys}
    d, ids, v = df["dest"], df["tailnum"], df["arr_delay"]
    if stat == "count":
        r = tables.count(d, ids, **kw)
    elif stat == "privacy_id_count":
        if not hasattr(tables, "privacy_id_count"):
            return None
        kw.pop("max_per_partition")
        if kw["bounding"] == "l2":  # Gaussian noise: the peers' δ, spent
            kw["delta"] = F.DELTA
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
