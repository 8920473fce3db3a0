"""The Dask forms of the registered statistics, generated from the registry.

``dpfast.dask.<name>(ddf, key, [value,] privacy_id=None, *, ..., npartitions=None)`` for
every statistic of :data:`dpfast.tables.statistics.REGISTRY`: a real function made by
:func:`dpfast.tables.facade.make_function` from the statistic's attributes
(:func:`dpfast.tables.facade.parameters`, form ``"dask"``), its docstring the statistic's
``dask_doc`` (or one made from its ``doc``).  It checks the column names
(:meth:`~dpfast.dask.backend.Frame.make`), builds the spec
(:meth:`~dpfast.tables.statistics.Statistic.make_spec`) and runs
:func:`dpfast.tables.run.release` with the :class:`~dpfast.dask.backend.DaskBackend`: the
plan's per-partition partials on the cluster, their merge, **the one charge** on the
driver, then the noise -- bit for bit the local release of the same rows and key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

from dpfast.tables import facade
from dpfast.tables.statistics import Statistic

if TYPE_CHECKING:
    import dask.dataframe as dd

__all__ = ["dask_function", "dask_exports", "release_dask", "dask_doc"]

_DASK_PARAMS = """    ddf : dask.dataframe.DataFrame
        The rows.
    key : str or list of str
        The key column(s).
{value}    privacy_id : str, optional
        The column of the privacy unit (None: every row is a different person).
    npartitions : int, optional
        Partitions after the shuffle by privacy id (default: as many as ``ddf`` up to 8, a
        third of them beyond, at least 8).
    others
        As in :func:`dpfast.tables.{name}`; ``budget`` is charged once, on the driver,
        after the partials are computed and before any noise; ``rng`` may also be a
        :class:`dpfast.dask.WorkerKey` (no key material in the task graph)."""


def dask_doc(stat: type[Statistic]) -> str:
    """The docstring of ``dpfast.dask.<name>``: the statistic's ``dask_doc``, or one made
    from its ``doc`` (its first line, the Dask parameters, the same Privacy section)."""
    if stat.dask_doc:
        return stat.dask_doc
    lines = stat.doc.split("\n")
    privacy = stat.doc.find("\n    Privacy\n    -------\n")
    value = ("    value : str\n        The value column.\n" if stat.value else "")
    doc = (f"{lines[0].rstrip('.')} (the rows of a dask DataFrame).\n\n"
           "    Parameters\n    ----------\n"
           + _DASK_PARAMS.format(value=value, name=stat.name) + "\n\n"
           "    Returns\n    -------\n"
           f"    {stat.returns}\n        Equal, bit for bit, to ``dpfast.tables.{stat.name}`` "
           "on the same rows with the same key.\n")
    if privacy >= 0:
        doc += stat.doc[privacy:]
    return doc


def release_dask(stat: type[Statistic], arguments: Mapping[str, object]) -> object:
    """Run one Dask release of ``stat`` from its public function's ``arguments``."""
    from dpfast.dask.backend import DaskBackend, Frame  # lazy: dask loads with a call
    from dpfast.tables import run as _run

    value = arguments.get("value")
    if stat.value and not isinstance(value, str):
        raise TypeError(f"value must be a column name (str), got {value!r}")
    column = value if isinstance(value, str) else None  # a statistic of no value: None
    domain = arguments.get("domain")
    # Frame.make and DaskBackend check these (TypeError / ValueError naming them)
    frame = Frame.make(cast("dd.DataFrame", arguments["ddf"]),
                       cast("str | Sequence[str]", arguments["key"]),
                       cast("str | None", arguments["privacy_id"]), [column] if column else [],
                       domain)
    back = DaskBackend(cast("int | None", arguments["npartitions"]))
    own, spec_args, run_args = facade.release_kwargs(stat, arguments)
    spec = stat.make_spec(column=column, params=own, by=frame.columns.by,
                          privacy_unit=arguments["privacy_id"], bounds=arguments.get("bounds"),
                          domain=domain, **spec_args)
    return _run.release(spec, frame, backend=back, **run_args)


def dask_function(stat: type[Statistic]) -> Callable[..., object]:
    """``dpfast.dask.<stat.name>`` (made once per statistic class)."""
    def body(**arguments: object) -> object:
        return release_dask(stat, arguments)

    return facade.cached(stat, "dask", lambda: facade.make_function(
        stat.name, facade.parameters(stat, "dask"), body, doc=dask_doc(stat),
        module="dpfast.dask", returns=stat.returns))


def dask_exports() -> dict[str, Callable[[], Callable[..., object]]]:
    """The functions ``dpfast.dask`` generates (:func:`dpfast.tables.facade.exports`): each
    registered statistic whose plans have the Dask steps -> a maker of its Dask form."""
    return facade.exports(dask_function, dask=True)
