"""The statistic registry: one class per statistic, registered by subclassing.

A :class:`Statistic` subclass states everything the surfaces need to offer it -- its name,
its SQL spellings, whether it reads a value column and needs bounds, whether it takes
Gaussian noise, its own parameters, a one-line summary, what one person contributes
(``bounding_mode``, below) -- and how it is planned
(:meth:`Statistic.plan`: the release spec -> a :class:`~dpfast.tables.run.Plan` whose
event is known before any row is read).  Defining the class registers it
(``__init_subclass__``); :data:`REGISTRY` maps names to classes, and
:func:`dpfast.tables.plan.plan` dispatches on it, never on a name.

``bounding_mode`` says what a person contributes to the keys they keep (at most
``max_partitions`` of them), which fixes the sensitivity's unit:

* ``"rows"``: up to ``max_per_partition`` of their rows per kept key (count, sum, mean,
  variance, ...; the rank statistics' rows): ``Δ1 = k c`` times a row's bound;
* ``"distinct"``: up to ``max_per_partition`` of their *distinct values* per kept key,
  chosen among their distinct values there (count_distinct: one person adds at most ``c``
  values to the union of a key's kept values, ``Δ1 = k c``);
* ``"units"``: themselves, once per kept key, whatever their number of rows
  (privacy_id_count: ``Δ1 = k``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from dpfast.tables.run import Plan, Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["Statistic", "REGISTRY", "BOUNDING_MODES", "get"]

#: what a person may contribute per kept key (:attr:`Statistic.bounding_mode`)
BOUNDING_MODES = ("rows", "distinct", "units")

#: name -> Statistic subclass, in definition order
REGISTRY: dict[str, type[Statistic]] = {}


class Statistic:
    """One statistic (see the module docstring).  Subclasses set the class attributes and
    implement :meth:`plan`; an abstract intermediate class sets ``name = ""``."""

    #: the registry name (``tables.<name>``, ``dask.<name>``, ``Session.<name>``)
    name: ClassVar[str] = ""
    #: SQL aggregate spellings, lower case (``("avg",)``); empty: not offered in SQL
    sql_names: ClassVar[tuple[str, ...]] = ()
    #: reads a value column
    value: ClassVar[bool] = False
    #: needs public bounds for its value column
    bounds: ClassVar[bool] = False
    #: takes Gaussian noise (``rho`` or ``noise="gaussian"``)
    gaussian: ClassVar[bool] = True
    #: its own parameters, name -> default (``{"q": None}``: required)
    params: ClassVar[Mapping[str, Any]] = {}
    #: one line for the CLI, the session's help and the API docs
    summary: ClassVar[str] = ""
    #: what one person contributes per kept key: "rows" | "distinct" | "units" (above)
    bounding_mode: ClassVar[str] = "rows"
    #: the noised parts a many-metric release (:mod:`dpfast.tables.multi`) finishes it
    #: from, in order (``("count", "csum")`` for a mean: the part names of
    #: :mod:`dpfast.tables._metrics`); empty: not offered by ``aggregate``
    parts: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.name:
            return
        if cls.bounding_mode not in BOUNDING_MODES:
            raise TypeError(f"{cls.__qualname__}.bounding_mode must be one of "
                            f"{BOUNDING_MODES}, got {cls.bounding_mode!r}")
        if cls.name in REGISTRY:
            raise TypeError(f"a statistic named {cls.name!r} is already registered "
                            f"({REGISTRY[cls.name].__qualname__})")
        REGISTRY[cls.name] = cls

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> Plan:
        """The data-independent plan of ``spec`` (one statistic: ``spec.statistics[0]``)
        over ``source`` (whose public schema -- column dtypes -- it may read)."""
        raise NotImplementedError(f"{cls.__qualname__}.plan")


def get(name: Any) -> type[Statistic]:
    """The registered statistic ``name`` (ValueError naming ``statistic`` otherwise)."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"statistic must be one of {sorted(REGISTRY)}, got {name!r}")
    return REGISTRY[name]
