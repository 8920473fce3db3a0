""":meth:`dpfast.Session.histogram`: a :func:`dpfast.histogram` of one column of the private
table, planned before the charge.

:class:`HistogramQuery` is one such question: its cache spec (the column, the bins and
range, the options, the fingerprint of the rows read and of the row filter), its event --
from :func:`dpfast.tables.histogram.plan_histogram` over the columns' types (the row query
bound, no row read), after the options are checked against :func:`dpfast.histogram`'s
parameters (TypeError naming one) -- and the computation the session's cache charges it
for (:func:`dpfast.session._cache.cached`).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from dpfast.tables.histogram import histogram as _histogram
from dpfast.tables.histogram import plan_histogram
from dpfast.tables.state import encode_array

from . import _spec

if TYPE_CHECKING:
    import numpy.typing as npt

    from dpfast.accounting.events import DpEvent
    from dpfast.random import RngLike
    from dpfast.tables.release import TableRelease

    from ._source import Source

__all__ = ["HistogramOptions", "HistogramQuery"]

#: what :meth:`dpfast.Session.histogram` returns: ``(hist, bin_edges, release)``
Histogram = tuple[np.ndarray, np.ndarray, "TableRelease"]


class HistogramOptions(TypedDict, total=False):
    """The options of :meth:`dpfast.Session.histogram` (those of :func:`dpfast.histogram`
    but ``weights`` and what the session fills in)."""

    density: bool
    rho: float | None
    weight_bounds: tuple[float, float] | None
    max_partitions: int
    max_per_partition: int
    nonnegative: bool
    integer: bool
    noise: str | None
    note: str
    use_case: str | None


class HistogramQuery:
    """One :meth:`dpfast.Session.histogram` question over ``src``, checked and planned
    from public information only (ValueError / TypeError before any charge): its
    :attr:`spec` (the cache key), :attr:`what` (its ledger note), :attr:`event` and
    :meth:`compute` (the rows read and released: what the charge pays for).

    ``options``: those of :func:`dpfast.histogram` but ``weights`` (the contribution
    bounds filled in by the caller).
    """

    def __init__(self, src: Source, privacy_unit: str | None, rng: RngLike, column: str,
                 bins: int | str | npt.ArrayLike, range: tuple[float, float] | None,  # noqa: A002
                 *, epsilon: float | None, delta: float, where: str | None,
                 options: HistogramOptions) -> None:
        src.check_columns([column], "histogram column")
        where_sql, where_cols = _spec.normalize_where(where, src)
        pid = privacy_unit
        options = options.copy()
        #: the cache key
        self.spec = _spec.cache_spec(
            "histogram", column, {"bins": np.asarray(bins), "range": range},
            rows=src.rows_fingerprint([column] + ([pid] if pid else []) + where_cols,
                                      where_sql or ""),
            privacy_unit=pid, epsilon=epsilon, delta=delta,
            options={k: v for k, v in options.items() if k != "note"})
        #: the ledger note
        self.what = f"histogram({column})" + (f" where {where_sql}" if where_sql else "")
        options.setdefault("note", self.what)
        cols = [column] + ([pid] if pid else [])

        # the event from the histogram's plan, over the columns' types (limit 0: the row
        # query bound, no row read), before the charge: the options are checked against
        # histogram's parameters first (TypeError naming one), then the plan makes
        # histogram's own checks
        schema = src.select(cols, where_sql, 0)
        ids = schema[pid] if pid else None
        if "weights" in options:
            raise TypeError("Session.histogram takes no weights= (a histogram of a column "
                            "counts its rows)")
        inspect.signature(_histogram).bind(schema[column], bins, range, epsilon=epsilon,
                                           delta=delta, privacy_ids=ids, rng=None,
                                           budget=None, return_release=True, **options)
        own = inspect.signature(plan_histogram).parameters
        given: dict[str, Any] = {k: v for k, v in options.items() if k in own}
        #: the event charged: the plan's
        self.event: DpEvent = plan_histogram(schema[column], bins, range, epsilon=epsilon,
                                             delta=delta, privacy_ids=ids, **given).event
        # what compute reads (the rows of these columns through the filter) and releases
        self._src, self._cols, self._where = src, cols, where_sql
        self._column, self._pid = column, pid
        self._bins, self._range = bins, range
        self._epsilon, self._delta, self._rng = epsilon, delta, rng
        self._options = options

    def compute(self) -> Histogram:
        """Read the rows and release the histogram (after the charge)."""
        rows = self._src.select(self._cols, self._where)
        pid = self._pid
        return _histogram(rows[self._column], self._bins, self._range, epsilon=self._epsilon,
                          delta=self._delta, privacy_ids=rows[pid] if pid else None,
                          rng=self._rng, budget=None, return_release=True, **self._options)

    @staticmethod
    def payload(res: Histogram) -> dict[str, object]:
        """The stored form of a released histogram."""
        h, e, rel = res
        return {"kind": "histogram", "hist": encode_array(h), "edges": encode_array(e),
                "release": rel.to_state()}
