"""Helpers the Dask releases not yet on the one pipeline share (:mod:`dpfast.dask.multi`,
:mod:`dpfast.dask.quantiles`): column checks, the driver's generator and the workers' key
source, the checked merge of per-key partials.

``dpfast.dask.count`` / ``sum`` / ``mean`` (every registered statistic) are generated from
the registry (:mod:`dpfast.dask._facade`) and run :func:`dpfast.tables.run.release` with
the :class:`~dpfast.dask.backend.DaskBackend`: validate and plan on the driver -> the
plan's partials per partition after the shuffle by privacy id, merged on the driver in
checked integer arithmetic -> **the charge** -> per-key addressed noise, selection and
report, bit for bit the local release of the same rows and key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from dpfast import random as _random
from dpfast.dask.keys import WorkerKey
from dpfast.tables import _merge, bounding, keynoise

if TYPE_CHECKING:
    from dpfast.dask._types import WorkerSource
    from dpfast.random import RngLike

__all__ = ["key_codes", "checked_total"]

_WEIGHTED = "__dpfast_wunits"  # weighted unit counts (used by dask/multi.py's partials)


def _columns(ddf: object, key: object, privacy_id: str | None, value: str | None
             ) -> tuple[list[str], str | None, str | None]:
    cols = getattr(ddf, "columns", None)
    if cols is None or not hasattr(ddf, "map_partitions"):
        raise TypeError(f"ddf must be a dask DataFrame, got {type(ddf).__name__}")
    names = [key] if isinstance(key, str) else list(key) if isinstance(key, (list, tuple)) \
        else None
    if not names or not all(isinstance(k, str) for k in names):
        raise TypeError("key must be a column name or a list of column names")
    for label, cs in (("key", names), ("privacy_id", [privacy_id] if privacy_id else []),
                      ("value", [value] if value else [])):
        for c in cs:
            if not isinstance(c, str):
                raise TypeError(f"{label} must be a column name (str), got {c!r}")
            if c not in cols:
                raise ValueError(f"{label} column {c!r} is not in the DataFrame "
                                 f"(columns: {list(cols)})")
    return names, privacy_id, value


def _generator(rng: RngLike | WorkerKey) -> tuple[_random.Generator, int | None, WorkerSource]:
    """The driver's release generator, its release id (None: numbered by a generator's
    allocator) and what the workers get to derive the bounding sub-key: the sub-key words
    themselves, or ``(WorkerKey, release id)`` (each worker loads the key)."""
    if isinstance(rng, WorkerKey):
        wid = keynoise.fresh_release_id()
        return keynoise.keyed_generator(rng.load(), wid), wid, (rng, wid)
    gen, rid = keynoise.release_generator(rng)
    return gen, rid, bounding.subkey(gen)


# used by dpfast/dask/multi.py and quantiles.py until they run on the one pipeline
key_codes = _merge.key_codes
checked_total = _merge.checked_total


def _subkey(src: WorkerSource) -> np.ndarray:
    if isinstance(src, tuple):
        wk, rid = src
        return bounding.subkey(keynoise.keyed_generator(wk.load(), rid))
    return src
