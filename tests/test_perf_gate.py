"""The performance-regression gate (``dpfast bench``): it measures, writes JSON, and
``--check`` exits 1 exactly when a ratio falls more than its tolerance below the baseline.

No timing is asserted here: the live runs compare against baselines far above or far below
any plausible ratio, so the verdicts do not depend on the machine's load.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpfast.perf import ENTRIES, Result, check, host_info

ONLY = "random_raw,keystream"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dpfast", "bench", *args],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict:
    path = tmp_path_factory.mktemp("bench") / "results.json"
    r = cli("--quick", "--only", ONLY, "--json", str(path))
    assert r.returncode == 0, r.stderr
    assert "random_raw" in r.stdout and "keystream" in r.stdout
    data = json.loads(path.read_text())
    data["_path"] = str(path)
    return data


def _scaled(data: dict, factor: float, tmp_path, tolerance: float | None = None) -> str:
    base = json.loads(json.dumps({k: v for k, v in data.items() if k != "_path"}))
    for e in base["entries"].values():
        e["ratio"] = e["ratio"] * factor
        if tolerance is not None:
            e["tolerance"] = tolerance
    path = tmp_path / f"baseline-{factor}.json"
    path.write_text(json.dumps(base))
    return str(path)


def test_results_json_shape(measured: dict) -> None:
    assert set(measured["entries"]) == set(ONLY.split(","))
    for e in measured["entries"].values():
        assert e["ratio"] > 0 and len(e["ratios"]) >= 5
    assert measured["host"]["chacha20_path"] in (1, 2, 3)


def test_true_baseline_passes(measured: dict, tmp_path) -> None:
    r = cli("--results", measured["_path"], "--check", _scaled(measured, 1.0, tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr


def test_inflated_baseline_fails(measured: dict, tmp_path) -> None:
    r = cli("--results", measured["_path"], "--check", _scaled(measured, 1.5, tmp_path))
    assert r.returncode == 1
    assert "REGRESSION" in r.stdout


def test_live_check_against_far_baselines(measured: dict, tmp_path) -> None:
    low = cli("--quick", "--only", ONLY, "--check", _scaled(measured, 0.05, tmp_path))
    assert low.returncode == 0, low.stdout + low.stderr
    high = cli("--quick", "--only", ONLY, "--check", _scaled(measured, 50.0, tmp_path))
    assert high.returncode == 1 and "REGRESSION" in high.stdout


def test_per_entry_tolerance_wins() -> None:
    res = [Result("a", "", "", 0.7), Result("b", "", "", 0.7), Result("c", "", "", None)]
    base = {"host": host_info(),
            "entries": {"a": {"ratio": 1.0, "tolerance": 0.35}, "b": {"ratio": 1.0},
                        "c": {"ratio": 5.0}}}
    verdicts, warnings = check(res, base, tolerance=0.25)
    ok = {v.name: v.ok for v in verdicts}
    assert ok == {"a": True, "b": False, "c": True}  # c was skipped: never fails
    assert warnings == []


def test_foreign_host_is_reported() -> None:
    base = {"host": {"simd_flags": ["sse2"], "chacha20_path": 1, "cores": 999},
            "entries": {"a": {"ratio": 1.0}}}
    _, warnings = check([Result("a", "", "", 1.0)], base, tolerance=0.25)
    assert any("cores" in w for w in warnings)


def test_bad_options_are_one_line_errors(tmp_path) -> None:
    for args in (["--tolerance", "1.5"], ["--only", "nope"], ["--rounds", "2"],
                 ["--check", str(tmp_path / "missing.json")]):
        r = cli(*args)
        assert r.returncode == 2, args
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


def test_entries_are_unique_and_listed() -> None:
    names = [e.name for e in ENTRIES]
    assert len(names) == len(set(names))
    r = cli("--list")
    assert r.returncode == 0 and all(n in r.stdout for n in names)
