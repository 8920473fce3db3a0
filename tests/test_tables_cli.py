"""``dpfast count``: real subprocess calls (CSV in, CSV/Parquet out, ledger, errors)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import KEY, SUBPROCESS_TIMEOUT_S


def cli(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "dpfast", "count", *args], capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S, env=env, cwd=cwd)


@pytest.fixture
def records(tmp_path):
    r = np.random.default_rng(0)
    path = tmp_path / "visits.csv"
    cities = np.array(["Lyon", "Nice", "Paris", "Lille"])
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["person", "city", "band"])
        for i in range(3000):
            w.writerow([f"p{r.integers(0, 600)}", cities[r.integers(0, 3)],
                        ["young", "old"][i % 2]])
        w.writerow(["loner", "Tinytown", "old"])
    key = tmp_path / "key.bin"
    key.write_bytes(KEY)
    return tmp_path, path, key


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.mark.slow
def test_count_private_selection_ledger_and_refusal(records) -> None:
    tmp, path, key = records
    out = tmp / "out.csv"
    ledger = tmp / "budget.sqlite"
    args = [str(path), "--key", "city", "--key", "band", "--id", "person", "--epsilon", "1",
            "--delta", "1e-6", "--max-partitions", "2", "--seed-key-file", str(key),
            "--ledger", str(ledger), "--budget-epsilon", "1.5", "--budget-delta", "1e-5",
            "-o", str(out)]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    rows = _read(out)
    assert list(rows[0]) == ["city", "band", "count", "ci_low", "ci_high"]
    assert {row["city"] for row in rows} == {"Lyon", "Nice", "Paris"}  # Tinytown suppressed
    for row in rows:
        assert int(row["ci_low"]) < int(row["count"]) < int(row["ci_high"])
    assert "released the count of 6 keys" in r.stdout
    # the same ledger again: 1 + 1 > 1.5 -> refused, exit 1, nothing written
    out2 = tmp / "out2.csv"
    args[-1] = str(out2)
    r2 = cli(*args)
    assert r2.returncode == 1 and not out2.exists()
    assert r2.stderr.startswith("dpfast: error: budget refused")
    assert len(r2.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_count_domain_and_parquet(records) -> None:
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    tmp, path, key = records
    dom = tmp / "cities.csv"
    dom.write_text("city\nParis\nLyon\nAtlantis\n")
    out = tmp / "out.parquet"
    r = cli(str(path), "--key", "city", "--record-level", "--epsilon", "2", "--domain", str(dom),
            "--seed-key-file", str(key), "-o", str(out))
    assert r.returncode == 0, r.stderr
    t = pq.read_table(out).to_pydict()
    assert t["city"] == ["Paris", "Lyon", "Atlantis"]
    assert abs(t["count"][2]) < 30  # a noisy zero


@pytest.mark.parametrize("extra,word", [
    (["--epsilon", "-1"], "--epsilon"),
    (["--epsilon", "1"], "--delta"),  # no domain and no delta
    (["--epsilon", "1", "--delta", "1e-6", "--key", "nosuch"], "nosuch"),
    (["--epsilon", "1", "--delta", "1e-6", "--max-partitions", "0"], "--max-partitions"),
    (["--epsilon", "1", "--delta", "1e-6", "--ledger", "new.sqlite"], "--budget-epsilon"),
])
def test_errors_are_one_line_and_write_nothing(records, extra, word) -> None:
    tmp, path, _ = records
    out = tmp / "never.csv"
    r = cli(str(path), "--key", "city", "--record-level", *extra, "-o", str(out), cwd=str(tmp))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert r.stderr.startswith("dpfast: error:") and word in r.stderr
    assert not out.exists()
    assert not any(p.name.startswith(".dpfast-") for p in tmp.iterdir())
