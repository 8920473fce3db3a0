"""Every advertised public name resolves, and ``import dpfast`` stays light."""

from __future__ import annotations

import subprocess
import sys

import dpfast


def test_all_public_names_resolve() -> None:
    for name in dpfast.__all__:
        assert getattr(dpfast, name) is not None, name
    for sub in ("random", "noise", "mechanisms", "selection", "local", "accounting", "budget",
                "dpsgd", "events"):
        assert getattr(dpfast, sub) is not None


def test_import_is_lazy() -> None:
    code = "import sys, dpfast; print('numba' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
