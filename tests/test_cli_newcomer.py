"""The command line as a newcomer meets it: the README's ``dpfast count`` as written, the
``--ledger`` options against an existing ledger, errors that name the user's paths, output
formats and permissions, ``sum`` / ``mean`` / ``histogram``, TopDown level order, ``plan``.

Most run ``dpfast.cli.main`` in-process (kernels load once); the README command runs as a
real subprocess."""

from __future__ import annotations

import csv
import os
import pathlib
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

from dpfast.cli import main
from tests.helpers import KEY, SUBPROCESS_TIMEOUT_S

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _write_visits(path: pathlib.Path, n: int = 3000) -> dict[str, object]:
    r = np.random.default_rng(1)
    cities = ["Lyon", "Nice", "Paris"]
    truth_stay: dict[str, list[int]] = {c: [] for c in cities}
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["person", "city", "age", "stay"])
        for i in range(n):
            c = cities[int(r.integers(0, 3))]
            stay = int(r.integers(0, 15))
            truth_stay[c].append(stay)
            w.writerow([i, c, ["18-30", "31-50", "51+"][i % 3], stay])
    return {"stay": truth_stay}


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    truth = _write_visits(tmp_path / "visits.csv")
    (tmp_path / "key.bin").write_bytes(KEY)
    (tmp_path / "cities.csv").write_text("city\nLyon\nNice\nParis\n")
    return tmp_path, truth


def _rows(path: pathlib.Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _readme_count_command() -> str:
    """The README's ``dpfast count ... --ledger`` command (continuation lines joined), or
    the docs' if the README points there."""
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")),
                *sorted((ROOT / "docs").rglob("*.rst"))]:
        text = doc.read_text().replace("\\\n", " ")
        for line in text.splitlines():
            line = re.sub(r"\s+", " ", line.strip().lstrip("$ "))
            if line.startswith("dpfast count ") and "--ledger" in line:
                return line
    raise AssertionError("README has no 'dpfast count ... --ledger' command")


@pytest.mark.slow
def test_readme_count_command_runs_as_written(tmp_path) -> None:
    """The README's command, with a visits.csv of its columns, twice: the first run
    creates the ledger (and says so), the second charges it again; sentences, no repr."""
    cmd = shlex.split(_readme_count_command())
    path = tmp_path / cmd[2]
    r = np.random.default_rng(0)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["city", "age", "person"])
        for i in range(3000):
            w.writerow([["Lyon", "Nice", "Paris"][i % 3], ["18-30", "51+"][int(r.integers(2))],
                        int(r.integers(0, 800))])
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "dpfast", *cmd[1:]]
    first = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=SUBPROCESS_TIMEOUT_S)
    assert first.returncode == 0, first.stderr
    assert "created ledger budget.sqlite" in first.stdout
    second = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=SUBPROCESS_TIMEOUT_S)
    assert second.returncode == 0, second.stderr
    assert "created" not in second.stdout
    for out in (first.stdout, second.stdout):
        assert "Remaining(" not in out and "-0.0" not in out and "-0 " not in out
        assert re.search(r"released the count of \d+ keys to counts.csv", out)
        assert "a next release fits if its epsilon is at most" in out
    assert "spent epsilon 2," in second.stdout
    # the README's next commands on that ledger
    for action in ("show", "verify"):
        done = subprocess.run([sys.executable, "-m", "dpfast", "ledger", action,
                               "budget.sqlite"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=SUBPROCESS_TIMEOUT_S)
        assert done.returncode == 0, done.stderr
        assert "-0.0" not in done.stdout and "hash chain verified" in done.stdout


def test_ledger_options_that_disagree_are_refused(data, capsys) -> None:
    tmp, _ = data
    base = ["count", "visits.csv", "--record-level", "--key", "city", "--epsilon", "1",
            "--domain", "cities.csv",
            "--ledger", "b.sqlite", "--seed-key-file", "key.bin"]
    assert main([*base, "--budget-epsilon", "4", "-o", "a.csv"]) == 0
    out = capsys.readouterr().out
    assert "created ledger b.sqlite: epsilon 4, delta 1e-05 (the default" in out
    before = (tmp / "b.sqlite").read_bytes()
    assert main([*base, "--budget-epsilon", "4", "--budget-delta", "1e-6", "-o", "b.csv"]) == 2
    err = capsys.readouterr().err
    assert "--budget-delta 1e-06 but the ledger's delta is 1e-05" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp / "b.csv").exists()
    assert main([*base, "--budget-epsilon", "3", "-o", "b.csv"]) == 2
    assert "--budget-epsilon 3 but the ledger's epsilon is 4" in capsys.readouterr().err
    assert (tmp / "b.sqlite").read_bytes() == before  # nothing charged, nothing recorded
    assert main([*base, "-o", "b.csv"]) == 0  # no --budget-*: the ledger as it is
    assert "spent epsilon 2, delta 0 of (4, 1e-05)" in capsys.readouterr().out


def test_refused_first_release_leaves_no_ledger(data, capsys) -> None:
    tmp, _ = data
    rc = main(["count", "visits.csv", "--record-level",
               "--key", "city", "--epsilon", "1", "--delta", "1e-6",
               "--ledger", "new.sqlite", "--budget-epsilon", "4", "--budget-delta", "0",
               "-o", "c.csv"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "budget refused the release, nothing written (ledger new.sqlite not created)" in err
    assert "delta=-0.0" not in err and "delta=0.0" in err
    assert not any(p.name.startswith("new.sqlite") for p in tmp.iterdir())
    assert not (tmp / "c.csv").exists()


def test_output_errors_name_the_users_path_and_spend_nothing(data, capsys) -> None:
    tmp, _ = data
    rc = main(["count", "visits.csv", "--record-level",
               "--key", "city", "--epsilon", "1", "--domain",
               "cities.csv", "--ledger", "l.sqlite", "--budget-epsilon", "1",
               "-o", "/nonexistent/dir/o.csv"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.strip() == ("dpfast: error: cannot write /nonexistent/dir/o.csv: directory "
                           "/nonexistent/dir does not exist")
    assert not (tmp / "l.sqlite").exists()  # checked before the ledger and the release
    assert main(["count", "visits.csv", "--record-level",
                 "--key", "city", "--epsilon", "1", "--domain",
                 "cities.csv", "-o", "o.xls"]) == 2
    assert ".csv, .parquet or .xlsx" in capsys.readouterr().err


def test_missing_input_is_reported_before_option_checks(data, capsys) -> None:
    for cmd in (["count", "nofile.csv", "--key", "city", "--epsilon", "-1", "-o", "x.csv"],
                ["sum", "nofile.csv", "--value", "v", "--bounds", "1", "0", "--key", "k",
                 "--epsilon", "1", "-o", "x.csv"],
                ["topdown", "nofile.csv", "--level", "a", "--rho", "-1", "-o", "d"]):
        assert main(cmd) == 2
        assert capsys.readouterr().err.strip() == "dpfast: error: input file not found: " \
            "nofile.csv"


def test_bench_check_missing_file_is_one_line(capsys) -> None:
    assert main(["bench", "--check", "nofile.json"]) == 2
    assert capsys.readouterr().err.strip() == \
        "dpfast: error: --check: file not found: nofile.json"


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_outputs_follow_the_umask_ledgers_stay_private(data, capsys, umask: int) -> None:
    tmp, _ = data
    old = os.umask(umask)
    try:
        assert main(["count", "visits.csv", "--record-level",
                     "--key", "city", "--epsilon", "1", "--domain",
                     "cities.csv", "--ledger", "p.sqlite", "--budget-epsilon", "2",
                     "-o", "o.csv"]) == 0
    finally:
        os.umask(old)
    assert (tmp / "o.csv").stat().st_mode & 0o777 == 0o666 & ~umask
    assert (tmp / "p.sqlite").stat().st_mode & 0o077 == 0


def test_excel_output(data, capsys) -> None:
    openpyxl = pytest.importorskip("openpyxl")
    tmp, _ = data
    assert main(["count", "visits.csv", "--record-level",
                 "--key", "city", "--key", "age", "--epsilon", "1",
                 "--delta", "1e-6", "--seed-key-file", "key.bin", "-o", "o.xlsx"]) == 0
    sheet = openpyxl.load_workbook(tmp / "o.xlsx").active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("city", "age", "count", "ci_low", "ci_high")
    assert len(rows) == 10 and all(isinstance(r[2], int) for r in rows[1:])
    assert {r[0] for r in rows[1:]} == {"Lyon", "Nice", "Paris"}


def test_sum_and_mean_commands(data, capsys) -> None:
    tmp, truth = data
    stays = truth["stay"]
    for stat in ("sum", "mean"):
        assert main([stat, "visits.csv", "--value", "stay", "--bounds", "0", "14", "--key",
                     "city", "--id", "person", "--epsilon", "2", "--domain", "cities.csv",
                     "--seed-key-file", "key.bin", "-o", f"{stat}.csv"]) == 0
        out = capsys.readouterr().out
        assert f"released the {stat} of 3 keys to {stat}.csv: 2-DP" in out
        rows = _rows(tmp / f"{stat}.csv")
        assert list(rows[0]) == ["city", "stay", "ci_low", "ci_high"]
        for row in rows:
            want = sum(stays[row["city"]]) if stat == "sum" else np.mean(stays[row["city"]])
            got, lo, hi = (float(row[k]) for k in ("stay", "ci_low", "ci_high"))
            assert lo <= got <= hi
            assert abs(got - want) <= (60 if stat == "sum" else 0.5)
        if stat == "sum":  # integer values and bounds: an exact integer sum
            assert all(float(r["stay"]).is_integer() for r in rows)
    assert main(["sum", "visits.csv", "--record-level",
                 "--value", "city", "--bounds", "0", "1", "--key", "age",
                 "--epsilon", "1", "--delta", "1e-6", "-o", "x.csv"]) == 2
    assert "--value column 'city': row 1 is not a number" in capsys.readouterr().err


def test_histogram_command(data, capsys) -> None:
    tmp, truth = data
    assert main(["histogram", "visits.csv", "--record-level",
                 "--column", "stay", "--bins", "3", "--range", "0",
                 "15", "--epsilon", "1", "--seed-key-file", "key.bin", "-o", "h.csv"]) == 0
    assert "released a histogram of 3 bins to h.csv: 1-DP" in capsys.readouterr().out
    rows = _rows(tmp / "h.csv")
    assert [(float(r["bin_low"]), float(r["bin_high"])) for r in rows] == \
        [(0.0, 5.0), (5.0, 10.0), (10.0, 15.0)]
    allv = np.concatenate([np.asarray(v) for v in truth["stay"].values()])
    want = np.histogram(allv, bins=3, range=(0, 15))[0]
    got = np.array([int(r["count"]) for r in rows])
    assert np.all(np.abs(got - want) <= 15)
    assert main(["histogram", "visits.csv", "--record-level",
                 "--column", "stay", "--range", "1", "0",
                 "--epsilon", "1", "-o", "h.csv"]) == 2


def test_topdown_levels_out_of_order_are_refused(tmp_path, capsys) -> None:
    path = tmp_path / "geo.csv"
    path.write_text("state,county,count\nA,A1,5\nA,A2,3\nB,B1,7\nB,B2,2\nB,B3,0\n")
    rc = main(["topdown", str(path), "--level", "county", "--level", "state", "--rho", "1",
               "-o", str(tmp_path / "out")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--level state is coarser than --level county" in err
    assert "--level state --level county" in err
    assert not (tmp_path / "out").exists()
    assert main(["topdown", str(path), "--level", "state", "--level", "county", "--rho", "1",
                 "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "level_2_county.csv").exists()


def test_plan_is_not_contradictory(capsys) -> None:
    import math

    from dpfast import planning

    assert main(["plan", "--use-case", "healthcare", "--accuracy", "10", "--alpha", "0.05"]) == 0
    lines = capsys.readouterr().out.splitlines()
    shown = float(re.match(r"epsilon needed: (\S+) ", lines[0]).group(1))
    exact = planning.accuracy_to_epsilon(10, 0.05)
    assert shown >= exact and planning.epsilon_to_accuracy(shown, 0.05) <= 10
    assert repr(exact) in lines[1] and "any smaller one gives +-11" in lines[1]
    assert planning.epsilon_to_accuracy(math.nextafter(exact, 0), 0.05) == 11


def test_accounting_messages_name_no_internal_function() -> None:
    from dpfast.accounting import PureDpAccountant, UnsupportedEventError, ZcdpAccountant
    from dpfast.accounting import events as ev

    with pytest.raises(UnsupportedEventError) as info:
        ZcdpAccountant().compose(ev.EpsilonDelta(1.0, 1e-6))
    assert not str(info.value).startswith("zcdp_rho")
    with pytest.raises(UnsupportedEventError) as info:
        PureDpAccountant().compose(ev.Gaussian(1.0))
    assert not str(info.value).startswith("approx_dp")
