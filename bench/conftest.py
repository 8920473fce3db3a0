"""Benchmarks report ratios against baselines measured in the same run.

Run:  .venv/bin/python -m pytest bench/ --benchmark-only
Each benchmark stores its ratio in ``benchmark.extra_info`` and the session prints a
table of ratios at the end.
"""

from __future__ import annotations

import pytest

RATIOS: dict[str, str] = {}


@pytest.fixture
def report():
    def _report(name: str, text: str) -> None:
        RATIOS[name] = text

    return _report


def pytest_terminal_summary(terminalreporter) -> None:
    if RATIOS:
        terminalreporter.section("dpfast ratios (same run)")
        for name, text in RATIOS.items():
            terminalreporter.write_line(f"{name}: {text}")
