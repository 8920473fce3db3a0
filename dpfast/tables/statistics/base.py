"""The statistic registry: one class per statistic, registered by subclassing.

A :class:`Statistic` subclass states everything the surfaces need to offer it -- its name,
its SQL spellings, whether it reads a value column and needs bounds, whether it takes
Gaussian noise, its own parameters, a one-line summary, its public docstring, what one
person contributes (``bounding_mode``, below) -- and how it is planned
(:meth:`Statistic.plan`: the release spec -> a :class:`~dpfast.tables.run.Plan` whose
event is known before any row is read).  Defining the class registers it
(``__init_subclass__``); :data:`REGISTRY` maps names to classes, and
:func:`dpfast.tables.plan.plan` dispatches on it, never on a name.

The public surfaces are generated from these attributes (:mod:`dpfast.tables.facade`):
``dpfast.tables.<name>`` (signature, docstring), ``dpfast.dask.<name>``, ``dpfast release
<name>`` on the command line, ``dpfast warmup`` and the API reference -- so a new statistic
is one module of this package plus its test (docs/extending.md).

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

__all__ = ["Statistic", "REGISTRY", "REQUIRED", "COMMON", "BOUNDING_MODES", "get"]


class _Required:
    """The default of a parameter the caller must give (``params = {"q": REQUIRED}``)."""

    _instance: _Required | None = None

    def __new__(cls) -> _Required:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "REQUIRED"

    def __reduce__(self) -> str:
        return "REQUIRED"


#: marks a statistic's own parameter (or its ``bounds``) as required
REQUIRED: _Required = _Required()

#: the release parameters every public form takes unless a statistic says otherwise
#: (:attr:`Statistic.common`), in their order in the signatures
COMMON: tuple[str, ...] = (
    "epsilon", "delta", "rho", "max_partitions", "max_per_partition", "domain", "noise",
    "rng", "budget", "note", "use_case", "dropna", "selection", "bounding",
)

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
    #: its value column holds numbers (always so with bounds; the CLI reads them as such)
    numeric: ClassVar[bool] = False
    #: takes Gaussian noise (``rho`` or ``noise="gaussian"``)
    gaussian: ClassVar[bool] = True
    #: its own parameters, name -> default (:data:`REQUIRED`: the caller must give it),
    #: keyword-only in every public form; :meth:`make_spec` puts them in the spec
    params: ClassVar[Mapping[str, object]] = {}
    #: the annotation shown for each own parameter (default ``Any``)
    param_types: ClassVar[Mapping[str, str | type]] = {}
    #: one line per own parameter for the CLI's ``--<param>`` help (and the session's)
    param_help: ClassVar[Mapping[str, str]] = {}
    #: a value of each required own parameter for examples (``dpfast warmup``, the tests)
    example: ClassVar[Mapping[str, object]] = {}
    #: the default of ``bounds`` when ``bounds`` is True (:data:`REQUIRED`: must be given)
    bounds_default: ClassVar[object] = REQUIRED
    #: the local form also takes ``bounds="auto"`` (private quantiles choose them)
    auto_bounds: ClassVar[bool] = False
    #: the common release parameters its public forms take (a sub-sequence of
    #: :data:`COMMON`); ``epsilon`` is required where ``rho`` is not offered
    common: ClassVar[tuple[str, ...]] = COMMON
    #: its plans have the Dask steps (``partition_partials``, ``merge``): ``dpfast.dask.<name>``
    #: is generated (False: a statistic ported to one machine first keeps its old Dask
    #: function, if any)
    dask: ClassVar[bool] = True
    #: its intervals are each value plus or minus its noise law's half-width (the CLI
    #: prints that half-width; otherwise the mean of the intervals' half-widths)
    law_interval: ClassVar[bool] = False
    #: its released values are never negative in truth (the CLI offers ``--nonnegative``)
    nonnegative: ClassVar[bool] = False
    #: what its release returns (the name of a public class of :mod:`dpfast.tables`)
    returns: ClassVar[str] = "TableRelease"
    #: one line for the CLI, the session's help and the API docs
    summary: ClassVar[str] = ""
    #: the public docstring of ``dpfast.tables.<name>`` (numpydoc, with a Privacy section)
    doc: ClassVar[str] = ""
    #: the docstring of ``dpfast.dask.<name>`` (empty: made from :attr:`doc`)
    dask_doc: ClassVar[str] = ""
    #: what one person contributes per kept key: "rows" | "distinct" | "units" (above)
    bounding_mode: ClassVar[str] = "rows"
    #: the noised parts a many-metric release (:mod:`dpfast.tables.multi`) finishes it
    #: from, in order (``("count", "csum")`` for a mean: the part names of
    #: :mod:`dpfast.tables._metrics`); empty: not offered by ``aggregate``
    parts: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.name:
            return
        if cls.bounding_mode not in BOUNDING_MODES:
            raise TypeError(f"{cls.__qualname__}.bounding_mode must be one of "
                            f"{BOUNDING_MODES}, got {cls.bounding_mode!r}")
        if cls.name in REGISTRY:
            raise TypeError(f"a statistic named {cls.name!r} is already registered "
                            f"({REGISTRY[cls.name].__qualname__})")
        if not cls.name.isidentifier() or cls.name.startswith("_"):
            raise TypeError(f"a statistic's name must be a public identifier, got "
                            f"{cls.name!r}")
        unknown = [c for c in cls.common if c not in COMMON]
        if unknown:
            raise TypeError(f"{cls.__qualname__}.common: unknown parameters {unknown}")
        clash = [p for p in cls.params
                 if p in COMMON or p in ("bounds", "values", "keys", "privacy_ids")]
        if clash:
            raise TypeError(f"{cls.__qualname__}.params: {clash} are release parameters")
        REGISTRY[cls.name] = cls

    @classmethod
    def make_spec(cls, *, column: str | None = None, params: Mapping[str, object] | None = None,
                  **release: Any) -> ReleaseSpec:
        """The checked :class:`~dpfast.tables.spec.ReleaseSpec` of one release of this
        statistic: ``release`` holds the common parameters (``epsilon=``, ``bounds=``,
        ``domain=`` -- the keys themselves --, ``by=``, ...); ``params`` its own, put in the
        :class:`~dpfast.tables.spec.StatSpec` (a statistic whose plan reads them from the
        spec's ``options`` overrides this)."""
        from dpfast.tables import spec as _spec  # lazy: keeps the registry import light

        own = {} if params is None else dict(params)
        stat = _spec.StatSpec(cls.name, column, _spec._frozen(own) if own else ())
        return _spec.ReleaseSpec.make([stat], **release)

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> Plan:
        """The data-independent plan of ``spec`` (one statistic: ``spec.statistics[0]``)
        over ``source`` (whose public schema -- column dtypes -- it may read)."""
        raise NotImplementedError(f"{cls.__qualname__}.plan")


def get(name: object) -> type[Statistic]:
    """The registered statistic ``name`` (ValueError naming ``statistic`` otherwise)."""
    if not isinstance(name, str) or name not in REGISTRY:
        raise ValueError(f"statistic must be one of {sorted(REGISTRY)}, got {name!r}")
    return REGISTRY[name]
