"""Apple's count-mean sketch (CMS) and the sketch state shared with the Hadamard CMS."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import mpmath
import numba
import numpy as np

from dpfast._core.rounding import float_up
from dpfast._kernels import local as _lk
from dpfast._kernels import local_aggregate as _lka
from dpfast.accounting import events
from dpfast.local._collisions import row_values, sketch_mse
from dpfast.local._lanes import (
    _chunk_for,
    _flip_threshold,
    _forced,
    _lanes_words,
    _run_lanes,
    _threads,
)
from dpfast.local._validate import (
    _array,
    _counts,
    _epsilon,
    _indices,
    _int,
    _mpf,
    _pack_bits,
    _unpack_bits,
)
from dpfast.local.estimate import FrequencyEstimate
from dpfast.local.hashing import _resolve_seed, fingerprint, hash_tables
from dpfast.noise import _exact
from dpfast.random import Generator, RngLike, as_generator


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
    """Shared state of the two sketches: epsilon, the public hash functions, estimates."""

    c: float  # debiasing factor, set by each sketch
    _hadamard = False

    def variance(self, n: float, count: float = 0.0, sum_sq_others: float | None = None
                 ) -> float:
        raise NotImplementedError

    def aggregate(self, reports: Any) -> Sketch:
        raise NotImplementedError

    def matrix(self, sketch: Sketch) -> np.ndarray:
        """The sketch matrix of ``sketch`` (each sketch's own)."""
        raise NotImplementedError

    def __init__(self, epsilon: float, num_hashes: int, sketch_size: int,
                 hash_seed: Any) -> None:
        self._eps = _epsilon(epsilon)
        self.epsilon = float_up(self._eps)  # events round epsilon up
        self.num_hashes = _int(num_hashes, "num_hashes", 1, 1 << 16)
        self.sketch_size = _int(sketch_size, "sketch_size", 2, 1 << 24)
        self.hash_seed = _resolve_seed(hash_seed)
        self._tables = hash_tables(self.hash_seed, self.num_hashes)

    @property
    def event(self) -> events.Epsilon:
        """Privacy event of one report."""
        return events.Epsilon(self.epsilon, neighbouring=events.REPLACE_ONE)

    def buckets(self, items: Any) -> np.ndarray:
        """``(len(items), num_hashes)`` sketch columns ``h_j(item)`` (the public hashes)."""
        return self._hashed(items)[1]

    def _hashed(self, items: Any) -> tuple[np.ndarray, np.ndarray]:
        """The items' fingerprints and their ``(len(items), num_hashes)`` sketch columns."""
        fp = fingerprint(items)
        out = np.empty((fp.size, self.num_hashes), np.int64)
        _lk.hash_buckets(self._tables, np.zeros(fp.size, np.int64), fp, self.sketch_size,
                         out)
        return fp, out

    def _scale(self) -> float:
        """The debiasing factor ``c``, refused when it overflows (epsilon < ~1e-308)."""
        c = float(self.c)
        if not math.isfinite(c):
            raise ValueError("epsilon is too small for a finite estimate: the sketch's scale "
                             "(e^eps + 1) / (e^eps - 1) exceeds the float64 range")
        return c

    def _parts(self, matrix: np.ndarray, n: int, candidates: Any
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Estimates and the two parts of their fixed-hash mean squared errors (noise,
        growing as ``n``; collisions, as ``n^2``): :mod:`dpfast.local._collisions`."""
        m = self.sketch_size
        fp, cols = self._hashed(candidates)
        counts = m / (m - 1) * (row_values(matrix, cols) - n / m)
        noise, coll = sketch_mse(matrix, cols, fp, counts, n, self._noise_scale(),
                                 self._hadamard)
        return counts, noise, coll

    def _noise_scale(self) -> float:
        raise NotImplementedError

    def _estimate(self, sk: Sketch, candidates: Any) -> FrequencyEstimate:
        counts, noise, coll = self._parts(self.matrix(sk), sk.n, candidates)
        with np.errstate(over="ignore"):
            return FrequencyEstimate(counts, noise + coll, sk.n)

    def _sketch_of(self, data: Any, signed: bool) -> Sketch:
        """Reports aggregated, or a :class:`Sketch` checked against this sketch's shape
        (``signed``: HCMS tallies, ``|ones| <= totals``; else ``0 <= ones <= totals``)."""
        if not isinstance(data, Sketch):
            return self.aggregate(data)
        k, m = self.num_hashes, self.sketch_size
        n = _int(data.n, "sketch.n", 0)
        totals = _counts(data.totals, "sketch.totals", (k,), n)
        if int(totals.sum()) != n:
            raise ValueError(f"sketch.totals must sum to sketch.n={n}, got {int(totals.sum())}")
        ones = _array(data.ones)
        if ones.dtype.kind not in "iu" or ones.shape != (k, m):
            raise ValueError(f"sketch.ones must be a ({k}, {m}) integer array, got "
                             f"{ones.dtype} {ones.shape}")
        ones = ones.astype(np.int64)
        low = -totals[:, None] if signed else 0
        if np.any(ones < low) or np.any(ones > totals[:, None]):
            raise ValueError("sketch.ones out of range for sketch.totals (not a tally of "
                             "reports)")
        return Sketch(ones, totals, n)


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
    Theorem 3.1).  Event: ``events.Epsilon(epsilon,
    neighbouring="replace_one")`` (local DP: one client's value replaced by another).
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").

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
            em1 = mpmath.expm1(_mpf(self._eps) / 2)  # e^(eps/2) - 1, exact for tiny eps
            self.flip_probability = float(1 / (2 + em1))
            self.c = float((em1 + 2) / em1)
            self._noise = float((em1 + 1) / em1 ** 2)  # (c^2 - 1) / 4

    def perturb(self, items: Any, *, rng: RngLike = None) -> CmsReports:
        """Client side for every user at once (items: ints or strings, 1-D)."""
        fp = fingerprint(items)
        rows, words = self._perturb_words(fp, as_generator(rng))
        return CmsReports(rows, _pack_bits(words, self.sketch_size))

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
        if np.ndim(reports[0]) != 1:
            raise ValueError(f"reports.rows must be 1-D, got shape {np.shape(reports[0])}")
        rows = _indices(reports[0], "reports.rows", self.num_hashes)
        return rows, _unpack_bits(reports[1], rows.size, self.sketch_size, "reports.bits")

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
            _lka.count_bits(rows, words, k, m, parts, ones, totals)
        return Sketch(ones.sum(axis=0), totals.sum(axis=0), int(rows.size))

    def collect(self, items: Any, *, rng: RngLike = None, batch: int = 1 << 18) -> Sketch:
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
        return k * (self._scale() / 2 * plus_minus + t / 2)

    def estimate(self, data: CmsReports | Sketch, candidates: Any) -> FrequencyEstimate:
        """Unbiased count estimates of ``candidates`` from reports or a :class:`Sketch`.

        The ``variance`` of each estimate is an estimate of its mean squared error for
        *these* hash functions (not the average over random hash functions that
        :meth:`variance` gives): the clients' noise, the plug-in collision error of the
        other candidates hashed with the fixed hash functions (squared), the mass outside
        the candidates as distinct items, and any excess spread of the ``k`` rows
        (:mod:`dpfast.local._collisions` has the derivation).  It is conservative, and
        the normal intervals built on it cover at about the nominal rate or above when
        every item that may be heavy is a candidate.
        """
        return self._estimate(self._sketch_of(data, False), candidates)

    def _noise_scale(self) -> float:
        return self._noise

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




