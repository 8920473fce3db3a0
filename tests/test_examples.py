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


# --------------------------------------------------------------- docs/cli.md, as written

DATA = ROOT / "examples" / "data"
CLI_PAGE = ROOT / "docs" / "cli.md"
#: command lines of docs/cli.md not run here, and why (each is run elsewhere)
NOT_RUN = {
    "dpfast demo": "the full-size main job (tests/test_cli.py runs the demo; the smaller "
                   "line below it runs here)",
    "dpfast bench": "a timing gate (its verdicts follow the machine's load; "
                    "tests/test_perf_gate.py checks it against far baselines)",
    "dpfast warmup": "compiles every kernel family, minutes on a cold cache (the --only line "
                     "below it runs here; tests/test_coldstart.py checks what warmup covers)",
    "dpfast serve": "the HTTP service on examples/serve/config.toml (tests/test_serve.py "
                    "runs serve, serve check and serve token against a running server)",
}
#: optional modules a command needs (skipped without them, as a user without the extra)
NEEDS = {".parquet": "pyarrow", "query": "duckdb", "plot": "matplotlib", ".png": "matplotlib"}


def _cli_page_commands() -> list[str]:
    """The ``dpfast ...`` lines of docs/cli.md's bash blocks, continuation lines joined,
    comments dropped, in page order."""
    import re
    import shlex

    text = CLI_PAGE.read_text()
    out = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv[:1] == ["dpfast"]:
                out.append(shlex.join(argv))
    return out


def test_cli_data_files_are_shipped() -> None:
    """The files docs/cli.md's commands read exist under examples/data/ (issue 41 item 9:
    visits.csv, cities.csv, blocks.csv and flights.parquet existed nowhere)."""
    import shlex

    named = {arg for cmd in _cli_page_commands() for arg in shlex.split(cmd)
             if arg.endswith((".csv", ".parquet", ".bin")) and not arg.startswith("-")}
    written = {arg for cmd in _cli_page_commands()
               for flag, arg in zip(shlex.split(cmd), shlex.split(cmd)[1:])
               if flag in ("-o", "--output")}
    inputs = named - written
    assert {"visits.csv", "cities.csv", "blocks.csv", "flights.parquet"} <= inputs
    for name in inputs:
        assert (DATA / name).is_file(), f"examples/data/{name} is missing"


#: what the parent of the forked command processes imports once (each ``python -m dpfast``
#: would import these itself): dpfast's CLI and the libraries its commands load
PRELOAD = ["dpfast", "dpfast.cli", "dpfast.tables", "dpfast.budget", "pandas", "pyarrow.parquet",
           "duckdb", "matplotlib.pyplot"]


@pytest.mark.slow
def test_cli_page_commands_run_as_written(tmp_path: pathlib.Path) -> None:
    """Every command line of docs/cli.md, exactly as written, in page order (a ledger a
    command creates is the one a later ``dpfast ledger`` reads), in a directory holding the
    files of examples/data/: each exits 0 (NOT_RUN says which are run elsewhere).

    Each command is a process of its own, run as ``python -m dpfast ARGS`` runs it: the
    first one a fresh interpreter, the others children forked from one parent that
    imported dpfast and the libraries once (tests/forkrun.py; the commands' arguments,
    directory, environment and exit status are the same, the interpreter start is paid
    once)."""
    import importlib.util
    import shlex
    import shutil

    from tests.forkrun import run_forked

    for f in DATA.iterdir():
        if f.suffix in (".csv", ".parquet", ".bin"):
            shutil.copy(f, tmp_path / f.name)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    commands = _cli_page_commands()
    assert len(commands) >= 15
    todo = []
    for cmd in commands:
        if cmd in ("dpfast demo", "dpfast warmup") or cmd.startswith(("dpfast bench ",
                                                                      "dpfast serve ")):
            continue
        if any(needle in cmd and importlib.util.find_spec(mod) is None
               for needle, mod in NEEDS.items()):
            continue
        todo.append(cmd)
    assert len(todo) >= 12
    first = subprocess.run([sys.executable, "-m", "dpfast", *shlex.split(todo[0])[1:]],
                           capture_output=True, text=True, cwd=tmp_path, env=env,
                           timeout=SUBPROCESS_TIMEOUT_S)
    done = [{"returncode": first.returncode, "stderr": first.stderr}]
    done += run_forked([{"module": "dpfast", "args": shlex.split(cmd)[1:]} for cmd in todo[1:]],
                       preload=[m for m in PRELOAD if importlib.util.find_spec(m.split(".")[0])],
                       env=env, cwd=str(tmp_path), timeout=SUBPROCESS_TIMEOUT_S)
    failed = [f"{cmd}\n  exit {r['returncode']}: {r['stderr'].strip()[-500:]}"
              for cmd, r in zip(todo, done, strict=True) if r["returncode"] != 0]
    assert not failed, "\n".join(failed)
