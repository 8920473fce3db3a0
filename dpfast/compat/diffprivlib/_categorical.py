"""diffprivlib's ``Binary``, ``ExponentialCategorical`` and ``ExponentialHierarchical``
sampled exactly by dpfast (randomized response and the exponential mechanism)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from diffprivlib import mechanisms as _dm

import dpfast
from dpfast.compat._random_state import NoiseBuffer, generator_for

__all__ = ["Binary", "ExponentialCategorical", "ExponentialHierarchical"]

_WORD = 1 << 64


def bernoulli_dyadic(gen: Any, p: float) -> bool:
    """An exact Bernoulli(``p``) trial for a float ``p`` in [0, 1] (a dyadic rational):
    ``U < p`` decided on uniform 64-bit words, most significant first, until they differ
    (one word with probability ``1 - 2^-64``)."""
    if p <= 0:
        return False
    if p >= 1:
        return True
    num, den = Fraction(p).as_integer_ratio()  # den = 2^e
    e = den.bit_length() - 1
    words = -(-e // 64)
    num <<= 64 * words - e  # p = num / 2^(64 words)
    for i in range(words - 1, -1, -1):
        w = int(gen.integers(0, _WORD, dtype=np.uint64))
        digit = (num >> (64 * i)) & (_WORD - 1)
        if w != digit:
            return w < digit
    return False  # U == p exactly: U < p is false


class Binary(_dm.Binary):
    r"""diffprivlib's ``Binary`` (randomised response on two string labels) drawn exactly.

    Privacy
    -------
    diffprivlib's law: the label flips with probability ``(1 - δ) / (e^ε + 1)``, otherwise it
    is kept: ``P[y | v] <= e^ε P[y | v'] + δ`` for the two labels (any two inputs are
    neighbours), Warner 1965; Holohan et al., diffprivlib.  Sampled exactly: the flip is
    dpfast's exact randomized response at ``ε`` (:func:`dpfast.local.randomized_response`,
    ``P[flip] = 1 / (e^ε + 1)`` decided on ChaCha20 bits), then, when ``δ > 0``, kept
    with an exact Bernoulli(``δ``) trial; ``ε = 0``: a fair bit; ``ε = inf``: no flip.  Same
    distribution as diffprivlib's float comparison approximates.  Scalar calls are served
    from pre-drawn blocks; ``random_state`` as in :class:`Laplace`.
    """

    def __init__(self, *, epsilon, value0, value1, random_state=None):
        super().__init__(epsilon=epsilon, value0=value0, value1=value1,
                         random_state=random_state)
        self._gen = generator_for(random_state)
        self._buffer = NoiseBuffer()

    def _flip(self) -> bool:
        eps = self.epsilon
        if eps == math.inf:
            return False
        if eps == 0:
            flip = bool(self._gen.integers(0, 2))
        else:
            flip = bool(self._buffer.take(eps, lambda n: dpfast.local.randomized_response(
                np.zeros(n, np.int8), eps, rng=self._gen)))
        return flip and not (self.delta > 0 and bernoulli_dyadic(self._gen, self.delta))

    def randomise(self, value):
        """Randomise one label (``value0`` or ``value1``)."""
        self._check_all(value)
        indicator = 0 if value == self.value0 else 1
        if self._flip():
            indicator = 1 - indicator
        return self.value1 if indicator else self.value0


class _ExactCategorical:
    """Shared by the categorical and hierarchical replacements."""

    epsilon: float
    _sensitivity: float
    _balanced_tree: bool
    _normalising_constant: dict
    _gen: Any
    _buffers: dict

    if TYPE_CHECKING:  # diffprivlib's own methods are the ones called at run time
        def _get_utility(self, value1: Any, value2: Any) -> float: ...

        def _check_all(self, value: Any) -> bool: ...

    def _draw(self, value: Any, n: int) -> np.ndarray:
        targets = list(self._normalising_constant.keys())
        u = np.array([0.0 if t == value else float(self._get_utility(value, t))
                      for t in targets])
        if self.epsilon == math.inf or self._sensitivity == 0:
            best = np.flatnonzero(u == u.min())
            pick = best[[0 if best.size == 1 else int(self._gen.integers(0, best.size))
                         for _ in range(n)]]
            return pick
        return np.asarray(dpfast.exponential(np.broadcast_to(-u, (n, u.size)),
                                             epsilon=self.epsilon,
                                             sensitivity=self._sensitivity,
                                             monotonic=self._balanced_tree, rng=self._gen))

    def randomise(self, value):
        """Randomise one value of the domain."""
        self._check_all(value)
        key = (value, self.epsilon)
        buf = self._buffers.get(key)
        if buf is None:
            buf = self._buffers[key] = NoiseBuffer()
        i = int(buf.take(key, lambda n: self._draw(value, n)))
        return list(self._normalising_constant.keys())[i]


_CAT_PRIVACY = r"""
    Privacy
    -------
    diffprivlib's law (McSherry & Talwar 2007): from input ``v`` the output ``t`` has
    probability ``∝ exp(-ε u(v, t) / (2Δ))`` (``exp(-ε u(v, t) / Δ)`` when diffprivlib
    found the utilities balanced), ``Δ`` the largest utility: ``ε``-DP between any two
    inputs of the domain.  Sampled exactly by :func:`dpfast.exponential` (exact
    Gumbel-max on ChaCha20 bits, ``monotonic`` for the balanced case), which diffprivlib's
    float cumulative sums only approximate.  ``ε = inf`` or ``Δ = 0``: uniform over the
    outputs of least utility.  Scalar calls are served from pre-drawn blocks per input
    value; ``random_state`` as in :class:`Laplace`.
"""


class ExponentialCategorical(_ExactCategorical, _dm.ExponentialCategorical):
    __doc__ = ("diffprivlib's ``ExponentialCategorical`` drawn exactly by dpfast.\n"
               + _CAT_PRIVACY)

    def __init__(self, *, epsilon, utility_list, random_state=None):
        super().__init__(epsilon=epsilon, utility_list=utility_list, random_state=random_state)
        self._gen = generator_for(random_state)
        self._buffers = {}


class ExponentialHierarchical(_ExactCategorical, _dm.ExponentialHierarchical):
    __doc__ = ("diffprivlib's ``ExponentialHierarchical`` (utilities from a hierarchy) drawn "
               "exactly by dpfast.\n" + _CAT_PRIVACY)

    def __init__(self, *, epsilon, hierarchy, random_state=None):
        super().__init__(epsilon=epsilon, hierarchy=hierarchy, random_state=random_state)
        self._gen = generator_for(random_state)
        self._buffers = {}
