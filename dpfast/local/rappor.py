"""RAPPOR: Bloom filter, permanent and instantaneous randomized response, decoding."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numba
import numpy as np

from dpfast._kernels import local as _lk
from dpfast._kernels import local_aggregate as _lka
from dpfast._kernels import rappor as _rk
from dpfast.accounting import events
from dpfast.local._lanes import _chunk_for, _lanes_words, _threads, _Threshold
from dpfast.local._validate import (
    _array,
    _counts,
    _indices,
    _int,
    _pack_bits,
    _prob,
    _unpack_bits,
)
from dpfast.local.hashing import _resolve_seed, fingerprint, hash_tables
from dpfast.local.rappor_reports import RapporCounts, RapporDecoding, RapporReports, rappor_epsilon
from dpfast.noise import _drive
from dpfast.random import RngLike, as_generator

_RAPPOR_TAG = 0x52415050  # nonce tag of the RAPPOR client PRF ("RAPP")


class Rappor:
    """RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014): Bloom filter, permanent and
    instantaneous randomized response, cohorts, regression decoding.

    Parameters
    ----------
    num_bits : int
        ``k`` in the paper: Bloom filter size ``m``.
    num_hashes : int
        ``h``: hash functions per cohort.
    num_cohorts : int
        Number of cohorts (each with its own ``h`` hash functions).
    f : float
        Permanent randomized response: each Bloom bit is replaced by a fair coin with
        probability ``f`` (memoized per client and value).
    p, q : float
        Instantaneous randomized response: a reported bit is 1 with probability ``q`` if
        the permanent bit is 1, ``p`` if it is 0 (``p != q``).
    hash_seed : int, bytes or None
        Seed of the public Bloom hash functions (:func:`hash_tables`; function
        ``cohort * h + t`` is the ``t``-th hash of a cohort).  None (the default, as for
        the count-mean sketches) draws a fresh seed: read it back from ``.hash_seed`` and
        give the same seed to every client and to the server.

    Notes
    -----
    The permanent response of client ``id`` for a value is a deterministic function of
    ``(secret, id, value)``: block 0 of ChaCha20 under ``secret`` with nonce
    ``(id, 0x52415050)`` gives the client key (its first 32 bytes) and the client's cohort
    (exactly uniform on ``[0, num_cohorts)`` from its last 32 bytes), and the coins are the
    ChaCha20 stream under the client key with nonce ``(fingerprint(value), 0x52415051)``.
    Re-encoding the same value reuses the same permanent bits, which is what bounds the
    longitudinal privacy loss; only the instantaneous response is fresh (from ``rng``).
    The ``secret`` stays on the clients: whoever holds it can remove the permanent
    noise.

    **Privacy**

    Neighbouring inputs: any two values of one client.  One report is
    ``epsilon_1``-LDP and any number of reports of the same value are jointly
    ``epsilon_inf``-LDP (:func:`rappor_epsilon`; paper sec. 3.2, 3.3).  Events:
    :attr:`event` (``Epsilon(epsilon_1)``, per report) and :attr:`longitudinal_event`
    (``Epsilon(epsilon_inf)``, a cap on all reports of one value).  Reports of
    *different* values of one client each use their own permanent response and compose.
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").
    :class:`~dpfast.local.Client` charges every report ``epsilon_1``, a repeated value
    too: charging a repeat ``min(sum of epsilon_1, epsilon_inf)`` instead would make a
    budget's refusals depend on whether the values repeat.

    **Numerics**

    ``f, p, q`` are the exact binary rationals of the floats and are sampled exactly.
    Decoding is float linear algebra (post-processing).
    """

    def __init__(self, num_bits: int = 128, num_hashes: int = 2, num_cohorts: int = 64,
                 f: float = 0.5, p: float = 0.5, q: float = 0.75, *,
                 hash_seed: Any = None) -> None:
        self.num_bits = _int(num_bits, "num_bits", 1, 1 << 20)
        self.num_hashes = _int(num_hashes, "num_hashes", 1, 64)
        if self.num_hashes > self.num_bits:
            raise ValueError("num_hashes must be <= num_bits")
        self.num_cohorts = _int(num_cohorts, "num_cohorts", 1, 1 << 16)
        self._f, self._p, self._q = _prob(f, "f"), _prob(p, "p"), _prob(q, "q")
        if self._p == self._q:
            raise ValueError("p and q must differ (p == q reveals nothing)")
        if self._f == 1:
            raise ValueError("f must be < 1 (f = 1 reveals nothing)")
        self.f, self.p, self.q = float(f), float(p), float(q)
        self.hash_seed = _resolve_seed(hash_seed)
        self._tables = hash_tables(self.hash_seed, self.num_cohorts * self.num_hashes)
        ft = _Threshold(self._f)
        self._fw, self._ft = ft.words, ft.terminal
        qt, pt = _Threshold(self._q), _Threshold(self._p)
        length = max(len(qt.words), len(pt.words), 1)
        self._qw, self._qt = self._pad(qt, length)
        self._pw, self._pt = self._pad(pt, length)
        self.epsilon_one, self.epsilon_longitudinal = rappor_epsilon(
            f, p, q, self.num_hashes)

    @staticmethod
    def _pad(t: _Threshold, length: int) -> tuple[np.ndarray, int]:
        if t.terminal == 2:  # c = 1: all-one expansion, ties decide 1
            return np.full(length, (1 << 64) - 1, np.uint64), 1
        w = np.zeros(length, np.uint64)
        w[:len(t.words)] = t.words
        return w, 0

    def __repr__(self) -> str:
        return (f"Rappor(num_bits={self.num_bits}, num_hashes={self.num_hashes}, "
                f"num_cohorts={self.num_cohorts}, f={self.f!r}, p={self.p!r}, q={self.q!r})")

    @property
    def event(self) -> events.Epsilon:
        """Privacy event of one report (``epsilon_1``)."""
        return events.Epsilon(self.epsilon_one, neighbouring=events.REPLACE_ONE)

    @property
    def longitudinal_event(self) -> events.Epsilon:
        """Cap on any number of reports of one value (``epsilon_inf``)."""
        return events.Epsilon(self.epsilon_longitudinal, neighbouring=events.REPLACE_ONE)

    # -- clients
    def _clients(self, values: Any, client_ids: Any, secret: Any
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fp = fingerprint(values)
        ids = _array(client_ids)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"client_ids must be integers, got dtype {ids.dtype}")
        ids = ids.astype(np.int64 if ids.dtype.kind == "i" else np.uint64).reshape(-1)
        ids = ids.view(np.uint64) if ids.dtype == np.int64 else ids
        if ids.size != fp.size:
            raise ValueError(f"client_ids has {ids.size} entries, values has {fp.size}")
        if not isinstance(secret, (bytes, bytearray, memoryview)) or len(bytes(secret)) != 32:
            raise TypeError("secret must be 32 bytes")
        key = np.frombuffer(bytes(secret), "<u4").astype(np.uint32)
        return fp, np.ascontiguousarray(ids), key

    def cohorts(self, client_ids: Any, secret: bytes) -> np.ndarray:
        """Each client's permanent cohort (deterministic from ``secret`` and the id)."""
        _, ids, key = self._clients(np.zeros(np.asarray(client_ids).size, np.int64),
                                    client_ids, secret)
        out = np.empty(ids.size, np.int64)
        with _threads(ids.size * 32):
            _rk.rappor_cohorts(key, ids, self.num_cohorts, _RAPPOR_TAG, out)
        return out

    def _prr_words(self, fp: np.ndarray, ids: np.ndarray, key: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        coh = np.empty(ids.size, np.int64)
        nw = -(-self.num_bits // 64)
        prr = np.empty((ids.size, nw), np.uint64)
        with _threads(ids.size * 32 * nw):
            _rk.rappor_prr(key, ids, fp, self.num_cohorts, self._tables, self.num_hashes,
                           self.num_bits, self._fw, self._ft, _RAPPOR_TAG, coh, prr)
        return coh, prr

    def permanent(self, values: Any, client_ids: Any, secret: bytes) -> RapporReports:
        """The memoized permanent randomized responses (what :meth:`encode` starts from)."""
        fp, ids, key = self._clients(values, client_ids, secret)
        coh, prr = self._prr_words(fp, ids, key)
        return RapporReports(coh, _pack_bits(prr, self.num_bits))

    def encode(self, values: Any, client_ids: Any, secret: bytes, *, rng: RngLike = None
               ) -> RapporReports:
        """One report per client (vectorized over clients).

        Parameters
        ----------
        values : array_like
            Each client's value (ints or strings), 1-D.
        client_ids : array_like of int
            Stable 64-bit client identifiers (the permanent response is memoized per id).
        secret : bytes
            32-byte client secret (never sent).
        rng : None, Generator or bytes, optional
            Randomness of the instantaneous response.
        """
        fp, ids, key = self._clients(values, client_ids, secret)
        coh, prr = self._prr_words(fp, ids, key)
        return RapporReports(coh, _pack_bits(self._irr_words(prr, rng), self.num_bits))

    def instantaneous(self, permanent: RapporReports, *, rng: RngLike = None
                      ) -> RapporReports:
        """Fresh instantaneous randomized responses of memoized permanent responses
        (:meth:`permanent`): ``encode`` is ``instantaneous(permanent(...))``."""
        if not isinstance(permanent, tuple) or len(permanent) != 2:
            raise TypeError("permanent must be a RapporReports (cohorts, bits) pair")
        coh = _indices(permanent[0], "permanent.cohorts", self.num_cohorts)
        prr = _unpack_bits(permanent[1], coh.size, self.num_bits, "permanent.bits")
        return RapporReports(coh, _pack_bits(self._irr_words(np.ascontiguousarray(prr), rng),
                                             self.num_bits))

    def _irr_words(self, prr: np.ndarray, rng: RngLike) -> np.ndarray:
        gen = as_generator(rng)
        key_words = _drive.source_of(gen).key_words
        n = prr.shape[0]
        m = self.num_bits
        out = np.empty_like(prr)
        nw = prr.shape[1]
        wpc = _lanes_words(64 * nw) * 1.1
        chunk = _chunk_for(wpc, 1)
        for lo, hi, buf, st, nonces in _drive.batches(gen, n, wpc, chunk) if n else ():
            nch = buf.shape[0]
            start = lo + np.arange(nch, dtype=np.int64) * chunk
            resume = np.empty(nch, np.int64)
            with _threads((hi - lo) * wpc):
                _rk.rappor_irr_kernel(buf, st, key_words, nonces, chunk, lo, hi - lo,
                                      prr, m, self._qw, self._qt, self._pw, self._pt, out,
                                      start, resume)
            _drive.check_wrap(st)
        return out

    # -- server
    def aggregate(self, reports: RapporReports) -> RapporCounts:
        """Per-cohort bit counts of the reports."""
        if not isinstance(reports, tuple) or len(reports) != 2:
            raise TypeError("reports must be a RapporReports (cohorts, bits) pair")
        if np.ndim(reports[0]) != 1:
            raise ValueError(f"reports.cohorts must be 1-D, got shape {np.shape(reports[0])}")
        coh = _indices(reports[0], "reports.cohorts", self.num_cohorts)
        m = self.num_bits
        words = _unpack_bits(reports[1], coh.size, m, "reports.bits")
        parts = max(1, min(numba.get_num_threads(), coh.size // 4096 + 1))
        counts = np.zeros((parts, self.num_cohorts, m), np.int64)
        totals = np.zeros((parts, self.num_cohorts), np.int64)
        with _threads(coh.size * m / 8):
            _lka.count_bits(coh, words, self.num_cohorts, m, parts, counts, totals)
        return RapporCounts(counts.sum(axis=0), totals.sum(axis=0))

    def _counts_of(self, data: Any) -> RapporCounts:
        """Reports aggregated, or :class:`RapporCounts` checked (shape, integer tallies,
        ``0 <= counts <= totals``)."""
        if not isinstance(data, RapporCounts):
            return self.aggregate(data)
        c, m = self.num_cohorts, self.num_bits
        big = np.iinfo(np.int64).max
        totals = _counts(data.totals, "counts.totals", (c,), big)
        counts = _counts(data.counts, "counts.counts", (c, m), big)
        if np.any(counts > totals[:, None]):
            raise ValueError("counts.counts must not exceed counts.totals of their cohort")
        return RapporCounts(counts, totals)

    def bit_estimates(self, data: RapporReports | RapporCounts
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased estimates of how many clients of each cohort have each true Bloom bit
        set, and their variances.

        ``t_ji = (c_ji - p* N_j) / (q* - p*)`` with ``p* = p + f (q - p) / 2``,
        ``q* - p* = (1 - f)(q - p)`` (paper sec. 4); variance
        ``(t q* (1 - q*) + (N_j - t) p* (1 - p*)) / (q* - p*)^2`` (plug-in: ``t`` clipped
        to ``[0, N_j]``; exact for the true ``t``, the clients' permanent responses being
        fresh).
        """
        cnt = self._counts_of(data)
        counts = np.asarray(cnt.counts, np.float64)
        totals = np.asarray(cnt.totals, np.float64)[:, None]
        fr, pr, qr = self._f, self._p, self._q
        ps_q = pr + fr * (qr - pr) / 2  # exact rationals: q* - p* is never a difference
        d = float((1 - fr) * (qr - pr))  # of two rounded numbers (p close to q)
        ps, qs = float(ps_q), float(ps_q + (1 - fr) * (qr - pr))
        # counts - p* N_j with p* N_j as a double-double: exact to the last bits
        hi = ps * totals
        lo = np.array([[float(ps_q * int(n) - Fraction(float(h)))]
                       for n, h in zip(totals[:, 0], hi[:, 0])]).reshape(-1, 1)
        t = ((counts - hi) - lo) / d
        tc = np.clip(t, 0, totals)
        with np.errstate(over="ignore"):
            var = (tc * qs * (1 - qs) + (totals - tc) * ps * (1 - ps)) / (d * d)
        return t, var

    def bloom_bits(self, candidates: Any) -> np.ndarray:
        """``(num_cohorts, num_bits, len(candidates))`` 0/1 Bloom-filter design tensor."""
        fp = fingerprint(candidates)
        c, h, m = self.num_cohorts, self.num_hashes, self.num_bits
        out = np.zeros((c, m, fp.size), np.float64)
        pos = np.empty((fp.size, h), np.int64)
        for j in range(c):
            _lk.hash_buckets(self._tables, np.full(fp.size, j * h, np.int64), fp, m, pos)
            for t in range(h):
                out[j, pos[:, t], np.arange(fp.size)] = 1.0
        return out

    def decode(self, data: RapporReports | RapporCounts, candidates: Sequence[Any], *,
               alpha: float = 0.05) -> RapporDecoding:
        """Estimate candidate counts by regression, keep the significant ones.

        Erlingsson et al. sec. 4: per cohort ``j`` and bit ``i``, the number of clients
        whose true Bloom bit is set is estimated without bias by
        ``t_ji = (c_ji - (p + f (q - p) / 2) N_j) / ((1 - f)(q - p))``; it is regressed on
        the candidates' Bloom bits (weighted by the cohort's share ``N_j / N``, so that
        coefficients are client counts).  Non-negative least squares
        (``scipy.optimize.nnls``, in place of the paper's LASSO) selects candidates;
        ordinary least squares on the selected ones gives counts, standard errors and
        one-sided t-test p-values; candidates with ``p < alpha / len(candidates)``
        (Bonferroni) are detected.
        """
        from scipy import optimize, stats

        cnt = self._counts_of(data)
        cands = list(candidates)
        if not cands:
            raise ValueError("candidates must not be empty")
        a = float(alpha)
        if not 0 < a < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        totals = np.asarray(cnt.totals, np.float64)
        n = float(totals.sum())
        t, _ = self.bit_estimates(cnt)
        design = self.bloom_bits(cands) * (totals / max(n, 1.0))[:, None, None]
        x = design.reshape(-1, len(cands))
        y = t.reshape(-1)
        keep = np.flatnonzero(x.any(axis=0))
        beta = np.zeros(len(cands))
        if keep.size:
            beta[keep], _ = optimize.nnls(x[:, keep], y, maxiter=50 * len(cands) + 100)
        sel = np.flatnonzero(beta > 0)
        est = np.zeros(len(cands))
        se = np.full(len(cands), np.nan)
        pv = np.ones(len(cands))
        if sel.size:
            xs = x[:, sel]
            coef, _, rank, _ = np.linalg.lstsq(xs, y, rcond=None)
            df = max(1, xs.shape[0] - sel.size)
            resid = y - xs @ coef
            sigma2 = float(resid @ resid) / df
            cov = sigma2 * np.linalg.pinv(xs.T @ xs)
            s = np.sqrt(np.maximum(np.diag(cov), 0.0))
            est[sel] = coef
            se[sel] = s
            with np.errstate(divide="ignore", invalid="ignore"):
                tstat = np.where(s > 0, coef / s, np.inf * np.sign(coef))
            pv[sel] = stats.t.sf(tstat, df)
        detected = pv < a / len(cands)
        return RapporDecoding(cands, est, se, pv, detected)


