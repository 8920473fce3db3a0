"""Input kinds in, the same kind out: scalars, numpy arrays, pandas Series / DataFrames.

pandas is imported only when the input already is a pandas object (``import dpfast``
never imports it).  A pandas input gives a pandas output with the same index (and name /
columns); missing values (``NA``, ``NaN``, ``None``) are refused with
``ValueError("x contains missing values")``.  A Python or numpy scalar gives a numpy
scalar; an ndarray (0-d included) gives an ndarray.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

Rewrap = Callable[[np.ndarray], Any]


def _same(r: np.ndarray) -> Any:
    return r


def _scalar(r: np.ndarray) -> Any:
    return r[()]


def _is_pandas(x: Any) -> bool:
    return type(x).__module__.split(".")[0] == "pandas"


def _series_values(s: Any) -> np.ndarray:
    if bool(s.isna().to_numpy().any()):
        raise ValueError("x contains missing values")
    dt = getattr(s.dtype, "numpy_dtype", None)  # nullable Int64 / Float64 / boolean
    return s.to_numpy(dtype=dt) if dt is not None else s.to_numpy()


def unwrap(x: Any) -> tuple[Any, Rewrap]:
    """(the data as something ``np.asarray`` takes, a function giving the result the
    input's kind)."""
    if isinstance(x, np.ndarray):
        return x, _same
    if _is_pandas(x):
        import pandas as pd

        if isinstance(x, pd.Series):
            values = _series_values(x)
            index, name = x.index, x.name
            return values, lambda r: pd.Series(r, index=index, name=name, copy=False)
        if isinstance(x, pd.DataFrame):
            cols = [_series_values(x[c]) for c in x.columns]
            values = (np.column_stack(cols) if cols
                      else np.empty((len(x.index), 0), np.int64))
            index, columns = x.index, x.columns
            return values, lambda r: pd.DataFrame(r, index=index, columns=columns)
        raise TypeError(f"x must be an array, a pandas Series or DataFrame, got "
                        f"{type(x).__name__}")
    if np.ndim(x) == 0 and not hasattr(x, "__len__"):
        return x, _scalar
    return x, _same
