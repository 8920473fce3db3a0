"""Private answers to aggregate SQL (:meth:`dpfast.Session.sql`).

The query is parsed with sqlglot (DuckDB dialect) and checked against the subset whose
sensitivity dpfast can bound::

    SELECT g1, ..., AGG(col) [AS name], ...
    FROM private [AS p] [[INNER | LEFT] JOIN public [AS u] ON ... | USING (...)] ...
    [WHERE per-row condition]
    [GROUP BY g1, ...]
    [ORDER BY g1, ...]

with ``AGG`` one of ``COUNT(*)``, ``COUNT(col)``, ``SUM``, ``AVG``, ``COUNT(DISTINCT
privacy_unit)`` (:func:`dpfast.tables.privacy_id_count`), ``VARIANCE`` / ``STDDEV``
(:func:`dpfast.tables.variance` / ``std``), ``MEDIAN`` and ``QUANTILE(col, q)``
(:func:`dpfast.tables.median` / ``quantile``) -- the dispatch table
:data:`dpfast.session.STATISTICS`.  DuckDB does the
non-private row work (joins with public tables, the WHERE filter, the projection); dpfast
bounds each person's contribution, charges the budget and adds the noise.  Anything else is
refused with a :class:`SqlRefusedError` whose ``reason`` names the rule (the list is
:data:`REASONS`).

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

from ._source import Source, quote

__all__ = ["REASONS", "SqlRefusedError", "plan", "row_filter"]

#: reason -> what it refuses
REASONS: dict[str, str] = {
    "syntax": "the text is not one SQL statement",
    "not_select": "only a SELECT is answered",
    "set_operation": "UNION / INTERSECT / EXCEPT combine queries whose sensitivities add up",
    "cte": "WITH clauses",
    "subquery": "a subquery (its rows may depend on everyone's data)",
    "window": "window functions (a row's value depends on other people's rows)",
    "distinct": "SELECT DISTINCT (it publishes the private set of values)",
    "raw_rows": "selecting raw rows or columns that are not grouped",
    "no_aggregate": "a query with no aggregate publishes private rows or keys",
    "aggregate_expression": "an expression of aggregates (compute it from the release)",
    "aggregate_argument": "an aggregate of an expression (only of a column)",
    "unsupported_aggregate": "an aggregate without a bounded private version (MIN, MAX...)",
    "unavailable": "an aggregate this version of dpfast.tables does not have",
    "unbounded": "an aggregate of a column without public bounds",
    "count_distinct": "COUNT(DISTINCT col) of a column other than the privacy unit",
    "group_by_expression": "GROUP BY an expression (group by columns)",
    "having": "HAVING filters on private values",
    "order_by": "ORDER BY an aggregate (private values)",
    "limit": "LIMIT / OFFSET on private results",
    "unknown_table": "a table that is neither the private table nor a public one",
    "no_private_table": "a query over public tables only (nothing private to answer)",
    "self_join": "the private table joined with itself (multiplies each person's rows)",
    "join_kind": "a join other than INNER / LEFT JOIN with an ON or USING condition",
    "join_multiplies": "a join whose public key is not unique, without a privacy unit to "
                       "bound each person's rows",
    "no_keys_selection": "private group-by keys need delta > 0 (key selection) or domains=",
}


class SqlRefusedError(ValueError):
    """A query outside the private SQL subset; ``reason`` is a key of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in REASONS
        super().__init__(f"refused ({reason}): {detail}")
        self.reason = reason


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
    if len(trees) != 1 or trees[0] is None:
        raise SqlRefusedError("syntax", f"expected one statement, got {len(trees)}")
    return trees[0]


def _no_nested(node: Any, where: str) -> None:
    from sqlglot import exp

    for sub in node.find_all(exp.Select, exp.Subquery, exp.Exists):
        if sub is not node:
            raise SqlRefusedError("subquery", f"a subquery in {where}: {sub.sql('duckdb')}")
    if node.find(exp.Window):
        raise SqlRefusedError("window", f"a window function in {where}")


def row_filter(where: str, src: Source) -> tuple[str, list[str]]:
    """The canonical SQL of a per-row condition on the private table and its columns;
    subqueries, aggregates and window functions are refused (:class:`SqlRefusedError`)."""
    from sqlglot import exp

    tree = _parse(f"SELECT 1 WHERE {where}")
    if not isinstance(tree, exp.Select) or tree.args.get("where") is None or any(
            tree.args.get(k) for k in ("group", "order", "limit", "having")):
        raise SqlRefusedError("syntax", f"where must be one condition, got {where!r}")
    cond = tree.args["where"].this
    _no_nested(cond, "the WHERE condition")
    if cond.find(exp.AggFunc):
        raise SqlRefusedError("subquery", "an aggregate in the WHERE condition")
    cols = sorted({c.name for c in cond.find_all(exp.Column)})
    src.check_columns(cols, "where column")
    return cond.sql("duckdb"), cols


# ------------------------------------------------------------------------- aggregates
_SIMPLE = {"Sum": "sum", "Avg": "mean", "Variance": "variance", "VariancePop": "variance",
           "Stddev": "stddev", "StddevSamp": "stddev", "StddevPop": "stddev",
           "Median": "median"}
_QUANTILE = {"Quantile", "PercentileCont", "PercentileDisc", "ApproxQuantile"}


@dataclasses.dataclass
class _Agg:
    name: str        # output column
    statistic: str   # a STATISTICS name
    column: str | None  # the value column (qualified SQL), None for COUNT(*)
    sql: str         # the aggregate as written
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    column_name: str | None = None  # the value column's bare name


def _aggregate(node: Any, alias: str | None, unit: str | None) -> _Agg:
    from sqlglot import exp

    kind = type(node).__name__
    text = node.sql("duckdb")
    arg = node.this
    if isinstance(node, exp.Count):
        if isinstance(arg, exp.Star):
            return _Agg(alias or "count", "count", None, text)
        if isinstance(arg, exp.Distinct):
            cols = arg.expressions
            if len(cols) != 1 or not isinstance(cols[0], exp.Column) or cols[0].name != unit:
                raise SqlRefusedError("count_distinct", f"{text}: only COUNT(DISTINCT "
                                      f"{unit or 'privacy unit'}) (people per key) is bounded")
            return _Agg(alias or "people", "privacy_id_count", None, text)
        if not isinstance(arg, exp.Column):
            raise SqlRefusedError("aggregate_argument", f"{text}: COUNT of an expression")
        return _Agg(alias or f"count_{arg.name}", "count", _qual(arg), text,
                    {"not_null": True}, arg.name)
    if kind in _SIMPLE or kind in _QUANTILE:
        if not isinstance(arg, exp.Column):
            raise SqlRefusedError("aggregate_argument", f"{text}: aggregate a column, not an "
                                  "expression")
        stat = _SIMPLE.get(kind, "quantile")
        extra: dict[str, Any] = {}
        if stat == "quantile":
            q = node.args.get("quantile") or node.args.get("expression")
            if not isinstance(q, exp.Literal) or q.is_string:
                raise SqlRefusedError("aggregate_argument", f"{text}: the quantile must be a "
                                      "number literal")
            extra["q"] = float(q.this)
        return _Agg(alias or f"{stat}_{arg.name}", stat, _qual(arg), text, extra, arg.name)
    raise SqlRefusedError("unsupported_aggregate", f"{text} has no bounded private version")


def _qual(col: Any) -> str:
    return col.sql("duckdb")


# ------------------------------------------------------------------------- the query
@dataclasses.dataclass
class _Plan:
    keys: list[str]          # group-by column SQL (qualified as written)
    key_names: list[str]     # their output names
    aggs: list[_Agg]
    relation: str            # FROM ... JOIN ... (SQL)
    where: str | None
    order: list[tuple[str, bool]]  # (output name, descending): post-processing
    private_alias: str       # how the private table is named in the query
    public_used: list[str]
    columns: list[str]       # every column name the query reads
    key_columns: list[str]   # the group-by columns' bare names


def _check_tree(tree: Any) -> None:
    from sqlglot import exp

    if isinstance(tree, (exp.Union, exp.Intersect, exp.Except)):
        raise SqlRefusedError("set_operation", type(tree).__name__.upper())
    if not isinstance(tree, exp.Select):
        raise SqlRefusedError("not_select", f"a {type(tree).__name__} statement")
    if tree.args.get("with_") or tree.args.get("with"):
        raise SqlRefusedError("cte", "a WITH clause")
    if tree.args.get("distinct"):
        raise SqlRefusedError("distinct", "SELECT DISTINCT")
    if tree.args.get("having"):
        raise SqlRefusedError("having", tree.args["having"].sql("duckdb"))
    if tree.args.get("limit") or tree.args.get("offset"):
        raise SqlRefusedError("limit", "LIMIT / OFFSET")
    for part in ("expressions", "where", "group", "joins", "from_", "from"):
        val = tree.args.get(part)
        for node in (val if isinstance(val, list) else [val] if val is not None else []):
            _no_nested(node, part.rstrip("_"))
    if tree.find(exp.Window):
        raise SqlRefusedError("window", "a window function")


def _tables_of(tree: Any, src: Source) -> tuple[str, list[tuple[str, Any]]]:
    from sqlglot import exp

    frm = tree.args.get("from_") or tree.args.get("from")
    if frm is None:
        raise SqlRefusedError("no_private_table", "no FROM clause")
    first = frm.this
    joins = tree.args.get("joins") or []
    tables = [first] + [j.this for j in joins]
    private = None
    for t in tables:
        if not isinstance(t, exp.Table):
            raise SqlRefusedError("subquery", f"FROM {t.sql('duckdb')}")
        name = t.name
        if name == src.name:
            if private is not None:
                raise SqlRefusedError("self_join", f"{src.name} appears twice")
            private = t.alias_or_name
        elif name not in src.public:
            raise SqlRefusedError("unknown_table", f"{name} (private: {src.name}; public: "
                                  f"{', '.join(sorted(src.public)) or 'none'})")
    if private is None:
        raise SqlRefusedError("no_private_table", f"the query does not read {src.name}")
    if first.name != src.name:
        raise SqlRefusedError("join_kind", f"the private table {src.name} must come first "
                              "(FROM private JOIN public)")
    out = []
    for j in joins:
        side, kind = (j.args.get("side") or "").upper(), (j.args.get("kind") or "").upper()
        if side not in ("", "LEFT") or kind not in ("", "INNER", "OUTER") or (
                side == "" and kind == "OUTER") or j.args.get("method"):
            raise SqlRefusedError("join_kind", f"{j.sql('duckdb').strip()}")
        if j.args.get("on") is None and not j.args.get("using"):
            raise SqlRefusedError("join_kind", f"a join without ON / USING: "
                                  f"{j.sql('duckdb').strip()} (a cross join)")
        out.append((j.this.name, j))
    return private, out


def _check_join_keys(src: Source, joins: list[tuple[str, Any]], has_unit: bool) -> None:
    """Without a privacy unit, each private row must match at most one public row."""
    from sqlglot import exp

    if has_unit:
        return  # contribution bounding per person runs after the join
    for name, j in joins:
        alias = j.this.alias_or_name
        if j.args.get("using"):
            cols = [i.name for i in j.args["using"]]
        else:
            cols = [c.name for c in j.args["on"].find_all(exp.Column)
                    if c.table == alias or (c.table == "" and c.name not in src.columns)]
        if not cols:
            raise SqlRefusedError("join_multiplies", f"{name}: no public join column found")
        keys = ", ".join(quote(c) for c in cols)
        n, d = src.con.sql(f"SELECT count(*), count(DISTINCT ({keys})) FROM "
                           f"{quote(name)}").fetchall()[0]
        if n != d:
            raise SqlRefusedError("join_multiplies", f"{name} has {n - d} duplicate keys on "
                                  f"({', '.join(cols)}): a row would count several times")


def plan(text: str, src: Source, unit: str | None) -> _Plan:
    """Check ``text`` against the subset and plan it (the row query, the aggregates)."""
    from sqlglot import exp

    if not isinstance(text, str):
        raise TypeError(f"query must be a str, got {type(text).__name__}")
    tree = _parse(text)
    _check_tree(tree)
    private, joins = _tables_of(tree, src)
    _check_join_keys(src, joins, unit is not None)
    group = tree.args.get("group")
    gkeys = []
    for g in (group.expressions if group else []):
        if not isinstance(g, exp.Column):
            raise SqlRefusedError("group_by_expression", g.sql("duckdb"))
        gkeys.append(g)
    gsql = [g.sql("duckdb") for g in gkeys]
    gnames = {g.name for g in gkeys}
    key_names: list[str | None] = [None] * len(gkeys)
    aggs: list[_Agg] = []
    for e in tree.expressions:
        alias = e.alias if isinstance(e, exp.Alias) else None
        node = e.this if isinstance(e, exp.Alias) else e
        if isinstance(node, exp.Star):
            raise SqlRefusedError("raw_rows", "SELECT *")
        if isinstance(node, exp.Column):
            s = node.sql("duckdb")
            if s in gsql or (node.name in gnames and not node.table):
                i = gsql.index(s) if s in gsql else [g.name for g in gkeys].index(node.name)
                key_names[i] = alias or node.name
                continue
            raise SqlRefusedError("raw_rows", f"{s} is neither grouped nor aggregated")
        if isinstance(node, exp.AggFunc):
            if any(isinstance(a, exp.AggFunc) for a in node.find_all(exp.AggFunc)
                   if a is not node):
                raise SqlRefusedError("aggregate_argument", node.sql("duckdb"))
            aggs.append(_aggregate(node, alias, unit))
            continue
        if node.find(exp.AggFunc):
            raise SqlRefusedError("aggregate_expression", node.sql("duckdb"))
        raise SqlRefusedError("raw_rows", f"{node.sql('duckdb')} is not an aggregate")
    if not aggs:
        raise SqlRefusedError("no_aggregate", "SELECT needs at least one aggregate")
    names = [n if n is not None else g.name for n, g in zip(key_names, gkeys)]
    order: list[tuple[str, bool]] = []
    o = tree.args.get("order")
    for item in (o.expressions if o else []):
        col = item.this
        if isinstance(col, exp.Column) and (col.sql("duckdb") in gsql or col.name in names):
            order.append((col.name if col.name in names else
                          names[gsql.index(col.sql("duckdb"))], bool(item.args.get("desc"))))
            continue
        raise SqlRefusedError("order_by", f"ORDER BY {item.sql('duckdb')}: order by "
                              "group-by columns only")
    frm = tree.args.get("from_") or tree.args.get("from")
    relation = frm.this.sql("duckdb") + "".join(" " + j.sql("duckdb") for _, j in joins)
    where = tree.args.get("where")
    if where is not None and where.this.find(exp.AggFunc):
        raise SqlRefusedError("subquery", "an aggregate in WHERE")
    return _Plan(gsql, names, aggs, relation, None if where is None else
                 where.this.sql("duckdb"), order, private, [n for n, _ in joins],
                 sorted({c.name for c in tree.find_all(exp.Column)}), [g.name for g in gkeys])
