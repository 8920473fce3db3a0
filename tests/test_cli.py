"""The command line: conventions (help, version, exit codes, one-line errors) and the demo."""

from __future__ import annotations

import subprocess
import sys

from dpfast.cli import demo as demo_cmd
from tests.helpers import SUBPROCESS_TIMEOUT_S


def dpfast_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dpfast", *args], capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S)


def test_demo_small() -> None:
    lines: list[str] = []
    demo_cmd.demo(cells=20_000, people=5_000, out=lines.append)
    text = "\n".join(lines)
    for needle in ("discrete Laplace", "discrete Gaussian", "Laplace (2^k grid)",
                   "Gaussian (2^k grid)", "cells/s", "privacy spent", "refused",
                   "clinic visits", "measured vs truth", "CI coverage", "x numpy",
                   "codes published", "result cache", "the same numbers",
                   "no new charge", "next query (epsilon", "usage report",
                   "ana", "ben", "utilization", "cache hit"):
        assert needle in text
    assert "ERROR" not in text


def test_no_command_prints_help() -> None:
    r = dpfast_cli()
    assert r.returncode == 0
    assert "usage: dpfast" in r.stdout and "demo" in r.stdout
    assert "``" not in r.stdout


def test_version() -> None:
    import dpfast

    r = dpfast_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"dpfast {dpfast.__version__}"


def test_every_option_has_help() -> None:
    from dpfast.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    for name, p in sub.choices.items():
        for action in p._actions:
            if action.dest == "help":
                continue
            assert action.help, f"dpfast {name} {action.option_strings} has no help text"


def test_bad_values_are_one_line_errors() -> None:
    for args in (["demo", "--cells", "-1"], ["demo", "--epsilon", "-1"],
                 ["demo", "--delta", "1.5"]):
        r = dpfast_cli(*args)
        assert r.returncode == 2, args
        assert "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert r.stderr.startswith("dpfast: error:")
