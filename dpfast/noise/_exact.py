"""Exact continuation for samples whose float fast path could not certify a decision.

Every decision of dpfast's samplers has the form "is U < c?" for a uniform U on [0, 1)
and a real threshold c = exp(-x) or 1 - exp(-x) with x >= 0 rational.  The kernels
decide it from 64 random bits and a float approximation of c with a rigorous error
bound; when the bound cannot separate U from c, the sample is handed here with the 64
bits it drew.  This module then decides the comparison *exactly*: U is refined lazily
(64 more random bits at a time, so U stays exactly uniform given its prefix) and c is
enclosed by integer interval arithmetic to ever higher precision until the two
intervals separate.  Since exp(-x) is irrational for rational x > 0 this terminates
with probability 1.  Nothing is ever resampled.

The module also holds pure-Python mirrors of the kernels' samplers (float-certified
decisions, exact fallback) used to finish a sample after its undecided step, and the
test hook that forces every sample through this path.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import math
import threading
from collections.abc import Callable, Iterator
from fractions import Fraction

import numpy as np

__all__ = ["force_exact", "forced_mode", "ForceMode", "WordSource", "LazyUniform"]

# Relative error allowed for a float log/exp/expm1 result including the roundings of its
# inputs: 2^-48 is 16x the ~1-ulp accuracy of glibc's log/exp/expm1 plus input rounding.
REL = 2.0 ** -48
TWO64 = 2.0 ** 64

_force = threading.local()


class ForceMode(enum.IntEnum):
    """Which float decision :func:`force_exact` declares undecided (the kernels'
    ``FORCE_*`` constants in :mod:`dpfast._kernels.samplers`)."""

    NONE = 0
    INVERSION = 1  # the first geometric inversion
    REJECTION = 2  # the first uniform-rejection step of a large-scale geometric
    ACCEPT = 3  # the Bernoulli / envelope acceptance (discrete Gaussian, bernoulli_exp)


@contextlib.contextmanager
def force_exact(mode: int = ForceMode.INVERSION) -> Iterator[None]:
    """Test hook: force samples through the exact continuation.

    ``mode`` (a :class:`ForceMode` or its value) selects the step whose float decision
    is declared undecided for *every* sample drawn in this thread inside the ``with``
    block: 1 = the first geometric inversion, 2 = the first uniform-rejection step of a
    large-scale geometric, 3 = the Bernoulli acceptance of the discrete Gaussian /
    ``bernoulli_exp`` and the envelope table's acceptance.
    """
    if mode not in (1, 2, 3):
        raise ValueError(f"mode must be 1, 2 or 3, got {mode}")
    old = getattr(_force, "mode", 0)
    _force.mode = int(mode)
    try:
        yield
    finally:
        _force.mode = old


def forced_mode() -> int:
    """The current thread's forced mode (0 = normal operation)."""
    return getattr(_force, "mode", 0)


class WordSource:
    """Uniform 64-bit words from a callable ``fetch(n) -> uint64 array``."""

    def __init__(self, fetch: Callable[[int], np.ndarray], batch: int = 256) -> None:
        self._fetch = fetch
        self._batch = batch
        self._buf: list[int] = []

    def next(self) -> int:
        if not self._buf:
            self._buf = [int(w) for w in self._fetch(self._batch)][::-1]
        return self._buf.pop()

    def bits(self, k: int) -> int:
        """k <= 64 uniform bits (top bits of one word)."""
        return self.next() >> (64 - k) if k else 0


class LazyUniform:
    """U uniform on [0, 1), known so far as U in [M / 2^n, (M + 1) / 2^n)."""

    __slots__ = ("m", "n", "src")

    def __init__(self, m: int, src: WordSource, n: int = 64) -> None:
        self.m = m
        self.n = n
        self.src = src

    def refine(self) -> None:
        self.m = (self.m << 64) | self.src.next()
        self.n += 64

    def approx(self) -> float:
        return (self.m + 0.5) / 2.0 ** self.n if self.n < 1000 else 0.0


# ------------------------------------------------------------------ interval exp(-x)
def _exp_neg_small(a: int, b: int, w: int) -> tuple[int, int]:
    """Integers (lo, hi) with lo <= exp(-a/b) * 2^w <= hi, for 0 <= a/b <= 1."""
    one = 1 << w
    s_lo = s_hi = 0
    t_lo = t_hi = one
    k = 0
    while True:
        if k % 2 == 0:
            s_lo += t_lo
            s_hi += t_hi
        else:
            s_lo -= t_hi
            s_hi -= t_lo
        k += 1
        t_lo = (t_lo * a) // (b * k)
        t_hi = -((-t_hi * a) // (b * k))
        if t_hi <= 1:
            break
    # terms decrease (a/b <= 1), so the tail is bounded by the first omitted term
    return s_lo - t_hi, s_hi + t_hi


@functools.lru_cache(maxsize=64)
def _exp_neg_one(w: int) -> tuple[int, int]:
    return _exp_neg_small(1, 1, w)


def _mul_lo(a: int, b: int, w: int) -> int:
    return (a * b) >> w


def _mul_hi(a: int, b: int, w: int) -> int:
    return -((-(a * b)) >> w)


@functools.lru_cache(maxsize=4096)
def exp_neg_bounds(x: Fraction, prec: int) -> tuple[int, int]:
    """(lo, hi) with lo <= exp(-x) * 2^prec <= hi, rigorous, for rational x >= 0."""
    if x < 0:
        raise ValueError("x must be >= 0")
    n, r = divmod(x.numerator, x.denominator)
    w = prec + 64 + 4 * max(1, n.bit_length())
    f_lo, f_hi = _exp_neg_small(r, x.denominator, w)
    f_lo = max(f_lo, 0)
    if n:
        e_lo, e_hi = _exp_neg_one(w)
        p_lo, p_hi = 1 << w, 1 << w
        b_lo, b_hi, k = e_lo, e_hi, n
        while k:
            if k & 1:
                p_lo, p_hi = _mul_lo(p_lo, b_lo, w), _mul_hi(p_hi, b_hi, w)
            k >>= 1
            if k:
                b_lo, b_hi = _mul_lo(b_lo, b_lo, w), _mul_hi(b_hi, b_hi, w)
        f_lo, f_hi = _mul_lo(f_lo, p_lo, w), _mul_hi(f_hi, p_hi, w)
    shift = w - prec
    return f_lo >> shift, -((-f_hi) >> shift)


def u_less_than(u: LazyUniform, bounds: Callable[[int], tuple[int, int]]) -> bool:
    """Exactly decide U < c, where ``bounds(p)`` encloses c * 2^p (c irrational or 1)."""
    prec = max(64, u.n + 16)
    while True:
        lo, hi = bounds(prec)
        if (u.m + 1) << prec <= lo << u.n:
            return True
        if u.m << prec >= hi << u.n:
            return False
        # refine the coarser of the two intervals
        if (hi - lo) << u.n > 1 << prec:
            prec *= 2
        else:
            u.refine()


def u_less_exp(u: LazyUniform, x: Fraction) -> bool:
    """U < exp(-x), exactly."""
    if x == 0:
        return True
    return u_less_than(u, lambda p: exp_neg_bounds(x, p))


def u_less_one_minus_exp(u: LazyUniform, x: Fraction) -> bool:
    """U < 1 - exp(-x), exactly."""
    if x == 0:
        return False

    def bounds(p: int) -> tuple[int, int]:
        lo, hi = exp_neg_bounds(x, p)
        return (1 << p) - hi, (1 << p) - lo

    return u_less_than(u, bounds)


# ------------------------------------------------------------------ certified float tests
def _floor_certified(y: float, err: float) -> int | None:
    a = math.floor(y - err)
    return a if a == math.floor(y + err) else None


def geo_inv_float(m: int, t: float) -> int | None:
    """Kernel twin: floor(-t ln U) for U in [m/2^64, (m+1)/2^64), or None if undecided."""
    if m == 0:
        return None
    u = (float(m) + 0.5) / TWO64
    y = -t * math.log(u)
    err = (t * (0.5 / m + 2.0 ** -50) + y * REL) * 1.01
    return _floor_certified(y, err)


def split_scale(t: float) -> tuple[int, float]:
    """(J, t / 2^J) for the two-level geometric (J = 0: single inversion)."""
    if t < 32.0:
        return 0, t
    _, e = math.frexp(t)
    j = e - 5
    return j, math.ldexp(t, -j)


# ------------------------------------------------------------------ exact samplers
class Exact:
    """Pure-Python exact samplers sharing one word source (the slow path's stream)."""

    def __init__(self, src: WordSource) -> None:
        self.src = src
        self._signs = 0
        self._nsigns = 0

    def sign(self) -> int:
        if self._nsigns == 0:
            self._signs = self.src.next()
            self._nsigns = 64
        self._nsigns -= 1
        b = self._signs & 1
        self._signs >>= 1
        return b

    # geometric with P(G >= k) = exp(-k/t) by inversion, given U's first 64 bits m
    def geo_inv_from(self, m: int, t: Fraction, force: bool = False) -> int:
        if not force:
            g = geo_inv_float(m, float(t))
            if g is not None:
                return g
        u = LazyUniform(m, self.src)
        while u.m == 0:
            u.refine()
        est = -float(t) * (math.log(u.m + 0.5) - u.n * math.log(2.0))
        k = max(0, math.floor(est))
        # G = max{k : U < exp(-k/t)}: step down until U < exp(-k/t), then up
        step = 1
        while k > 0 and not u_less_exp(u, Fraction(k) / t):
            k = max(0, k - step)
            step *= 2
        while u_less_exp(u, Fraction(k + 1) / t):
            k += 1
        return k

    def geo_inv(self, t: Fraction) -> int:
        return self.geo_inv_from(self.src.next(), t)

    # L in [0, 2^J) with P(L = l) ∝ exp(-l/t), by uniform proposal and rejection
    def accept_l_kernel(self, l: int, w: int, t: Fraction) -> bool:
        """Finish a kernel's pending rejection step: there U = w / 2^68 + [0, 2^-68)."""
        return not u_less_one_minus_exp(LazyUniform(w, self.src, n=68), Fraction(l) / t)

    def accept_l_from(self, l: int, w: int, t: Fraction, force: bool = False) -> bool:
        if not force:
            if w >= 1 << 60:
                return True
            d = -math.expm1(-l / float(t))
            if w / TWO64 >= d * (1 + 2.0 ** -46):
                return True
            if (w + 1) / TWO64 <= d * (1 - 2.0 ** -46):
                return False
        return not u_less_one_minus_exp(LazyUniform(w, self.src), Fraction(l) / t)

    def sample_l(self, t: Fraction, j: int) -> int:
        while True:
            l = self.src.bits(j)
            if self.accept_l_from(l, self.src.next(), t):
                return l

    def geometric(self, t: Fraction) -> int:
        j, _ = split_scale(float(t))
        if j == 0:
            return self.geo_inv(t)
        h = self.geo_inv(t / (1 << j))
        return (h << j) + self.sample_l(t, j)

    def finish_laplace(self, s: int, g: int) -> int | None:
        """Sign step of the discrete Laplace: None means 'rejected, start over'."""
        if s and g == 0:
            return None
        return -g if s else g

    def discrete_laplace(self, t: Fraction) -> int:
        while True:
            s = self.sign()
            v = self.finish_laplace(s, self.geometric(t))
            if v is not None:
                return v

    # Bernoulli(exp(-gamma)) given the first 64 bits w of its uniform
    def bern_exp_from(self, w: int, gamma: Fraction, force: bool = False) -> bool:
        if not force:
            g = float(gamma)
            e = math.exp(-g)
            err = e * (g * 2.0 ** -50 + REL) + 2.0 ** -1070
            if (w + 1) / TWO64 <= (e - err) * (1 - 2.0 ** -52):
                return True
            if w / TWO64 >= (e + err) * (1 + 2.0 ** -52):
                return False
        return u_less_exp(LazyUniform(w, self.src), gamma)

    def gauss_gamma(self, y: int, sigma: Fraction, t: int) -> Fraction:
        s2 = sigma * sigma
        d = abs(y) - s2 / t
        return d * d / (2 * s2)

    def discrete_gaussian(self, sigma: Fraction) -> int:
        t = math.floor(sigma) + 1
        while True:
            y = self.discrete_laplace(Fraction(t))
            if self.bern_exp_from(self.src.next(), self.gauss_gamma(y, sigma, t)):
                return y
