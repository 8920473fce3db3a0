"""The demo (main job) runs end to end on a small histogram and reports what it did."""

from __future__ import annotations

import pytest

from dpfast import cli


def test_demo_small() -> None:
    lines: list[str] = []
    cli.demo(cells=20_000, out=lines.append)
    text = "\n".join(lines)
    for needle in ("discrete Laplace", "discrete Gaussian", "Laplace (2^k grid)",
                   "Gaussian (2^k grid)", "cells/s", "privacy spent", "refused"):
        assert needle in text
    assert "ERROR" not in text


def test_main_rejects_bad_cells() -> None:
    with pytest.raises(SystemExit):
        cli.main(["demo", "--cells", "0"])
