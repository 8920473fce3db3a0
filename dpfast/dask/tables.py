"""Group-by count, sum and mean releases of dask DataFrames (see :mod:`dpfast.dask`).

Pipeline: validate and plan on the driver -> charge the budget (before anything is
computed) -> hash-partition the rows by privacy id (each input partition split by a hash
of the id's canonical value mod P into P pieces, output partition j the
concatenation of the pieces j: every id's rows in one partition; when every column used
has a numpy number dtype -- decided once per graph from the metadata -- the pieces are
compact numpy columns, int64 ones that fit int32 narrowed, not DataFrames:
:func:`dpfast.dask._shuffle.split_arrays`) -> per partition,
validate, bound per id and aggregate per key
(:func:`dpfast.tables._inputs._validate`, :func:`dpfast.tables.bounding.bound_codes`:
the rows an id keeps depend only on the key, the id and its own rows) -> reduce the
per-key partials on the driver (checked integer additions: ``OverflowError``, never a
wrap) -> per-key addressed noise, selection and report
(:func:`dpfast.tables.groupby.release`).  Every aggregate is an exact integer (float
values are summed as fixed-point units, :mod:`dpfast.tables._fixed`), so the release
equals :func:`dpfast.tables.count` / ``sum`` / ``mean`` on the same rows with the same
release generator bit for bit, integer and float values alike.

Keys: a raw key (32 bytes, or a :class:`~dpfast.dask.WorkerKey`) gets a fresh release id
on the driver for every release (:func:`dpfast.tables.keynoise.fresh_release_id`); the
tasks carry that id, never a reusable key, and derive the release's bounding sub-key
from (key, id) -- so two releases with one key never share noise or bounding streams,
while a retried task recomputes its own partition exactly.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast.dask.backend import DaskBackend, Frame
from dpfast.dask.keys import WorkerKey
from dpfast.tables import _merge, bounding, keynoise
from dpfast.tables import run as _run_mod
from dpfast.tables import spec as _spec

__all__ = ["count", "sum", "mean"]

_WEIGHTED = "__dpfast_wunits"  # weighted unit counts (used by dask/multi.py's partials)


def _columns(ddf: Any, key: Any, privacy_id: Any, value: Any) -> tuple[list[str], Any, Any]:
    cols = getattr(ddf, "columns", None)
    if cols is None or not hasattr(ddf, "map_partitions"):
        raise TypeError(f"ddf must be a dask DataFrame, got {type(ddf).__name__}")
    names = [key] if isinstance(key, str) else list(key) if isinstance(key, (list, tuple)) \
        else None
    if not names or not all(isinstance(k, str) for k in names):
        raise TypeError("key must be a column name or a list of column names")
    for label, cs in (("key", names), ("privacy_id", [privacy_id] if privacy_id else []),
                      ("value", [value] if value else [])):
        for c in cs:
            if not isinstance(c, str):
                raise TypeError(f"{label} must be a column name (str), got {c!r}")
            if c not in cols:
                raise ValueError(f"{label} column {c!r} is not in the DataFrame "
                                 f"(columns: {list(cols)})")
    return names, privacy_id, value


def _generator(rng: Any) -> tuple[_random.Generator, int | None, Any]:
    """The driver's release generator, its release id (None: numbered by a generator's
    allocator) and what the workers get to derive the bounding sub-key: the sub-key words
    themselves, or ``(WorkerKey, release id)`` (each worker loads the key)."""
    if isinstance(rng, WorkerKey):
        wid = keynoise.fresh_release_id()
        return keynoise.keyed_generator(rng.load(), wid), wid, (rng, wid)
    gen, rid = keynoise.release_generator(rng)
    return gen, rid, bounding.subkey(gen)


# used by dpfast/dask/multi.py and quantiles.py until they run on the one pipeline
key_codes = _merge.key_codes
checked_total = _merge.checked_total


def _subkey(src: Any) -> np.ndarray:
    if isinstance(src, tuple):
        wk, rid = src
        return bounding.subkey(keynoise.keyed_generator(wk.load(), rid))
    return src


def _run(stat: str, ddf: Any, key: Any, privacy_id: Any, value: Any, bounds: Any, *,
         epsilon: Any, delta: Any, rho: Any, max_partitions: Any, max_per_partition: Any,
         domain: Any, noise: Any, rng: Any, budget: Any, note: Any, use_case: Any,
         npartitions: Any, selection: Any = "auto", bounding_policy: Any = "uniform") -> Any:
    """The spec and the source of a count / sum / mean, through the one pipeline."""
    frame = Frame.make(ddf, key, privacy_id, [value] if value else [], domain)
    back = DaskBackend(npartitions)
    spec = _spec.ReleaseSpec.make(
        [_spec.StatSpec(stat, value)], by=frame.columns.by, privacy_unit=privacy_id,
        epsilon=epsilon, delta=delta, rho=rho, noise=noise, max_partitions=max_partitions,
        max_per_partition=max_per_partition, bounds=bounds, domain=domain,
        selection=selection, bounding=bounding_policy)
    return _run_mod.release(spec, frame, backend=back, budget=budget, note=note, rng=rng,
                            use_case=use_case)


_PARAMS_DOC = """
    ddf : dask.dataframe.DataFrame
        The rows.
    key : str or list of str
        The key column(s).
    privacy_id : str, optional
        The column of the privacy unit (None: every row is a different person).
    epsilon, delta, rho, max_partitions, max_per_partition, domain, noise, budget, note,
    use_case
        As in :func:`dpfast.tables.count`.  ``budget`` is charged once, on the driver,
        before the graph is computed (a refusal computes nothing).
    rng : None, Generator, 32-byte key or :class:`dpfast.dask.WorkerKey`
        As in :func:`dpfast.tables.count` (a raw key: a fresh release id per release); a
        :class:`~dpfast.dask.WorkerKey` (:func:`~dpfast.dask.key_from_file`,
        :func:`~dpfast.dask.key_from_env`) is loaded by the driver and by each worker, so
        no key material is in the task graph, and gets a fresh release id per release too
        (the graph carries it: a retried task recomputes its own partition).
    npartitions : int, optional
        Partitions after the shuffle by privacy id (default: as many as ``ddf`` up to 8, a
        third of them beyond, at least 8; under a distributed client or the synchronous
        scheduler at most twice the task threads, unless that puts more than three input
        partitions in one).
    selection, bounding
        As in :func:`dpfast.tables.count`: the key-selection rule on the number of distinct
        privacy units per key (each id's rows meet in one partition, so the per-partition
        unit counts add up exactly) and the bounding policy.
"""


def count(ddf: Any, key: Any, privacy_id: str | None = None, *,
          epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
          max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
          noise: str | None = None, rng: Any = None, budget: Any = None, note: str = "",
          use_case: str | None = None, npartitions: int | None = None,
          selection: str = "auto", bounding: str = "uniform") -> Any:
    """Release the number of rows per key of a dask DataFrame, with bounded contributions.

    Parameters
    ----------
    {params}
    Returns
    -------
    dpfast.tables.TableRelease
        Equal, bit for bit, to ``dpfast.tables.count`` on the same rows with the same key.

    Privacy
    -------
    That of :func:`dpfast.tables.count` (the same mechanism: add/remove one person,
    ``Δ1 = k c``, ``Δ2 = sqrt(k) c``; discrete Laplace / Gaussian noise, CKS20; private
    key selection on the distinct privacy units per key, sensitivity ``k``: Desfontaines
    et al. 2022, Gopi et al. 2020, :mod:`dpfast.tables._select`).  Distribution changes who
    computes, never what is computed: bounding depends only on each person's own rows.
    """
    return _run("count", ddf, key, privacy_id, None, None, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, npartitions=npartitions, selection=selection,
                bounding_policy=bounding)


def sum(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,  # noqa: A001
        bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
        rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
        domain: Any = None, noise: str | None = None, rng: Any = None, budget: Any = None,
        note: str = "", use_case: str | None = None, npartitions: int | None = None,
        selection: str = "auto", bounding: str = "uniform") -> Any:
    """Release the sum of the ``value`` column per key (clamped to ``bounds``).

    Parameters as in :func:`count`, plus ``value`` (a column name) and ``bounds``.

    Privacy
    -------
    That of :func:`dpfast.tables.sum`: ``Δ1 = k c max(|lo|, |hi|)`` (add/remove one
    person), float values summed exactly in fixed point (Casacuberta et al., CCS 2022).
    Integer and float values alike: bit-identical to one machine (integer partial sums are
    associative); the driver's total is checked (OverflowError, never a wrap).
    """
    return _run("sum", ddf, key, privacy_id, value, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, npartitions=npartitions, selection=selection,
                bounding_policy=bounding)


def mean(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *,
         bounds: tuple[float, float], epsilon: float | None = None, delta: float = 0.0,
         rho: float | None = None, max_partitions: int = 1, max_per_partition: int = 1,
         domain: Any = None, noise: str | None = None, rng: Any = None, budget: Any = None,
         note: str = "", use_case: str | None = None, npartitions: int | None = None,
         selection: str = "auto", bounding: str = "uniform") -> Any:
    """Release the mean of the ``value`` column per key: noisy centred sum / noisy count.

    Parameters as in :func:`sum`.

    Privacy
    -------
    That of :func:`dpfast.tables.mean`: the budget split in half between the count
    (``Δ1 = k c``) and the centred sum (``Δ1 = k c (hi - lo)``); add/remove one person.
    """
    return _run("mean", ddf, key, privacy_id, value, bounds, epsilon=epsilon, delta=delta,
                rho=rho, max_partitions=max_partitions, max_per_partition=max_per_partition,
                domain=domain, noise=noise, rng=rng, budget=budget, note=note,
                use_case=use_case, npartitions=npartitions, selection=selection,
                bounding_policy=bounding)


count.__doc__ = (count.__doc__ or "").replace("{params}", _PARAMS_DOC.strip())
