"""The public release functions of :mod:`dpfast.tables` (the facade over the one pipeline).

Each function turns its arguments into a :class:`~dpfast.tables.spec.ReleaseSpec` and a
local source (:class:`~dpfast.tables.run.Rows`) and runs :func:`dpfast.tables.run.release`:
plan -> partials -> the one charge -> finish.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast.random import RngLike
from dpfast.tables import run as _run_mod
from dpfast.tables import spec as _spec
from dpfast.tables.release import TableRelease

__all__ = ["count", "sum", "mean"]


def _run(stat: str, keys: Any, privacy_ids: Any, values: Any, bounds: Any, *,
         epsilon: Any, delta: Any, rho: Any, max_partitions: Any, max_per_partition: Any,
         domain: Any, noise: Any, rng: Any, budget: Any, note: Any,
         use_case: str | None = None, dropna: bool = False, selection: Any = "auto",
         bounding_policy: Any = "uniform") -> TableRelease:
    if not isinstance(dropna, (bool, np.bool_)):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    if isinstance(bounds, str):  # "auto": private quantiles pick them (tables/_autobounds.py)
        if bounds != "auto":
            raise ValueError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        if rho is not None:  # named before the privacy target's own checks
            raise ValueError("bounds='auto' needs epsilon (its quantiles are pure-DP), not rho")
    spec = _spec.ReleaseSpec.make(
        [_spec.StatSpec(stat)], epsilon=epsilon, delta=delta, rho=rho, noise=noise,
        max_partitions=max_partitions, max_per_partition=max_per_partition,
        bounds=bounds, domain=domain, selection=selection, bounding=bounding_policy)
    return _run_mod.release(spec, _run_mod.Rows(keys, privacy_ids, values, domain=domain),
                            budget=budget, note=note, rng=rng, use_case=use_case)


def count(keys: Any, privacy_ids: Any = None, *, epsilon: float | None = None,
          delta: float = 0.0, rho: float | None = None, max_partitions: int = 1,
          max_per_partition: int = 1, domain: Any = None, noise: str | None = None,
          rng: RngLike = None, budget: Any = None, note: str = "",
          use_case: str | None = None, dropna: bool = False, selection: str = "auto",
          bounding: str = "uniform") -> TableRelease:
    """Release the number of rows per key, with bounded contributions.

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
    return _run("count", keys, privacy_ids, None, None, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, dropna=dropna, selection=selection,
                bounding_policy=bounding)


def sum(values: Any, keys: Any, privacy_ids: Any = None, *,  # noqa: A001
        bounds: tuple[float, float] | str,
        epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
        max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
        noise: str | None = None, rng: RngLike = None, budget: Any = None,
        note: str = "", use_case: str | None = None, dropna: bool = False,
        selection: str = "auto", bounding: str = "uniform") -> TableRelease:
    """Release the sum of ``values`` per key, values clamped to ``bounds``.

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
    return _run("sum", keys, privacy_ids, values, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, dropna=dropna, selection=selection,
                bounding_policy=bounding)


def mean(values: Any, keys: Any, privacy_ids: Any = None, *,
         bounds: tuple[float, float] | str,
         epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
         max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
         noise: str | None = None, rng: RngLike = None, budget: Any = None,
         note: str = "", use_case: str | None = None, dropna: bool = False,
         selection: str = "auto", bounding: str = "uniform") -> TableRelease:
    """Release the mean of ``values`` per key: noisy centred sum / noisy count.

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
    return _run("mean", keys, privacy_ids, values, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, dropna=dropna, selection=selection,
                bounding_policy=bounding)

