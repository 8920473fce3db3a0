"""Per-key quantile / median / min / max releases of dask DataFrames.

The pipeline of :mod:`dpfast.dask.tables` with the quantile's aggregate: rows are
hash-partitioned by privacy id, each partition validates, bounds per id (the keyed
per-id streams of :func:`dpfast.tables._quantile_em.bound_slots`) and builds its sparse
``(key, grid slot) -> rows`` table; the driver sums the partial tables (a count table is
all the rank utility needs) and runs :func:`dpfast.tables.quantiles.release`: per-key
addressed exponential mechanisms.  The release equals :func:`dpfast.tables.quantile` on
the same rows with the same release generator, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast.dask import _shuffle as shuffle
from dpfast.dask import tables as _dt
from dpfast.tables import _inputs, _keys
from dpfast.tables import _quantile_em as _em
from dpfast.tables import quantiles as _q
from dpfast.tables._charge import charged

__all__ = ["quantile", "median", "min", "max"]

_SLOT = "__dpfast_slot"
_ROWS = "__dpfast_rows"


def _partials(pdf: Any, names: list[str], id_col: str | None, val_col: str, bnd: Any,
              domain: Any, p: _q.Plan, key_src: Any) -> tuple[Any, int]:
    """One partition: validate, bound, sparse (key, slot) table as a pandas DataFrame."""
    import pandas as pd

    keys = pdf[names[0]] if len(names) == 1 else tuple(pdf[n] for n in names)
    ids = None if id_col is None else pdf[id_col]
    data, _ = _inputs._validate(keys, ids, _q._values_for(pdf[val_col], bnd), bnd, domain)
    skey = _dt._subkey(key_src)
    tc, ts, tn = _q.table_of(p, data, skey)
    if p.select is not None:  # people per key after bounding, as slot -1 rows
        units = _q.units_of(p, data, skey)
        uc = np.flatnonzero(units > 0)
        tc = np.concatenate([tc, uc])
        ts = np.concatenate([ts, np.full(uc.shape[0], -1, ts.dtype)])
        tn = np.concatenate([tn, units[uc].astype(tn.dtype)])
    uk = _q._take(data.uniques, tc)
    out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
    out[_SLOT] = ts
    out[_ROWS] = tn
    return pd.DataFrame(out), int(len(pdf))


def _reduce(parts: Any, names: list[str], domain: Any, n_slots: int
            ) -> tuple[_inputs._Data, tuple[np.ndarray, np.ndarray, np.ndarray],
                       np.ndarray]:
    """The merged (key, slot) table and the people per key code (slot -1 rows)."""
    fk, codes, domain_codes = _dt.key_codes(parts, names, domain)
    codes = np.ascontiguousarray(codes, np.int64)
    slots = parts[_SLOT].to_numpy(np.int64)
    rows = parts[_ROWS].to_numpy(np.int64)
    is_unit = slots < 0
    # each person is in one partition (weighted unit counts: checked, never a wrap)
    units = _dt.checked_total(codes[is_unit], rows[is_unit], fk.size)
    keep = ~is_unit
    table = _em.slot_table(np.ascontiguousarray(codes[keep]), np.ascontiguousarray(slots[keep]),
                           n_slots, np.ascontiguousarray(rows[keep]))
    data = _inputs._Data(codes, fk.size, fk.uniques, None, None, domain_codes, tuple(names))
    return data, table, units


def _compute(frame: Any, names: list[str], id_col: str | None, args: tuple,
             npartitions: int | None) -> Any:
    import dask
    import pandas as pd

    parts = frame.to_delayed()
    if id_col is None:
        outs = [dask.delayed(_partials)(p, *args) for p in parts]
    else:
        outs = shuffle.by_id(parts, id_col, _partials, args, npartitions)
    results = dask.compute(*outs)
    return pd.concat([r[0] for r in results], ignore_index=True)


def quantile(ddf: Any, key: Any, value: str, privacy_id: str | None = None, *, q: Any,
             bounds: tuple[float, float] | None = None, epsilon: float,
             delta: float = 0.0, max_partitions: int = 1, max_per_partition: int = 1,
             n_candidates: int = 256, candidates: Any = None, domain: Any = None,
             rng: Any = None, budget: Any = None, note: str = "",
             npartitions: int | None = None, selection: str = "auto",
             bounding: str = "uniform") -> Any:
    """Release the ``q``-quantile(s) of the ``value`` column per key of a dask DataFrame.

    Parameters as in :func:`dpfast.tables.quantile` (columns by name, as in
    :func:`dpfast.dask.sum`; ``rng`` may be a :class:`~dpfast.dask.WorkerKey`; ``bounding``
    the bounding policy, ``"uniform"`` or ``"frequent"``); ``npartitions`` as in
    :func:`dpfast.dask.count`.

    Returns
    -------
    dpfast.tables.QuantileRelease
        Equal, bit for bit, to :func:`dpfast.tables.quantile` on the same rows with the
        same key.

    Privacy
    -------
    That of :func:`dpfast.tables.quantile`: per (key, quantile) the exponential mechanism
    with the rank utility (``Δu = max(num, den - num) c`` for ``q = num / den``,
    ``den <= 2**16``, else ``c``; ``ε_q = ε / (k len(q))``; McSherry & Talwar 2007,
    Smith 2011), add/remove one person; each person is bounded where all their rows are,
    by a function of their own rows only (either policy); the budget is charged once, on
    the driver, before the graph is computed.
    """
    names, id_col, val_col = _dt._columns(ddf, key, privacy_id, value)
    qs, scalar = _q._quantiles(q)
    k, c = _q.common(max_partitions, max_per_partition, id_col is not None)
    _q._check_budget(budget, note)
    if npartitions is not None and (not isinstance(npartitions, int)
                                    or isinstance(npartitions, bool) or npartitions < 1):
        raise ValueError(f"npartitions must be a positive int, got {npartitions!r}")
    dt = ddf[val_col].dtype
    kind = dt.kind if isinstance(dt, np.dtype) else "O"
    if kind not in "iuf":
        raise TypeError(f"value column {val_col!r} must hold numbers, got dtype {dt}")
    bounds = _q.grid_bounds(bounds, candidates)
    integer = kind in "iu" and not isinstance(bounds[0], float) \
        and not isinstance(bounds[1], float)
    bnd = _inputs._bounds(bounds, integer)
    if domain is not None:
        dcols = _keys.columns(domain, "domain")
        if len(dcols) != len(names):
            raise ValueError(f"domain has {len(dcols)} key columns, key names {len(names)}")
    gen, rid, key_src = _dt._generator(rng)
    p = _q.plan(qs, scalar, k, c, bnd, integer, n_candidates, candidates, epsilon, delta,
                domain is None, gen, rid, selection, bounding)
    cols = names + ([id_col] if id_col else []) + [val_col]
    args = (names, id_col, val_col, bnd, domain, p, key_src)
    with charged(budget, p.event, note):  # charged before anything is computed
        parts = _compute(shuffle.columns_of(ddf, cols), names, id_col, args, npartitions)
        data, table, units = _reduce(parts, names, domain, 2 * p.grid.shape[0])
        return _q.release(p, data, table, units if domain is None else None)


def median(ddf: Any, key: Any, value: str, privacy_id: str | None = None, **kwargs: Any
           ) -> Any:
    """:func:`quantile` with ``q = 0.5`` (Privacy: that of :func:`dpfast.tables.median`)."""
    return quantile(ddf, key, value, privacy_id, q=0.5, **kwargs)


def min(ddf: Any, key: Any, value: str, privacy_id: str | None = None,  # noqa: A001
        **kwargs: Any) -> Any:
    """:func:`quantile` with ``q = 0`` (Privacy: that of :func:`dpfast.tables.min`)."""
    return quantile(ddf, key, value, privacy_id, q=0.0, **kwargs)


def max(ddf: Any, key: Any, value: str, privacy_id: str | None = None,  # noqa: A001
        **kwargs: Any) -> Any:
    """:func:`quantile` with ``q = 1`` (Privacy: that of :func:`dpfast.tables.max`)."""
    return quantile(ddf, key, value, privacy_id, q=1.0, **kwargs)

