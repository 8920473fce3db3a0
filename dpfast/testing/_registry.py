"""The registry of release paths that the neighbour audit covers.

A :class:`ReleasePath` is one way of making a release (a public function with one set of
options, a :class:`dpfast.Session` method, a SQL form, a local-DP client), written as
``run(data, rng)`` on the audit's standard dataset (:func:`audit_records`), with the
public names it covers.  :func:`release_paths` lists them all; :func:`public_release_names`
lists every public release function of dpfast, and the test suite fails when one of them
is covered by no path: a new release path must register (:func:`register`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from dpfast.testing._people import adversarial_people, with_person, without_person

__all__ = ["ReleasePath", "Case", "register", "release_paths", "public_release_names",
           "audit_records", "record_cases", "KEYS", "BOUNDS", "NOT_RELEASES"]

#: the public keys of the standard dataset's ``key`` column
KEYS = ("a", "b", "c", "d", "e")
#: the public bounds of its ``value`` column
BOUNDS = (0.0, 10.0)

# the modules that register paths (imported by release_paths)
_PATH_MODULES = ("dpfast.testing._paths_tables", "dpfast.testing._paths_tune",
                 "dpfast.testing._paths_session", "dpfast.testing._paths_dask",
                 "dpfast.testing._paths_local", "dpfast.testing._paths_registry")

#: public callables that are not releases (no private data in, or post-processing only)
NOT_RELEASES = {
    "dpfast.tables.aggregate_levels": "sums public leaf counts (no noise)",
    "dpfast.tables.bound_contributions": "returns the bounded rows to the data holder",
    "dpfast.tables.partition_threshold": "public arithmetic on public parameters",
    "dpfast.tables.histogram.plan_histogram": "plans from public parameters and column "
                                              "types (no row is read; nothing released)",
    "dpfast.tables.histogram.HistogramPlan": "a plan: edges, spec, event (public)",
    "dpfast.dask.aggregate_reports": "sums local-DP reports that are already private",
    "dpfast.dask.key_from_env": "loads a generator key",
    "dpfast.dask.key_from_file": "loads a generator key",
    "dpfast.dask.WorkerKey": "a generator key",
    "dpfast.Session.analyst": "returns an Analyst, whose release methods are audited",
    "dpfast.Session.close": "closes the session",
    "dpfast.Session.usage": "reports the ledger (public: events and statuses)",
    "dpfast.Session.Analyst.analyst": "returns an Analyst",
    "dpfast.Session.add_analyst": "the owner registers a share; returns an Analyst",
    "dpfast.Session.Analyst.add_analyst": "the owner registers a share; returns an Analyst",
    "dpfast.Session.Analyst.close": "closes the session",
    "dpfast.Session.Analyst.usage": "reports the ledger",
}


@dataclasses.dataclass(frozen=True)
class Case:
    """One neighbouring pair: ``D_prime`` is ``D`` plus or minus one person holding
    ``person_keys`` (``new_keys``: those only the person holds)."""

    name: str
    D: Any
    D_prime: Any
    person_keys: tuple[Any, ...]
    new_keys: tuple[Any, ...] = ()


@dataclasses.dataclass(frozen=True)
class ReleasePath:
    """One audited release path.

    Attributes
    ----------
    name : str
        Unique, e.g. ``"tables.count/domain"``.
    covers : tuple of str
        The public names it exercises (``"dpfast.tables.count"``, ``"dpfast.Session.sql"``,
        ``"dpfast.local.Client.report"``...).
    run : callable
        ``run(data, rng)``: the release on ``data`` with generator key ``rng``.
    cases : callable
        ``cases()`` -> the neighbouring pairs to audit (default: :func:`record_cases`).
    sensitivity : number or dict, optional
        For results that do not state their own (see :func:`dpfast.testing.audit`).
    known : dict
        Case name (``"rate"``: the publication-rate test) -> the reason it fails on the
        current code (a known, open channel); the test suite marks those cases
        ``xfail(strict=True)``.  dpfast's own paths list none.
    refused : exception type, optional
        The path's query is an attack (kept as a regression guard) that the release must
        refuse *before the charge*: on D and on D' alike it raises this exception type
        with the same message, publishes nothing, and whatever else the run returns (a
        ledger's rows) is empty -- nothing was charged.
    selects_keys : bool
        Whether the path selects keys privately (then :func:`publication_rate` applies).
    slow : bool
        Starts a cluster or is otherwise slow.
    """

    name: str
    covers: tuple[str, ...]
    run: Callable[[Any, bytes], Any]
    cases: Callable[[], list[Case]] = dataclasses.field(default=lambda: record_cases())
    sensitivity: Any = None
    known: dict[str, str] = dataclasses.field(default_factory=dict)
    refused: type[BaseException] | None = None
    selects_keys: bool = False
    slow: bool = False


_REGISTRY: dict[str, ReleasePath] = {}


def register(path: ReleasePath) -> ReleasePath:
    """Add ``path`` to the registry (its name must be new)."""
    if not isinstance(path, ReleasePath):
        raise TypeError("register takes a ReleasePath")
    if path.name in _REGISTRY:
        raise ValueError(f"a release path named {path.name!r} is already registered")
    if not path.covers:
        raise ValueError(f"{path.name}: covers names no public release")
    _REGISTRY[path.name] = path
    return path


def release_paths() -> list[ReleasePath]:
    """Every registered release path (dpfast's own, and any registered since)."""
    for mod in _PATH_MODULES:
        importlib.import_module(mod)
    return list(_REGISTRY.values())


def public_release_names() -> list[str]:
    """Every public release function of dpfast: the functions of :mod:`dpfast.tables`,
    :mod:`dpfast.dask` and :mod:`dpfast.tables.histogram`, the public methods of
    :class:`dpfast.Session` and of its analysts, and the local-DP clients' ``report`` (and
    :func:`dpfast.local.randomize`), minus :data:`NOT_RELEASES`."""
    import dpfast.tables
    from dpfast.session import Session
    from dpfast.session import session as _session

    names = [f"dpfast.tables.{n}" for n in dpfast.tables.__all__
             if inspect.isfunction(getattr(dpfast.tables, n))]
    hist = importlib.import_module("dpfast.tables.histogram")  # the module, not the function
    names += [f"dpfast.tables.histogram.{n}" for n in hist.__all__]
    try:
        import dpfast.dask
    except ImportError:  # pragma: no cover - dask is an optional dependency
        pass
    else:
        names += [f"dpfast.dask.{n}" for n in dpfast.dask.__all__]
    names += [f"dpfast.Session.{n}" for n, _ in inspect.getmembers(Session, callable)
              if not n.startswith("_")]
    analyst = getattr(_session, "Analyst", None)
    if analyst is not None:
        names += [f"dpfast.Session.Analyst.{n}" for n, _ in inspect.getmembers(analyst,
                                                                               callable)
                  if not n.startswith("_")]
    names += ["dpfast.local.Client.report", "dpfast.local.ClientPool.report",
              "dpfast.local.randomize"]
    return sorted(n for n in set(names) if n not in NOT_RELEASES)


def audit_records(n_people: int = 24, seed: int = 0) -> Any:
    """The audit's standard dataset (a pandas DataFrame, two rows per person): ``id``
    (the privacy unit), ``key`` (public keys :data:`KEYS`), ``value`` (in
    :data:`BOUNDS`), ``code`` (digits as text: a cast to a number succeeds), ``divisor``
    (1..3: a division succeeds) and ``leaf`` (the key's index)."""
    import pandas as pd

    r = np.random.default_rng(seed)
    n = 2 * n_people
    k = r.integers(0, len(KEYS), n)
    return pd.DataFrame({
        "id": np.repeat(np.arange(n_people, dtype=np.int64), 2),
        "key": np.asarray(KEYS, dtype=object)[k],
        "value": r.uniform(*BOUNDS, n).round(3),
        "code": np.asarray([str(x) for x in r.integers(0, 100, n)], dtype=object),
        "divisor": r.integers(1, 4, n).astype(np.int64),
    })


def record_cases(n_people: int = 24, kinds: Any = None) -> list[Case]:
    """The neighbours of :func:`audit_records`: D plus each adversarial person (of
    ``kinds``, default all), and D minus its first person."""
    D = audit_records(n_people)
    cases = []
    for p in adversarial_people(D, bounds=BOUNDS, n_keys=40, n_rows=40, strings=("code",),
                                divisors=("divisor",), kinds=kinds):
        cases.append(Case(f"add-{p.kind}", D, with_person(D, p), p.keys, p.new_keys))
    first = D["id"].iloc[0]
    held = tuple(sorted(set(D.loc[D["id"] == first, "key"])))
    cases.append(Case("remove", D, without_person(D, first), held))
    return cases
