"""The statistics a session offers, read from the registry of :mod:`dpfast.tables`.

Every statistic registered in :data:`dpfast.tables.statistics.REGISTRY` is a
:class:`~dpfast.Session` method of its name (``session.<name>(value, by, ...)``, or
``session.<name>(by, ...)`` for one that reads no value column) and an SQL aggregate of its
``sql_names`` (:mod:`dpfast.session.sql`), with no edit here: :func:`lookup` and
:func:`from_sql` read the registry class's ``name``, ``sql_names``, ``value``, ``bounds``,
``gaussian`` and ``params``; :meth:`Stat.method` makes the session's method of a
statistic and :meth:`Stat.spec_params` checks its own parameters.  The session plans each
release from its spec (:func:`dpfast.tables.plan.plan`: the event before any row is read)
and runs it with :func:`dpfast.tables.run.release`.

One small table remains, marked for deletion: :data:`ALIASES`, a session name kept for
compatibility (``stddev``, the session's name of :func:`dpfast.tables.std` since before
the registry).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from dpfast.tables.statistics import REGISTRY, Statistic
from dpfast.tables.statistics.base import REQUIRED

if TYPE_CHECKING:
    from ._cache import Released

__all__ = ["ALIASES", "STATISTICS", "Stat", "from_sql", "lookup", "names"]


@dataclasses.dataclass(frozen=True)
class Stat:
    """How the session asks for one statistic.

    ``name``: its :mod:`dpfast.tables` / registry name (the spec's statistic);
    ``session_name``: the name the session shows (a method, SQL's default output name);
    ``value``: it reads a value column; ``bounds``: it needs public bounds for it;
    ``gaussian``: it takes ``rho=`` / ``noise=``; ``params``: its own parameters (name ->
    default, None: required); ``sql_names``: its SQL spellings (lower case);
    ``per_partition``: it takes ``max_per_partition`` (its registry class's ``common``
    lists it; else the release is made with 1, whatever the session's).
    """

    name: str
    session_name: str
    value: bool
    bounds: bool
    gaussian: bool
    params: Mapping[str, object]
    sql_names: tuple[str, ...]
    summary: str = ""
    per_partition: bool = True

    @property
    def label(self) -> str:
        """The aggregate's SQL name as dpfast writes it (``AVG``), or the name."""
        return (self.sql_names[0] if self.sql_names else self.name).upper()

    def spec_params(self, given: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
        """The statistic's own parameters (``q=`` of the quantile) as the spec holds them:
        sorted ``(name, value)`` pairs, sequences as tuples; TypeError for a parameter the
        statistic does not take or a required one not given (None: not given)."""
        given = {k: v for k, v in given.items() if v is not None}
        for name in given:
            if name not in self.params:
                owners = [n for n in names() if name in STATISTICS[n].params]
                if not owners:
                    raise TypeError(f"release() got an unexpected keyword argument {name!r}")
                raise TypeError(f"{name}= is for (and needed by) the {' / '.join(owners)} "
                                "statistic")
        out = []
        for name, default in self.params.items():
            v = given.get(name, default)
            if v is REQUIRED:
                raise TypeError(f"{name}= is for (and needed by) the {self.session_name} "
                                "statistic")
            if isinstance(v, (list, tuple, np.ndarray)):
                v = tuple(np.asarray(v).tolist())
            elif isinstance(v, np.generic):
                v = v.item()
            out.append((name, v))
        return tuple(sorted(out))

    def method(self, name: str, release: Callable[..., Released]) -> Callable[..., Released]:
        """``session.<name>``: ``release`` (:meth:`dpfast.Session.release`) of this
        statistic, with its value column first where it reads one."""
        # the options (the statistic's own parameters among them: q=, trim=...) are
        # checked by release, whose keywords they are
        if self.value:
            def method(value: str, by: str | Sequence[str], **options: object) -> Released:
                return release(name, by, value=value, **options)
        else:
            def method(by: str | Sequence[str], **options: object  # type: ignore[misc]
                       ) -> Released:
                return release(name, by, **options)
        what = self.summary or f"the {self.name} statistic"
        method.__name__ = method.__qualname__ = name
        method.__doc__ = (f":func:`dpfast.tables.{self.name}` ({what}) per ``by`` key "
                          "through the cache; the options of :meth:`Session.release`.")
        return method


#: session names kept for compatibility -> registry names (delete one when its old name
#: is retired)
ALIASES: dict[str, str] = {"stddev": "std"}

def _session_name(name: str) -> str:
    return next((a for a, n in ALIASES.items() if n == name), name)


def _per_partition(cls: type[Statistic]) -> bool:
    """Whether the statistic takes ``max_per_partition`` (its :attr:`Statistic.common`
    says so; a statistic of people per key does not: its release is made with 1, and so
    is the session's)."""
    return "max_per_partition" in cls.common


def _of(cls: type[Statistic]) -> Stat:
    return Stat(cls.name, _session_name(cls.name), bool(cls.value), bool(cls.bounds),
                bool(cls.gaussian), MappingProxyType(dict(cls.params)),
                tuple(n.lower() for n in cls.sql_names), cls.summary,
                per_partition=_per_partition(cls))


def lookup(name: object) -> Stat | None:
    """The statistic a session calls ``name`` (a registry name or an alias), or None."""
    if not isinstance(name, str) or name.startswith("_"):
        return None
    real = ALIASES.get(name, name)
    if real in REGISTRY:
        return _of(REGISTRY[real])
    return None


def names() -> list[str]:
    """Every name :func:`lookup` answers (the session's statistic methods), sorted."""
    got = set(REGISTRY) | {a for a, n in ALIASES.items() if n in REGISTRY}
    return sorted(got)


def from_sql(spellings: set[str]) -> Stat | None:
    """The statistic an SQL aggregate function of one of ``spellings`` (lower case: the
    names sqlglot knows the function by) releases: the registered statistic declaring
    one of them in its ``sql_names``; None if none."""
    for cls in REGISTRY.values():
        if spellings & {n.lower() for n in cls.sql_names}:
            return _of(cls)
    return None


class _Statistics(Mapping[str, Stat]):
    """:data:`STATISTICS`: session name -> :class:`Stat`, read from the registry on each
    access (a statistic registered later is listed)."""

    def __getitem__(self, name: str) -> Stat:
        stat = lookup(name)
        if stat is None:
            raise KeyError(name)
        return stat

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __len__(self) -> int:
        return len(names())

    def __repr__(self) -> str:
        return f"STATISTICS({', '.join(names())})"


#: the session's statistics (``dpfast.session.STATISTICS``): a read-only, live view of
#: the registry, name -> :class:`Stat`
STATISTICS: Mapping[str, Stat] = _Statistics()
