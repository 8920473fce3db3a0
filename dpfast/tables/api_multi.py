"""The public many-metric release of :mod:`dpfast.tables`: :func:`aggregate` (the facade
over the one pipeline; ``privacy_id_count`` and the other single statistics are generated
from the registry, :mod:`dpfast.tables.facade`).

It turns its arguments into a :class:`~dpfast.tables.spec.ReleaseSpec` and a local source
(:class:`~dpfast.tables.run.Rows`) and runs :func:`dpfast.tables.run.release`: plan
(:mod:`dpfast.tables.multi`) -> partials -> the one charge -> finish.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dpfast.random import RngLike
from dpfast.tables import multi, statistics
from dpfast.tables import run as _run
from dpfast.tables._multi_release import AggregateRelease

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from dpfast.tables._keys import KeyColumns
    from dpfast.tables.spec import Charger

#: one metric: ``"count"``, ``("mean", "x")``, ``("quantile", "x", 0.9)``
MetricSpec = str | tuple[str, str] | tuple[str, str, float]

__all__ = ["aggregate", "frame_keys"]


def frame_keys(df: object, by: object, privacy_id: str | None, name: str = "df"
               ) -> tuple[list[str], list[str], KeyColumns, npt.ArrayLike | None]:
    """``(column names, key column names, key column(s), privacy ids)`` of a table, the
    names checked (TypeError / ValueError naming the parameter)."""
    names = multi.frame_columns(df)
    by_list = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) \
        else None
    if not by_list or not all(isinstance(b, str) for b in by_list):
        raise TypeError("by must be a column name or a list of column names")
    for label, cs in (("by", by_list), ("privacy_id", [privacy_id] if privacy_id else [])):
        for cname in cs:
            if not isinstance(cname, str):
                raise TypeError(f"{label} must be a column name (str), got {cname!r}")
            if cname not in names:
                raise ValueError(f"{label} column {cname!r} is not in {name} "
                                 f"(columns: {names})")
    keys = multi.frame_column(df, by_list[0]) if len(by_list) == 1 else tuple(
        multi.frame_column(df, b) for b in by_list)
    ids = None if privacy_id is None else multi.frame_column(df, privacy_id)
    return names, by_list, keys, ids


def aggregate(df: pd.DataFrame | pl.DataFrame | pa.Table, by: str | list[str] | tuple[str, ...],
              privacy_id: str | None = None, *,
              metrics: Sequence[MetricSpec] | Mapping[str, MetricSpec],
              epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
              bounds: dict[str, tuple[float, float] | str] | str | None = None,
              weights: Mapping[str, float] | Sequence[float] | None = None,
              max_partitions: int | str = 1, max_per_partition: int | str = 1,
              domain: npt.ArrayLike | None = None,
              noise: str | None = None, rng: RngLike = None,
              budget: Charger | None = None,
              note: str = "", use_case: str | None = None, selection: str = "auto",
              bounding: str = "uniform", candidates: dict[str, int | npt.ArrayLike] | None = None
              ) -> AggregateRelease:
    """Release several statistics per key of one table in one pass.

    Each person's rows are bounded once (at most ``max_partitions`` keys, at most
    ``max_per_partition`` rows per key, chosen with the CSPRNG by the ``bounding`` policy),
    the keys are
    selected once, the budget is split over the metrics by a stated rule, and one composed
    event is charged.

    Parameters
    ----------
    df : pandas.DataFrame, polars.DataFrame or pyarrow.Table
        The rows.
    by : str or list of str
        The key column(s).
    privacy_id : str, optional
        The column of the privacy unit (None: every row is a different person).
    metrics : list or dict
        ``["count", "privacy_id_count", ("sum", "x"), ("mean", "x"), ("variance", "x"),
        ("std", "x"), ("median", "x"), ("quantile", "x", 0.9), ("min", "x"),
        ("max", "x")]`` (output names ``"count"``, ``"mean_x"``, ``"median_x"``,
        ``"q0.9_x"``, ``"min_x"``...), or a mapping ``{output name: metric}``.  ``median``,
        ``quantile`` (``q`` in ``[0, 1]``), ``min`` (``q = 0``) and ``max`` (``q = 1``)
        are rank metrics: one exponential mechanism per released key over the column's
        public candidate grid (see ``candidates`` and Privacy), each released as a
        :class:`~dpfast.tables.QuantileRelease` with its rank-error statement.
    epsilon, delta, rho, max_partitions, max_per_partition, domain, noise, rng, budget,
    note, use_case
        As in :func:`dpfast.tables.count`.  With ``domain=None`` the keys are chosen
        privately (needs ``delta > 0``).
    bounds : dict
        ``{column: (lo, hi)}`` for every value column a metric uses (integer columns need
        integer bounds and get exact discrete noise on their sums).  A row with a missing
        key, privacy id or value in any column a metric uses is dropped for every metric
        (listwise); ``±inf`` values are clamped to their column's bounds.  ``{column:
        "auto"}`` (or ``bounds="auto"``: every value column) has the tuning choose them
        (:func:`dpfast.tables.tune`: a DP histogram of the column's values, the bounds of
        least predicted error), in the same one charge as ``max_partitions="auto"``
        (either works alone; local only).
    weights : dict or list, optional
        Positive weights of the metrics (by output name, or aligned with ``metrics``);
        default equal.
    bounding : {"uniform", "frequent"}
        Which keys a person keeps when they have more than ``max_partitions``: chosen
        uniformly, or the ones with the most rows (ties broken uniformly at random), as in
        :func:`dpfast.tables.count`.  ``max_per_partition`` rows per kept key are chosen
        uniformly either way.
    candidates : dict, optional
        The public grid of each column a rank metric uses: ``{column: n}`` for ``n``
        evenly spaced points of the column's bounds (1 to 2**16; integer columns: the
        distinct nearest integers, all of ``[lo, hi]`` when it has at most ``n``), or
        ``{column: array}`` for a strictly increasing public grid (the rules of
        :func:`dpfast.tables.quantile`).  Default 256 points.  A rank value is always a
        grid point; the values are clamped to the column's ``bounds`` first.

    Returns
    -------
    AggregateRelease
        Every metric (``release["mean_x"]`` is a :class:`~dpfast.tables.TableRelease` with
        its confidence intervals and accuracy, ``release["median_x"]`` a
        :class:`~dpfast.tables.QuantileRelease` with ``rank_error(alpha)`` and
        ``accuracy(alpha)``), the shared keys, the one event, ``to_pandas()`` (indexed by
        the key; a rank metric's column comes with ``<name>_rank_error``) and
        ``to_polars()``.

    Privacy
    -------
    Metric ``i`` gets ``w_i / Σ w`` of ``ε`` (or ``ρ``), split equally over the noised
    parts it is finished from; a part shared by several metrics (one noisy count for
    ``count``, ``mean`` and ``variance``) gets the sum of their shares.  Part sensitivities
    (add/remove one person, who changes at most ``k`` keys): row count ``Δ1 = k c``;
    privacy-id count ``Δ1 = k``; sum ``k c max(|lo|, |hi|)``; centred sum of
    ``2x - lo - hi``: ``k c (hi - lo)``; centred square ``(x - mid)²``:
    ``k c ((hi - lo)/2)²`` (``Δ2``: ``sqrt(k)`` instead of ``k``).  Each part is ``ε_p``-DP
    (discrete Laplace, CKS20; grid Laplace for float sums, exact fixed-point totals,
    Casacuberta et al. CCS 2022) or ``ρ_p``-zCDP (discrete Gaussian).  A rank metric
    (median, quantile ``q``, min, max of ``x``) is, per released key, the exponential
    mechanism ``P(g) ∝ exp(ε_q u(g) / (2 Δu))`` over the public grid with the rank
    utility of :func:`dpfast.tables.quantile` over the key's ``n`` kept rows:
    ``u(g) = -max(den #{x < g} - num n, num n - den #{x <= g}, 0)`` for ``q = num / den``
    with ``den <= 2**16`` (``Δu = max(num, den - num) c``: ``c`` for the median, min and
    max), Smith's ``-max(#{x < g} - t, t - #{x <= g}, 0)``, ``t = floor(q n)``, ``Δu = c``
    for any other ``q`` (McSherry & Talwar 2007, Smith 2011); a person changes at most
    ``k`` keys, so the part is
    ``SelfComposed(Exponential(ε_q), k)`` with ``ε_q = ε_p / k`` (pure), or the largest
    ``ε_q`` with ``k ε_q²/8 <= ρ_p`` next to Gaussian parts (bounded range: Cesar & Rogers
    2021).  With a public ``domain``, Laplace parts and ``delta > 0`` the rank parts
    together may instead be ``(Σ ε_p, δ)``-DP by zCDP composition (as
    :func:`dpfast.tables.quantile`; Bun & Steinke 2016), when that gives each a larger
    ``ε_q``.  The parts compose (basic composition: ``Σ ε_p <= ε``, ``Σ ρ_p <= ρ``) to the
    release's one event.  With
    ``domain=None`` a key is published iff the key-selection rule of ``selection=``
    (:func:`dpfast.tables.count`) keeps it, a separate measurement on the number of people
    holding the key after bounding (sensitivity ``k``) with the share of one more metric of
    ε (and δ, rounded up to its exact value), making the release ``(ε, δ)``-DP (Desfontaines
    et al. 2022; Gopi et al. 2020); every metric is post-processing of the noisy parts of
    the published keys.  Bounding (either policy) depends only on each person's own rows,
    so the sensitivities above hold for both; every metric, the rank metrics included, is
    computed on the same kept rows.  The mechanism is that of PipelineDP's ``aggregate``
    with several metrics, with exact noise and an exact exponential mechanism.

    Examples
    --------
    >>> import pandas as pd
    >>> from dpfast import tables
    >>> df = pd.DataFrame({"city": ["a", "a", "b", "b", "b"], "person": [1, 2, 3, 4, 4],
    ...                    "age": [30, 40, 50, 60, 70]})
    >>> rel = tables.aggregate(df, by="city", privacy_id="person",
    ...                        metrics=["count", "privacy_id_count", ("mean", "age")],
    ...                        epsilon=1.0, bounds={"age": (0, 100)}, domain=["a", "b"],
    ...                        max_per_partition=2)
    >>> list(rel.to_pandas().columns[:4])
    ['count', 'count_ci_low', 'count_ci_high', 'privacy_id_count']
    >>> rel.shares["count"], rel.shares["ids"], rel.shares["csum:age"]
    (Fraction(1, 2), Fraction(1, 3), Fraction(1, 6))
    >>> med = tables.aggregate(df, by="city", privacy_id="person",
    ...                        metrics=["count", ("median", "age")], epsilon=1.0,
    ...                        bounds={"age": (0, 100)}, domain=["a", "b"],
    ...                        candidates={"age": 101})
    >>> med["median_age"].grid.shape, list(med.to_pandas().columns[3:])
    ((101,), ['median_age', 'median_age_rank_error'])
    """
    names, by_list, keys, ids = frame_keys(df, by, privacy_id)
    spec = multi.aggregate_spec(
        metrics, statistics.metric_parts(), bounds=bounds, weights=weights,
        candidates=candidates, available=names, by=tuple(by_list), privacy_unit=privacy_id,
        epsilon=epsilon, delta=delta, rho=rho, noise=noise, max_partitions=max_partitions,
        max_per_partition=max_per_partition, domain=domain, selection=selection,
        bounding=bounding)
    values = {s.column: multi.frame_column(df, s.column) for s in spec.statistics
              if s.column is not None and s.column in names}
    rows = _run.Rows(keys, ids, columns=values, domain=domain, key_names=tuple(by_list))
    return _run.release(spec, rows, budget=budget, note=note, rng=rng, use_case=use_case)
