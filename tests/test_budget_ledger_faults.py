"""Budget ledger at the seams: concurrent opening, storage faults (the anchor), checkpoints,
ownership and paths, failed releases and format-1 rewrites (issue 22, items 5-8).

Processes use ``fork`` on Linux with Python < 3.12 (fast) and ``spawn`` otherwise.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast.accounting import events as ev
from dpfast.budget import Budget, LedgerError, checkpoint, inspect_ledger, schema
from tests.forkrun import cli_here
from tests.helpers import SUBPROCESS_TIMEOUT_S

STEP = 2.0**-10
OTHER_UID = 65534  # "nobody": we run as root in CI, and root may chown


def _context():
    if sys.platform.startswith("linux") and sys.version_info < (3, 12):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _cli(*args, fresh=False):
    """``dpfast ARGS``: the CLI's ``main`` in this process (tests/forkrun.cli_here: these
    are read-only ledger commands, checked for what they report); ``fresh``: a fresh
    interpreter, ``python -m dpfast ARGS`` (with a hang guard: a FIFO)."""
    if not fresh:
        return cli_here(*args)
    return subprocess.run([sys.executable, "-m", "dpfast", *args], capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S)


def _ledger(path, n=0, **kw):
    b = Budget(1.0, ledger=path, **kw)
    for i in range(n):
        b.spend(ev.Epsilon(STEP), note=f"q{i}")
    return b


def _raw(path):
    """A raw connection with every append-only trigger dropped (what an attacker does)."""
    con = sqlite3.connect(path)
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'"):
        con.execute(f"DROP TRIGGER {name}")
    return con


# --------------------------------------------------------------------------- item 5: races


#: charges per writer process at most (then it waits for the end): the ledger's length,
#: hence the cost of each full verification, stays bounded
CHARGES = 400
#: open-and-verify rounds per reader (3 readers, 2 checks a round)
ROUNDS = 8


def _charger(path, stop, started, limit=CHARGES):
    b = Budget(1.0, ledger=path)
    started.release()
    done = 0
    while not stop.is_set() and done < limit:
        b.spend(ev.Epsilon(2.0**-40), note="w")
        done += 1
    b.close()
    stop.wait(SUBPROCESS_TIMEOUT_S)


def _opener(path, rounds, out):
    bad = []
    for _ in range(rounds):
        try:
            Budget(1.0, ledger=path).close()
        except LedgerError as exc:
            bad.append(f"open: {exc}")
        rep = inspect_ledger(path)
        if not rep.chain_ok:
            bad.append(f"verify: {rep.problem}")
    out.put(bad)


def test_open_and_verify_while_other_processes_charge(tmp_path):
    """Several processes charge one file while others open it and verify it: no false
    'tampered' (rows and sqlite_sequence are read in one snapshot, the anchor before).

    3 writers charge up to :data:`CHARGES` rows each while 3 readers open and verify the
    file :data:`ROUNDS` times each (48 checks, most of them during the writes): with the
    reads outside one snapshot (``chain.snapshot`` a no-op, a reader without its read
    lock) about a third of the checks during the writes report a false 'truncated' or
    'behind its anchor', and this test fails; with the writers' ``BEGIN IMMEDIATE`` a
    deferred ``BEGIN`` (no write lock) a writer's charge fails and so does this test.  The
    writers stop at a bound so that each full verification stays short (every reader check
    reads every row; with writers charging until the end, the rounds grew ever longer)."""
    path = str(tmp_path / "ledger.sqlite")
    Budget(1.0, ledger=path).close()
    ctx = _context()
    stop, started, out = ctx.Event(), ctx.Semaphore(0), ctx.Queue()
    writers = [ctx.Process(target=_charger, args=(path, stop, started)) for _ in range(3)]
    for w in writers:
        w.start()
    openers: list = []
    bad = []
    try:
        deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S  # a hang guard only
        for _ in writers:  # a writer that failed to open never starts: fail, do not wait
            while not started.acquire(timeout=0.2):
                assert all(w.exitcode in (None, 0) for w in writers), "a writer failed"
                assert time.monotonic() < deadline
        openers += [ctx.Process(target=_opener, args=(path, ROUNDS, out)) for _ in range(2)]
        for o in openers:
            o.start()
        _opener(path, ROUNDS, out)
        for _ in range(3):
            bad += out.get(timeout=SUBPROCESS_TIMEOUT_S)
    finally:
        stop.set()
        for p in writers + openers:
            p.join(timeout=SUBPROCESS_TIMEOUT_S)
    assert bad == []
    assert all(p.exitcode == 0 for p in writers + openers)
    rep = inspect_ledger(path)
    assert rep.chain_ok, rep.problem
    b = Budget(1.0, ledger=path)
    assert len(b.history()) == len(rep.records) > 0
    b.close()
    r = _cli("ledger", "verify", path, fresh=True)
    assert r.returncode == 0, r.stderr


def test_open_is_incremental_from_the_last_checkpoint(tmp_path, monkeypatch):
    """Opening verifies only the rows after the last checkpoint (fewer than EVERY),
    whatever the length; ``verify`` still checks every row and every checkpoint."""
    monkeypatch.setattr(checkpoint, "EVERY", 16)
    path = tmp_path / "ledger.sqlite"
    b = _ledger(path, 70)  # checkpoints at 16, 32, 48, 64
    b.close()
    con = sqlite3.connect(path)
    assert [r[0] for r in con.execute("SELECT id FROM checkpoints")] == [16, 32, 48, 64]
    con.close()
    calls = []
    real = schema.row_hash
    monkeypatch.setattr(schema, "row_hash", lambda *a: calls.append(1) or real(*a))
    b = Budget(1.0, ledger=path)
    assert len(calls) == 70 - 64  # the rows after the checkpoint at 64
    assert b.remaining().epsilon == 1.0 - 70 * STEP
    b.close()
    calls.clear()
    assert inspect_ledger(path).chain_ok and len(calls) == 70  # verify: every row


def test_a_ledger_without_checkpoints_gets_one_at_open(tmp_path, monkeypatch):
    """A ledger of an older dpfast (no checkpoints table, no anchor) is verified in full
    once, then anchored and checkpointed: the next open is incremental."""
    monkeypatch.setattr(checkpoint, "EVERY", 16)
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 40).close()
    con = _raw(path)  # as dpfast wrote it before: no checkpoints, no anchor
    con.execute("DROP TABLE checkpoints")
    con.execute("DELETE FROM meta WHERE key = 'anchor'")
    con.commit()
    con.close()
    os.remove(f"{path}-anchor")
    assert inspect_ledger(path).chain_ok  # an unanchored old ledger is still valid
    b = Budget(1.0, ledger=path)
    assert b.remaining().epsilon == 1.0 - 40 * STEP
    b.close()
    assert os.path.exists(f"{path}-anchor")
    con = sqlite3.connect(path)
    assert con.execute("SELECT id FROM checkpoints").fetchall() == [(40,)]
    assert dict(con.execute("SELECT key, value FROM meta"))["anchor"] == "sha256"
    con.close()
    calls = []
    real = schema.row_hash
    monkeypatch.setattr(schema, "row_hash", lambda *a: calls.append(1) or real(*a))
    Budget(1.0, ledger=path).close()
    assert calls == []


def test_history_edited_before_a_checkpoint_cannot_refund(tmp_path, monkeypatch):
    """Opening trusts the checkpoint's state, so editing a row before it changes nothing
    that is charged; ``verify`` reports the edit.  A forged checkpoint (a lower spend,
    its plain digest recomputed) is caught by ``verify`` (its state is recomputed from
    the rows); with an operator key it cannot be forged and opening refuses it."""
    monkeypatch.setattr(checkpoint, "EVERY", 16)
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 20).close()
    con = _raw(path)
    con.execute("UPDATE charges SET cost = '[0.0, 0.0]' WHERE id = 3")
    con.commit()
    con.close()
    b = Budget(1.0, ledger=path)
    assert b.remaining().epsilon == 1.0 - 20 * STEP  # no refund
    b.close()
    rep = inspect_ledger(path)
    assert not rep.chain_ok and "tampered" in rep.problem
    assert _cli("ledger", "verify", str(path)).returncode == 1

    for key in (None, "k" * 32):
        p = tmp_path / f"forged-{key is not None}.sqlite"
        _ledger(p, 20, ledger_key=key).close()
        con = _raw(p)
        (cid, head, text) = con.execute("SELECT id, head, state FROM checkpoints").fetchone()
        data = json.loads(text)
        data["state"]["values"] = [0, 0]  # nothing spent up to charge 16
        forged = json.dumps(data, sort_keys=True, separators=(",", ":"))
        genesis = schema.genesis_hash(*[dict(con.execute("SELECT key, value FROM meta"))[k]
                                        for k in ("definition", "created")])
        digest = checkpoint.digest(None, genesis, cid, head, forged)  # no key to forge with
        con.execute("UPDATE checkpoints SET state = ?, digest = ?", (forged, digest))
        con.commit()
        con.close()
        if key is None:
            rep = inspect_ledger(p)
            assert not rep.chain_ok and "checkpoint" in rep.problem
        else:
            with pytest.raises(LedgerError, match="checkpoint"):
                Budget(1.0, ledger=p, ledger_key=key)
            assert not inspect_ledger(p, ledger_key=key).chain_ok


# --------------------------------------------------------------------------- item 6: faults

_WRITER = r"""
import os, signal, sys
import dpfast as dp
from dpfast.accounting import events
b = dp.Budget(1.0, ledger=sys.argv[1])
for i in range(40):
    b.spend(events.Epsilon(2.0 ** -6), note=f"q{i}")
os.kill(os.getpid(), signal.SIGKILL)  # a crash: the charges live in the -wal only
"""


def _crashed_ledger(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    r = subprocess.run([sys.executable, "-c", _WRITER, path], capture_output=True,
                       timeout=SUBPROCESS_TIMEOUT_S)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert os.path.getsize(path + "-wal") > 0
    return path


def _flip_bit(path):
    wal = path + "-wal"
    size = os.path.getsize(wal)
    with open(wal, "r+b") as f:
        f.seek(size // 2)
        b = f.read(1)
        f.seek(size // 2)
        f.write(bytes([b[0] ^ 1]))


def _truncate(path):
    wal = path + "-wal"
    os.truncate(wal, os.path.getsize(wal) // 2)


def _delete(path):
    os.remove(path + "-wal")
    os.remove(path + "-shm")


@pytest.mark.parametrize("fault", [_flip_bit, _truncate, _delete],
                         ids=["bit-flip", "truncated", "deleted"])
def test_a_damaged_or_lost_wal_never_refunds_silently(tmp_path, fault):
    path = _crashed_ledger(tmp_path)
    fault(path)
    with pytest.raises(LedgerError, match="anchor says 40 were committed"):
        Budget.from_ledger(path)
    with pytest.raises(LedgerError, match="anchor"):
        Budget(1.0, ledger=path)
    r = _cli("ledger", "verify", path)
    assert r.returncode == 1 and "anchor says 40" in r.stderr
    rep = inspect_ledger(path)
    assert not rep.chain_ok and rep.spent is None


def test_a_crash_without_fault_reopens(tmp_path):
    path = _crashed_ledger(tmp_path)
    b = Budget.from_ledger(path)
    assert len(b.history()) == 40 and b.remaining().epsilon == 1.0 - 40 * 2.0**-6
    b.close()


def test_deleting_the_last_rows_and_fixing_the_sequence_is_detected(tmp_path):
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 6).close()
    con = _raw(path)
    con.execute("DELETE FROM charges WHERE id > 4")
    con.execute("UPDATE sqlite_sequence SET seq = 4 WHERE name = 'charges'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="4 records but its anchor says 6"):
        Budget(1.0, ledger=path)
    r = _cli("ledger", "verify", str(path))
    assert r.returncode == 1 and "anchor says 6" in r.stderr


def test_a_lost_last_commit_is_restored_from_the_anchor(tmp_path):
    """The anchor holds the last row itself (written before the commit): a ledger exactly
    that row short -- a crash during the commit, or a -wal that lost just the last
    commit -- is completed with it; the charge still counts."""
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 6).close()
    con = _raw(path)
    con.execute("DELETE FROM charges WHERE id = 6")
    con.execute("UPDATE sqlite_sequence SET seq = 5 WHERE name = 'charges'")
    con.commit()
    con.close()
    rep = inspect_ledger(path)  # read-only: counts the anchor's row, changes nothing
    assert rep.chain_ok and len(rep.records) == 6 and rep.spent.epsilon == 6 * STEP
    b = Budget(1.0, ledger=path)
    assert [c.note for c in b.history()][-1] == "q5"
    assert b.remaining().epsilon == 1.0 - 6 * STEP
    b.spend(ev.Epsilon(STEP))
    b.close()
    assert inspect_ledger(path).chain_ok
    with Budget(1.0, ledger=path) as again:
        assert len(again.history()) == 7
    # the anchor's row must continue the chain: a forged one is refused
    con = _raw(path)
    con.execute("DELETE FROM charges WHERE id = 7")
    con.execute("UPDATE sqlite_sequence SET seq = 6 WHERE name = 'charges'")
    con.execute("UPDATE charges SET note = 'edited' WHERE id = 6")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="tampered"):
        Budget(1.0, ledger=path)


def test_a_lost_or_foreign_anchor_is_refused(tmp_path):
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 3).close()
    anchor = f"{path}-anchor"
    with open(anchor, "rb") as f:
        saved = f.read()
    os.remove(anchor)
    with pytest.raises(LedgerError, match="lost its anchor"):
        Budget(1.0, ledger=path)
    assert _cli("ledger", "verify", str(path)).returncode == 1
    other = tmp_path / "other.sqlite"
    _ledger(other, 3).close()
    os.replace(f"{other}-anchor", anchor)  # another ledger's anchor
    with pytest.raises(LedgerError, match="another ledger"):
        Budget(1.0, ledger=path)
    with open(anchor, "wb") as f:
        f.write(saved)
    os.chmod(anchor, 0o600)
    Budget(1.0, ledger=path).close()


def test_a_rewritten_chain_is_caught_by_a_keyed_anchor(tmp_path, monkeypatch):
    """Rebuilding the whole chain with fewer charges (hashes recomputed, no key) is
    caught by the anchor; with a key the anchor cannot be rebuilt to match."""
    key = "operator-secret-0123456789"
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 5, ledger_key=key).close()
    con = _raw(path)
    meta = dict(con.execute("SELECT key, value FROM meta"))
    rows = con.execute(f"SELECT {schema.COLUMNS} FROM charges ORDER BY id").fetchall()
    con.execute("DELETE FROM charges")
    con.execute("DELETE FROM checkpoints")
    prev = schema.genesis_hash(meta["definition"], meta["created"])
    for r in rows[:2]:  # keep two charges, chain recomputed
        fields = list(r[:12])
        digest = schema.row_hash(prev, schema.hashed(fields))
        con.execute(f"INSERT INTO charges ({schema.COLUMNS}) VALUES "
                    f"({schema.PLACEHOLDERS})", (*fields, prev, digest))
        prev = digest
    con.execute("UPDATE sqlite_sequence SET seq = 2 WHERE name = 'charges'")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="anchor"):
        Budget(1.0, ledger=path, ledger_key=key)
    monkeypatch.setenv("DPFAST_LEDGER_KEY", key)  # the key from the environment
    with pytest.raises(LedgerError, match="anchor"):
        Budget(1.0, ledger=path)
    assert _cli("ledger", "verify", str(path)).returncode == 1
    monkeypatch.delenv("DPFAST_LEDGER_KEY")
    with pytest.raises(LedgerError, match="keyed"):  # no key: refused, not downgraded
        Budget(1.0, ledger=path)
    with pytest.raises(LedgerError, match="another key"):
        Budget(1.0, ledger=path, ledger_key="x" * 20)
    plain = tmp_path / "plain.sqlite"
    _ledger(plain, 1).close()
    with pytest.raises(LedgerError, match="without a key"):
        Budget(1.0, ledger=plain, ledger_key=key)
    with pytest.raises(ValueError, match="ledger_key"):
        Budget(1.0, ledger=plain, ledger_key="short")
    with pytest.raises(TypeError, match="ledger_key"):
        Budget(1.0, ledger=plain, ledger_key=12345678901234567890)


# --------------------------------------------------------------------------- item 7: paths


def _both_refuse(path, match):
    """Budget() and inspect_ledger / `dpfast ledger verify` apply the same rules."""
    with pytest.raises(LedgerError, match=match):
        Budget(1.0, ledger=path)
    with pytest.raises(LedgerError, match=match):
        inspect_ledger(path)
    r = _cli("ledger", "verify", str(path))
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_files_of_another_user_are_refused(tmp_path):
    path = tmp_path / "ledger.sqlite"
    b = _ledger(path, 2)  # open: -wal and -shm exist
    os.chown(path, OTHER_UID, -1)
    _both_refuse(path, "owned by uid 65534")
    os.chown(path, 0, -1)
    os.chown(f"{path}-wal", OTHER_UID, -1)
    with pytest.raises(LedgerError, match="-wal' is owned by uid 65534"):
        Budget(1.0, ledger=path)
    os.chown(f"{path}-wal", 0, -1)
    b.close()
    # a symbolic link to another user's ledger
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    _ledger(theirs / "l.sqlite", 1).close()
    for p in theirs.iterdir():
        os.chown(p, OTHER_UID, -1)
    link = tmp_path / "link.sqlite"
    link.symlink_to(theirs / "l.sqlite")
    _both_refuse(link, "owned by uid 65534")
    # a directory of another user
    os.chown(theirs, OTHER_UID, -1)
    with pytest.raises(LedgerError, match="belongs to uid 65534"):
        Budget(1.0, ledger=theirs / "new.sqlite")


def test_links_directories_fifos_and_damaged_rows(tmp_path):
    mine = tmp_path / "mine.sqlite"
    _ledger(mine, 2).close()
    link = tmp_path / "link.sqlite"
    link.symlink_to(mine)
    b = Budget(1.0, ledger=link)  # a link to one's own ledger: the real file is used
    b.spend(ev.Epsilon(STEP))
    b.close()
    assert len(Budget(1.0, ledger=mine).history()) == 3
    assert not os.path.exists(f"{link}-wal") and not os.path.exists(f"{link}-anchor")
    loop = tmp_path / "loop.sqlite"
    loop.symlink_to(loop)
    _both_refuse(loop, "loop of symbolic links")
    dangling = tmp_path / "dangling.sqlite"
    dangling.symlink_to(tmp_path / "nothing")
    with pytest.raises(LedgerError, match="link to nothing"):
        Budget(1.0, ledger=dangling)
    # world-writable without the sticky bit: anyone could swap the ledger
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    with pytest.raises(LedgerError, match="sticky"):
        Budget(1.0, ledger=open_dir / "l.sqlite")
    os.chmod(open_dir, 0o1777)  # like /tmp: accepted
    Budget(1.0, ledger=open_dir / "l.sqlite").close()
    _ledger(open_dir / "m.sqlite", 1).close()
    os.chmod(open_dir, 0o777)
    _both_refuse(open_dir / "m.sqlite", "sticky")
    # a FIFO at the ledger path: refused at once, never waited on
    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo, 0o600)
    code = ("import sys, dpfast as dp\ntry:\n    dp.Budget(1.0, ledger=sys.argv[1], "
            "timeout=1)\nexcept dp.LedgerError as e:\n    print('refused:', e)")
    r = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True,
                       text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert r.stdout.startswith("refused:") and "FIFO" in r.stdout, r.stderr
    r = _cli("ledger", "verify", str(fifo), fresh=True)
    assert r.returncode == 2 and "FIFO" in r.stderr
    # 0660: Budget refuses it, and so does verify (one contract)
    os.chmod(mine, 0o660)
    _both_refuse(mine, "writable by other users")
    os.chmod(mine, 0o600)


@pytest.mark.parametrize("damage", [
    "UPDATE charges SET note = X'00ff' WHERE id = 2",  # a blob
    "UPDATE charges SET prev = 7 WHERE id = 2",  # a number for a hash
    "UPDATE charges SET pid = 'x' WHERE id = 1",  # text for a number
    "UPDATE charges SET cost = 5 WHERE id = 2",  # a number for the JSON cost
])
def test_damaged_rows_raise_ledger_error(tmp_path, damage):
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 3).close()
    con = _raw(path)
    con.execute("PRAGMA ignore_check_constraints = ON")
    con.execute(damage)
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="damaged|tampered"):
        Budget(1.0, ledger=path)
    with pytest.raises(LedgerError, match="damaged|tampered"):
        Budget.from_ledger(path)
    r = _cli("ledger", "verify", str(path))
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stderr


# --------------------------------------------------------------------------- item 8: audit


class _Boom(Exception):
    pass


def test_charge_context_records_failures_without_refund(tmp_path):
    path = tmp_path / "ledger.sqlite"
    b = Budget(1.0, ledger=path)
    with b.charge(ev.Epsilon(0.25), note="ok", analyst="ana") as c:
        assert c.status == "charged" and c.id == 1
    with pytest.raises(_Boom), b.charge(ev.Epsilon(0.25), note="disk full"):
        raise _Boom("No space left on device")
    with pytest.raises(KeyboardInterrupt), b.charge(ev.Epsilon(0.125), note="killed"):
        raise KeyboardInterrupt
    assert b.remaining().epsilon == 0.375  # the failed charges stay counted
    hist = b.history()
    assert [(c.note, c.status) for c in hist] == [
        ("ok", "charged"), ("disk full", "failed"), ("killed", "failed")]
    b.close()
    r = _cli("ledger", "show", str(path))
    assert "1 charged, 2 failed after the charge" in r.stdout


def _failing(monkeypatch, module, name, exc):
    def boom(*a, **k):
        raise exc
    monkeypatch.setattr(module, name, boom)


def test_table_releases_that_fail_after_the_charge_leave_a_failed_row(monkeypatch):

    import numpy as np

    from dpfast import noise, tables  # (TopDown draws its noise from dpfast.noise)
    from dpfast.tables import groupby as aggregate  # the count / sum / mean module

    budget = Budget(10.0)
    keys = np.array([0, 1, 1, 2])
    _failing(monkeypatch, aggregate, "release", OSError(28, "No space left on device"))
    with pytest.raises(OSError):
        tables.count(keys, epsilon=1.0, domain=[0, 1, 2], budget=budget, note="count")
    assert [(c.note, c.status) for c in budget.history()] == [("count", "failed")]
    assert budget.remaining().epsilon == 9.0  # charged, not refunded
    zbudget = Budget(10.0, 1e-6, accounting="zcdp")
    _failing(monkeypatch, noise, "discrete_gaussian", MemoryError())
    with pytest.raises(MemoryError):
        tables.topdown(np.array([3, 4]), [np.array([0, 0]), np.array([0, 1])], rho=0.5,
                       budget=zbudget, note="topdown")
    assert [(c.note, c.status) for c in zbudget.history()] == [("topdown", "failed")]
    assert zbudget.spent().rho > 0.49  # charged, not refunded


def test_a_dask_release_killed_before_noise_leaves_a_failed_row(monkeypatch):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    from dpfast import dask as dpdask
    from dpfast.tables import groupby

    budget = Budget(10.0)
    ddf = dd.from_pandas(pd.DataFrame({"k": [0, 1, 1, 2]}), npartitions=2)
    # the partials are computed before the charge (the one pipeline); killed after it
    _failing(monkeypatch, groupby, "release", KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        dpdask.count(ddf, "k", epsilon=1.0, domain=[0, 1, 2], budget=budget, note="dask")
    assert [(c.note, c.status) for c in budget.history()] == [("dask", "failed")]
    assert budget.remaining().epsilon == 9.0


def _as_format_1(path):
    """Rewrite a format-2 ledger as format 1 (drop the chain, costs back in columns)."""
    con = _raw(path)
    con.execute("ALTER TABLE charges RENAME TO c2")
    con.execute("CREATE TABLE charges (id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL NOT "
                "NULL, analyst TEXT NOT NULL, note TEXT NOT NULL, event TEXT NOT NULL, "
                "epsilon REAL, delta REAL, rho REAL, rdp TEXT)")
    con.execute("INSERT INTO charges (time, analyst, note, event, epsilon, delta) SELECT "
                "time, analyst, note, event, 0.0, 0.0 FROM c2 WHERE status = 'charged'")
    con.execute("DROP TABLE c2")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'version'")
    con.commit()
    con.close()


def test_a_format_1_rewrite_of_a_newer_ledger_is_not_migrated(tmp_path):
    path = tmp_path / "ledger.sqlite"
    _ledger(path, 3).close()
    _as_format_1(path)  # every charge now costs 0, and a fresh chain would hide it
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="rewritten in an old format"):
        Budget(1.0, ledger=path)
    assert path.read_bytes() == before
    os.remove(f"{path}-anchor")  # the tables still show it was newer
    with pytest.raises(LedgerError, match="'migrations' table"):
        Budget(1.0, ledger=path)
    con = _raw(path)
    for t in ("migrations", "checkpoints", "payloads"):
        con.execute(f"DROP TABLE {t}")
    con.execute("DELETE FROM meta WHERE key = 'anchor'")
    con.commit()
    con.close()
    b = Budget(1.0, ledger=path)  # no mark left: indistinguishable from a real format 1
    assert len(b.history()) == 3
    b.close()



@pytest.fixture(scope="module")
def fuzz_ledger(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "ledger.sqlite"
    _ledger(path, 5).close()
    with open(f"{path}-anchor", "rb") as f, open(f"{path}.orig", "wb") as g:
        g.write(f.read())
    return str(path)


@settings(max_examples=40, deadline=None)
@given(edits=st.lists(st.tuples(st.sampled_from([0, 65536]), st.integers(0, 700),
                                st.integers(0, 255)), min_size=1, max_size=4))
def test_a_damaged_anchor_never_opens_with_less_spent(fuzz_ledger, edits):
    """Whatever bytes of the anchor's records change: LedgerError, or the ledger opens
    with exactly what was charged (never less, never another exception)."""
    path = fuzz_ledger
    with open(f"{path}.orig", "rb") as f:
        original = f.read()
    data = bytearray(original.ljust(2 * 65536 + 701, b"\0"))
    for slot, pos, value in edits:
        data[slot + pos] = value
    with open(f"{path}-anchor", "wb") as f:
        f.write(bytes(data))
    try:
        b = Budget(1.0, ledger=path)
    except LedgerError:
        return
    try:
        assert b.remaining().epsilon == 1.0 - 5 * STEP and len(b.history()) == 5
    finally:
        b.close()


def test_a_new_anchor_appears_complete_or_not_at_all(tmp_path, monkeypatch) -> None:
    # a process opening the ledger while another creates it must never read an empty
    # anchor (it reported "damaged or forged" under concurrent creation): the records are
    # written to a private file, which then takes the anchor's name in one link
    from dpfast.budget import anchor as anchor_mod

    a = anchor_mod.AnchorFile(str(tmp_path / "l.sqlite"), "ledger-id", "sha256", None)
    seen = []
    real_link = os.link

    def spy(src, dst):
        assert not os.path.exists(dst)
        with open(src, "rb") as f:
            seen.append(a._parse(f.read(anchor_mod.SLOT))[0])  # complete
        return real_link(src, dst)

    monkeypatch.setattr(anchor_mod.os, "link", spy)
    assert a.create(0, "h" * 64)
    assert seen and seen[0] is not None and seen[0].rows == 0
    assert a.read() is not None and a.read().rows == 0
    assert not a.create(0, "h" * 64)  # an existing anchor is left alone
    assert [p.name for p in tmp_path.iterdir()] == ["l.sqlite-anchor"]  # no temporary left
