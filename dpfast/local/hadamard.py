"""Apple's Hadamard count-mean sketch (HCMS): one bit per report."""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from dpfast._kernels import local as _lk
from dpfast.local._lanes import _chunk_for, _flip_threshold, _forced, _run_lanes
from dpfast.local._validate import _binary, _indices, _mpf
from dpfast.local.estimate import FrequencyEstimate
from dpfast.local.hashing import fingerprint
from dpfast.local.sketch import HcmsReports, Sketch, _SketchBase
from dpfast.noise import _exact
from dpfast.random import RngLike, as_generator


class HadamardCountMeanSketch(_SketchBase):
    """Apple's Hadamard count-mean sketch (HCMS): one bit per report.

    Parameters
    ----------
    epsilon : float
        Per-report privacy parameter.
    num_hashes : int
        ``k`` rows.
    sketch_size : int
        ``m`` columns, a power of two.
    hash_seed : int, bytes or None
        Seed of the public hash functions.

    Notes
    -----
    Client: ``j`` uniform in ``[0, k)``, ``l`` uniform in ``[0, m)``, the Hadamard entry
    ``w = H_m[h_j(v), l]`` flipped with probability ``1 / (1 + e^eps)``; send
    ``(j, l, w)``.  Server: ``M[j, l] += k c w`` with ``c = (e^eps + 1) / (e^eps - 1)``,
    then ``M <- M H_m^T`` and the CMS estimator (Apple 2017, Algorithms 4-5).

    **Privacy**

    ``epsilon``-LDP: one bit of randomized response (ratio ``e^epsilon``); ``j`` and
    ``l`` do not depend on the input (Apple 2017, Theorem 3.2).
    Event: ``events.Epsilon(epsilon, neighbouring="replace_one")`` (local DP).
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").

    **Numerics**

    The flip probability is irrational and sampled exactly; the transform is float
    post-processing.
    """

    def __init__(self, epsilon: float, num_hashes: int = 64, sketch_size: int = 1024, *,
                 hash_seed: Any = None) -> None:
        super().__init__(epsilon, num_hashes, sketch_size, hash_seed)
        self._hadamard = True
        m = self.sketch_size
        if m & (m - 1):
            raise ValueError(f"sketch_size must be a power of two, got {m}")
        self._flip = _flip_threshold(self._eps)
        with mpmath.workdps(40):
            em1 = mpmath.expm1(_mpf(self._eps))  # e^eps - 1, exact for tiny eps
            self.flip_probability = float(1 / (2 + em1))
            self.c = float((em1 + 2) / em1)

    def __repr__(self) -> str:
        return (f"HadamardCountMeanSketch(epsilon={self.epsilon!r}, "
                f"num_hashes={self.num_hashes}, sketch_size={self.sketch_size})")

    def perturb(self, items: Any, *, rng: RngLike = None) -> HcmsReports:
        """Client side for every user at once (items: ints or strings, 1-D)."""
        fp = fingerprint(items)
        n = fp.size
        k, m = self.num_hashes, self.sketch_size
        rows = np.empty(n, np.int64)
        cols = np.empty(n, np.int64)
        out = np.empty(n, np.uint8)
        thr = self._flip
        cw, term = thr.words, thr.terminal
        tables = self._tables
        wpc = 7.5 / 64 + 2.1
        chunk = _chunk_for(wpc)
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.hcms_client_kernel(buf, st, key, nonces, chunk_, base, count, fp, tables, k,
                                   m, rows, cols, out, cw, term, force, start, resume, pcount,
                                   pidx)

        def finish(i: int, src: _exact.WordSource) -> None:
            if thr.decide(src, forced):
                out[i] ^= 1

        _run_lanes(as_generator(rng), n, wpc, chunk, 64, call, finish)
        return HcmsReports(rows, cols, out)

    def aggregate(self, reports: HcmsReports) -> Sketch:
        """Integer tallies: ``ones[j, l]`` = sum of the ±1 report bits at (j, l)."""
        if not isinstance(reports, tuple) or len(reports) != 3:
            raise TypeError("reports must be an HcmsReports (rows, cols, bits) triple")
        k, m = self.num_hashes, self.sketch_size
        shapes = [np.shape(r) for r in reports]
        if any(len(s) != 1 for s in shapes) or len(set(shapes)) != 1:
            raise ValueError(f"reports.rows, .cols and .bits must be 1-D of equal length, got "
                             f"shapes {shapes}")
        rows = _indices(reports[0], "reports.rows", k)
        cols = _indices(reports[1], "reports.cols", m)
        bits = _binary(reports[2], "reports.bits")
        n = rows.size
        cell = rows * m + cols
        pm = 2 * bits.astype(np.int64) - 1
        sums = np.bincount(cell, weights=pm, minlength=k * m)
        ones = np.rint(sums).astype(np.int64).reshape(k, m)
        totals = np.bincount(rows, minlength=k).astype(np.int64)
        return Sketch(ones, totals, n)

    def matrix(self, sketch: Sketch) -> np.ndarray:
        """The transformed sketch ``M H^T`` (Apple's Algorithm 5)."""
        mat = self.num_hashes * self._scale() * sketch.ones.astype(np.float64)
        return _fwht(mat)

    def estimate(self, data: HcmsReports | Sketch, candidates: Any) -> FrequencyEstimate:
        """Unbiased count estimates of ``candidates``, with the fixed-hash mean squared
        errors as ``variance`` (as for :meth:`CountMeanSketch.estimate`)."""
        return self._estimate(self._sketch_of(data, True), candidates)

    def _noise_scale(self) -> float:
        return self.c * self.c  # inf (not OverflowError) past the float range

    def variance(self, n: float, count: float = 0.0, sum_sq_others: float | None = None
                 ) -> float:
        """Variance of a count estimate over the clients' randomness and random
        (3-independent) hash functions:
        ``(m/(m-1))^2 [n c^2 - c_d - (n - c_d) E[a^2] + S2 (1/(k m))(1 - 1/m)]`` with
        ``E[a^2] = (1/(k m))(1 - 1/m) + 1/m^2``, ``c_d`` = ``count``,
        ``S2 = sum over other items of n_v^2`` (default ``n - c_d``)."""
        k, m = self.num_hashes, self.sketch_size
        s2 = (n - count) if sum_sq_others is None else sum_sq_others
        ea2 = (1 / (k * m)) * (1 - 1 / m) + 1 / m ** 2
        # c * c, not c ** 2: inf (not OverflowError) past the float range
        v = n * self.c * self.c - count - (n - count) * ea2 + s2 * (1 / (k * m)) * (1 - 1 / m)
        return (m / (m - 1)) ** 2 * v


def _fwht(a: np.ndarray) -> np.ndarray:
    """Fast Walsh-Hadamard transform along the last axis (Sylvester order, unnormalized)."""
    a = a.copy()
    m = a.shape[-1]
    h = 1
    while h < m:
        a = a.reshape(*a.shape[:-1], m // (2 * h), 2, h)
        x = a[..., 0, :].copy()
        y = a[..., 1, :]
        a[..., 0, :] = x + y
        a[..., 1, :] = x - y
        a = a.reshape(*a.shape[:-3], m)
        h *= 2
    return a



