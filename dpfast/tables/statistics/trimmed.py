"""The winsorised (trimmed) mean per key: private per-key quantiles, then a mean clamped
between them -- two phases, one plan, one charge.

Phase 1 releases, per key, the ``trim`` and ``1 - trim`` quantiles of the values (the rank
plan of :mod:`dpfast.tables._ranks`: exponential mechanisms on the public grid, the key
selection when the keys are private).  Phase 2 clamps every kept row to its key's two
released quantiles ``[a, b]`` and releases the mean of the clamped rows, normalised to
``[0, 1]``: ``w = floor(W (clip(x, a, b) - a) / (b - a))`` in integers (``W = 2**16``),
noisy count and noisy centred sum ``Σ (2w - W)`` with exact discrete Laplace noise, then
``a + (b - a) (1 + S / N W) / 2``.  Both phases read the same bounded rows: the sparse
``(key, grid slot) -> rows`` table of phase 1 (a row is represented by its grid point, or
the midpoint of its grid interval), so the release needs one pass over the data, on one
machine or a cluster.
"""

from __future__ import annotations

import dataclasses
import numbers
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.tables import _inputs, _plan, _ranks, keynoise
from dpfast.tables import _quantile_em as _em
from dpfast.tables import state as _state
from dpfast.tables.release import NoiseLaw, TableRelease, _alpha
from dpfast.tables.statistics.base import COMMON, Statistic

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pandas as pd

    from dpfast import random as _random
    from dpfast.tables._inputs import _Data
    from dpfast.tables.run import Columns, Rows, Source
    from dpfast.tables.spec import ReleaseSpec

__all__ = ["TrimmedMean", "TrimmedPlan", "TrimmedInterval"]

#: the clamped rows' weights are integers in ``[0, W]``
W = 1 << 16
_Partials = tuple["_Data", "_ranks.Table", "np.ndarray | None"]


def _trim(x: object) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (numbers.Real, np.number)):
        raise TypeError(f"trim must be a number in (0, 0.5), got {x!r}")
    f = float(x)
    if not 0.0 < f < 0.5:
        raise ValueError(f"trim must be in (0, 0.5), got {x!r}")
    return f


@dataclasses.dataclass(frozen=True)
class TrimmedInterval:
    """Conservative ``1 - alpha`` intervals of a trimmed mean: given the released clamps
    ``[a, b]`` of each key (phase 1: public), the noisy count's and the noisy centred
    sum's exact intervals at ``alpha / 2`` each, the ratio's extremes over that box, in
    ``[0, 1]`` and mapped to ``[a, b]``.  They cover the noiseless phase-2 estimate (the
    kept rows' grid representatives clamped to ``[a, b]``) with probability
    ``>= 1 - alpha``.  Post-processing; kept and cached with the release."""

    kind: ClassVar[str] = "trimmed_mean"

    s: np.ndarray  # noisy centred sums, units of 1/W
    n: np.ndarray  # noisy counts
    law_s: NoiseLaw
    law_n: NoiseLaw
    a: np.ndarray
    b: np.ndarray

    def __call__(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        half = float(_alpha(alpha) / 2)
        ws = float(self.law_s.halfwidth(half)) / W
        wn = float(self.law_n.halfwidth(half))
        n_lo = np.maximum(self.n - wn, 1).astype(np.float64)
        n_hi = (self.n + wn).astype(np.float64)
        s = self.s.astype(np.float64) / W
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.stack([(s - ws) / n_lo, (s - ws) / n_hi, (s + ws) / n_lo,
                          (s + ws) / n_hi])
        low = np.clip((1 + r.min(axis=0)) / 2, 0.0, 1.0)
        high = np.clip((1 + r.max(axis=0)) / 2, 0.0, 1.0)
        bad = n_hi < 1
        low[bad], high[bad] = 0.0, 1.0
        span = self.b - self.a
        return self.a + span * low, self.a + span * high

    def to_state(self) -> dict[str, object]:
        return {"s": _state.encode_array(self.s), "n": _state.encode_array(self.n),
                "law_s": _state.encode_law(self.law_s),
                "law_n": _state.encode_law(self.law_n),
                "a": _state.encode_array(self.a), "b": _state.encode_array(self.b)}

    @classmethod
    def from_state(cls, d: Mapping[str, Any]) -> TrimmedInterval:
        return cls(_state.decode_array(d["s"]), _state.decode_array(d["n"]),
                   _state.decode_law(d["law_s"]), _state.decode_law(d["law_n"]),
                   _state.decode_array(d["a"]), _state.decode_array(d["b"]))


_state.register_interval(TrimmedInterval.kind, TrimmedInterval)


def _weights(table: _ranks.Table, cand: np.ndarray, grid: np.ndarray, a: np.ndarray,
             b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per key of ``cand`` (sorted codes): the kept rows ``N`` and the centred sum
    ``Σ (2w - W)`` of their weights ``w = floor(W (clip(r, a, b) - a) / (b - a))`` in
    ``[0, W]`` (``r``: a row's grid point, or the midpoint of its grid interval; ``w = 0``
    where ``a = b``), exact int64 (fewer than ``2**40`` rows of at most ``2**16``)."""
    tc, ts, tn = table
    starts = np.searchsorted(tc, cand, side="left")
    ends = np.searchsorted(tc, cand, side="right")
    lens = ends - starts
    total = int(lens.sum())
    owner = np.repeat(np.arange(cand.shape[0]), lens)  # the cand position of each entry
    idx = np.repeat(starts, lens) + np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
    slot = ts[idx]
    rows = tn[idx]
    p = slot // 2
    top = grid.shape[0] - 1
    on_point = slot % 2 == 1  # 2p + 1: equal to g_p; 2p: strictly between g_{p-1}, g_p
    here = grid[np.minimum(p, top)]
    rep = np.where(on_point, here, (grid[np.clip(p - 1, 0, top)] + here) / 2)
    lo, hi = a[owner], b[owner]
    span = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(span > 0, (np.clip(rep, lo, hi) - lo) / span, 0.0)
    w = np.clip(np.floor(frac * W), 0, W).astype(np.int64)
    n = np.zeros(cand.shape[0], np.int64)
    np.add.at(n, owner, rows)
    s = np.zeros(cand.shape[0], np.int64)
    np.add.at(s, owner, rows * (2 * w - W))
    return n, s


@dataclasses.dataclass
class TrimmedPlan:
    """The two phases' plan (:class:`dpfast.tables.run.Plan`): the rank plan of the two
    quantiles at half of ε, the count and centred-sum parts at a quarter each."""

    trim: float
    rank: _ranks.Plan
    count_part: _plan.Part
    sum_part: _plan.Part
    event: _events.DpEvent

    def local_partials(self, rows: Rows, subkey: np.ndarray) -> _Partials:
        return self.rank.local_partials(rows, subkey)

    def partition_partials(self, pdf: pd.DataFrame | Mapping[str, np.ndarray],
                           cols: Columns, subkey: np.ndarray) -> tuple[pd.DataFrame, int]:
        return self.rank.partition_partials(pdf, cols, subkey)

    def merge(self, results: list[tuple[pd.DataFrame, int]], cols: Columns) -> _Partials:
        return self.rank.merge(results, cols)

    def finish(self, partials: _Partials, gen: _random.Generator,
               release_id: int | None) -> TableRelease:
        data, table, units = partials
        rank = self.rank
        if units is None:
            assert data.domain_codes is not None, "domain=None needs the unit counts"
            units = np.zeros(data.n_codes, np.int64)
        stream = keynoise.release_stream(gen)  # after the charge
        rkey = keynoise.release_key(gen._key, stream)
        cand = _ranks.select_keys(rank, data, units, rkey)                  # phase 1
        keys = _ranks._take(data.uniques, cand)
        idx = _em.sample(table, cand, keys, rank.qs, rank.eps_q, rank.c, rank.grid.shape[0],
                         rkey)
        grid = rank.grid.astype(np.float64)
        a = grid[idx.min(axis=1)] if cand.shape[0] else np.zeros(0)
        b = grid[idx.max(axis=1)] if cand.shape[0] else np.zeros(0)
        n, s = _weights(table, cand, grid, a, b)                            # phase 2
        noisy_n = keynoise.noise_keys(self.count_part.law, n, rkey, keys, keynoise.COUNT_PART)
        noisy_s = keynoise.noise_keys(self.sum_part.law, s, rkey, keys, keynoise.SUM_PART)
        if data.domain_codes is not None:  # the domain's order
            pos = np.searchsorted(cand, data.domain_codes)
            keys = _ranks._take(data.uniques, data.domain_codes)
            a, b, noisy_n, noisy_s = a[pos], b[pos], noisy_n[pos], noisy_s[pos]
        nn = np.maximum(noisy_n, 1).astype(np.float64)
        frac = np.clip((1 + noisy_s.astype(np.float64) / (nn * W)) / 2, 0.0, 1.0)
        values = np.where(noisy_n > 0, a + (b - a) * frac, (a + b) / 2)
        sens = {"l1": self.sum_part.l1, "l2": self.sum_part.l2, "max_partitions": rank.k,
                "max_per_partition": rank.c, "trim": self.trim,
                "quantile_epsilon_per_key": rank.eps_q}
        return TableRelease(
            keys=keys, values=values.astype(np.float64), statistic="trimmed_mean",
            event=self.event, law=self.sum_part.law,
            threshold=None if rank.select is None else rank.select.threshold,
            sensitivity=sens, key_names=data.key_names, release_id=release_id,
            selection=rank.select,
            interval=TrimmedInterval(np.asarray(noisy_s), np.asarray(noisy_n),
                                     self.sum_part.law, self.count_part.law,
                                     np.asarray(a, np.float64), np.asarray(b, np.float64)))


def plan_of(spec: ReleaseSpec, source: Source) -> TrimmedPlan:
    """Shares, grid, laws and the composed event of a trimmed mean (no row is read)."""
    st = spec.statistics[0]
    trim = _trim(st.param("trim", 0.1))
    priv = spec.privacy()
    if priv.noise != "laplace":
        raise ValueError("trimmed_mean takes epsilon (and delta for private key selection), "
                         "not rho or Gaussian noise: its quantiles are pure-DP")
    assert priv.epsilon is not None
    eps = Fraction(priv.epsilon)
    e_rank = float_down(eps / 2)
    e_mean = float_down(eps - Fraction(e_rank))
    k, c = _ranks.common(spec.max_partitions, spec.max_per_partition,
                         source.has_privacy_ids())
    if c * W >= 1 << 62:
        raise ValueError(f"max_per_partition = {c} is too large for exact sums of the "
                         "trimmed mean's weights")
    candidates = spec.option("candidates")
    bounds = _ranks.grid_bounds(spec.bounds, candidates)
    integer = source.value_kind() in "iu" and not spec.option("float_grid", False)
    bnd = _inputs._bounds(bounds, integer)
    rank = _ranks._make((trim, 1.0 - trim), False, k, c, bnd, integer,
                        spec.option("n_candidates", 256),
                        None if candidates is None else np.asarray(candidates, np.float64),
                        dataclasses.replace(priv, epsilon=e_rank), spec.selection,
                        spec.bounding, bounds)
    mean_priv = _plan.Privacy("laplace", e_mean, 0.0, None, False)
    half = Fraction(1, 2)
    count_part = _plan.part(mean_priv, half, Fraction(k * c), Fraction(k * c * c), k, True)
    sum_part = _plan.part(mean_priv, half, Fraction(k * c * W), Fraction(k * (c * W) ** 2),
                          k, True)
    event = _events.with_neighbouring(
        _events.Composed((rank.event, count_part.event, sum_part.event)), _events.ADD_REMOVE)
    return TrimmedPlan(trim, rank, count_part, sum_part, event)


class TrimmedMean(Statistic):
    """The winsorised (trimmed) mean of a value column per key."""

    name = "trimmed_mean"
    sql_names = ("trimmed_mean",)
    value = True
    bounds = True
    numeric = True
    gaussian = False
    params = {"trim": 0.1}
    param_types = {"trim": "float"}
    param_help = {"trim": "fraction clamped at each end, in (0, 0.5) (default 0.1)"}
    common = tuple(c for c in COMMON if c not in ("rho", "noise"))
    summary = "winsorised (trimmed) mean of a value column per key"
    doc = """Release the winsorised (trimmed) mean of ``values`` per key.

    Each key's values are clamped between that key's private ``trim`` and ``1 - trim``
    quantiles, then averaged: a mean that one outlier cannot move far, where a plain
    :func:`mean` needs bounds wide enough for every value.

    Parameters
    ----------
    values : array_like or pandas Series
        One number per row (a row with a missing value is dropped).
    keys, privacy_ids, epsilon, delta, max_partitions, max_per_partition, domain, rng,
    budget, note, use_case, dropna, selection, bounding
        As in :func:`dpfast.tables.count` (``epsilon`` only: no ``rho``, no Gaussian
        noise).
    bounds : tuple (lo, hi)
        The public range of the values: the quantiles' candidate grid (256 points) spans
        it, and every value is clamped to it first.
    trim : float
        The fraction clamped at each end, in ``(0, 0.5)`` (default 0.1: the 10th and
        90th percentiles).

    Returns
    -------
    TableRelease
        ``statistic == "trimmed_mean"``; conservative confidence intervals given the
        released clamps (``confidence_interval(alpha)``), ``sensitivity["trim"]``.

    Privacy
    -------
    Two phases, composed: ``ε/2`` for the quantiles, ``ε/4`` each for the count and the
    centred sum of phase 2 (rounded down, so the total stays within ``ε``); add/remove
    one person.  Phase 1 is :func:`dpfast.tables.quantile` at ``q = (trim, 1 - trim)``:
    per key two exponential mechanisms on the public grid (``Δu = c`` rows, McSherry &
    Talwar 2007; Smith 2011), a person touching at most ``k`` keys; with ``domain=None``
    its key selection (half of its ``ε/2``, and ``δ``) decides the released keys.  Phase 2
    is post-processing of phase 1's output (the clamps ``[a, b]`` of each released key
    are public) followed by a mean of weights ``w`` in ``[0, W]`` (``W = 2**16``): one
    person's ``c`` kept rows per key change the count by at most ``c`` and the centred sum
    ``Σ (2w - W)`` by at most ``c W``, in at most ``k`` keys: discrete Laplace noise of
    scales ``k c / (ε/4)`` and ``k c W / (ε/4)`` (CKS20).  The weights are a function of a
    row's grid slot and the public clamps only; both phases read the rows that one
    contribution bounding kept.  Event ``Composed((quantiles, count, sum))``: ``ε``-DP,
    or ``(ε, δ_sel)``-DP with private key selection.

    Notes
    -----
    A row is represented by its grid point (or the midpoint of its grid interval), so
    the estimate is exact up to the grid's resolution ``(hi - lo) / 255``.
    """
    dask_doc = ""

    @classmethod
    def plan(cls, spec: ReleaseSpec, source: Source) -> TrimmedPlan:
        return plan_of(spec, source)
