"""Per-key counts of distinct values.

:func:`count_distinct` is the release pipeline (:func:`dpfast.tables.run.release`)
with the statistic :class:`dpfast.tables.statistics.distinct.CountDistinct`: each person
bounded to ``max_partitions`` keys and ``max_per_partition`` *distinct* values per key, the
union of the kept (key, value) pairs counted per key, the count noise of
:mod:`dpfast.tables.keynoise`.
"""

from __future__ import annotations

from typing import Any

from dpfast.random import RngLike
from dpfast.tables import run as _run
from dpfast.tables import spec as _spec
from dpfast.tables.release import TableRelease

__all__ = ["count_distinct"]


def count_distinct(values: Any, keys: Any, privacy_ids: Any = None, *,
                   epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                   max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
                   noise: str | None = None, rng: RngLike = None, budget: Any = None,
                   note: str = "", use_case: str | None = None, dropna: bool = False,
                   selection: str = "auto", bounding: str = "uniform"
                   ) -> TableRelease:
    """Release the number of distinct ``values`` per key.

    Parameters
    ----------
    values : array_like or pandas Series
        One value per row (ints, floats, str or bytes; a row with a missing value is dropped,
        as ``COUNT(DISTINCT x)`` ignores NULLs).
    keys, privacy_ids, epsilon, delta, rho, domain, noise, rng, budget, note, use_case, dropna
        As in :func:`dpfast.tables.count`.
    max_partitions, max_per_partition : int
        Per person at most ``k`` keys and, per key, at most ``c`` distinct values (chosen
        uniformly among the person's distinct values there, keyed by their own rows).
    bounding : {"uniform", "frequent"}
        Which keys a person keeps when they have more than ``max_partitions``: chosen
        uniformly, or the ones with the most rows (ties broken uniformly at random).

    Returns
    -------
    TableRelease
        ``statistic == "count_distinct"``; exact confidence intervals around the distinct
        count of the kept (key, value) pairs.

    Privacy
    -------
    Sensitivity: let ``D' = D + P`` (add one person ``P``).  Bounding (either policy) is
    a function of each person's own rows, so
    every other person keeps the same pairs in ``D`` and ``D'``, and ``P`` keeps a set
    ``A`` of at most ``c`` distinct values in each of at most ``k`` keys.  The distinct
    count of a key is the size of the union of the kept values there; adding ``A``'s
    values raises it by at most ``|A ∩ key| <= c`` and never lowers it, and only ``P``'s
    ``<= k`` keys change: ``Δ1 = k c``, ``Δ∞ = c``, ``Δ2 = sqrt(k) c`` under add/remove one
    person.  Discrete Laplace noise of scale ``k c / ε`` is ``ε``-DP, discrete Gaussian of
    ``σ`` is ``k c² / (2σ²)``-zCDP (CKS20).  With ``domain=None`` a key is published iff
    the key-selection rule of ``selection=`` (:func:`dpfast.tables.count`) keeps it, a
    separate measurement on the number of people holding the key after bounding
    (sensitivity ``k``, half of ε, δ): ``(ε, δ)``-DP (Desfontaines et al. 2022; Gopi et
    al. 2020).  Tumult Analytics' ``count_distinct`` with per-person bounds.
    """
    if not isinstance(dropna, bool):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    # the NULL policy (whatever dropna): rows with a missing key, id or value leave first
    # (COUNT(DISTINCT x) ignores NULLs), in the plan's partials step
    spec = _spec.ReleaseSpec.make(
        [_spec.StatSpec("count_distinct")], epsilon=epsilon, delta=delta, rho=rho,
        noise=noise, max_partitions=max_partitions, max_per_partition=max_per_partition,
        domain=domain, selection=selection, bounding=bounding)
    return _run.release(spec, _run.Rows(keys, privacy_ids, values, domain=domain),
                        budget=budget, note=note, rng=rng, use_case=use_case)
