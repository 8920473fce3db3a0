"""The interval rule of a released variance or standard deviation
(:class:`VarianceInterval`, :func:`variance_interval`) and the variance estimate it goes
with: post-processing of the noisy parts, kept (and cached) with the release.  The rule
registers itself with the state codec (:func:`dpfast.tables.state.register_interval`)
under the kind ``"variance"``, the kind of a stored interval without a ``"kind"`` key."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from dpfast.tables import state as _state
from dpfast.tables._law import NoiseLaw, _alpha

__all__ = ["VarianceInterval", "variance_estimate", "variance_interval"]


@dataclasses.dataclass(frozen=True)
class VarianceInterval:
    """The conservative intervals of a released variance (or, ``sqrt``, standard
    deviation): :func:`variance_interval` of the noisy parts; post-processing, so it is
    kept (and cached, :mod:`dpfast.tables.state`) with the release."""

    n: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    cap: float
    laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw]
    sqrt: bool

    #: the kind this rule is registered under with the state codec
    kind = "variance"

    def __call__(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        low, high = variance_interval(self.n, self.s1, self.s2, self.cap, self.laws, alpha)
        return (np.sqrt(low), np.sqrt(high)) if self.sqrt else (low, high)

    def to_state(self) -> dict[str, object]:
        """The rule as JSON-able data (the noisy parts by their bytes)."""
        return {"n": _state.encode_array(np.asarray(self.n)),
                "s1": _state.encode_array(np.asarray(self.s1)),
                "s2": _state.encode_array(np.asarray(self.s2)),
                "cap": _state.encode_scalar(float(self.cap)),
                "laws": [_state.encode_law(law) for law in self.laws], "sqrt": bool(self.sqrt)}

    @classmethod
    def from_state(cls, d: dict[str, Any]) -> VarianceInterval:
        """The rule of :meth:`to_state`."""
        laws = tuple(_state.decode_law(x) for x in d["laws"])
        return cls(_state.decode_array(d["n"]), _state.decode_array(d["s1"]),
                   _state.decode_array(d["s2"]), _state.decode_scalar(d["cap"]),
                   (laws[0], laws[1], laws[2]), bool(d["sqrt"]))


_state.register_interval(VarianceInterval.kind, VarianceInterval)


def variance_estimate(n: np.ndarray, s1: np.ndarray, s2: np.ndarray, cap: float
                      ) -> np.ndarray:
    """``S2 / N' - (S1 / 2N')²`` clipped to ``[0, cap]``, ``N' = max(N, 1)`` (``S1`` the
    noisy sum of ``2x - lo - hi``, ``S2`` of ``(x - mid)²``): post-processing."""
    nn = np.maximum(n, 1).astype(np.float64)
    m1 = s1 / (2 * nn)
    return np.clip(s2 / nn - m1 * m1, 0.0, cap)


def variance_interval(n: np.ndarray, s1: np.ndarray, s2: np.ndarray, cap: float,
                      laws: tuple[NoiseLaw, NoiseLaw, NoiseLaw], alpha: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Conservative ``1 - alpha`` intervals of ``M2/n - (M1/n)²`` (the exact aggregates of
    the kept rows, ``n >= 1``): each of the three parts within its exact half-width at
    ``alpha / 3`` (union bound), the formula's extremes over that box, clipped to
    ``[0, cap]``."""
    a = float(_alpha(alpha) / 3)
    wn, w1, w2 = (law.halfwidth(a) for law in laws)
    n_lo = np.maximum(n - wn, 1).astype(np.float64)
    n_hi = (n + wn).astype(np.float64)
    a1, b1 = (s1 - w1) / 2, (s1 + w1) / 2  # the centred sum sum(x - mid) = S1 / 2
    a2 = np.maximum(s2 - w2, 0.0)  # M2 >= 0
    b2 = s2 + w2
    big = np.maximum(np.abs(a1), np.abs(b1))
    small = np.where((a1 <= 0) & (b1 >= 0), 0.0, np.minimum(np.abs(a1), np.abs(b1)))
    bad = n_hi < 1  # no row is certain: the whole range (divide only where n_hi >= 1)
    n_hi1 = np.maximum(n_hi, 1.0)
    low = np.clip(a2 / n_hi1 - (big / n_lo) ** 2, 0.0, cap)
    high = np.clip(b2 / n_lo - (small / n_hi1) ** 2, 0.0, cap)
    low[bad], high[bad] = 0.0, cap
    return low, high
