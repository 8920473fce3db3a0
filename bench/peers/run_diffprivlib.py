"""diffprivlib on the comparison.

diffprivlib protects records, not people, and has no group-by: a user bounds each
aircraft's rows by hand (here ``MAX_PARTITIONS`` keys and ``MAX_PER_PARTITION`` rows per
key, chosen at random) and releases each key on its own (parallel composition over keys
once each aircraft is in at most ``MAX_PARTITIONS`` of them: ε / MAX_PARTITIONS per key),
with group privacy over the ``MAX_PER_PARTITION`` rows an aircraft has in a key (ε / c).
It cannot select keys privately and has no distinct-people count.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from . import flights as F

NAME = "diffprivlib"


def _bounded(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    d = df.sample(frac=1.0, random_state=rng)
    d = d[d.groupby(["tailnum", "dest"]).cumcount() < F.MAX_PER_PARTITION]
    first = d.drop_duplicates(["tailnum", "dest"])
    kept = first[first.groupby("tailnum").cumcount() < F.MAX_PARTITIONS][["tailnum", "dest"]]
    return d.merge(kept, on=["tailnum", "dest"])


def release(df: pd.DataFrame, stat: str, keys: list, seed: int = 0) -> pd.Series | None:
    from diffprivlib import tools
    if stat == "privacy_id_count":
        return None
    eps = F.EPSILON / (F.MAX_PARTITIONS * F.MAX_PER_PARTITION)
    lo, hi = F.BOUNDS
    b = _bounded(df, seed)
    groups = {k: g["arr_delay"].to_numpy() for k, g in b.groupby("dest")}
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in keys:
            x = np.clip(groups.get(k, np.zeros(0)), lo, hi)
            if stat == "count":
                out[k] = tools.count_nonzero(np.ones_like(x), epsilon=eps)
            elif stat == "sum":
                out[k] = tools.nansum(x, epsilon=eps, bounds=F.BOUNDS) if len(x) else 0.0
            elif len(x) == 0:
                out[k] = np.nan
            elif stat == "mean":
                out[k] = tools.mean(x, epsilon=eps, bounds=F.BOUNDS)
            elif stat == "variance":
                out[k] = tools.var(x, epsilon=eps, bounds=F.BOUNDS)
            elif stat == "median":
                out[k] = tools.median(x, epsilon=eps, bounds=F.BOUNDS)
    return pd.Series(out, dtype=float)


def select(df: pd.DataFrame) -> set | None:
    return None
