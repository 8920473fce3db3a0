"""Every script in examples/ runs as documented (small sizes where the script allows it)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from tests.helpers import SUBPROCESS_TIMEOUT_S

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

# extra arguments that keep an example short; the expected text proves it did its job
ARGS: dict[str, tuple[list[str], str]] = {
    "histogram_release.py": (["--people", "5000"], "95% of cells within"),
    "budget_ledger.py": ([], "refused before any noise was drawn"),
    "dpsgd_logistic.py": ([], "non-private"),
    "dpsgd_opacus.py": (["--epochs", "1"], "every DP run spent at most its target"),
    "table_release.py": (["--customers", "3000"], "measured vs truth"),
    "ldp_pipeline.py": (["--clients", "20000"], "refused again after a restart"),
}


def test_every_example_is_covered() -> None:
    assert {p.name for p in EXAMPLES} <= set(ARGS), "add the new example to ARGS"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(path: pathlib.Path, tmp_path: pathlib.Path) -> None:
    args, needle = ARGS[path.name]
    if path.name in ("dpsgd_logistic.py", "dpsgd_opacus.py"):
        pytest.importorskip("sklearn")
    if path.name == "dpsgd_opacus.py":
        pytest.importorskip("torch")
        pytest.importorskip("opacus")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True,
                       cwd=tmp_path, env=env, timeout=SUBPROCESS_TIMEOUT_S)
    assert r.returncode == 0, r.stderr[-2000:]
    assert needle in r.stdout
