"""RAPPOR's privacy parameters and its report, count and decoding records."""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import mpmath
import numpy as np

from dpfast._core.conversions import mp_float_up
from dpfast.local._validate import _int, _mpf, _prob


def rappor_epsilon(f: float, p: float, q: float, num_hashes: int) -> tuple[float, float]:
    """RAPPOR's privacy: ``(epsilon_one_report, epsilon_longitudinal)``, rounded up.

    Erlingsson, Pihur, Korolova (CCS 2014), sec. 3: with
    ``q* = f (p + q) / 2 + (1 - f) q`` and ``p* = f (p + q) / 2 + (1 - f) p``,

    * one report: ``epsilon_1 = h ln(q* (1 - p*) / (p* (1 - q*)))``;
    * any number of reports of the same value (the permanent response bounds them):
      ``epsilon_inf = 2 h ln((1 - f/2) / (f/2))`` (``inf`` for ``f = 0``).

    Returns absolute values (if ``q < p`` the roles of the two bit values swap).
    """
    fr, pr, qr = _prob(f, "f"), _prob(p, "p"), _prob(q, "q")
    h = _int(num_hashes, "num_hashes", 1)
    with mpmath.workdps(60):
        ff, pp, qq = _mpf(fr), _mpf(pr), _mpf(qr)
        qs = ff * (pp + qq) / 2 + (1 - ff) * qq
        ps = ff * (pp + qq) / 2 + (1 - ff) * pp
        if qs == ps:
            e1 = mpmath.mpf(0)
        elif min(qs, ps) <= 0 or max(qs, ps) >= 1:
            e1 = mpmath.inf
        else:
            e1 = abs(h * mpmath.log(qs * (1 - ps) / (ps * (1 - qs))))
        if ff == 0:
            einf = mpmath.inf
        else:
            einf = 2 * h * mpmath.log((1 - ff / 2) / (ff / 2))
        return _up(e1), _up(einf)


def _up(x: mpmath.mpf) -> float:
    """A float ``>= x`` (``0`` and ``inf`` are exact here)."""
    if x == 0 or x == mpmath.inf:
        return float(x)
    return mp_float_up(x)


class RapporReports(NamedTuple):
    """RAPPOR reports: ``cohorts (n,) int64`` and the reported Bloom bits
    ``bits (n, ceil(m / 8)) uint8`` packed like ``np.packbits(..., bitorder="little")``."""

    cohorts: np.ndarray
    bits: np.ndarray


class RapporCounts(NamedTuple):
    """Aggregated RAPPOR reports: ``counts[j, i]`` reports of cohort j with bit i set and
    ``totals[j]`` reports of cohort j."""

    counts: np.ndarray
    totals: np.ndarray


@dataclasses.dataclass(frozen=True)
class RapporDecoding:
    """Result of :meth:`Rappor.decode`.

    Attributes
    ----------
    candidates : list
        The candidate list, in the given order.
    counts : numpy.ndarray
        Estimated number of clients per candidate (0 where not selected by the
        regression).
    std_errors : numpy.ndarray
        Standard errors of ``counts`` (``nan`` where not selected).
    p_values : numpy.ndarray
        One-sided p-values of ``count > 0`` (1 where not selected).
    detected : numpy.ndarray of bool
        Significant after the Bonferroni correction (``p < alpha / len(candidates)``).
    """

    candidates: list
    counts: np.ndarray
    std_errors: np.ndarray
    p_values: np.ndarray
    detected: np.ndarray

    def top(self) -> list[tuple[Any, float, float]]:
        """Detected candidates as (candidate, count, std_error), largest count first."""
        idx = np.flatnonzero(self.detected)
        idx = idx[np.argsort(-self.counts[idx], kind="stable")]
        return [(self.candidates[i], float(self.counts[i]), float(self.std_errors[i]))
                for i in idx]
