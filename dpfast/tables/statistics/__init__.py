"""The statistics of the release layer, one module each, registered by subclassing
:class:`~dpfast.tables.statistics.base.Statistic` (:data:`REGISTRY`).

Every module of this package is imported here (:func:`pkgutil.iter_modules`), so a new
statistic is one new module in this folder: nothing else lists it.  (tests/test_layering.py
reads the discovery as an import of every module of the package.)
"""

from __future__ import annotations

import importlib
import pkgutil

from dpfast.tables.statistics.base import COMMON, REGISTRY, REQUIRED, Statistic, get

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name != "base" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")  # registers its statistics

__all__ = ["REGISTRY", "REQUIRED", "COMMON", "Statistic", "get", "metric_parts"]


def metric_parts() -> dict[str, tuple[str, ...]]:
    """Each registered statistic that a many-metric release offers (its class's
    :attr:`~dpfast.tables.statistics.base.Statistic.parts`) -> the parts it is finished
    from."""
    return {name: cls.parts for name, cls in REGISTRY.items() if cls.parts}
