"""Budget ledger: durability, damaged files, threads, processes and SIGKILL.

Processes use ``fork`` on Linux with Python < 3.12 (fast) and ``spawn`` otherwise
(forking a multi-threaded process warns from 3.12 on, and warnings are errors here).
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import pathlib
import signal
import sqlite3
import sys
import threading
import time
from fractions import Fraction

import numpy as np
import pytest

from dpfast.accounting import events as ev
from dpfast.budget import Budget, BudgetExceededError, LedgerError
from tests.forkrun import cli_here
from tests.helpers import SUBPROCESS_TIMEOUT_S

STEP = 2.0**-10  # exact binary charge: capacity of epsilon=1 is exactly 1024 charges


def _context():
    if sys.platform.startswith("linux") and sys.version_info < (3, 12):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _make_ledger(path, n=0, note_size=0, **kw):
    kw.setdefault("accounting", "basic")
    b = Budget(1.0, 1e-6, ledger=path, **kw)
    for i in range(n):
        b.spend(ev.Epsilon(2.0**-12), note="x" * note_size, analyst=f"a{i}")
    return b


# --------------------------------------------------------------------------- file format


def test_new_ledger_is_wal_sqlite_with_meta(tmp_path):
    path = tmp_path / "ledger.sqlite"
    b = _make_ledger(path, 3)
    b.close()
    # no temp left; the anchor (count and head hash, outside the WAL) beside the ledger
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.sqlite",
                                                           "ledger.sqlite-anchor"]
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        meta = dict(con.execute("SELECT key, value FROM meta"))
        assert meta["format"] == "dpfast-ledger" and meta["version"] == "3"
        assert meta["anchor"] == "sha256"  # no operator key: a plain checksum
        assert json.loads(meta["definition"]) == {
            "accounting": "basic",
            "delta": 1e-06,
            "epsilon": 1.0,
            "orders": None,
        }
        rows = con.execute(
            "SELECT id, analyst, event, cost, status, user, host, pid FROM charges"
        ).fetchall()
        assert [r[0] for r in rows] == [1, 2, 3]
        assert json.loads(rows[0][2]) == {"type": "Epsilon", "epsilon": 2.0**-12}
        assert json.loads(rows[0][3]) == [2.0**-12, 0.0]
        assert rows[0][4] == "charged" and rows[0][7] == os.getpid()
        assert rows[0][5] and rows[0][6]  # OS user and host recorded
        assert con.execute("SELECT version FROM migrations").fetchall() == [(3,)]
        # the audit log is append-only
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            con.execute("UPDATE charges SET cost = '[0.0, 0.0]'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            con.execute("DELETE FROM charges")
        with pytest.raises(sqlite3.DatabaseError, match="immutable"):
            con.execute("UPDATE meta SET value = '9' WHERE key = 'definition'")
    finally:
        con.close()


@pytest.mark.parametrize("accounting", ["basic", "zcdp", "rdp"])
def test_reopen_resumes(tmp_path, accounting):
    path = tmp_path / "ledger.sqlite"
    event = ev.Gaussian(20.0) if accounting != "basic" else ev.Epsilon(0.125)
    b = Budget(1.0, 1e-6, ledger=path, accounting=accounting)
    for _ in range(3):
        b.spend(event, note="before")
    rem, hist = b.remaining(), b.history()
    b.close()
    again = Budget(1.0, 1e-6, ledger=str(path), accounting=accounting)
    assert again.remaining() == rem
    assert again.history() == hist
    again.spend(event, note="after")
    assert len(again.history()) == 4
    # two open budgets on one file share it
    other = Budget(1.0, 1e-6, ledger=path, accounting=accounting)
    other.spend(event)
    assert again.remaining() == other.remaining() and len(again.history()) == 5
    again.close()
    other.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 2.0},
        {"delta": 1e-7},
        {"delta": 0.0, "accounting": "basic"},
        {"accounting": "zcdp"},
        {"orders": (64.0, 128.0, math.inf)},
    ],
)
def test_different_definition_raises_and_changes_nothing(tmp_path, kwargs):
    path = tmp_path / "ledger.sqlite"
    Budget(1.0, 1e-6, ledger=path).close()
    before = path.read_bytes()
    args = {"epsilon": 1.0, "delta": 1e-6, "accounting": "rdp"} | kwargs
    with pytest.raises(LedgerError, match="definition"):
        Budget(
            args.pop("epsilon"),
            args.pop("delta"),
            ledger=path,
            **args,
        )
    assert path.read_bytes() == before
    Budget(1.0, 1e-6, ledger=path).close()  # the right definition still opens


# --------------------------------------------------------------------------- damaged files


def _damaged_files(tmp_path):
    rng = np.random.default_rng(1234)
    good = tmp_path / "good.sqlite"
    _make_ledger(good, 300, note_size=120).close()
    data = good.read_bytes()
    assert len(data) > 16 * 4096
    files = {
        "random": rng.bytes(8192),
        "text": b"epsilon,delta\n1.0,1e-6\n" * 50,
        "empty": b"",
        "header_only": data[:100],
        "truncated": data[: len(data) // 3],
        "garbage_pages": data[:4096] + rng.bytes(len(data) - 4096),
    }
    out = {}
    for name, content in files.items():
        p = tmp_path / f"{name}.sqlite"
        p.write_bytes(content)
        out[name] = p
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE charges (x)")
    con.execute("INSERT INTO charges VALUES (1)")
    con.commit()
    con.close()
    out["foreign"] = foreign
    return out


def test_damaged_or_foreign_files_raise_and_stay_untouched(tmp_path):
    for name, path in _damaged_files(tmp_path).items():
        before = path.read_bytes()
        with pytest.raises(LedgerError) as info:
            Budget(1.0, 1e-6, ledger=path, accounting="basic")
        assert str(path) in str(info.value), name
        assert isinstance(info.value, ValueError)
        assert path.read_bytes() == before, f"{name} was modified"
        assert not pathlib.Path(str(path) + "-journal").exists()


def test_directory_and_missing_directory(tmp_path):
    with pytest.raises(LedgerError, match="directory"):
        Budget(1.0, accounting="basic", ledger=tmp_path)
    with pytest.raises(LedgerError, match="directory"):
        Budget(1.0, accounting="basic", ledger=tmp_path / "nope" / "l.sqlite")


def test_unknown_format_version(tmp_path):
    path = tmp_path / "ledger.sqlite"
    _make_ledger(path, 2).close()
    con = sqlite3.connect(path)
    con.execute("DROP TRIGGER meta_no_update")
    con.execute("UPDATE meta SET value = '99' WHERE key = 'version'")
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="version 99"):
        Budget(1.0, 1e-6, ledger=path, accounting="basic")
    assert path.read_bytes() == before


# --------------------------------------------------------------------------- threads


def _hammer(budgets, threads, per_thread):
    accepted, refused = [], []
    lock = threading.Lock()
    barrier = threading.Barrier(threads)

    def work(k):
        b = budgets[k % len(budgets)]
        barrier.wait()
        for i in range(per_thread):
            try:
                c = b.spend(ev.Epsilon(STEP), note=f"{k}:{i}")
                with lock:
                    accepted.append(c.id)
            except BudgetExceededError:
                with lock:
                    refused.append(k)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return accepted, refused


def test_threads_share_one_budget():
    b = Budget(1.0, accounting="basic")
    accepted, refused = _hammer([b], 8, 160)
    assert len(accepted) == 1024 and len(refused) == 8 * 160 - 1024
    assert sorted(accepted) == [c.id for c in b.history()]
    assert b.remaining().epsilon == 0.0


def test_threads_with_several_budgets_on_one_file(tmp_path):
    path = tmp_path / "ledger.sqlite"
    budgets = [Budget(1.0, accounting="basic", ledger=path) for _ in range(4)]
    accepted, refused = _hammer(budgets, 8, 160)
    assert len(accepted) == 1024 and len(set(accepted)) == 1024
    assert sorted(accepted) == [c.id for c in budgets[0].history()]
    for b in budgets:
        assert b.remaining().epsilon == 0.0
        b.close()


# --------------------------------------------------------------------------- processes


def _process_worker(path, n, barrier, queue):
    b = Budget(1.0, accounting="basic", ledger=path, timeout=float(SUBPROCESS_TIMEOUT_S))
    barrier.wait()
    accepted, refused = [], 0
    for i in range(n):
        try:
            accepted.append(b.spend(ev.Epsilon(STEP), analyst=str(os.getpid()), note=str(i)).id)
        except BudgetExceededError:
            refused += 1
    b.close()
    queue.put((accepted, refused))


def test_eight_processes_never_overspend(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    Budget(1.0, accounting="basic", ledger=path).close()
    ctx = _context()
    nproc, per = 8, 200
    barrier = ctx.Barrier(nproc)
    queue = ctx.Queue()
    procs = [
        ctx.Process(target=_process_worker, args=(path, per, barrier, queue))
        for _ in range(nproc)
    ]
    for p in procs:
        p.start()
    results = [queue.get(timeout=SUBPROCESS_TIMEOUT_S) for _ in procs]
    for p in procs:
        p.join(timeout=SUBPROCESS_TIMEOUT_S)
        assert p.exitcode == 0
    accepted = [i for acc, _ in results for i in acc]
    refused = sum(r for _, r in results)
    assert len(accepted) + refused == nproc * per
    # capacity is exactly 1024 charges of 2**-10: all of it used, never more
    assert len(accepted) == 1024 and len(set(accepted)) == 1024
    b = Budget(1.0, accounting="basic", ledger=path)
    hist = b.history()
    assert sorted(accepted) == [c.id for c in hist]  # every accepted charge is recorded
    assert sum(Fraction(c.cost.epsilon) for c in hist) == 1
    assert b.remaining().epsilon == 0.0
    assert len({c.analyst for c in hist}) > 1
    b.close()


def _create_worker(path, epsilon, barrier, queue):
    barrier.wait()
    try:
        b = Budget(epsilon, accounting="basic", ledger=path)
        b.spend(ev.Epsilon(0.125))
        b.close()
        queue.put("ok")
    except Exception as exc:  # reported to the parent
        queue.put(type(exc).__name__)


def test_concurrent_creation_of_one_ledger(tmp_path):
    path = str(tmp_path / "new.sqlite")
    ctx = _context()
    n = 6
    barrier = ctx.Barrier(n)
    queue = ctx.Queue()
    epsilons = [1.0] * (n - 1) + [2.0]  # the last one disagrees on the definition
    procs = [
        ctx.Process(target=_create_worker, args=(path, e, barrier, queue)) for e in epsilons
    ]
    for p in procs:
        p.start()
    outcomes = sorted(queue.get(timeout=SUBPROCESS_TIMEOUT_S) for _ in procs)
    for p in procs:
        p.join(timeout=SUBPROCESS_TIMEOUT_S)
    # whoever created it first fixed the definition; the other definition is refused
    assert outcomes in (["LedgerError"] + ["ok"] * (n - 1), ["LedgerError"] * (n - 1) + ["ok"])
    winner = 1.0 if outcomes.count("ok") == n - 1 else 2.0
    b = Budget(winner, accounting="basic", ledger=path)
    assert len(b.history()) == outcomes.count("ok")
    b.close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "new.sqlite", "new.sqlite-anchor"
    ]


class _FileMechanism:
    """Releases ``x`` by appending it to a file (one write() per release)."""

    event = ev.Epsilon(2.0**-9)  # capacity of epsilon=1: exactly 512 releases

    def __init__(self, out_path):
        self.fd = os.open(out_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def __call__(self, x, *, rng=None):
        os.write(self.fd, f"{x}\n".encode())
        return x


def _release_loop(path, out_path):
    b = Budget(1.0, accounting="basic", ledger=path)
    mech = _FileMechanism(out_path)
    i = 0
    while True:
        try:
            b.release(mech, i)
        except BudgetExceededError:
            break
        i += 1
    os._exit(0)


def _released_count(out_path):
    data = pathlib.Path(out_path).read_bytes() if os.path.exists(out_path) else b""
    return data.count(b"\n")


def test_sigkill_never_releases_uncharged(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    out = str(tmp_path / "released.txt")
    Budget(1.0, accounting="basic", ledger=path).close()
    ctx = _context()
    kills = 0
    for target in (15, 40, 70, 110):  # kill once this many releases are out: mid-loop
        p = ctx.Process(target=_release_loop, args=(path, out))
        p.start()
        deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S  # a hang guard only
        while _released_count(out) < target and time.monotonic() < deadline:
            time.sleep(0.0005)
        os.kill(p.pid, signal.SIGKILL)
        p.join(timeout=SUBPROCESS_TIMEOUT_S)
        if p.exitcode == -signal.SIGKILL:
            kills += 1
        # the ledger is consistent and opens; spend >= released, at most one charge lost
        b = Budget(1.0, accounting="basic", ledger=path)
        charged = len(b.history())
        released = _released_count(out)
        assert released <= charged <= released + kills
        assert b.spent().epsilon == charged * 2.0**-9
        b.close()
    assert kills >= 3
    # a fresh process finishes the budget: exactly the capacity was charged in total
    p = ctx.Process(target=_release_loop, args=(path, out))
    p.start()
    p.join(timeout=SUBPROCESS_TIMEOUT_S)
    assert p.exitcode == 0
    b = Budget(1.0, accounting="basic", ledger=path)
    assert len(b.history()) == 512 and b.remaining().epsilon == 0.0
    assert 512 - kills <= _released_count(out) <= 512
    b.close()


# --------------------------------------------------------------------------- fork


def _fork_child(budget_mem, budget_file, queue):
    out = []
    try:
        budget_mem.spend(ev.Epsilon(0.125))
        out.append("mem-ok")
    except RuntimeError:
        out.append("mem-refused")
    budget_file.spend(ev.Epsilon(0.125), note="child")
    out.append(budget_file.remaining().epsilon)
    queue.put(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork of the test process")
def test_budget_inherited_through_fork(tmp_path):
    mem = Budget(1.0, accounting="basic")
    fil = Budget(1.0, accounting="basic", ledger=tmp_path / "l.sqlite")
    fil.spend(ev.Epsilon(0.125), note="parent")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    p = ctx.Process(target=_fork_child, args=(mem, fil, queue))
    p.start()
    result = queue.get(timeout=SUBPROCESS_TIMEOUT_S)
    p.join(timeout=SUBPROCESS_TIMEOUT_S)
    # an in-memory budget is refused in the child: it would be a second budget
    assert result == ["mem-refused", 0.75]
    assert fil.remaining().epsilon == 0.75  # the parent sees the child's charge
    assert [c.note for c in fil.history()] == ["parent", "child"]
    mem.spend(ev.Epsilon(0.125))  # the parent's own budget still works
    fil.close()


# --------------------------------------------------------------------------- hash chain


def _raw(path):
    """A raw connection with the append-only triggers dropped (what an attacker does)."""
    con = sqlite3.connect(path)
    for t in ("charges_no_update", "charges_no_delete", "meta_no_update", "meta_no_delete"):
        con.execute(f"DROP TRIGGER IF EXISTS {t}")
    return con


@pytest.mark.parametrize(
    "tamper",
    [
        "DELETE FROM charges WHERE id = 2",  # a middle row
        "DELETE FROM charges WHERE id >= 3",  # the last rows (truncation)
        "DELETE FROM charges",  # everything
        "UPDATE charges SET cost = '[0.0, 0.0]' WHERE id = 1",  # a cost
        "UPDATE charges SET note = 'nothing to see' WHERE id = 3",  # the audit text
        "UPDATE charges SET status = 'refused' WHERE id = 2",  # uncount a charge
        "UPDATE meta SET value = '{\"accounting\": \"basic\", \"delta\": 1e-06, "
        "\"epsilon\": 2.0, \"orders\": null}' WHERE key = 'definition'",  # more budget
    ],
)
def test_tampering_is_detected_on_open(tmp_path, tamper):
    path = tmp_path / "ledger.sqlite"
    _make_ledger(path, 4).close()
    con = _raw(path)
    con.execute(tamper)
    con.commit()
    con.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="tampered|definition"):
        Budget.from_ledger(path)
    with pytest.raises(LedgerError, match="tampered|definition"):
        eps = 2.0 if "epsilon\\\": 2.0" in tamper or '"epsilon": 2.0' in tamper else 1.0
        Budget(eps, 1e-6, ledger=path, accounting="basic")
    assert path.read_bytes() == before  # verified read-only before anything is written
    r = _cli("ledger", "verify", str(path))
    assert r.returncode == 1 and ("tampered" in r.stderr or "definition" in r.stderr)


def test_tampering_while_open_is_detected_at_the_next_charge(tmp_path):
    path = tmp_path / "ledger.sqlite"
    b = _make_ledger(path, 2)
    con = _raw(path)
    con.execute("DELETE FROM charges WHERE id = 2")
    con.execute(
        "INSERT INTO charges (id, time, status, ref, analyst, note, event, cost, user, host,"
        " pid, prev, hash) SELECT 3, time, status, ref, analyst, note, event, cost, user,"
        " host, pid, prev, hash FROM charges WHERE id = 1"
    )
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="tampered"):
        b.spend(ev.Epsilon(0.125))
    b.close()


def test_records_who_where_and_refusals(tmp_path):
    path = tmp_path / "ledger.sqlite"
    b = Budget(1.0, ledger=path)
    b.spend(ev.Epsilon(0.75), analyst="ana", note="first")
    with pytest.raises(BudgetExceededError):
        b.spend(ev.Epsilon(0.5), analyst="eve", note="too much")
    b.close()
    again = Budget(1.0, ledger=path)
    records = again.history(include_refused=True)
    assert [(c.status, c.analyst) for c in records] == [("charged", "ana"), ("refused", "eve")]
    import pwd
    import socket

    for c in records:
        assert c.user == pwd.getpwuid(os.geteuid()).pw_name
        assert c.host == socket.gethostname() and c.pid == os.getpid()
    assert again.remaining().epsilon == 0.25  # the refusal is not counted
    again.close()


# --------------------------------------------------------------------------- migration

_V1_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)",
    "CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT NULL, "
    "analyst TEXT NOT NULL, note TEXT NOT NULL, event TEXT NOT NULL, epsilon REAL, "
    "delta REAL, rho REAL, rdp TEXT)",
    "CREATE TRIGGER charges_no_update BEFORE UPDATE ON charges "
    "BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END",
    "CREATE TRIGGER charges_no_delete BEFORE DELETE ON charges "
    "BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END",
    "CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta "
    "BEGIN SELECT RAISE(ABORT, 'the dpfast ledger definition is immutable'); END",
)


def _v1_ledger(path, definition, rows):
    """A ledger as dpfast 0.1.0 wrote it (format 1)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA application_id = 1685081191")
    for stmt in _V1_SCHEMA:
        con.execute(stmt)
    con.executemany("INSERT INTO meta VALUES (?, ?)", [
        ("format", "dpfast-ledger"), ("version", "1"),
        ("definition", json.dumps(definition, sort_keys=True)),
        ("created", "2026-01-01T00:00:00+00:00"),
    ])
    con.executemany(
        "INSERT INTO charges (time, analyst, note, event, epsilon, delta, rho, rdp) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    os.chmod(path, 0o600)


def test_format_1_ledgers_are_migrated(tmp_path):
    event = json.dumps({"type": "Epsilon", "epsilon": 0.25})
    basic = tmp_path / "basic.sqlite"
    _v1_ledger(basic, {"epsilon": 1.0, "delta": 0.0, "accounting": "basic", "orders": None},
               [(1.7e9, "ana", "a", event, 0.25, 0.0, None, None),
                (1.7e9 + 1, "bob", "b", event, 0.25, 0.0, None, None)])
    r = _cli("ledger", "verify", str(basic))
    assert r.returncode == 1 and "format 1" in r.stderr  # read-only: not migrated
    b = Budget(1.0, ledger=basic)
    assert [(c.analyst, c.user, c.pid) for c in b.history()] == [("ana", "", 0), ("bob", "", 0)]
    assert b.remaining().epsilon == 0.5
    b.spend(ev.Epsilon(0.5))
    with pytest.raises(BudgetExceededError):
        b.spend(ev.Epsilon(2.0**-20))
    b.close()
    con = sqlite3.connect(basic)
    assert con.execute("SELECT value FROM meta WHERE key='version'").fetchone() == ("3",)
    assert [v for (v,) in con.execute("SELECT version FROM migrations ORDER BY version")] == [
        1, 2, 3]
    con.close()
    assert _cli("ledger", "verify", str(basic)).returncode == 0
    # an rdp ledger of the old default grid opens with its stored orders (orders=None)
    old_orders = [2.0, 4.0, 8.0, 16.0, 32.0]
    rdp = tmp_path / "rdp.sqlite"
    _v1_ledger(rdp, {"epsilon": 8.0, "delta": 1e-5, "accounting": "rdp", "orders": old_orders},
               [(1.7e9, "ana", "", json.dumps({"type": "Gaussian", "noise_multiplier": 10.0}),
                 None, None, None, json.dumps([a / 200 for a in old_orders]))])
    g = Budget(8.0, 1e-5, ledger=rdp)
    assert g.orders == tuple(old_orders)
    assert Budget.from_ledger(rdp).remaining() == g.remaining()
    assert g.spent().rdp == tuple(a / 200 for a in old_orders)
    g.close()


# --------------------------------------------------------------------------- permissions


@pytest.mark.parametrize("umask", [0o022, 0o000, 0o077])
def test_new_ledgers_are_owner_only_whatever_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        path = tmp_path / "ledger.sqlite"
        b = _make_ledger(path, 2)  # open: the -wal and -shm files exist
        for p in (path, pathlib.Path(f"{path}-wal"), pathlib.Path(f"{path}-shm")):
            assert p.exists() and (p.stat().st_mode & 0o777) == 0o600, p
        b.close()
    finally:
        os.umask(old)


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_ledgers_writable_by_others_are_refused(tmp_path, mode):
    path = tmp_path / "ledger.sqlite"
    _make_ledger(path, 1).close()
    os.chmod(path, mode)
    with pytest.raises(LedgerError, match="writable by other users"):
        _make_ledger(path)
    os.chmod(path, 0o600)
    _make_ledger(path).close()


# --------------------------------------------------------------------------- command line


def _cli(*args, fresh=False):
    """``dpfast ARGS``: the CLI's ``main`` in this process (tests/forkrun.cli_here: these
    are read-only ledger commands, checked for what they report); ``fresh``: a fresh
    interpreter, ``python -m dpfast ARGS``."""
    import subprocess

    if not fresh:
        return cli_here(*args)
    return subprocess.run([sys.executable, "-m", "dpfast", *args], capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S)


def test_cli_ledger_show_and_verify(tmp_path):
    path = tmp_path / "ledger.sqlite"
    b = Budget(1.0, 1e-6, ledger=path)
    b.spend(ev.Epsilon(0.5), analyst="ana", note="weekly counts")
    with pytest.raises(BudgetExceededError):
        b.spend(ev.Epsilon(0.75), analyst="eve", note="too much")

    class Boom:
        event = ev.Epsilon(0.125)

        def __call__(self, x, *, rng=None):
            raise ArithmeticError("noise overflowed")

    with pytest.raises(ArithmeticError):
        b.release(Boom(), 1)
    b.close()
    bad = tmp_path / "not.sqlite"
    bad.write_bytes(b"hello")
    # a fresh interpreter first (the command as a user runs it), then the CLI's main here
    r = _cli("ledger", "show", str(path), fresh=True)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for needle in ("accounting='mixed'", "weekly counts", "ana", "eve", "refused", "failed",
                   "1 charged, 1 failed after the charge, 1 refused", "spent (epsilon=0.625",
                   "next release fits if pure epsilon <= 0.375", "hash chain verified"):
        assert needle in out, needle
    v = _cli("ledger", "verify", str(path))
    assert v.returncode == 0 and v.stdout.startswith("ok:") and "3 records" in v.stdout
    assert r.stderr == ""  # owner-only: no warning
    os.chmod(path, 0o644)
    w = _cli("ledger", "show", str(path))
    assert w.returncode == 0 and "other users can read" in w.stderr
    os.chmod(path, 0o600)
    con = _raw(path)
    con.execute("DELETE FROM charges WHERE id = 1")
    con.commit()
    con.close()
    v = _cli("ledger", "verify", str(path))
    s = _cli("ledger", "show", str(path))
    r = _cli("ledger", "show", str(bad))
    none = _cli("ledger")
    assert v.returncode == 1 and v.stdout == ""
    assert v.stderr.count("\n") == 1 and "tampered" in v.stderr
    assert s.returncode == 1 and "tampered" in s.stderr
    assert r.returncode == 2 and r.stderr.startswith("dpfast: error:") and "Traceback" not in (
        r.stderr)
    assert none.returncode == 2  # an action is required


def test_relative_ledger_path_survives_chdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    b = Budget(1.0, ledger="rel.sqlite")
    b.spend(ev.Epsilon(0.25))
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    b._sync._pid = -1  # as after fork: reconnect by path
    b.spend(ev.Epsilon(0.25))
    assert b.remaining().epsilon == 0.5 and not (other / "rel.sqlite").exists()
    b.close()
    for conn in b._sync._abandoned:  # the "parent's" connection, kept open by design
        conn.close()


# --------------------------------------------------------------------------- relations


def test_one_neighbouring_relation_per_budget(tmp_path):
    from dpfast import NeighbouringRelationError

    path = tmp_path / "ledger.sqlite"
    b = Budget(8.0, 1e-5, ledger=path)
    add_remove = ev.PoissonSampled(ev.Gaussian(1.1), 0.01)
    replace_one = ev.SampledWithoutReplacement(ev.Gaussian(2.0), 10, 1000)
    b.spend(ev.Gaussian(30.0))  # states no relation: fixes nothing
    b.spend(add_remove)  # fixes add/remove-one
    with pytest.raises(NeighbouringRelationError, match="add_remove"):
        b.spend(replace_one)
    with pytest.raises(NeighbouringRelationError, match="mixes"):
        b.spend(ev.Composed([add_remove, replace_one]))
    b.spend(ev.Gaussian(30.0))
    assert [c.event for c in b.history(include_refused=True)] == [
        ev.Gaussian(30.0), add_remove, ev.Gaussian(30.0)]
    b.close()
    again = Budget(8.0, 1e-5, ledger=path)  # the relation is read back from the ledger
    with pytest.raises(NeighbouringRelationError):
        again.spend(replace_one)
    again.spend(add_remove)
    again.close()
    other = Budget(8.0, 1e-5)
    other.spend(replace_one)  # a fresh budget takes either relation
    with pytest.raises(NeighbouringRelationError):
        other.spend(add_remove)
