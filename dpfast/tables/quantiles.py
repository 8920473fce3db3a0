"""Per-key quantile, median, min and max releases (exponential mechanism on a public grid).

Each function turns its arguments into a :class:`~dpfast.tables.spec.ReleaseSpec`
(statistic ``quantile`` with its ``q``, or ``median`` / ``min`` / ``max``; the grid in the
spec's options) and runs the one pipeline, :func:`dpfast.tables.run.release`: plan (grid,
per-key ε, event; data-independent, :mod:`dpfast.tables._ranks`) -> bound (rows kept per
person: ``k`` keys, ``c`` rows per key) and aggregate (the sparse ``(key, grid slot)``
table and the number of people per key) -> charge -> select keys (``domain=None``: the
unit-count rules of :mod:`dpfast.tables._select`) -> sample
(:func:`dpfast.tables._quantile_em.sample`) -> :class:`QuantileRelease`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict, cast

import numpy as np
import numpy.typing as npt

from dpfast.random import RngLike
from dpfast.tables import _inputs, _keys, _ranks
from dpfast.tables import _quantile_em as _em
from dpfast.tables import run as _run
from dpfast.tables import spec as _spec
from dpfast.tables._ranks import zcdp_share
from dpfast.tables.quantile_release import QuantileRelease

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["quantile", "median", "min", "max", "QuantileRelease", "zcdp_share", "rank_spec"]


def rank_spec(stat: str, *, q: npt.ArrayLike, bounds: tuple[float, float] | None,
              epsilon: float, delta: float, max_partitions: int, max_per_partition: int,
              n_candidates: int, candidates: npt.ArrayLike | None, domain: object,
              selection: str, bounding: str, has_ids: bool, by: tuple[str, ...] = (),
              privacy_unit: str | None = None, value: str | None = None
              ) -> _spec.ReleaseSpec:
    """The checked :class:`~dpfast.tables.spec.ReleaseSpec` of a rank statistic
    (``"quantile"`` with ``q``; ``"median"``, ``"min"``, ``"max"``), shared by
    :mod:`dpfast.dask.quantiles`: ``q``, the contribution bounds and the clamping range
    (``bounds``, or a public ``candidates`` grid) are checked here (ValueError /
    TypeError naming the parameter); the grid is in the spec's options."""
    qs, scalar = _ranks.quantiles(q)
    _ranks.common(max_partitions, max_per_partition, has_ids)
    clamp = _ranks.grid_bounds(bounds, candidates)
    _inputs._bounds(clamp, False)  # a pair of finite reals, lo <= hi (named)
    options: dict[str, object] = {"float_grid": _ranks.float_grid(clamp)}
    if candidates is None:
        options["n_candidates"] = _em._count_arg(n_candidates, "n_candidates")
    else:  # the validated public grid
        options["candidates"] = _em.grid(None, 1, candidates, False)
    params = () if stat != "quantile" else (("q", qs[0] if scalar else qs),)
    return _spec.ReleaseSpec.make(
        [_spec.StatSpec(stat, value, params)], by=by, privacy_unit=privacy_unit,
        epsilon=epsilon, delta=delta, max_partitions=max_partitions,
        max_per_partition=max_per_partition, bounds=bounds, domain=domain,
        selection=selection, bounding=bounding, options=options)


class RankOptions(TypedDict, total=False):
    """The keyword arguments :func:`median`, :func:`min` and :func:`max` pass on to
    :func:`quantile` (all but ``q``)."""

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


def _release(stat: str, values: npt.ArrayLike, keys: _keys.KeyColumns,
             privacy_ids: npt.ArrayLike | None = None, *,
             q: npt.ArrayLike, bounds: tuple[float, float] | None = None, epsilon: float,
             delta: float = 0.0, max_partitions: int = 1, max_per_partition: int = 1,
             n_candidates: int = 256, candidates: npt.ArrayLike | None = None,
             domain: object = None, rng: RngLike = None,
             budget: _spec.Charger | None = None,
             note: str = "", dropna: bool = False, selection: str = "auto",
             bounding: str = "uniform") -> QuantileRelease:
    """A rank statistic's call (public checks first) through the pipeline."""
    if not isinstance(dropna, (bool, np.bool_)):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if values is None:
        raise TypeError("values must be an array of numbers, got None")
    # the NULL policy (whatever dropna): rows with a missing key, id or value leave first
    kept, ids, (vals,) = _keys.drop_nulls(keys, privacy_ids, values)
    _spec.check_charger(budget, note)
    spec = rank_spec(stat, q=q, bounds=bounds, epsilon=epsilon, delta=delta,
                     max_partitions=max_partitions, max_per_partition=max_per_partition,
                     n_candidates=n_candidates, candidates=candidates, domain=domain,
                     selection=selection, bounding=bounding,
                     has_ids=ids is not None)
    # (the ids' and values' rows without the NULL ones: still array-likes)
    rows = _run.Rows(kept, cast("npt.ArrayLike | None", ids), cast("npt.ArrayLike", vals),
                     domain=domain)
    out: QuantileRelease = _run.release(spec, rows, budget=budget, note=note, rng=rng)
    return out


def quantile(values: npt.ArrayLike, keys: _keys.KeyColumns,
             privacy_ids: npt.ArrayLike | None = None, *, q: npt.ArrayLike,
             bounds: tuple[float, float] | None = None, epsilon: float,
             delta: float = 0.0, max_partitions: int = 1, max_per_partition: int = 1,
             n_candidates: int = 256, candidates: npt.ArrayLike | None = None,
             domain: object = None, rng: RngLike = None,
             budget: _spec.Charger | None = None, note: str = "",
             dropna: bool = False, selection: str = "auto", bounding: str = "uniform"
             ) -> QuantileRelease:
    """Release the ``q``-quantile(s) of ``values`` per key (exponential mechanism).

    Parameters
    ----------
    values : array_like
        One number per row (clamped to the grid's range).
    keys, privacy_ids, max_partitions, max_per_partition, domain, rng, budget, note, dropna
        As in :func:`dpfast.tables.count`.
    selection : {"auto", "geometric", "gaussian", "weighted_gaussian", "laplace"}
        The key-selection rule on the number of people per key (``domain=None``), as in
        :func:`dpfast.tables.count`.
    bounding : {"uniform", "frequent"}
        Which keys a person keeps when they have more than ``max_partitions``: chosen
        uniformly, or the ones with the most rows (ties broken uniformly at random), as in
        :func:`dpfast.tables.count`; ``max_per_partition`` rows per kept key uniformly.
    q : float or sequence of float
        Quantile(s) in ``[0, 1]``; several quantiles split ε evenly.
    bounds : (lo, hi)
        The public range: the grid is ``n_candidates`` evenly spaced points of it
        (integer values: the distinct nearest integers).  Not with ``candidates``.
    epsilon, delta : float
        ``epsilon``-DP with a public ``domain`` and ``delta=0``; ``(epsilon, delta)``-DP with
        ``domain=None`` (half of ε selects the keys, see Privacy), or with a public domain
        and ``delta > 0`` (then each mechanism's ε comes from zCDP composition when that
        gives more than ``ε / (k len(q))``, see Privacy).
    n_candidates : int
        Grid size (1 to 2**16, default 256).  More points: finer values, slightly larger
        rank error (``ln m``).
    candidates : array_like, optional
        A public grid (strictly increasing) instead of ``bounds`` / ``n_candidates``.

    Returns
    -------
    QuantileRelease
        ``.keys``, ``.values`` (one per key; ``(keys, len(q))`` for several quantiles),
        ``.event``, ``.rank_error(alpha)``, ``.accuracy(alpha)``, ``.to_pandas()``.

    Raises
    ------
    ValueError, TypeError
        Bad input (named): ``q`` outside ``[0, 1]``, a bad grid, bad privacy parameters...

    Privacy
    -------
    Neighbouring datasets: add/remove one person (all rows of one privacy id; one row with
    ``privacy_ids=None``).  After bounding (at most ``k`` keys and ``c`` rows per key per
    person, chosen by the person's own keyed stream under either ``bounding`` policy: a
    function of that person's rows only, so the sensitivity below holds for both), each
    (key, quantile) runs the exponential mechanism over the public grid
    ``g_0 < ... < g_{m-1}`` with a rank utility of ``a_p = #{x < g_p}``,
    ``b_p = #{x <= g_p}`` and ``n`` (the key's kept rows).  ``q = num / den`` exactly with
    ``den <= 2**16`` (0, 1/2, 1/4, 3/4, 1/8...: min, max, median, quartiles):
    ``u(g_p) = -max(den a_p - num n, num n - den b_p, 0)`` (``-den`` times the distance of
    the rank ``q n`` to ``[a_p, b_p]``; OpenDP's quantile score where ``a_p = b_p``); one
    row added or removed moves both terms by at most ``S = max(num, den - num)`` (below
    ``g_p``: ``±(den - num)``; at ``g_p``: ``-num``, ``num - den``; above: ``∓num``, ``±num``),
    so ``Δu = S c``.  Any other ``q``: Smith's ``u(g_p) = -max(a_p - t, t - b_p, 0)``,
    ``t = floor(q n)``, ``Δu = c``.  ``P(g_p) ∝ exp(ε_q u(g_p) / (2 Δu))`` is ``ε_q``-DP
    (McSherry & Talwar 2007; the quantile utility of Smith 2011 on a finite grid, as
    Gillenwater, Joseph, Kulesza 2021).  A rank step is worth ``den`` (1 for Smith's)
    against ``Δu``: for the median twice the resolution of Smith's utility at the same ε.
    ``ε_q = ε / (k · len(q))`` (rounded down): a person touches at most ``k`` keys,
    keys they do not touch are unchanged (parallel composition), so the release is
    ``ε``-DP by basic composition; event ``SelfComposed(Exponential(ε_q), k · len(q))``
    (also ``k len(q) ε_q² / 8``-zCDP, bounded range).  With a public domain and
    ``delta > 0``, ``ε_q`` is the larger of that and :func:`zcdp_share`: the largest ``ε_q``
    whose ``ρ = k len(q) ε_q² / 8`` converts to at most ``(ε, δ)`` (Durfee & Rogers 2019;
    Cesar & Rogers 2021; Bun & Steinke 2016); the event is then ``EpsilonDelta(ε, δ)``.
    ``domain=None``: a key is released
    iff the selection rule of :mod:`dpfast.tables._select` (``selection=``) keeps it, on
    the number of people holding it after bounding (sensitivity ``k``, whatever ``c``;
    ``(ε/2, δ_sel)``-DP, ``δ_sel <= δ`` its exact δ; Desfontaines et al. 2022, Gopi et al.
    2020); the quantiles get the other ``ε/2``; ``(ε, δ_sel)``-DP in all (event
    ``EpsilonDelta``).

    Numerics
    --------
    Integer utilities (exact ``num``, ``den``, ``t`` of the exact ``q``; capped at ``2**53``,
    exact in float64; a key with more than ``2**46`` rows raises OverflowError), exact
    Gumbel-max sampling (:func:`dpfast.exponential`: no candidate's probability is rounded
    to 0), per-key addressed randomness (:mod:`dpfast.tables._quantile_em`).  Min/max are
    rank statements: with no data between ``lo`` and the minimum, ``q = 0`` is uniform
    over the grid points below the minimum (every one of them has rank 0).

    References
    ----------
    F. McSherry, K. Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.
    A. Smith, "Privacy-preserving statistical estimation with optimal convergence rates",
    STOC 2011.  J. Gillenwater, M. Joseph, A. Kulesza, "Differentially Private
    Quantiles", ICML 2021.
    """
    return _release("quantile", values, keys, privacy_ids, q=q, bounds=bounds,
                    epsilon=epsilon, delta=delta, max_partitions=max_partitions,
                    max_per_partition=max_per_partition, n_candidates=n_candidates,
                    candidates=candidates, domain=domain, rng=rng, budget=budget, note=note,
                    dropna=dropna, selection=selection, bounding=bounding)


def median(values: npt.ArrayLike, keys: _keys.KeyColumns,
           privacy_ids: npt.ArrayLike | None = None,
           **kwargs: Unpack[RankOptions]
           ) -> QuantileRelease:
    """Release the median of ``values`` per key: :func:`quantile` with ``q = 0.5``.

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person, exponential mechanism with
    the rank utility ``u(g) = -max(2 #{x < g} - n, n - 2 #{x <= g}, 0)``, ``Δu = c``;
    McSherry & Talwar 2007, Smith 2011).
    """
    return _release("median", values, keys, privacy_ids, q=0.5, **kwargs)


def min(values: npt.ArrayLike, keys: _keys.KeyColumns,  # noqa: A001
        privacy_ids: npt.ArrayLike | None = None,
        **kwargs: Unpack[RankOptions]
        ) -> QuantileRelease:
    """Release the minimum of ``values`` per key: :func:`quantile` with ``q = 0``.

    The release is a grid point of rank 0 up to the rank error (no more than
    ``rank_error(alpha)`` rows below it, with probability ``1 - alpha``); where the grid
    has several points below the minimum, it is uniform over them (they all have rank 0).

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person; McSherry & Talwar 2007).
    """
    return _release("min", values, keys, privacy_ids, q=0.0, **kwargs)


def max(values: npt.ArrayLike, keys: _keys.KeyColumns,  # noqa: A001
        privacy_ids: npt.ArrayLike | None = None,
        **kwargs: Unpack[RankOptions]
        ) -> QuantileRelease:
    """Release the maximum of ``values`` per key: :func:`quantile` with ``q = 1``.

    The mirror of :func:`min`: no more than ``rank_error(alpha)`` rows above the released
    grid point, with probability ``1 - alpha``.

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person; McSherry & Talwar 2007).
    """
    return _release("max", values, keys, privacy_ids, q=1.0, **kwargs)
