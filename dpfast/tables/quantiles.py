"""The spec of a rank statistic (quantile, median, min, max), for callers that build one
from the public parameters: :func:`rank_spec`.

The public functions ``dpfast.tables.quantile / median / min / max`` (and their
``dpfast.dask`` forms) are generated from the registry like every other statistic's
(:mod:`dpfast.tables.facade`; the classes in :mod:`dpfast.tables.statistics.ranks`), and
run the one pipeline, :func:`dpfast.tables.run.release`: plan (grid, per-key ε, event;
data-independent, :mod:`dpfast.tables._ranks`) -> bound (rows kept per person: ``k`` keys,
``c`` rows per key) and aggregate (the sparse ``(key, grid slot)`` table and the number of
people per key) -> charge -> select keys (``domain=None``: the unit-count rules of
:mod:`dpfast.tables._select`) -> sample (:func:`dpfast.tables._quantile_em.sample`) ->
:class:`QuantileRelease`.  :func:`rank_spec` is the registry's
:meth:`~dpfast.tables.statistics.ranks._Rank.make_spec` under its older signature.
"""

from __future__ import annotations

from typing import TypedDict

import numpy.typing as npt

from dpfast.random import RngLike
from dpfast.tables import _ranks
from dpfast.tables import spec as _spec
from dpfast.tables._ranks import zcdp_share
from dpfast.tables.quantile_release import QuantileRelease
from dpfast.tables.statistics import get as _statistic

__all__ = ["QuantileRelease", "RankOptions", "zcdp_share", "rank_spec"]

#: the rank statistics
RANKS = ("quantile", "median", "min", "max")


def rank_spec(stat: str, *, q: npt.ArrayLike, bounds: tuple[float, float] | None,
              epsilon: float, delta: float, max_partitions: int, max_per_partition: int,
              n_candidates: int, candidates: npt.ArrayLike | None, domain: object,
              selection: str, bounding: str, has_ids: bool, by: tuple[str, ...] = (),
              privacy_unit: str | None = None, value: str | None = None
              ) -> _spec.ReleaseSpec:
    """The checked :class:`~dpfast.tables.spec.ReleaseSpec` of a rank statistic
    (``"quantile"`` with ``q``; ``"median"``, ``"min"``, ``"max"``): the registry's
    ``make_spec`` of ``stat`` (:meth:`dpfast.tables.statistics.ranks._Rank.make_spec`).
    ``q``, the contribution bounds and the clamping range (``bounds``, or a public
    ``candidates`` grid) are checked (ValueError / TypeError naming the parameter); the
    grid is in the spec's options.  ``q`` is checked for every statistic and used by
    ``"quantile"`` only (the others fix theirs); ``has_ids`` does not change the spec (the
    contribution bounds are checked whatever it is; the plan reads the source's ids)."""
    del has_ids  # kept in the signature: the spec never depended on it
    if stat not in RANKS:
        raise ValueError(f"stat must be one of {RANKS}, got {stat!r}")
    cls = _statistic(stat)
    params: dict[str, object] = {"n_candidates": n_candidates, "candidates": candidates}
    if stat == "quantile":
        params["q"] = q
    else:  # checked as before, though the statistic fixes its own
        _ranks.quantiles(q)
    return cls.make_spec(column=value, params=params, by=by, privacy_unit=privacy_unit,
                         epsilon=epsilon, delta=delta, max_partitions=max_partitions,
                         max_per_partition=max_per_partition, bounds=bounds, domain=domain,
                         selection=selection, bounding=bounding)


class RankOptions(TypedDict, total=False):
    """The keyword arguments every rank statistic's local function takes besides ``q``
    (``dpfast.tables.median / min / max``: all of theirs; ``quantile``: with ``q``) -- for
    typing a caller's ``**kwargs`` passed on to them.  (The Dask forms take the same, but
    ``dropna``, plus ``npartitions``.)"""

    bounds: tuple[float, float] | None
    epsilon: float
    delta: float
    max_partitions: int
    max_per_partition: int
    n_candidates: int
    candidates: npt.ArrayLike | None
    domain: object
    rng: RngLike
    budget: _spec.Charger | None
    note: str
    dropna: bool
    selection: str
    bounding: str
