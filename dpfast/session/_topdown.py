""":meth:`dpfast.Session.topdown`: a geographic hierarchy released from the private rows.

The hierarchy is public: ``geography`` is a table with one row per leaf (finest unit) and
the level columns, coarse to fine.  The rows' finest-level column is counted per leaf
after bounding each person to one row (chosen uniformly with the CSPRNG, depending only on
that person's own rows; :func:`dpfast.tables.bound_contributions`), then
:func:`dpfast.tables.topdown` noises every level and makes them consistent.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from dpfast import tables as _tables
from dpfast.tables import hierarchy as _hierarchy
from dpfast.tables.spec import domain_fingerprint

from . import _cache

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd

    from dpfast.tables.hierarchy import TopDownRelease

    from .session import Session

    #: a public geography: a DataFrame or a mapping of columns
    Geography: TypeAlias = "pd.DataFrame | Mapping[str, npt.ArrayLike]"

__all__ = ["topdown"]


def _levels(geography: Geography, levels: list[str]) -> tuple[list[np.ndarray], np.ndarray]:
    cols = {}
    for c in levels:
        try:
            cols[c] = np.asarray(geography[c])
        except (KeyError, IndexError, ValueError):
            raise ValueError(f"geography has no column {c!r}") from None
    leaf = cols[levels[-1]]
    if len(leaf) == 0:
        raise ValueError("geography has no rows")
    if len(np.unique(leaf.astype(object).astype(str))) != len(leaf):
        raise ValueError(f"geography must have one row per {levels[-1]!r} (the leaves)")
    ids = []
    for c in levels:
        _, first, inv = np.unique(cols[c].astype(object).astype(str), return_index=True,
                                  return_inverse=True)
        order = np.argsort(np.argsort(first))  # ids in order of first appearance
        ids.append(order[inv].astype(np.int64))
    return ids, leaf


def topdown(session: Session, geography: Geography, levels: str | Sequence[str], *,
            rho: float, where: str | None = None, **options: object) -> TopDownRelease:
    """See :meth:`dpfast.Session.topdown`."""
    from dpfast.session._spec import cache_spec, column_names, normalize_where

    names = column_names(levels, "levels")
    src, pid = session._source, session.privacy_unit
    if src.kind == "dask":
        raise ValueError("topdown needs a DuckDB-backed source, not a Dask one")
    leaf_col = names[-1]
    src.check_columns([leaf_col], "levels column")
    ids, leaf = _levels(geography, names)
    where_sql, where_cols = normalize_where(where, src)
    cols = [leaf_col] + ([pid] if pid else [])
    spec = cache_spec(
        "topdown", None, {"levels": names, "geography": [domain_fingerprint(i) for i in ids]
                          + [domain_fingerprint(leaf)]},
        rows=src.rows_fingerprint(cols + where_cols, where_sql or ""), privacy_unit=pid,
        rho=rho, options={k: v for k, v in options.items() if k != "note"})
    what = f"topdown({', '.join(names)})" + (f" where {where_sql}" if where_sql else "")
    options.setdefault("note", what)
    n = len(leaf)

    def leaf_counts() -> np.ndarray:
        rows = src.select(cols, where_sql)
        keys = rows[leaf_col]
        if pid:  # one row per person
            keys, counts, _ = _tables.bound_contributions(keys, rows[pid], rng=None)
        else:
            keys, counts = np.unique(keys, return_counts=True)
        index = {k: i for i, k in enumerate(leaf.tolist())}
        out = np.zeros(n, np.int64)
        for k, c in zip(np.asarray(keys).tolist(), np.asarray(counts).tolist()):
            i = index.get(k)
            if i is not None:  # rows outside the public geography are dropped
                out[i] += c
        return out

    # the event from topdown's plan, before any row is read (no probe run): the options
    # are checked against tables.topdown's parameters first (TypeError naming one)
    inspect.signature(_tables.topdown).bind(np.zeros(n, np.int64), ids, rho=rho, **options)
    # (the estimator and its rounding flags too: None is the estimator's default, rounded
    # for "topdown", unrounded for "blue"; the plan refuses a bad one before the charge)
    estimator = options.get("estimator", "topdown")
    flags = [options.get(f) for f in ("nonnegative", "integer")]
    nonnegative, integer = (estimator != "blue" if f is None else f for f in flags)
    event = _hierarchy.plan_topdown(
        np.zeros(n, np.int64), ids, rho, bool(nonnegative), bool(integer),
        bool(options.get("total_invariant", False)), per_person=False,
        estimator=estimator).event
    return _cache.cached(
        session, spec, what, event,
        lambda: _tables.topdown(leaf_counts(), ids, rho=rho, rng=session.rng, **options),
        lambda r: {"kind": "topdown", "release": r.to_state()}, lambda r: r)
