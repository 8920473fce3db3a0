"""The privacy boundary of a session's release (issue 36, channel 1, the session side).

Before the charge, what is wrong with a query follows from public information and is
reported as such (ValueError / TypeError naming it); after the charge, whatever fails while
the private rows are read, cast, filtered, joined, checked or released reaches the caller
only as one :class:`dpfast.session.ReleaseFailedError` with a fixed message, with no
chained exception, and a ``failed`` ledger row holding that same fixed text.
"""

from __future__ import annotations

import inspect
import os
import sqlite3

import numpy as np
import pandas as pd
import pytest

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

import dpfast  # noqa: E402
from dpfast._core.errors import RELEASE_FAILED  # noqa: E402
from dpfast.budget import BudgetExceededError  # noqa: E402
from dpfast.session import ReleaseFailedError, _source  # noqa: E402
from dpfast.tables import groupby  # noqa: E402
from tests.helpers import KEY  # noqa: E402

SECRET = "secret-alice-4711"


def _frame(n: int = 60) -> pd.DataFrame:
    names = np.array([f"n{i}" for i in range(n)], dtype=object)
    names[17] = SECRET
    return pd.DataFrame({"pid": np.arange(n) % 20, "k": np.arange(n) % 3, "name": names,
                         "v": np.linspace(0.0, 1.0, n), "leaf": np.arange(n) % 4})


def _session(tmp_path, **kw) -> dpfast.Session:
    kw.setdefault("privacy_unit", "pid")
    return dpfast.Session(_frame(), bounds={"v": (0.0, 1.0)}, domains={"k": [0, 1, 2]},
                          epsilon=100.0, delta=1e-6, ledger=os.path.join(tmp_path, "l.db"),
                          rng=dpfast.default_rng(KEY), **kw)


def _ledger_text(path: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT * FROM charges ORDER BY id").fetchall()
    finally:
        con.close()


def _assert_fixed_failure(exc: BaseException, s: dpfast.Session, spent_before: float) -> None:
    """The one failure: fixed text, nothing chained, the charge stands, a failed row with
    the fixed text only."""
    assert type(exc) is ReleaseFailedError and isinstance(exc, RuntimeError)
    assert str(exc) == RELEASE_FAILED and exc.args == (RELEASE_FAILED,)
    assert exc.__cause__ is None and exc.__context__ is None
    assert s.budget.spent().epsilon > spent_before  # charged: no refund
    assert s.budget.history()[-1].status == "failed"
    path = s.budget.ledger
    s.close()
    rows = _ledger_text(path)
    assert not any(SECRET in str(cell) or "alice" in str(cell) for r in rows for cell in r)
    notes = [str(c) for r in rows for c in r if isinstance(c, str) and "reason" in c]
    assert any(n == f"ReleaseFailedError: {RELEASE_FAILED}" for n in notes), notes


@pytest.fixture
def after_charge(monkeypatch: pytest.MonkeyPatch):
    """Every read of rows fails after the charge with a message holding a private value
    (the probe, ``limit=0``, reads types only and is left alone)."""
    def boom() -> None:
        raise RuntimeError(f"Conversion Error: Could not convert string '{SECRET}' to INT32")

    real = {n: getattr(_source.Source, n) for n in ("fetch_sql", "select", "plain_rows")}

    def wrap(name):
        sig = inspect.signature(real[name])

        def f(self, *a, **kw):
            if sig.bind(self, *a, **kw).arguments.get("limit") != 0:
                boom()
            return real[name](self, *a, **kw)
        return f

    for n in real:
        monkeypatch.setattr(_source.Source, n, wrap(n))
    return boom


@pytest.mark.parametrize("path", ["method", "method_where", "sql", "sql_where", "histogram",
                                  "topdown", "quantile"])
def test_a_failure_after_the_charge_is_fixed(tmp_path, after_charge, path) -> None:
    """Channel 1 (session): an engine's error text with a private value reached the
    caller (and the ledger note) verbatim; now every release path ends in the one fixed
    ReleaseFailedError, nothing chained, a failed ledger row without the value."""
    s = _session(tmp_path)
    before = s.budget.spent().epsilon
    calls = {
        "method": lambda: s.count("k", epsilon=1.0),
        "method_where": lambda: s.sum("v", "k", epsilon=1.0, where="v > 0.5"),
        "sql": lambda: s.sql("SELECT k, COUNT(*) AS n FROM data GROUP BY k", epsilon=1.0),
        "sql_where": lambda: s.sql("SELECT k, AVG(v) AS m FROM data WHERE v > 0.1 "
                                   "GROUP BY k", epsilon=1.0),
        "histogram": lambda: s.histogram("v", bins=4, range=(0.0, 1.0), epsilon=1.0),
        "topdown": lambda: s.topdown({"top": ["a", "a", "b", "b"], "leaf": [0, 1, 2, 3]},
                                     ["top", "leaf"], rho=0.5, where="v >= 0"),
        "quantile": lambda: s.quantile("v", "k", q=0.5, epsilon=1.0),
    }
    with pytest.raises(ReleaseFailedError) as info:
        calls[path]()
    _assert_fixed_failure(info.value, s, before)


def test_a_value_check_of_dpfast_after_the_charge_is_fixed(tmp_path, monkeypatch) -> None:
    """Channel 1: a dpfast check on the real rows (here a ValueError naming a value, as
    the NaN and overflow checks did) was an oracle after the charge; now it is the fixed
    failure.  Before the charge (the plan, from the schema) errors on public parameters
    stay clear ValueErrors.  (The check is planted in the plan's step on the real rows,
    ``local_partials``, which the session runs after the charge -- issue 37: the session
    runs the plan, no longer ``dpfast.tables.count`` behind a probe.)"""

    def local_partials(self, rows, subkey):  # the computation on the real rows
        raise ValueError(f"values contain NaN or infinite values (row {SECRET})")

    monkeypatch.setattr(groupby.Plan, "local_partials", local_partials)
    s = _session(tmp_path)
    with pytest.raises(ValueError, match="epsilon") as pre:
        s.count("k", epsilon=-1.0)  # public: refused before the charge, by name
    assert not isinstance(pre.value, ReleaseFailedError) and s.budget.spent().epsilon == 0
    with pytest.raises(ReleaseFailedError) as info:
        s.count("k", epsilon=1.0)
    _assert_fixed_failure(info.value, s, 0.0)


def test_a_failing_cast_never_shows_its_value(tmp_path) -> None:
    """Channel 1: ``CAST(name AS INTEGER)`` over a string column raised DuckDB's
    Conversion Error naming a private value after the charge.  Now the query is either
    answered (a failing cast declared NULL by the SQL model) or refused before the charge,
    or ends in the fixed failure: never the engine's text."""
    s = _session(tmp_path)
    before = s.budget.spent().epsilon
    try:
        s.count("k", epsilon=1.0, where="CAST(name AS INTEGER) = 1")
    except ReleaseFailedError as exc:
        _assert_fixed_failure(exc, s, before)
        return
    except ValueError as exc:  # refused by the query model, before the charge
        assert SECRET not in str(exc) and s.budget.spent().epsilon == before
    s.close()


@pytest.mark.parametrize("where", ["error('x' || name) IS NULL",
                                   "regexp_matches(name, '(') ",
                                   "strptime(name, '%Y') IS NULL",
                                   "k // (k - k) = 1"])
def test_engine_errors_in_a_filter_never_show_values(tmp_path, where) -> None:
    """Channel 1: errors DuckDB raises on the rows (``error()``, a bad regex, a failing
    ``strptime``, integer division by zero) reach the caller as the fixed failure, or are
    refused before the charge; never with a private value."""
    s = _session(tmp_path)
    before = s.budget.spent().epsilon
    try:
        s.count("k", epsilon=1.0, where=where)
    except ReleaseFailedError as exc:
        _assert_fixed_failure(exc, s, before)
        return
    except (ValueError, duckdb.Error) as exc:  # refused before the charge: the text is public
        assert SECRET not in str(exc) and s.budget.spent().epsilon == before
    s.close()


def test_the_probe_reads_no_row(tmp_path) -> None:
    """The pre-charge event probe binds a filtered row query without running it: a
    function that raises on every row is never called, and a refused charge is refused
    before any row is read (BudgetExceededError, not the engine's error)."""
    s = _session(tmp_path)
    src = s._source
    seen: list[object] = []

    def spy(x: str) -> str:
        seen.append(x)
        raise ValueError(f"row {x}")

    src.con.create_function("spy", spy, ["VARCHAR"], "VARCHAR")
    got = src.fetch_sql(f"SELECT k, spy(name) AS s FROM {src.name} WHERE spy(name) = 'x'",
                        limit=0)
    assert seen == [] and {c: len(a) for c, a in got.items()} == {"k": 0, "s": 0}
    assert got["k"].dtype == np.int64
    with pytest.raises(BudgetExceededError):
        s.count("k", epsilon=1000.0, where="CAST(name AS INTEGER) = 1")
    assert s.budget.spent().epsilon == 0
    s.close()


def test_a_dask_release_failing_after_the_charge_is_fixed(tmp_path, monkeypatch) -> None:
    """Channel 1 on a Dask-backed source: the cluster's error text is dropped too."""
    dd = pytest.importorskip("dask.dataframe")
    from dpfast.dask import backend as _backend

    def partials(*a, **kw):  # the cluster computing the partials fails, naming a value
        raise ValueError(f"partition 3: value {SECRET}")

    monkeypatch.setattr(_backend.DaskBackend, "partials", partials)
    s = dpfast.Session(dd.from_pandas(_frame().drop(columns="name"), npartitions=2),
                       privacy_unit="pid", domains={"k": [0, 1, 2]}, epsilon=10.0,
                       ledger=os.path.join(tmp_path, "l.db"), rng=dpfast.default_rng(KEY))
    with pytest.raises(ReleaseFailedError) as info:
        s.count("k", epsilon=1.0)
    _assert_fixed_failure(info.value, s, 0.0)


def test_public_errors_before_the_charge_stay_clear(tmp_path) -> None:
    """What public information decides is still refused before the charge, by name."""
    s = _session(tmp_path)
    with pytest.raises(ValueError, match="key column 'nope'"):
        s.count("nope", epsilon=1.0)
    with pytest.raises(ValueError, match=r"refused \(column\): 'nope' is not a column"):
        s.count("k", epsilon=1.0, where="nope > 1")
    with pytest.raises(ValueError):
        s.sql("SELECT k, COUNT(*) FROM data GROUP BY k HAVING COUNT(*) > 1", epsilon=1.0)
    assert s.budget.spent().epsilon == 0 and s.budget.history() == []
    s.close()


def test_the_error_pickles_with_its_fixed_message() -> None:
    import pickle

    exc = pickle.loads(pickle.dumps(ReleaseFailedError()))
    assert type(exc) is ReleaseFailedError and str(exc) == RELEASE_FAILED
