"""Counts: rows per key (``count``) and people per key (``privacy_id_count``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpfast.tables.statistics.base import COMMON, Statistic

if TYPE_CHECKING:
    from dpfast.tables import _ids_l2, groupby, multi
    from dpfast.tables.run import Source
    from dpfast.tables.spec import ReleaseSpec

#: the Parameters entries of the Dask forms of count, sum and mean
DASK_PARAMS = """
    ddf : dask.dataframe.DataFrame
        The rows.
    key : str or list of str
        The key column(s).
    privacy_id : str, optional
        The column of the privacy unit (None: every row is a different person).
    epsilon, delta, rho, max_partitions, max_per_partition, domain, noise, budget, note,
    use_case
        As in :func:`dpfast.tables.count`.  ``budget`` is charged once, on the driver,
        after the partials are computed (the rows validated) and before any noise is
        drawn (a refusal releases nothing).
    rng : None, Generator, 32-byte key or :class:`dpfast.dask.WorkerKey`
        As in :func:`dpfast.tables.count` (a raw key: a fresh release id per release); a
        :class:`~dpfast.dask.WorkerKey` (:func:`~dpfast.dask.key_from_file`,
        :func:`~dpfast.dask.key_from_env`) is loaded by the driver and by each worker, so
        no key material is in the task graph, and gets a fresh release id per release too
        (the graph carries it: a retried task recomputes its own partition).
    npartitions : int, optional
        Partitions after the shuffle by privacy id (default: as many as ``ddf`` up to 8, a
        third of them beyond, at least 8; under a distributed client or the synchronous
        scheduler at most twice the task threads, unless that puts more than three input
        partitions in one).
    selection, bounding
        As in :func:`dpfast.tables.count`: the key-selection rule on the number of distinct
        privacy units per key (each id's rows meet in one partition, so the per-partition
        unit counts add up exactly) and the bounding policy.
"""


class Count(Statistic):
    """The number of rows per key, each person's rows bounded (``max_partitions`` keys,
    ``max_per_partition`` rows per key)."""

    name = "count"
    law_interval = True
    sql_names = ("count",)
    summary = "rows per key"
    nonnegative = True
    doc = """Release the number of rows per key, with bounded contributions.

    Parameters
    ----------
    keys : array_like, pandas Series, tuple of arrays or DataFrame
        One key per row: ints, floats, str or bytes; several columns for multi-column keys.
    privacy_ids : array_like, optional
        The person (privacy unit) of each row.  None: every row is a different person.
    epsilon, delta : float
        ``(epsilon, delta)``-DP target.  ``delta`` is needed for ``domain=None`` (partition
        selection) and for Gaussian noise.  Supported range: ``epsilon <= 2**30`` and a
        noise scale (or σ) of every part in ``[2**-100, 2**50]`` -- outside it a
        ValueError naming the parameter, before the charge (docs/security.md,
        "Parameters and data").
    rho : float, optional
        zCDP target instead of ``epsilon`` (discrete Gaussian noise; needs ``domain``).
    max_partitions, max_per_partition : int
        Contribution bounds per privacy id: ``k`` keys, ``c`` rows per key (ignored, i.e.
        1, when ``privacy_ids`` is None).
    domain : array_like or tuple of arrays, optional
        The public keys: exactly these are released, in this order (keys without rows get
        a noisy zero; rows of other keys are dropped before bounding).  None: the keys are
        private and chosen by thresholding (needs ``delta > 0``).
    noise : {None, "laplace", "gaussian"}
        Default: discrete Laplace with ``epsilon``, discrete Gaussian with ``rho``.  With
        ``domain=None`` and ``"gaussian"`` (``epsilon, delta`` only): the statistics are
        calibrated at ``(ε (1 - s), δ/2)`` and the selection at ``(ε s, δ/2)``, ``s`` its
        share.
    rng : None, Generator or bytes
        The CSPRNG.  A raw 32-byte key gets a fresh release id per release (recorded as
        :attr:`TableRelease.release_id`): two releases with one key never share noise.  To
        replay a release (tests, audits) pass a generator rebuilt from the key,
        ``dpfast.default_rng(key)`` (its allocator numbers its releases), or the release
        generator of a raw key's release, ``keynoise.keyed_generator(key, release_id)``.
        Whoever holds the key can remove the noise.
    budget : dpfast.Budget, optional
        Charged with :attr:`TableRelease.event` before any noise is drawn; a refusal raises
        :class:`dpfast.BudgetExceededError` and nothing is returned.
    note : str
        Recorded in the budget's ledger.
    use_case : str, optional
        A use case of :mod:`dpfast.guidelines`: a ``UserWarning`` when the release's
        ``epsilon`` leaves its conventional range.
    dropna : bool
        Kept for compatibility: rows with a missing key (None, NaN, pandas NA/NaT, in any
        key column), privacy id or value are dropped first whatever its value (a per-row
        filter: the guarantee is unchanged; an error would depend on the private rows,
        docs/security.md "Parameters and data").  ``±inf`` values are clamped to the
        bounds; a ``±inf`` key is an ordinary float key.
    selection : {"auto", "geometric", "gaussian", "weighted_gaussian", "laplace"}
        With ``domain=None``: the rule that selects the keys on the noisy number of
        distinct privacy units per key (:mod:`dpfast.tables._select`).  ``"auto"``: the
        optimal truncated-geometric rule for ``max_partitions = 1``; otherwise the
        geometric rule or Gaussian thresholding, whichever keeps a key with probability
        1/2 at the fewer units (a data-independent choice: geometric for small
        ``max_partitions``, Gaussian from about 5), Gaussian thresholding in its weighted
        form (``"weighted_gaussian"``: a person with ``t`` kept keys adds ``sqrt(k/t)``
        to each, Gopi et al. 2020) whenever that keeps every key at least as often.
    bounding : {"uniform", "frequent"}
        Which keys a person keeps when they have more than ``max_partitions``: chosen
        uniformly, or the ones with the most rows (ties broken uniformly at random).
        ``max_per_partition`` rows per kept key are chosen uniformly either way.

    Returns
    -------
    TableRelease
        ``.keys``, ``.counts`` (int64), ``.event``, ``.confidence_interval(alpha)``,
        ``.accuracy(truth)``, ``.to_pandas()``.

    Raises
    ------
    ValueError, TypeError
        Bad public input (named): mismatched lengths, bad privacy parameters or a noise
        scale outside the supported range, ...  Never for the rows' contents: missing
        keys, ids and values drop their rows, ``±inf`` values are clamped.
    BudgetExceededError
        The budget refused the release.

    Privacy
    -------
    Neighbouring datasets differ by adding or removing one person (all rows of one privacy
    id; one row when ``privacy_ids`` is None).  After bounding, one person changes at most
    ``k`` counts by at most ``c`` each: L1 sensitivity ``Δ1 = k c``, L2 sensitivity
    ``Δ2 = sqrt(k) c``.  Discrete Laplace noise of scale ``t >= Δ1 / ε`` gives ε-DP
    (Ghosh et al. 2009; CKS20); discrete Gaussian noise of ``σ`` gives
    ``Δ2² / (2σ²)``-zCDP (CKS20).  With a public ``domain`` the released keys do not depend
    on the data.  With ``domain=None`` the keys are chosen by a separate measurement: the
    number of distinct privacy units per key after bounding (one person changes ``k`` of
    them by 1: sensitivity ``k``, whatever ``c``), decided by the ``selection`` rule at
    ``(ε/2, δ)`` -- ``"geometric"``: Desfontaines, Voss, Gipson, Mandayam,
    "Differentially private partition selection", PoPETs 2022 (at ``ε/2k, δ/k`` per key for
    ``k > 1``); ``"gaussian"`` / ``"weighted_gaussian"``: Gopi et al., "Differentially
    private set union", ICML 2020, ``δ = δ_noise + δ_threshold``; ``"laplace"``: Wilson
    et al. 2020 -- and the counts are noised with the other ``ε/2``.  The release is
    ``(ε, δ_sel)``-DP, ``δ_sel <= δ`` the selection's exact δ (rounded up;
    :attr:`TableRelease.event`).  Contribution bounding depends only on each person's own
    rows (and the key), so it does not change the sensitivity of the others'
    contributions.

    Numerics
    --------
    Exact integer aggregation and exact samplers; the noise scale and threshold are
    rounded to the safe side (scale up, δ up).
    """
    dask_doc = (
        """Release the number of rows per key of a dask DataFrame, with bounded contributions.

    Parameters
    ----------
    {params}
    Returns
    -------
    dpfast.tables.TableRelease
        Equal, bit for bit, to ``dpfast.tables.count`` on the same rows with the same key.

    Privacy
    -------
    That of :func:`dpfast.tables.count` (the same mechanism: add/remove one person,
    ``Δ1 = k c``, ``Δ2 = sqrt(k) c``; discrete Laplace / Gaussian noise, CKS20; private
    key selection on the distinct privacy units per key, sensitivity ``k``: Desfontaines
    et al. 2022, Gopi et al. 2020, :mod:`dpfast.tables._select`).  Distribution changes who
    computes, never what is computed: bounding depends only on each person's own rows.
    """
        .replace("{params}", DASK_PARAMS.strip()))
    parts = ("count",)

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> groupby.Plan:
        from dpfast.tables import groupby  # lazy: the registry imports no kernel

        return groupby.plan_of("count", spec, source)


class PrivacyIdCount(Statistic):
    """The number of distinct people (privacy ids) per key: each person counts once in
    each of at most ``max_partitions`` keys (``bounding="uniform"`` / ``"frequent"``: the
    many-metric plan with this one metric), or, ``bounding="l2"``, ``min(1, sqrt(k / t))``
    in each of their ``t`` keys (:mod:`dpfast.tables._ids_l2`, Gaussian noise)."""

    name = "privacy_id_count"
    law_interval = True
    summary = "distinct people per key"
    nonnegative = True
    common = tuple(c for c in COMMON if c != "max_per_partition")  # one unit per key
    doc = """Release the number of distinct privacy ids (people) per key.

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
    dask_doc = """:func:`dpfast.tables.privacy_id_count` of a dask DataFrame (bit-identical, also
    with ``bounding="l2"``: every id's rows meet in one partition, so its number of keys,
    hence its weight, is known there and the integer partial totals add up).

    Privacy
    -------
    That of :func:`dpfast.tables.privacy_id_count`: ``Δ1 = k`` under add/remove one person
    (``bounding="l2"``: ``Δ2 = sqrt(k)``, Gaussian noise).
    """
    parts = ("ids",)

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> multi.MultiPlan | _ids_l2.Plan:
        from dpfast.tables import _ids_l2, multi  # lazy: the registry imports no kernel

        if spec.bounding == "l2":
            return _ids_l2.plan_of(spec, source)
        return multi.plan_of(spec, source, {cls.name: cls.parts})
