"""Frequency estimates of the pure protocols (randomized response, OUE, OLH)."""

from __future__ import annotations

import dataclasses
from typing import Any

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


def _pure_variance(n: Any, count: Any, ps: float, qs: float) -> Any:
    """Var of (C - n q*) / (p* - q*), C a sum of independent Bernoulli supports."""
    n = np.asarray(n, np.float64)
    count = np.asarray(count, np.float64)
    v = (count * ps * (1 - ps) + (n - count) * qs * (1 - qs)) / (ps - qs) ** 2
    return v if v.ndim else float(v)


def _pure_estimate(support: np.ndarray, n: int, ps: float, qs: float) -> FrequencyEstimate:
    support = np.asarray(support, np.float64)
    counts = (support - n * qs) / (ps - qs)
    var = _pure_variance(n, np.clip(counts, 0, n), ps, qs)
    return FrequencyEstimate(counts, np.asarray(var, np.float64), int(n))



