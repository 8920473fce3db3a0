"""PipelineDP's PERCENTILE metric by dpfast's exact exponential mechanism on a public grid.

PipelineDP computes percentiles with PyDP's C++ quantile tree (its noise drawn inside C++).
Under :func:`dpfast.compat.pipeline_dp.install` the ``QuantileCombiner`` that
``create_compound_combiner`` builds is :class:`QuantileCombiner` here (a subclass of
PipelineDP's): the same metric names, budget request and bounds, the values of each
partition kept as a mergeable, picklable accumulator, and each percentile released by the
exponential mechanism over the grid :data:`N_CANDIDATES` points evenly spaced in
``[min_value, max_value]``, sampled exactly by :func:`dpfast.exponential`.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import numpy as np
from pipeline_dp import aggregate_params as _ap

import dpfast
from dpfast._core.rounding import float_down
from dpfast.compat.pipeline_dp._state import ORIGINAL
from dpfast.compat.pipeline_dp._state import gen as _gen

__all__ = ["QuantileCombiner", "N_CANDIDATES", "pld_epsilon"]

#: grid size: the released percentile is one of these points of ``[min_value, max_value]``
N_CANDIDATES = 1025
# a partition keeps its values as a list until it has this many, then a slot histogram
_LIST_MAX = 2 * N_CANDIDATES


@functools.lru_cache(maxsize=256)
def _grid(lo: float, hi: float) -> np.ndarray:
    return np.unique(np.linspace(lo, hi, N_CANDIDATES)) if hi > lo else np.array([lo])


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


class _Values:
    """A partition's values: a list while short, then counts per grid slot (mergeable)."""

    __slots__ = ("items", "counts")

    def __init__(self) -> None:
        self.items: list[float] | None = []
        self.counts: np.ndarray | None = None

    def __getstate__(self) -> tuple[Any, Any]:
        return self.items, self.counts

    def __setstate__(self, state: tuple[Any, Any]) -> None:
        self.items, self.counts = state

    def n(self) -> int:
        return len(self.items) if self.items is not None else int(self.counts.sum())

    def to_counts(self, g: np.ndarray) -> np.ndarray:
        if self.counts is None:
            s = _slots(self.items, g) if self.items else np.zeros(0, np.int64)
            self.counts, self.items = np.bincount(s, minlength=2 * g.size).astype(np.int64), None
        return self.counts


class QuantileCombiner(ORIGINAL["QuantileCombiner"]):
    """PipelineDP's ``QuantileCombiner`` with each percentile released by dpfast's exact
    exponential mechanism.

    Privacy
    -------
    Neighbouring relation: PipelineDP's (one privacy unit added or removed, at most
    ``k = max_partitions_contributed`` partitions and ``c =
    max_contributions_per_partition`` values per partition after PipelineDP's contribution
    bounding).  Per partition and percentile ``q`` (``L`` percentiles), the exponential
    mechanism over the public grid ``g_0 < ... < g_{m-1}`` with utility ``u(g_p) =
    -max(a_p - t, t - b_p, 0)`` (``a_p`` values ``< g_p``, ``b_p`` values ``<= g_p``,
    ``t = floor(q n)``): one unit moves ``a_p``, ``b_p`` and ``t`` by at most ``c``, so
    ``Δu = c`` and ``P(g_p) ∝ exp(ε_q u(g_p) / (2c))`` is ``ε_q``-DP (McSherry & Talwar
    2007; Smith 2011), ``ε_q = ε / (k L)`` rounded down.  A unit touches at most ``k``
    partitions: the metric is ``ε``-DP by basic composition -- pure DP, at least as strong
    as PipelineDP's ``(ε, δ)`` for the quantile tree.  With PLD accounting (PipelineDP
    gives the standard deviation ``σ`` of a sensitivity-1 Laplace mechanism instead of
    ``ε``), ``ε = ln(2 e^{√2/(2σ)} - 1)`` (:func:`pld_epsilon`): every ``ε``-DP mechanism
    is then dominated by that Laplace mechanism, so the PLD composition stays valid.  PLD
    accounting with Gaussian noise has no such bound here and raises
    ``NotImplementedError`` (a guarantee is refused rather than weakened).

    Numerics
    --------
    Integer utilities, exact ``t`` (``q`` the exact rational ``percentile / 100``), exact
    Gumbel-max sampling: no candidate's probability is rounded.  The output is one of the
    :data:`N_CANDIDATES` grid points (resolution ``(max - min) / 1024``); the rank error
    is at most ``2c ln(m / β) / ε_q`` with probability ``1 - β``.
    """

    def __init__(self, params: Any, percentiles_to_compute: list[float]) -> None:
        super().__init__(params, percentiles_to_compute)
        self._dpfast_gen = _gen()  # the generator installed now: keeps working after uninstall

    def _bounds(self) -> tuple[float, float]:
        p = self._params.aggregate_params
        return float(p.min_value), float(p.max_value)

    def create_accumulator(self, values: Any) -> _Values:
        acc = _Values()
        for v in values:
            self._add(acc, v)
        return acc

    def _add(self, acc: _Values, value: Any) -> None:
        if acc.items is not None:
            acc.items.append(float(value))
            if len(acc.items) >= _LIST_MAX:
                acc.to_counts(_grid(*self._bounds()))
        else:
            acc.counts += np.bincount(_slots([value], _grid(*self._bounds())),
                                      minlength=acc.counts.size)

    def merge_accumulators(self, accumulator1: _Values, accumulator2: _Values) -> _Values:
        a, b = accumulator1, accumulator2
        if a.items is not None and b.items is not None and len(a.items) + len(b.items) < _LIST_MAX:
            a.items.extend(b.items)
            return a
        g = _grid(*self._bounds())
        a.to_counts(g)
        a.counts = a.counts + b.to_counts(g)
        return a

    def _epsilon(self) -> float:
        spec = self._params.mechanism_spec
        if spec.standard_deviation_is_set:
            if spec.mechanism_type.to_noise_kind() != _ap.NoiseKind.LAPLACE:
                raise NotImplementedError(
                    "dpfast's PERCENTILE under PLD accounting needs Laplace noise: an "
                    "eps-DP mechanism dominated by a Gaussian PLD has no bound here")
            return pld_epsilon(float(spec.noise_standard_deviation))
        return float(spec.eps)

    def compute_metrics(self, accumulator: _Values) -> dict:
        p = self._params.aggregate_params
        k, c = p.max_partitions_contributed, p.max_contributions_per_partition
        if k is None or c is None:
            raise ValueError("PERCENTILE needs max_partitions_contributed and "
                             "max_contributions_per_partition")
        g = _grid(*self._bounds())
        counts = accumulator.to_counts(g)
        cum = np.cumsum(counts)
        a, b = cum[0::2], cum[1::2]  # values < g_p, values <= g_p
        n = int(cum[-1]) if cum.size else 0
        rows = []
        for q in self._percentiles:
            t = math.floor(Fraction(q) * n / 100)
            rows.append(-np.maximum(np.maximum(a - t, t - b), 0))
        eps_q = float_down(Fraction(self._epsilon()) / (int(k) * len(self._percentiles)))
        gen = self._dpfast_gen if self._dpfast_gen is not None else _gen()
        idx = dpfast.exponential(np.array(rows, dtype=np.float64), epsilon=eps_q,
                                 sensitivity=float(c), rng=gen)
        return dict(zip(self.metrics_names(), (float(g[i]) for i in np.atleast_1d(idx)),
                        strict=True))

    def explain_computation(self) -> Any:
        return lambda: (f"Computed percentiles {self._percentiles} with (eps={self._params.eps} "
                        f"delta={self._params.delta}) by dpfast's exact exponential mechanism "
                        f"on a {N_CANDIDATES}-point grid")
