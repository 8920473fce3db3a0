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
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast.compat._random_state import Words, uniform_below, words_for
from dpfast.noise import _exact

__all__ = ["MAX_CANDIDATES", "Words", "words_for", "permute_and_flip", "uniform_below", "geometric",
           "discrete_laplace"]

FORCE_EXACT = False  # test hook: every coin through the exact continuation
MAX_CANDIDATES = 32  # up to this many candidates a scalar draw takes the pure-Python path
_INT64 = np.int64
_TWO64 = 1 << 64
_TWO64F = float(_TWO64)
# |exp(-g) - exp(-γ)| <= exp(-g)(e^{γ 2^-50} - 1) for |g - γ| <= γ 2^-50 (g <= 64: < 2^-43),
# plus the platform exp within 2^12 ulps (2^-40): a relative margin of 2^-38 covers both
_MARGIN = 2.0 ** -38


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
    # (float(numpy.int64) goes through numbers.Integral.__float__ in Python: int() first)
    u = [float(int(v)) if type(v) is _INT64 else float(v) for v in utility]
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


def _geometric_direct(words: Words, t: Fraction, tf: float) -> int:
    """:func:`geometric` for ``t <= 2^20``: ``G = floor(-t ln U)`` from a certified float
    enclosure over ``U``'s 64-bit interval (``log`` assumed within 2^12 ulps: a relative
    margin of ``2^-40``); where the enclosure straddles an integer, the exact comparisons
    ``U < e^{-k/t}`` (:func:`dpfast.noise._exact.u_less_exp`, lazily refined uniform)
    bisect the candidates."""
    w = words.next()
    lo, hi = 0, None  # U < e^{-lo/t} holds; U < e^{-hi/t} fails (None: unknown)
    if w >= 1 << 12:
        wf = float(w)  # within 2^11 of w; wf -+ 4096 and the scaling below are exact
        lo_u = (wf - 4096.0) * 2.0 ** -64  # <= U's lower end
        hi_u = (wf + 4096.0) * 2.0 ** -64  # >= U's upper end
        if hi_u < 1.0:
            k_lo = math.floor(-tf * math.log(hi_u) * (1.0 - 2.0 ** -40))
            k_hi = math.floor(-tf * math.log(lo_u) * (1.0 + 2.0 ** -40))
            if k_lo == k_hi and not FORCE_EXACT:
                return k_lo
            lo, hi = max(k_lo, 0), k_hi + 1  # floor(-t ln U) in [k_lo, k_hi]
    u = _exact.LazyUniform(w, words)
    if hi is None:  # doubling search from 0 (U within 2^-51 of 0 or 1: rare)
        hi = 1
        while _exact.u_less_exp(u, Fraction(hi) / t):
            lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _exact.u_less_exp(u, Fraction(mid) / t):
            lo = mid
        else:
            hi = mid
    return lo


def geometric(words: Words, t: Fraction, tf: float) -> int:
    """``G`` with ``P(G = k) = (1 - q) q^k``, ``q = e^{-1/t}`` (``t > 0`` rational, ``tf``
    its float), exactly.  Large ``t`` (a grid scale is ``~2^40`` steps) splits
    ``G = c M + R`` with ``c`` a power of two: by memorylessness ``M`` is geometric of scale
    ``t / c`` and, independently, ``R`` has ``P(R = r) ∝ q^r`` on ``[0, c)`` -- drawn as a
    uniform ``r`` accepted with probability ``e^{-r/t} >= e^{-2^-16}`` (an exact coin)."""
    if tf <= 2.0 ** 20:
        return _geometric_direct(words, t, tf)
    c = 1 << (math.frexp(tf)[1] - 17)  # t / c in [2^16, 2^17)
    m = _geometric_direct(words, t / c, tf / c)
    while True:
        r = uniform_below(words, c)
        if r == 0 or _coin(words, r / tf, lambda r=r: Fraction(r) / t):
            return c * m + r


def discrete_laplace(words: Words, t: Fraction, tf: float) -> int:
    """One exact draw of ``P(z) ∝ e^{-|z|/t}``: a uniform sign times :func:`geometric`,
    rejecting ``-0`` (so 0 carries its weight once)."""
    while True:
        g = geometric(words, t, tf)
        neg = words.next() >> 63
        if not (neg and g == 0):
            return -g if neg else g
