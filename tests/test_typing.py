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


def _bare_any(path: pathlib.Path) -> int:
    """``Any`` in the annotations of ``path`` (parameters, returns, annotated names)."""
    import ast

    def count(node: ast.AST | None) -> int:
        if node is None:
            return 0
        return sum(1 for n in ast.walk(node)
                   if (isinstance(n, ast.Name) and n.id == "Any")
                   or (isinstance(n, ast.Attribute) and n.attr == "Any")
                   or (isinstance(n, ast.Constant) and isinstance(n.value, str)
                       and n.value.strip() == "Any"))

    total = 0
    for n in ast.walk(ast.parse(path.read_text())):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = n.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                total += 0 if arg is None else count(arg.annotation)
            total += count(n.returns)
        elif isinstance(n, ast.AnnAssign):
            total += count(n.annotation)
    return total


def test_the_release_layer_is_typed() -> None:
    """Issue 37: bare ``Any`` in the annotations of tables/, dask/ and session/ stays well
    below 150 (typed Protocols for sources, backends and chargers, a typed spec); it was
    702 before the one pipeline."""
    root = pathlib.Path(__file__).resolve().parents[1] / "dpfast"
    counts = {pkg: sum(_bare_any(p) for p in (root / pkg).rglob("*.py"))
              for pkg in ("tables", "dask", "session")}
    assert sum(counts.values()) < 150, counts
