"""PipelineDP's PERCENTILE metric by dpfast's exact exponential mechanism on a public grid.

PipelineDP computes percentiles with PyDP's C++ quantile tree (its noise drawn inside C++).
Under :func:`dpfast.compat.pipeline_dp.install` the ``QuantileCombiner`` that
``create_compound_combiner`` builds is :class:`QuantileCombiner` here (a subclass of
PipelineDP's): the same metric names, budget request and bounds, the values of each
partition kept as a mergeable, picklable accumulator, and each percentile released by the
exponential mechanism over the cells of a grid of :data:`N_CANDIDATES` points evenly spaced
in ``[min_value, max_value]``, sampled exactly.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
from pipeline_dp import aggregate_params as _ap

from dpfast._core.rounding import float_down
from dpfast.compat._measure import sample_measured_rows
from dpfast.compat._random_state import shared_generator, words_for
from dpfast.compat.pipeline_dp._state import ORIGINAL
from dpfast.compat.pipeline_dp._state import gen as _gen

__all__ = ["QuantileCombiner", "N_CANDIDATES", "pld_epsilon", "pld_epsilon_gaussian"]

#: grid size: the released percentile is one of these points of ``[min_value, max_value]``
#: (PyDP's quantile tree has as many leaves: 16 ** 4)
N_CANDIDATES = (1 << 16) + 1
# a partition keeps its values as a list until it has this many, then sparse slot counts
_LIST_MAX = 4096


@functools.lru_cache(maxsize=256)
def _grid(lo: float, hi: float, m: int = N_CANDIDATES) -> np.ndarray:
    return np.unique(np.linspace(lo, hi, m)) if hi > lo else np.array([lo])


def _slots(values: Any, g: np.ndarray) -> np.ndarray:
    """Slot of each value clamped to the grid's range: ``2p + 1`` equal to ``g_p``, ``2p``
    strictly between ``g_{p-1}`` and ``g_p``."""
    v = np.clip(np.asarray(values, dtype=np.float64), g[0], g[-1])
    p = np.searchsorted(g, v, side="left")
    return 2 * p + (g[np.minimum(p, g.size - 1)] == v)


def pld_epsilon(sigma: float) -> float:
    """The largest ``ε'`` (rounded down) such that every ``ε'``-DP mechanism is dominated by
    the Laplace mechanism of standard deviation ``sigma`` and sensitivity 1 (the mechanism
    PipelineDP's PLD accountant composes for PERCENTILE): ``ε' = ln(2 e^{ε/2} - 1)``,
    ``ε = sqrt(2) / sigma``.

    An ``ε'``-DP mechanism is dominated by randomized response ``RR(ε')`` (Kairouz, Oh &
    Viswanath 2015), whose hockey-stick profile is ``(e^{ε'} - e^x) / (1 + e^{ε'})``; the
    Laplace profile is ``1 - e^{(x - ε)/2}``.  With ``y = e^{x/2}`` the difference is
    ``B(1 + y²) - A y`` (``A = e^{-ε/2}``, ``B = 1/(1 + e^{ε'})``), non-negative for all
    ``y >= 1`` iff it is at ``y = 1``: ``e^{ε'} <= 2 e^{ε/2} - 1``.
    """
    import mpmath

    with mpmath.workprec(200):  # |error| < 2^-190 relative: one step down is below
        value = mpmath.log(2 * mpmath.exp(mpmath.sqrt(2) / mpmath.mpf(sigma) / 2) - 1)
    return math.nextafter(float(value), 0.0)


_QuantileCombiner: Any = ORIGINAL["QuantileCombiner"]  # PipelineDP's, taken before patching


@functools.lru_cache(maxsize=256)
def pld_epsilon_gaussian(sigma: float) -> float:
    """A largest-found ``ε'`` such that every ``ε'``-DP mechanism is dominated by the
    Gaussian mechanism of standard deviation ``sigma`` and sensitivity 1 (PipelineDP's PLD
    accountant's view of PERCENTILE with Gaussian noise).

    ``RR(ε')`` (dominating every ``ε'``-DP mechanism; Kairouz, Oh & Viswanath 2015) has the
    decreasing profile ``(e^{ε'} - e^x) / (1 + e^{ε'})`` on ``[0, ε']``, the Gaussian the
    decreasing ``δ(x) = Φ(μ/2 - x/μ) - e^x Φ(-μ/2 - x/μ)`` (``μ = 1/σ``; Balle & Wang 2018).
    On a grid ``x_0 < ... < x_N`` of ``[0, ε']``, ``RR(x_i) <= δ(x_{i+1}) - 1e-12`` for every
    ``i`` bounds ``RR <= δ`` on each ``[x_i, x_{i+1}]`` (both decrease); the ``1e-12`` absorbs
    the float evaluation's error (about ``1e-15``).  Feasibility is monotone in ``ε'``: a
    bisection from the ``x = 0`` bound ``ε' <= 2 atanh(2Φ(μ/2) - 1)`` keeps a feasible value.
    """
    from scipy.special import ndtr

    mu = 1.0 / float(sigma)

    def ok(e: float) -> bool:
        x = np.linspace(0.0, e, 4097)
        rr = (math.exp(e) - np.exp(x[:-1])) / (1.0 + math.exp(e))
        xs = x[1:]
        dg = ndtr(mu / 2 - xs / mu) - np.exp(xs) * ndtr(-mu / 2 - xs / mu)
        return bool(np.all(rr <= dg - 1e-12))

    lo, hi = 0.0, 2.0 * math.atanh(min(2.0 * float(ndtr(mu / 2)) - 1.0, 1.0 - 1e-15))
    if ok(hi):
        return hi
    for _ in range(64):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


class _Values:
    """A partition's values: pending values (a list, at most ``_LIST_MAX``) and sparse counts
    per grid slot (sorted distinct slots and their counts; at most ``2 N_CANDIDATES``
    entries).  Mergeable, picklable."""

    __slots__ = ("items", "slots", "counts")

    def __init__(self, items: list[float] | None = None) -> None:
        self.items: list[float] = items if items is not None else []
        self.slots: np.ndarray | None = None
        self.counts: np.ndarray | None = None

    def __getstate__(self) -> tuple[Any, Any, Any]:
        return self.items, self.slots, self.counts

    def __setstate__(self, state: tuple[Any, Any, Any]) -> None:
        self.items, self.slots, self.counts = state

    def _merge_sparse(self, slots: np.ndarray, counts: np.ndarray) -> None:
        if self.slots is None or self.counts is None:
            self.slots, self.counts = slots, counts
            return
        merged, inverse = np.unique(np.concatenate([self.slots, slots]), return_inverse=True)
        self.counts = np.bincount(inverse, weights=np.concatenate([self.counts, counts]),
                                  minlength=merged.size).astype(np.int64)
        self.slots = merged

    def flush(self, g: np.ndarray) -> None:
        """Move the pending values into the sparse counts."""
        if self.items:
            self._merge_sparse(*np.unique(_slots(self.items, g), return_counts=True))
            self.items = []

    def merge(self, other: _Values, g: Any) -> None:
        """Add ``other``'s values (``g``: the grid, or a function returning it)."""
        self.items.extend(other.items)
        if other.slots is not None and other.counts is not None:
            self._merge_sparse(other.slots, other.counts)
        if len(self.items) >= _LIST_MAX:
            self.flush(g() if callable(g) else g)

    def sparse(self, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sorted distinct slots, counts) of all the values."""
        self.flush(g)
        if self.slots is None or self.counts is None:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return self.slots, self.counts


def _as_values(acc: Any) -> _Values:
    """An accumulator (float, tuple of floats or :class:`_Values`) as a :class:`_Values`."""
    if isinstance(acc, _Values):
        return acc
    return _Values([acc] if isinstance(acc, float) else list(acc))


def _runs(slots: np.ndarray, counts: np.ndarray, n_cells: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The cells grouped into runs of equal utility: each cell holding data alone, each gap
    of empty cells between them one run.  Returns (first cell, cells, values before the run,
    values inside it) per run; the runs cover cells ``0 .. n_cells - 1`` in order."""
    cells = np.minimum((slots - 1) // 2, n_cells - 1)  # slot 2p+1 (= g_p) and 2p+2: cell p
    data, first = np.unique(cells, return_index=True)
    per = np.add.reduceat(counts, first) if counts.size else counts
    prior = np.concatenate([[0], np.cumsum(per)])  # values before each data cell
    k = data.size
    gap_start = np.concatenate([[0], data + 1])  # the gap before data cell i, and the last
    gap_end = np.concatenate([data, [n_cells]])
    starts = np.empty(2 * k + 1, np.int64)
    sizes = np.empty(2 * k + 1, np.int64)
    before = np.empty(2 * k + 1, np.int64)
    inside = np.zeros(2 * k + 1, np.int64)
    starts[0::2], sizes[0::2], before[0::2] = gap_start, gap_end - gap_start, prior
    starts[1::2], sizes[1::2], before[1::2], inside[1::2] = data, 1, prior[:-1], per
    keep = sizes > 0  # empty gaps dropped (their measure is 0)
    return starts[keep], sizes[keep], before[keep], inside[keep]


class _Bits:
    """``random_raw(n)`` and exactly uniform ``below(k)`` on a generator's buffered 64-bit
    words (:func:`dpfast.compat._random_state.words_for`: no array call per draw, no word
    handed out twice)."""

    def __init__(self, gen: Any) -> None:
        self._words = words_for(gen)

    def random_raw(self, n: int) -> np.ndarray:
        return np.array([self._words.next() for _ in range(n)], dtype=np.uint64)

    def below(self, k: int) -> int:
        """Uniform on ``[0, k)``: rejection of the top ``2^64 mod k`` words, then ``mod``."""
        limit = (1 << 64) - (1 << 64) % k
        while True:
            w = self._words.next()
            if w < limit:
                return w % k


class QuantileCombiner(_QuantileCombiner):  # type: ignore[misc,valid-type]
    """PipelineDP's ``QuantileCombiner`` with each percentile released by dpfast's exact
    exponential mechanism.

    Privacy
    -------
    Neighbouring relation: PipelineDP's (one privacy unit added or removed, at most
    ``k = max_partitions_contributed`` partitions and ``c =
    max_contributions_per_partition`` values per partition after PipelineDP's contribution
    bounding).  Per partition and percentile ``q`` (``L`` percentiles), the exponential
    mechanism over the cells ``C_p = [g_p, g_{p+1})`` of the public grid ``g_0 < ... <
    g_{m-1}`` (the last cell closed) with utility ``u(C_p) = -max(A_p - t, t + 1 - A_{p+1},
    0)`` (``A_p`` values ``< g_p``, ``A_{m-1} = n``; ``t = floor(q (n - 1))``: zero exactly
    on the cell holding the order statistic ``x_(t)``), releasing the chosen cell's
    midpoint: one unit moves ``A_p``, ``A_{p+1}`` and ``t`` up (or down) by at most ``c``,
    so ``Δu = c`` and ``P(C_p) ∝ exp(ε_q u(C_p) / (2c))`` is ``ε_q``-DP (McSherry & Talwar
    2007; Smith 2011), ``ε_q = ε / (k L)`` rounded down.  A unit touches at most ``k``
    partitions: the metric is ``ε``-DP by basic composition -- pure DP, at least as strong
    as PipelineDP's ``(ε, δ)`` for the quantile tree.  With PLD accounting (PipelineDP
    gives the standard deviation ``σ`` of a sensitivity-1 Laplace mechanism instead of
    ``ε``), ``ε = ln(2 e^{√2/(2σ)} - 1)`` (:func:`pld_epsilon`): every ``ε``-DP mechanism
    is then dominated by that Laplace mechanism, so the PLD composition stays valid; with
    Gaussian noise ``ε`` is :func:`pld_epsilon_gaussian` (dominated by the sensitivity-1
    Gaussian of that ``σ``, checked on a grid).

    Numerics
    --------
    Integer utilities, exact ``t`` (``q`` the exact rational ``percentile / 100``).  Cells
    of equal utility form runs (each cell holding data alone, each gap between them one
    run): a run is drawn with probability ``∝ size · exp(ε_q u / 2c)`` exactly
    (:func:`dpfast.compat._measure.sample_measured_rows`: certified inversion, exact
    continuation) and a cell uniformly inside it (rejection on 64-bit words, exact) -- the same
    law over cells, at a cost linear in the partition's distinct values, not the grid.  The
    output is the midpoint of one of the ``N_CANDIDATES - 1`` cells (resolution ``(max -
    min) / 65536``, PyDP's tree's leaves); the rank error is at most ``2c ln(m / β) / ε_q``
    with probability ``1 - β``.
    """

    def __init__(self, params: Any, percentiles_to_compute: list[float]) -> None:
        super().__init__(params, percentiles_to_compute)
        self._dpfast_gen = _gen()  # the generator installed now: keeps working after uninstall

    def __getstate__(self) -> dict:
        # pickled (Beam): the receiving process draws from its own generator, never a copy
        # of this one's stream
        return {**self.__dict__, "_dpfast_gen": None}

    #: points of the public grid (its ``n_candidates - 1`` cells are the candidates)
    n_candidates: int = N_CANDIDATES

    def _grid(self) -> np.ndarray:
        p = self._params.aggregate_params
        return _grid(float(p.min_value), float(p.max_value), self.n_candidates)

    def create_accumulator(self, values: Any) -> Any:
        """The values' accumulator: one value is a ``float`` and a few a ``tuple`` of floats
        (objects the garbage collector does not track: a pipeline makes one per privacy unit
        and partition, and tracked ones trigger collections of its whole heap); a
        :class:`_Values` once merged or large."""
        items = [float(v) for v in values]
        if len(items) == 1:
            return items[0]
        if len(items) < _LIST_MAX:
            return tuple(items)
        acc = _Values(items)
        acc.flush(self._grid())
        return acc

    def merge_accumulators(self, accumulator1: Any, accumulator2: Any) -> _Values:
        acc = _as_values(accumulator1)
        if isinstance(accumulator2, _Values):
            acc.merge(accumulator2, self._grid)
        else:
            if isinstance(accumulator2, float):
                acc.items.append(accumulator2)
            else:
                acc.items.extend(accumulator2)
            if len(acc.items) >= _LIST_MAX:
                acc.flush(self._grid())
        return acc

    def _epsilon(self) -> float:
        spec = self._params.mechanism_spec
        if spec.standard_deviation_is_set:
            sigma = float(spec.noise_standard_deviation)
            if spec.mechanism_type.to_noise_kind() == _ap.NoiseKind.LAPLACE:
                return pld_epsilon(sigma)
            return pld_epsilon_gaussian(sigma)
        return float(spec.eps)

    def compute_metrics(self, accumulator: _Values) -> dict:
        p = self._params.aggregate_params
        k, c = p.max_partitions_contributed, p.max_contributions_per_partition
        if k is None or c is None:
            raise ValueError("PERCENTILE needs max_partitions_contributed and "
                             "max_contributions_per_partition")
        g = self._grid()
        if g.size == 1:  # min_value == max_value: nothing to choose
            return dict.fromkeys(self.metrics_names(), float(g[0]))
        coef = self.__dict__.get("_dpfast_coef")
        if coef is None:  # the budget is final once metrics are computed: once per combiner
            eps_q = float_down(Fraction(self._epsilon()) / (int(k) * len(self._percentiles)))
            coef = self._dpfast_coef = Fraction(eps_q) / (2 * int(c))  # exp(eps_q u / 2c)
        gen = self._dpfast_gen
        if gen is None:
            gen = _gen() if _gen() is not None else shared_generator()
        bits = _Bits(gen)
        starts, sizes, before, inside = _runs(*_as_values(accumulator).sparse(g), g.size - 1)
        n = int(before[-1] + inside[-1])
        ranks = [math.floor(Fraction(q) * max(n - 1, 0) / 100) for q in self._percentiles]
        t = np.array(ranks, dtype=np.int64)[:, None]
        u = -np.maximum(np.maximum(before - t, t + 1 - before - inside), 0)  # (L, runs)
        runs = sample_measured_rows(u.astype(np.float64), sizes.astype(np.float64), coef, bits)
        out = []
        for j in runs.tolist():
            cell = int(starts[j]) + (bits.below(int(sizes[j])) if sizes[j] > 1 else 0)
            out.append(float((g[cell] + g[cell + 1]) / 2))  # the chosen cell's midpoint
        return dict(zip(self.metrics_names(), out, strict=True))

    def explain_computation(self) -> Any:
        return lambda: (f"Computed percentiles {self._percentiles} with (eps={self._params.eps} "
                        f"delta={self._params.delta}) by dpfast's exact exponential mechanism "
                        f"over the {self.n_candidates - 1} cells of a grid")
