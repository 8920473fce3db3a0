"""Per-key variance and standard deviation of bounded values.

Both are the many-metric plan (:mod:`dpfast.tables.multi`) with one metric, run by
:func:`dpfast.tables.run.release`: the noisy
count ``N``, the noisy centred sum ``S1 = Σ (2x - lo - hi)`` and the noisy centred sum of
squares ``S2 = Σ (x - mid)²`` (``mid = (lo + hi)/2``), all over the same kept rows, each
at a third of the budget, finished as ``S2/N' - (S1/2N')²`` clipped to
``[0, ((hi - lo)/2)²]`` (``N' = max(N, 1)``), as PipelineDP's ``VARIANCE`` and
diffprivlib's ``var`` compute it.
"""

from __future__ import annotations

from typing import Any

from dpfast.random import RngLike
from dpfast.tables import run as _run
from dpfast.tables.release import TableRelease
from dpfast.tables.spec import ReleaseSpec, StatSpec

__all__ = ["variance", "std"]


def _one(kind: str, values: Any, keys: Any, privacy_ids: Any, bounds: Any, dropna: Any,
         bounding: Any, *, epsilon: Any, delta: Any, rho: Any, max_partitions: Any,
         max_per_partition: Any, domain: Any, noise: Any, rng: Any, budget: Any, note: Any,
         use_case: str | None, selection: Any) -> TableRelease:
    if not isinstance(dropna, bool):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if values is None:
        raise TypeError("values must be given (one number per row)")
    if not isinstance(bounds, (tuple, list)):  # checked against the values' dtype later
        raise TypeError("bounds for column 'values': bounds must be a pair (lo, hi)")
    spec = ReleaseSpec.make([StatSpec(kind)], epsilon=epsilon, delta=delta, rho=rho,
                            noise=noise, max_partitions=max_partitions,
                            max_per_partition=max_per_partition, bounds=bounds,
                            domain=domain, selection=selection, bounding=bounding)
    return _run.release(spec, _run.Rows(keys, privacy_ids, values, domain=domain),
                        budget=budget, note=note, rng=rng, use_case=use_case)


_PRIVACY = """
    Privacy
    -------
    Three parts, each at ``ε/3`` (or ``ρ/3``), over the rows kept by one contribution
    bounding (at most ``k = max_partitions`` keys and ``c = max_per_partition`` rows per key
    per person; either ``bounding`` policy, a function of the person's own rows only):
    the count (``Δ1 = k c``), the centred sum (``Δ1 = k c (hi - lo)``) and the
    centred sum of squares (``Δ1 = k c ((hi - lo)/2)²``); ``Δ2``: ``sqrt(k)`` instead of
    ``k``.  Neighbouring relation: add/remove one person (all their rows).  Basic
    composition gives ``ε``-DP (discrete / grid Laplace, CKS20; float sums exact in fixed
    point, Casacuberta et al. CCS 2022) or ``ρ``-zCDP (discrete Gaussian); with
    ``domain=None`` the keys are selected by a separate measurement on the number of people
    per key (``selection=``, :func:`dpfast.tables.count`; Desfontaines et al. 2022, Gopi et
    al. 2020) at the share of one more part, ``(ε, δ)``-DP.  The estimate is
    post-processing (the construction of PipelineDP's ``VARIANCE``; Wilson et al. 2020,
    Sec. 4).
"""


def variance(values: Any, keys: Any, privacy_ids: Any = None, *,
             bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
             rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
             domain: Any = None, noise: str | None = None, rng: RngLike = None,
             budget: Any = None, note: str = "", use_case: str | None = None,
             dropna: bool = False, selection: str = "auto", bounding: str = "uniform"
             ) -> TableRelease:
    """Release the (population) variance of ``values`` per key, values clamped to
    ``bounds``.

    Parameters are those of :func:`dpfast.tables.mean` (``bounding="frequent"``: each
    person keeps their ``max_partitions`` keys with the most rows).

    Returns
    -------
    TableRelease
        ``values``: the variance estimates in ``[0, ((hi - lo)/2)²]``.  Confidence
        intervals (:meth:`~dpfast.tables.TableRelease.confidence_interval`) are
        conservative: each of the three noisy parts within its exact half-width at level
        ``alpha / 3`` (a union bound), the formula ``M2/n - (M1/n)²`` minimised and
        maximised over that box (``n >= 1``), clipped to ``[0, ((hi - lo)/2)²]``; they cover
        the formula on the exact aggregates of the kept rows (for floats: the values on
        each part's fixed-point grid) with probability ``>= 1 - alpha``.
{privacy}
    """
    return _one("variance", values, keys, privacy_ids, bounds, dropna, bounding,
                epsilon=epsilon,
                delta=delta, rho=rho, max_partitions=max_partitions,
                max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                budget=budget, note=note, use_case=use_case, selection=selection)


def std(values: Any, keys: Any, privacy_ids: Any = None, *, bounds: tuple[float, float],
        epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
        max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
        noise: str | None = None, rng: RngLike = None, budget: Any = None, note: str = "",
        use_case: str | None = None, dropna: bool = False, selection: str = "auto",
        bounding: str = "uniform") -> TableRelease:
    """Release the (population) standard deviation of ``values`` per key: the square root
    of :func:`variance` (post-processing; its intervals are the square roots of the
    variance's).

    Parameters are those of :func:`variance`.
{privacy}
    """
    return _one("std", values, keys, privacy_ids, bounds, dropna, bounding,
                epsilon=epsilon,
                delta=delta, rho=rho, max_partitions=max_partitions,
                max_per_partition=max_per_partition, domain=domain, noise=noise, rng=rng,
                budget=budget, note=note, use_case=use_case, selection=selection)


variance.__doc__ = (variance.__doc__ or "").replace("{privacy}", _PRIVACY.strip("\n"))
std.__doc__ = (std.__doc__ or "").replace("{privacy}", _PRIVACY.strip("\n"))
