"""Contribution bounds chosen for the user: :func:`tune`.

Given the release a user intends (the table, keys, privacy unit, metrics and total ε),
:func:`tune` spends a small stated share of ε on a private summary of how much each person
contributes (:mod:`dpfast.tables._tune_summary`; or reads a public sample at no cost),
predicts the error of every metric for each candidate ``(max_partitions,
max_per_partition)`` -- the bias of the dropped contributions from the summary, the noise
exactly from the plan the release would run (:mod:`dpfast.tables._tune_predict`) -- and
recommends the candidate of least predicted error; a value column without bounds gets the
bounds of least predicted error from a private histogram of its values
(:mod:`dpfast.tables._tune_values`).  ``aggregate(..., max_partitions="auto")`` (and
``bounds={column: "auto"}``) runs the same tuning and the release under one charge
(:mod:`dpfast.tables._tune_plan`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfast._core.validate import check_real
from dpfast.random import RngLike
from dpfast.tables import _autobounds, _inputs, _keys, multi, statistics
from dpfast.tables import _tune_plan as _tp
from dpfast.tables import _tune_predict as _pred
from dpfast.tables import _tune_summary as _sum
from dpfast.tables import _tune_values as _val
from dpfast.tables import bounding as _bounding
from dpfast.tables import run as _run
from dpfast.tables._tune_result import TuneResult
from dpfast.tables.api_multi import MetricSpec, frame_keys
from dpfast.tables.spec import check_charger

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd

    from dpfast.tables.spec import Charger

__all__ = ["tune", "TuneResult", "DEFAULT_SHARE"]

#: the default share of ε the tuning spends per part:
#: :data:`~dpfast.tables._tune_plan.SUMMARY_PARTS` for the contribution summary,
#: :data:`~dpfast.tables._tune_plan.BOUNDS_PARTS` for each value column without bounds
DEFAULT_SHARE = 0.05


def _grid(x: object, name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    if x is None:
        return default
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return (_bounding.positive_int(x, name),)
    if not isinstance(x, (list, tuple, np.ndarray)) or len(x) == 0:
        raise TypeError(f"{name} must be None, a positive int or a non-empty list of them")
    return tuple(sorted({_bounding.positive_int(v, name) for v in x}))


def _share(share: object, n_bounds: int) -> float:
    """The tuning's share of ε: ``share``, or by default :data:`DEFAULT_SHARE` per part
    (:func:`dpfast.tables._tune_plan.parts`); ValueError naming ``bounds`` when that
    reaches ε."""
    if share is None:
        return float(_tp.default_share(n_bounds, Fraction(str(DEFAULT_SHARE))))
    s = check_real(share, "share")
    if not 0.0 < s < 1.0:
        raise ValueError(f"share must be in (0, 1), got {share!r}")
    return float(s)


def tune(df: pd.DataFrame | Any, by: str | list[str] | tuple[str, ...],
         privacy_id: str | None = None, *,
         metrics: Sequence[MetricSpec] | Mapping[str, MetricSpec],
         epsilon: float, delta: float = 0.0, share: float | None = None,
         bounds: dict[str, tuple[float, float]] | None = None,
         weights: Mapping[str, float] | Sequence[float] | None = None,
         domain: npt.ArrayLike | None = None, public_sample: Any = None,
         sample_fraction: float = 1.0,
         max_partitions: int | Sequence[int] | None = None,
         max_per_partition: int | Sequence[int] | None = None,
         noise: str | None = None, selection: str = "auto", bounding: str = "uniform",
         candidates: dict[str, int | npt.ArrayLike] | None = None, rng: RngLike = None,
         budget: Charger | None = None, note: str = "") -> TuneResult:
    """Recommend contribution bounds for a release of :func:`dpfast.tables.aggregate`.

    Parameters
    ----------
    df, by, privacy_id, metrics, weights, domain, noise, selection, bounding, candidates
        The release you intend, as in :func:`dpfast.tables.aggregate` (the metrics:
        ``count``, ``privacy_id_count``, ``sum``, ``mean``, ``median``, ``quantile``,
        ``min``, ``max``).
    epsilon, delta : float
        The intended release's total target (the tuning's share included).
    share : float, optional
        The share of ``epsilon`` the tuning spends; the predictions are for a release at
        the rest.  It is split into parts: two for the contribution summary and one for
        each value column without ``bounds`` (its value histogram).  Default: 5% per part
        (10% with every column bounded, 15% with one column without bounds, 20% with two;
        a ValueError naming ``bounds`` from eighteen).  Ignored with ``public_sample``.
    bounds : dict, optional
        ``{column: (lo, hi)}``, taken as holding the values.  A value column without bounds
        gets the pair of least predicted error: a histogram of its values over a public
        grid (0 and the signed powers of two; DP, one part of the share, or the public
        sample's) gives the clamping's bias and the noise of every candidate pair of grid
        points, chosen together with ``(max_partitions, max_per_partition)`` (their
        metrics' errors predicted in values; :mod:`dpfast.tables._tune_predict`).  Too few
        people for the histogram's ε (no cell above its noise) gives bounds that say
        nothing of the data: an infinite predicted error, :attr:`TuneResult.uninformative`.
    public_sample : DataFrame, optional
        A public table with the same columns (previous years, a synthetic twin, a sample
        published with consent), **never drawn from the private data** (a sample of ``df``
        is private: its use would be a release without privacy).  The summary and the
        missing bounds are read from it exactly and nothing is charged.  Of ``df`` only its
        schema is read: its column names, whether it has ``privacy_id``, and the types of
        its ``by`` and metric columns (the release's public checks, as
        :func:`~dpfast.tables.aggregate` makes them before its charge); no row's value,
        count or key reaches the result.
        ``sample_fraction``: the share of the population it holds (its people are scaled by
        ``1 / sample_fraction``).
    max_partitions, max_per_partition : int or list of int, optional
        The candidates (default ``1, 2, 3, 4, 6, ..., 64`` and ``1, 2, ..., 128``); an int
        fixes that bound.
    rng, budget, note
        As in :func:`dpfast.tables.count` (``budget`` is charged the tuning's event).

    Returns
    -------
    TuneResult
        ``.max_partitions``, ``.max_per_partition``, ``.bounds``, ``.params`` (keyword
        arguments for :func:`~dpfast.tables.aggregate`), ``.predicted`` (per metric:
        ``bias``, ``variance``, ``error`` per key), ``.candidates`` / ``.to_pandas()``
        (every candidate), ``.epsilon`` (spent), ``.event`` and ``.plot()``.

    Privacy
    -------
    Guarantee: ``share·ε``-DP (rounded down) under add/remove one person (all their rows);
    nothing with ``public_sample`` (no row of ``df`` reaches the result: only the public
    checks of the release read it, as before any charge).  The share and its split are
    functions of the public parameters and the column names only, fixed before a row is
    read.  The summary is three histograms
    over public buckets, each person adding one unit to each: their number of keys, the
    rows of one of their keys chosen by the release's keyed uniform bounding (``k = 1``),
    and the number of distinct keys among those chosen keys (one per person); and the sum
    ``G = Σ_j floor(16 log2(1 + x_j))`` over the keys, ``x_j`` the people whose chosen key
    is ``j`` (it gives the spread of the key sizes).  One person changes one cell of each
    histogram by at most 1 and one term of ``G`` by at most 16 (the others' keyed choices
    do not depend on them): L1 sensitivity 3 for the cells, discrete Laplace of scale
    ``3 / ε_c`` per cell is ``ε_c``-DP (Canonne, Kamath & Steinke 2020), with a public
    ``domain`` the key count is not released (sensitivity 2, scale ``2 / ε_c``); discrete
    Laplace of scale ``16 / ε_g`` on ``G`` is ``ε_g``-DP; ``ε_g = ε_h / 3`` and
    ``ε_c = ε_h - ε_g``, each rounded down, so the summary is ``ε_h``-DP (basic
    composition).  A value column without bounds adds its value histogram: one value per
    person (the release's keyed bounding at ``k = c = 1``, as ``bounds="auto"`` pools
    them) in one cell of a public grid, so one person changes one cell by at most 1 (L1
    sensitivity 1); discrete Laplace of scale ``1 / ε_b`` per cell is ``ε_b``-DP
    (:mod:`dpfast.tables._tune_values`).  ``ε_h = 2·share·ε / (2 + columns)`` and
    ``ε_b = share·ε / (2 + columns)`` (each rounded down), basic composition.  Cells below
    a public floor are published as 0 (post-processing).  The predictions, the search, the
    chosen value bounds and the recommendation are post-processing of the summary, the
    value histograms and public parameters.  Proof sketch for tuning then releasing: the
    release that follows is ``(ε - share·ε, δ)``-DP whatever bounds it is given (its event
    depends on the stated ε and δ, not on the bounds), so by adaptive composition the two
    together are ``(ε, δ)``-DP; ``aggregate(..., max_partitions="auto")`` (or a column's
    bounds ``"auto"``) charges exactly that composed event, once, before reading any
    noise.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from dpfast import tables
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"person": rng.integers(0, 3000, 30000),
    ...                    "city": rng.choice(list("abcdef"), 30000)})
    >>> last_year = pd.DataFrame({"person": rng.integers(0, 2500, 25000),
    ...                           "city": rng.choice(list("abcdef"), 25000)})
    >>> res = tables.tune(df, by="city", privacy_id="person", metrics=["count"],
    ...                   epsilon=1.0, domain=list("abcdef"), public_sample=last_year)
    >>> res.epsilon, res.max_partitions >= 1
    (0.0, True)

    ``last_year`` is public (published, or held with consent); a public sample must never
    be drawn from the private data (``df.sample(...)`` is private).
    """
    names, by_list, keys, ids = frame_keys(df, by, privacy_id)
    check_charger(budget, note)
    eps = check_real(epsilon, "epsilon")
    if not 0.0 < eps < float("inf"):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    ks = _grid(max_partitions, "max_partitions", _pred.K_GRID)
    cs = _grid(max_per_partition, "max_per_partition", _pred.C_GRID)
    if bounds is not None and not isinstance(bounds, dict):
        raise TypeError(f"bounds must be a dict {{column: (lo, hi)}}, got "
                        f"{type(bounds).__name__}")
    parts = statistics.metric_parts()
    mets = multi._metrics.parse_metrics(metrics, parts)
    used = sorted({m.column for m in mets if m.column is not None})
    missing = [c for c in used if c not in names]
    if missing:
        raise ValueError(f"metrics use column {missing[0]!r}, which is not in df")
    unbounded = tuple(c for c in used if c not in (bounds or {}))
    placeholders = {c: (0, 1) for c in unbounded}
    sh = _share(share, len(unbounded))  # public: the parameters and the column names
    if public_sample is None:
        eps_t, eps_rest = _autobounds.split(eps, Fraction(sh))
    else:
        eps_t, eps_rest = 0.0, float(eps)
    spec = multi.aggregate_spec(
        metrics, parts, bounds={**(bounds or {}), **placeholders}, weights=weights,
        candidates=candidates, available=names, by=tuple(by_list), privacy_unit=privacy_id,
        epsilon=eps_rest, delta=delta, rho=None, noise=noise, domain=domain,
        selection=selection, bounding=bounding)
    _pred.check_metrics(spec)
    n_keys = _tp.domain_size(domain)
    values = {c: multi.frame_column(df, c) for c in used}
    rows = _run.Rows(keys, ids, columns=values, domain=domain, key_names=tuple(by_list))
    check = multi.plan_of(spec, rows, parts)  # every public check of the release
    # and of its candidates, the columns without bounds at the widest the tuning can choose
    # (c times a bound beyond int64 sums): refused now, not after the charge
    _tp.check_widest(spec, rows, check, unbounded, ks, cs)
    if public_sample is not None:
        return _from_sample(spec, rows, public_sample, by, privacy_id, used, unbounded,
                            domain, n_keys, sample_fraction, ks, cs)
    eps_h, eps_b = _tp.split_tuning(eps_t, len(unbounded))
    plan = _tp.TunePlan(spec, rows, eps_h, eps_b, unbounded, ks, cs, n_keys, eps_t,
                        _bounding.policy_code(spec.bounding))
    out: TuneResult = _run.release(spec, rows, budget=budget, note=note, rng=rng, plan=plan)
    return out


def _from_sample(spec: Any, rows: _run.Rows, sample: Any, by: object, privacy_id: str | None,
                 used: list[str], unbounded: tuple[str, ...], domain: object,
                 n_keys: int | None, fraction: object, ks: tuple[int, ...],
                 cs: tuple[int, ...]) -> TuneResult:
    """The tuning on a public sample: exact, free (nothing charged; ``rows`` serve only
    the release's public checks)."""
    f = check_real(fraction, "sample_fraction")
    if not 0.0 < f <= 1.0:
        raise ValueError(f"sample_fraction must be in (0, 1], got {fraction!r}")
    names, _b, skeys, sids = frame_keys(sample, by, privacy_id, "public_sample")
    for c in used:
        if c not in names:
            raise ValueError(f"metrics use column {c!r}, which is not in public_sample")
    raw = [multi.frame_column(sample, c) for c in used]
    kept_keys, kept_ids, taken = _keys.drop_nulls(skeys, sids, *raw)
    data, _ = _inputs._validate(kept_keys, kept_ids, None, None, domain)
    summary = _sum.from_sample(data, n_keys, f)
    values = {}
    for c in unbounded:
        col = _inputs.as_numbers(taken[used.index(c)], f"column {c!r}")
        if col.size == 0:
            raise ValueError("public_sample has no rows with a value")
        values[c] = _val.from_sample(col)
    return _tp.result(spec, rows, summary, ks, cs, 0.0, None, values)
