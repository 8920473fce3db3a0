"""Apple's count-mean sketch (CMS) and the sketch state shared with the Hadamard CMS."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import mpmath
import numba
import numpy as np

from dpfast import _exact
from dpfast._kernels import local as _lk
from dpfast.accounting import events
from dpfast.local._lanes import (
    _chunk_for,
    _flip_threshold,
    _forced,
    _lanes_words,
    _run_lanes,
    _threads,
)
from dpfast.local._validate import _epsilon, _int, _mpf
from dpfast.local.estimate import FrequencyEstimate
from dpfast.local.hashing import _resolve_seed, fingerprint, hash_tables
from dpfast.random import Generator, as_generator


@dataclasses.dataclass
class Sketch:
    """Server-side state of a (Hadamard) count-mean sketch: integer tallies.

    ``ones[j, r]``: CMS - reports of row ``j`` whose coordinate ``r`` is +1; HCMS - sum
    of the ±1 bits of reports at (row j, column r).  ``totals[j]``: reports of row j.
    Sketches of shards add with ``+``.
    """

    ones: np.ndarray
    totals: np.ndarray
    n: int

    def __add__(self, other: Sketch) -> Sketch:
        if not isinstance(other, Sketch) or other.ones.shape != self.ones.shape:
            return NotImplemented
        return Sketch(self.ones + other.ones, self.totals + other.totals, self.n + other.n)


class CmsReports(NamedTuple):
    """Count-mean-sketch reports: hash index ``rows (n,)`` and the perturbed ±1 vector
    ``bits (n, ceil(m / 8)) uint8`` packed like ``np.packbits(..., bitorder="little")``
    (bit 1 = +1)."""

    rows: np.ndarray
    bits: np.ndarray


class HcmsReports(NamedTuple):
    """Hadamard count-mean-sketch reports: ``rows``, ``cols`` and the perturbed Hadamard
    entry ``bits`` (uint8, 1 = +1)."""

    rows: np.ndarray
    cols: np.ndarray
    bits: np.ndarray


class _SketchBase:
    def __init__(self, epsilon: float, num_hashes: int, sketch_size: int,
                 hash_seed: Any) -> None:
        self._eps = _epsilon(epsilon)
        self.epsilon = float(epsilon)
        self.num_hashes = _int(num_hashes, "num_hashes", 1, 1 << 16)
        self.sketch_size = _int(sketch_size, "sketch_size", 2, 1 << 24)
        self.hash_seed = _resolve_seed(hash_seed)
        self._tables = hash_tables(self.hash_seed, self.num_hashes)

    @property
    def event(self) -> events.Epsilon:
        """Privacy event of one report."""
        return events.Epsilon(self.epsilon)

    def buckets(self, items: Any) -> np.ndarray:
        """``(len(items), num_hashes)`` sketch columns ``h_j(item)`` (the public hashes)."""
        fp = fingerprint(items)
        out = np.empty((fp.size, self.num_hashes), np.int64)
        _lk.hash_buckets(self._tables, np.zeros(fp.size, np.int64), fp, self.sketch_size,
                         out)
        return out

    def _frequency(self, matrix: np.ndarray, n: int, candidates: Any) -> np.ndarray:
        k, m = self.num_hashes, self.sketch_size
        cols = self.buckets(candidates)
        vals = matrix[np.arange(k)[None, :], cols].mean(axis=1)
        return m / (m - 1) * (vals - n / m)

    def _plugin(self, counts: np.ndarray, n: int) -> np.ndarray:
        c = np.clip(counts, 0, n)
        rest = max(0.0, n - float(c.sum()))
        sq = float(np.sum(c * c))
        return np.array([self.variance(n, ci, sq - ci * ci + rest) for ci in c], np.float64)

    def _sketch_of(self, data: Any) -> Sketch:
        if isinstance(data, Sketch):
            return data
        return self.aggregate(data)


class CountMeanSketch(_SketchBase):
    """Apple's count-mean sketch (CMS; "Learning with Privacy at Scale", 2017).

    Parameters
    ----------
    epsilon : float
        Per-report privacy parameter.
    num_hashes : int
        ``k``: number of hash functions (rows of the sketch matrix).
    sketch_size : int
        ``m``: width of the sketch (bits per report).
    hash_seed : int, bytes or None
        Seed of the public hash functions (:func:`hash_tables`); None draws a fresh one
        (read it back from ``.hash_seed`` to configure servers).

    Notes
    -----
    Client: pick ``j`` uniform in ``[0, k)``, encode ``v`` as the ±1 vector with +1 only at
    ``h_j(v)``, flip every coordinate independently with probability
    ``1 / (1 + e^(eps/2))``, send ``(j, vector)``.  Server: the sketch matrix row ``j``
    accumulates ``k (c/2 * vector + 1/2)`` with ``c = (e^(eps/2) + 1) / (e^(eps/2) - 1)``
    and the frequency of ``d`` is
    ``m / (m - 1) * (mean_j M[j, h_j(d)] - n / m)``, unbiased over the random hash
    functions (Apple 2017, Algorithms 1-3).

    **Privacy**

    ``epsilon``-LDP: two inputs' encodings differ in at most two coordinates, each
    flipped with probability ``1 / (1 + e^(eps/2))``, so the output ratio is at most
    ``(e^(eps/2))^2 = e^epsilon``; the row index is independent of the input (Apple 2017,
    Theorem 3.1).  Event: ``events.Epsilon(epsilon)``.

    **Numerics**

    The flip probability is irrational and sampled exactly.  The sketch is kept as
    integer tallies (:class:`Sketch`); the matrix and estimates are float
    post-processing.
    """

    def __repr__(self) -> str:
        return (f"CountMeanSketch(epsilon={self.epsilon!r}, num_hashes={self.num_hashes}, "
                f"sketch_size={self.sketch_size})")

    def __init__(self, epsilon: float, num_hashes: int = 64, sketch_size: int = 1024, *,
                 hash_seed: Any = None) -> None:
        super().__init__(epsilon, num_hashes, sketch_size, hash_seed)
        self._flip = _flip_threshold(self._eps / 2)
        with mpmath.workdps(40):
            e = mpmath.exp(_mpf(self._eps) / 2)
            self.flip_probability = float(1 / (1 + e))
            self.c = float((e + 1) / (e - 1))
            self._noise = float(e / (e - 1) ** 2)  # (c^2 - 1) / 4

    def perturb(self, items: Any, *, rng: Any = None) -> CmsReports:
        """Client side for every user at once (items: ints or strings, 1-D)."""
        fp = fingerprint(items)
        rows, words = self._perturb_words(fp, as_generator(rng))
        m = self.sketch_size
        nbytes = -(-m // 8)
        bits = words.view(np.uint8).reshape(fp.size, -1)[:, :nbytes]
        return CmsReports(rows, np.ascontiguousarray(bits))

    def _perturb_words(self, fp: np.ndarray, gen: Generator) -> tuple[np.ndarray, np.ndarray]:
        n = fp.size
        k, m = self.num_hashes, self.sketch_size
        nw = -(-m // 64)
        rows = np.empty(n, np.int64)
        words = np.empty((n, nw), np.uint64)
        thr = self._flip
        cw, term = thr.words, thr.terminal
        tables = self._tables
        wpc = _lanes_words(64 * nw) + 1.05
        chunk = _chunk_for(wpc, 1)
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.cms_client_kernel(buf, st, key, nonces, chunk_, base, count, fp, tables, k,
                                  m, rows, words, cw, term, force, start, resume, pcount,
                                  pidx)

        def finish(idx: int, src: _exact.WordSource) -> None:
            i, r = divmod(idx, m)
            if thr.decide(src, forced):
                words[i, r // 64] ^= np.uint64(1 << (r % 64))

        _run_lanes(gen, n, wpc, chunk, m, call, finish)
        return rows, words

    def _words_of(self, reports: Any) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(reports, tuple) or len(reports) != 2:
            raise TypeError("reports must be a CmsReports (rows, bits) pair")
        rows = np.ascontiguousarray(reports[0], dtype=np.int64)
        bits = np.asarray(reports[1])
        m = self.sketch_size
        nbytes = -(-m // 8)
        if bits.dtype != np.uint8 or bits.ndim != 2 or bits.shape != (rows.size, nbytes):
            raise ValueError(f"reports.bits must be a ({rows.size}, {nbytes}) uint8 array")
        if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= self.num_hashes)):
            raise ValueError(f"reports.rows must be 1-D in [0, {self.num_hashes})")
        nw = -(-m // 64)
        words = np.zeros((rows.size, nw * 8), np.uint8)
        words[:, :nbytes] = bits
        return rows, words.view(np.uint64)

    def aggregate(self, reports: CmsReports) -> Sketch:
        """Integer tallies of the reports (add sketches of shards with ``+``)."""
        rows, words = self._words_of(reports)
        return self._tally(rows, words)

    def _tally(self, rows: np.ndarray, words: np.ndarray) -> Sketch:
        k, m = self.num_hashes, self.sketch_size
        parts = max(1, min(numba.get_num_threads(), rows.size // 4096 + 1))
        ones = np.zeros((parts, k, m), np.int64)
        totals = np.zeros((parts, k), np.int64)
        with _threads(rows.size * m / 8):
            _lk.count_bits(rows, words, k, m, parts, ones, totals)
        return Sketch(ones.sum(axis=0), totals.sum(axis=0), int(rows.size))

    def collect(self, items: Any, *, rng: Any = None, batch: int = 1 << 18) -> Sketch:
        """Perturb and aggregate in batches (simulation of many clients in bounded memory).

        Equivalent to ``aggregate(perturb(items))`` in distribution.
        """
        fp = fingerprint(items)
        gen = as_generator(rng)
        batch = _int(batch, "batch", 1)
        total: Sketch | None = None
        for a in range(0, max(fp.size, 1), batch):
            rows, words = self._perturb_words(fp[a:a + batch], gen)
            s = self._tally(rows, words)
            total = s if total is None else total + s
        assert total is not None
        return total

    def matrix(self, sketch: Sketch) -> np.ndarray:
        """Apple's sketch matrix ``M[j, r] = sum over row-j reports of k (c/2 x_r + 1/2)``."""
        k = self.num_hashes
        t = sketch.totals[:, None].astype(np.float64)
        plus_minus = 2.0 * sketch.ones - t  # sum of the ±1 entries
        return k * (self.c / 2 * plus_minus + t / 2)

    def estimate(self, data: CmsReports | Sketch, candidates: Any) -> FrequencyEstimate:
        """Unbiased count estimates of ``candidates`` from reports or a :class:`Sketch`.

        The variances are the plug-in of :meth:`variance` with the other candidates'
        clipped estimates as the other items' counts (mass not covered by the candidates
        counted as distinct singletons).
        """
        sk = self._sketch_of(data)
        counts = self._frequency(self.matrix(sk), sk.n, candidates)
        return FrequencyEstimate(counts, self._plugin(counts, sk.n), sk.n)

    def variance(self, n: float, count: float = 0.0, sum_sq_others: float | None = None
                 ) -> float:
        """Variance of the count estimate of an item, over the clients' randomness and
        random (3-independent) hash functions.

        ``(m/(m-1))^2 [n e^(eps/2) / (e^(eps/2) - 1)^2
        + (1/m)(1 - 1/m)((n - c)(1 - 1/k) + S2 / k)]`` with ``c`` = ``count`` and
        ``S2 = sum over other items v of n_v^2`` (``sum_sq_others``; default ``n - c``:
        every other user holds a distinct item).  The first term is Apple's
        ``n (c_eps^2 - 1) / 4``; the second comes from hash collisions.
        """
        k, m = self.num_hashes, self.sketch_size
        s2 = (n - count) if sum_sq_others is None else sum_sq_others
        v = n * self._noise + (1 / m) * (1 - 1 / m) * ((n - count) * (1 - 1 / k) + s2 / k)
        return (m / (m - 1)) ** 2 * v




