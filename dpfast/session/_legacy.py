"""LEGACY -- the event probe, kept only for the releases that have no plan yet.

A registered statistic's event comes from its plan (:func:`dpfast.tables.plan.plan`),
before any row is read (:mod:`dpfast.session._release`).  The releases below are not
planned yet, so the session still learns their event the old way: it runs the release on
one synthetic row of the columns' types with a budget that stops at the charge
(:func:`probe`).  Delete this module when they are:

* the statistics of :data:`dpfast.session._stats.LEGACY` (not registered when the session
  moved to the registry), and ``bounds="auto"`` of a registered one (its plan does not
  choose bounds yet);
* :meth:`dpfast.Session.histogram` and :meth:`dpfast.Session.topdown` (their
  :mod:`dpfast.tables` releases are not statistics of the registry).

The probe reads no private row: its rows are synthetic (one row of zeros with the
columns' types, which come from the schema or from binding the row query without running
it, :meth:`dpfast.session._source.Source.fetch_sql`), so what it raises is a function of
public information.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NoReturn

import numpy as np

from dpfast import tables as _tables
from dpfast.tables.spec import ReleaseSpec, StatSpec

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent
    from dpfast.random import RngLike

    from ._cache import Released
    from ._release import Data
    from ._stats import Stat

__all__ = ["call", "one_row", "probe", "spec"]


class _Event(Exception):
    def __init__(self, event: DpEvent) -> None:
        super().__init__("probe")
        self.event = event


class _Probe:
    """A budget that records the event of the charge and stops the release there."""

    def spend(self, event: DpEvent, *, note: str = "", analyst: str = "") -> NoReturn:
        raise _Event(event)

    @contextlib.contextmanager
    def charge(self, event: DpEvent, *, note: str = "", analyst: str = "") -> Iterator[None]:
        raise _Event(event)
        yield  # pragma: no cover


def probe(release: Callable[[_Probe], object]) -> DpEvent:
    """The event ``release(budget)`` charges (run on synthetic rows: it stops there)."""
    try:
        release(_Probe())
    except _Event as e:
        return e.event
    raise RuntimeError("the release charged nothing")


def one_row(empty: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One synthetic row with the dtypes of the (empty) columns ``empty``."""
    out = {}
    for name, a in empty.items():
        dt = np.asarray(a).dtype
        out[name] = (np.zeros(1, dt) if dt.kind in "iufbMm"
                     else np.array([""], dtype=object))
    return out


def call(stat: Stat, kwargs: dict[str, object], data: Data, budget: _Probe | None,
         rng: RngLike) -> Released:
    """``dpfast.tables.<stat.name>(values?, keys, privacy_ids, **kwargs)`` charged to
    ``budget`` (a probe's, or None: the session's ledger query has charged it)."""
    keys, ids, values = data
    kw = dict(kwargs, budget=budget, rng=rng)
    if not stat.per_partition:
        kw.pop("max_per_partition", None)
    if not stat.bounds:
        kw.pop("bounds", None)
    fn = getattr(_tables, stat.name)
    if stat.value:
        return fn(values, keys, ids, **kw)
    return fn(keys, ids, **kw)


def spec(statistic: str, column: str | None, params: dict[str, object], *, rows: str,
         privacy_unit: str | None, epsilon: float | None = None, delta: float = 0.0,
         rho: float | None = None, options: dict[str, object] | None = None) -> ReleaseSpec:
    """The :class:`~dpfast.tables.spec.ReleaseSpec` (the cache's one spec format) of a
    release outside the registry (histogram, topdown): made as given, unchecked -- its
    :mod:`dpfast.tables` function checks its parameters, in the probe, before the charge;
    ``rows``: :meth:`dpfast.session._source.Source.rows_fingerprint`."""
    return ReleaseSpec((StatSpec(statistic, column, tuple(sorted(params.items()))),),
                       privacy_unit=privacy_unit, epsilon=epsilon, delta=delta, rho=rho,
                       options=tuple(sorted((options or {}).items())), rows=rows)
