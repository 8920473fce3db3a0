"""No release of a session runs before its charge (issue 37): every event comes from a plan.

The session learned the cost of the releases without a plan of their own -- median and
quantile (the ``LEGACY`` table), ``bounds="auto"`` and histograms -- by running the
release on one synthetic row with a budget that stopped at the charge (the "probe",
``dpfast.session._legacy``): code that reads rows ran before the ledger's charge.  Now the
event of each is its plan's (the rank statistics' spec is their family's,
:func:`dpfast.tables.quantiles.rank_spec`; ``bounds="auto"`` plans its two phases;
:func:`dpfast.tables.histogram.plan_histogram`), and the probe is deleted.
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import dpfast

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

from dpfast.session import _store  # noqa: E402
from dpfast.tables import run as _run  # noqa: E402
from dpfast.tables.plan import plan as make_plan  # noqa: E402
from dpfast.tables.quantiles import rank_spec  # noqa: E402
from dpfast.tables.spec import ReleaseSpec, StatSpec  # noqa: E402
from tests.helpers import KEY  # noqa: E402

DESTS = ["BOS", "LAX", "ORD", "SFO"]


def _frame(n: int = 1200, seed: int = 7) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    return pd.DataFrame({"dest": r.choice(DESTS, n), "pid": r.integers(0, 500, n),
                         "delay": r.normal(12, 8, n).round(1),
                         "seats": r.integers(0, 300, n)})


def _session(df: pd.DataFrame, *, domains: bool = True, **kw: object) -> dpfast.Session:
    return dpfast.Session(df, privacy_unit="pid", epsilon=50.0, delta=1e-5, name="flights",
                          bounds={"delay": (-20.0, 80.0), "seats": (0, 300)},
                          domains={"dest": DESTS} if domains else None,
                          rng=dpfast.default_rng(KEY), **kw)


# the releases that ran the probe: name -> call(session, delta) (a histogram's bins are
# its public domain: it never selects keys, and takes no delta here)
PROBED: dict[str, Callable[[dpfast.Session, float], object]] = {
    "median": lambda s, d: s.median("delay", "dest", epsilon=1.0, delta=d),
    "quantile": lambda s, d: s.quantile("delay", "dest", epsilon=1.0, delta=d,
                                        q=[0.1, 0.9]),
    "sql_percentile": lambda s, d: s.sql(
        "SELECT dest, PERCENTILE_CONT(delay, 0.9) AS p FROM flights GROUP BY dest",
        epsilon=1.0, delta=d),
    "sum_auto": lambda s, d: s.sum("delay", "dest", epsilon=1.0, delta=d, bounds="auto"),
    "mean_auto": lambda s, d: s.mean("seats", "dest", epsilon=1.0, delta=d, bounds="auto",
                                     max_partitions=2),
    "histogram": lambda s, d: s.histogram("delay", 8, (-20, 80), epsilon=1.0),
    "histogram_where": lambda s, d: s.histogram("seats", [0, 10, 100, 300], epsilon=1.0,
                                                delta=1e-6, noise="gaussian",
                                                where="delay > 0"),
}


def test_the_probe_is_gone() -> None:
    """The module that ran a release on a synthetic row to learn its event is deleted,
    and with it the session's table of statistics that needed it."""
    from dpfast.session import _stats

    assert importlib.util.find_spec("dpfast.session._legacy") is None
    assert not hasattr(_stats, "LEGACY")
    assert "registered" not in {f.name for f in _stats.Stat.__dataclass_fields__.values()}


@pytest.mark.parametrize("domains", [True, False], ids=["public", "private"])
@pytest.mark.parametrize("case", sorted(PROBED))
def test_no_release_reads_rows_before_the_charge(case: str, domains: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Closes the probe channel: a release's rows (real or synthetic) were run through the
    release -- validation, bounding, aggregation -- before the ledger charged it, so what
    the session raised or learned before the charge depended on code that reads rows.
    Now the only thing before the charge is the plan over the schema: any pass over rows
    (:meth:`dpfast.tables.run.LocalBackend.partials`) before the ledger's query has
    charged fails this test (it did for each case here on the old code)."""
    charged: list[bool] = []
    real_query = _store.Store.query
    real_partials = _run.LocalBackend.partials

    @contextlib.contextmanager
    def query(self: _store.Store, *a: object, **k: object) -> Iterator[object]:
        with real_query(self, *a, **k) as q:  # type: ignore[arg-type]
            charged.append(True)
            yield q

    def partials(self: _run.LocalBackend, plan: object, source: object,
                 keys: object) -> object:
        if not charged:
            raise AssertionError("rows were read before the charge")
        return real_partials(self, plan, source, keys)  # type: ignore[arg-type]

    monkeypatch.setattr(_store.Store, "query", query)
    monkeypatch.setattr(_run.LocalBackend, "partials", partials)
    s = _session(_frame(), domains=domains)
    PROBED[case](s, 0.0 if domains else 1e-6)
    assert charged and len(s.budget.history()) >= 1


def _tables_call(df: pd.DataFrame, name: str, **kw: object) -> object:
    fn = getattr(dpfast.tables, name)
    value = "delay" if name != "mean" else "seats"
    return fn(df[value].to_numpy(), df.dest.to_numpy(dtype=object), df.pid.to_numpy(),
              rng=dpfast.default_rng(KEY), **kw)


@pytest.mark.parametrize("domains", [True, False], ids=["public", "private"])
def test_the_ledger_event_is_the_plans_and_the_tables_release(domains: bool) -> None:
    """The event charged for median, quantile, ``bounds="auto"`` and a histogram is the
    plan's (computed from the spec and the schema alone), equal to what
    :mod:`dpfast.tables` charges for the same release -- the event the probe found -- and
    the released numbers are those of :mod:`dpfast.tables`, bit for bit."""
    df = _frame()
    dom = {"domain": DESTS} if domains else {}
    delta = 0.0 if domains else 1e-6
    sessions: list[dpfast.Session] = []

    def fresh() -> dpfast.Session:  # one release per session: the same noise stream
        sessions.append(_session(df, domains=domains))
        return sessions[-1]

    def check(rel: object, direct: object, spec: ReleaseSpec, kind: np.dtype) -> None:
        (charge,) = sessions[-1].budget.history()
        ev = charge.event
        assert rel.event == ev == direct.event  # type: ignore[attr-defined]
        schema = _run.Rows(np.empty(0, object), np.empty(0, np.int64), np.empty(0, kind),
                           domain=DESTS if domains else None)
        assert make_plan(spec, schema).event == ev
        assert rel.values.tobytes() == direct.values.tobytes()  # type: ignore[attr-defined]

    rel = fresh().median("delay", "dest", epsilon=1.0, delta=delta, max_partitions=2,
                   max_per_partition=2)
    common = dict(bounds=(-20.0, 80.0), epsilon=1.0, delta=delta, max_partitions=2,
                  max_per_partition=2, n_candidates=256, candidates=None,
                  domain=DESTS if domains else None, selection="auto", bounding="uniform",
                  has_ids=True)
    check(rel, _tables_call(df, "median", bounds=(-20.0, 80.0), epsilon=1.0, delta=delta,
                            max_partitions=2, max_per_partition=2, **dom),
          rank_spec("median", q=0.5, **common), df.delay.dtype)  # type: ignore[arg-type]
    rel = fresh().quantile("delay", "dest", epsilon=1.0, delta=delta, q=[0.25, 0.75])
    common.update(max_partitions=1, max_per_partition=1)
    check(rel, _tables_call(df, "quantile", q=[0.25, 0.75], bounds=(-20.0, 80.0),
                            epsilon=1.0, delta=delta, **dom),
          rank_spec("quantile", q=[0.25, 0.75], **common),  # type: ignore[arg-type]
          df.delay.dtype)
    for name in ("sum", "mean"):
        rel = getattr(fresh(), name)("delay" if name == "sum" else "seats", "dest", epsilon=1.0,
                               delta=delta, bounds="auto")
        check(rel, _tables_call(df, name, bounds="auto", epsilon=1.0, delta=delta, **dom),
              ReleaseSpec.make([StatSpec(name)], epsilon=1.0, delta=delta, bounds="auto",
                               domain=DESTS if domains else None),
              df.delay.dtype if name == "sum" else df.seats.dtype)


@pytest.mark.parametrize("kw", [
    dict(bins=8, range=(-20, 80), epsilon=1.0),
    dict(bins=[0, 10, 100, 300], epsilon=0.5, delta=1e-6, noise="gaussian",
         max_partitions=3),
    dict(bins=5, range=(0, 300), rho=0.2, max_per_partition=2),
], ids=["laplace", "gaussian-edges", "zcdp"])
def test_a_histograms_event_is_its_plans(kw: dict[str, object]) -> None:
    """A session histogram is charged :func:`plan_histogram`'s event (from its parameters
    and the column's type), which is :func:`dpfast.histogram`'s on the same rows; the
    histogram is that function's, bit for bit."""
    from dpfast.tables.histogram import plan_histogram

    df = _frame()
    s = _session(df)
    col = "delay" if kw.get("range") == (-20, 80) else "seats"
    opts = {k: v for k, v in kw.items() if k not in ("bins", "range")}
    h, edges, rel = s.histogram(col, kw["bins"], kw.get("range"), **opts)
    ev = s.budget.history()[-1].event
    p = plan_histogram(df[col].to_numpy()[:0], kw["bins"], kw.get("range"),
                       privacy_ids=df.pid.to_numpy()[:0],
                       **{"max_partitions": 1, "max_per_partition": 1, **opts})
    h2, e2, r2 = dpfast.histogram(df[col].to_numpy(), kw["bins"], kw.get("range"),
                                  privacy_ids=df.pid.to_numpy(), rng=dpfast.default_rng(KEY),
                                  return_release=True,
                                  **{"max_partitions": 1, "max_per_partition": 1, **opts})
    assert rel.event == ev == p.event == r2.event
    assert h.tobytes() == h2.tobytes() and edges.tobytes() == e2.tobytes() == p.edges.tobytes()


@pytest.mark.parametrize("call, message", [
    (lambda s: s.histogram("delay", "auto", epsilon=1.0), "string estimator"),
    (lambda s: s.histogram("delay", 4, epsilon=1.0), "range must be given"),
    (lambda s: s.histogram("delay", 4, (0, 1)), "give epsilon"),
    (lambda s: s.histogram("delay", 4, (0, 1), epsilon=1.0, weight_bounds=(0, 1)),
     "weight_bounds applies to weights only"),
    (lambda s: s.histogram("delay", 4, (0, 1), epsilon=1.0, use_case="nope"), "use_case"),
    (lambda s: s.histogram("delay", 4, (0, 1), epsilon=1.0, bogus=1), "bogus"),
    (lambda s: s.histogram("delay", 4, (0, 1), epsilon=1.0, weights=[1.0]), "weights"),
    (lambda s: s.histogram("delay", 4, (0, 1), epsilon=1.0, note=3), "note"),
    (lambda s: s.quantile("delay", "dest", epsilon=1.0, q=1.5), "q must be in"),
    (lambda s: s.median("delay", "dest", epsilon=1.0, bounds=(5.0, 1.0)), "bounds"),
    (lambda s: s.mean("seats", "dest", rho=0.1, bounds="auto"), "needs epsilon"),
    (lambda s: s.mean("seats", "dest", epsilon=1.0, bounds="wide"), "or 'auto'"),
], ids=["estimator", "no-range", "no-target", "weight-bounds", "use-case", "unknown",
        "weights", "note", "q", "rank-bounds", "auto-rho", "auto-name"])
def test_public_checks_refuse_before_the_charge(call: Callable[[dpfast.Session], object],
                                                message: str) -> None:
    """What the probe raised before the charge, the plans raise now (ValueError /
    TypeError naming the parameter), and nothing is charged."""
    s = _session(_frame())
    with pytest.raises((ValueError, TypeError), match=message):
        call(s)
    assert s.budget.history() == []


def test_min_and_max_take_the_rank_familys_spec() -> None:
    """Closes a mismatch between a session's rank statistic and its :mod:`dpfast.tables`
    function: ``min``/``max`` were planned from a generic spec (no grid options: integer
    values with float bounds ranked as integers) and with ``max_per_partition`` forced to
    1 (their functions take it through ``**options``); now a session's min and max are
    ``dpfast.tables.min``/``max`` bit for bit (this failed on the old code)."""
    df = _frame()
    for name in ("min", "max"):
        rel = getattr(_session(df), name)("seats", "dest", epsilon=1.0, bounds=(0.0, 300.0),
                               max_partitions=2, max_per_partition=2)
        direct = getattr(dpfast.tables, name)(
            df.seats.to_numpy(), df.dest.to_numpy(dtype=object), df.pid.to_numpy(),
            bounds=(0.0, 300.0), epsilon=1.0, max_partitions=2, max_per_partition=2,
            domain=DESTS, rng=dpfast.default_rng(KEY))
        assert rel.event == direct.event
        assert rel.values.tobytes() == direct.values.tobytes()


def test_auto_bounds_on_a_dask_source_is_refused_before_the_charge() -> None:
    """``bounds="auto"`` is a local plan (:mod:`dpfast.dask` takes public bounds only): on
    a Dask source it is refused before the charge (TypeError naming bounds); it was
    charged, then failed (the probe ran the local release, the Dask one refused it)."""
    dd = pytest.importorskip("dask.dataframe")
    s = _session(dd.from_pandas(_frame(200), npartitions=2))
    with pytest.raises(TypeError, match="bounds must be a pair"):
        s.sum("delay", "dest", epsilon=1.0, bounds="auto")
    assert s.budget.history() == []


def test_a_rank_statistics_public_candidates_take_the_place_of_bounds() -> None:
    """``candidates=`` (a public grid, the rank family's own parameter) works through the
    session as through :func:`dpfast.tables.quantile`: it needs no bounds, and the
    session's default bounds of the column do not apply (the session refused it: "needs
    bounds" without them, "bounds or candidates, not both" with them)."""
    df = _frame()
    grid = [0.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0]
    bare = dpfast.Session(df, privacy_unit="pid", epsilon=50.0, delta=1e-5,
                          domains={"dest": DESTS}, rng=dpfast.default_rng(KEY))
    for s in (bare, _session(df)):  # no bounds for seats; the session's default bounds
        rel = s.quantile("seats", "dest", q=0.5, epsilon=1.0, candidates=grid)
        direct = dpfast.tables.quantile(
            df.seats.to_numpy(), df.dest.to_numpy(dtype=object), df.pid.to_numpy(), q=0.5,
            candidates=grid, epsilon=1.0, domain=DESTS, rng=dpfast.default_rng(KEY))
        assert rel.event == direct.event
        assert rel.values.tobytes() == direct.values.tobytes()
