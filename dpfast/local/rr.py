"""Randomized response: Warner's binary and the k-ary (generalized) direct encoding."""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from dpfast._core.rounding import float_up
from dpfast._kernels import local as _lk
from dpfast.accounting import events
from dpfast.local._lanes import (
    _below_py,
    _chunk_for,
    _forced,
    _keep_threshold,
    _run_lanes,
    _Threshold,
)
from dpfast.local._validate import (
    _MAX_DOMAIN,
    _array,
    _binary,
    _domain_values,
    _epsilon,
    _int,
    _mpf,
)
from dpfast.local.estimate import FrequencyEstimate, _Rates
from dpfast.noise import _exact
from dpfast.random import Generator, RngLike, as_generator


class GeneralizedRandomizedResponse:
    """k-ary (generalized) randomized response, "direct encoding" (Wang et al. 2017).

    Parameters
    ----------
    k : int
        Domain size (values are indices in ``[0, k)``), ``k >= 2``.
    epsilon : float
        Per-report privacy parameter, ``0 < epsilon <= 1024``.

    Notes
    -----
    A user with value ``v`` reports ``v`` with probability
    ``p = e^eps / (e^eps + k - 1)`` and each other value with probability
    ``q = 1 / (e^eps + k - 1)``.  For ``k = 2`` this is Warner's randomized response.

    **Privacy**

    ``epsilon``-LDP: for any inputs ``v, v'`` and output ``y``,
    ``P[y | v] / P[y | v'] <= p / q = e^epsilon`` (any two inputs are neighbours).
    Event: ``events.RandomizedResponse(epsilon, k)``.  Warner 1965; Wang et al.,
    USENIX Security 2017, sec. 4.1.
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").

    **Numerics**

    ``p`` is irrational; it is sampled exactly (module docstring).  The estimator is
    float post-processing of integer counts.
    """

    def __init__(self, k: int, epsilon: float) -> None:
        self.k = _int(k, "k", 2, _MAX_DOMAIN)
        self._eps = _epsilon(epsilon)
        self.epsilon = float_up(self._eps)  # events round epsilon up
        self._keep = _keep_threshold(self._eps, self.k)
        with mpmath.workdps(40):
            em1 = mpmath.expm1(_mpf(self._eps))
            den = em1 + self.k  # e^eps + k - 1
            self._rates = _Rates((em1 + 1) / den, 1 / den, em1 / den)
        self.p, self.q = self._rates.p, self._rates.q

    def __repr__(self) -> str:
        return f"GeneralizedRandomizedResponse(k={self.k}, epsilon={self.epsilon!r})"

    @property
    def event(self) -> events.RandomizedResponse:
        """Privacy event of one report."""
        return events.RandomizedResponse(self.epsilon, self.k)

    def perturb(self, values: Any, *, rng: RngLike = None) -> np.ndarray:
        """Randomize each user's value (any shape; int64 result of the same shape).

        Parameters
        ----------
        values : array_like of int
            True values in ``[0, k)``.
        rng : None, Generator or bytes, optional
            Source of randomness (None: the process-wide urandom-keyed generator).
        """
        arr = _array(values)
        x = _domain_values(arr, self.k)
        out = np.empty_like(x)
        _grr(as_generator(rng), x, self.k, self._keep, out)
        return out.reshape(arr.shape)

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: how many reports equal each value (int64, length k)."""
        y = _domain_values(reports, self.k, "reports")
        return np.bincount(y, minlength=self.k).astype(np.int64)

    def estimate(self, reports: Any) -> FrequencyEstimate:
        """Unbiased counts ``(C_v - n q) / (p - q)`` with plug-in variances."""
        y = _domain_values(reports, self.k, "reports")
        return self._rates.estimate(np.bincount(y, minlength=self.k), y.size)

    def variance(self, n: Any, count: Any = 0) -> Any:
        """Exact variance of one count estimate.

        ``(c p (1 - p) + (n - c) q (1 - q)) / (p - q)^2`` for ``n`` users of whom ``c``
        (``count``) hold the value; ``count=0`` gives Wang et al.'s
        ``n q (1 - q) / (p - q)^2`` (``n (e^eps + k - 2) / (e^eps - 1)^2``).
        """
        return self._rates.variance(n, count)


def _grr(gen: Generator, x: np.ndarray, k: int, keep: _Threshold, out: np.ndarray) -> None:
    n = x.size
    wpc = 7.5 / 64 + (0.0 if k == 2 else 1.05)
    chunk = _chunk_for(wpc)
    cw, term = keep.words, keep.terminal

    def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount, pidx):
        _lk.grr_kernel(buf, st, key, nonces, chunk_, base, count, x, k, out, cw, term, force,
                       start, resume, pcount, pidx)

    forced = _forced()

    def finish(i: int, src: _exact.WordSource) -> None:
        v = int(x[i])
        if keep.decide(src, forced):
            out[i] = v
        elif k == 2:
            out[i] = 1 - v
        else:
            o = _below_py(src, k - 1)
            out[i] = o if o < v else o + 1

    _run_lanes(gen, n, wpc, chunk, 64, call, finish)


def k_randomized_response(values: Any, k: int, epsilon: float, *, rng: RngLike = None
                          ) -> np.ndarray:
    """k-ary randomized response of each value in ``[0, k)`` (any shape, int64 out).

    Reports the true value with probability ``e^eps / (e^eps + k - 1)``, else a uniformly
    random other value.  Estimate with :func:`k_randomized_response_estimate`.

    **Privacy**

    ``epsilon``-LDP per report (any two inputs): the output probabilities of two inputs
    differ by at most the factor ``e^epsilon``.  Event:
    ``events.RandomizedResponse(epsilon, k)``.  Wang et al., USENIX Security 2017.
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").

    **Numerics**

    The irrational keep probability is sampled exactly (see the module docstring).
    """
    return GeneralizedRandomizedResponse(k, epsilon).perturb(values, rng=rng)


def k_randomized_response_estimate(reports: Any, k: int, epsilon: float
                                   ) -> FrequencyEstimate:
    """Unbiased counts of each value from k-ary randomized-response reports.

    ``c_v = (C_v - n q) / (p - q)`` with ``C_v`` the number of reports equal to ``v``,
    ``p = e^eps / (e^eps + k - 1)``, ``q = 1 / (e^eps + k - 1)``; variance
    ``(c_v p (1 - p) + (n - c_v) q (1 - q)) / (p - q)^2``
    (:meth:`GeneralizedRandomizedResponse.variance`).
    """
    return GeneralizedRandomizedResponse(k, epsilon).estimate(reports)


def randomized_response(values: Any, epsilon: float, *, rng: RngLike = None) -> np.ndarray:
    """Warner's randomized response: keep each bit w.p. ``e^eps / (1 + e^eps)``, else flip.

    Parameters
    ----------
    values : array_like of bool or 0/1 integers
        Any shape.
    epsilon : float
        ``0 < epsilon <= 1024``.
    rng : None, Generator or bytes, optional
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``values``.

    **Privacy**

    ``epsilon``-LDP per bit: ``P[y | v] / P[y | 1 - v] <= e^epsilon``.  Event:
    ``events.RandomizedResponse(epsilon, 2)``.  Warner, JASA 1965.  Randomizing ``d``
    bits of one user costs ``d epsilon`` for that user.
    Every value of a call has its own randomness; a raw-key ``rng`` keys that one call
    (the same key replays it), so two reports of one user must not share a key: pass a
    :class:`dpfast.Generator` or report through :class:`~dpfast.local.Client`, which
    derives a generator per report batch (:mod:`dpfast.local`, "Randomness per report").

    **Numerics**

    The flip probability ``1 / (1 + e^eps)`` is irrational and sampled exactly.
    """
    arr = _binary(values, "values")
    x = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)
    out = np.empty_like(x)
    _grr(as_generator(rng), x, 2, _keep_threshold(_epsilon(epsilon), 2), out)
    return out.astype(arr.dtype).reshape(arr.shape)


def randomized_response_estimate(reports: Any, epsilon: float, *, axis: int | None = None
                                 ) -> FrequencyEstimate:
    """Unbiased estimate of the number of ones behind randomized-response reports.

    Parameters
    ----------
    reports : array_like of bool or 0/1
        Outputs of :func:`randomized_response`.
    epsilon : float
        The epsilon they were produced with.
    axis : int, optional
        Estimate along this axis (e.g. ``axis=0`` for per-question counts of an
        ``(users, questions)`` array); None pools all entries.

    Returns
    -------
    FrequencyEstimate
        ``counts`` (and ``variance``) of the number of true ones, ``(Y - n q) / (p - q)``
        with ``Y`` the observed ones, ``p = e^eps / (1 + e^eps)``, ``q = 1 - p``; variance
        ``(c p (1 - p) + (n - c) q (1 - q)) / (p - q)^2 = n p q / (p - q)^2``.
    """
    arr = _binary(reports, "reports")
    grr = GeneralizedRandomizedResponse(2, epsilon)
    ones = np.sum(arr.astype(np.int64), axis=axis)
    n = arr.size if axis is None else arr.shape[axis]
    return grr._rates.estimate(ones, n)



