"""The law of the noise on a released value (:class:`NoiseLaw`) and the check of a
confidence level: the leaf every release module, the planner, the per-key noise and the
selection share (it imports nothing of :mod:`dpfast.tables`)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

from dpfast.mechanisms import _tails

__all__ = ["NoiseLaw"]


@dataclasses.dataclass(frozen=True)
class NoiseLaw:
    """The law of the noise added to one released value.

    ``kind`` is ``"discrete_laplace"`` (``P(k) ∝ exp(-|k|/scale)``),
    ``"discrete_gaussian"`` (``P(k) ∝ exp(-k²/2 scale²)``), or ``"laplace"`` /
    ``"gaussian"`` for the float grid mechanisms (``granularity`` times the discrete law of
    scale ``scale / granularity``, after rounding the value to the grid).
    """

    kind: str
    scale: float
    granularity: float = 1.0

    def halfwidth(self, alpha: float) -> float:
        """Smallest ``w`` (an integer, or a grid value plus the rounding ``g/2``) with
        ``P(|noise| <= w) >= 1 - alpha`` -- exact (256-bit tails, CKS20)."""
        a = _alpha(alpha)
        g = Fraction(self.granularity)
        t = Fraction(self.scale) / g
        if self.kind.endswith("laplace"):
            w = _tails._discrete_laplace_halfwidth(t, a)
        else:
            w = _tails._discrete_gaussian_halfwidth(t, a)
        if self.kind in ("discrete_laplace", "discrete_gaussian"):
            return int(w)
        return float(w * g + g / 2)

    def std(self) -> float:
        """Standard deviation of the noise (discrete Gaussian: an upper bound, ``<= σ``)."""
        if self.kind.endswith("laplace"):
            t = self.scale / self.granularity
            a = math.exp(-1.0 / t)
            return math.sqrt(2 * a) / (1 - a) * self.granularity
        return self.scale

    def mean_abs(self) -> float:
        """``E|noise|`` (discrete Laplace: ``2a / (1 - a²)``, ``a = e^{-1/t}``; Gaussian:
        ``σ sqrt(2/π)``, the continuous value, within 1% for ``σ >= 1``)."""
        if self.kind.endswith("laplace"):
            t = self.scale / self.granularity
            a = math.exp(-1.0 / t)
            return 2 * a / (1 - a * a) * self.granularity
        return self.scale * math.sqrt(2 / math.pi)


def _alpha(alpha: object) -> Fraction:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, Fraction)):
        raise TypeError(f"alpha must be a real number, got {type(alpha).__name__}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return Fraction(alpha)
