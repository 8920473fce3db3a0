"""Every README code block runs as written, on its own, and its test command is what CI runs."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"^```python\n(.*?)^```", README, re.S | re.M)


def test_readme_has_python_blocks() -> None:
    assert len(BLOCKS) >= 5  # quick starts (records, SQL), budget, noise, accounting


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


def _pyproject_extras() -> dict[str, list[str]]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["project"]["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0].strip().lower() for r in requirements}


def test_readme_extras_list_matches_pyproject() -> None:
    """Issue 41 item 2: the README's extras list omitted ``session`` (which it told users to
    install).  The list (from "Extras:" to the end of its paragraph) names exactly the
    extras of pyproject.toml, and so does the table of docs/getting-started.md."""
    extras = set(_pyproject_extras())
    start = README.index("Extras:")
    paragraph = README[start: README.index("\n\n", start)]
    assert set(re.findall(r"`([a-z][a-z0-9_-]*)`", paragraph)) == extras
    guide = (ROOT / "docs" / "getting-started.md").read_text()
    assert set(re.findall(r"^\| `([a-z][a-z0-9_-]*)` \|", guide, re.M)) == extras


def test_main_job_command_installs_the_light_demo_extra() -> None:
    """The README's main-job command installs the ``demo`` extra (what ``dpfast demo``
    imports: DuckDB and sqlglot for its Session, pandas for the quick starts), not the
    test stack; the test command keeps ``[test]``."""
    commands = re.findall(r"```bash\n(python3 -m venv .*?)\n```", README)
    main_job = [c for c in commands if "dpfast demo" in c]
    assert len(main_job) == 1 and "'.[demo]'" in main_job[0]
    assert [c for c in commands if "pytest" in c][0].count("'.[test]'") == 1
    extras = _pyproject_extras()
    demo = _names(extras["demo"])
    assert {"duckdb", "sqlglot", "pandas"} <= demo
    heavy = {"torch", "opacus", "apache-beam", "sphinx", "mypy", "dask", "pyarrow"}
    assert not demo & heavy
    assert {"torch", "apache-beam", "sphinx"} <= _names(extras["test"])


def test_readme_is_a_short_users_guide() -> None:
    """Issue 41 item 9: at most 200 lines, a user's guide in order (install, the two
    commands, three quick starts, where to read on); the benchmark and peer tables live in
    docs/benchmarks.md, linked."""
    assert README.count("\n") <= 200
    heads = re.findall(r"^## (.+)$", README, re.M)
    assert heads[:2] == ["Install", "The two commands"]
    assert [h for h in heads if h.startswith("Quick start")] == heads[2:5]
    assert heads[-1] == "Where to read on"
    assert not re.search(r"^\|", README, re.M)  # no tables of figures
    assert "(docs/benchmarks.md)" in README
    bench = (ROOT / "docs" / "benchmarks.md").read_text()
    for figure, command in [("5.20–5.60× / 4.56–4.91× / 5.02–6.13× / 3.61–3.84×",
                             "bench/profile_samplers.py"),
                            ("12.7× (7.1–15.9)", "bench/tables_ab.py --rounds 11"),
                            ("| **dpfast** | **54.2**", "python -m bench.peers.compare"),
                            ("8.5× / 79–96×", "bench/bench_compat.py")]:
        assert figure in bench and command in bench, figure
