"""Merge step of a distributed release: the partitions' per-key partials, keyed by key
*values*, summed per key as on one machine.

The keys are factorized canonically (:func:`key_codes`: with a public domain its keys come
first, so the codes are the domain's), every total is summed in checked integer arithmetic
(``OverflowError``, never a wrap), so the merged partials -- and the release -- do not depend
on the partitioning.  Used by the plans' ``merge`` (:mod:`dpfast.tables.run`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from dpfast._kernels import fixed as _kf
from dpfast.tables import _fixed, _keys, bounding

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["key_codes", "checked_total"]


def key_codes(parts: pd.DataFrame, names: list[str] | tuple[str, ...], domain: object
              ) -> tuple[_keys.Factorized, np.ndarray, np.ndarray | None]:
    """The merged partials' key columns ``names`` factorized as on one machine:
    ``(factorized keys, a code per partial row, the domain's codes or None)`` -- with a
    public ``domain`` its keys come first, so the codes are those of the domain's keys."""
    cols = [_keys.column(parts[n], f"key {n!r}") for n in names]
    if domain is None:
        fk = _keys.factorize(cols)
        return fk, fk.codes, None
    dcols = _keys.columns(domain, "domain")
    nd = len(dcols[0])
    fk = _keys.factorize(_keys.joint(dcols, cols))
    return fk, fk.codes[nd:], fk.codes[:nd]


def checked_total(codes: np.ndarray, col: npt.ArrayLike, n: int) -> np.ndarray:
    """Per key code, the sum of the partials' int64 column ``col`` -- the weighted unit
    counts of the weighted-Gaussian key selection -- saturated at ``2**62`` as on one
    machine (:func:`dpfast.tables.bounding.accumulate_weighted`: the partials are >= 0 and
    saturated themselves, so the saturated total does not depend on the partitioning)."""
    out = np.zeros(n, np.int64)
    codes = np.ascontiguousarray(codes, np.int64)
    vals = np.ascontiguousarray(np.asarray(col), np.int64)
    if _kf.add_checked(codes, vals, out):  # past int64: exact in two words, then saturated
        exact = _fixed.FixedSums.zeros(n, 0)
        exact.add_rows(codes, vals)
        out = bounding.saturated_weights(exact)
    return out
