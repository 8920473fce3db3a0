"""Optimal local hashing (OLH)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import mpmath
import numba
import numpy as np

from dpfast import _exact
from dpfast._kernels import local as _lk
from dpfast.accounting import events
from dpfast.local._lanes import (
    _below_py,
    _chunk_for,
    _forced,
    _keep_threshold,
    _run_lanes,
    _threads,
)
from dpfast.local._validate import _MAX_DOMAIN, _domain_values, _epsilon, _int, _mpf
from dpfast.local.estimate import FrequencyEstimate, _pure_estimate, _pure_variance
from dpfast.random import as_generator


class OlhReports(NamedTuple):
    """OLH reports: per user the hash parameters ``seeds (n, 3) uint64`` and the
    perturbed hash value ``values (n,) int64`` in ``[0, g)``."""

    seeds: np.ndarray
    values: np.ndarray


class OptimalLocalHashing:
    """Optimal local hashing (OLH; Wang, Blocki, Li, Jha, USENIX Security 2017).

    A user with value ``v`` draws a hash function ``H`` from a strongly universal family
    (three random 64-bit words), hashes ``v`` to ``[0, g)`` and reports ``H`` and the
    g-ary randomized response of ``H(v)``.

    Parameters
    ----------
    k : int
        Domain size: values are ``0 .. k - 1``.
    epsilon : float
        Per-report privacy parameter.
    g : int, optional
        Hash range; default ``round(e^eps) + 1`` (the paper's optimum ``e^eps + 1``).

    Notes
    -----
    Support of value ``v`` by a report ``(H, y)``: ``H(v) == y``.  For the user's own
    value this has probability ``p* = e^eps / (e^eps + g - 1)``, for any other value
    ``q* = 1/g`` (2-independence of ``H``), independently across users; the estimator is
    ``(C_v - n q*) / (p* - q*)`` with variance
    ``(c p*(1-p*) + (n-c) q*(1-q*)) / (p* - q*)^2``, which for ``c = 0`` and
    ``g = e^eps + 1`` is the paper's ``n 4 e^eps / (e^eps - 1)^2``.  (The 32-bit hash is
    bucketed by ``(h g) >> 32``, which changes ``q*`` by less than ``g 2^-64``.)

    **Privacy**

    ``epsilon``-LDP: given the (input-independent) hash function, the report is g-ary
    randomized response of ``H(v)``, whose output ratio for any two inputs is at most
    ``e^epsilon`` (Wang et al. 2017, sec. 4.4).  Event:
    ``events.RandomizedResponse(epsilon, g)`` (the hash is public and independent of the
    input, so OLH is a mixture of g-ary randomized responses and no less private).

    **Numerics**

    The keep probability is irrational and sampled exactly; hash parameters and the
    replacement value are exactly uniform.
    """

    def __init__(self, k: int, epsilon: float, g: int | None = None) -> None:
        self.k = _int(k, "k", 1, _MAX_DOMAIN)
        self._eps = _epsilon(epsilon)
        self.epsilon = float(epsilon)
        if g is None:
            g = max(2, int(round(math.exp(min(float(epsilon), 30.0)))) + 1)
        self.g = _int(g, "g", 2, 1 << 31)
        self._keep = _keep_threshold(self._eps, self.g)
        with mpmath.workdps(40):
            e = mpmath.exp(_mpf(self._eps))
            self.p = float(e / (e + self.g - 1))
        self.q = 1.0 / self.g

    def __repr__(self) -> str:
        return f"OptimalLocalHashing(k={self.k}, epsilon={self.epsilon!r}, g={self.g})"

    @property
    def event(self) -> events.RandomizedResponse:
        return events.RandomizedResponse(self.epsilon, self.g)

    def perturb(self, values: Any, *, rng: Any = None) -> OlhReports:
        """Client side for every user at once (1-D ``values`` in ``[0, k)``)."""
        x = _domain_values(values, self.k)
        fp = x.view(np.uint64)
        n = x.size
        seeds = np.empty((n, 3), np.uint64)
        out = np.empty(n, np.int64)
        g = self.g
        keep = self._keep
        cw, term = keep.words, keep.terminal
        wpc = 7.5 / 64 + 3.0 + 1.05
        chunk = _chunk_for(wpc)
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.olh_client_kernel(buf, st, key, nonces, chunk_, base, count, fp, g, seeds,
                                  out, cw, term, force, start, resume, pcount, pidx)

        def finish(i: int, src: _exact.WordSource) -> None:
            h = int(out[i])
            if not keep.decide(src, forced):
                o = _below_py(src, g - 1)
                out[i] = o if o < h else o + 1

        _run_lanes(as_generator(rng), n, wpc, chunk, 64, call, finish)
        return OlhReports(seeds, out)

    def _check(self, reports: Any) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(reports, tuple) or len(reports) != 2:
            raise TypeError("reports must be an OlhReports (seeds, values) pair")
        seeds = np.ascontiguousarray(reports[0])
        y = np.ascontiguousarray(reports[1])
        if seeds.dtype != np.uint64 or seeds.ndim != 2 or seeds.shape[1] != 3:
            raise ValueError("reports.seeds must be a (n, 3) uint64 array")
        if y.ndim != 1 or y.shape[0] != seeds.shape[0] or y.dtype.kind not in "iu":
            raise ValueError("reports.values must be a 1-D integer array matching seeds")
        if y.size and (int(y.min()) < 0 or int(y.max()) >= self.g):
            raise ValueError(f"reports.values must lie in [0, g={self.g})")
        return seeds, y.astype(np.int64, copy=False)

    def aggregate(self, reports: OlhReports) -> np.ndarray:
        """Support counts ``C_v = #{users : H_i(v) == y_i}`` for every ``v`` (int64, k).

        Costs ``n k`` hash evaluations, in parallel.
        """
        seeds, y = self._check(reports)
        parts = max(1, min(numba.get_num_threads() * 4, y.size // 1024 + 1))
        counts = np.zeros((parts, self.k), np.int64)
        with _threads(y.size * self.k):
            _lk.olh_support(seeds, y, self.g, self.k, parts, counts)
        return counts.sum(axis=0)

    def estimate(self, reports: OlhReports) -> FrequencyEstimate:
        """Unbiased counts ``(C_v - n / g) / (p* - 1/g)`` with plug-in variances."""
        support = self.aggregate(reports)
        return _pure_estimate(support, int(reports[1].shape[0]), self.p, self.q)

    def estimate_from_support(self, support: Any, n: int) -> FrequencyEstimate:
        """Estimate from support counts (e.g. summed over shards of reports)."""
        return _pure_estimate(np.asarray(support), _int(n, "n", 0), self.p, self.q)

    def variance(self, n: Any, count: Any = 0) -> Any:
        """Exact variance of a count estimate (see the class notes)."""
        return _pure_variance(n, count, self.p, self.q)



