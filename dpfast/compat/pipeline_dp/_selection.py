"""PipelineDP's partition selection (thresholding, truncated geometric, pre-thresholding)
with its random decisions drawn by dpfast (the guarantees: :mod:`dpfast.compat.pipeline_dp`)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from pipeline_dp import partition_selection as _ps

import dpfast
from dpfast.compat._random_state import NoiseBuffer, words_for
from dpfast.compat.pipeline_dp._noise import _draw
from dpfast.compat.pipeline_dp._state import ORIGINAL
from dpfast.compat.pipeline_dp._state import gen as _gen


def _bernoulli(p: float, gen: Any = None) -> bool:
    """Exactly Bernoulli(p) for the float p, on ChaCha20 words (lazy binary comparison)."""
    r = Fraction(p)
    if r <= 0:
        return False
    if r >= 1:
        return True
    words = words_for(_gen() if gen is None else gen)  # blocks of words, handed out once
    while True:
        r *= 1 << 64
        d = int(r)
        r -= d
        w = words.next()
        if w != d:
            return w < d
        if r == 0:
            return False


class _Strategy:
    """A PyDP partition-selection strategy whose random decisions are drawn by dpfast."""

    def __init__(self, inner: Any, name: str, epsilon: float, delta: float, l0: int) -> None:
        self._inner = inner
        self._name = name
        self._kind = None
        # the generator installed now: the strategy keeps working after uninstall()
        self._gen = _gen()
        if name == "laplace":
            self._kind, self._scale = "laplace", l0 / epsilon
        elif name == "gaussian":
            from pydp.algorithms import numerical_mechanisms as _nm
            self._kind = "gaussian"
            self._scale = _nm.GaussianMechanism(epsilon, delta / 2, math.sqrt(l0)).std
        if self._kind is not None:
            # counts are integers: a grid g <= 1 (a power of two) holds them exactly
            self._g = min(dpfast.granularity(self._scale), 1.0)
            self._buffer = NoiseBuffer()

    def __getattr__(self, name: str) -> Any:  # threshold, epsilon, delta, probability_of_keep
        return getattr(self._inner, name)

    def noised_value_if_should_keep(self, num_privacy_units: int) -> float | None:
        n = int(num_privacy_units)
        if self._kind is None:
            keep = _bernoulli(self._inner.probability_of_keep(n), self._gen)
            return float(n) if keep else None
        kind, scale, g, gen = self._kind, self._scale, self._g, self._gen
        noise = self._buffer.take((kind, scale, g), lambda k: _draw(kind, scale, g, k, gen))
        value = float(n) + float(noise)
        return value if value >= self._inner.threshold + self._g else None

    def should_keep(self, num_privacy_units: int) -> bool:
        return self.noised_value_if_should_keep(num_privacy_units) is not None


def _create_partition_selection_strategy(strategy, epsilon, delta, max_partitions_contributed,
                                         pre_threshold=None):
    if pre_threshold is None:
        inner = ORIGINAL["create_partition_selection_strategy"](
            strategy, epsilon, delta, max_partitions_contributed)
        name = _ps.PARTITION_STRATEGY_ENUM_TO_STR[strategy]
        return _Strategy(inner, name, epsilon, delta, int(max_partitions_contributed))
    wrapped = ORIGINAL["create_partition_selection_strategy"](
        strategy, epsilon, delta, max_partitions_contributed, pre_threshold)
    base = _create_partition_selection_strategy(strategy, epsilon, delta,
                                                max_partitions_contributed)
    return _PreThresholded(wrapped, base, int(pre_threshold))


class _PreThresholded:
    """PyDP's pre-thresholding: a partition with fewer than ``pre_threshold`` privacy units
    is dropped; otherwise the base strategy decides on ``n - pre_threshold + 1`` units
    (PyDP's ``probability_of_keep`` is exactly that shift), drawn here by :class:`_Strategy`.
    """

    def __init__(self, wrapped: Any, base: _Strategy, pre_threshold: int) -> None:
        self._wrapped = wrapped  # PyDP's object: its attributes and probability_of_keep
        self._base = base
        self.pre_threshold = pre_threshold

    def __getattr__(self, name: str) -> Any:  # epsilon, delta, probability_of_keep, ...
        return getattr(self._wrapped, name)

    def should_keep(self, num_privacy_units: int) -> bool:
        n = int(num_privacy_units)
        return n >= self.pre_threshold and self._base.should_keep(n - self.pre_threshold + 1)


