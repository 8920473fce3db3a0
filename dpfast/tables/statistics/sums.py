"""Sums of a bounded value column: ``sum``, ``mean``, ``variance`` and ``std`` per key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dpfast.tables.statistics.base import Statistic

if TYPE_CHECKING:
    from collections.abc import Mapping

    from dpfast.tables import _autobounds, groupby, multi
    from dpfast.tables.run import Source
    from dpfast.tables.spec import ReleaseSpec

#: the Privacy section of variance and std
_SPREAD_PRIVACY = """
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


class _Bounded(Statistic):
    """What sum and mean share (not registered: no name): the count / sum / mean plan
    (:mod:`dpfast.tables.groupby`), or with ``bounds="auto"`` the two-phase plan that
    chooses the bounds privately first (:mod:`dpfast.tables._autobounds`)."""

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> groupby.Plan | _autobounds.AutoPlan:
        from dpfast.tables import _autobounds, groupby  # lazy: the registry imports no kernel

        if spec.bounds == "auto":  # private bounds first (tables/_autobounds.py)
            return _autobounds.plan_auto(cls.name, spec, source)
        return groupby.plan_of(cls.name, spec, source)


class Sum(_Bounded):
    """The sum of the values per key, clamped to public bounds."""

    name = "sum"
    law_interval = True
    sql_names = ("sum",)
    value = True
    bounds = True
    auto_bounds = True
    summary = "sum of a value column per key"
    doc = """Release the sum of ``values`` per key, values clamped to ``bounds``.

    Parameters are those of :func:`count` (``dropna`` too), plus ``values`` (one number
    per row) and
    ``bounds = (lo, hi)``: integer values need integer bounds and get exact discrete noise;
    float values are summed exactly in fixed point (see Privacy) and released on the secure
    grid of :func:`dpfast.laplace` / :func:`dpfast.gaussian`.  With ``domain=None`` half the
    budget goes to the key selection on the number of privacy units per key (not
    released; see :func:`count`) and half to the sums.
    ``bounds="auto"`` (``epsilon`` targets only): 10% of ε chooses the bounds by private
    quantiles (:mod:`dpfast.tables.autobounds`: the 1st and 99th percentiles of one row
    per person on a grid of signed powers of two, with a geometric base measure around a
    private centre), the other 90% releases the sums; the composed event is charged once
    and the bounds are :attr:`TableRelease.bounds`.

    Privacy
    -------
    As :func:`count`, with ``B = max(|lo|, |hi|)``: ``Δ1 = k c B``, ``Δ2 = sqrt(k) c B``
    (add/remove one person).  Float sums: the grid rounding adds one grid step per changed
    key to the sensitivity (``max_changed = k``; Google DP team, "Secure Noise Generation").
    The sensitivity holds in the arithmetic that computes the sum (Casacuberta et al.,
    "Widespread Underestimation of Sensitivity in DP Libraries", CCS 2022): each clamped
    float value is rounded once to the fixed-point grid ``q = 2**e`` (``q = g / 2**10``
    for the output grid ``g``, coarser only where the bounds need it), clamped again to
    ``[ceil(lo/q), floor(hi/q)] q`` so that ``|rounded value| <= B`` exactly, and summed
    exactly in integers (two words, sized so that no input reaches ``2**94 q``); the exact total is
    rounded once to ``g`` and noised.  One person therefore moves a key's exact total by at
    most ``c B`` and its grid value by at most ``c B + g``, whatever the other rows and
    their order (:mod:`dpfast.tables._fixed`).  ``bounds="auto"``: the bounds cost
    ``ε/10`` (four exponential mechanisms on one row per person, ``Δ = 1``, see
    :func:`dpfast.tables.auto_bounds`; McSherry & Talwar 2007), the sums ``9ε/10`` given
    them (sequential composition, ``ε`` in all); event ``Composed((bounds, statistic))``.

    Numerics
    --------
    Integer values: exact two-word sums, saturated at ``±2**62`` before the noise
    (1-Lipschitz: the sensitivity holds), so no input overflows; ``max_per_partition *
    max(|lo|, |hi|) >= 2**62`` is refused (ValueError) before the charge.  A release
    takes fewer than ``2**40`` rows.
    Float values: exact fixed-point sums as above, so a release does not depend on the row
    order, the thread count or a cluster's partitioning (bit for bit).
    """
    dask_doc = """Release the sum of the ``value`` column per key (clamped to ``bounds``).

    Parameters as in :func:`count`, plus ``value`` (a column name) and ``bounds``.

    Privacy
    -------
    That of :func:`dpfast.tables.sum`: ``Δ1 = k c max(|lo|, |hi|)`` (add/remove one
    person), float values summed exactly in fixed point (Casacuberta et al., CCS 2022).
    Integer and float values alike: bit-identical to one machine (integer partial sums are
    associative); the driver's total is checked (OverflowError, never a wrap).
    """
    parts = ("sum",)


class Mean(_Bounded):
    """The mean of the values per key: noisy centred sum over noisy count."""

    name = "mean"
    sql_names = ("avg", "mean")
    value = True
    bounds = True
    auto_bounds = True
    summary = "mean of a value column per key"
    doc = """Release the mean of ``values`` per key: noisy centred sum / noisy count.

    The budget is split in half (``ε/2`` or ``ρ/2`` each) between the count and the sum of
    the centred values ``2x - lo - hi`` (range ``[-(hi - lo), hi - lo]``); the mean is
    ``(lo + hi + S / max(N, 1)) / 2`` clipped to the bounds (post-processing), the midpoint
    where the noisy count is not positive.  With ``domain=None`` the budget is split in
    three equal ``ε/3``: the key selection on the number of privacy units per key (see
    :func:`count`), the count and the centred sum.  Confidence intervals are conservative (see
    :meth:`TableRelease.confidence_interval`).
    ``bounds="auto"``: as in :func:`sum`.

    Privacy
    -------
    Composition of the count (``Δ1 = k c``) and the centred sum (``Δ1 = k c (hi - lo)``),
    each at half the budget: ``ε``-DP (or ``ρ``-zCDP) overall; with private key selection
    the three measurements at ``ε/3`` each, ``(ε, δ_sel)``-DP (``δ_sel <= δ`` the
    selection's exact δ).  Neighbouring relation: add/remove one person.  Float values: the
    centred summand is ``(2u - ceil(lo/q) - floor(hi/q)) q`` with ``u`` the value rounded
    once to the fixed-point grid ``q`` and clamped to ``[ceil(lo/q), floor(hi/q)]`` (see
    :func:`sum`), so ``|summand| <= hi - lo`` exactly and the sum is exact (Casacuberta et
    al., CCS 2022).
    """
    dask_doc = """Release the mean of the ``value`` column per key: noisy centred sum / noisy count.

    Parameters as in :func:`sum`.

    Privacy
    -------
    That of :func:`dpfast.tables.mean`: the budget split in half between the count
    (``Δ1 = k c``) and the centred sum (``Δ1 = k c (hi - lo)``); add/remove one person.
    """
    parts = ("count", "csum")


class _Spread(Statistic):
    """What variance and std share (not registered: no name): a value column with bounds,
    and the many-metric plan of the count, centred sum and centred sum of squares of the
    same kept rows."""

    value = True
    bounds = True
    parts = ("count", "csum", "csq")

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> multi.MultiPlan:
        from dpfast.tables import multi  # lazy: the registry imports no kernel

        return multi.plan_of(spec, source, {cls.name: cls.parts})

    @classmethod
    def make_spec(cls, *, column: str | None = None,
                  params: Mapping[str, object] | None = None,
                  **release: Any) -> ReleaseSpec:
        """The spec; a TypeError unless ``bounds`` is a pair (before anything else)."""
        if not isinstance(release.get("bounds"), (tuple, list)):
            raise TypeError(f"bounds for column {column or 'values'!r}: bounds must be a "
                            "pair (lo, hi)")
        return super().make_spec(column=column, params=params, **release)


class Variance(_Spread):
    """The population variance of the values per key: the noisy count, centred sum and
    centred sum of squares of the same kept rows (the many-metric plan with one metric)."""

    name = "variance"
    sql_names = ("var_pop",)
    summary = "population variance of a value column per key"

    doc = ("""Release the (population) variance of ``values`` per key, values clamped to
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
           .replace("{privacy}", _SPREAD_PRIVACY.strip("\n")))
    dask_doc = """:func:`dpfast.tables.variance` of the ``value`` column per key (bit-identical).

    Privacy
    -------
    That of :func:`dpfast.tables.variance` (count, centred sum, centred sum of squares at
    a third of the budget each; add/remove one person).
    """


class Std(_Spread):
    """The population standard deviation per key: the square root of :class:`Variance`
    (post-processing)."""

    name = "std"
    sql_names = ("stddev_pop",)
    summary = "population standard deviation of a value column per key"

    doc = ("""Release the (population) standard deviation of ``values`` per key: the square root
    of :func:`variance` (post-processing; its intervals are the square roots of the
    variance's).

    Parameters are those of :func:`variance`.
{privacy}
    """
           .replace("{privacy}", _SPREAD_PRIVACY.strip("\n")))
    dask_doc = """:func:`dpfast.tables.std` of the ``value`` column per key (bit-identical).

    Privacy
    -------
    That of :func:`dpfast.tables.std` (the square root of the variance release).
    """
