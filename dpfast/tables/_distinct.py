"""Per-key counts of people and of distinct values.

:func:`privacy_id_count` is the many-metric pipeline (:mod:`dpfast.tables.multi`) with
one metric.  :func:`count_distinct` is the release pipeline (:func:`dpfast.tables.run.release`)
with the statistic :class:`dpfast.tables.statistics.distinct.CountDistinct`: each person
bounded to ``max_partitions`` keys and ``max_per_partition`` *distinct* values per key, the
union of the kept (key, value) pairs counted per key, the count noise of
:mod:`dpfast.tables.keynoise`.
"""

from __future__ import annotations

from typing import Any

from dpfast.random import RngLike
from dpfast.tables import multi
from dpfast.tables import run as _run
from dpfast.tables import spec as _spec
from dpfast.tables.release import TableRelease

__all__ = ["privacy_id_count", "count_distinct"]


def privacy_id_count(keys: Any, privacy_ids: Any = None, *, epsilon: float | None = None,
                     delta: float = 0.0, rho: float | None = None, max_partitions: int = 1,
                     domain: Any = None, noise: str | None = None, rng: RngLike = None,
                     budget: Any = None, note: str = "", use_case: str | None = None,
                     dropna: bool = False, selection: str = "auto",
                     bounding: str = "uniform") -> TableRelease:
    """Release the number of distinct privacy ids (people) per key.

    Parameters are those of :func:`dpfast.tables.count` without ``max_per_partition``
    (a person counts once per key whatever their number of rows); ``bounding="frequent"``
    keeps each person's ``max_partitions`` keys with the most rows.  ``privacy_ids=None``:
    every row is a different person (the row count).

    ``bounding="l2"`` (Gaussian noise: ``delta > 0`` with ``epsilon``, or ``rho``): no
    person loses a key; a person with ``t`` distinct keys counts ``min(1, sqrt(k / t))``
    in each of them (on the grid ``2**-16``, :mod:`dpfast.tables._ids_l2`), so the L2
    sensitivity is that of ``k`` keys counted once while the undercount of people with
    more than ``k`` keys (the bias of the other policies, which no noise level removes)
    shrinks from ``t - k`` to ``t - sqrt(k t)``.  Values are then floats (multiples of
    ``2**-16``).  ``domain=None``: the keys are selected on their own ``k``-key bounded
    unit counts (half of ε and δ).  :func:`dpfast.dask.privacy_id_count` takes it too.

    Returns
    -------
    TableRelease
        ``statistic == "privacy_id_count"``; exact confidence intervals of the noise law.

    Privacy
    -------
    Each person keeps at most ``k = max_partitions`` keys (chosen uniformly, or their
    most frequent ones, keyed by their own rows only: so for either policy) and adds 1
    to each: ``Δ1 = k``, ``Δ2 = sqrt(k)`` under add/remove one
    person (all their rows).  Discrete Laplace noise of scale ``k / ε`` is ``ε``-DP,
    discrete Gaussian of ``σ`` is ``k / (2σ²)``-zCDP (CKS20).  With ``domain=None`` a key is
    published iff the key-selection rule of ``selection=`` (:func:`dpfast.tables.count`) keeps it, a
    separate measurement on the number of people holding the key after bounding
    (sensitivity ``k``) with the share of one more metric of ε (and δ, rounded up to its
    exact value): ``(ε, δ)``-DP (Wilson et al. 2020; Desfontaines et al.
    2022; Gopi et al. 2020).  PipelineDP's ``PRIVACY_ID_COUNT``.

    ``bounding="l2"``: the person's vector of added weights ``W(t) = floor(2**16
    min(1, sqrt(k / t)))`` over their ``t`` keys has ``t W(t)**2 <= k 4**16`` exactly, so
    ``Δ2 = sqrt(k)`` (grid units ``sqrt(k) 2**16``) under add/remove one person, whatever
    ``t``; exact discrete Gaussian noise of ``σ 2**16`` is ``k / (2σ²)``-zCDP (CKS20,
    Thm. 14), ``(ε, δ)``-DP through the largest ``ρ`` implying it (CKS20, Cor. 13).  The
    ``1/sqrt(t)`` weights that bound a person's L2 norm whatever their number of keys are
    Gopi et al. 2020's (weighted Gaussian policy), here applied to the released counts
    rather than to the selection.  With ``domain=None`` the key selection is
    ``(ε/2, δ_sel)``, the counts ``(ε/2, δ/2)``: basic composition.
    """
    if not isinstance(dropna, bool):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if bounding == "l2":
        from dpfast.tables import _ids_l2  # lazy: _ids_l2 imports groupby like this module

        return _ids_l2.run(keys, privacy_ids, epsilon=epsilon, delta=delta, rho=rho,
                           max_partitions=max_partitions, domain=domain, noise=noise, rng=rng,
                           budget=budget, note=note, use_case=use_case, selection=selection)
    rel = multi.run({"privacy_id_count": "privacy_id_count"}, keys, privacy_ids, {}, {},
                    weights=None, epsilon=epsilon, delta=delta, rho=rho,
                    max_partitions=max_partitions, max_per_partition=1, domain=domain,
                    noise=noise, rng=rng, budget=budget, note=note, use_case=use_case,
                    selection=selection, bounding_policy=bounding)
    return rel.metrics["privacy_id_count"]


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
