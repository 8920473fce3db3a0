"""dpfast's model of a private SQL query, and the SQL dpfast generates from it.

:func:`dpfast.session.sql.plan` reads the analyst's text into a :class:`Query` (the private
table, equality joins with public tables, a per-row condition of the whitelist
(:mod:`dpfast.session._expr`), group-by columns, aggregates, ORDER BY group-by columns);
nothing of the text is run.  :func:`rows_sql` writes the one SELECT that reads an
aggregate's rows: every table under a generated alias (``"t0"`` the private table,
``"t1"``... the public ones), every identifier quoted, every literal written by dpfast, no
comments, and the privacy unit read from the private table's own column.
"""

from __future__ import annotations

import dataclasses

from . import _expr
from ._engine import quote
from ._expr import Col, Expr

__all__ = ["Agg", "Join", "Query", "qualifier", "relation_sql", "rows_sql"]


@dataclasses.dataclass(frozen=True)
class Join:
    """``[INNER | LEFT] JOIN table ON a1 = b1 AND ...``: pairs of (a column of a table
    before it, a column of ``table``)."""

    table: str
    left: bool
    on: tuple[tuple[Col, Col], ...]


@dataclasses.dataclass(frozen=True)
class Agg:
    """One aggregate: its output name, the statistic's name (:mod:`dpfast.tables` /
    registry name, :func:`dpfast.session._stats.lookup`), the column it reads (None:
    ``COUNT(*)``, people per key), its label and its own parameters (``(("q", 0.5),)``)."""

    name: str
    statistic: str
    column: Col | None
    label: str               # the aggregate as dpfast writes it (for notes)
    params: tuple[tuple[str, object], ...] = ()


@dataclasses.dataclass(frozen=True)
class Query:
    """A planned query (see the module docstring)."""

    private: str
    joins: tuple[Join, ...]
    where: Expr | None
    keys: tuple[Col, ...]
    key_names: tuple[str, ...]
    aggs: tuple[Agg, ...]
    order: tuple[tuple[str, bool], ...]

    @property
    def public_used(self) -> list[str]:
        """The public tables joined."""
        return [j.table for j in self.joins]

    @property
    def columns(self) -> list[str]:
        """The private table's columns the query reads (its real names)."""
        cols = list(self.keys) + list(_expr.columns(self.where))
        cols += [c for j in self.joins for pair in j.on for c in pair]
        cols += [a.column for a in self.aggs if a.column is not None]
        return sorted({c.name for c in cols if c.table == 0})

    @property
    def private_keys(self) -> bool:
        """Every group-by column is the private table's."""
        return all(k.table == 0 for k in self.keys)


def qualifier(table: int) -> str:
    """The generated alias of the query's ``table``-th table."""
    return quote(f"t{table}")


def relation_sql(q: Query) -> str:
    """``"private" AS "t0" [INNER | LEFT] JOIN "public" AS "t1" ON ...``."""
    out = f"{quote(q.private)} AS {qualifier(0)}"
    for i, j in enumerate(q.joins, 1):
        on = " AND ".join(f"{_expr.render(a, qualifier)} = {_expr.render(b, qualifier)}"
                          for a, b in j.on)
        out += f" {'LEFT' if j.left else 'INNER'} JOIN {quote(j.table)} AS {qualifier(i)} ON {on}"
    return out


def rows_sql(q: Query, agg: Agg, unit: str | None, value: bool) -> str:
    """The SELECT of ``agg``'s rows: ``__k0``... (the keys), ``__pid`` (the privacy unit,
    the private table's column ``unit``), ``__v`` (the value, if ``value``), rows whose
    keys, unit and aggregated column are not NULL and that pass the condition."""
    keys = [_expr.render(k, qualifier) for k in q.keys]
    sel = [f"{k} AS {quote(f'__k{i}')}" for i, k in enumerate(keys)] or [
        f"0 AS {quote('__k0')}"]
    notnull = list(keys)
    if unit is not None:
        pid = f"{qualifier(0)}.{quote(unit)}"
        sel.append(f"{pid} AS {quote('__pid')}")
        notnull.append(pid)
    if agg.column is not None:
        col = _expr.render(agg.column, qualifier)
        if value:
            sel.append(f"{col} AS {quote('__v')}")
        notnull.append(col)
    conds = ([_expr.render(q.where, qualifier)] if q.where is not None else []) + [
        f"({c} IS NOT NULL)" for c in dict.fromkeys(notnull)]
    return (f"SELECT {', '.join(sel)} FROM {relation_sql(q)}"
            + (f" WHERE {' AND '.join(conds)}" if conds else ""))
