"""Frequency estimates of the pure protocols (randomized response, OUE, OLH)."""

from __future__ import annotations

import dataclasses
from typing import Any

import mpmath
import numpy as np


@dataclasses.dataclass(frozen=True)
class FrequencyEstimate:
    """Unbiased frequency estimates of a local-DP protocol.

    Attributes
    ----------
    counts : numpy.ndarray of float64
        Unbiased estimates of the number of users holding each item (may be negative or
        exceed ``n``: unbiasedness forbids clipping; clip for display only).
    variance : numpy.ndarray of float64
        Plug-in estimate of each count estimate's variance: the protocol's exact variance
        formula (its ``variance`` method) with the unknown true counts replaced by the
        estimates clipped to ``[0, n]``.
    n : int
        Number of reports.
    """

    counts: np.ndarray
    variance: np.ndarray
    n: int

    @property
    def frequencies(self) -> np.ndarray:
        """Estimated fractions ``counts / n``."""
        return self.counts / max(self.n, 1)

    @property
    def std_error(self) -> np.ndarray:
        """Estimated standard errors of ``counts``."""
        return np.sqrt(self.variance)


class _Rates:
    """Support probabilities of a pure protocol: a report supports its user's own value
    with probability ``p*`` and any other value with probability ``q*``.

    Built from high-precision values (mpmath, >= 40 digits) of ``p*``, ``q*`` and of their
    *exact* difference ``p* - q*`` (an ``expm1`` expression, never the difference of two
    rounded numbers: for epsilon near 1e-17 the rounded ``p*`` and ``q*`` are equal).
    The estimator ``(C - n q*) / (p* - q*)`` subtracts ``n q*`` as a double-double and
    multiplies by the correctly rounded ``1 / (p* - q*)``, so its relative error is a few
    units in the last place of the result for every epsilon.
    """

    def __init__(self, p: mpmath.mpf, q: mpmath.mpf, diff: mpmath.mpf) -> None:
        self.p, self.q = float(p), float(q)
        self._q = q
        with mpmath.workdps(max(mpmath.mp.dps, 40)):
            self.inv = float(1 / diff)  # inf only below epsilon ~ 1e-308

    def n_q(self, n: int) -> tuple[float, float]:
        """``n q*`` as an unevaluated sum ``hi + lo``."""
        with mpmath.workdps(60):
            x = mpmath.mpf(int(n)) * self._q
            hi = float(x)
            return hi, float(x - hi)

    def variance(self, n: Any, count: Any) -> Any:
        """Var of (C - n q*) / (p* - q*), C a sum of independent Bernoulli supports."""
        n = np.asarray(n, np.float64)
        count = np.asarray(count, np.float64)
        ps, qs = self.p, self.q
        with np.errstate(over="ignore"):  # above the float range (epsilon < ~1e-150): inf
            v = (count * ps * (1 - ps) + (n - count) * qs * (1 - qs)) * self.inv * self.inv
        return v if v.ndim else float(v)

    def estimate(self, support: Any, n: int) -> FrequencyEstimate:
        """Unbiased counts ``(C - n q*) / (p* - q*)`` and plug-in variances."""
        if not np.isfinite(self.inv):
            raise ValueError("epsilon is too small for a finite estimate: 1 / (p* - q*) "
                             "exceeds the float64 range (epsilon below ~1e-308)")
        hi, lo = self.n_q(n)
        counts = ((np.asarray(support, np.float64) - hi) - lo) * self.inv
        var = self.variance(n, np.clip(counts, 0, n))
        return FrequencyEstimate(counts, np.asarray(var, np.float64), int(n))
