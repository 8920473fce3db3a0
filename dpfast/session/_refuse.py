"""The refusals of private SQL (:meth:`dpfast.Session.sql` and every ``where=``): the
error :class:`SqlRefusedError` and the documented list of its reasons :data:`REASONS`.

Every refusal happens while the query is read into dpfast's query model
(:mod:`dpfast.session._query`), before anything is charged or any row is read: it depends
on the query's text and on public information only (the tables' schemas, the public
tables' rows).
"""

from __future__ import annotations

__all__ = ["REASONS", "SqlRefusedError"]

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
    "sample_statistic": "VARIANCE / VAR_SAMP / STDDEV / STDDEV_SAMP: dpfast releases the "
                        "population statistics (VAR_POP, STDDEV_POP), not the sample ones",
    "unavailable": "an aggregate this version of dpfast.tables does not have",
    "unbounded": "an aggregate of a column without public bounds",
    "count_distinct": "COUNT(DISTINCT x) of an expression or of a joined public table",
    "group_by_expression": "GROUP BY an expression (group by columns)",
    "having": "HAVING filters on private values",
    "order_by": "ORDER BY an aggregate (private values)",
    "limit": "LIMIT / OFFSET on private results",
    "clause": "a clause the query model does not hold (QUALIFY, USING SAMPLE, TABLESAMPLE, "
              "PIVOT, INTO...): it would be answered as if it were not there",
    "output_name": "two output columns of one name, or a reserved (__...) or empty name",
    "unknown_table": "a table that is neither the private table nor a public one",
    "column": "a column that no table of the query has, or that several have",
    "column_alias": "a column-alias list on a table (FROM t AS f(a, b)): columns keep "
                    "their names (the privacy unit is the private table's own column)",
    "no_private_table": "a query over public tables only (nothing private to answer)",
    "self_join": "the private table joined with itself (multiplies each person's rows)",
    "join_kind": "a join other than INNER / LEFT JOIN with an ON or USING condition",
    "join_predicate": "a join condition other than equalities of a column of the joined "
                      "public table with a column of a table before it (ANDed)",
    "join_multiplies": "a join whose public key is not unique, without a privacy unit to "
                       "bound each person's rows",
    "function": "a function or operator outside the whitelist (docs/security.md)",
    "expression": "an expression outside the whitelist (parameters, raw strings, ...)",
    "type": "an operation on types it does not take (a string compared with a number, "
            "GROUP BY a LIST column, ...): no implicit casts",
    "no_keys_selection": "private group-by keys need delta > 0 (key selection) or domains=",
}


class SqlRefusedError(ValueError):
    """A query outside the private SQL subset; ``reason`` is a key of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        assert reason in REASONS
        super().__init__(f"refused ({reason}): {detail}")
        self.reason = reason
