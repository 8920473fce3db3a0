"""The release paths of :class:`dpfast.Session`: every method, the SQL forms, analysts.

Each run builds a fresh session over the records (privacy unit ``id``, public bounds of
``value``, a public table ``regions`` with one row per key) with the generator key, makes
one release, and returns what the analyst sees: the answer (or the exception) and the
ledger's rows (analyst, note, event, status).
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Callable
from typing import Any

from dpfast.testing._observe import Raised
from dpfast.testing._registry import BOUNDS, KEYS, ReleasePath, record_cases, register

# a session run costs a session: the people whose variants the records paths cover
# (tiny, minus_inf) are left to those
KINDS = ("huge", "nan", "inf", "many_keys", "new_key", "engine", "null_key", "null_id")
# the release statistics and the analysts' views share the session's reading code with
# the paths above: a shorter list
FEW = ("inf", "many_keys", "engine")

def _sql_refused() -> type[BaseException]:
    from dpfast.session import SqlRefusedError

    return SqlRefusedError


def _regions() -> Any:
    import pandas as pd

    return pd.DataFrame({"key": list(KEYS), "region": ["east", "east", "west", "west",
                                                        "west"]})


def _ledger(session: Any) -> tuple[Any, ...]:
    return tuple((c.analyst, c.note, c.event_json, c.status)
                 for c in session.budget.history())


def session_run(call: Callable[[Any], Any], *, public_keys: bool = True,
                analyst: str | None = None, unit: str | None = "id",
                parquet: bool = False) -> Callable[[Any, bytes], Any]:
    """``run(data, rng)``: a fresh session over ``data`` (public key domain or not), then
    ``call(session)`` (or on an analyst's view; ``unit=None``: every row is a person, and
    the person's rows are ``data``'s rows of one id; ``parquet``: the session reads a
    Parquet file of ``data``, through its column cache); returns ``(answer, ledger rows)``, the
    answer being :class:`~dpfast.testing.Raised` when the release failed."""

    def run(data: Any, rng: bytes) -> Any:
        if not parquet:
            return _run(data, rng)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.parquet")
            data.to_parquet(path, index=False)
            return _run(path, rng)

    def _run(data: Any, rng: bytes) -> Any:
        from dpfast.session import Session

        s = Session(data, privacy_unit=unit, name="t", bounds={"value": BOUNDS},
                    domains={"key": list(KEYS)} if public_keys else None,
                    epsilon=100.0, delta=0.25, rng=rng, public={"regions": _regions()})
        try:
            who = s.add_analyst(analyst, epsilon=50.0) if analyst else s
            try:
                answer: Any = call(who)
            except Exception as exc:
                answer = Raised.of(exc)
            return answer, _ledger(s)
        finally:
            s.close()

    return run


def _path(name: str, covers: str, call: Callable[[Any], Any], *, public_keys: bool = True,
          analyst: str | None = None, kinds: tuple[str, ...] = KINDS,
          unit: str | None = "id", parquet: bool = False,
          refused: type[BaseException] | None = None,
          known: dict[str, str] | None = None) -> None:
    names = (f"dpfast.Session.{covers}",) + ((f"dpfast.Session.Analyst.{covers}",)
                                             if analyst else ())
    register(ReleasePath(name, names, session_run(call, public_keys=public_keys,
                                                  analyst=analyst, unit=unit,
                                                  parquet=parquet),
                         cases=lambda: record_cases(kinds=kinds), refused=refused,
                         known=dict(known or {}), selects_keys=not public_keys))


_WHERE_CAST = "CAST(code AS INTEGER) >= 0"
_WHERE_DIV = "10 // divisor >= 0"  # integer division

# Found by the audit, fixed: DuckDB typed a pandas object column that mixes ints and
# strings as VARCHAR, so one person's string id turned every other person's integer id into
# its decimal text (everyone's bounding re-keyed) and an int id 1 and a string id "1" became
# one person.  The session now registers such a privacy-unit column encoded id by id and
# decodes the ids it reads (dpfast/session/_ids.py): a regression guard.
_MIXED = (*KINDS, "str_id")
_path("session.count", "count", lambda s: s.count("key", epsilon=1.0), kinds=_MIXED)
_path("session.count/select", "count", lambda s: s.count("key", epsilon=3.0, delta=1e-2),
      public_keys=False)
_path("session.sum", "sum", lambda s: s.sum("value", "key", epsilon=1.0))
_path("session.mean", "mean", lambda s: s.mean("value", "key", epsilon=1.0))
_path("session.mean/where", "mean",
      lambda s: s.mean("value", "key", epsilon=1.0, where="divisor > 1"))
_path("session.count/where-cast", "count",
      lambda s: s.count("key", epsilon=1.0, where=_WHERE_CAST))
_path("session.count/where-divide", "count",
      lambda s: s.count("key", epsilon=1.0, where=_WHERE_DIV))
def _release(stat: str, value: str | None, q: float | None, s: Any) -> Any:
    return s.release(stat, "key", value=value, epsilon=1.0, q=q)


for _stat in ("count", "sum", "mean", "variance", "stddev", "privacy_id_count",
              "count_distinct", "quantile", "median"):
    _value = None if _stat in ("count", "privacy_id_count") else (
        "code" if _stat == "count_distinct" else "value")
    _q = 0.5 if _stat == "quantile" else None
    _path(f"session.release/{_stat}", "release",
          functools.partial(_release, _stat, _value, _q),
          kinds=FEW)
_path("session.histogram", "histogram",
      lambda s: s.histogram("value", 5, BOUNDS, epsilon=1.0))
_path("session.topdown", "topdown",
      lambda s: s.topdown({"region": ["east", "east", "west", "west", "west"],
                           "key": list(KEYS)}, ["region", "key"], rho=0.5))
def _topdown_blue(s: Any) -> Any:
    """The BLUE (its stderr and intervals) and its rounding, through the session's cache
    (the second call rebuilds the release from its state)."""
    r = s.topdown({"region": ["east", "east", "west", "west", "west"], "key": list(KEYS)},
                  ["region", "key"], rho=0.5, estimator="blue")
    again = s.topdown({"region": ["east", "east", "west", "west", "west"],
                       "key": list(KEYS)}, ["region", "key"], rho=0.5, estimator="blue")
    return r, r.rounded(), again.rounded()


_path("session.topdown/blue", "topdown", _topdown_blue)
_path("analyst.topdown/blue", "topdown", _topdown_blue, analyst="alice", kinds=FEW)
_path("session.sql/group-by", "sql",
      lambda s: s.sql("SELECT key, COUNT(*) AS n, SUM(value) AS total, AVG(value) AS m "
                      "FROM t GROUP BY key", epsilon=1.0))
_path("session.sql/select", "sql",
      lambda s: s.sql("SELECT key, COUNT(*) AS n FROM t GROUP BY key", epsilon=3.0,
                      delta=1e-2), public_keys=False)
_path("session.sql/where", "sql",
      lambda s: s.sql("SELECT key, COUNT(*) AS n FROM t WHERE value > 2 AND divisor <> 3 "
                      "GROUP BY key", epsilon=1.0))
_path("session.sql/where-cast", "sql",
      lambda s: s.sql(f"SELECT key, COUNT(*) AS n FROM t WHERE {_WHERE_CAST} GROUP BY key",
                      epsilon=1.0))
_path("session.sql/where-divide", "sql",
      lambda s: s.sql(f"SELECT key, COUNT(*) AS n FROM t WHERE {_WHERE_DIV} GROUP BY key",
                      epsilon=1.0))
_path("session.sql/join", "sql",
      lambda s: s.sql("SELECT r.region, COUNT(*) AS n FROM t JOIN regions r "
                      "ON t.key = r.key GROUP BY r.region", epsilon=1.0, delta=1e-2))
# attacks kept as regression guards: refused before the charge, on D and D' alike.
# Issue 36 channel 2: a column-alias list renamed the privacy unit (here the value column:
# every row a person, so a person of many rows with distinct values counted once per row).
_path("session.sql/alias-list", "sql",
      lambda s: s.sql("SELECT key, COUNT(*) AS n FROM t AS f(x, key, id, code, divisor) "
                      "WHERE divisor > 0 GROUP BY key", epsilon=1.0), kinds=("many_rows",),
      refused=_sql_refused())
# Issue 36 channel 3: a JOIN on a predicate that is not an equality on a unique public key
# copied each private row up to the public table's size.
_path("session.sql/join-multiplies-rows", "sql",
      lambda s: s.sql("SELECT t.key, COUNT(*) AS n FROM t JOIN regions r "
                      "ON r.key IS NOT NULL GROUP BY t.key", epsilon=1.0), unit=None,
      kinds=("huge", "new_key"), refused=_sql_refused())
# a Parquet source: the column cache reads the rows without DuckDB, a WHERE through it
_PQ = ("huge", "nan", "inf", "many_keys", "new_key", "null_key", "null_id")
_path("session.count/parquet", "count", lambda s: s.count("key", epsilon=1.0), parquet=True,
      kinds=_PQ)
_path("session.sum/parquet", "sum", lambda s: s.sum("value", "key", epsilon=1.0),
      parquet=True, kinds=_PQ)
_path("session.mean/parquet-where", "mean",
      lambda s: s.mean("value", "key", epsilon=1.0, where="divisor > 1"), parquet=True,
      kinds=_PQ)
_path("analyst.count", "count", lambda s: s.count("key", epsilon=1.0), analyst="alice", kinds=FEW)
_path("analyst.sum", "sum", lambda s: s.sum("value", "key", epsilon=1.0), analyst="alice",
      kinds=FEW)
_path("analyst.mean", "mean", lambda s: s.mean("value", "key", epsilon=1.0),
      analyst="alice", kinds=FEW)
_path("analyst.release", "release",
      lambda s: s.release("quantile", "key", value="value", q=0.5, epsilon=1.0),
      analyst="alice", kinds=FEW)
_path("analyst.histogram", "histogram",
      lambda s: s.histogram("value", 5, BOUNDS, epsilon=1.0), analyst="alice", kinds=FEW)
_path("analyst.topdown", "topdown",
      lambda s: s.topdown({"region": ["east", "east", "west", "west", "west"],
                           "key": list(KEYS)}, ["region", "key"], rho=0.5),
      analyst="alice", kinds=FEW)
_path("analyst.sql", "sql",
      lambda s: s.sql("SELECT key, COUNT(*) AS n FROM t WHERE value > 2 GROUP BY key",
                      epsilon=1.0), analyst="alice", kinds=FEW)
