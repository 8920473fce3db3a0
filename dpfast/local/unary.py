"""Optimized unary encoding (OUE)."""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from dpfast._core.rounding import float_up
from dpfast._kernels import local as _lk
from dpfast.accounting import events
from dpfast.local._lanes import (
    _chunk_for,
    _flip_threshold,
    _forced,
    _lanes_words,
    _run_lanes,
)
from dpfast.local._validate import (
    _MAX_DOMAIN,
    _binary,
    _domain_values,
    _epsilon,
    _int,
    _mpf,
)
from dpfast.local.estimate import FrequencyEstimate, _Rates
from dpfast.noise import _exact
from dpfast.random import RngLike, as_generator


class OptimizedUnaryEncoding:
    """Optimized unary encoding (OUE; Wang, Blocki, Li, Jha, USENIX Security 2017).

    A user with value ``v`` in ``[0, k)`` sends ``k`` bits: bit ``v`` is 1 with
    probability ``p = 1/2``, every other bit with probability ``q = 1 / (e^eps + 1)``.

    Parameters
    ----------
    k : int
        Domain size.
    epsilon : float
        Per-report privacy parameter.

    Notes
    -----
    **Privacy**

    ``epsilon``-LDP: two inputs' encodings differ in two bits, so any report's
    probability ratio is at most ``(p (1 - q)) / ((1 - p) q) = e^epsilon``
    (Wang et al. 2017, Theorem 2 / sec. 4.3).  Event: ``events.Epsilon(epsilon,
    neighbouring="replace_one")`` (local DP: one client's value replaced by another).
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").

    **Numerics**

    ``q`` is irrational and sampled exactly; ``p = 1/2`` is a fair coin.
    Estimator variance (Wang et al.): ``n 4 e^eps / (e^eps - 1)^2`` for a value nobody
    holds; :meth:`variance` gives the exact formula.
    """

    def __init__(self, k: int, epsilon: float) -> None:
        self.k = _int(k, "k", 2, _MAX_DOMAIN)
        self._eps = _epsilon(epsilon)
        self.epsilon = float_up(self._eps)  # events round epsilon up
        self._q = _flip_threshold(self._eps)
        with mpmath.workdps(40):
            em1 = mpmath.expm1(_mpf(self._eps))
            self._rates = _Rates(mpmath.mpf(1) / 2, 1 / (em1 + 2), em1 / (2 * (em1 + 2)))
        self.p, self.q = self._rates.p, self._rates.q

    def __repr__(self) -> str:
        return f"OptimizedUnaryEncoding(k={self.k}, epsilon={self.epsilon!r})"

    @property
    def event(self) -> events.Epsilon:
        return events.Epsilon(self.epsilon, neighbouring=events.REPLACE_ONE)

    def perturb(self, values: Any, *, rng: RngLike = None) -> np.ndarray:
        """Encode and perturb: ``(n, k)`` bool array, one row per user (1-D ``values``)."""
        x = _domain_values(values, self.k)
        k = self.k
        out = np.empty((x.size, k), np.uint8)
        wpc = _lanes_words(k) + 0.05
        chunk = _chunk_for(wpc, 1)
        cw, term = self._q.words, self._q.terminal
        thr = self._q
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.oue_kernel(buf, st, key, nonces, chunk_, base, count, x, k, out, cw, term,
                           force, start, resume, pcount, pidx)

        flat = out.reshape(-1)

        def finish(idx: int, src: _exact.WordSource) -> None:
            flat[idx] = 1 if thr.decide(src, forced) else 0

        _run_lanes(as_generator(rng), x.size, wpc, chunk, k, call, finish)
        return out.view(np.bool_)

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: column sums of the ``(n, k)`` reports (int64, length k)."""
        r = self._reports(reports)
        return r.sum(axis=0, dtype=np.int64)

    def _reports(self, reports: Any) -> np.ndarray:
        r = _binary(reports, "reports")
        if r.size == 0 and r.ndim == 1:
            r = r.reshape(0, self.k)
        if r.ndim != 2 or r.shape[1] != self.k:
            raise ValueError(f"reports must have shape (n, {self.k}), got {r.shape}")
        return r

    def estimate(self, reports: Any) -> FrequencyEstimate:
        """Unbiased counts ``(C_v - n q) / (p - q)`` with plug-in variances."""
        r = self._reports(reports)
        return self._rates.estimate(r.sum(axis=0, dtype=np.int64), r.shape[0])

    def variance(self, n: Any, count: Any = 0) -> Any:
        """Exact variance ``(c p(1-p) + (n - c) q(1-q)) / (p - q)^2`` of a count estimate
        (``count=0``: Wang et al.'s ``n 4 e^eps / (e^eps - 1)^2``)."""
        return self._rates.variance(n, count)



