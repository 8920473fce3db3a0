"""Rank statistics: ``quantile``, ``median``, ``min`` and ``max`` per key (exponential
mechanism on a public grid; :mod:`dpfast.tables._ranks` plans them).

Their public functions (``dpfast.tables.quantile``, ``dpfast.dask.median``, ...) are
generated from these classes like every other statistic's
(:mod:`dpfast.tables.facade`).  Their own parameters are ``q`` (the quantile only) and the
candidate grid (``n_candidates``, or a public ``candidates`` grid instead of ``bounds``):
:meth:`_Rank.make_spec` puts ``q`` in the statistic's parameters and the grid in the spec's
``options``, where the plan reads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, cast

from dpfast.tables import _inputs, _ranks
from dpfast.tables import _quantile_em as _em
from dpfast.tables.statistics.base import REQUIRED, Statistic

if TYPE_CHECKING:
    import numpy.typing as npt

    from dpfast.tables.run import Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["Quantile", "Median", "Min", "Max"]

#: the candidate grid's parameters, every rank statistic's own (after ``q``)
_GRID: Mapping[str, object] = {"n_candidates": 256, "candidates": None}


class _Rank(Statistic):
    """A rank statistic: pure ε-DP (no Gaussian noise), a value column clamped to public
    bounds (or a public candidate grid)."""

    value: ClassVar[bool] = True
    bounds: ClassVar[bool] = True
    gaussian: ClassVar[bool] = False
    # what the public functions take (pure ε-DP: no rho, noise or use_case) and return
    common: ClassVar[tuple[str, ...]] = (
        "epsilon", "delta", "max_partitions", "max_per_partition", "domain", "rng", "budget",
        "note", "dropna", "selection", "bounding")
    returns: ClassVar[str] = "QuantileRelease"
    bounds_default: ClassVar[object] = None  # optional: a public candidate grid instead
    params: ClassVar[Mapping[str, object]] = _GRID
    param_types: ClassVar[Mapping[str, str | type]] = {
        "q": "npt.ArrayLike", "n_candidates": "int", "candidates": "npt.ArrayLike | None"}
    param_help: ClassVar[Mapping[str, str]] = {
        "q": "the quantile(s) in [0, 1]: 0.9, or a list [0.25, 0.75] (they split epsilon)",
        "n_candidates": "points of the candidate grid, evenly spaced over --bounds "
                        "(1 to 65536)",
        "candidates": "a public, strictly increasing candidate grid such as [0, 10, 50] "
                      "instead of --bounds",
    }

    @classmethod
    def make_spec(cls, *, column: str | None = None, params: Mapping[str, object] | None = None,
                  **release: Any) -> ReleaseSpec:
        """The checked spec of one rank release (ValueError / TypeError naming the
        parameter, in this order: ``q``, the contribution bounds, the clamping range --
        ``bounds``, or a public ``candidates`` grid --, ``n_candidates``, the privacy
        target): ``q`` in the statistic's parameters (the quantile only; a scalar stays a
        scalar), the grid in the spec's options (``float_grid``: integer values are ranked
        as floats on a fractional range; ``n_candidates``, or the validated
        ``candidates``).  Exactly the spec :func:`dpfast.tables.quantiles.rank_spec` made
        before the registry did."""
        from dpfast.tables import spec as _spec  # lazy, as the base class's

        own = dict(_GRID if cls.name != "quantile" else {"q": REQUIRED, **_GRID})
        given = {} if params is None else dict(params)
        unknown = sorted(set(given) - set(own))
        if unknown:
            raise TypeError(f"{cls.name} takes no parameter {', '.join(unknown)}")
        own.update(given)
        if own.get("q", None) is REQUIRED:
            raise TypeError(f"{cls.name} needs its parameter q (the quantile(s) in [0, 1])")
        if release.get("rho") is not None or release.get("noise") is not None:
            raise ValueError(f"{cls.name} is pure epsilon-DP (the exponential mechanism): "
                             "it takes epsilon, not rho or noise")
        if release.get("options"):
            raise TypeError(f"{cls.name} makes its spec's options from its parameters")
        release.pop("options", None)
        qs, scalar = _ranks.quantiles(cast("npt.ArrayLike",
                                           own.get("q", _ranks.FIXED_Q.get(cls.name))))
        _ranks.common(release.get("max_partitions", 1), release.get("max_per_partition", 1),
                      True)
        bounds, candidates = release.get("bounds"), own["candidates"]
        clamp = _ranks.grid_bounds(bounds, candidates)
        _inputs._bounds(clamp, False)  # a pair of finite reals, lo <= hi (named)
        options: dict[str, object] = {"float_grid": _ranks.float_grid(clamp)}
        if candidates is None:
            options["n_candidates"] = _em._count_arg(own["n_candidates"], "n_candidates")
        else:  # the validated public grid
            options["candidates"] = _em.grid(None, 1, candidates, False)
        stat_params = () if cls.name != "quantile" else (("q", qs[0] if scalar else qs),)
        return _spec.ReleaseSpec.make([_spec.StatSpec(cls.name, column, stat_params)],
                                      options=options, **release)

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> _ranks.Plan:
        return _ranks.plan_of(spec, source)


class Quantile(_Rank):
    """The ``q``-quantile(s) of the values per key."""

    name = "quantile"
    sql_names = ("quantile", "percentile_cont", "percentile_disc", "approx_quantile")
    params = {"q": REQUIRED, **_GRID}
    example = {"q": 0.5}
    summary = "q-quantile(s) of a value column per key"
    doc = """Release the ``q``-quantile(s) of ``values`` per key (exponential mechanism).

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
    ``delta > 0``, ``ε_q`` is the larger of that and
    :func:`~dpfast.tables.quantiles.zcdp_share`: the largest ``ε_q`` whose
    ``ρ = k len(q) ε_q² / 8`` converts to at most ``(ε, δ)`` (Durfee & Rogers 2019;
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
    dask_doc = """Release the ``q``-quantile(s) of the ``value`` column per key of a dask DataFrame.

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


class Median(_Rank):
    """The median of the values per key (``q = 0.5``)."""

    name = "median"
    sql_names = ("median",)
    summary = "median of a value column per key"
    doc = """Release the median of ``values`` per key: :func:`quantile` with ``q = 0.5``.

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person, exponential mechanism with
    the rank utility ``u(g) = -max(2 #{x < g} - n, n - 2 #{x <= g}, 0)``, ``Δu = c``;
    McSherry & Talwar 2007, Smith 2011).
    """


class Min(_Rank):
    """The minimum of the values per key (``q = 0``: a grid point of rank 0 up to the
    rank error)."""

    name = "min"
    summary = "minimum of a value column per key"
    doc = """Release the minimum of ``values`` per key: :func:`quantile` with ``q = 0``.

    The release is a grid point of rank 0 up to the rank error (no more than
    ``rank_error(alpha)`` rows below it, with probability ``1 - alpha``); where the grid
    has several points below the minimum, it is uniform over them (they all have rank 0).

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person; McSherry & Talwar 2007).
    """


class Max(_Rank):
    """The maximum of the values per key (``q = 1``)."""

    name = "max"
    summary = "maximum of a value column per key"
    doc = """Release the maximum of ``values`` per key: :func:`quantile` with ``q = 1``.

    The mirror of :func:`min`: no more than ``rank_error(alpha)`` rows above the released
    grid point, with probability ``1 - alpha``.

    Privacy
    -------
    That of :func:`quantile` (``ε``-DP, add/remove one person; McSherry & Talwar 2007).
    """
