"""The type check of the public API: mypy on the typed modules and the facade, clean."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from tests.helpers import SUBPROCESS_TIMEOUT_S

ROOT = pathlib.Path(__file__).resolve().parents[1]

# modules whose bodies are checked (others are followed silently; add yours when clean)
TYPED_MODULES = [
    "dpfast/__init__.py",
    "dpfast/_core",
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "dpfast" / "accounting").glob("*.py")),
    "dpfast/accounting/rdp",
    "dpfast/accounting/pld",
    "dpfast/mechanisms",
    "dpfast/budget",
    "dpfast/selection",
    "dpfast/local",
    "dpfast/tables",
    "dpfast/dask",
    "dpfast/session",
    "dpfast/noise",
    "dpfast/planning.py",
    "dpfast/cli",
    "dpfast/random",
    "dpfast/perf",
    "dpfast/testing",
    "dpfast/compat",
    "dpfast/guidelines.py",
    "dpfast/_native.py",
    "dpfast/_parallel.py",
    "tests/typing/facade.py",
]


def _mypy(modules: list[str]) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy")
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
           "--cache-dir", str(ROOT / ".mypy_cache"), *modules]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S)


@pytest.mark.slow
def test_mypy_clean() -> None:
    # under numpy 2.4 and 2.5 stubs alike (2.5 rejects argument-less ndarray.min()/max()
    # on arrays of known dtype: the code uses np.min(x) / np.max(x))
    res = _mypy(TYPED_MODULES)
    assert res.returncode == 0, res.stdout + res.stderr


def test_slow_tests_run_by_default() -> None:
    """``slow`` marks long tests so they can be deselected (``-m "not slow"``); a plain
    ``pytest -q`` (and CI) runs them."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert any(m.startswith("slow:") for m in cfg["markers"])
    assert "slow" not in cfg.get("addopts", "")
