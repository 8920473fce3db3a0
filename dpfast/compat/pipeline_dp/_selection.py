"""PipelineDP's partition selection (thresholding, truncated geometric, pre-thresholding)
with its random decisions drawn by dpfast (the guarantees: :mod:`dpfast.compat.pipeline_dp`)."""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

from pipeline_dp import partition_selection as _ps

import dpfast
from dpfast.compat._random_state import shared_generator, words_for
from dpfast.compat.pipeline_dp._noise import _draw
from dpfast.compat.pipeline_dp._state import ORIGINAL, SCALAR_BUFFERS
from dpfast.compat.pipeline_dp._state import gen as _gen


def _bernoulli(p: float, gen: Any = None) -> bool:
    """Exactly Bernoulli(p) for the float p, on ChaCha20 words (lazy binary comparison)."""
    if not p > 0:
        return False
    if p >= 1:
        return True
    words = words_for(_gen() if gen is None else gen)  # blocks of words, handed out once
    # the first word against floor(p 2^64): p 2^64 is exact in binary floating point
    x = float(p) * 18446744073709551616.0
    d = int(x)
    w = words.next()
    if w != d:
        return w < d
    r = Fraction(x) - d  # a tie (probability 2^-64): the exact binary expansion goes on
    if r == 0:
        return False
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
    """A PyDP partition-selection strategy whose random decisions are drawn by dpfast.

    Subclasses carry PyDP's class names (``type(s).__name__`` as PipelineDP reports it);
    pickled (Beam), a strategy is rebuilt from its parameters in the receiving process,
    drawing from that process's installed generator (or its own ``os.urandom``-keyed one):
    never a copy of the sender's stream."""

    def __init__(self, inner: Any, name: str, epsilon: float, delta: float, l0: int) -> None:
        if inner is not None:
            self._inner = inner  # (otherwise made on first use: see __getattr__)
        self._args = (name, epsilon, delta, l0)
        # the generator installed now: the strategy keeps working after uninstall()
        self._gen = gen = _generator()
        # (PyDP validates the parameters here, as when PipelineDP makes its strategy)
        self._kind, self._scale, self._g, self._threshold = _constants(name, epsilon, delta,
                                                                       l0)
        if self._kind is not None:
            # PipelineDP makes one strategy per partition and asks it once: the i.i.d.
            # threshold noise comes from blocks shared by every strategy of these parameters
            # and generator (each value handed out once)
            self._tag = (self._kind, self._scale, self._g, id(gen))
            self._buffer = SCALAR_BUFFERS.buffer(("selection", self._tag))

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _base_strategy, self._args

    def __getattr__(self, name: str) -> Any:  # threshold, epsilon, delta, probability_of_keep
        if name == "_inner" and "_args" in self.__dict__:
            # PyDP's own strategy object, made when first needed (its attributes, the
            # truncated geometric's probability_of_keep): the thresholding decision needs
            # only the cached threshold, and PipelineDP makes one strategy per partition
            inner = self.__dict__["_inner"] = _pydp_strategy(*self._args)
            return inner
        if name.startswith("__") or name in ("_inner", "_args"):
            raise AttributeError(name)
        return getattr(self._inner, name)

    def noised_value_if_should_keep(self, num_privacy_units: int) -> float | None:
        n = int(num_privacy_units)
        if self._kind is None:
            keep = _bernoulli(self._inner.probability_of_keep(n), self._gen)
            return float(n) if keep else None
        kind, scale, g, gen = self._kind, self._scale, self._g, self._gen
        noise = self._buffer.take(self._tag, lambda k: _draw(kind, scale, g, k, gen))
        value = float(n) + float(noise)
        return value if value >= self._threshold + self._g else None

    def should_keep(self, num_privacy_units: int) -> bool:
        return self.noised_value_if_should_keep(num_privacy_units) is not None


def _pydp_strategy(name: str, epsilon: float, delta: float, l0: int) -> Any:
    """PyDP's strategy object, made as PipelineDP makes it (``pre_threshold`` None)."""
    from pydp.algorithms import partition_selection as _pydp_ps

    return _pydp_ps.create_partition_strategy(name, epsilon, delta, l0)


@functools.lru_cache(maxsize=1024)
def _constants(name: str, epsilon: float, delta: float, l0: int
               ) -> tuple[str | None, float, float, float]:
    """(noise kind, scale, grid, PyDP's threshold) of a strategy (kind None: truncated
    geometric), cached by parameters -- PyDP's object is made (and its parameter checks
    run) on every miss; invalid parameters raise and are not cached.  Laplace
    ``b = l0 / ε``; Gaussian PyDP's σ of the ``(ε, δ/2)`` Gaussian with ``Δ₂ = sqrt(l0)``;
    the grid ``g <= 1`` a power of two (counts are integers: the grid holds them
    exactly)."""
    inner = _pydp_strategy(name, epsilon, delta, l0)
    if name == "laplace":
        scale = l0 / epsilon
    elif name == "gaussian":
        from pydp.algorithms import numerical_mechanisms as _nm
        scale = _nm.GaussianMechanism(epsilon, delta / 2, math.sqrt(l0)).std
    else:
        return None, 0.0, 0.0, 0.0
    return name, scale, min(dpfast.granularity(scale), 1.0), float(inner.threshold)


class LaplacePartitionSelectionStrategy(_Strategy):
    """Laplace thresholding drawn by dpfast (PyDP's class name)."""


class GaussianPartitionSelectionStrategy(_Strategy):
    """Gaussian thresholding drawn by dpfast (PyDP's class name)."""


class TruncatedGeometricPartitionSelectionStrategy(_Strategy):
    """Truncated-geometric selection decided exactly by dpfast (PyDP's class name)."""


_CLASSES = {"laplace": LaplacePartitionSelectionStrategy,
            "gaussian": GaussianPartitionSelectionStrategy,
            "truncated_geometric": TruncatedGeometricPartitionSelectionStrategy}


def _generator() -> Any:
    gen = _gen()
    return gen if gen is not None else shared_generator()


def _base_strategy(name: str, epsilon: float, delta: float, l0: int) -> _Strategy:
    """The replaced strategy, its PyDP object made by PyDP's own per-strategy factory."""
    from pydp.algorithms import partition_selection as _pydp_ps

    make = getattr(_pydp_ps, f"create_{name}_partition_strategy")
    return _CLASSES[name](make(epsilon, delta, l0), name, epsilon, delta, l0)


def _create_partition_selection_strategy(strategy, epsilon, delta, max_partitions_contributed,
                                         pre_threshold=None):
    name = _ps.PARTITION_STRATEGY_ENUM_TO_STR[strategy]
    if pre_threshold is None:  # (PyDP's object made lazily: see _Strategy.__getattr__)
        return _CLASSES[name](None, name, epsilon, delta, int(max_partitions_contributed))
    # PyDP's pre-thresholding wrapper (its attributes and probability_of_keep), made by
    # PipelineDP's one call; the base strategy without a second call of that factory
    wrapped = ORIGINAL["create_partition_selection_strategy"](
        strategy, epsilon, delta, max_partitions_contributed, pre_threshold)
    base = _base_strategy(name, epsilon, delta, int(max_partitions_contributed))
    return PreThresholdingPartitionSelectionStrategy(wrapped, base, int(pre_threshold))


def _pre_thresholded(strategy: Any, epsilon: float, delta: float, l0: int,
                     pre_threshold: int) -> PreThresholdingPartitionSelectionStrategy:
    return _create_partition_selection_strategy(strategy, epsilon, delta, l0, pre_threshold)


class PreThresholdingPartitionSelectionStrategy:
    """PyDP's pre-thresholding: a partition with fewer than ``pre_threshold`` privacy units
    is dropped; otherwise the base strategy decides on ``n - pre_threshold + 1`` units
    (PyDP's ``probability_of_keep`` is exactly that shift), drawn here by :class:`_Strategy`.
    """

    def __init__(self, wrapped: Any, base: _Strategy, pre_threshold: int) -> None:
        self._wrapped = wrapped  # PyDP's object: its attributes and probability_of_keep
        self._base = base
        self.pre_threshold = pre_threshold

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        name, eps, delta, l0 = self._base._args
        enum = next(k for k, v in _ps.PARTITION_STRATEGY_ENUM_TO_STR.items() if v == name)
        return _pre_thresholded, (enum, eps, delta, l0, self.pre_threshold)

    def __getattr__(self, name: str) -> Any:  # epsilon, delta, probability_of_keep, ...
        if name.startswith("__") or name in ("_wrapped", "_base"):
            raise AttributeError(name)
        return getattr(self._wrapped, name)

    def should_keep(self, num_privacy_units: int) -> bool:
        n = int(num_privacy_units)
        return n >= self.pre_threshold and self._base.should_keep(n - self.pre_threshold + 1)
