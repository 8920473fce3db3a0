"""Every README code block runs as written, on its own, and its test command is what CI runs."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)


def test_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 4  # the records quick start, noise, budget, accounting


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_block_runs_alone(index: int, tmp_path: pathlib.Path,
                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block in a fresh namespace (no imports carried over from an earlier block), in
    an empty directory (files it writes go there)."""
    code = BLOCKS[index]
    if "import pandas" in code:
        pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    line = README[: README.index(code)].count("\n") + 1
    exec(compile(code, f"README.md, block at line {line}", "exec"), {"__name__": "__main__"})


def test_quick_start_comes_first() -> None:
    """The first example a newcomer sees is raw records -> tables.count -> to_pandas()."""
    first = BLOCKS[0]
    assert "pandas" in first and "tables.count" in first and "to_pandas()" in first


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```bash\n(python3 -m venv .*?)\n```", README)
    test_cmd = [c for c in commands if "pytest" in c]
    assert len(test_cmd) == 1
    assert test_cmd[0] in (ROOT / ".ci" / "run").read_text()


def test_fast_subset_marker_is_registered() -> None:
    """The README's fast subset (``-m "not slow"``) names a marker pytest knows."""
    assert '-m "not slow"' in README
    assert "slow:" in (ROOT / "pyproject.toml").read_text()
