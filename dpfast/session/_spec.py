"""The session's parts of a release's spec: the key columns and the row filter.

A release's spec is :class:`dpfast.tables.spec.ReleaseSpec` -- the one spec format of
method calls and SQL alike (:mod:`dpfast.session._release` builds it), whose
:meth:`~dpfast.tables.spec.ReleaseSpec.query_id` is the result cache's key.  Here: the
checked column list of ``by`` and the row filter ``where`` read into dpfast's whitelist,
and :func:`cache_spec`, the cache's spec of a release that is not a statistic of the
registry (a histogram, a TopDown hierarchy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dpfast.tables.spec import ReleaseSpec, StatSpec, domain_fingerprint

if TYPE_CHECKING:
    from ._expr import Expr
    from ._source import Source

__all__ = ["cache_spec", "column_names", "domain_fingerprint", "normalize_where",
           "render_where", "where_condition"]


def column_names(by: object, what: str = "by") -> list[str]:
    """``by`` (a column name or a list of them) as a list; TypeError naming ``what``."""
    cols = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) else None
    if not cols or not all(isinstance(c, str) for c in cols):
        raise TypeError(f"{what} must be a column name or a list of column names, got {by!r}")
    return cols


def where_condition(where: object, src: Source) -> Expr | None:
    """The row filter ``where`` read into dpfast's query model (an expression of
    :mod:`dpfast.session._expr`, on the private table: the condition a method call's row
    query and an SQL ``WHERE`` share), or None; refused
    (:class:`dpfast.session.SqlRefusedError`) outside the whitelist, before any charge."""
    if where is None:
        return None
    if not isinstance(where, str) or not where.strip():
        raise TypeError(f"where must be a non-empty SQL condition (str), got {where!r}")
    from dpfast.session import sql as _sql

    return _sql.row_condition(where, src)


def normalize_where(where: object, src: Source) -> tuple[str | None, list[str]]:
    """The SQL dpfast generates for a row filter and the real columns it reads: ``where``
    is read into the whitelist of :func:`dpfast.session.sql.row_filter` (one model and
    generator for every ``where=`` and SQL ``WHERE``); anything else is refused
    (:class:`dpfast.session.SqlRefusedError`) before any charge."""
    if where is None:
        return None, []
    if not isinstance(where, str) or not where.strip():
        raise TypeError(f"where must be a non-empty SQL condition (str), got {where!r}")
    from dpfast.session import sql as _sql

    return _sql.row_filter(where, src)


def render_where(cond: Expr) -> str:
    """The SQL dpfast writes for a row condition of :func:`where_condition` (columns
    unqualified: the form of notes and of :func:`normalize_where`)."""
    from dpfast.session import _expr

    return _expr.render(cond, lambda table: None)


def cache_spec(statistic: str, column: str | None, params: dict[str, object], *, rows: str,
               privacy_unit: str | None, epsilon: float | None = None, delta: float = 0.0,
               rho: float | None = None, options: dict[str, object] | None = None
               ) -> ReleaseSpec:
    """The :class:`~dpfast.tables.spec.ReleaseSpec` (the cache's one spec format) of a
    release outside the registry (:meth:`dpfast.Session.histogram`,
    :meth:`dpfast.Session.topdown`), as its cache key: made as given -- the caller checks
    the parameters with the release's own plan (its event), before the charge; ``rows``:
    :meth:`dpfast.session._source.Source.rows_fingerprint`."""
    return ReleaseSpec((StatSpec(statistic, column, tuple(sorted(params.items()))),),
                       privacy_unit=privacy_unit, epsilon=epsilon, delta=delta, rho=rho,
                       options=tuple(sorted((options or {}).items())), rows=rows)
