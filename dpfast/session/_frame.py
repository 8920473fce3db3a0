"""A pandas source's columns read in place (:meth:`dpfast.session._source.Source.frame_rows`):
the arrays DuckDB would return for a plain row query over the registered frame, without
asking DuckDB (numbers without a copy unless a row is dropped).  pandas is imported here
only when a frame's string column is looked at."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FRAME_DTYPES", "frame_rows"]

#: numpy dtypes (``dtype.str`` without the byte order) of pandas columns that DuckDB reads
#: and returns unchanged
FRAME_DTYPES = frozenset({"b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f4", "f8"})


def frame_rows(frame: pd.DataFrame, cols: dict[str, str], not_null: Sequence[str],
               limit: int | None = None) -> dict[str, np.ndarray] | None:
    """See :meth:`dpfast.session._source.Source.frame_rows`."""
    if not set(cols.values()) <= set(not_null):
        return None
    names = list(frame.columns)
    folded = [n.lower() if isinstance(n, str) else n for n in names]
    arrays: dict[str, np.ndarray] = {}
    keep = None
    for c in dict.fromkeys(not_null):
        if names.count(c) != 1 or folded.count(c.lower()) != 1:  # SQL names fold case
            return None
        got = _frame_column(frame[c], types_only=limit == 0)
        if got is None:
            return None
        arrays[c], missing = got
        if missing is not None and missing.any():
            keep = ~missing if keep is None else keep & ~missing
    return {name: arrays[c] if keep is None else arrays[c][keep]
            for name, c in cols.items()}


def _frame_column(col: pd.Series, types_only: bool = False
                  ) -> tuple[np.ndarray, np.ndarray | None] | None:
    """A pandas column as DuckDB returns it and its missing values (None: it has none),
    or None for a column of another kind; ``types_only``: no rows (and None for an object
    column, whose kind needs a look at every row)."""
    dt = col.dtype
    if isinstance(dt, np.dtype) and dt.isnative and dt.str[1:] in FRAME_DTYPES:
        if types_only:
            return np.empty(0, dt), None
        arr = np.ascontiguousarray(col.to_numpy())
        return arr, (np.isnan(arr) if dt.kind == "f" else None)
    import pandas as pd
    from pandas.api.types import infer_dtype

    if types_only:
        return (np.empty(0, object), None) if isinstance(dt, pd.StringDtype) else None
    if not (isinstance(dt, pd.StringDtype) or (
            dt == np.dtype(object) and infer_dtype(col, skipna=True) == "string")):
        return None
    return col.to_numpy(dtype=object), col.isna().to_numpy()
