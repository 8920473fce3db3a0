"""The README's quick start runs as written, and its test command is what CI runs."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_quick_start_runs() -> None:
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## Quick start\n\n```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README quick start", "exec"), {})


def test_ci_runs_the_readme_test_command() -> None:
    text = (ROOT / "README.md").read_text()
    commands = re.findall(r"```bash\n(python3 -m venv .*?)\n```", text)
    test_cmd = [c for c in commands if "pytest" in c]
    assert len(test_cmd) == 1
    assert test_cmd[0] in (ROOT / ".ci" / "run").read_text()
