"""The Dask backend of the one release pipeline (:func:`dpfast.tables.run.release`).

A :class:`Frame` is the source (a dask DataFrame and the names of the columns a release
reads); :class:`DaskBackend` computes a plan's exact per-key partials on the cluster:
hash-partition the rows by privacy id (every id's rows meet in one partition; compact numpy
pieces when every column read is numeric, :mod:`dpfast.dask._shuffle`), the plan's own
per-partition step on each partition, then the plan's merge on the driver.  The backend
knows no statistic: what a partition computes and how partials add up is the plan's
(``partition_partials`` / ``merge``), as PipelineDP's backends run a combiner.  The partials
are computed *before* the charge, as on one machine: a failure of the inputs charges
nothing; the driver charges the plan's event, then noises.

Keys: a raw key (32 bytes, or a :class:`~dpfast.dask.WorkerKey`) gets a fresh release id
on the driver for every release (:func:`dpfast.tables.keynoise.fresh_release_id`); the
tasks carry the bounding sub-key words, or with a WorkerKey only ``(WorkerKey, release id)``
(each worker loads the key), never a key that could remove noise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from dpfast.dask import _shuffle as shuffle
from dpfast.dask._types import WorkerSource
from dpfast.dask.keys import WorkerKey
from dpfast.tables import bounding, keynoise
from dpfast.tables.run import Columns, Plan, ReleaseKeys

if TYPE_CHECKING:
    import dask.dataframe as dd
    import pandas as pd

    from dpfast.random import RngLike

__all__ = ["Frame", "DaskBackend"]


def _names(by: object) -> list[str]:
    names = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) \
        else None
    if not names or not all(isinstance(k, str) for k in names):
        raise TypeError("key must be a column name or a list of column names")
    return names


@dataclasses.dataclass(frozen=True)
class Frame:
    """A Dask source: the DataFrame and the :class:`~dpfast.tables.run.Columns` it is read
    by (checked when made: :meth:`make`)."""

    ddf: dd.DataFrame
    columns: Columns

    @classmethod
    def make(cls, ddf: dd.DataFrame, key: str | Sequence[str], privacy_id: str | None = None,
             values: str | Sequence[str] = (), domain: object = None) -> Frame:
        """Check the column names against ``ddf`` (ValueError / TypeError naming them)."""
        cols = getattr(ddf, "columns", None)
        if cols is None or not hasattr(ddf, "map_partitions"):
            raise TypeError(f"ddf must be a dask DataFrame, got {type(ddf).__name__}")
        names = _names(key)
        vals = [values] if isinstance(values, str) else list(values or ())
        for label, cs in (("key", names), ("privacy_id", [privacy_id] if privacy_id else []),
                          ("value", vals)):
            for c in cs:
                if not isinstance(c, str):
                    raise TypeError(f"{label} must be a column name (str), got {c!r}")
                if c not in cols:
                    raise ValueError(f"{label} column {c!r} is not in the DataFrame "
                                     f"(columns: {list(cols)})")
        return cls(ddf, Columns(tuple(names), privacy_id, tuple(vals), domain))

    def has_privacy_ids(self) -> bool:
        return self.columns.privacy_unit is not None

    def public_domain(self) -> object:
        return self.columns.domain

    def value_kind(self, column: str | None = None) -> str:
        name = self.columns.values[0] if column is None else column
        dt = self.ddf[name].dtype
        kind = dt.kind if isinstance(dt, np.dtype) else "O"
        if kind not in "iuf":
            raise TypeError(f"value column {name!r} must hold numbers, got dtype "
                            f"{self.ddf[name].dtype}")
        return kind

    def read(self) -> list[str]:
        """The columns a release reads, in order: keys, privacy unit, values."""
        c = self.columns
        return list(c.by) + ([c.privacy_unit] if c.privacy_unit else []) + list(c.values)


def _subkey(src: WorkerSource) -> np.ndarray:
    """The bounding sub-key words (a worker resolves ``(WorkerKey, release id)``)."""
    if isinstance(src, tuple):
        wk, rid = src
        return bounding.subkey(keynoise.keyed_generator(wk.load(), rid))
    return src


def _task(rows: pd.DataFrame | dict[str, np.ndarray], plan: Plan, cols: Columns,
          key_src: WorkerSource) -> tuple[object, int]:
    """One partition's partials (module level: pickled by name into the graph)."""
    return plan.partition_partials(rows, cols, _subkey(key_src))  # type: ignore[attr-defined]


class DaskBackend:
    """Partials on a Dask cluster (see the module docstring).  ``npartitions``: partitions
    after the shuffle by privacy id (default: :func:`dpfast.dask._shuffle.shuffle_partitions`)."""

    def __init__(self, npartitions: int | None = None) -> None:
        if npartitions is not None and (not isinstance(npartitions, int)
                                        or isinstance(npartitions, bool) or npartitions < 1):
            raise ValueError(f"npartitions must be a positive int, got {npartitions!r}")
        self.npartitions = npartitions

    def keys(self, rng: RngLike | WorkerKey) -> ReleaseKeys:
        if isinstance(rng, WorkerKey):
            wid = keynoise.fresh_release_id()
            return ReleaseKeys(keynoise.keyed_generator(rng.load(), wid), wid, (rng, wid))
        gen, rid = keynoise.release_generator(rng)
        return ReleaseKeys(gen, rid, bounding.subkey(gen))

    def partials(self, plan: Plan, source: Frame, keys: ReleaseKeys) -> object:
        import dask

        cols = source.columns
        frame = shuffle.columns_of(source.ddf, source.read())
        parts = frame.to_delayed()
        args = (plan, cols, keys.worker)
        if cols.privacy_unit is None:  # one row, one person: no need to move rows
            outs = [dask.delayed(_task)(p, *args) for p in parts]
        else:  # every id's rows in one output partition (all-to-all)
            names = list(frame.columns)  # compact numpy pieces when every column is numeric
            outs = shuffle.by_id(parts, cols.privacy_unit, _task, args, self.npartitions,
                                 names if shuffle.numeric(frame, names) else None)
        results = dask.compute(*outs)
        return plan.merge(list(results), cols)  # type: ignore[attr-defined]
