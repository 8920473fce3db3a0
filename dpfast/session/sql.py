"""Private answers to aggregate SQL (:meth:`dpfast.Session.sql`).

The analyst never writes SQL that the engine runs.  The query is parsed with sqlglot
(DuckDB dialect) and read into dpfast's own query model (:class:`dpfast.session._query.Query`)
-- a whitelist::

    SELECT g1, ..., AGG(col) [AS name], ...
    FROM private [AS p] [[INNER | LEFT] JOIN public [AS u] ON p.a = u.b [AND ...]
                         | USING (a, ...)] ...
    [WHERE per-row condition of whitelisted operators and functions]
    [GROUP BY g1, ...]
    [ORDER BY g1, ...]

with ``AGG`` one of ``COUNT(*)``, ``COUNT(col)``, ``SUM``, ``AVG``, ``COUNT(DISTINCT
privacy_unit)`` (:func:`dpfast.tables.privacy_id_count`), ``VAR_POP`` / ``STDDEV_POP``
(:func:`dpfast.tables.variance` / ``std``, population statistics), ``MEDIAN`` and
``QUANTILE(col, q)`` (:func:`dpfast.tables.median` / ``quantile``) -- the dispatch table
:data:`dpfast.session.STATISTICS`.  Every column is resolved against the tables' schemas
(public) to a real column of one table; the per-row condition is read by
:mod:`dpfast.session._expr` (its whitelist, types and declared semantics of non-total
operations).  dpfast then generates the one SELECT that reads an aggregate's rows
(:func:`dpfast.session._query.rows_sql`); DuckDB runs it, dpfast bounds each person's
contribution, charges the budget and adds the noise.  Anything outside the whitelist --
a function, a clause, a join predicate, a column-alias list, an implicit cast -- is refused
with a :class:`SqlRefusedError` whose ``reason`` names the rule (the list is
:data:`REASONS`), before anything is charged.

Budget split: the ``m`` aggregates of a query get ``epsilon / m`` each (rounded down, so
the parts never sum above ``epsilon``); before the first aggregate not in the cache is
charged, what all the remaining ones need must be left (of the analyst's sub-budget and of
the total), else the query is refused with nothing charged.  When the group-by keys are
public (the session's ``domains``) every aggregate releases those keys and gets
``delta / m``; otherwise the first aggregate selects the keys privately with all of
``delta``, and its released keys are the key domain of the others (post-processing of a
release already charged).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import _expr
from ._expr import Col
from ._query import Agg, Join, Query
from ._refuse import REASONS, SqlRefusedError
from ._source import Source, quote

__all__ = ["REASONS", "SqlRefusedError", "plan", "row_filter"]


def _sqlglot() -> Any:
    try:
        import sqlglot
    except ImportError as exc:  # pragma: no cover - sqlglot is in the test extra
        raise ImportError("SQL needs sqlglot: pip install 'dpfast[session]'") from exc
    return sqlglot


def _parse(text: str) -> Any:
    sqlglot = _sqlglot()
    try:
        trees = sqlglot.parse(text, read="duckdb")
    except sqlglot.errors.ParseError as exc:
        raise SqlRefusedError("syntax", str(exc).splitlines()[0]) from None
    except (sqlglot.errors.TokenError, RecursionError) as exc:
        raise SqlRefusedError("syntax", type(exc).__name__) from None
    if len(trees) != 1 or trees[0] is None:
        raise SqlRefusedError("syntax", f"expected one statement, got {len(trees)}")
    return trees[0]


def _no_nested(tree: Any) -> None:
    from sqlglot import exp

    for sub in tree.find_all(exp.Select, exp.Subquery, exp.Exists, exp.SetOperation):
        if sub is not tree:
            raise SqlRefusedError("subquery", "a subquery")
    if tree.find(exp.Window):
        raise SqlRefusedError("window", "a window function")


#: clauses of a SELECT the model holds; the others are refused by name
_SELECT_ARGS = frozenset({"expressions", "from_", "from", "joins", "where", "group",
                          "order"})
_NAMED = {"with_": "cte", "with": "cte", "distinct": "distinct", "having": "having",
          "limit": "limit", "offset": "limit", "windows": "window"}
_CLAUSE_NAMES = {"sample": "USING SAMPLE", "qualify": "QUALIFY", "laterals": "LATERAL",
                 "pivots": "PIVOT", "into": "INTO", "kind": "SELECT AS", "prewhere": "PREWHERE"}


def _check_clauses(tree: Any) -> None:
    from sqlglot import exp

    if isinstance(tree, exp.SetOperation):
        raise SqlRefusedError("set_operation", type(tree).__name__.upper())
    if not isinstance(tree, exp.Select):
        raise SqlRefusedError("not_select", f"a {type(tree).__name__} statement")
    for k, v in tree.args.items():
        if k in _SELECT_ARGS or v is None or v is False or v == []:
            continue
        name = _CLAUSE_NAMES.get(k, k.rstrip("_").upper())
        raise SqlRefusedError(_NAMED.get(k, "clause"), f"{name} is not answered")
    _no_nested(tree)


# ------------------------------------------------------------------------- tables
@dataclasses.dataclass(frozen=True)
class _Table:
    name: str                   # the real table name
    label: str                  # how the query names it (its alias, else its name)
    types: dict[str, str]       # column -> DuckDB type (the schema, public)

    def find(self, name: str) -> str | None:
        """The real column named ``name`` (DuckDB: case-insensitive), if any."""
        if name in self.types:
            return name
        hits = [c for c in self.types if c.casefold() == name.casefold()]
        return hits[0] if len(hits) == 1 else None


class _Scope:
    """The tables of a query (0: the private one) and the resolution of column names."""

    def __init__(self, tables: list[_Table]) -> None:
        self.tables = tables
        self.using: set[str] = set()
        self.visible = len(tables)

    def resolve(self, node: Any) -> Col:
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


def _table(t: Any, src: Source) -> _Table:
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
        return _Table(src.name, label, dict(src.schema(src.stamps())))
    public = [p for p in src.public if p == name] or [
        p for p in src.public if p.casefold() == name.casefold()]
    if len(public) != 1:
        raise SqlRefusedError("unknown_table", f"{name} (private: {src.name}; public: "
                              f"{', '.join(sorted(src.public)) or 'none'})")
    return _Table(public[0], label, _public_types(src, public[0]))


def _scope(tree: Any, src: Source) -> tuple[_Scope, list[Any]]:
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
    return _Scope(tables), joins


def _join(scope: _Scope, i: int, j: Any) -> Join:
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


def _check_unique(src: Source, join: Join) -> None:
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


# ------------------------------------------------------------------------- aggregates
_POP = {"Sum": "sum", "Avg": "mean", "VariancePop": "variance", "StddevPop": "stddev",
        "Median": "median"}
_SAMPLE = {"Variance": "VAR_POP", "Stddev": "STDDEV_POP", "StddevSamp": "STDDEV_POP"}
_QUANTILE = {"Quantile", "PercentileCont", "PercentileDisc", "ApproxQuantile"}
_SQL_NAME = {"sum": "SUM", "mean": "AVG", "variance": "VAR_POP", "stddev": "STDDEV_POP",
             "median": "MEDIAN", "quantile": "QUANTILE"}


def _aggregate(node: Any, alias: str | None, unit: str | None, scope: _Scope) -> Agg:
    from sqlglot import exp

    kind = type(node).__name__
    text = node.sql("duckdb")
    arg = node.this
    if isinstance(node, exp.Count) and not node.expressions:
        if isinstance(arg, exp.Star):
            return Agg(alias or "count", "count", None, "COUNT(*)")
        if isinstance(arg, exp.Distinct):
            cols = arg.expressions
            col = scope.resolve(cols[0]) if len(cols) == 1 and isinstance(
                cols[0], exp.Column) else None
            if col is None or col.table != 0 or col.name != unit:
                raise SqlRefusedError("count_distinct", f"{text}: only COUNT(DISTINCT "
                                      f"{unit or 'privacy unit'}) (people per key) is bounded")
            return Agg(alias or "people", "privacy_id_count", None,
                       f"COUNT(DISTINCT {quote(col.name)})")
        if not isinstance(arg, exp.Column):
            raise SqlRefusedError("aggregate_argument", f"{text}: COUNT of an expression")
        col = scope.resolve(arg)
        return Agg(alias or f"count_{arg.name}", "count", col, f"COUNT({quote(col.name)})")
    if kind in _SAMPLE:
        raise SqlRefusedError("sample_statistic", f"{text} is a sample statistic; dpfast "
                              f"releases the population one: {_SAMPLE[kind]}")
    if kind not in _POP and kind not in _QUANTILE:
        raise SqlRefusedError("unsupported_aggregate", f"{text} has no bounded private "
                              "version")
    if not isinstance(arg, exp.Column):
        raise SqlRefusedError("aggregate_argument", f"{text}: aggregate a column, not an "
                              "expression")
    stat = _POP.get(kind, "quantile")
    col = scope.resolve(arg)
    if col.table != 0:
        raise SqlRefusedError("unbounded", f"{text}: public bounds are for the private "
                              "table's columns")
    if col.kind not in _expr.VALUE_KINDS:
        raise SqlRefusedError("type", f"{text}: {col.name} holds {col.kind} values, not "
                              "numbers")
    q = None
    label = f"{_SQL_NAME[stat]}({quote(col.name)})"
    if stat == "quantile":
        lit = node.args.get("quantile") or node.args.get("expression")
        if not isinstance(lit, exp.Literal) or lit.is_string:
            raise SqlRefusedError("aggregate_argument", f"{text}: the quantile must be a "
                                  "number literal")
        try:
            q = float(lit.this)
        except ValueError:
            raise SqlRefusedError("aggregate_argument", f"{text}: the quantile") from None
        label = f"QUANTILE({quote(col.name)}, {q!r})"
    return Agg(alias or f"{stat}_{arg.name}", stat, col, label, q)


# ------------------------------------------------------------------------- the query
def plan(text: str, src: Source, unit: str | None) -> Query:
    """Read ``text`` into the query model (:class:`dpfast.session._query.Query`), or refuse
    it (:class:`SqlRefusedError`); reads schemas and public tables only."""
    from sqlglot import exp

    if not isinstance(text, str):
        raise TypeError(f"query must be a str, got {type(text).__name__}")
    if src.kind == "dask":
        raise ValueError("SQL needs a DuckDB-backed source, not a Dask one")
    tree = _parse(text)
    _check_clauses(tree)
    scope, join_nodes = _scope(tree, src)
    joins = tuple(_join(scope, i, j) for i, j in enumerate(join_nodes, 1))
    if unit is None:
        for j in joins:
            _check_unique(src, j)
    group = tree.args.get("group")
    if group is not None and any(v for k, v in group.args.items() if k != "expressions"):
        raise SqlRefusedError("group_by_expression", "GROUP BY ALL / CUBE / ROLLUP / SETS")
    gnodes = list(group.expressions) if group is not None else []
    for g in gnodes:
        if not isinstance(g, exp.Column) or isinstance(g.this, exp.Star):
            raise SqlRefusedError("group_by_expression", g.sql("duckdb"))
    keys = [scope.resolve(g) for g in gnodes]
    for k in keys:
        if k.kind not in _expr.KEY_KINDS:
            raise SqlRefusedError("type", f"GROUP BY {k.name}: a {k.kind} column "
                                  f"({scope.tables[k.table].types[k.name]})")
    key_names: list[str | None] = [None] * len(keys)
    aggs: list[Agg] = []
    extra_keys: list[str] = []  # a key selected twice
    for e in tree.expressions:
        alias = e.alias if isinstance(e, exp.Alias) else None
        node = e.this if isinstance(e, exp.Alias) else e
        if isinstance(node, exp.Star) or (isinstance(node, exp.Column)
                                          and isinstance(node.this, exp.Star)):
            raise SqlRefusedError("raw_rows", "SELECT *")
        if isinstance(node, exp.Column):
            col = scope.resolve(node)
            if col not in keys:
                raise SqlRefusedError("raw_rows", f"{col.name} is neither grouped nor "
                                      "aggregated")
            i = keys.index(col)
            if key_names[i] is None:
                key_names[i] = alias or node.name
            else:
                extra_keys.append(alias or node.name)
            continue
        if isinstance(node, exp.AggFunc):
            if any(a is not node for a in node.find_all(exp.AggFunc)):
                raise SqlRefusedError("aggregate_argument", node.sql("duckdb"))
            aggs.append(_aggregate(node, alias, unit, scope))
            continue
        if node.find(exp.AggFunc):
            raise SqlRefusedError("aggregate_expression", node.sql("duckdb"))
        raise SqlRefusedError("raw_rows", f"{node.sql('duckdb')} is not an aggregate")
    if not aggs:
        raise SqlRefusedError("no_aggregate", "SELECT needs at least one aggregate")
    names = [n if n is not None else g.name for n, g in zip(key_names, gnodes)]
    _check_names(names + extra_keys + [a.name for a in aggs])
    order = _order(tree.args.get("order"), scope, keys, names, [a.name for a in aggs])
    where = tree.args.get("where")
    cond = None
    if where is not None:
        if where.this.find(exp.AggFunc):
            raise SqlRefusedError("subquery", "an aggregate in WHERE")
        cond = _expr.read(where.this, scope.resolve, "WHERE")
    return Query(src.name, joins, cond, tuple(keys), tuple(names), tuple(aggs), order)


def _check_names(names: list[str]) -> None:
    seen: set[str] = set()
    for n in names:
        if not n or n.startswith("__"):
            raise SqlRefusedError("output_name", f"the output name {n!r} (names starting "
                                  "with __ are dpfast's)")
        if n.casefold() in seen:
            raise SqlRefusedError("output_name", f"two output columns named {n}")
        seen.add(n.casefold())


def _order(o: Any, scope: _Scope, keys: list[Col], names: list[str], aggs: list[str]
           ) -> tuple[tuple[str, bool], ...]:
    from sqlglot import exp

    out = []
    for item in (o.expressions if o is not None else []):
        if item.args.get("with_fill"):
            raise SqlRefusedError("clause", "ORDER BY ... WITH FILL")
        col, name = item.this, None
        if isinstance(col, exp.Column) and not col.table and col.name in names:
            name = col.name
        elif isinstance(col, exp.Column) and col.name not in aggs:
            try:
                c = scope.resolve(col)
            except SqlRefusedError:
                c = None
            if c in keys:
                name = names[keys.index(c)]
        if name is None:
            raise SqlRefusedError("order_by", f"ORDER BY {item.sql('duckdb')}: order by "
                                  "group-by columns only")
        out.append((name, bool(item.args.get("desc"))))
    return tuple(out)


def row_filter(where: str, src: Source) -> tuple[str, list[str]]:
    """The SQL dpfast generates for a per-row condition ``where`` on the private table
    (columns unqualified) and the real columns it reads; refused
    (:class:`SqlRefusedError`) outside the whitelist of :mod:`dpfast.session._expr`."""
    from sqlglot import exp

    if src.kind == "dask":
        raise ValueError("where= needs a DuckDB-backed source, not a Dask one")
    tree = _parse(f"SELECT 1 WHERE {where}")
    if not isinstance(tree, exp.Select) or tree.args.get("where") is None or any(
            v for k, v in tree.args.items() if k not in ("expressions", "where")):
        raise SqlRefusedError("syntax", f"where must be one condition, got {where!r}")
    _no_nested(tree)
    cond = tree.args["where"].this
    if cond.find(exp.AggFunc):
        raise SqlRefusedError("subquery", "an aggregate in the WHERE condition")
    scope = _Scope([_Table(src.name, src.name, dict(src.schema(src.stamps())))])
    e = _expr.read(cond, scope.resolve, "where")
    return _expr.render(e, lambda table: None), sorted({c.name for c in _expr.columns(e)})
