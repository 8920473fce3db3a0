"""The FROM clause of private SQL: the tables a query reads, the resolution of its column
names to real columns, and its joins (:func:`dpfast.session.sql.plan`).

The private table must come first, under an alias without a column list (the privacy unit
is the private table's own column: ``FROM t AS f(a, b, ..., unit)`` is refused); public
tables are joined ``[INNER | LEFT] JOIN ... ON`` ANDed equalities of one of their columns
with a column of a table before them, or ``USING (cols)``.  Without a privacy unit, a
public side's key must be unique among the public table's rows (:func:`check_unique`).
Column names resolve as DuckDB resolves them (case-insensitively; ``table.column`` by the
table's alias, else its name; a bare name in one table only, or a ``USING`` column) to a
:class:`dpfast.session._expr.Col`: the schema -- public -- gives its kind.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from . import _expr
from ._engine import quote
from ._expr import Col
from ._query import Join
from ._refuse import SqlRefusedError
from ._source import Source

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["Scope", "Table", "check_unique", "join", "scope"]

@dataclasses.dataclass(frozen=True)
class Table:
    """A table of the query: its real name, how the query names it, its schema."""

    name: str                   # the real table name
    label: str                  # how the query names it (its alias, else its name)
    types: dict[str, str]       # column -> DuckDB type (the schema, public)

    def find(self, name: str) -> str | None:
        """The real column named ``name`` (DuckDB: case-insensitive), if any."""
        if name in self.types:
            return name
        hits = [c for c in self.types if c.casefold() == name.casefold()]
        return hits[0] if len(hits) == 1 else None


class Scope:
    """The tables of a query (0: the private one) and the resolution of column names."""

    def __init__(self, tables: list[Table]) -> None:
        self.tables = tables
        self.using: set[str] = set()
        self.visible = len(tables)

    def resolve(self, node: exp.Column) -> Col:
        """The real column a sqlglot ``Column`` names among the visible tables (a join's ON
        sees the tables up to its own); refused (``column``) if none or several."""
        if node.args.get("db") or node.args.get("catalog"):
            raise SqlRefusedError("column", f"{node.sql('duckdb')}: table.column only")
        name, qual = node.name, node.table
        tables = list(enumerate(self.tables[:self.visible]))
        if qual:
            tables = [(i, t) for i, t in tables if t.label.casefold() == qual.casefold()]
            if not tables:
                raise SqlRefusedError("column", f"{qual}.{name}: no table {qual!r} here")
        found = [(i, t.find(name)) for i, t in tables if t.find(name) is not None]
        if len(found) > 1 and not qual and name.casefold() in self.using:
            found = found[:1]  # a USING column: the first table's
        if len(found) > 1:
            raise SqlRefusedError("column", f"{name!r} is a column of several tables: "
                                  "qualify it (table.column)")
        if not found:
            raise SqlRefusedError("column", f"{name!r} is not a column of "
                                  f"{', '.join(t.name for _, t in tables)}")
        i, real = found[0]
        assert real is not None
        return Col(i, real, _expr.kind_of(self.tables[i].types[real]))


def _public_types(src: Source, name: str) -> dict[str, str]:
    rel = src.con.sql(f"SELECT * FROM {quote(name)} LIMIT 0")
    return {c: str(t) for c, t in zip(rel.columns, rel.types)}


def _table(t: exp.Expr, src: Source) -> Table:
    from sqlglot import exp

    if not isinstance(t, exp.Table) or not isinstance(t.this, exp.Identifier):
        raise SqlRefusedError("unknown_table", f"FROM {t.sql('duckdb')}: name a table")
    for k, v in t.args.items():
        if k in ("this", "alias") or not v:
            continue
        if k in ("db", "catalog"):
            raise SqlRefusedError("unknown_table", f"{t.sql('duckdb')}: a table by its name")
        raise SqlRefusedError("clause", f"{'TABLESAMPLE' if k == 'sample' else k.upper()} "
                              f"on {t.name} is not answered")
    alias = t.args.get("alias")
    if alias is not None and alias.args.get("columns"):
        raise SqlRefusedError("column_alias", f"{t.sql('duckdb')}: a column-alias list")
    name = t.name
    label = alias.name if alias is not None and alias.name else name
    if name == src.name or name.casefold() == src.name.casefold():
        return Table(src.name, label, dict(src.schema(src.stamps())))
    public = [p for p in src.public if p == name] or [
        p for p in src.public if p.casefold() == name.casefold()]
    if len(public) != 1:
        raise SqlRefusedError("unknown_table", f"{name} (private: {src.name}; public: "
                              f"{', '.join(sorted(src.public)) or 'none'})")
    return Table(public[0], label, _public_types(src, public[0]))


def scope(tree: exp.Expr, src: Source) -> tuple[Scope, list[exp.Join]]:
    """The tables of ``tree`` (a sqlglot SELECT) and its join nodes; refused unless the
    private table comes first and each join is INNER / LEFT with ON or USING."""
    frm = tree.args.get("from_") or tree.args.get("from")
    if frm is None:
        raise SqlRefusedError("no_private_table", "no FROM clause")
    joins = tree.args.get("joins") or []
    tables = [_table(frm.this, src)] + [_table(j.this, src) for j in joins]
    private = [i for i, t in enumerate(tables) if t.name == src.name]
    if len(private) > 1:
        raise SqlRefusedError("self_join", f"{src.name} appears twice")
    if not private:
        raise SqlRefusedError("no_private_table", f"the query does not read {src.name}")
    if private[0] != 0:
        raise SqlRefusedError("join_kind", f"the private table {src.name} must come first "
                              "(FROM private JOIN public)")
    labels = [t.label.casefold() for t in tables]
    if len(set(labels)) != len(labels):
        raise SqlRefusedError("column", "two tables of the query have one name")
    for j in joins:
        side, kind = (j.args.get("side") or "").upper(), (j.args.get("kind") or "").upper()
        other = [k for k, v in j.args.items()
                 if v and k not in ("this", "on", "using", "side", "kind")]
        if side not in ("", "LEFT") or kind not in ("", "INNER", "OUTER") or (
                side == "" and kind == "OUTER") or other:
            raise SqlRefusedError("join_kind", f"{j.sql('duckdb').strip()}")
        if j.args.get("on") is None and not j.args.get("using"):
            raise SqlRefusedError("join_kind", f"a join without ON / USING: "
                                  f"{j.sql('duckdb').strip()} (a cross join)")
    return Scope(tables), joins


def join(scope: Scope, i: int, j: exp.Join) -> Join:
    """The ``i``-th table's join: equalities of its columns with earlier tables' ones."""
    from sqlglot import exp

    scope.visible = i + 1
    table = scope.tables[i]
    pairs: list[tuple[Col, Col]] = []
    if j.args.get("using"):
        for ident in j.args["using"]:
            name = ident.name
            mine = table.find(name)
            earlier = [(k, t.find(name)) for k, t in enumerate(scope.tables[:i])
                       if t.find(name) is not None]
            if mine is None or not earlier:
                raise SqlRefusedError("column", f"USING ({name}): not in both tables")
            k, real = earlier[0]
            assert real is not None
            pairs.append((Col(k, real, _expr.kind_of(scope.tables[k].types[real])),
                          Col(i, mine, _expr.kind_of(table.types[mine]))))
            scope.using.add(name.casefold())
    else:
        terms, todo = [], [j.args["on"]]
        while todo:
            t = todo.pop()
            while isinstance(t, exp.Paren):
                t = t.this
            if isinstance(t, exp.And):
                todo += [t.expression, t.this]
            else:
                terms.append(t)
        for t in terms:
            a, b = (t.this, t.expression) if isinstance(t, exp.EQ) else (None, None)
            while isinstance(a, exp.Paren) or isinstance(b, exp.Paren):
                a, b = (a.this if isinstance(a, exp.Paren) else a,
                        b.this if isinstance(b, exp.Paren) else b)
            if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
                raise SqlRefusedError("join_predicate", f"ON {t.sql('duckdb')}: only "
                                      "column = column equalities (ANDed)")
            ca, cb = scope.resolve(a), scope.resolve(b)
            if (ca.table == i) == (cb.table == i):
                raise SqlRefusedError("join_predicate", f"ON {t.sql('duckdb')}: each "
                                      f"equality compares a column of {table.name} with "
                                      "one of a table before it")
            pairs.append((cb, ca) if ca.table == i else (ca, cb))
    for a, b in pairs:
        for c in (a, b):
            if c.kind not in _expr.KEY_KINDS:
                raise SqlRefusedError("type", f"a join on {c.name} ({c.kind})")
        _expr._merge([a.kind, b.kind], f"the join of {a.name} with {b.name}")
    scope.visible = len(scope.tables)
    left = (j.args.get("side") or "").upper() == "LEFT"
    return Join(table.name, left, tuple(pairs))


def check_unique(src: Source, join: Join) -> None:
    """Without a privacy unit each private row must match at most one public row: the
    public side's key is unique among the public table's rows (public data)."""
    keys = []
    for other, mine in join.on:
        e = quote(mine.name)
        if "float" in (mine.kind, other.kind):  # -0.0 = 0.0 and large ints as doubles
            e = f"(CAST({e} AS DOUBLE) + 0.0)"
        keys.append(e)
    notnull = " AND ".join(f"{quote(m.name)} IS NOT NULL" for _, m in join.on)
    dups = src.con.sql(f"SELECT count(*) FROM (SELECT 1 FROM {quote(join.table)} WHERE "
                       f"{notnull} GROUP BY {', '.join(keys)} HAVING count(*) > 1)"
                       ).fetchall()[0][0]
    if dups:
        cols = ", ".join(m.name for _, m in join.on)
        raise SqlRefusedError("join_multiplies", f"{join.table} has {dups} duplicate keys "
                              f"on ({cols}): a row would count several times")
