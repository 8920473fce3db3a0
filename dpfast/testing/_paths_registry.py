"""The release paths of every registered statistic that has no hand-written path: made
from the registry (:data:`dpfast.tables.statistics.REGISTRY`), so a new statistic -- one
module of :mod:`dpfast.tables.statistics` -- is audited with no edit here.

Each gets ``tables.<name>/domain`` (public keys) and, when it takes ``delta`` and a key
selection rule, ``tables.<name>/select`` (private key selection), and the same on Dask
when its plans have the Dask steps: its value column is the audit data's ``value``
clamped to :data:`~dpfast.testing._registry.BOUNDS`, its own required parameters its
class's ``example``.  Imported after the other path modules: a statistic with its own
paths there is left alone.
"""

from __future__ import annotations

from typing import Any

from dpfast.testing._paths_dask import KINDS, dask_run
from dpfast.testing._registry import (
    _REGISTRY,
    BOUNDS,
    KEYS,
    ReleasePath,
    record_cases,
    register,
)

PUBLIC = {"epsilon": 1.0, "domain": list(KEYS)}
SELECT = {"epsilon": 3.0, "delta": 1e-2}


def _covered() -> set[str]:
    return {name for p in _REGISTRY.values() for name in p.covers}


def _options(stat: Any, select: bool) -> dict[str, Any]:
    opts: dict[str, Any] = dict(SELECT if select else PUBLIC)
    if stat.bounds:
        opts["bounds"] = BOUNDS
    opts.update(stat.example)
    return opts


def _local(stat: Any, select: bool) -> ReleasePath:
    name, opts = stat.name, _options(stat, select)

    def run(d: Any, rng: bytes) -> Any:
        import dpfast.tables

        cols: tuple[Any, ...] = (d["key"].to_numpy(), d["id"].to_numpy())
        if stat.value:
            cols = (d["value"].to_numpy(), *cols)
        return getattr(dpfast.tables, name)(*cols, rng=rng, **opts)

    return ReleasePath(f"tables.{name}/{'select' if select else 'domain'}",
                       (f"dpfast.tables.{name}",), run, selects_keys=select)


def _dask(stat: Any, select: bool) -> ReleasePath:
    name, opts = stat.name, _options(stat, select)

    def call(f: Any, rng: bytes) -> Any:
        import dpfast.dask

        cols = ("key", "value", "id") if stat.value else ("key", "id")
        return getattr(dpfast.dask, name)(f, *cols, rng=rng, **opts)

    return ReleasePath(f"dask.{name}/{'select' if select else 'domain'}",
                       (f"dpfast.dask.{name}",), dask_run(call),
                       cases=lambda: record_cases(kinds=KINDS), selects_keys=select)


def _register_all() -> None:
    from dpfast.tables.statistics import REGISTRY

    covered = _covered()
    for stat in REGISTRY.values():
        selects = "delta" in stat.common and "selection" in stat.common
        if f"dpfast.tables.{stat.name}" not in covered and stat.doc:
            register(_local(stat, False))
            if selects:
                register(_local(stat, True))
        if f"dpfast.dask.{stat.name}" not in covered and stat.doc and stat.dask:
            register(_dask(stat, False))


_register_all()
