"""Local-DP collection as a pipeline (issue 29): client budgets, the report format, the
streaming server, estimates with confidence intervals and the utility monitor."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings
from scipy import stats

from dpfast import local as L
from dpfast.cli import main as cli_main
from dpfast.local.reports import REPORT_MAGIC, pack

from .helpers import KEY, SUBPROCESS_TIMEOUT_S

SKETCHES = ("cms", "hcms", "rappor")


def _protocols() -> dict[str, object]:
    return {
        "rr": L.GeneralizedRandomizedResponse(2, 1.0),
        "krr": L.GeneralizedRandomizedResponse(12, 2.0),
        "oue": L.OptimizedUnaryEncoding(12, 2.0),
        "olh": L.OptimalLocalHashing(12, 2.0),
        "cms": L.CountMeanSketch(4.0, 8, 100, hash_seed=5),
        "hcms": L.HadamardCountMeanSketch(4.0, 8, 64, hash_seed=5),
        "rappor": L.Rappor(32, 2, 4, hash_seed=5),
    }


PROTOS = _protocols()


def _domain(name: str) -> int:
    return 2 if name == "rr" else 12


def _agg(name: str, proto: object) -> L.Aggregator:
    cands = list(range(_domain(name))) if name in SKETCHES else None
    return L.Aggregator(proto, candidates=cands)


@pytest.fixture(scope="module")
def batches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, L.ReportBatch]:
    d = tmp_path_factory.mktemp("pools")
    out = {}
    rng = np.random.default_rng(3)
    for name, proto in PROTOS.items():
        n = 3000
        pool = L.ClientPool(proto, d / f"{name}.pool", num_clients=n, budget=4.0, rng=KEY)
        out[name] = pool.report(np.arange(n), rng.integers(0, _domain(name), n))
    return out


def _slice(b: L.ReportBatch, a: int, e: int) -> L.ReportBatch:
    return L.ReportBatch(b.protocol, b.params, {k: v[a:e] for k, v in b.arrays.items()})


# ----------------------------------------------------------------------------- format
@pytest.mark.parametrize("name", list(PROTOS))
def test_report_format_round_trips_and_is_compact(name: str, batches) -> None:
    b = batches[name]
    assert b.protocol == name and b.n == 3000
    raw = b.to_bytes()
    assert raw[:8] == REPORT_MAGIC and raw[8] == 1
    assert L.ReportBatch.from_bytes(raw) == b
    assert L.ReportBatch.from_json(b.to_json()) == b
    per_report = {"rr": 1, "krr": 1, "oue": 2, "olh": 25, "cms": 1 + 13, "hcms": 3,
                  "rappor": 1 + 4}[name]
    assert len(raw) - 3000 * per_report < 400  # payload + a small JSON header
    assert b.params == L.reports.protocol_params(PROTOS[name])


def test_params_round_trip_rebuilds_the_same_protocol() -> None:
    for name, proto in PROTOS.items():
        params = L.reports.protocol_params(proto)
        again = L.reports.build_protocol(name, params)
        assert L.reports.protocol_params(again) == params
    with pytest.raises(ValueError, match="epsilon must be a float"):
        L.reports.protocol_params(L.GeneralizedRandomizedResponse(3, Fraction(1, 3)))


def test_malformed_containers_are_refused(batches) -> None:
    raw = batches["krr"].to_bytes()
    bad = {
        b"XXXXXXXX" + raw[8:]: "bad magic",
        raw[:8] + b"\x09" + raw[9:]: "unsupported format version",
        raw[:-1]: "truncated|needs",
        raw + b"\0": "trailing bytes",
        raw[:20]: "truncated",
    }
    for data, msg in bad.items():
        with pytest.raises(ValueError, match=msg):
            L.ReportBatch.from_bytes(data)
    with pytest.raises(TypeError):
        L.ReportBatch.from_bytes("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not JSON"):
        L.ReportBatch.from_json("{")
    head = {"format": "dpfast.ldp.reports", "version": 1, "protocol": "krr",
            "params": {"k": 12}, "n": 0}
    with pytest.raises(ValueError, match="params of 'krr' must be exactly"):
        L.ReportBatch.from_bytes(pack(REPORT_MAGIC, head, {}))
    head["params"] = {"k": 12, "epsilon": 2.0}
    head["n"] = 5
    with pytest.raises(ValueError, match="n rows"):
        L.ReportBatch.from_bytes(pack(REPORT_MAGIC, head, {"values": np.zeros(4, np.uint8)}))
    with pytest.raises(ValueError, match="dtype"):
        L.ReportBatch.from_bytes(pack(REPORT_MAGIC, head, {"values": np.zeros(5, np.float64)}))


@settings(max_examples=40)
@given(pos=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_corrupted_bytes_are_refused_or_decoded_never_crash(pos: int, byte: int) -> None:
    raw = bytearray(_small_batch().to_bytes())
    raw[pos % len(raw)] = byte
    agg = L.Aggregator(PROTOS["krr"])
    try:
        agg.add(bytes(raw))
    except (ValueError, TypeError):
        assert agg.n == 0  # refused batches count nothing
    else:
        assert agg.n == 40


def _small_batch() -> L.ReportBatch:
    return L.randomize(PROTOS["krr"], np.arange(40) % 12, rng=KEY)


@pytest.mark.parametrize("name", list(PROTOS))
def test_foreign_reports_are_refused_naming_the_mismatch(name: str, batches) -> None:
    b = batches[name]
    agg = _agg(name, PROTOS[name])
    for key, value in b.params.items():
        if isinstance(value, float):
            other = value / 2 if key == "epsilon" else (value + 0.125 if value < 0.75 else
                                                        value - 0.125)
        elif isinstance(value, str):
            other = "00" * 32
        else:
            other = value + 1
        foreign = L.ReportBatch(b.protocol, dict(b.params, **{key: other}), b.arrays)
        with pytest.raises(ValueError, match=f"{key} = "):
            agg.add(foreign)
    other_proto = "krr" if name != "krr" else "oue"
    with pytest.raises(ValueError, match="protocol"):
        agg.add(L.ReportBatch(other_proto, b.params, b.arrays))
    assert agg.n == 0


def test_reports_no_client_could_produce_are_refused(batches) -> None:
    b = batches["krr"]
    agg = L.Aggregator(PROTOS["krr"])
    vals = b.arrays["values"].copy()
    vals[7] = 12
    with pytest.raises(ValueError, match=r"reports.values must lie in \[0, 12\)"):
        agg.add(L.ReportBatch("krr", b.params, {"values": vals}))
    with pytest.raises(ValueError, match="unsigned"):
        agg.add(L.ReportBatch("krr", b.params, {"values": vals.astype(np.int64)}))
    with pytest.raises(ValueError, match="columns"):
        agg.add(L.ReportBatch("krr", b.params, {"bits": vals}))
    c = batches["cms"]
    bits = c.arrays["bits"].copy()
    bits[0, -1] |= 0x80  # m = 100: bits above 100 are padding
    cms = L.Aggregator(PROTOS["cms"])
    with pytest.raises(ValueError, match="padding bits"):
        cms.add(L.ReportBatch("cms", c.params, {"rows": c.arrays["rows"], "bits": bits}))
    rows = c.arrays["rows"].copy()
    rows[1] = 8
    with pytest.raises(ValueError, match="reports.rows"):
        cms.add(L.ReportBatch("cms", c.params, {"rows": rows, "bits": c.arrays["bits"]}))
    o = batches["olh"]
    with pytest.raises(ValueError, match="reports.seeds"):
        L.Aggregator(PROTOS["olh"]).add(L.ReportBatch("olh", o.params, {
            "seeds": o.arrays["seeds"][:, :2].copy(), "values": o.arrays["values"]}))
    assert agg.n == cms.n == 0
    with pytest.raises(TypeError, match="ReportBatch"):
        agg.add([1, 2, 3])


# ----------------------------------------------------------------------------- server
@pytest.mark.parametrize("name", list(PROTOS))
def test_merged_partial_aggregates_equal_one_process_exactly(name: str, batches,
                                                             tmp_path) -> None:
    b = batches[name]
    whole = _agg(name, PROTOS[name]).add(b)
    rng = np.random.default_rng(11)
    cuts = np.sort(rng.choice(np.arange(1, b.n), 6, replace=False))
    edges = [0, *cuts.tolist(), b.n]
    parts = [_agg(name, PROTOS[name]).add(_slice(b, a, e).to_bytes())
             for a, e in zip(edges[:-1], edges[1:])]
    merged = _agg(name, PROTOS[name])
    for i in rng.permutation(len(parts)):  # any order
        merged.merge(parts[i])
    assert merged == whole and merged.n == b.n
    streamed = _agg(name, PROTOS[name])
    for a in range(0, b.n, 701):  # batches of any size, one at a time
        streamed.add(_slice(b, a, a + 701))
    assert streamed == whole
    np.testing.assert_array_equal(whole.estimate().counts, merged.estimate().counts)
    whole.save(tmp_path / "state.bin")
    assert L.Aggregator.load(tmp_path / "state.bin") == whole
    other = L.Aggregator(L.GeneralizedRandomizedResponse(3, 1.0))
    with pytest.raises(ValueError):
        whole.merge(other)


def test_native_aggregates_agree_with_the_streaming_tallies(batches) -> None:
    b = batches["oue"]
    bits = np.unpackbits(b.arrays["bits"], axis=1, count=12, bitorder="little")
    agg = L.Aggregator(PROTOS["oue"]).add(b)
    np.testing.assert_array_equal(agg.state["counts"], PROTOS["oue"].aggregate(bits))
    c = batches["cms"]
    sk = PROTOS["cms"].aggregate(L.CmsReports(c.arrays["rows"].astype(np.int64),
                                              c.arrays["bits"]))
    agg = L.Aggregator(PROTOS["cms"]).add(c)
    np.testing.assert_array_equal(agg.state["counts"], sk.ones)
    np.testing.assert_array_equal(agg.state["totals"], sk.totals)
    r = batches["rappor"]
    rc = PROTOS["rappor"].aggregate(L.RapporReports(r.arrays["cohorts"].astype(np.int64),
                                                    r.arrays["bits"]))
    agg = L.Aggregator(PROTOS["rappor"]).add(r)
    np.testing.assert_array_equal(agg.state["counts"], rc.counts)


def test_tampered_state_is_refused(batches) -> None:
    agg = L.Aggregator(PROTOS["krr"]).add(batches["krr"])
    raw = bytearray(agg.to_bytes())
    raw[-8:] = (10**9).to_bytes(8, "little")
    with pytest.raises(ValueError, match="state.counts"):
        L.Aggregator.from_bytes(bytes(raw))
    with pytest.raises(ValueError, match="bad magic"):
        L.Aggregator.from_bytes(batches["krr"].to_bytes())


# ----------------------------------------------------------------------------- intervals
def _coverage(name: str, runs: int, n: int) -> tuple[int, int]:
    k = 2 if name == "rr" else 8
    w = 1.0 / np.arange(1, k + 1)
    rng = np.random.default_rng(99)
    hits = total = 0
    for r in range(runs):
        if name == "rr":
            proto = L.GeneralizedRandomizedResponse(2, 1.0)
        elif name == "krr":
            proto = L.GeneralizedRandomizedResponse(k, 1.5)
        elif name == "oue":
            proto = L.OptimizedUnaryEncoding(k, 1.5)
        elif name == "olh":
            proto = L.OptimalLocalHashing(k, 1.5)
        elif name == "cms":  # the variance is over the random hash functions: fresh seeds
            proto = L.CountMeanSketch(2.0, 4, 256, hash_seed=r)
        else:  # (normal intervals need a sketch wide enough that collisions are rare)
            proto = L.HadamardCountMeanSketch(2.0, 4, 1024, hash_seed=r)
        vals = rng.choice(k, size=n, p=w / w.sum())
        key = bytes([r % 256, r // 256]) + KEY[2:]
        agg = L.Aggregator(proto, candidates=list(range(k)) if name in SKETCHES else None)
        agg.add(L.randomize(proto, vals, rng=key))
        est = agg.estimate(alpha=0.05)
        true = np.bincount(vals, minlength=k)[np.array(est.items)]
        hits += int(np.sum((est.low <= true) & (true <= est.high)))
        total += len(est.items)
    return hits, total


@pytest.mark.parametrize("name,runs,n", [("rr", 1000, 2000), ("krr", 300, 4000),
                                         ("oue", 300, 4000),
                                         ("olh", 300, 4000), ("cms", 300, 3000),
                                         ("hcms", 300, 3000)])
def test_estimates_lie_in_their_95pct_intervals_at_the_stated_rate(name: str, runs: int,
                                                                   n: int) -> None:
    hits, total = _coverage(name, runs, n)
    # two-sided binomial test of rate 0.95 (intervals of one run are nearly independent)
    p = stats.binomtest(hits, total, 0.95).pvalue
    assert p > 1e-3, (name, hits / total)


def test_heavy_hitters_over_a_candidate_set() -> None:
    proto = L.CountMeanSketch(4.0, 32, 256, hash_seed=1)
    rng = np.random.default_rng(5)
    items = np.array([f"emoji-{i}" for i in range(50)])
    w = np.zeros(50)
    w[:5] = [0.3, 0.2, 0.15, 0.1, 0.05]
    w[5:] = 0.2 / 45
    vals = items[rng.choice(50, size=40_000, p=w)]
    agg = L.Aggregator(proto, candidates=items.tolist()).add(L.randomize(proto, vals, rng=KEY))
    top = [item for item, _, _ in agg.heavy_hitters(top=5)]
    assert top[:4] == ["emoji-0", "emoji-1", "emoji-2", "emoji-3"]
    found = {item for item, _, _ in agg.heavy_hitters()}
    assert {"emoji-0", "emoji-1", "emoji-2", "emoji-3", "emoji-4"} <= found
    assert len(found) <= 8


# ----------------------------------------------------------------------------- monitor
def test_monitor_reports_needed_reach_the_target_and_flags() -> None:
    proto = L.GeneralizedRandomizedResponse(10, 1.0)
    vals = np.random.default_rng(1).integers(0, 10, 5000)
    agg = L.Aggregator(proto).add(L.randomize(proto, vals, rng=KEY))
    est = agg.estimate()
    target = 0.004
    need = est.reports_needed(target)
    for i in range(10):
        assert est.std_error_at(need[i])[i] <= target < est.std_error_at(need[i] - 1)[i]
    # the prediction is the protocol's exact variance at the plug-in fractions
    frac = np.clip(est.counts, 0, est.n) / est.n
    exact = np.sqrt(proto.variance(need[0], frac[0] * need[0])) / need[0]
    assert exact == pytest.approx(est.std_error_at(need[0])[0], rel=1e-9)
    rep = L.monitor(agg, target=target)
    assert rep.flagged == [r[0] for r in rep.rows]  # 5000 reports: all above 0.004
    assert all(r[6] == need[r[0]] for r in rep.rows)
    rep2 = L.monitor(agg, target=0.05)
    assert rep2.flagged == [] and "0 of 10 estimates above the threshold" in rep2.format()


def test_monitor_sketch_collision_floor_and_empty_state() -> None:
    proto = L.CountMeanSketch(4.0, 2, 8, hash_seed=3)
    vals = np.random.default_rng(2).integers(0, 4, 4000)
    agg = L.Aggregator(proto, candidates=[0, 1, 2, 3]).add(L.randomize(proto, vals, rng=KEY))
    est = agg.estimate()
    assert np.all(np.isinf(est.reports_needed(1e-4)))  # below the hash-collision floor
    assert np.all(np.isfinite(est.reports_needed(0.3)))  # floor ~ sqrt(sum f^2 / (k m))
    empty = L.Aggregator(L.OptimizedUnaryEncoding(4, 1.0))
    e0 = empty.estimate()
    assert np.all(np.isnan(e0.std_error)) and np.all(e0.reports_needed(0.01) > 1000)
    assert len(L.monitor(empty).flagged) == 4


def test_cli_ldp_report(tmp_path, capsys) -> None:
    proto = L.CountMeanSketch(4.0, 8, 64, hash_seed=9)
    vals = np.random.default_rng(4).choice(["a", "b", "c"], 3000, p=[0.6, 0.3, 0.1])
    agg = L.Aggregator(proto, candidates=["a", "b", "c", "d"])
    agg.add(L.randomize(proto, vals, rng=KEY)).save(tmp_path / "agg.bin")
    assert cli_main(["ldp", "report", str(tmp_path / "agg.bin"), "--target", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "protocol cms, epsilon 4 per report, 3000 reports" in out
    assert out.splitlines()[2].split()[0] == "a"
    assert cli_main(["ldp", "report", str(tmp_path / "agg.bin"), "--target", "0.001",
                     "--check", "--top", "2"]) == 1
    assert "ABOVE" in capsys.readouterr().out
    (tmp_path / "junk.bin").write_bytes(b"junk")
    assert cli_main(["ldp", "report", str(tmp_path / "junk.bin")]) == 2
    assert "bad magic" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_ldp_report_subprocess(tmp_path) -> None:
    proto = L.GeneralizedRandomizedResponse(4, 2.0)
    L.Aggregator(proto).add(L.randomize(proto, np.arange(400) % 4, rng=KEY)).save(
        tmp_path / "s.bin")
    r = subprocess.run([sys.executable, "-m", "dpfast", "ldp", "report", str(tmp_path / "s.bin")],
                       capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert r.returncode == 0, r.stderr
    assert "protocol krr" in r.stdout


# ----------------------------------------------------------------------------- clients
class _Clock:
    def __init__(self, t: float = 10 * 86400.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@settings(max_examples=25)
@given(steps=st.lists(st.tuples(st.integers(1, 3), st.booleans(), st.booleans()),
                      min_size=1, max_size=12))
def test_client_never_exceeds_its_budget_across_restarts(tmp_path_factory, steps) -> None:
    path = tmp_path_factory.mktemp("client") / "state.sqlite"
    clock = _Clock()
    proto = L.GeneralizedRandomizedResponse(5, 1.5)
    accepted: dict[int, int] = {}
    client = L.Client(proto, path, budget=4.0, clock=clock, rng=KEY)
    for size, restart, next_day in steps:
        if restart:
            client.close()
            client = L.Client(None, path, clock=clock, rng=KEY)
        if next_day:
            clock.t += 86400.0
        day = int(clock.t // 86400)
        before = accepted.get(day, 0)
        try:
            batch = client.report(np.arange(size) % 5)
        except L.BudgetExhaustedError:
            assert (before + size) * 1.5 > 4.0  # refused only when it would overspend
        else:
            assert batch.n == size
            accepted[day] = before + size
        assert 1.5 * accepted.get(day, 0) <= 4.0
        assert client.spent() == 1.5 * accepted.get(day, 0)
    client.close()


def test_client_state_is_checked_and_the_clock_cannot_reopen_a_period(tmp_path) -> None:
    clock = _Clock()
    proto = L.OptimizedUnaryEncoding(6, 2.0)
    with L.Client(proto, tmp_path / "c.sqlite", budget=4.0, clock=clock) as c:
        assert c.report([1, 2]).n == 2 and c.remaining() == 0.0
        with pytest.raises(L.BudgetExhaustedError, match="nothing charged"):
            c.report([3])
        with pytest.raises(ValueError, match="values"):
            c.report([9])  # out of the domain: refused before charging
        clock.t -= 3 * 86400  # a clock set back does not reopen earlier periods
        with pytest.raises(L.BudgetExhaustedError):
            c.report([3])
        clock.t += 4 * 86400
        assert c.remaining() == 4.0
    with pytest.raises(ValueError, match="budget"):
        L.Client(proto, tmp_path / "c.sqlite", budget=8.0, clock=clock)
    with pytest.raises(ValueError, match="created for protocol"):
        L.Client(L.OptimizedUnaryEncoding(6, 1.0), tmp_path / "c.sqlite", clock=clock)
    with pytest.raises(ValueError, match="needs protocol and budget"):
        L.Client(None, tmp_path / "new.sqlite")


def _report_in_child(path: str, out: str) -> None:
    c = L.Client(None, path, clock=lambda: 86400.0 * 3)
    try:
        c.report([1])
        ok = 1
    except L.BudgetExhaustedError:
        ok = 0
    with open(out, "a") as fh:
        fh.write(str(ok))


def test_client_budget_holds_across_processes(tmp_path) -> None:
    import multiprocessing as mp

    path = str(tmp_path / "c.sqlite")
    L.Client(L.GeneralizedRandomizedResponse(3, 1.0), path, budget=3.0,
             clock=lambda: 86400.0 * 3).close()
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_report_in_child, args=(path, str(tmp_path / "out")))
             for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(SUBPROCESS_TIMEOUT_S)
    assert sorted((tmp_path / "out").read_text()) == sorted("000111")


def test_rappor_client_memoizes_permanent_responses_and_charges_every_report(tmp_path
                                                                             ) -> None:
    """The permanent response is memoized (across restarts); every report is charged
    epsilon_1, a repeated value as much as a new one (issue 36, channel 9: a cheaper repeat
    made the refusals depend on the values)."""
    proto = L.Rappor(32, 2, 4, f=0.5, p=0.5, q=0.75, hash_seed=2)
    e1 = Fraction(proto.epsilon_one)
    budget = 16.0
    clock = _Clock()
    path = tmp_path / "r.sqlite"
    c = L.Client(proto, path, budget=budget, clock=clock, rng=KEY)
    first = c._memoized(L.fingerprint(["x"]))
    c.report(["x"])
    assert Fraction(c.spent()) >= e1
    c.close()
    c = L.Client(None, path, clock=clock)  # restart: same permanent response
    again = c._memoized(L.fingerprint(["x"]))
    np.testing.assert_array_equal(first.bits, again.bits)
    np.testing.assert_array_equal(first.bits, proto.permanent(["x"], [c.client_id],
                                                              c._secret).bits)
    spent = []
    for _ in range(8):  # every report of one value is charged epsilon_1
        c.report(["x"])
        spent.append(Fraction(c.spent()))
    assert float(9 * e1) <= c.spent() < float(9 * e1) * (1 + 1e-12)
    assert c.max_reports == int(Fraction(budget) // e1) == 14
    before = c.spent()
    assert c.cost(["x"]) == c.cost(["y"]) == c.epsilon  # a repeat costs what a new value does
    c.report(["y", "y"])
    assert c.spent() == pytest.approx(before + float(2 * e1))
    irr = [c.report(["x"]).arrays["bits"] for _ in range(3)]
    assert not all(np.array_equal(irr[0], b) for b in irr[1:])  # instantaneous: fresh
    with pytest.raises(L.BudgetExhaustedError):
        c.report(["x"])  # the 15th report, whatever its value


def test_client_pool_budgets_across_restarts_and_partial_reports(tmp_path) -> None:
    clock = _Clock()
    proto = L.GeneralizedRandomizedResponse(4, 1.0)
    path = tmp_path / "pool.bin"
    pool = L.ClientPool(proto, path, num_clients=10, budget=2.5, clock=clock, rng=KEY)
    assert pool.max_reports == 2
    pool.report(np.arange(10), np.arange(10) % 4)
    pool = L.ClientPool(None, path, clock=clock, rng=KEY)  # restart
    with pytest.raises(L.BudgetExhaustedError, match="1 client"):
        pool.report([3, 3], [0, 1])
    np.testing.assert_array_equal(pool.counts(), np.ones(10))
    batch, ok = pool.report_allowed([3, 3, 4, 5, 5], [0, 1, 2, 3, 0])
    np.testing.assert_array_equal(ok, [True, False, True, True, False])
    assert batch.n == 3
    assert pool.remaining()[3] == 0.5 and pool.remaining()[0] == 1.5
    clock.t += 86400.0
    assert pool.counts().sum() == 0 and pool.remaining()[3] == 2.5
    with pytest.raises(ValueError, match="client_ids"):
        pool.report([10], [0])
    with pytest.raises(ValueError, match="num_clients"):
        L.ClientPool(proto, path, num_clients=11, budget=2.5, clock=clock)


def test_client_charges_before_randomizing(tmp_path, monkeypatch) -> None:
    clock = _Clock()
    proto = L.CountMeanSketch(4.0, 4, 32, hash_seed=1)
    c = L.Client(proto, tmp_path / "c.sqlite", budget=8.0, clock=clock, rng=KEY)

    def crash(*args, **kwargs):
        raise RuntimeError("device crashed while randomizing")

    monkeypatch.setattr(L.client, "randomize", crash)
    with pytest.raises(RuntimeError, match="crashed"):
        c.report(["a"])
    assert c.spent() == 4.0  # the charge stands: budget lost, never a free report
    monkeypatch.undo()
    batch = c.report(["b"])
    with pytest.raises(L.BudgetExhaustedError):
        c.report(["c"])
    agg = L.Aggregator(proto, candidates=["a", "b", "c"]).add(batch.to_json())
    assert agg.n == 1 and agg.state["totals"].sum() == 1


def test_rappor_encode_is_instantaneous_of_permanent() -> None:
    proto = PROTOS["rappor"]
    secret = bytes(range(100, 132))
    vals, ids = ["a", "b", "a", "c"], [1, 2, 3, 3]
    enc = proto.encode(vals, ids, secret, rng=KEY)
    again = proto.instantaneous(proto.permanent(vals, ids, secret), rng=KEY)
    np.testing.assert_array_equal(enc.bits, again.bits)
    np.testing.assert_array_equal(enc.cohorts, again.cohorts)


def test_corrupted_header_specs_are_value_errors() -> None:
    head = {"format": "dpfast.ldp.reports", "version": 1, "protocol": "rr",
            "params": {"epsilon": 1.0}, "n": 1}
    raw = pack(REPORT_MAGIC, head, {"values": np.zeros(1, np.uint8)})
    for bad in (b'[["values","|u1",["x"]]]', b'[["values","|u1",[-1]]]',
                b'[["values","<f8",[1]]]', b'[["values","|u1",[1]],["values","|u1",[1]]]'):
        text = raw[13:].split(b',"arrays":')[0] + b',"arrays":' + bad + b"}"
        data = raw[:9] + len(text).to_bytes(4, "little") + text + b"\0\0"
        with pytest.raises(ValueError):
            L.ReportBatch.from_bytes(data)
