"""dpfast.Session: sources, the result cache (bit-identical, free, across processes),
analysts' sub-budgets (also concurrent processes), the usage report, release serialisation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import dpfast
from dpfast.session import _spec
from dpfast.tables import TableRelease
from dpfast.tables.spec import ReleaseSpec, StatSpec

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

from tests.helpers import KEY, SUBPROCESS_TIMEOUT_S, same_release  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DESTS = ["BOS", "LAX", "ORD", "SFO"]


def _frame(n: int = 4000, seed: int = 1) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    return pd.DataFrame({"dest": r.choice(DESTS, n), "pid": r.integers(0, 1500, n),
                         "delay": r.normal(12, 8, n).round(2),
                         "seats": r.integers(0, 300, n), "year": r.choice([2013, 2014], n)})


def _session(df: pd.DataFrame | None = None, **kw: object) -> dpfast.Session:
    kw.setdefault("epsilon", 4.0)
    kw.setdefault("delta", 1e-5)
    return dpfast.Session(_frame() if df is None else df, privacy_unit="pid",
                          bounds={"delay": (-10.0, 60.0), "seats": (0, 300)},
                          domains={"dest": DESTS}, name="flights", **kw)




# ------------------------------------------------------------------ serialisation
@pytest.mark.parametrize("stat", ["count", "sum_int", "sum_float", "mean", "multi", "bytes"])
def test_release_state_round_trip(stat: str) -> None:
    r = np.random.default_rng(0)
    keys = r.choice(["a", "b", "c"], 500)
    ids = r.integers(0, 200, 500)
    g = dpfast.default_rng(KEY)
    if stat == "count":
        rel = dpfast.tables.count(keys, ids, epsilon=1.0, delta=1e-6, rng=g)
    elif stat == "sum_int":
        rel = dpfast.tables.sum(r.integers(-5, 9, 500), keys, ids, bounds=(-5, 9),
                                epsilon=1.0, domain=["a", "b", "c"], rng=g)
    elif stat == "sum_float":
        rel = dpfast.tables.sum(r.normal(size=500), keys, ids, bounds=(-2.0, 2.0),
                                epsilon=1.0, domain=["a", "b", "c"], rng=g)
    elif stat == "mean":
        rel = dpfast.tables.mean(r.normal(size=500), keys.astype(object), ids,
                                 bounds=(-2.0, 2.0), epsilon=1.0, delta=1e-6, rng=g)
    elif stat == "multi":
        rel = dpfast.tables.count((keys, r.integers(0, 3, 500)), ids, epsilon=1.0,
                                  delta=1e-6, max_partitions=3, rng=g)
    else:
        rel = dpfast.tables.count(np.array([k.encode() for k in keys], dtype=object), ids,
                                  epsilon=1.0, delta=1e-6, rng=g)
    state = json.loads(json.dumps(rel.to_state()))  # plain JSON, no pickle
    back = TableRelease.from_state(state)
    same_release(rel, back)
    assert back.to_dict() == rel.to_dict()
    assert back.sensitivity == rel.sensitivity


def test_release_state_rejects_other_data() -> None:
    with pytest.raises(ValueError, match="TableRelease"):
        TableRelease.from_state({"type": "Other"})
    with pytest.raises(ValueError, match="version"):
        TableRelease.from_state({"type": "TableRelease", "version": 99})


# ------------------------------------------------------------------ the cache
def test_repeat_is_bit_identical_and_free() -> None:
    s = _session()
    a = s.mean("delay", "dest", epsilon=0.5, where="year = 2013")
    spent = s.budget.spent().epsilon
    b = s.mean("delay", "dest", epsilon=0.5, where="year=2013")  # same query, other text
    same_release(a, b)
    assert s.budget.spent().epsilon == spent == 0.5
    assert len(s.budget.history()) == 1
    u = s.usage()
    assert u.hits == 1 and u.queries[0].hits == 1


@pytest.mark.parametrize("change", [
    {"epsilon": 0.25}, {"bounds": (0.0, 30.0)}, {"domain": DESTS[:3]},
    {"where": "year = 2014"}, {"max_partitions": 2}, {"bounding": "frequent"}])
def test_a_different_query_is_charged(change: dict) -> None:
    s = _session()
    base = {"epsilon": 0.5}
    s.mean("delay", "dest", **base)
    s.mean("delay", "dest", **{**base, **change})
    assert len(s.budget.history()) == 2
    assert s.usage().hits == 0


@pytest.mark.parametrize("stat", ["variance", "median", "privacy_id_count"])
def test_bounding_passes_through_to_the_statistic(stat: str) -> None:
    """``bounding="frequent"`` reaches the statistic (the release equals the direct call)
    and is part of the cached query (a repeat is free, the other policy is charged)."""
    df = _frame()
    s = dpfast.Session(df, privacy_unit="pid", bounds={"delay": (-10.0, 60.0)},
                       domains={"dest": DESTS}, epsilon=4.0, rng=dpfast.default_rng(KEY))
    kw = dict(epsilon=1.0, max_partitions=2, bounding="frequent")
    direct_kw = dict(kw, domain=DESTS, rng=dpfast.default_rng(KEY))
    keys, ids = df.dest.to_numpy(dtype=object), df.pid.to_numpy()
    if stat == "privacy_id_count":
        rel = s.privacy_id_count("dest", **kw)
        direct = dpfast.tables.privacy_id_count(keys, ids, **direct_kw)
    else:
        rel = getattr(s, stat)("delay", "dest", **kw)
        direct = getattr(dpfast.tables, stat)(df.delay.to_numpy(), keys, ids,
                                               bounds=(-10.0, 60.0), **direct_kw)
    assert rel.values.tolist() == direct.values.tolist()
    again = (s.privacy_id_count("dest", **kw) if stat == "privacy_id_count"
             else getattr(s, stat)("delay", "dest", **kw))
    assert again.values.tolist() == rel.values.tolist() and len(s.budget.history()) == 1
    with pytest.raises(ValueError, match="bounding"):
        s.privacy_id_count("dest", epsilon=1.0, bounding="most")
    assert len(s.budget.history()) == 1


def _query_id(**fields: object) -> str:
    """The cache key of a spec (the session's: dpfast.tables.spec.ReleaseSpec.query_id)."""
    return ReleaseSpec((StatSpec("count"),), **fields).query_id()  # type: ignore[arg-type]


def test_query_id_is_exact_about_floats() -> None:
    a = _query_id(epsilon=0.1)
    assert a == _query_id(epsilon=0.1)
    assert a != _query_id(epsilon=float(np.nextafter(0.1, 1)))
    assert _query_id(options=(("x", 1),)) != _query_id(options=(("x", 1.0),))
    assert _spec.domain_fingerprint(["a", "b"]) != _spec.domain_fingerprint(["b", "a"])


def test_data_change_is_a_new_query(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "flights.parquet")
    df = _frame()
    df.to_parquet(path)
    led = os.path.join(str(tmp_path), "ledger.db")
    kw = dict(privacy_unit="pid", domains={"dest": DESTS}, epsilon=2.0, ledger=led)
    with dpfast.Session(path, **kw) as s:
        s.count("dest", epsilon=0.5)
    df.iloc[:100].to_parquet(path)  # the file is rewritten: a new source
    with dpfast.Session(path, **kw) as s:
        s.count("dest", epsilon=0.5)
        assert len(s.budget.history()) == 2


_CHILD = textwrap.dedent("""
    import json, sys
    import dpfast
    path, ledger = sys.argv[1], sys.argv[2]
    s = dpfast.Session(path, privacy_unit="pid", bounds={"delay": (-10.0, 60.0)},
                       domains={"dest": ["BOS", "LAX", "ORD", "SFO"]}, ledger=ledger)
    rel = s.analyst("bob").mean("delay", "dest", epsilon=0.5)
    print(json.dumps({"bytes": rel.values.tobytes().hex(),
                      "charges": len(s.budget.history()), "hits": s.usage().hits}))
""")


def test_second_process_gets_the_stored_answer(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "flights.parquet")
    _frame().to_parquet(path)
    led = os.path.join(str(tmp_path), "ledger.db")
    s = dpfast.Session(path, privacy_unit="pid", bounds={"delay": (-10.0, 60.0)},
                       domains={"dest": DESTS}, epsilon=2.0, ledger=led)
    bob = s.add_analyst("bob", epsilon=1.0)
    rel = bob.mean("delay", "dest", epsilon=0.5)
    s.close()
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", _CHILD, path, led], capture_output=True,
                         text=True, env=env, timeout=SUBPROCESS_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["bytes"] == rel.values.tobytes().hex()
    assert got["charges"] == 1 and got["hits"] == 1


# ------------------------------------------------------------------ analysts
def test_analysts_sub_budgets_and_usage() -> None:
    s = _session(epsilon=2.0)
    alice = s.add_analyst("alice", epsilon=0.5)
    bob = s.add_analyst("bob", epsilon=1.0)
    first = alice.count("dest", epsilon=0.4)
    with pytest.raises(dpfast.BudgetExceededError):
        alice.count("dest", epsilon=0.2, where="year = 2013")   # over alice's 0.5
    shared = bob.count("dest", epsilon=0.4)    # alice's answer: a hit, free for bob too
    assert len(s.budget.history()) == 1 and shared.values.tolist() == first.values.tolist()
    bob.count("dest", epsilon=0.4, where="year = 2014")      # bob has his own share
    rows = s.budget.history()
    assert [r.analyst for r in rows] == ["alice", "bob"]
    assert all(r.query_id for r in rows)
    u = s.usage()
    by = {a.name: a for a in u.analysts}
    assert by["alice"].spent_epsilon == pytest.approx(0.4)  # the refusal costs nothing
    assert by["bob"].spent_epsilon == pytest.approx(0.4)
    assert by["alice"].refused == 1
    assert u.spent.epsilon == pytest.approx(0.8) and u.utilization == pytest.approx(40.0)
    assert "alice" in str(u)
    assert by["alice"].queries == 1 and by["bob"].queries == 1 and by["bob"].hits == 1


def test_analyst_checks() -> None:
    s = _session(epsilon=1.0)
    with pytest.raises(ValueError, match="at most the budget's epsilon"):
        s.add_analyst("carol", epsilon=2.0)
    with pytest.raises(ValueError, match="must not be empty"):
        s.add_analyst("", epsilon=0.1)
    s.add_analyst("dan", epsilon=0.5)
    with pytest.raises(ValueError, match="already has the sub-budget"):
        s.add_analyst("dan", epsilon=0.4)
    with pytest.raises(ValueError, match="already has the sub-budget"):
        s.analyst("dan", epsilon=0.4)
    assert s.analyst("dan", epsilon=0.5).analyst_name == "dan"  # the same share: a check
    erin = s.add_analyst("erin")      # a share of the whole budget: only the total limits
    erin.count("dest", epsilon=0.75)
    assert s.budget.history()[-1].analyst == "erin"


def test_only_registered_analysts_get_a_view() -> None:
    """Channel 7 of issue 36 (self-declared sub-budgets): naming a new analyst used to
    create a fresh share (``session.analyst("new", epsilon=...)``); now only the budget's
    owner registers shares, and an unknown name is refused with nothing recorded."""
    s = _session(epsilon=1.0)
    s.add_analyst("dan", epsilon=0.25)
    rows = len(s.budget.history(include_refused=True))
    for kw in ({}, {"epsilon": 0.5}, {"epsilon": 0.25}):
        with pytest.raises(ValueError, match="'mallory' is not registered"):
            s.analyst("mallory", **kw)
    with pytest.raises(ValueError, match="'mallory' is not registered"):
        s.analyst("dan").analyst("mallory", epsilon=0.5)
    assert s.budget.analysts() == {"dan": (0.25, s.budget.delta)}
    assert len(s.budget.history(include_refused=True)) == rows


def test_a_ledger_is_bound_to_one_privacy_unit(tmp_path: object) -> None:
    """Channel 10 of issue 36 (first half): sessions with different privacy units were
    accepted on one ledger, so its total mixed two neighbouring relations and bounded
    neither.  The ledger now records the unit of its first session; a session with
    another unit is refused at construction, nothing charged."""
    led = os.path.join(str(tmp_path), "unit.db")
    df = _frame(500)
    kw = dict(domains={"dest": DESTS}, ledger=led)
    s = dpfast.Session(df, privacy_unit="pid", epsilon=2.0, **kw)
    assert s.bound_unit and s.budget.privacy_unit()["column"] == "pid"
    s.count("dest", epsilon=0.5)
    s.close()
    for other in (None, "year"):
        with pytest.raises(ValueError, match="privacy_unit .* is not the privacy unit"):
            dpfast.Session(df, privacy_unit=other, **kw)
    b = dpfast.Budget.from_ledger(led)
    assert len(b.history(include_refused=True)) == 1 and b.spent().epsilon == 0.5
    assert b.privacy_unit() == {"column": "pid", "relation": "add or remove one person: "
                                "all rows with one value of column 'pid'"}
    with pytest.raises(ValueError, match="privacy_unit"):
        b.bind_privacy_unit(None)
    b.close()
    again = dpfast.Session(df, privacy_unit="pid", **kw)  # the same unit: accepted
    assert not again.bound_unit
    again.close()
    from dpfast.cli import main

    assert main(["ledger", "verify", led]) == 0  # the unit is metadata, not a chain row


def test_a_ledger_without_a_unit_adopts_the_first_sessions() -> None:
    """A ledger of an earlier dpfast (or one charged by the table functions only) has no
    unit: the first session binds it, and the next session must agree."""
    b = dpfast.Budget(2.0, 1e-5, accounting="mixed")
    b.spend(dpfast.events.Epsilon(0.25))
    assert b.privacy_unit() is None
    first = dpfast.Session(_frame(300), privacy_unit=None, budget=b, name="flights")
    assert first.bound_unit and b.privacy_unit()["column"] is None
    with pytest.raises(ValueError, match="privacy_unit 'pid' is not the privacy unit"):
        dpfast.Session(_frame(300), privacy_unit="pid", budget=b, name="flights")
    assert len(b.history(include_refused=True)) == 1


_WORKER = textwrap.dedent("""
    import sys
    import dpfast
    path, ledger, name, start = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    s = dpfast.Session(path, privacy_unit="pid", domains={"dest": ["BOS", "LAX", "ORD",
                       "SFO"]}, ledger=ledger)
    a = s.analyst(name)
    ok = 0
    for i in range(start, start + 6):           # 6 different queries of 0.125 each
        try:
            a.count("dest", epsilon=0.125, where=f"seats >= {i}")
            ok += 1
        except dpfast.BudgetExceededError:
            pass
    print(ok)
""")


def test_concurrent_analysts_never_overspend(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "flights.parquet")
    _frame(1000).to_parquet(path)
    led = os.path.join(str(tmp_path), "ledger.db")
    s = dpfast.Session(path, privacy_unit="pid", domains={"dest": DESTS}, epsilon=1.0,
                       ledger=led)
    for name in ("a1", "a2", "a3"):
        s.add_analyst(name, epsilon=0.5)   # 3 x 0.5 > 1.0: the total binds too
    s.close()
    env = dict(os.environ, PYTHONPATH=ROOT)
    # four processes, two for a1 on overlapping queries (some are cache hits); the
    # analysts' queries differ (a query one analyst paid for is free for the others)
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, path, led, name, str(st)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env)
             for name, st in (("a1", 0), ("a1", 3), ("a2", 100), ("a3", 200))]
    outs = [p.communicate(timeout=SUBPROCESS_TIMEOUT_S) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    b = dpfast.Budget.from_ledger(led)
    hist = b.history()
    assert b.spent().epsilon <= 1.0
    assert sum(h.cost.epsilon for h in hist) <= 1.0
    per: dict[str, float] = {}
    for h in hist:
        per[h.analyst] = per.get(h.analyst, 0.0) + h.cost.epsilon
    assert all(v <= 0.5 for v in per.values()), per
    assert len(hist) == 8  # 1.0 / 0.125: the total is used up, never exceeded
    for a in b.usage().analysts:
        assert a.spent_epsilon <= 0.5


# ------------------------------------------------------------------ sources
def _sources(tmp: str, df: pd.DataFrame) -> dict[str, object]:
    import duckdb
    import polars as pl

    pq = os.path.join(tmp, "flights.parquet")
    df.to_parquet(pq)
    db = os.path.join(tmp, "store.duckdb")
    con = duckdb.connect(db)
    con.register("df", df)
    con.execute("CREATE TABLE flights AS SELECT * FROM df")
    con.close()
    return {"pandas": df, "polars": pl.from_pandas(df), "parquet": pq, "duckdb": db}


def test_every_source_gives_the_same_release(tmp_path: object) -> None:
    df = _frame(2000)
    results = {}
    for kind, src in _sources(str(tmp_path), df).items():
        s = dpfast.Session(src, privacy_unit="pid", bounds={"delay": (-10.0, 60.0)},
                           domains={"dest": DESTS}, epsilon=2.0, rng=dpfast.default_rng(KEY))
        results[kind] = s.mean("delay", "dest", epsilon=1.0)
    direct = dpfast.tables.mean(df.delay.to_numpy(), df.dest.to_numpy(dtype=object),
                                df.pid.to_numpy(), bounds=(-10.0, 60.0), epsilon=1.0,
                                domain=DESTS, rng=dpfast.default_rng(KEY))
    for rel in results.values():
        assert rel.values.tobytes() == direct.values.tobytes()
        assert rel.keys.tolist() == DESTS


def test_dask_source_same_release() -> None:
    dd = pytest.importorskip("dask.dataframe")
    df = _frame(2000)
    s = dpfast.Session(dd.from_pandas(df, npartitions=3), privacy_unit="pid",
                       domains={"dest": DESTS}, bounds={"seats": (0, 300)}, epsilon=2.0,
                       rng=dpfast.default_rng(KEY))
    rel = s.sum("seats", "dest", epsilon=1.0)
    direct = dpfast.tables.sum(df.seats.to_numpy(), df.dest.to_numpy(dtype=object),
                               df.pid.to_numpy(), bounds=(0, 300), epsilon=1.0,
                               domain=DESTS, rng=dpfast.default_rng(KEY))
    assert rel.values.tolist() == direct.values.tolist()
    again = s.sum("seats", "dest", epsilon=1.0)
    assert again.values.tolist() == rel.values.tolist() and len(s.budget.history()) == 1
    with pytest.raises(ValueError, match="DuckDB-backed"):
        s.count("dest", epsilon=0.1, where="year = 2013")


def test_bad_input_is_named() -> None:
    df = _frame(200)
    with pytest.raises(ValueError, match="privacy_unit 'who'"):
        dpfast.Session(df, privacy_unit="who", epsilon=1.0)
    with pytest.raises(ValueError, match="needs budget= or epsilon="):
        dpfast.Session(df, privacy_unit="pid")
    with pytest.raises(TypeError, match="source must be"):
        dpfast.Session(42, privacy_unit="pid", epsilon=1.0)
    s = dpfast.Session(df, privacy_unit="pid", epsilon=1.0, delta=1e-5)
    with pytest.raises(ValueError, match="key column 'nope'"):
        s.count("nope", epsilon=0.1)
    with pytest.raises(ValueError, match="needs bounds"):
        s.sum("delay", "dest", epsilon=0.1)
    with pytest.raises(ValueError, match="subquery"):
        s.count("dest", epsilon=0.1, where="delay > (SELECT avg(delay) FROM data)")
    before = df.copy()
    s.count("dest", epsilon=0.1, delta=1e-6)
    pd.testing.assert_frame_equal(df, before)   # the caller's data is never modified
    assert len(s.budget.history()) == 1


def test_histogram_cached() -> None:
    s = _session()
    h, edges, rel = s.histogram("delay", bins=6, range=(-10, 50), epsilon=0.5)
    h2, e2, rel2 = s.histogram("delay", bins=6, range=(-10, 50), epsilon=0.5)
    assert h.tobytes() == h2.tobytes() and edges.tobytes() == e2.tobytes()
    assert len(s.budget.history()) == 1 and rel2.event == rel.event


def test_topdown_cached_and_equal_to_direct() -> None:
    r = np.random.default_rng(5)
    geo = pd.DataFrame({"state": ["A", "A", "B", "B", "B"],
                        "county": ["a1", "a2", "b1", "b2", "b3"]})
    df = pd.DataFrame({"county": r.choice(geo.county, 3000), "pid": np.arange(3000)})
    s = dpfast.Session(df, privacy_unit="pid", epsilon=10.0, delta=1e-5,
                       rng=dpfast.default_rng(KEY))
    rel = s.topdown(geo, ["state", "county"], rho=0.5)
    counts = df.county.value_counts().reindex(geo.county).to_numpy()
    direct = dpfast.tables.topdown(counts, [np.array([0, 0, 1, 1, 1]), np.arange(5)],
                                   rho=0.5, rng=dpfast.default_rng(KEY))
    for a, b in zip(rel.estimates, direct.estimates):
        assert a.tolist() == b.tolist()
    again = s.topdown(geo, ["state", "county"], rho=0.5)
    assert len(s.budget.history()) == 1 and again.event == rel.event
    for a, b in zip(again.estimates, rel.estimates):
        assert a.tobytes() == b.tobytes()
    for (lo, hi), (lo2, hi2) in zip(again.confidence_interval(0.1),
                                    rel.confidence_interval(0.1)):
        assert lo.tobytes() == lo2.tobytes() and hi.tobytes() == hi2.tobytes()


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ARRAYS = st.one_of(
    st.lists(st.integers(-2 ** 63, 2 ** 63 - 1)).map(lambda v: np.array(v, np.int64)),
    st.lists(st.floats(allow_nan=True, allow_infinity=True)).map(
        lambda v: np.array(v, np.float64)),
    st.lists(st.text()).map(lambda v: np.array(v, dtype=object)),
    st.lists(st.binary()).map(lambda v: np.array(v, dtype=object)),
    st.lists(st.text(min_size=1, max_size=5), min_size=1).map(np.array))


@given(_ARRAYS)
def test_array_state_is_exact(a: np.ndarray) -> None:
    from dpfast.tables.state import decode_array, encode_array

    back = decode_array(json.loads(json.dumps(encode_array(a))))
    assert back.dtype == a.dtype and back.shape == a.shape
    if a.dtype.kind == "O":
        assert [type(x) for x in back.tolist()] == [type(x) for x in a.tolist()]
        assert back.tolist() == a.tolist()
    else:
        assert back.tobytes() == a.tobytes()


@given(st.floats(allow_nan=False), st.floats(allow_nan=False))
def test_query_ids_tell_floats_apart(x: float, y: float) -> None:
    same = float(x).hex() == float(y).hex()
    assert (_query_id(epsilon=x) == _query_id(epsilon=y)) == same


# ------------------------------------------------------------------ the new statistics
def test_new_statistics_through_the_session_cached_and_equal_to_direct() -> None:
    df = _frame()
    s = _session(df, rng=dpfast.default_rng(KEY))
    var = s.variance("delay", "dest", epsilon=0.5)
    sd = s.stddev("delay", "dest", epsilon=0.5)
    med = s.median("delay", "dest", epsilon=0.5)
    q9 = s.quantile("delay", "dest", q=0.9, epsilon=0.5)
    people = s.privacy_id_count("dest", epsilon=0.5)
    kinds = s.count_distinct("seats", "dest", epsilon=0.5)
    spent = s.budget.spent().epsilon
    assert spent == pytest.approx(3.0)
    # the same questions again: the stored answers, bit for bit, no charge
    again = [s.variance("delay", "dest", epsilon=0.5), s.stddev("delay", "dest", epsilon=0.5),
             s.median("delay", "dest", epsilon=0.5),
             s.quantile("delay", "dest", q=0.9, epsilon=0.5),
             s.privacy_id_count("dest", epsilon=0.5),
             s.count_distinct("seats", "dest", epsilon=0.5)]
    assert s.budget.spent().epsilon == spent and s.usage().hits == 6
    for a, b in zip([var, sd, people, kinds], [again[0], again[1], again[4], again[5]]):
        same_release(a, b)  # variance/std intervals come back from the cache too
    for a, b in zip([med, q9], [again[2], again[3]]):
        assert a.values.tobytes() == b.values.tobytes() and a.event == b.event
        assert a.rank_error(0.1) == b.rank_error(0.1)
    # the same release as the direct call with the same generator
    direct = dpfast.tables.median(df["delay"].to_numpy(), df["dest"].to_numpy(),
                                  df["pid"].to_numpy(), bounds=(-10.0, 60.0), epsilon=0.5,
                                  domain=DESTS, max_partitions=s.max_partitions,
                                  max_per_partition=s.max_per_partition,
                                  rng=dpfast.default_rng(KEY))
    assert direct.event == med.event and direct.values.shape == med.values.shape
    with pytest.raises(TypeError, match="q="):
        s.quantile("delay", "dest", epsilon=0.5)
    with pytest.raises(ValueError, match="pure-DP"):
        s.median("delay", "dest", rho=0.1)


def test_sql_new_aggregates_and_cache() -> None:
    # VAR_POP / STDDEV_POP: dpfast.tables.variance / std are the population statistics
    # (VARIANCE / STDDEV are DuckDB's sample ones, refused: issue 36, channel 5)
    s = _session(rng=dpfast.default_rng(KEY))
    q = ("SELECT dest, COUNT(DISTINCT pid) AS people, MEDIAN(delay) AS med, "
         "VAR_POP(delay) AS v, STDDEV_POP(delay) AS sd FROM flights GROUP BY dest")
    a = s.sql(q, epsilon=2.0)
    spent = s.budget.spent().epsilon
    b = s.sql(q, epsilon=2.0)
    assert s.budget.spent().epsilon == spent <= 2.0 + 1e-12
    ta, tb = a.to_pandas(), b.to_pandas()
    assert list(ta.columns)[:4] == ["people", "med", "v", "sd"] or {"people", "med", "v",
                                                                      "sd"} <= set(ta.columns)
    assert ta.equals(tb)
    assert (ta["v"] >= 0).all() and (ta["sd"] >= 0).all()
