"""The answer to a private SQL query (:meth:`dpfast.Session.sql`): one cached
:mod:`dpfast.tables` release per aggregate of a planned query (:func:`dpfast.session.sql.plan`),
on common keys, under the budget split stated in :mod:`dpfast.session.sql`."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from dpfast import tables as _tables

from . import _release, _stats
from ._query import Agg, Query
from .sql import SqlRefusedError, plan

if TYPE_CHECKING:
    import pandas as pd

    from dpfast.accounting.events import DpEvent
    from dpfast.tables.release import TableRelease

    from .session import Session

__all__ = ["SqlRelease", "run", "sql_release"]


class SqlRelease:
    """The answer to a private SQL query: one :class:`dpfast.tables.TableRelease` per
    aggregate, on common keys.

    Attributes
    ----------
    releases : dict
        Output column name -> its release (event, noise law, intervals).
    key_names : list of str
        The group-by output columns.
    rule : str
        How the budget was split.
    """

    def __init__(self, releases: dict[str, _release.Released], key_names: list[str],
                 order: list[tuple[str, bool]],
                 rule: str) -> None:
        self.releases = releases
        self.key_names = key_names
        self._order = order
        self.rule = rule

    @property
    def events(self) -> list[DpEvent]:
        """The events charged, one per aggregate."""
        return [r.event for r in self.releases.values()]

    def to_pandas(self) -> pd.DataFrame:
        """The table: the group-by columns and one column per aggregate (rows: the keys
        of the first aggregate, in its order, then sorted by ORDER BY)."""
        import pandas as pd

        first = next(iter(self.releases.values()))
        keys = first.keys if isinstance(first.keys, tuple) else (first.keys,)
        cols: dict[str, npt.ArrayLike] = {}
        for n, k in zip(self.key_names, keys):
            cols[n] = k
        for name, rel in self.releases.items():
            cols[name] = rel.values
        df = pd.DataFrame(cols).drop(columns=[c for c in cols if c.startswith("__")])
        if self._order:
            df = df.sort_values([c for c, _ in self._order],
                                ascending=[not d for _, d in self._order],
                                ignore_index=True)
        return df

    def __repr__(self) -> str:
        parts = ", ".join(f"{n}: {_statistic(r)}" for n, r in self.releases.items())
        first = next(iter(self.releases.values()))
        return f"SqlRelease({len(first)} keys; {parts}; {self.rule})"


def _statistic(rel: _release.Released) -> str:
    """The statistic a release answers (a QuantileRelease: its quantiles)."""
    from dpfast.tables.quantile_release import QuantileRelease

    if isinstance(rel, QuantileRelease):
        return f"quantile(q={', '.join(f'{q:g}' for q in rel.q)})"
    return rel.statistic


def _split(x: float | None, m: int) -> float | None:
    """``x / m`` rounded down so that ``m`` parts never sum above ``x`` (exactly)."""
    if x is None or x == 0 or m == 1:
        return x
    part = x / m
    while Fraction(part) * m > Fraction(x):
        part = math.nextafter(part, 0.0)
    return part


def run(session: Session, text: str, *, epsilon: float | None = None, delta: float = 0.0,
        rho: float | None = None, noise: str | None = None, max_partitions: int | None = None,
        max_per_partition: int | None = None) -> SqlRelease:
    """:meth:`dpfast.Session.sql`: plan, then one cached release per aggregate."""
    src = session._source
    unit = session.privacy_unit
    p = plan(text, src, unit)
    for a in p.aggs:
        stat = _stats.lookup(a.statistic)
        if stat is None:
            raise SqlRefusedError("unavailable", f"{a.label} needs dpfast.tables."
                                  f"{a.statistic}, which this version does not have")
        if stat.bounds:
            assert a.column is not None and a.column.table == 0
            if a.column.name not in session.bounds:
                col = a.column.name
                raise SqlRefusedError("unbounded", f"{a.label} needs public bounds for {col}: "
                                      f"Session(bounds={{{col!r}: (lo, hi)}})")
    # public key domains are the private table's columns' (a public table's column of the
    # same name is another column)
    domain = (session._domain([k.name for k in p.keys]) if p.private_keys else None) \
        if p.keys else np.zeros(1, np.int64)
    m = len(p.aggs)
    if domain is None and not delta:
        raise SqlRefusedError("no_keys_selection", f"GROUP BY {', '.join(p.key_names)}: give "
                              "domains= for these columns or delta > 0")
    eps, r = _split(epsilon, m), _split(rho, m)
    public_keys = domain is not None
    rule = (f"epsilon/{m} per aggregate" + (f", delta/{m} each" if public_keys and delta
                                             else ", delta to the first (key selection)"
                                             if not public_keys else ""))
    releases: dict[str, _release.Released] = {}
    for i, a in enumerate(p.aggs):
        d = cast(float, _split(delta, m)) if public_keys else (delta if i == 0 else 0.0)
        need = None if eps is None or m == 1 else eps * (m - i)
        rel = sql_release(session, p, a, epsilon=eps, delta=d, rho=r, noise=noise,
                          domain=domain, max_partitions=max_partitions,
                          max_per_partition=max_per_partition, need=need)
        releases[a.name] = rel  # names are unique (checked by plan, before any charge)
        if domain is None:
            domain = rel.keys
            if len(rel) == 0:
                break
    names = list(p.key_names) if p.keys else ["__all"]
    return SqlRelease(releases, names, list(p.order), rule)


def sql_release(self: Session, plan: Query, agg: Agg, *, epsilon: float | None,
                delta: float, rho: float | None, noise: str | None, domain: _release.Domain,
                max_partitions: int | None, max_per_partition: int | None,
                need: float | None = None) -> _release.Released:
    """One aggregate of a planned SQL query, through the cache (:func:`run`): the release
    :mod:`dpfast.session._release` makes for a method call asking the same question (the
    same spec, so the same cached answer and one charge)."""
    stat = _stats.lookup(agg.statistic)
    assert stat is not None  # checked by run, before any charge
    k = self.max_partitions if max_partitions is None else max_partitions
    c = self.max_per_partition if max_per_partition is None else max_per_partition
    bounds = self.bounds[agg.column.name] if stat.bounds and agg.column is not None else None
    what = f"sql {agg.name} = {agg.label}" + (
        f" by {', '.join(k.name for k in plan.keys)}" if plan.keys else "")
    rel = _release.run(self, plan, agg, stat, epsilon=epsilon, delta=delta, rho=rho,
                       noise=noise, bounds=bounds, domain=domain, max_partitions=k,
                       max_per_partition=c, bounding="uniform", what=what, need=need)
    if plan.keys:
        if isinstance(rel, _tables.QuantileRelease):  # a frozen dataclass
            rel = dataclasses.replace(rel, key_names=tuple(plan.key_names))
        else:
            cast("TableRelease", rel)._key_names = tuple(plan.key_names)
    return rel
