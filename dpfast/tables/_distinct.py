"""Per-key counts of distinct values.

:func:`count_distinct` bounds each person to ``max_partitions`` keys and
``max_per_partition`` *distinct* values per key (:func:`dpfast.tables._rows.bound_matrix`
with ``distinct=True``), takes the union of the kept (key, value) pairs, counts its values
per key and adds the count noise of :mod:`dpfast.tables.keynoise`; :func:`distinct_pairs`
and :func:`distinct_release` are shared with :mod:`dpfast.dask`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpfast.random import RngLike
from dpfast.tables import _inputs, _keys, _plan, _rows, _select, _usecase, keynoise
from dpfast.tables import bounding as bounding_mod
from dpfast.tables.groupby import (
    _candidates,
    _charge,
    _check_budget,
    _common,
    _finish,
    _take_keys,
)
from dpfast.tables.release import TableRelease

__all__ = ["count_distinct"]


def distinct_pairs(data: _inputs._Data, vals: Any, k: int, c: int, skey: np.ndarray,
                   policy: int = 0, sel: _select.Selection | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (key code, value) pairs that bounding keeps: ``(key codes, values,
    people per key code)`` (values: the kept rows' values, one per distinct pair, sorted by
    key code then value code; people: the privacy ids that kept each key -- weighted by
    :func:`dpfast.tables._select.unit_weights` when ``sel`` is a weighted selection: the
    selection's measure)."""
    vcodes, vuniq = _keys.factorize_column(vals)
    b = _rows.bound_matrix(data.codes, data.n_codes, data.ids, k, c, skey,
                           vcodes.reshape(-1, 1), mark=True, distinct=True, policy=policy,
                           unit_weights=_select.unit_weights(sel))
    assert b.kept is not None
    kc = data.codes[b.kept]
    vc = vcodes[b.kept]
    pair = kc * np.int64(max(len(vuniq), 1)) + vc
    up = np.unique(pair)
    units = b.ids if sel is None else _select.measure(sel, b.ids, b.weighted)
    return up // max(len(vuniq), 1), vuniq[up % max(len(vuniq), 1)], units


def distinct_plan(priv: _plan.Privacy, k: int, c: int, selection: Any = "auto"
                  ) -> tuple[_plan.Part, _select.Selection | None, Any]:
    """The count part (``Δ1 = k c``), the key selection (``domain=None``: its own
    measurement on the people per key, half of ε, :mod:`dpfast.tables._select`) and the
    event of a distinct count."""
    policy = _select.resolve(selection)
    if not priv.select:
        part = _plan.part(priv, Fraction(1), Fraction(k * c), Fraction(k * c * c), k, True)
        return part, None, _plan.release_event(priv, [part])
    share = Fraction(1, 2)
    stat_priv, e_sel, d_sel = _plan.split_for_selection(priv, share)
    part_share = share if stat_priv is priv else Fraction(1)
    part = _plan.part(stat_priv, part_share, Fraction(k * c), Fraction(k * c * c), k, True)
    sel = _select.plan(e_sel, d_sel, k, policy)
    return part, sel, _plan.release_event(priv, [part], sel.delta)


def distinct_release(part: _plan.Part, sel: _select.Selection | None, event: Any, gen: Any,
                     release_id: int | None, data: _inputs._Data, counts: np.ndarray, k: int,
                     c: int, units: np.ndarray | None = None) -> TableRelease:
    """Noise (and select, on ``units``: people per key code, the selection's measure of
    :func:`distinct_pairs`) the exact distinct counts per key code of ``data.uniques``."""
    cand = _candidates(data, counts)
    stream = keynoise.release_stream(gen)  # after the charge
    rkey = keynoise.release_key(gen._key, stream)
    noisy = keynoise.noise_keys(part.law, counts[cand], rkey,
                                _take_keys(data.uniques, cand), keynoise.COUNT_PART)
    keep = None
    if sel is not None:
        assert units is not None
        keep = _select.apply(sel, units[cand], rkey, _take_keys(data.uniques, cand))
    out_keys, (v,) = _finish(data, cand, keep, [noisy])
    sens = {"l1": part.l1, "l2": part.l2, "max_partitions": k, "max_per_partition": c}
    return TableRelease(keys=out_keys, values=v, statistic="count_distinct", event=event,
                        law=part.law, threshold=None if sel is None else sel.threshold,
                        sensitivity=sens, key_names=data.key_names, release_id=release_id,
                        selection=sel)


def count_distinct(values: Any, keys: Any, privacy_ids: Any = None, *,
                   epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                   max_partitions: int = 1, max_per_partition: int = 1, domain: Any = None,
                   noise: str | None = None, rng: RngLike = None, budget: Any = None,
                   note: str = "", use_case: str | None = None, dropna: bool = False,
                   selection: str = "auto", bounding: str = "uniform"
                   ) -> TableRelease:
    """Release the number of distinct ``values`` per key.

    Parameters
    ----------
    values : array_like or pandas Series
        One value per row (ints, floats, str or bytes; a row with a missing value is dropped,
        as ``COUNT(DISTINCT x)`` ignores NULLs).
    keys, privacy_ids, epsilon, delta, rho, domain, noise, rng, budget, note, use_case, dropna
        As in :func:`dpfast.tables.count`.
    max_partitions, max_per_partition : int
        Per person at most ``k`` keys and, per key, at most ``c`` distinct values (chosen
        uniformly among the person's distinct values there, keyed by their own rows).
    bounding : {"uniform", "frequent"}
        Which keys a person keeps when they have more than ``max_partitions``: chosen
        uniformly, or the ones with the most rows (ties broken uniformly at random).

    Returns
    -------
    TableRelease
        ``statistic == "count_distinct"``; exact confidence intervals around the distinct
        count of the kept (key, value) pairs.

    Privacy
    -------
    Sensitivity: let ``D' = D + P`` (add one person ``P``).  Bounding (either policy) is
    a function of each person's own rows, so
    every other person keeps the same pairs in ``D`` and ``D'``, and ``P`` keeps a set
    ``A`` of at most ``c`` distinct values in each of at most ``k`` keys.  The distinct
    count of a key is the size of the union of the kept values there; adding ``A``'s
    values raises it by at most ``|A ∩ key| <= c`` and never lowers it, and only ``P``'s
    ``<= k`` keys change: ``Δ1 = k c``, ``Δ∞ = c``, ``Δ2 = sqrt(k) c`` under add/remove one
    person.  Discrete Laplace noise of scale ``k c / ε`` is ``ε``-DP, discrete Gaussian of
    ``σ`` is ``k c² / (2σ²)``-zCDP (CKS20).  With ``domain=None`` a key is published iff
    the key-selection rule of ``selection=`` (:func:`dpfast.tables.count`) keeps it, a
    separate measurement on the number of people holding the key after bounding
    (sensitivity ``k``, half of ε, δ): ``(ε, δ)``-DP (Desfontaines et al. 2022; Gopi et
    al. 2020).  Tumult Analytics' ``count_distinct`` with per-person bounds.
    """
    if not isinstance(dropna, bool):
        raise TypeError(f"dropna must be True or False, got {type(dropna).__name__}")
    # the NULL policy (whatever dropna): rows with a missing key, id or value leave first
    # (COUNT(DISTINCT x) ignores NULLs)
    keys, privacy_ids, (values,) = _keys.drop_nulls(keys, privacy_ids, values)
    k, c = _common(max_partitions, max_per_partition, privacy_ids)
    pol = bounding_mod.policy_code(bounding)
    priv = _plan.privacy(epsilon, delta, rho, noise, select=domain is None)
    _check_budget(budget, note)
    gen, rid = keynoise.release_generator(rng)
    cols, n, _ = _keys.keys_and_ids(keys, privacy_ids)
    vcol = _keys.column(values, "values")
    if len(vcol) != n:
        raise ValueError(f"values has {len(vcol)} rows, keys have {n}")
    rows = np.arange(n, dtype=np.int64)
    data, _ = _inputs._validate(keys, privacy_ids, rows, (0, max(n, 1)), domain)
    assert data.values is not None
    vals = vcol[data.values]
    data.values = None
    part, sel, event = distinct_plan(priv, k, c, selection)
    _usecase.check(use_case, priv.epsilon, priv.delta, priv.rho)
    kc, _, units = distinct_pairs(data, vals, k, c, bounding_mod.subkey(gen), pol, sel)
    counts = np.bincount(kc, minlength=data.n_codes).astype(np.int64)
    with _charge(budget, event, note):
        return distinct_release(part, sel, event, gen, rid, data, counts, k, c, units)
