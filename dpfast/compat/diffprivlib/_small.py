"""Scalar fast paths of the selection mechanisms: one permute-and-flip draw in pure Python.

diffprivlib's trees build one ``PermuteAndFlip`` per leaf and draw from it once; a dpfast
kernel call per leaf costs more than diffprivlib's whole float draw.  :func:`permute_and_flip`
decides each coin ``1{U < exp(-γ)}`` with one 64-bit ChaCha20 word and a certified float
test, and continues exactly (:func:`dpfast.noise._exact.u_less_exp`: the uniform refined with
fresh words against rigorous integer bounds of ``exp(-γ)`` for the exact rational ``γ``)
whenever the test cannot decide; the head is then drawn exactly uniformly.  Same law as
:func:`dpfast.permute_and_flip` (exact), without array overhead.
"""

from __future__ import annotations

import math
import threading
import weakref
from fractions import Fraction
from typing import Any

from dpfast.compat._random_state import process_generation
from dpfast.noise import _exact

__all__ = ["MAX_CANDIDATES", "Words", "words_for", "permute_and_flip", "uniform_below"]

FORCE_EXACT = False  # test hook: every coin through the exact continuation
MAX_CANDIDATES = 32  # up to this many candidates a scalar draw takes the pure-Python path
_TWO64 = 1 << 64
_TWO64F = float(_TWO64)
# |exp(-g) - exp(-γ)| <= exp(-g)(e^{γ 2^-50} - 1) for |g - γ| <= γ 2^-50 (g <= 64: < 2^-43),
# plus the platform exp within 2^12 ulps (2^-40): a relative margin of 2^-38 covers both
_MARGIN = 2.0 ** -38


class Words:
    """Uniform 64-bit words of one dpfast generator, fetched in blocks and handed out once
    (a lock serialises threads; a forked child discards its parent's unused words)."""

    _MAX = 1024

    def __init__(self, gen: Any) -> None:
        self._gen = gen
        self._buf: list[int] = []
        self._block = 8
        self._pid = process_generation()
        self._lock = threading.Lock()

    def next(self) -> int:
        """The next word (the :class:`dpfast.noise._exact.WordSource` interface)."""
        with self._lock:
            gen = process_generation()
            if self._pid != gen:
                self._buf, self._pid, self._block = [], gen, 8
            if not self._buf:
                self._buf = self._gen.random_raw(self._block).tolist()[::-1]
                self._block = min(2 * self._block, self._MAX)
            return self._buf.pop()


_WORDS: weakref.WeakKeyDictionary[Any, Words] = weakref.WeakKeyDictionary()
_WORDS_LOCK = threading.Lock()


def words_for(gen: Any) -> Words:
    """The :class:`Words` of ``gen`` (one per generator, so no word is handed out twice)."""
    words = _WORDS.get(gen)
    if words is None:
        with _WORDS_LOCK:
            words = _WORDS.get(gen)
            if words is None:
                words = _WORDS[gen] = Words(gen)
    return words


def uniform_below(words: Words, k: int) -> int:
    """Exactly uniform on ``{0, ..., k - 1}`` (``1 <= k < 2^64``): rejection of the top
    ``2^64 mod k`` words."""
    if k == 1:
        return 0
    limit = _TWO64 - _TWO64 % k
    while True:
        w = words.next()
        if w < limit:
            return w % k


def _coin(words: Words, g: float, gamma_exact: Any) -> bool:
    """``1{U < exp(-γ)}`` for ``U`` uniform on [0, 1), ``g`` within ``γ 2^-50`` of ``γ``;
    ``gamma_exact()`` gives the exact rational ``γ`` when the float test cannot decide."""
    w = words.next()
    if FORCE_EXACT:
        pass
    elif g > 64.0:  # γ > 44.4: exp(-γ) < 2^-64 <= U unless the word is 0
        if w:
            return False
    else:
        e = math.exp(-g)
        if w + 1 <= e * (1.0 - _MARGIN) * _TWO64F:  # U's whole interval below exp(-γ)
            return True
        if w >= e * (1.0 + _MARGIN) * _TWO64F:  # U's whole interval above it
            return False
    return _exact.u_less_exp(_exact.LazyUniform(w, words), gamma_exact())


def permute_and_flip(utility: list[Any], c: Fraction, words: Words) -> int:
    """One permute-and-flip selection (McKenna & Sheldon 2020), exactly: index ``i`` is a
    head with probability ``exp(-c (u_max - u_i))`` (the maximum always is), and the result
    is a uniformly random head.  ``c > 0`` is the exact rational coefficient."""
    u = [float(v) for v in utility]
    umax = max(u)
    cf = float(c)
    heads = []
    for i, ui in enumerate(u):
        if ui == umax:
            heads.append(i)
            continue
        # cf (umax - ui) has relative error < 3.1 * 2^-53 < 2^-50 against the exact γ
        if _coin(words, cf * (umax - ui),
                 lambda ui=ui: c * (Fraction(umax) - Fraction(ui))):
            heads.append(i)
    return heads[0] if len(heads) == 1 else heads[uniform_below(words, len(heads))]
