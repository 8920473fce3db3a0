"""The CLI at the privacy boundary (issue 36, channel 7): output paths are checked before
anything is read or charged (never an input, a link to one, or the ledger; a directory
that exists and is writable), runtime errors are one line without a traceback or an
engine's message, analyst names are checked, only registered analysts are charged, the
ledger is bound to one privacy unit (channel 10), and ``query``'s hints name its options
(issue 41, item 7)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import dpfast
from dpfast.cli import main

pd = pytest.importorskip("pandas")
pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNT = "SELECT dest, COUNT(*) AS n FROM flights GROUP BY dest"


@pytest.fixture
def data(tmp_path, monkeypatch):
    """``flights.csv`` (pid, dest, delay), ``keys.csv`` (the public dests) and a ledger
    ``b.db`` with a budget of 4 and analyst alice (2), in the working directory."""
    monkeypatch.chdir(tmp_path)
    n = 400
    pd.DataFrame({"pid": [i % 97 for i in range(n)],
                  "dest": [("BOS", "LAX", "ORD")[i % 3] for i in range(n)],
                  "delay": [float(i % 50) for i in range(n)]}).to_csv("flights.csv",
                                                                      index=False)
    pd.DataFrame({"dest": ["BOS", "LAX", "ORD"]}).to_csv("keys.csv", index=False)
    b = dpfast.Budget(4.0, 1e-5, ledger="b.db", accounting="mixed")
    b.add_analyst("alice", epsilon=2.0)
    b.close()
    return tmp_path


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _charges(path: str = "b.db") -> int:
    b = dpfast.Budget.from_ledger(path)
    try:
        return len(b.history(include_refused=True))
    finally:
        b.close()


def _query(*extra: str, sql: str = COUNT, unit: str = "pid") -> list[str]:
    return ["query", "flights.csv", sql, "--privacy-unit", unit, "--epsilon", "0.5",
            "--domain", "dest=BOS,LAX,ORD", "--ledger", "b.db", *extra]


def _one_line_error(err: str) -> str:
    assert err.count("\n") == 1 and err.startswith("dpfast: error: "), err
    assert "Traceback" not in err and err[:-1].isprintable(), err
    return err


@pytest.mark.parametrize("how", ["same", "dotted", "symlink", "hardlink"])
def test_query_never_writes_over_its_input(data, capsys, how):
    """``dpfast query -o`` equal to the input overwrote the private data file after the
    charge.  Now the output is compared with every input (resolved path, and the inode:
    a symbolic or hard link is the same file) before anything is charged."""
    before = _read("flights.csv")
    out = {"same": "flights.csv", "dotted": os.path.join(".", "x", "..", "flights.csv"),
           "symlink": "link.csv", "hardlink": "hard.csv"}[how]
    os.makedirs("x", exist_ok=True)
    if how == "symlink":
        os.symlink("flights.csv", "link.csv")
    if how == "hardlink":
        os.link("flights.csv", "hard.csv")
    assert main(_query("-o", out)) == 2
    err = _one_line_error(capsys.readouterr().err)
    assert "is the input file" in err
    assert _read("flights.csv") == before
    assert _charges() == 0


def test_table_commands_never_write_over_an_input(data, capsys):
    """The same rule for every command that reads private input and writes a file:
    ``count`` / ``histogram`` onto the input, the ``--domain`` file or the ledger;
    ``topdown`` into a directory where its output would replace the input."""
    before = {f: _read(f) for f in ("flights.csv", "keys.csv", "b.db")}
    common = ["--key", "dest", "--id", "pid", "--epsilon", "0.5", "--domain", "keys.csv",
              "--ledger", "b.db"]
    for out in ("flights.csv", "keys.csv", "b.db"):
        assert main(["count", "flights.csv", *common, "-o", out]) == 2
        assert "nothing was read or charged" in _one_line_error(capsys.readouterr().err)
    assert main(["histogram", "flights.csv", "--column", "delay", "--range", "0", "50",
                 "--epsilon", "0.5", "--id", "pid", "--ledger", "b.db",
                 "-o", "flights.csv"]) == 2
    _one_line_error(capsys.readouterr().err)
    os.makedirs("out")
    pd.DataFrame({"state": ["a", "b"], "count": [3, 4]}).to_csv("out/level_1_state.csv",
                                                               index=False)
    leaf = _read("out/level_1_state.csv")
    assert main(["topdown", "out/level_1_state.csv", "--level", "state", "--rho", "0.5",
                 "--ledger", "b.db", "-o", "out"]) == 2
    assert "would overwrite the input" in _one_line_error(capsys.readouterr().err)
    assert _read("out/level_1_state.csv") == leaf
    assert {f: _read(f) for f in before} == before
    assert _charges() == 0


def test_an_unwritable_output_is_refused_before_the_charge(data, capsys):
    """An output in a directory that does not exist (or under a file) was found only
    when writing, after the release was charged."""
    for out in ("missing/out.csv", "flights.csv/out.csv"):
        assert main(_query("-o", out)) == 2
        assert "does not exist" in _one_line_error(capsys.readouterr().err)
    assert _charges() == 0


def test_a_runtime_error_is_one_line_without_its_message(data, capsys, monkeypatch):
    """A runtime error printed a traceback (with an engine's message, which may quote
    private values).  Now: one line naming the exception's type, exit 1."""
    from dpfast.cli import query

    def boom(args):
        raise RuntimeError("private value 'BOS'\nsecond line \x1b[2J")

    monkeypatch.setattr(query, "run", boom)
    assert main(_query()) == 1
    err = _one_line_error(capsys.readouterr().err)
    assert "RuntimeError" in err and "BOS" not in err


def test_a_failing_query_in_a_subprocess_prints_one_line(data):
    """The same through the real entry point, with a query whose rows made the engine
    fail before the SQL model (a failing CAST is now NULL by declared semantics): either
    an answer, or one line, no traceback, exit != 0; never a private value."""
    sql = "SELECT dest, COUNT(*) AS n FROM flights WHERE CAST(dest AS INTEGER) > 0 " \
          "GROUP BY dest"
    env = dict(os.environ, PYTHONPATH=ROOT, DPFAST_NO_COMPILE_NOTICE="1")
    out = subprocess.run([sys.executable, "-m", "dpfast", *_query(sql=sql)],
                         capture_output=True, text=True, timeout=600, env=env)
    if out.returncode != 0:
        _one_line_error(out.stderr)
    assert "Traceback" not in out.stderr
    assert "'BOS'" not in out.stderr  # no private value in the message


@pytest.mark.parametrize("bad", ["al\nice", "\x1b[31mred", "a\x00b", "\u202eevil", "",
                                 "a" * 65])
def test_cli_analyst_names_are_checked(data, capsys, bad):
    """``--analyst`` and ``ledger analysts add`` refuse unsafe names, one escaped line,
    nothing recorded."""
    if "\x00" not in bad:  # (an argv cannot hold NUL)
        assert main(_query("--analyst", bad)) == 2
        assert "--analyst must" in _one_line_error(capsys.readouterr().err)
        assert main(["ledger", "analysts", "add", "b.db", bad, "--epsilon", "1"]) == 2
        assert "NAME must" in _one_line_error(capsys.readouterr().err)
    b = dpfast.Budget.from_ledger("b.db")
    assert b.analysts() == {"alice": (2.0, 1e-5)} and b.history(include_refused=True) == []
    b.close()


def test_only_registered_analysts_are_charged(data, capsys):
    """``--analyst NEW --analyst-epsilon E`` gave whoever named a new analyst a fresh
    share.  Now the owner registers shares (``dpfast ledger analysts add``), and an
    unknown analyst is refused before anything is charged."""
    assert main(_query("--analyst", "mallory")) == 2
    err = _one_line_error(capsys.readouterr().err)
    assert "not registered" in err and "dpfast ledger analysts add" in err
    assert _charges() == 0
    assert main(["ledger", "analysts", "add", "b.db", "bob", "--epsilon", "0.5"]) == 0
    capsys.readouterr()
    assert main(_query("--analyst", "bob", "-o", "out.csv")) == 0
    b = dpfast.Budget.from_ledger("b.db")
    assert [c.analyst for c in b.history()] == ["bob"]
    assert b.analysts() == {"alice": (2.0, 1e-5), "bob": (0.5, 1e-5)}
    b.close()
    assert main(["ledger", "analysts", "list", "b.db"]) == 0
    assert "bob  epsilon 0.5" in capsys.readouterr().out


def test_query_refuses_another_privacy_unit_on_the_ledger(data, capsys):
    """Channel 10: a ledger's total is for one privacy unit; the first session binds it
    and a query with another ``--privacy-unit`` is refused, nothing charged."""
    assert main(_query("-o", "a.csv")) == 0
    assert "bound to the privacy unit column 'pid'" in capsys.readouterr().err
    assert main(_query("-o", "b.csv", unit="none")) == 2
    err = _one_line_error(capsys.readouterr().err)
    assert "--privacy-unit none is not the privacy unit" in err
    assert _charges() == 1 and not os.path.exists("b.csv")


def test_query_hints_name_the_options(data, capsys):
    """Issue 41, item 7: hints named Python arguments (``Session(bounds=...)``) and a
    misspelt column was reported as "needs public bounds"."""
    avg = "SELECT dest, AVG(delay) AS d FROM flights GROUP BY dest"
    assert main(_query(sql=avg)) == 2
    err = _one_line_error(capsys.readouterr().err)
    assert "--bounds delay=LO:HI" in err and "Session(" not in err
    assert main(_query(sql=avg.replace("AVG(delay)", "AVG(dleay)"))) == 2
    err = _one_line_error(capsys.readouterr().err)
    assert "unknown column 'dleay'" in err and "bounds" not in err
    assert main(["query", "flights.csv", COUNT, "--privacy-unit", "pid", "--epsilon",
                 "0.5"]) == 2
    err = _one_line_error(capsys.readouterr().err)
    assert "--domain" in err and "--delta" in err and "domains=" not in err
    assert _charges() == 0


def test_table_commands_bind_the_ledger_to_their_unit(data, capsys):
    """Channel 10 for the table commands: ``count --id pid`` binds the ledger to the
    column ``pid``; a release on it with every row as a person (no ``--id``) or another
    unit is refused before anything is charged, and ``query`` must use ``pid``."""
    common = ["count", "flights.csv", "--key", "dest", "--epsilon", "0.5", "--domain",
              "keys.csv", "--ledger", "b.db"]
    assert main([*common, "--id", "pid", "-o", "c1.csv"]) == 0
    capsys.readouterr()
    assert main([*common, "--record-level", "-o", "c2.csv"]) == 2
    assert "no --id" in _one_line_error(capsys.readouterr().err)
    assert main(_query("-o", "q.csv", unit="none")) == 2
    _one_line_error(capsys.readouterr().err)
    assert _charges() == 1 and not os.path.exists("c2.csv")
    assert main(_query("-o", "q.csv")) == 0  # the same unit, named by --privacy-unit
    assert _charges() == 2


def test_a_release_failed_after_its_charge_prints_its_fixed_message(data, capsys,
                                                                     monkeypatch):
    """A release that failed after the charge raises one fixed, data-free error (the
    session's ``ReleaseFailedError``): the CLI prints that message, one line, exit 1."""
    from dpfast._core import errors
    from dpfast.cli import query

    fixed = getattr(errors, "ReleaseFailedError", None)
    if fixed is None:
        pytest.skip("this version has no ReleaseFailedError")

    def fail(args):
        raise fixed("private 'BOS'")

    monkeypatch.setattr(query, "run", fail)
    assert main(_query()) == 1
    err = _one_line_error(capsys.readouterr().err)
    assert str(fixed()) in err and "BOS" not in err
