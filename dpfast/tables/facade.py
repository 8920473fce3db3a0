"""The public functions of the registered statistics, generated from the registry.

Every statistic of :data:`dpfast.tables.statistics.REGISTRY` is offered as
``dpfast.tables.<name>`` (the local form, :func:`local_function`) and ``dpfast.dask.<name>``
(the Dask form, built by :mod:`dpfast.dask` from :func:`parameters`): real Python
functions, made here from the statistic's attributes, with their own
:func:`inspect.signature`, ``__doc__`` (the statistic's :attr:`~Statistic.doc`),
``__name__`` and ``__module__`` -- what ``help()``, Sphinx and an IDE show.

The local form is ``f([values,] keys, privacy_ids=None, *, [own parameters], [bounds],
epsilon=..., ...)``; the Dask form ``f(ddf, key, [value,] privacy_id=None, *, ...,
npartitions=None)``.  Both build the statistic's :class:`~dpfast.tables.spec.ReleaseSpec`
(:meth:`Statistic.make_spec`) and run :func:`dpfast.tables.run.release`: plan -> partials ->
the one charge -> finish.  Nothing here imports a kernel: the release modules load when a
function is called.
"""

from __future__ import annotations

import dataclasses
import functools
import keyword
import types
from collections.abc import Callable, Mapping
from typing import Any

from dpfast.tables.statistics.base import COMMON, REQUIRED, Statistic

__all__ = ["Param", "parameters", "make_function", "local_function", "release_local",
           "release_kwargs", "cached", "registered", "exports", "local_exports", "reference",
           "expand_reference", "REFERENCE_MARKER", "DEFAULTS"]

#: default and annotation of each common release parameter (:data:`COMMON`)
DEFAULTS: dict[str, tuple[object, str]] = {
    "epsilon": (None, "float | None"),
    "delta": (0.0, "float"),
    "rho": (None, "float | None"),
    "max_partitions": (1, "int"),
    "max_per_partition": (1, "int"),
    "domain": (None, "Any"),
    "noise": (None, "str | None"),
    "rng": (None, "RngLike"),
    "budget": (None, "Any"),
    "note": ("", "str"),
    "use_case": (None, "str | None"),
    "dropna": (False, "bool"),
    "selection": ("auto", "str"),
    "bounding": ("uniform", "str"),
}
assert tuple(DEFAULTS) == COMMON

#: the spec fields among the common parameters (the rest: the run's or the source's)
_SPEC_FIELDS = ("epsilon", "delta", "rho", "noise", "max_partitions", "max_per_partition",
                "selection", "bounding")


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter of a generated function: ``positional`` ones come before the ``*``;
    ``default`` is :data:`REQUIRED` for a parameter without a default."""

    name: str
    default: object = REQUIRED
    annotation: str = "Any"
    positional: bool = False


def _own(stat: type[Statistic]) -> tuple[list[Param], list[Param]]:
    """The statistic's own parameters: (required ones, ones with a default)."""
    req: list[Param] = []
    opt: list[Param] = []
    for name, default in stat.params.items():
        p = Param(name, default, str(stat.param_types.get(name, "Any")))
        (req if default is REQUIRED else opt).append(p)
    return req, opt


def parameters(stat: type[Statistic], form: str = "local") -> list[Param]:
    """The parameters of ``stat``'s public function, ``form`` ``"local"``
    (``dpfast.tables``) or ``"dask"`` (``dpfast.dask``), in signature order."""
    if form not in ("local", "dask"):
        raise ValueError(f"form must be 'local' or 'dask', got {form!r}")
    out: list[Param] = []
    if form == "local":
        if stat.value:
            out.append(Param("values", REQUIRED, "Any", True))
        out += [Param("keys", REQUIRED, "Any", True), Param("privacy_ids", None, "Any", True)]
    else:
        out += [Param("ddf", REQUIRED, "Any", True), Param("key", REQUIRED, "Any", True)]
        if stat.value:
            out.append(Param("value", REQUIRED, "str", True))
        out.append(Param("privacy_id", None, "str | None", True))
    req, opt = _own(stat)
    out += req
    if stat.bounds:
        auto = stat.auto_bounds and form == "local"
        ann = "tuple[float, float]" + (" | str" if auto else "")
        if stat.bounds_default is not REQUIRED:
            ann += " | None" if stat.bounds_default is None else ""
        out.append(Param("bounds", stat.bounds_default, ann))
    for name in stat.common:
        if name == "dropna" and form == "dask":
            continue
        default, ann = DEFAULTS[name]
        if name == "epsilon" and "rho" not in stat.common:
            default, ann = REQUIRED, "float"  # no zCDP alternative: epsilon is required
        if name == "rng" and form == "dask":
            ann = "Any"
        out.append(Param(name, default, ann))
        if name == "use_case" and form == "dask":
            out.append(Param("npartitions", None, "int | None"))
    if form == "dask" and "use_case" not in stat.common:
        out.append(Param("npartitions", None, "int | None"))
    out += opt
    return out


def make_function(name: str, params: list[Param], body: Callable[..., object], *, doc: str,
                  module: str, returns: str) -> Callable[..., object]:
    """A real function ``name(params) -> body(**arguments)``: its code names each parameter
    (Python's own messages for a missing or unknown argument), its defaults are
    ``params``' and ``inspect.signature`` shows them with their annotations."""
    for p in params:
        if not p.name.isidentifier() or keyword.iskeyword(p.name):
            raise ValueError(f"not a parameter name: {p.name!r}")
    ns: dict[str, object] = {"__body": body}
    parts: list[str] = []
    star = False
    for p in params:
        if not p.positional and not star:
            parts.append("*")
            star = True
        if p.default is REQUIRED:
            parts.append(p.name)
        else:
            ns[f"__d_{p.name}"] = p.default
            parts.append(f"{p.name}=__d_{p.name}")
    call = ", ".join(f"{p.name}={p.name}" for p in params)
    src = f"def {name}({', '.join(parts)}):\n    return __body({call})\n"
    exec(compile(src, f"<dpfast.tables.facade: {module}.{name}>", "exec"), ns)  # noqa: S102
    fn = ns[name]
    assert isinstance(fn, types.FunctionType)  # the def just executed
    fn.__doc__ = doc
    fn.__module__ = module
    fn.__qualname__ = name
    fn.__annotations__ = {p.name: p.annotation for p in params} | {"return": returns}
    return fn


def release_kwargs(stat: type[Statistic], arguments: Mapping[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Split a generated function's arguments: (the statistic's own parameters, the spec's
    common fields -- defaults for those the statistic does not take --, the run's:
    ``budget``, ``note``, ``rng``, ``use_case``)."""
    own = {n: arguments[n] for n in stat.params}
    spec = {n: arguments.get(n, DEFAULTS[n][0]) for n in _SPEC_FIELDS}
    run = {n: arguments.get(n, DEFAULTS[n][0]) for n in ("budget", "note", "rng", "use_case")}
    return own, spec, run


def _check_dropna(dropna: object) -> None:
    import numpy as np

    if not isinstance(dropna, (bool, np.bool_)):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")


def release_local(stat: type[Statistic], arguments: Mapping[str, Any]) -> object:
    """Run one local release of ``stat`` from its public function's ``arguments``."""
    from dpfast.tables import run as _run  # lazy: the pipeline loads the kernels

    _check_dropna(arguments.get("dropna", False))
    values = arguments.get("values")
    keys, ids = arguments["keys"], arguments["privacy_ids"]
    bounds = arguments.get("bounds")
    domain = arguments.get("domain")
    own, spec_args, run_args = release_kwargs(stat, arguments)
    if stat.auto_bounds and isinstance(bounds, str):  # "auto": the plan's private bounds
        if bounds != "auto":
            raise ValueError(f"bounds must be a pair (lo, hi) or 'auto', got {bounds!r}")
        if spec_args["rho"] is not None:  # named before the privacy target's own checks
            raise ValueError("bounds='auto' needs epsilon (its quantiles are pure-DP), not rho")
    spec = stat.make_spec(params=own, bounds=bounds, domain=domain, **spec_args)
    return _run.release(spec, _run.Rows(keys, ids, values, domain=domain), **run_args)


_BUILT: dict[tuple[type[Statistic], str], Callable[..., object]] = {}


def local_function(stat: type[Statistic]) -> Callable[..., object]:
    """``dpfast.tables.<stat.name>`` (made once per statistic class)."""
    def body(**arguments: object) -> object:
        return release_local(stat, arguments)

    return cached(stat, "local", lambda: make_function(
        stat.name, parameters(stat, "local"), body, doc=stat.doc, module="dpfast.tables",
        returns=stat.returns))


def cached(stat: type[Statistic], form: str, make: Callable[[], Callable[..., object]]
           ) -> Callable[..., object]:
    """The function of ``stat`` in ``form`` made by ``make()``, once per statistic class
    (so ``dpfast.dask.count is dpfast.dask.count``)."""
    fn = _BUILT.get((stat, form))
    if fn is None:
        fn = _BUILT[(stat, form)] = make()
    return fn


def registered() -> dict[str, type[Statistic]]:
    """The registry (:data:`dpfast.tables.statistics.REGISTRY`, every statistic module
    imported): name -> statistic class."""
    from dpfast.tables.statistics import REGISTRY

    return REGISTRY


def exports(make: Callable[[type[Statistic]], Callable[..., object]], *, dask: bool = False
            ) -> dict[str, Callable[[], Callable[..., object]]]:
    """The statistics' functions a facade package offers, for its lazy ``__getattr__``
    (:func:`dpfast._core.lazy.attach`'s ``generated``): every registered statistic (with
    ``dask``: those whose plans have the Dask steps) -> a maker of its function, ``make(stat)``
    (:func:`local_function`; :func:`dpfast.dask._facade.dask_function`)."""
    return {name: functools.partial(make, stat) for name, stat in registered().items()
            if stat.dask or not dask}


def local_exports() -> dict[str, Callable[[], Callable[..., object]]]:
    """:func:`exports` of ``dpfast.tables``: each registered statistic's local function."""
    return exports(local_function)


#: the line of an API reference page that :func:`expand_reference` replaces
REFERENCE_MARKER = ".. dpfast-statistics::"


def reference(module: str) -> str:
    """The reST of the registered statistics' functions in ``module`` (``"dpfast.tables"``
    or ``"dpfast.dask"``): one ``autofunction`` directive each, in registry order -- what
    the API reference shows where a page has the line ``.. dpfast-statistics:: MODULE``."""
    if module not in ("dpfast.tables", "dpfast.dask"):
        raise ValueError(f"module must be 'dpfast.tables' or 'dpfast.dask', got {module!r}")
    return "\n".join(f".. autofunction:: {module}.{name}\n" for name in registered())


def expand_reference(text: str) -> str:
    """``text`` (a reST page) with each ``.. dpfast-statistics:: MODULE`` line replaced by
    :func:`reference` of ``MODULE`` (the Sphinx build's ``source-read`` hook, docs/conf.py)."""
    out = []
    for line in text.split("\n"):
        if line.startswith(REFERENCE_MARKER):
            out.append(reference(line[len(REFERENCE_MARKER):].strip()))
        else:
            out.append(line)
    return "\n".join(out)
