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

with ``AGG`` one of ``COUNT(*)``, ``COUNT(col)``, ``COUNT(DISTINCT privacy_unit)``
(:func:`dpfast.tables.privacy_id_count`), ``COUNT(DISTINCT col)`` of another column
(:func:`dpfast.tables.count_distinct`), or a statistic of the registry
(:data:`dpfast.tables.statistics.REGISTRY`) by one of its ``sql_names`` -- ``SUM``,
``AVG``, ``VAR_POP`` / ``STDDEV_POP`` (:func:`dpfast.tables.variance` / ``std``,
population statistics), ``MEDIAN``, ``QUANTILE(col, q)`` (its own parameters as number
literals after the column), and any statistic registered later, with no edit here
(:data:`dpfast.session.STATISTICS`).  Every column is resolved against the tables' schemas
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

import types
from typing import TYPE_CHECKING

from dpfast.tables.statistics.base import REQUIRED

from . import _expr, _relation, _stats
from ._engine import quote
from ._expr import Col
from ._query import Agg, Query
from ._refuse import REASONS, SqlRefusedError  # noqa: F401 (re-exported)
from ._relation import Scope, Table
from ._source import Source

if TYPE_CHECKING:
    from sqlglot import exp

# REASONS and SqlRefusedError (dpfast.session._refuse) are re-exported here and documented
# as dpfast.session.REASONS / dpfast.session.SqlRefusedError
__all__ = ["plan", "row_filter"]


def _sqlglot() -> types.ModuleType:
    try:
        import sqlglot
    except ImportError as exc:  # pragma: no cover - sqlglot is in the test extra
        raise ImportError("SQL needs sqlglot: pip install 'dpfast[session]'") from exc
    return sqlglot


def _parse(text: str) -> exp.Expr:
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


def _no_nested(tree: exp.Expr) -> None:
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


def _check_clauses(tree: exp.Expr) -> None:
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


# ------------------------------------------------------------------------- aggregates
#: sample statistics: refused, naming the population one dpfast releases
_SAMPLE = {"Variance": "VAR_POP", "Stddev": "STDDEV_POP", "StddevSamp": "STDDEV_POP"}


def _spellings(node: exp.Func) -> set[str]:
    """The lower-case names an aggregate call is known by (sqlglot's names of its
    function; a function sqlglot does not know: the name written)."""
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return {str(node.name).lower()}
    return {n.lower() for n in type(node).sql_names()} | {node.key}


def _arguments(node: exp.Expr
               ) -> tuple[exp.Expr | None, list[exp.Expr]]:
    """An aggregate call's first argument and the others, in order."""
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        args = list(node.expressions)
        return (args[0] if args else None), args[1:]
    rest = [node.args.get(k) for k in type(node).arg_types if k != "this"]
    return node.this, [a for a in rest if a is not None and a is not False]


def _aggregate(node: exp.Func, alias: str | None, unit: str | None, scope: Scope) -> Agg:
    """One aggregate call: ``COUNT(*)`` / ``COUNT(col)`` / ``COUNT(DISTINCT unit)``, or a
    statistic of :mod:`dpfast.session._stats` by its SQL names (the registry's
    ``sql_names``): its column, then its own parameters (number literals, in the order
    the statistic declares them)."""
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
            if col is not None and col.table == 0 and col.name == unit:
                return Agg(alias or "people", "privacy_id_count", None,
                           f"COUNT(DISTINCT {quote(col.name)})")
            # COUNT(DISTINCT col) of another column: the registered distinct count (its
            # SQL name "count_distinct"), bounded per person (max_per_partition values)
            stat = _stats.from_sql({"count_distinct"})
            if col is None or col.table != 0 or stat is None:
                raise SqlRefusedError("count_distinct", f"{text}: COUNT(DISTINCT x) takes "
                                      "one column of the private table")
            if col.kind not in _expr.KEY_KINDS:
                raise SqlRefusedError("type", f"{text}: a {col.kind} column")
            return Agg(alias or f"{stat.session_name}_{col.name}", stat.name, col,
                       f"COUNT(DISTINCT {quote(col.name)})", ())
        if not isinstance(arg, exp.Column):
            raise SqlRefusedError("aggregate_argument", f"{text}: COUNT of an expression")
        col = scope.resolve(arg)
        return Agg(alias or f"count_{arg.name}", "count", col, f"COUNT({quote(col.name)})")
    if kind in _SAMPLE:
        raise SqlRefusedError("sample_statistic", f"{text} is a sample statistic; dpfast "
                              f"releases the population one: {_SAMPLE[kind]}")
    stat = None if isinstance(node, exp.Count) else _stats.from_sql(_spellings(node))
    if stat is None:
        raise SqlRefusedError("unsupported_aggregate", f"{text} has no bounded private "
                              "version")
    arg, extra = _arguments(node)
    if not stat.value:  # a statistic of no column (people per key...): its parameters only
        params = _params(text, stat, ([arg] if arg is not None else []) + extra)
        label = f"{stat.label}({', '.join(repr(v) for _, v in params)})"
        return Agg(alias or stat.session_name, stat.name, None, label, params)
    if not isinstance(arg, exp.Column):
        raise SqlRefusedError("aggregate_argument", f"{text}: aggregate a column, not an "
                              "expression")
    col = scope.resolve(arg)
    if col.table != 0:
        raise SqlRefusedError("unbounded", f"{text}: public bounds are for the private "
                              "table's columns")
    if stat.bounds and col.kind not in _expr.VALUE_KINDS:
        raise SqlRefusedError("type", f"{text}: {col.name} holds {col.kind} values, not "
                              "numbers")
    if not stat.bounds and col.kind not in _expr.KEY_KINDS:  # distinct values: keys
        raise SqlRefusedError("type", f"{text}: a {col.kind} column")
    params = _params(text, stat, extra, columns=1)
    label = f"{stat.label}({', '.join([quote(col.name)] + [repr(v) for _, v in params])})"
    return Agg(alias or f"{stat.session_name}_{arg.name}", stat.name, col, label, params)


def _params(text: str, stat: _stats.Stat, args: list[exp.Expr], columns: int = 0
            ) -> tuple[tuple[str, object], ...]:
    """A statistic's own parameters from an aggregate call's arguments after its column:
    number literals, in the order the statistic declares them; refused otherwise."""
    from sqlglot import exp

    names = list(stat.params)
    # trailing parameters with a default may be left out (they take it, as in a method call)
    required = max((i + 1 for i, n in enumerate(names)
                    if stat.params[n] is REQUIRED), default=0)
    if not required <= len(args) <= len(names):
        raise SqlRefusedError("aggregate_argument", f"{text}: {stat.label} takes "
                              f"{len(names) + columns} argument(s)")
    params = [(pname, stat.params[pname]) for pname in names[len(args):]]
    for pname, lit in zip(names, args):
        what = "the quantile" if pname == "q" else f"its {pname}"
        if not isinstance(lit, exp.Literal) or lit.is_string:
            raise SqlRefusedError("aggregate_argument", f"{text}: {what} must be a "
                                  "number literal")
        try:
            params.append((pname, float(lit.this)))
        except ValueError:
            raise SqlRefusedError("aggregate_argument", f"{text}: {what}") from None
    return tuple(sorted(params))


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
    scope, join_nodes = _relation.scope(tree, src)
    joins = tuple(_relation.join(scope, i, j) for i, j in enumerate(join_nodes, 1))
    if unit is None:
        for j in joins:
            _relation.check_unique(src, j)
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
        if isinstance(node, exp.AggFunc) or (isinstance(node, exp.Anonymous)
                                             and _stats.from_sql(_spellings(node))):
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


def _order(o: exp.Expr | None, scope: Scope, keys: list[Col], names: list[str],
           aggs: list[str]) -> tuple[tuple[str, bool], ...]:
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


def row_condition(where: str, src: Source) -> _expr.Expr:
    """A per-row condition ``where`` on the private table (columns unqualified) read into
    dpfast's query model (an expression of :mod:`dpfast.session._expr`); refused
    (:class:`SqlRefusedError`) outside its whitelist."""
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
    scope = Scope([Table(src.name, src.name, dict(src.schema(src.stamps())))])
    return _expr.read(cond, scope.resolve, "where")


def row_filter(where: str, src: Source) -> tuple[str, list[str]]:
    """The SQL dpfast generates for a per-row condition ``where`` on the private table
    (columns unqualified) and the real columns it reads (:func:`row_condition`)."""
    e = row_condition(where, src)
    return _expr.render(e, lambda table: None), sorted({c.name for c in _expr.columns(e)})
