"""Optimal local hashing (OLH)."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import mpmath
import numba
import numpy as np

from dpfast._core.rounding import float_up
from dpfast._kernels import local as _lk
from dpfast._kernels import local_aggregate as _lka
from dpfast.accounting import events
from dpfast.local._lanes import (
    _below_py,
    _chunk_for,
    _forced,
    _keep_threshold,
    _run_lanes,
    _threads,
)
from dpfast.local._validate import (
    _MAX_DOMAIN,
    _array,
    _counts,
    _domain_values,
    _epsilon,
    _indices,
    _int,
    _mpf,
)
from dpfast.local.estimate import FrequencyEstimate, _Rates
from dpfast.noise import _exact
from dpfast.random import RngLike, as_generator

_MAX_G = 1 << 31  # hash range: buckets of a 32-bit hash
_MAX_DENSE = 1 << 26  # largest domain counted whole (an estimate: 32 bytes per value)
_BLOCK_CELLS = 1 << 22  # per-thread partial counts of one sweep block (32 MiB)


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
        Hash range, in ``[2, 2^31]``; default ``round(e^eps) + 1`` (the paper's optimum
        ``e^eps + 1``), capped at ``2^31`` (reached for ``epsilon > 21.49``; a smaller ``g``
        only costs variance, never privacy).

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
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").

    **Numerics**

    The keep probability is irrational and sampled exactly; hash parameters and the
    replacement value are exactly uniform.
    """

    def __init__(self, k: int, epsilon: float, g: int | None = None) -> None:
        self.k = _int(k, "k", 1, _MAX_DOMAIN)
        self._eps = _epsilon(epsilon)
        self.epsilon = float_up(self._eps)  # events round epsilon up
        if g is None:
            g = min(_MAX_G, max(2, int(round(math.exp(min(float(self._eps), 30.0)))) + 1))
        self.g = _int(g, "g", 2, _MAX_G)
        self._keep = _keep_threshold(self._eps, self.g)
        with mpmath.workdps(40):
            em1 = mpmath.expm1(_mpf(self._eps))
            gm = mpmath.mpf(self.g)
            den = em1 + gm  # e^eps + g - 1
            # p* - 1/g = (g - 1)(e^eps - 1) / (g (e^eps + g - 1)), exactly
            self._rates = _Rates((em1 + 1) / den, 1 / gm, (gm - 1) * em1 / (gm * den))
        self.p, self.q = self._rates.p, self._rates.q

    def __repr__(self) -> str:
        return f"OptimalLocalHashing(k={self.k}, epsilon={self.epsilon!r}, g={self.g})"

    @property
    def event(self) -> events.RandomizedResponse:
        return events.RandomizedResponse(self.epsilon, self.g)

    def perturb(self, values: Any, *, rng: RngLike = None) -> OlhReports:
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
        seeds = np.ascontiguousarray(_array(reports[0]))
        if seeds.size == 0:
            seeds = np.zeros((0, 3), np.uint64)
        if seeds.dtype != np.uint64 or seeds.ndim != 2 or seeds.shape[1] != 3:
            raise ValueError("reports.seeds must be a (n, 3) uint64 array")
        y = _array(reports[1])
        if y.ndim != 1 or y.shape[0] != seeds.shape[0]:
            raise ValueError(f"reports.values must be 1-D with {seeds.shape[0]} entries "
                             f"(one per row of reports.seeds), got shape {y.shape}")
        return seeds, _indices(y, "reports.values", self.g)

    def aggregate(self, reports: OlhReports, values: Any = None) -> np.ndarray:
        """Support counts ``C_v = #{users : H_i(v) == y_i}`` (int64).

        Parameters
        ----------
        reports : OlhReports
            The users' reports.
        values : array_like of int, optional
            Domain values to count (e.g. candidates of a huge domain); default every
            ``v`` in ``[0, k)``.  A full domain larger than ``2^26`` values is refused
            (its estimate alone would take over 2 GiB): pass ``values``.

        Costs ``n * len(values)`` hash evaluations, in parallel; the per-thread partial
        counts are bounded (the domain is swept in blocks).
        """
        seeds, y = self._check(reports)
        items = None if values is None else _domain_values(values, self.k, "values")
        width = self.k if items is None else items.size
        if items is None and width > _MAX_DENSE:
            raise ValueError(f"k={self.k} is too large to count the whole domain (about "
                             f"{32 * width / 2 ** 30:.0f} GiB for the estimate); pass "
                             "values= (the domain values to count)")
        parts = max(1, min(numba.get_num_threads() * 4, y.size // 1024 + 1))
        block = max(1, min(width, _BLOCK_CELLS // parts))
        out = np.zeros(width, np.int64)
        counts = np.empty((parts, block), np.int64)
        for a in range(0, width, block):
            b = min(width, a + block)
            cnt = counts[:, :b - a]
            cnt[:] = 0
            with _threads(y.size * (b - a)):
                if items is None:
                    _lka.olh_support(seeds, y, self.g, a, b - a, parts, cnt)
                else:
                    _lka.olh_support_items(seeds, y, self.g, items[a:b], parts, cnt)
            out[a:b] = cnt.sum(axis=0)
        return out

    def estimate(self, reports: OlhReports, values: Any = None) -> FrequencyEstimate:
        """Unbiased counts ``(C_v - n / g) / (p* - 1/g)`` with plug-in variances (of
        ``values``, default the whole domain; see :meth:`aggregate`)."""
        support = self.aggregate(reports, values)
        return self._rates.estimate(support, int(np.shape(reports[1])[0]))

    def estimate_from_support(self, support: Any, n: int, values: Any = None
                              ) -> FrequencyEstimate:
        """Estimate from support counts (e.g. summed over shards of reports).

        ``support`` holds integer counts in ``[0, n]`` of ``n`` reports: one per domain
        value (length ``k``), or one per entry of ``values`` if :meth:`aggregate` was given
        ``values``.
        """
        n = _int(n, "n", 0)
        width = self.k if values is None else _domain_values(values, self.k).size
        return self._rates.estimate(_counts(support, "support", (width,), n), n)

    def variance(self, n: Any, count: Any = 0) -> Any:
        """Exact variance of a count estimate (see the class notes)."""
        return self._rates.variance(n, count)



