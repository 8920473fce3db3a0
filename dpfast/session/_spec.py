"""The normalized query spec of a release and its query id (the result cache's key).

A spec holds everything that determines *which* release is asked for -- the statistic, the
columns, the row filter, the privacy target, the contribution bounds, the value bounds, a
fingerprint of the public key domain and a fingerprint of the data source's relevant
columns -- and nothing that only determines *its noise* (the generator).  Two calls with
equal specs ask the same question: the second gets the stored answer.  The query id is the
BLAKE2b-128 hash of the spec's canonical JSON (floats by their exact hex form, so ``0.1``
and ``0.1000000001`` are different queries).
"""

from __future__ import annotations

import hashlib
import json
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["canonical", "column_names", "domain_fingerprint", "normalize_where", "query_id"]


def canonical(x: Any) -> Any:
    """A JSON-able, type-tagged form of ``x`` (equal values of different types differ)."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return {"i": str(int(x))}
    if isinstance(x, (float, np.floating)):
        return {"f": float(x).hex()}
    if isinstance(x, Fraction):
        return {"q": f"{x.numerator}/{x.denominator}"}
    if isinstance(x, bytes):
        return {"b": x.hex()}
    if isinstance(x, dict):
        return {"d": sorted([str(k), canonical(v)] for k, v in x.items())}
    if isinstance(x, np.ndarray):
        return {"a": canonical(x.tolist())}
    if isinstance(x, (list, tuple)):
        return [canonical(v) for v in x]
    raise TypeError(f"cannot put a {type(x).__name__} in a query spec")


def _hash(obj: Any) -> str:
    text = json.dumps(canonical(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def domain_fingerprint(domain: Any) -> str | None:
    """A hash of a public key domain, in its order (the release's key order), or None."""
    if domain is None:
        return None
    if isinstance(domain, tuple):
        return _hash(["multi", [list(np.asarray(c, dtype=object).tolist()) for c in domain]])
    return _hash(["one", list(np.asarray(domain, dtype=object).tolist())])


def query_id(spec: dict[str, Any]) -> str:
    """The query id of a normalized spec (32 hex digits)."""
    return _hash(spec)


def column_names(by: Any, what: str = "by") -> list[str]:
    """``by`` (a column name or a list of them) as a list; TypeError naming ``what``."""
    cols = [by] if isinstance(by, str) else list(by) if isinstance(by, (list, tuple)) else None
    if not cols or not all(isinstance(c, str) for c in cols):
        raise TypeError(f"{what} must be a column name or a list of column names, got {by!r}")
    return cols


def normalize_where(where: Any, src: Any) -> tuple[str | None, list[str]]:
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
