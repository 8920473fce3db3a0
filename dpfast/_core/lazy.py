"""The one lazy-export helper of dpfast's package ``__init__`` files.

A package lists its public names once, each with the module that defines it, and gets
the module-level ``__getattr__`` and ``__dir__`` (PEP 562) that import that module on
first use, so that importing the package imports nothing heavy (``import dpfast`` and
``import dpfast.tables`` load no numba)::

    from dpfast._core.lazy import attach

    _PUBLIC = {"count": "dpfast.tables.groupby", "TableRelease": ".release"}
    __getattr__, __dir__, __all__ = attach(__name__, _PUBLIC)

``names`` maps a public name to the module whose attribute of that name it is (absolute,
or relative to the package when it starts with a dot); ``submodules`` maps a public name
to a module that *is* the value (``dpfast.metrics`` is the module
``dpfast.tables.metrics``).  A loaded value is stored in the package's namespace, so
``__getattr__`` runs once per name.  The maps are read at call time (not copied), so a
test may add an entry.  A listed module that cannot be found is an ``AttributeError`` of
the package, so ``hasattr`` and ``getattr(package, name, default)`` never raise.

A package may also make names at run time (``generated``: ``dpfast.tables`` and
``dpfast.dask`` offer a function per registered statistic, made from the registry when
first asked for)::

    __getattr__, __dir__, _ = attach(__name__, _PUBLIC, generated=_statistics)

``generated()`` returns ``{name: make}``, each ``make()`` the value of ``name``; it is
asked for names that are neither listed nor a submodule of the package (so ``from
package import submodule`` never runs it), each time (the values are not stored: a name
registered or removed later is seen), and its names are in ``__dir__`` and in
``__all__``, which ``__getattr__`` then answers (the package defines no ``__all__``).

Standard library only: :mod:`dpfast._core` imports nothing else of dpfast.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["attach"]


def _resolve(package: str, module: str) -> str:
    """``module`` made absolute: a leading dot names a submodule of ``package``."""
    return package + module if module.startswith(".") else module


def _import(package: str, module: str, name: str) -> ModuleType:
    """``import module``; a module that is not there is an AttributeError of ``package``
    (a missing module of the package itself, or of its parents: not one the module
    imports, whose error is the user's to see)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise AttributeError(
                f"module {package!r} has no attribute {name!r} ({module} is not installed)"
            ) from exc
        raise


def attach(
    package: str, names: Mapping[str, str], submodules: Mapping[str, str] | None = None,
    *, generated: Callable[[], Mapping[str, Callable[[], Any]]] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The lazy ``(__getattr__, __dir__, __all__)`` of ``package``.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    names : Mapping[str, str]
        Public name -> module that defines it (absolute, or ``".sub"`` relative to
        ``package``); the value is that module's attribute of the same name.
    submodules : Mapping[str, str], optional
        Public name -> module that is the value itself (absolute, or relative).
    generated : callable, optional
        ``generated() -> {name: make}``: names made at run time, ``make()`` the value
        (asked after ``names`` and ``submodules``, for a name that is not a submodule of
        the package; never stored); with it, ``__getattr__("__all__")`` is the sorted
        names of ``names`` and of ``generated()``.

    Returns
    -------
    tuple
        ``__getattr__`` (loads, stores in the package's namespace and returns a listed
        name; any other name is an ``AttributeError``), ``__dir__`` (the namespace and
        every listed name, sorted) and ``__all__`` (the sorted names of ``names``; a
        package that also exports what it imports eagerly, or that wants a literal list
        for type checkers, writes its own).
    """
    if not isinstance(package, str) or not package:
        raise TypeError(f"package must be a module name, got {package!r}")
    subs: Mapping[str, str] = {} if submodules is None else submodules
    both = set(names) & set(subs)
    if both:
        raise ValueError(f"names and submodules both list {sorted(both)}")

    submodule: dict[str, bool] = {}  # name -> a module of the package (found, not imported)

    def _made(name: str) -> Callable[[], Any] | None:
        """The maker of a generated ``name`` (None: not one, or a submodule's name)."""
        if generated is None or name.startswith("_"):
            return None
        if name not in submodule:
            submodule[name] = importlib.util.find_spec(f"{package}.{name}") is not None
        return None if submodule[name] else generated().get(name)

    def __getattr__(name: str) -> Any:
        if name == "__all__" and generated is not None:
            return sorted(set(names) | set(generated()))
        if name in names:
            value = getattr(_import(package, _resolve(package, names[name]), name), name)
        elif name in subs:
            value = _import(package, _resolve(package, subs[name]), name)
        else:
            make = _made(name)
            if make is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return make()  # not stored: the registry decides each time
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        made = set(generated()) if generated is not None else set()
        return sorted(set(vars(sys.modules[package])) | set(names) | set(subs) | made)

    return __getattr__, __dir__, sorted(names)
