"""The answer to a private SQL query (:meth:`dpfast.Session.sql`): one cached
:mod:`dpfast.tables` release per aggregate of a planned query (:func:`dpfast.session.sql.plan`),
on common keys, under the budget split stated in :mod:`dpfast.session.sql`."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import tables as _tables

from . import _cache, _query, _spec
from .sql import SqlRefusedError, plan

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

    def __init__(self, releases: dict[str, Any], key_names: list[str], order: list[Any],
                 rule: str) -> None:
        self.releases = releases
        self.key_names = key_names
        self._order = order
        self.rule = rule

    @property
    def events(self) -> list[Any]:
        """The events charged, one per aggregate."""
        return [r.event for r in self.releases.values()]

    def to_pandas(self) -> Any:
        """The table: the group-by columns and one column per aggregate (rows: the keys
        of the first aggregate, in its order, then sorted by ORDER BY)."""
        import pandas as pd

        first = next(iter(self.releases.values()))
        keys = first.keys if isinstance(first.keys, tuple) else (first.keys,)
        cols: dict[str, Any] = {}
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
        parts = ", ".join(f"{n}: {r.statistic}" for n, r in self.releases.items())
        first = next(iter(self.releases.values()))
        return f"SqlRelease({len(first)} keys; {parts}; {self.rule})"


def _split(x: float | None, m: int) -> float | None:
    """``x / m`` rounded down so that ``m`` parts never sum above ``x`` (exactly)."""
    if x is None or x == 0 or m == 1:
        return x
    part = x / m
    while Fraction(part) * m > Fraction(x):
        part = math.nextafter(part, 0.0)
    return part


def run(session: Any, text: str, *, epsilon: float | None = None, delta: float = 0.0,
        rho: float | None = None, noise: str | None = None, max_partitions: int | None = None,
        max_per_partition: int | None = None) -> SqlRelease:
    """:meth:`dpfast.Session.sql`: plan, then one cached release per aggregate."""
    from dpfast.session.session import STATISTICS

    src = session._source
    unit = session.privacy_unit
    p = plan(text, src, unit)
    for a in p.aggs:
        if a.statistic not in STATISTICS:
            raise SqlRefusedError("unavailable", f"{a.label} needs dpfast.tables."
                                  f"{a.statistic}, which this version does not have")
        if STATISTICS[a.statistic].value:
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
    releases: dict[str, Any] = {}
    for i, a in enumerate(p.aggs):
        d = _split(delta, m) if public_keys else (delta if i == 0 else 0.0)
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


def sql_release(self: Any, plan: Any, agg: Any, *, epsilon: Any, delta: Any, rho: Any,
                 noise: Any, domain: Any, max_partitions: Any, max_per_partition: Any,
                 need: float | None = None) -> Any:
    """One aggregate of a planned SQL query, through the cache (:func:`run`)."""
    from dpfast.session.session import STATISTICS

    src, pid = self._source, self.privacy_unit
    stat = STATISTICS[agg.statistic]
    k = self.max_partitions if max_partitions is None else max_partitions
    c = self.max_per_partition if max_per_partition is None else max_per_partition
    row_sql = _query.rows_sql(plan, agg, pid, stat.value)
    bounds = self.bounds[agg.column.name] if stat.value else None
    spec = {"statistic": agg.statistic, "rows": row_sql, "extra": agg.extra,
            "source": src.fingerprint(_sql_columns(self, plan, agg)),
            "public": [src.fingerprint_public(t) for t in plan.public_used],
            "privacy_unit": pid, "epsilon": epsilon, "delta": delta, "rho": rho,
            "noise": noise, "bounds": None if bounds is None else list(bounds),
            "max_partitions": k, "max_per_partition": c,
            "domain": _spec.domain_fingerprint(domain)}
    what = f"sql {agg.name} = {agg.label}" + (
        f" by {', '.join(k.name for k in plan.keys)}" if plan.keys else "")
    kwargs = dict(epsilon=epsilon, delta=delta, rho=rho, noise=noise, domain=domain,
                  max_partitions=k, max_per_partition=c, rng=self.rng, note=what)
    if bounds is not None:
        kwargs["bounds"] = bounds
    # an aggregate's own parameters (QUANTILE's q) go to the statistic by name
    kwargs.update({k: v for k, v in agg.extra.items() if k != "not_null"})
    n_keys = max(1, len(plan.keys))

    # a plain GROUP BY of the private table's columns (no join, no WHERE): a pandas
    # source's rows are read from the frame in place, a file source's from its column
    # cache (the arrays DuckDB would give: Source.plain_rows)
    plain = {f"__k{i}": k.name for i, k in enumerate(plan.keys)} \
        if plan.keys and not plan.joins and plan.where is None else None
    if plain is not None:
        plain_notnull = [k.name for k in plan.keys]
        if pid:
            plain["__pid"] = pid
            plain_notnull.append(pid)
        if agg.column is not None:
            if stat.value:
                plain["__v"] = agg.column.name
            plain_notnull.append(agg.column.name)

    def rows(limit: int | None = None) -> tuple[Any, Any, Any]:
        got = None if plain is None else src.plain_rows(plain, plain_notnull, limit)
        if got is None:
            got = src.fetch_sql(row_sql, limit=limit, ids=["__pid"] if pid else [])
        if limit == 0:
            got = _cache.one_row(got)
        kc = got["__k0"] if n_keys == 1 else tuple(got[f"__k{i}"] for i in range(n_keys))
        return kc, got.get("__pid"), got.get("__v")

    rel = self._table_release(stat, spec, what, rows, kwargs, need)
    if plan.keys:
        if isinstance(rel, _tables.QuantileRelease):  # a frozen dataclass
            rel = dataclasses.replace(rel, key_names=tuple(plan.key_names))
        else:
            rel._key_names = tuple(plan.key_names)
    return rel


def _sql_columns(self: Any, plan: Any, agg: Any) -> list[str]:
    """The private table's columns the generated row query reads (resolved real names:
    the keys, the condition, the join keys, every aggregate's column, the unit)."""
    used = set(plan.columns)
    if self.privacy_unit:
        used.add(self.privacy_unit)
    return sorted(used)
