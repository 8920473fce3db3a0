"""Analysts' sub-budgets, query ids, the result cache in the ledger and the usage report:
enforced across processes, hash-chained, migrated from format 2, shown by ``dpfast ledger
show --by``."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import sqlite3
import subprocess
import sys
import time

import pytest

from dpfast.accounting import events as ev
from dpfast.budget import Analyst, Budget, BudgetExceededError, LedgerError, Usage, schema
from tests.forkrun import cli_here
from tests.helpers import SUBPROCESS_TIMEOUT_S

Q = 2.0**-3  # exact binary charges


def _context():
    if sys.platform.startswith("linux") and sys.version_info < (3, 12):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _cli(*args, fresh=False):
    """``dpfast ARGS``: the CLI's ``main`` in this process (tests/forkrun.cli_here: these
    are read-only ledger commands, checked for what they report); ``fresh``: a fresh
    interpreter, ``python -m dpfast ARGS``."""
    if not fresh:
        return cli_here(*args)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    return subprocess.run([sys.executable, "-m", "dpfast", *args], capture_output=True,
                          text=True, env=env, timeout=SUBPROCESS_TIMEOUT_S)


def _raw(path):
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    return con


# --------------------------------------------------------------------------- analysts


def test_analyst_sub_budgets_and_refusals(tmp_path):
    b = Budget(1.0, ledger=tmp_path / "l.sqlite", accounting="mixed")
    alice = b.add_analyst("alice", epsilon=0.5)
    assert isinstance(alice, Analyst) and alice.sub_budget == (0.5, 0.0)  # a pure budget
    assert b.add_analyst("alice", epsilon=0.5).sub_budget == (0.5, 0.0)  # same: no new row
    assert b.analyst("alice", epsilon=0.5).sub_budget == (0.5, 0.0)  # a check, no row
    alice.spend(ev.Epsilon(0.25), note="first", query_id="q-1")
    with alice.charge(ev.Epsilon(0.25)):
        pass
    with pytest.raises(BudgetExceededError, match="analyst 'alice' has not enough") as info:
        alice.spend(ev.Epsilon(Q))
    assert info.value.remaining.epsilon == 0.0 and info.value.remaining.exhausted
    b.spend(ev.Epsilon(0.25), analyst="bob")  # no sub-budget: only the total limits bob
    with pytest.raises(BudgetExceededError) as info:
        b.spend(ev.Epsilon(0.5), analyst="bob")
    assert "analyst" not in str(info.value)  # the total refused it
    assert alice.remaining().epsilon == 0.0 and alice.spent().epsilon == 0.5
    with pytest.raises(ValueError, match="'bob' is not registered"):
        b.analyst("bob")  # charged as a label of the total, but not a registered analyst
    hist = b.history(include_refused=True)
    assert [(c.analyst, c.status, c.query_id) for c in hist] == [
        ("alice", "charged", "q-1"), ("alice", "charged", ""), ("alice", "refused", ""),
        ("bob", "charged", ""), ("bob", "refused", "")]
    with pytest.raises(ValueError, match="already has the sub-budget"):
        b.add_analyst("alice", epsilon=0.25)
    with pytest.raises(ValueError, match="already has the sub-budget"):
        b.analyst("alice", epsilon=0.25)
    with pytest.raises(ValueError, match="already been charged"):
        b.add_analyst("bob", epsilon=0.5)
    assert b.add_analyst("bob").remaining().epsilon == 0.25  # the whole budget: allowed
    with pytest.raises(ValueError, match="at most the budget's epsilon"):
        b.add_analyst("carol", epsilon=2.0)
    with pytest.raises(ValueError, match="name must not be empty"):
        b.add_analyst("", epsilon=0.1)
    with pytest.raises(TypeError, match="analyst must be a str"):
        b.spend(ev.Epsilon(Q), analyst=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="query_id must be a str"):
        b.spend(ev.Epsilon(Q), query_id=None)  # type: ignore[arg-type]
    b.close()
    # the sub-budgets are rows of the ledger: a new process sees them
    again = Budget.from_ledger(tmp_path / "l.sqlite")
    with pytest.raises(BudgetExceededError, match="analyst 'alice'"):
        again.spend(ev.Epsilon(Q), analyst="alice")
    again.close()
    assert _cli("ledger", "verify", str(tmp_path / "l.sqlite"), fresh=True).returncode == 0


def test_fits_is_what_spend_would_decide(tmp_path):
    """``fits`` answers what ``spend`` would decide now (budget, sub-budget, the largest
    epsilon ``remaining`` reports), records nothing, and validates like ``spend``."""
    b = Budget(1.0, 1e-6, ledger=tmp_path / "l.sqlite", accounting="mixed")
    alice = b.add_analyst("alice", epsilon=0.5)
    assert alice.fits(ev.Epsilon(0.5)) and not alice.fits(ev.Epsilon(0.5 + Q))
    assert b.fits(ev.Epsilon(1.0)) and not b.fits(ev.Epsilon(1.0 + Q))
    alice.spend(ev.Epsilon(0.25))
    bob = b.add_analyst("bob")  # a share of the whole budget
    for who in (b, alice, bob):
        left = who.remaining().epsilon
        assert who.fits(ev.Epsilon(left))
        assert not who.fits(ev.Epsilon(left + Q))
    assert b.fits(ev.Epsilon(0.75), analyst="bob") and not b.fits(ev.Epsilon(0.5),
                                                                   analyst="alice")
    sigma = b.remaining().sigma  # the smallest Gaussian noise multiplier that fits
    assert b.fits(ev.Gaussian(sigma)) and not b.fits(ev.Gaussian(sigma * 0.99))
    assert len(b.history(include_refused=True)) == 1  # nothing charged
    with pytest.raises(TypeError, match="analyst must be a str"):
        b.fits(ev.Epsilon(Q), analyst=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        b.fits(0.5)  # type: ignore[arg-type]
    b.close()


def test_an_analyst_is_a_budget_for_the_releases(tmp_path):
    import numpy as np

    from dpfast import tables

    b = Budget(2.0, 1e-6, accounting="mixed")
    alice = b.add_analyst("alice", epsilon=1.0, delta=1e-7)
    keys = np.array(["a", "b", "a", "c"] * 10, dtype=object)
    rel = tables.count(keys, epsilon=0.5, domain=["a", "b", "c"], budget=alice,
                       rng=bytes(32))
    assert len(rel) == 3
    assert [c.analyst for c in b.history()] == ["alice"]
    assert alice.spent().epsilon == 0.5


def _analyst_worker(path, name, barrier, queue):
    b = Budget.from_ledger(path)
    who = b.analyst(name)
    barrier.wait()
    ok = refused = 0
    for _ in range(12):
        try:
            who.spend(ev.Epsilon(2.0**-5), note=f"pid {os.getpid()}")
            ok += 1
        except BudgetExceededError:
            refused += 1
    b.close()
    queue.put((name, ok, refused))


def test_analysts_on_one_ledger_from_several_processes_never_overspend(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    b = Budget(1.25, ledger=path, accounting="mixed")  # 40 charges of 2**-5
    b.add_analyst("alice", epsilon=0.25)  # 8
    b.add_analyst("bob", epsilon=0.5)     # 16
    b.add_analyst("carol")                # the whole budget: only the total limits carol
    b.close()
    ctx = _context()
    names = ["alice", "alice", "bob", "bob", "carol", "carol"]  # carol: the total only
    barrier, queue = ctx.Barrier(len(names)), ctx.Queue()
    procs = [ctx.Process(target=_analyst_worker, args=(path, n, barrier, queue))
             for n in names]
    for p in procs:
        p.start()
    results = [queue.get(timeout=SUBPROCESS_TIMEOUT_S) for _ in procs]
    for p in procs:
        p.join(timeout=SUBPROCESS_TIMEOUT_S)
        assert p.exitcode == 0
    got = {n: sum(ok for m, ok, _ in results if m == n) for n in set(names)}
    # 72 asks: never more than a sub-budget, and the total used exactly to its end
    assert got["alice"] <= 8 and got["bob"] <= 16 and sum(got.values()) == 40
    b = Budget.from_ledger(path)
    assert b.spent().epsilon == 1.25 and b.remaining().epsilon == 0.0
    u = b.usage()
    by = {a.name: a for a in u.analysts}
    assert by["alice"].spent_epsilon == got["alice"] * 2.0**-5
    assert by["bob"].charges == got["bob"] and by["bob"].refused == 24 - got["bob"]
    assert by["carol"].epsilon == 1.25
    b.close()


# --------------------------------------------------------------------------- query cache


def test_a_repeated_query_is_served_from_the_ledger_without_a_charge(tmp_path):
    path = tmp_path / "cache.sqlite"
    b = Budget(1.0, 1e-6, ledger=path, accounting="mixed")
    event = ev.Laplace(4.0)
    payload = bytes(range(256)) * 3
    with b.query("counts/2013", event, analyst="alice", note="first") as q:
        assert not q.hit and q.payload is None and q.charge is not None
        q.store(payload)
        with pytest.raises(ValueError, match="already stored"):
            q.store(payload)
    left = b.remaining()
    for who in ("alice", "bob"):
        with b.query("counts/2013", event, analyst=who) as q:
            assert q.hit and q.payload == payload
            with pytest.raises(ValueError, match="cache hit"):
                q.store(b"x")
    assert b.remaining() == left  # nothing charged
    with pytest.raises(ValueError, match="another privacy guarantee"):
        with b.query("counts/2013", ev.Laplace(2.0)):
            pass
    b.close()
    # another process: the same bytes, still no charge, the hit recorded (who, when)
    code = ("import sys; from dpfast.budget import Budget; from dpfast.accounting import "
            "events as ev\nb = Budget.from_ledger(sys.argv[1])\n"
            "with b.query('counts/2013', ev.Laplace(4.0), analyst='carol') as q:\n"
            "    assert q.hit\n    sys.stdout.buffer.write(q.payload)\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                         env=env, timeout=SUBPROCESS_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    assert out.stdout == payload
    b = Budget.from_ledger(path)
    assert b.remaining() == left
    u = b.usage()
    (q,) = u.queries
    assert (q.query_id, q.analyst, q.status, q.charges, q.hits) == (
        "counts/2013", "alice", "cached", 1, 3)
    assert q.cost.epsilon == 0.25 and u.hits == 3
    assert {a.name: a.hits for a in u.analysts} == {"alice": 1, "bob": 1, "carol": 1}
    b.close()


def test_a_failed_computation_keeps_its_charge_and_stores_nothing():
    b = Budget(1.0)
    with pytest.raises(RuntimeError, match="boom"):
        with b.query("q", ev.Epsilon(0.25)) as q:
            assert not q.hit
            raise RuntimeError("boom")
    assert b.remaining().epsilon == 0.75  # no refund
    with b.query("q", ev.Epsilon(0.25)) as q:  # no result: charged and computed again
        assert not q.hit
        q.store(b"ok")
    with b.query("q", ev.Epsilon(0.25)) as q:
        assert q.hit and q.payload == b"ok"
    with b.query("empty", ev.Epsilon(0.25)) as q:
        pass  # stores nothing: recorded as failed
    assert [c.status for c in b.history()] == ["failed", "charged", "failed"]
    assert b.remaining().epsilon == 0.25
    u = b.usage()
    assert {q.query_id: q.status for q in u.queries} == {"q": "cached", "empty": "failed"}
    with pytest.raises(BudgetExceededError):
        with b.query("big", ev.Epsilon(0.5)):
            raise AssertionError("a refused query never runs its block")
    with pytest.raises(ValueError, match="query_id must not be empty"):
        with b.query("", ev.Epsilon(0.1)):
            pass
    with pytest.raises(TypeError, match="payload must be bytes"):
        with b.query("t", ev.Epsilon(2.0**-10)) as q:
            q.store("text")  # type: ignore[arg-type]


def _query_worker(path, barrier, queue):
    b = Budget.from_ledger(path)
    barrier.wait()
    with b.query("slow", ev.Epsilon(Q), analyst=f"p{os.getpid()}") as q:
        if not q.hit:
            time.sleep(0.5)  # the others arrive while this one computes
            q.store(f"answer of {os.getpid()}".encode())
        result = (q.hit, q.payload)
    b.close()
    queue.put(result)


def test_concurrent_asks_of_a_new_query_charge_and_compute_once(tmp_path):
    path = str(tmp_path / "race.sqlite")
    Budget(1.0, ledger=path, accounting="mixed").close()
    ctx = _context()
    n = 4
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_query_worker, args=(path, barrier, queue)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=SUBPROCESS_TIMEOUT_S) for _ in procs]
    for p in procs:
        p.join(timeout=SUBPROCESS_TIMEOUT_S)
        assert p.exitcode == 0
    assert sorted(h for h, _ in results) == [False] + [True] * (n - 1)
    assert len({pl for _, pl in results}) == 1  # every process got the same bytes
    b = Budget.from_ledger(path)
    assert len(b.history()) == 1 and b.remaining().epsilon == 1.0 - Q
    b.close()


def _abandon(path):
    b = Budget.from_ledger(path)
    b.spend(ev.Epsilon(Q), query_id="lost")  # charged, then the process ends: no result
    os._exit(0)


def test_a_computation_whose_process_died_is_charged_again(tmp_path):
    path = str(tmp_path / "dead.sqlite")
    Budget(1.0, ledger=path, accounting="basic").close()
    p = _context().Process(target=_abandon, args=(path,))
    p.start()
    p.join(timeout=SUBPROCESS_TIMEOUT_S)
    b = Budget.from_ledger(path)
    with b.query("lost", ev.Epsilon(Q), wait=30) as q:
        assert not q.hit
        q.store(b"recomputed")
    assert b.remaining().epsilon == 1.0 - 2 * Q
    assert [c.status for c in b.history()] == ["failed", "charged"]
    b.close()


def test_tampering_with_a_cached_result_is_detected(tmp_path):
    path = tmp_path / "t.sqlite"
    b = Budget(1.0, ledger=path)
    with b.query("q", ev.Epsilon(Q)) as q:
        q.store(b"true answer")
    b.close()
    assert _cli("ledger", "verify", str(path)).returncode == 0
    con = _raw(path)
    con.execute("DROP TRIGGER payloads_no_update")
    con.execute("UPDATE payloads SET data = ?", (b"fake answer",))
    con.commit()
    con.close()
    r = _cli("ledger", "verify", str(path))
    assert r.returncode == 1 and "stored result of query 'q'" in r.stderr
    b = Budget.from_ledger(path)
    with pytest.raises(LedgerError, match="does not match its digest"):
        with b.query("q", ev.Epsilon(Q)):
            pass
    b.close()


def test_hit_rows_and_payload_digests_are_in_the_hash_chain(tmp_path):
    path = tmp_path / "c.sqlite"
    b = Budget(1.0, ledger=path)
    with b.query("q", ev.Epsilon(Q), analyst="a") as q:
        q.store(b"x" * 100)
    with b.query("q", ev.Epsilon(Q), analyst="b", note="again"):
        pass
    b.close()
    con = sqlite3.connect(path)
    rows = con.execute("SELECT status, ref, analyst, note, event, query FROM charges "
                       "ORDER BY id").fetchall()
    con.close()
    assert [r[0] for r in rows] == ["charged", "stored", "hit"]
    stored, hit = rows[1], rows[2]
    assert stored[1] == 1 and json.loads(stored[4])["size"] == 100
    assert hit[1:4] == (2, "b", "again") and hit[5] == "q"
    # editing the query id of the hit breaks the chain
    con = _raw(path)
    con.execute("DROP TRIGGER charges_no_update")
    con.execute("UPDATE charges SET query = '' WHERE status = 'hit'")
    con.commit()
    con.close()
    assert _cli("ledger", "verify", str(path)).returncode == 1


# --------------------------------------------------------------------------- usage, CLI


def test_usage_report_and_ledger_show_by(tmp_path):
    pd = pytest.importorskip("pandas")
    path = tmp_path / "u.sqlite"
    b = Budget(2.0, 1e-6, ledger=path, accounting="mixed")
    ana = b.add_analyst("ana", epsilon=1.0)  # delta: the budget's
    ana.spend(ev.Epsilon(0.5), query_id="a1")
    with ana.query("a2", ev.EpsilonDelta(0.25, 1e-7)) as q:
        q.store(b"r")
    with b.query("a2", ev.EpsilonDelta(0.25, 1e-7), analyst="ben") as q:
        assert q.hit
    b.spend(ev.Gaussian(10.0), analyst="ben", query_id="g")
    u = b.usage()
    assert isinstance(u, Usage) and u.charges == 3 and u.hits == 1
    assert 0.0 < u.utilization < 100.0
    assert u.utilization == pytest.approx(100 * (1 - u.remaining.epsilon / 2.0))
    by = {a.name: a for a in u.analysts}
    assert by["ana"].spent_epsilon == 0.75 and by["ana"].utilization == 75.0
    assert by["ana"].queries == 2 and by["ben"].hits == 1 and by["ben"].queries == 1
    frame = u.to_pandas("query")
    assert isinstance(frame, pd.DataFrame) and list(frame["query_id"]) == ["a1", "a2", "g"]
    assert list(u.to_pandas("analyst")["name"]) == ["ana", "ben"]
    assert [a.name for a in ana.usage().analysts] == ["ana"]
    assert "utilization" in str(u)
    b.close()
    r = _cli("ledger", "show", str(path), "--by", "analyst")
    assert r.returncode == 0, r.stderr
    assert "utilization" in r.stdout and "ana " in r.stdout and "1/1e-06" in r.stdout
    r = _cli("ledger", "show", str(path), "--by", "query")
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("a1", "a2", "g "))]
    assert len(lines) == 3 and "cached" in lines[1] and "rho=" not in lines[0]
    r = _cli("ledger", "show", str(path))  # the Gaussian charge as (epsilon, delta)
    assert r.returncode == 0 and "zCDP rho" not in r.stdout and "rdp" not in r.stdout
    assert re.search(r"Gaussian +eps=0\.\d+ delta=1e-06", r.stdout)
    r = _cli("ledger", "show", str(path), "--detail")  # and the accounting's own figures
    assert r.returncode == 0 and "rdp a=" in r.stdout


def _as_format_2(path):
    """Rewrite a (fresh, query-free) format-3 ledger as format 2 exactly."""
    from dpfast.budget.migrations import CHARGES_TABLE_V2

    con = _raw(path)
    got = con.execute("SELECT seq FROM sqlite_sequence WHERE name='charges'").fetchone()
    for stmt in ("DROP TRIGGER charges_no_update", "DROP TRIGGER charges_no_delete",
                 "DROP TRIGGER meta_no_update", "DROP TRIGGER migrations_no_delete",
                 "ALTER TABLE charges RENAME TO c3", CHARGES_TABLE_V2,
                 f"INSERT INTO charges ({schema.COLUMNS_V2}) SELECT {schema.COLUMNS_V2} "
                 "FROM c3", "DROP TABLE c3", "DROP TABLE payloads",
                 "DELETE FROM sqlite_sequence WHERE name != 'charges'",
                 "UPDATE meta SET value = '2' WHERE key = 'version'",
                 "DELETE FROM migrations", *schema.CHARGES_TRIGGERS):
        con.execute(stmt)
    if got is not None:
        con.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'charges'", got)
    con.execute("INSERT INTO migrations VALUES (2, '2026-01-01', 'created in format 2')")
    con.commit()
    con.close()


def test_format_2_ledgers_are_verified_then_migrated(tmp_path):
    path = tmp_path / "old.sqlite"
    b = Budget(1.0, ledger=path, accounting="basic")
    for i in range(3):
        b.spend(ev.Epsilon(Q), analyst=f"a{i}")
    b.close()
    _as_format_2(path)
    assert _cli("ledger", "verify", str(path)).returncode == 0  # format 2 reads as it is
    b = Budget.from_ledger(path)
    assert [c.analyst for c in b.history()] == ["a0", "a1", "a2"]
    assert b.remaining().epsilon == 1.0 - 3 * Q
    with b.query("new", ev.Epsilon(Q)) as q:
        q.store(b"after the migration")
    b.close()
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM meta WHERE key='version'").fetchone() == ("3",)
    assert [v for (v,) in con.execute("SELECT version FROM migrations ORDER BY version")] == [
        2, 3]
    con.close()
    assert _cli("ledger", "verify", str(path)).returncode == 0
    # a format-2 ledger whose last charge was deleted is refused before anything is written
    trunc = tmp_path / "trunc.sqlite"
    b = Budget(1.0, ledger=trunc, accounting="basic")
    for _ in range(3):
        b.spend(ev.Epsilon(Q))
    b.close()
    _as_format_2(trunc)
    con = _raw(trunc)
    con.execute("DROP TRIGGER charges_no_delete")
    con.execute("DELETE FROM charges WHERE id = 3")
    con.commit()
    con.close()
    os.remove(f"{trunc}-anchor")
    before = trunc.read_bytes()
    with pytest.raises(LedgerError):
        Budget.from_ledger(trunc)
    assert trunc.read_bytes() == before
    # a format-2 file with a mark of format 3 is refused, never migrated
    fake = tmp_path / "fake.sqlite"
    Budget(1.0, ledger=fake).close()
    _as_format_2(fake)
    con = _raw(fake)
    con.execute("CREATE TABLE payloads (id INTEGER PRIMARY KEY, data BLOB NOT NULL)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="rewritten in an old format"):
        Budget.from_ledger(fake)


def test_cli_count_with_key_selection_and_topdown_share_a_new_ledger(tmp_path, capsys):
    from dpfast.cli import main

    rows = ["city,person,pop"] + [f"{c},{i},{i % 7}" for i in range(300)
                                  for c in ("Paris", "Lyon", "Nice")[: 1 + i % 3]]
    (tmp_path / "v.csv").write_text("\n".join(rows) + "\n")
    key = tmp_path / "key.bin"
    key.write_bytes(bytes(range(32)))
    ledger = tmp_path / "shared.sqlite"
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["count", "v.csv", "--key", "city", "--id", "person", "--epsilon", "1",
                     "--delta", "1e-7", "--seed-key-file", "key.bin", "--ledger",
                     "shared.sqlite", "--budget-epsilon", "3", "-o", "c.csv"]) == 0
        out = capsys.readouterr().out
        assert "mixed accounting" in out
        assert main(["topdown", "v.csv", "--level", "city", "--count", "pop", "--rho",
                     "0.01", "--seed-key-file", "key.bin", "--ledger", "shared.sqlite",
                     "-o", "td"]) == 0
        capsys.readouterr()
    finally:
        os.chdir(old)
    b = Budget.from_ledger(ledger)
    assert b.accounting == "mixed" and len(b.history()) == 2
    spent = b.spent()
    assert spent.epsilon <= 3.0 and spent.delta <= 1e-5
    b.close()


def test_checkpoints_carry_the_analysts_books(tmp_path, monkeypatch):
    from dpfast.budget import checkpoint

    monkeypatch.setattr(checkpoint, "EVERY", 4)
    path = tmp_path / "cp.sqlite"
    b = Budget(1.0, 1e-6, ledger=path, accounting="mixed")
    alice = b.add_analyst("alice", epsilon=0.5, delta=1e-7)
    for i in range(9):
        alice.spend(ev.Epsilon(2.0**-5), query_id=f"q{i}")
        b.spend(ev.Gaussian(50.0), analyst="bob")
    left, a_left = b.remaining(), alice.remaining()
    b.close()
    con = sqlite3.connect(path)
    states = [json.loads(s) for (s,) in con.execute("SELECT state FROM checkpoints")]
    con.close()
    assert states and all(s["v"] == 2 and "alice" in s["books"]["limits"] for s in states)
    again = Budget.from_ledger(path)  # opens from the last checkpoint
    assert again.remaining() == left and again.analyst("alice").remaining() == a_left
    with pytest.raises(BudgetExceededError, match="analyst 'alice'"):
        again.spend(ev.Epsilon(0.25), analyst="alice")
    again.close()
    assert _cli("ledger", "verify", str(path)).returncode == 0  # books recomputed, equal


def test_charge_and_release_record_the_query_id_and_failures():
    from dpfast.mechanisms import LaplaceMechanism

    b = Budget(1.0, accounting="mixed")
    alice = b.add_analyst("alice", epsilon=0.5)
    with pytest.raises(KeyboardInterrupt):
        with alice.charge(ev.Epsilon(Q), query_id="k1"):
            raise KeyboardInterrupt
    mech = LaplaceMechanism(epsilon=Q, sensitivity=1.0)
    alice.release(mech, [1.0, 2.0], query_id="k2", rng=bytes(32))
    hist = b.history()
    assert [(c.status, c.query_id, c.analyst) for c in hist] == [
        ("failed", "k1", "alice"), ("charged", "k2", "alice")]
    assert alice.spent().epsilon == 2 * Q


def test_threads_asking_one_new_query_compute_it_once():
    import threading

    b = Budget(1.0, accounting="mixed")
    results, calls = [], []

    def ask():
        with b.query("t", ev.Epsilon(Q)) as q:
            if not q.hit:
                calls.append(1)
                time.sleep(0.3)
                q.store(b"once")
            results.append(q.payload)

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=SUBPROCESS_TIMEOUT_S)
    assert calls == [1] and results == [b"once"] * 3
    assert b.remaining().epsilon == 1.0 - Q
    with pytest.raises(RuntimeError, match="inside its own computation"):
        with b.query("n", ev.Epsilon(Q)):
            with b.query("n", ev.Epsilon(Q)):
                pass
    with pytest.raises(ValueError, match="cannot accept any charge"):
        Budget(1.0, 1e-6, accounting="advanced").add_analyst("tiny", epsilon=0.5,
                                                             delta=5e-324)


# --------------------------------------------------------------------------- names, registry

BAD_NAMES = ["", "al\nice", "alice\n", "\x1b[31mred", "a\x00b", "\u202eevil", "x\u2066y",
             "a" * 65, "a b", "-a", "ali\rce", "a\tb"]


@pytest.mark.parametrize("bad", BAD_NAMES)
def test_analyst_names_are_restricted_everywhere(bad):
    """Channel 7 of issue 36: analyst names were stored and printed verbatim (a newline
    forged a usage row; ANSI escapes, NUL, bidi controls reached terminals).  Every way a
    name enters is refused now (ValueError naming the parameter), nothing recorded."""
    b = Budget(1.0, accounting="mixed")
    calls = [(lambda: b.add_analyst(bad, epsilon=0.5), "name"),
             (lambda: b.analyst(bad), "name")]
    if bad:  # (an empty analyst is "no analyst" for a charge)
        calls += [(lambda: b.spend(ev.Epsilon(Q), analyst=bad), "analyst"),
                  (lambda: b.fits(ev.Epsilon(Q), analyst=bad), "analyst"),
                  (lambda: b.query("q", ev.Epsilon(Q), analyst=bad).__enter__(), "analyst")]
    for call, param in calls:
        with pytest.raises(ValueError, match=f"^{param} must") as info:
            call()
        assert str(info.value).isprintable()  # the message shows the name escaped
    assert b.history(include_refused=True) == [] and b.analysts() == {}
    b.close()


def test_good_names_and_the_registry():
    b = Budget(1.0, 1e-6, accounting="mixed")
    for name in ("alice", "a.b_c-d@example.org", "A" * 64, "7"):
        b.add_analyst(name, epsilon=Q)
    assert set(b.analysts()) == {"alice", "a.b_c-d@example.org", "A" * 64, "7"}
    assert b.analysts()["alice"] == (Q, 1e-6)
    with pytest.raises(ValueError, match="'mallory' is not registered"):
        b.analyst("mallory", epsilon=Q)  # naming an analyst creates nothing
    assert "mallory" not in b.analysts()
    b.close()


def test_ledger_text_is_printed_escaped(tmp_path):
    """Channel 7 of issue 36: notes and query ids are free text, printed by ``ledger
    show`` and the usage report; no control character reaches the terminal (and a
    newline cannot forge a row)."""
    path = tmp_path / "esc.sqlite"
    b = Budget(1.0, 1e-6, ledger=path, accounting="mixed")
    evil = "ok\n2  2026-01-01 00:00:00  charged  forged\x1b[2J\x00\u202e"
    b.add_analyst("ana", epsilon=0.5)
    b.spend(ev.Epsilon(Q), note=evil, analyst="ana", query_id="q\x1b[31m\nforged")
    report = str(b.usage().lines("query"))
    b.close()
    for out in (_cli("ledger", "show", str(path)).stdout,
                _cli("ledger", "show", str(path), "--by", "query").stdout, report):
        assert not any(c in out for c in ("\x1b", "\x00", "\u202e", "\r"))
        assert not any(line.startswith(("2  2026", "forged")) for line in out.splitlines())
    shown = _cli("ledger", "show", str(path)).stdout
    assert "ok\\n2" in shown


def test_shown_and_check_name_on_any_text():
    """Every text is shown as one printable line that round-trips the printable part, and
    a name is accepted exactly when it matches the safe pattern."""
    import re

    from hypothesis import given
    from hypothesis import strategies as st

    from dpfast.budget.names import NAME_PATTERN, check_name, shown

    @given(st.text(max_size=80))
    def check(text):
        out = shown(text)
        assert out.isprintable() and "\n" not in out
        if text.isprintable() and "\\" not in text:
            assert out == text
        ok = re.fullmatch(NAME_PATTERN, text) is not None
        try:
            check_name(text)
        except ValueError:
            assert not ok
        else:
            assert ok and text.isascii() and text.isprintable()

    check()
