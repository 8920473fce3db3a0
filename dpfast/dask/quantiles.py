"""Per-key quantile / median / min / max releases of dask DataFrames.

Each function builds the spec of :func:`dpfast.tables.quantiles.rank_spec` over a
:class:`~dpfast.dask.backend.Frame` and runs the one pipeline
(:func:`dpfast.tables.run.release`) with the :class:`~dpfast.dask.backend.DaskBackend`:
rows are hash-partitioned by privacy id, each partition validates, bounds per id and
builds its sparse ``(key, grid slot) -> rows`` table (the plan's
``partition_partials``), the driver sums the partial tables (its ``merge``: a count table
is all the rank utility needs) -- all before the charge -- then charges and runs the
per-key addressed exponential mechanisms.  The release equals
:func:`dpfast.tables.quantile` on the same rows with the same release generator, bit for
bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

import numpy.typing as npt

from dpfast.dask.backend import DaskBackend, Frame
from dpfast.tables import run as _run
from dpfast.tables import spec as _spec
from dpfast.tables.quantiles import QuantileRelease, rank_spec

if TYPE_CHECKING:
    import dask.dataframe as dd
    from typing_extensions import Unpack

    from dpfast.dask.keys import WorkerKey
    from dpfast.random import RngLike
    from dpfast.tables.spec import Charger

__all__ = ["quantile", "median", "min", "max"]


def _release(stat: str, ddf: dd.DataFrame, key: str | list[str], value: str,
             privacy_id: str | None = None, *, q: npt.ArrayLike,
             bounds: tuple[float, float] | None = None, epsilon: float, delta: float = 0.0,
             max_partitions: int = 1, max_per_partition: int = 1, n_candidates: int = 256,
             candidates: npt.ArrayLike | None = None, domain: object = None,
             rng: RngLike | WorkerKey = None, budget: Charger | None = None, note: str = "",
             npartitions: int | None = None, selection: str = "auto",
             bounding: str = "uniform") -> QuantileRelease:
    """The spec and the source of a rank statistic, through the one pipeline."""
    frame = Frame.make(ddf, key, privacy_id, [value], domain)
    _spec.check_charger(budget, note)
    back = DaskBackend(npartitions)
    spec = rank_spec(stat, q=q, bounds=bounds, epsilon=epsilon, delta=delta,
                     max_partitions=max_partitions, max_per_partition=max_per_partition,
                     n_candidates=n_candidates, candidates=candidates, domain=domain,
                     selection=selection, bounding=bounding,
                     has_ids=privacy_id is not None, by=frame.columns.by,
                     privacy_unit=privacy_id, value=value)
    out: QuantileRelease = _run.release(spec, frame, backend=back, budget=budget, note=note,
                                        rng=rng)
    return out


class _RankOptions(TypedDict, total=False):
    """The keyword options of :func:`median`, :func:`min` and :func:`max` (those of
    :func:`quantile` but ``q``)."""

    bounds: tuple[float, float] | None
    epsilon: float
    delta: float
    max_partitions: int
    max_per_partition: int
    n_candidates: int
    candidates: npt.ArrayLike | None
    domain: object
    rng: RngLike | WorkerKey
    budget: Charger | None
    note: str
    npartitions: int | None
    selection: str
    bounding: str


def quantile(ddf: dd.DataFrame, key: str | list[str], value: str,
             privacy_id: str | None = None, *, q: npt.ArrayLike,
             bounds: tuple[float, float] | None = None, epsilon: float,
             delta: float = 0.0, max_partitions: int = 1, max_per_partition: int = 1,
             n_candidates: int = 256, candidates: npt.ArrayLike | None = None,
             domain: object = None, rng: RngLike | WorkerKey = None,
             budget: Charger | None = None, note: str = "",
             npartitions: int | None = None, selection: str = "auto",
             bounding: str = "uniform") -> QuantileRelease:
    """Release the ``q``-quantile(s) of the ``value`` column per key of a dask DataFrame.

    Parameters as in :func:`dpfast.tables.quantile` (columns by name, as in
    :func:`dpfast.dask.sum`; ``rng`` may be a :class:`~dpfast.dask.WorkerKey`; ``bounding``
    the bounding policy, ``"uniform"`` or ``"frequent"``); ``npartitions`` as in
    :func:`dpfast.dask.count`.

    Returns
    -------
    dpfast.tables.QuantileRelease
        Equal, bit for bit, to :func:`dpfast.tables.quantile` on the same rows with the
        same key.

    Privacy
    -------
    That of :func:`dpfast.tables.quantile`: per (key, quantile) the exponential mechanism
    with the rank utility (``Δu = max(num, den - num) c`` for ``q = num / den``,
    ``den <= 2**16``, else ``c``; ``ε_q = ε / (k len(q))``; McSherry & Talwar 2007,
    Smith 2011), add/remove one person; each person is bounded where all their rows are,
    by a function of their own rows only (either policy); the budget is charged once, on
    the driver, after the partials are computed (a failure of the inputs charges nothing).
    """
    return _release("quantile", ddf, key, value, privacy_id, q=q, bounds=bounds,
                    epsilon=epsilon, delta=delta, max_partitions=max_partitions,
                    max_per_partition=max_per_partition, n_candidates=n_candidates,
                    candidates=candidates, domain=domain, rng=rng, budget=budget, note=note,
                    npartitions=npartitions, selection=selection, bounding=bounding)


def median(ddf: dd.DataFrame, key: str | list[str], value: str, privacy_id: str | None = None,
           **kwargs: Unpack[_RankOptions]) -> QuantileRelease:
    """:func:`quantile` with ``q = 0.5`` (Privacy: that of :func:`dpfast.tables.median`)."""
    return _release("median", ddf, key, value, privacy_id, q=0.5, **kwargs)


def min(ddf: dd.DataFrame, key: str | list[str], value: str,  # noqa: A001
        privacy_id: str | None = None, **kwargs: Unpack[_RankOptions]) -> QuantileRelease:
    """:func:`quantile` with ``q = 0`` (Privacy: that of :func:`dpfast.tables.min`)."""
    return _release("min", ddf, key, value, privacy_id, q=0.0, **kwargs)


def max(ddf: dd.DataFrame, key: str | list[str], value: str,  # noqa: A001
        privacy_id: str | None = None, **kwargs: Unpack[_RankOptions]) -> QuantileRelease:
    """:func:`quantile` with ``q = 1`` (Privacy: that of :func:`dpfast.tables.max`)."""
    return _release("max", ddf, key, value, privacy_id, q=1.0, **kwargs)

