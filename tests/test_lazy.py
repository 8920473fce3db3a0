"""dpfast._core.lazy.attach: the one lazy-export helper of the package ``__init__`` files
(issue 37: five hand-written ``__getattr__`` tables become one helper)."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

import dpfast
from dpfast._core.lazy import attach

ROOT = pathlib.Path(dpfast.__file__).parent

# package __init__ files that still hand-write their __getattr__ (issue 37: none left, the
# facades of the registry use attach's generated=); may only shrink: a file listed here
# that uses attach fails, so does a new one
HAND_WRITTEN: set[str] = set()


@pytest.fixture
def pkg(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A throwaway package ``lazypkg`` whose __init__ uses attach (its modules record that
    they were imported)."""
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "__init__.py").write_text(textwrap.dedent("""
        from dpfast._core.lazy import attach
        NAMES = {"value": ".mod", "other": "lazypkg.mod", "gone": ".no_such_module",
                 "broken": ".broken"}
        SUBS = {"sub": ".mod", "alias": "lazypkg.deep.inner"}
        __getattr__, __dir__, __all__ = attach(__name__, NAMES, SUBS)
    """))
    (root / "mod.py").write_text("import sys\nsys.lazypkg_loaded = True\nvalue = 1\nother = 2\n")
    (root / "broken.py").write_text("import no_such_dependency_of_lazypkg\nbroken = 0\n")
    (root / "deep").mkdir()
    (root / "deep" / "__init__.py").write_text("")
    (root / "deep" / "inner.py").write_text("x = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delattr(sys, "lazypkg_loaded", raising=False)
    yield "lazypkg"
    for name in [m for m in sys.modules if m == "lazypkg" or m.startswith("lazypkg.")]:
        del sys.modules[name]


def test_names_load_on_first_use_and_are_stored(pkg: str) -> None:
    import importlib

    m = importlib.import_module(pkg)
    assert not hasattr(sys, "lazypkg_loaded")  # nothing imported with the package
    assert m.__all__ == ["broken", "gone", "other", "value"]
    assert {"value", "other", "sub", "alias"} <= set(dir(m))
    assert m.value == 1 and m.other == 2 and sys.lazypkg_loaded
    assert vars(m)["value"] == 1  # stored: __getattr__ runs once per name
    assert m.sub is sys.modules["lazypkg.mod"]
    assert m.alias.x == 3 and m.alias is sys.modules["lazypkg.deep.inner"]


def test_unknown_and_missing_names_are_attribute_errors(pkg: str) -> None:
    import importlib

    m = importlib.import_module(pkg)
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'nope'"):
        m.nope  # noqa: B018
    assert not hasattr(m, "gone")  # its module is missing: never a ModuleNotFoundError
    assert getattr(m, "gone", None) is None
    # a module that is there but whose own import fails shows its real error
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_of_lazypkg"):
        m.broken  # noqa: B018


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="package"):
        attach("", {})
    with pytest.raises(ValueError, match="both list"):
        attach("x", {"a": ".m"}, {"a": ".m"})


def test_generated_names(pkg: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``attach(..., generated=)`` (the facades of the statistic registry, issue 37: the
    one helper instead of two hand-written ``__getattr__``): a generated name is made
    each time it is asked for (never stored: a statistic registered or removed later is
    seen), is in ``__all__`` and ``dir()``; a listed name wins; a submodule's name and a
    private name never run ``generated``."""
    import importlib

    m = importlib.import_module(pkg)
    made: dict[str, object] = {"made": lambda: 41, "value": lambda: "not me",
                               "mod": lambda: "not me", "_private": lambda: "not me"}
    asked: list[int] = []

    def generated() -> dict[str, object]:
        asked.append(1)
        return made

    ga, di, _ = attach(pkg, {"value": ".mod"}, generated=generated)  # type: ignore[arg-type]
    monkeypatch.setattr(m, "__getattr__", ga)
    assert ga("made") == 41 and "made" not in vars(m)
    made["later"] = lambda: 42
    assert ga("later") == 42 and "later" in ga("__all__") and "later" in di()
    assert {"later", "made", "value"} <= set(ga("__all__"))
    assert ga("value") == 1  # the listed name
    n = len(asked)
    with pytest.raises(AttributeError):
        ga("mod")  # a submodule of the package: the import system's, never generated
    with pytest.raises(AttributeError):
        ga("_private")
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        ga("nope")
    assert len(asked) == n + 1  # only "nope" asked the generator


def test_the_maps_are_read_at_call_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(dpfast._PUBLIC, "phantom_lazy", "dpfast._core.lazy")
    assert not hasattr(dpfast, "phantom_lazy")  # the module exists, the name does not
    monkeypatch.setitem(dpfast._PUBLIC, "attach", "dpfast._core.lazy")
    try:
        assert dpfast.attach is attach  # an entry added after attach() is seen
    finally:
        vars(dpfast).pop("attach", None)


def test_moved_modules_keep_their_public_names() -> None:
    """``dpfast.histogram``, ``dpfast.metrics`` and ``dpfast.dpsgd`` after the moves to
    ``tables/`` and ``mechanisms/`` (issue 37): the facade, not an alias module."""
    from dpfast import dpsgd, metrics

    assert metrics.__name__ == "dpfast.tables.metrics"
    assert dpsgd.__name__ == "dpfast.mechanisms.dpsgd"
    assert dpfast.histogram.__module__ == "dpfast.tables.histogram"
    assert dpfast.histogram2d.__module__ == dpfast.histogramdd.__module__ == (
        "dpfast.tables.histogram")
    assert "dpfast.metrics" not in sys.modules and "dpfast.dpsgd" not in sys.modules


def test_import_dpfast_and_tables_load_no_numba() -> None:
    code = ("import sys, dpfast, dpfast.tables, dpfast.accounting, dpfast.session; "
            "dpfast.metrics; "
            "print('numba' in sys.modules, 'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]


def _hand_written() -> set[str]:
    found = set()
    for init in sorted(ROOT.rglob("__init__.py")):
        tree = ast.parse(init.read_text())
        if any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body):
            found.add(str(init.relative_to(ROOT)))
    return found


def test_package_inits_use_the_one_helper() -> None:
    found = _hand_written()
    assert found <= HAND_WRITTEN, f"use dpfast._core.lazy.attach in {sorted(found - HAND_WRITTEN)}"
    assert HAND_WRITTEN <= found, (
        f"{sorted(HAND_WRITTEN - found)} use attach now: delete them from HAND_WRITTEN")
