"""Every advertised public name resolves, ``hasattr`` never raises, ``import dpfast`` stays
light, and the lazy namespace is visible to type checkers."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import dpfast
import dpfast.accounting


def test_all_public_names_resolve() -> None:
    for name in dpfast.__all__:
        assert getattr(dpfast, name) is not None, name
    for sub in sorted(set(dpfast._SUBMODULES) - {"dask"}):  # dask: an optional dependency
        assert getattr(dpfast, sub) is not None
    assert dpfast.PldAccountant is dpfast.accounting.PldAccountant
    assert dpfast.compat.__name__ == "dpfast.compat"


def test_all_is_the_lazy_map() -> None:
    assert sorted(dpfast.__all__) == sorted([*dpfast._PUBLIC, "__version__"])


def test_accounting_all_names_its_lazy_map() -> None:
    assert set(dpfast.accounting._PUBLIC) <= set(dpfast.accounting.__all__)
    for name in dpfast.accounting.__all__:
        assert getattr(dpfast.accounting, name) is not None, name


def test_every_listed_submodule_exists() -> None:
    for name, module in dpfast._SUBMODULES.items():
        assert importlib.util.find_spec(module) is not None, f"_SUBMODULES lists {name}"


def test_hasattr_never_raises() -> None:
    # issue 17 item 15: a listed name whose module is missing raised ModuleNotFoundError
    for name in [*dir(dpfast), "histogram", "no_such_name", "_private", "dask"]:
        hasattr(dpfast, name)  # must return, never raise
        getattr(dpfast, name, None)
    assert not hasattr(dpfast, "no_such_name")


def test_missing_module_is_an_attribute_error(monkeypatch) -> None:
    monkeypatch.setitem(dpfast._PUBLIC, "phantom", "dpfast._no_such_module")
    assert not hasattr(dpfast, "phantom")


def test_type_checking_block_names_every_public_name() -> None:
    tree = ast.parse(pathlib.Path(dpfast.__file__).read_text())
    seen: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    seen.update(a.asname or a.name for a in stmt.names)
    assert set(dpfast._PUBLIC) <= seen, sorted(set(dpfast._PUBLIC) - seen)
    assert (pathlib.Path(dpfast.__file__).parent / "py.typed").exists()


def test_accounting_exports_events_and_errors() -> None:
    ev = dpfast.accounting.events
    for cls in ev.EVENT_TYPES:
        assert getattr(dpfast.accounting, cls.__name__) is cls
    assert dpfast.accounting.UnsupportedEventError is dpfast.UnsupportedEventError
    assert issubclass(dpfast.UnsupportedEventError, ValueError)
    assert dpfast.accounting.Accountant is dpfast.Accountant


def test_import_is_lazy() -> None:
    code = "import sys, dpfast; print('numba' in sys.modules, 'scipy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def test_events_import_is_light() -> None:
    # mechanisms import the events; that must not pull numpy, scipy or numba
    code = ("import sys, dpfast.accounting.events; "
            "print(*[m in sys.modules for m in ('numpy', 'scipy', 'numba', 'fractions')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False", "False", "False"]
