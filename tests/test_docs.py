"""The documentation site (``docs/``) builds without warnings and no page can drift.

* ``sphinx-build -W -b html`` into a temporary directory (the whole site: user guide, API
  reference from the docstrings, design, changelog);
* every Python example of every page runs, each block alone (fresh namespace, empty working
  directory): ```` ```python ```` blocks are executed, ```` ```pycon ```` blocks are doctests
  whose printed outputs are checked;
* the ``>>>`` examples of dpfast's docstrings (rendered in the API reference) pass;
* every ``dpfast ...`` command line of the pages and the README parses with the real parser;
* the reference lists every public name and every public subpackage.
"""

from __future__ import annotations

import doctest
import importlib
import os
import pathlib
import re
import shlex
import subprocess
import sys
from typing import Any

import pytest

import dpfast
from tests.helpers import SUBPROCESS_TIMEOUT_S

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
FENCE = re.compile(r"^```(python|pycon|bash|yaml)\n(.*?)^```", re.S | re.M)
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# a block importing one of these is skipped where the optional dependency is missing
OPTIONAL = {"pandas": "pandas", "dask": "dask.dataframe", "distributed": "distributed",
            "diffprivlib": "diffprivlib", "pipeline_dp": "pipeline_dp",
            "dpfast.compat.pipeline_dp": "pipeline_dp", "sklearn": "sklearn",
            "apache_beam": "apache_beam"}


def _blocks(path: pathlib.Path, kinds: tuple[str, ...]) -> list[tuple[str, int, str]]:
    text = path.read_text()
    return [(m.group(1), text[: m.start()].count("\n") + 2, m.group(2))
            for m in FENCE.finditer(text) if m.group(1) in kinds]


def _examples() -> list[Any]:
    params = []
    for page in PAGES:
        for kind, line, code in _blocks(page, ("python", "pycon")):
            marks = [pytest.mark.slow] if "LocalCluster" in code else []  # starts 2 workers
            name = f"{page.relative_to(DOCS)}:{line}"
            params.append(pytest.param(kind, name, code, id=name, marks=marks))
    return params


def _skip_missing(code: str) -> None:
    for name, module in OPTIONAL.items():
        if re.search(rf"^(>>> )?(import|from) {re.escape(name)}\b", code, re.M):
            pytest.importorskip(module)


def _leave_no_backend_installed() -> None:
    """A page that patches diffprivlib / PipelineDP must undo it (the compat page shows how)."""
    for name in ("dpfast.compat.diffprivlib", "dpfast.compat.pipeline_dp"):
        module = sys.modules.get(name)
        if module is not None and module.is_installed():
            while module.is_installed():
                module.uninstall()
            pytest.fail(f"the example left {name} installed")


def test_pages_have_examples() -> None:
    assert len(_examples()) >= 15
    names = {p.name for p in PAGES}
    assert {"index.md", "getting-started.md", "security.md", "benchmarks.md", "cli.md",
            "integrations.md", "design.md", "changelog.md"} <= names


@pytest.mark.parametrize(("kind", "name", "code"), _examples())
def test_page_example_runs_alone(kind: str, name: str, code: str, tmp_path: pathlib.Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _skip_missing(code)
    monkeypatch.chdir(tmp_path)  # files an example writes (ledgers, ...) go there
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        if kind == "python":
            exec(compile(code, f"docs/{name}", "exec"), namespace)
        else:
            test = doctest.DocTestParser().get_doctest(code, namespace, name, f"docs/{name}", 0)
            out: list[str] = []
            runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
            result = runner.run(test, out=out.append)
            assert result.failed == 0, "".join(out)
    finally:
        ledger = namespace.get("budget")
        if isinstance(ledger, dpfast.Budget):
            ledger.close()
        _leave_no_backend_installed()


def _docstring_modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "dpfast").rglob("*.py")):
        if ">>> " in path.read_text():
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("modname", _docstring_modules())
def test_docstring_examples(modname: str) -> None:
    module = importlib.import_module(modname)
    tests = [t for t in doctest.DocTestFinder().find(module, modname) if t.examples]
    assert tests, f"{modname} has '>>> ' but no doctest was found"
    for test in tests:
        out: list[str] = []
        result = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS).run(test, out=out.append)
        assert result.failed == 0, "".join(out)


def _command_lines() -> list[Any]:
    params = []
    for path in [*PAGES, ROOT / "README.md"]:
        for _kind, line, code in _blocks(path, ("bash", "yaml")):
            lines = code.split("\n")
            for i, text in enumerate(lines):
                if i and lines[i - 1].endswith("\\"):
                    continue  # part of the command line above
                j = i
                while lines[j].endswith("\\") and j + 1 < len(lines):
                    j += 1
                    text = text[:-1] + " " + lines[j]
                text = text.strip().removeprefix("- run:").strip()
                for part in text.split("&&"):
                    argv = shlex.split(part, comments=True)
                    if argv[:1] == ["dpfast"]:
                        argv = argv[1:]
                    elif "-m" in argv and argv[argv.index("-m") + 1:][:1] == ["dpfast"]:
                        argv = argv[argv.index("-m") + 2:]
                    else:
                        continue
                    name = f"{path.relative_to(ROOT)}:{line + i}"
                    params.append(pytest.param(argv, id=f"{name}:{' '.join(argv[:1])}"))
    return params


def test_pages_have_command_lines() -> None:
    commands = {p.values[0][0] for p in _command_lines()}
    assert {"demo", "count", "topdown", "plan", "ledger", "epsilon", "bench"} <= commands


@pytest.mark.parametrize("argv", _command_lines())
def test_command_line_parses(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Every documented command names a real command and real options (nothing is run)."""
    from dpfast.cli import build_parser

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        pytest.fail(f"dpfast {' '.join(argv)}: {capsys.readouterr().err.strip()} ({exc})")
    assert args.cmd == argv[0]


def test_reference_lists_every_public_name() -> None:
    text = (DOCS / "api" / "dpfast.rst").read_text()
    listed = set(re.findall(r"^   (\w+(?:\.\w+)*)\.(\w+)$", text, re.M))
    listed |= set(re.findall(r"^\.\. py:data:: dpfast\.(\w+(?:\.\w+)*)\.(\w+)$", text, re.M))
    assert {name for _, name in listed} == set(dpfast.__all__) - {"__version__"}
    for module, name in listed:  # each under the module it is loaded from
        assert f"dpfast.{module}" == dpfast._PUBLIC[name], name


def test_reference_has_every_subpackage() -> None:
    text = "".join(p.read_text() for p in (DOCS / "api").glob("*.rst"))
    documented = set(re.findall(r"^\.\. automodule:: (\S+)$", text, re.M))
    for module in dpfast._SUBMODULES.values():
        assert module in documented, f"docs/api: add a page (or a section) for {module}"


@pytest.mark.slow
def test_site_builds_without_warnings(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
                       capture_output=True, text=True, env=env, timeout=SUBPROCESS_TIMEOUT_S)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    html = tmp_path / "html"
    for page in ["index", "getting-started", "security", "api/tables", "design", "changelog"]:
        assert (html / f"{page}.html").stat().st_size > 2000, page
    assert "Privacy" in (html / "api" / "noise.html").read_text()  # the docstrings' sections


GROUPED = ("tables", "session", "budget", "local")  # pages grouped by task, not by kind


@pytest.mark.parametrize("page", GROUPED)
def test_grouped_reference_pages_list_every_public_name(page: str) -> None:
    """Issue 41 item 9: the reference of ``dpfast.tables`` listed classes first
    (``tables.count`` was entry 83 of 95).  The grouped pages have a contents list and one
    directive per public name, each name once; a name added to the module must be placed
    in a group of its page."""
    from dpfast.tables.facade import expand_reference  # the registry's generated entries

    text = expand_reference((DOCS / "api" / f"{page}.rst").read_text())
    assert ".. contents::" in text
    listed = re.findall(
        rf"^\.\. (?:autofunction|autoclass|py:data):: dpfast\.{page}\.(\w+)$", text, re.M)
    module = importlib.import_module(f"dpfast.{page}")
    assert len(listed) == len(set(listed))
    missing = sorted(set(module.__all__) - set(listed))
    assert not missing, f"docs/api/{page}.rst: add {missing} to a group"
    assert set(listed) <= set(module.__all__)


def test_reference_puts_the_release_functions_first() -> None:
    """The tables page opens with the release functions (count first), the reference's
    index with a by-task contents table and the tables page first in its toctree."""
    from dpfast.tables.facade import expand_reference  # the registry's generated entries

    tables = expand_reference((DOCS / "api" / "tables.rst").read_text())
    first = re.search(r"^\.\. auto(function|class|data):: dpfast\.tables\.(\w+)$", tables, re.M)
    assert first is not None and first.groups() == ("function", "count")
    index = (DOCS / "api" / "index.md").read_text()
    assert "## Contents, by task" in index
    toctree = index[index.index("```{toctree}"):]
    assert [line for line in toctree.split("\n")[3:] if line][0] == "tables"


def test_local_pipeline_page_has_runnable_code() -> None:
    """Issue 41 item 9: docs/local_pipeline.md had no code.  Its Python blocks (run by
    test_page_example_runs_alone) go from clients to estimates and the monitor."""
    code = "\n".join(c for _, _, c in _blocks(DOCS / "local_pipeline.md", ("python",)))
    for call in ("ClientPool(", "Aggregator(", ".estimate(", "monitor(", "Client(",
                 "BudgetExhaustedError", ".merge("):
        assert call in code, call
