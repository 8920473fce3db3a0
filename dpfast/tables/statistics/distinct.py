"""Distinct counts: the number of distinct values of a column per key (``count_distinct``).

Everything the statistic needs, one place: :class:`CountDistinct` (the registry entry) and
its plan :class:`DistinctPlan` -- the count part (``Δ1 = k c``), the key selection and the
event from the spec alone; the exact partials (the distinct (key, value) pairs each person
keeps, :func:`distinct_pairs`) of local rows, of one Dask partition, and their merge; the
noise, selection and release (:func:`distinct_release`).  The pipeline
(:func:`dpfast.tables.run.release`) charges between the partials and :meth:`finish`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from dpfast.tables import _inputs, _keys, _merge, _plan, _rows, _select, keynoise
from dpfast.tables import bounding as bounding_mod
from dpfast.tables.groupby import _candidates, _finish, _take_keys
from dpfast.tables.release import TableRelease
from dpfast.tables.statistics.base import Statistic

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd

    from dpfast import random as _random
    from dpfast.accounting.events import DpEvent
    from dpfast.tables.run import Columns, Rows, Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["CountDistinct", "DistinctPlan", "DistinctPartials", "distinct_pairs",
           "distinct_plan", "distinct_release"]

_VALUE = "__dpfast_value"  # a partition's kept (key, value) pairs: the value column
_UNITS = "__dpfast_units"  # the people per key, on the key's first pair


def distinct_pairs(data: _inputs._Data, vals: np.ndarray, k: int, c: int, skey: np.ndarray,
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


def distinct_plan(priv: _plan.Privacy, k: int, c: int, selection: str = "auto"
                  ) -> tuple[_plan.Part, _select.Selection | None, DpEvent]:
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


def distinct_release(part: _plan.Part, sel: _select.Selection | None, event: DpEvent,
                     gen: _random.Generator,
                     release_id: int | None, data: _inputs._Data, counts: np.ndarray, k: int,
                     c: int, units: np.ndarray | None = None) -> TableRelease:
    """Noise (and select, on ``units``: people per key code, the selection's measure of
    :func:`distinct_pairs`) the exact distinct counts per key code of ``data.uniques``.
    The budget has been charged."""
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


@dataclasses.dataclass(frozen=True)
class DistinctPartials:
    """The exact per-key partials of a distinct count: the key coding (``data``), the
    number of distinct kept values per key code and the selection's measure per key code
    (people, or weighted people)."""

    data: _inputs._Data
    counts: np.ndarray
    units: np.ndarray


@dataclasses.dataclass(frozen=True)
class DistinctPlan:
    """The data-independent part of a distinct count (:class:`dpfast.tables.run.Plan`):
    ``k`` keys and ``c`` distinct values per key and person, the count part, the key
    selection (None: a public domain), the event and the bounding policy code."""

    k: int
    c: int
    part: _plan.Part
    select: _select.Selection | None
    event: DpEvent
    policy: int

    # ----------------------------------------------------------------- exact partials
    def _pairs(self, keys: npt.ArrayLike | tuple[npt.ArrayLike, ...], privacy_ids: object,
               values: object, domain: object,
               subkey: np.ndarray) -> tuple[_inputs._Data, np.ndarray, np.ndarray, np.ndarray]:
        """Validate one batch of rows and bound it: ``(data, kept pair key codes, their
        values, people per key code)``."""
        # the NULL policy: rows with a missing key, id or value leave first
        # (COUNT(DISTINCT x) ignores NULLs)
        keys, privacy_ids, (values,) = _keys.drop_nulls(keys, privacy_ids, values)
        _, n, _ = _keys.keys_and_ids(keys, privacy_ids)
        vcol = _keys.column(values, "values")
        if len(vcol) != n:
            raise ValueError(f"values has {len(vcol)} rows, keys have {n}")
        rows = np.arange(n, dtype=np.int64)
        data, _ = _inputs._validate_present(keys, privacy_ids, rows, (0, max(n, 1)),
                                            domain)
        assert data.values is not None
        vals = vcol[data.values]
        data.values = None
        kc, vv, units = distinct_pairs(data, vals, self.k, self.c, subkey, self.policy,
                                       self.select)
        return data, kc, vv, units

    def local_partials(self, source: Rows, subkey: np.ndarray) -> DistinctPartials:
        """Validate the local rows (:class:`dpfast.tables.run.Rows`, ``values`` the value
        column) and count the distinct kept values per key."""
        data, kc, _, units = self._pairs(source.keys, source.privacy_ids, source.values,
                                         source.domain, subkey)
        counts = np.bincount(kc, minlength=data.n_codes).astype(np.int64)
        return DistinctPartials(data, counts, units)

    def partition_partials(self, pdf: pd.DataFrame | Mapping[str, np.ndarray], cols: Columns,
                           subkey: np.ndarray) -> tuple[pd.DataFrame, int]:
        """One partition (every person's rows are in it; a pandas DataFrame or a dict of
        numpy columns): the distinct (key, value) pairs its people keep, by key value,
        with the people per key on each key's first pair; and its number of rows."""
        import pandas as pd

        if len(cols.values) != 1:
            raise ValueError(f"count_distinct reads one value column, got {cols.values!r}")
        names = list(cols.by)
        keys = pdf[names[0]] if len(names) == 1 else tuple(pdf[n] for n in names)
        ids = None if cols.privacy_unit is None else pdf[cols.privacy_unit]
        nrows = len(pdf[names[0]])
        data, kc, vv, units = self._pairs(keys, ids, pdf[cols.values[0]], cols.domain,
                                          subkey)
        uk = _take_keys(data.uniques, kc)
        out = {n: (uk[j] if isinstance(uk, tuple) else uk) for j, n in enumerate(names)}
        out[_VALUE] = vv
        # the people per key ride on the key's first pair (a key kept by someone has a pair)
        per_row = np.zeros(kc.shape[0], np.int64)
        _, first = np.unique(kc, return_index=True)
        per_row[first] = units[kc[first]]
        out[_UNITS] = per_row
        return pd.DataFrame(out), int(nrows)

    def merge(self, results: Sequence[tuple[pd.DataFrame, int]], cols: Columns) -> DistinctPartials:
        """The partitions' pairs (:meth:`partition_partials`' results) united per key, keys
        coded as on one machine: the distinct count per key and the people per key
        (checked sums: a person's rows are in one partition)."""
        import pandas as pd

        names = list(cols.by)
        parts = pd.concat([r[0] for r in results], ignore_index=True)
        fk, codes, domain_codes = _merge.key_codes(parts, names, cols.domain)
        codes = np.ascontiguousarray(codes, np.int64)
        data = _inputs._Data(codes, fk.size, fk.uniques, None, None, domain_codes,
                             tuple(names))
        vcodes, vuniq = _keys.factorize_column(_keys.column(parts[_VALUE], "values"))
        nv = max(len(vuniq), 1)
        up = np.unique(codes * np.int64(nv) + vcodes)  # the union over partitions
        counts = np.bincount(up // nv, minlength=data.n_codes).astype(np.int64)
        units = _merge.checked_total(codes, parts[_UNITS], data.n_codes)
        return DistinctPartials(data, counts, units)

    # ----------------------------------------------------------------- after the charge
    def finish(self, partials: DistinctPartials, gen: _random.Generator,
               release_id: int | None) -> TableRelease:
        """Noise, select and report (the budget has been charged)."""
        return distinct_release(self.part, self.select, self.event, gen, release_id,
                                partials.data, partials.counts, self.k, self.c,
                                partials.units)


class CountDistinct(Statistic):
    """The number of distinct values of a column per key, each person bounded to
    ``max_partitions`` keys and ``max_per_partition`` distinct values per key."""

    name = "count_distinct"
    law_interval = True
    sql_names = ("count_distinct",)
    value = True
    bounds = False
    bounding_mode = "distinct"
    summary = "distinct values of a column per key"
    nonnegative = True
    doc = """Release the number of distinct ``values`` per key.

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
    dask_doc = (
        """:func:`dpfast.tables.count_distinct` of the ``value`` column per key (bit-identical:
    the workers send the distinct (key, value) pairs each person keeps; the driver takes
    their union and counts it).

    Privacy
    -------
    That of :func:`dpfast.tables.count_distinct`: ``Δ1 = k c`` under add/remove one person.
    The partials are computed (the rows validated) before the charge, as on one machine.
    """)

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> DistinctPlan:
        k, c = spec.max_partitions, spec.max_per_partition
        if not source.has_privacy_ids():
            k, c = 1, 1  # every row is a different person: one row, one key
        policy = bounding_mod.policy_code(spec.bounding)
        part, sel, event = distinct_plan(spec.privacy(), k, c, spec.selection)
        return DistinctPlan(k, c, part, sel, event, policy)

