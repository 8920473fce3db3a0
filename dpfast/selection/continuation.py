"""The exact continuation of Gumbel-max: integer logarithm bounds, lazily refined
uniforms compared exactly (see :mod:`dpfast.selection`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._kernels import selection as _ks
from dpfast.noise import _exact
from dpfast.selection._validate import _INF


def _atanh_bounds(p: int, q: int, w: int) -> tuple[int, int]:
    """Integers (lo, hi) with lo <= atanh(p/q) 2^w <= hi, for 0 <= p/q <= 1/3 (+ rounding)."""
    if p == 0:
        return 0, 0
    z_lo = (p << w) // q
    z_hi = -((-p << w) // q)
    z2_lo = (z_lo * z_lo) >> w
    z2_hi = -((-(z_hi * z_hi)) >> w)
    t_lo, t_hi = z_lo, z_hi  # bounds of z^d 2^w, d = 1, 3, 5, ...
    s_lo = s_hi = 0
    d = 1
    while True:
        s_lo += t_lo // d
        s_hi += -((-t_hi) // d)
        t_lo = (t_lo * z2_lo) >> w
        t_hi = -((-(t_hi * z2_hi)) >> w)
        d += 2
        if t_hi <= 1:
            break
    # omitted tail sum_{j>=0} z^(d+2j)/(d+2j) <= z^d / (1 - z^2) <= (9/8) t_hi / 2^w
    return s_lo, s_hi + 2 * t_hi + 1


@functools.lru_cache(maxsize=256)
def _ln2_bounds(w: int) -> tuple[int, int]:
    lo, hi = _atanh_bounds(1, 3, w)  # ln 2 = 2 atanh(1/3)
    return 2 * lo, 2 * hi


def ln_bounds(num: int, den: int, w: int) -> tuple[int, int]:
    """Rigorous integer bounds ``lo <= ln(num / den) * 2**w <= hi`` for positive integers.

    Pure integer arithmetic: ``num/den = 2^k y`` with ``y`` in (1/2, 2), ``ln y =
    2 atanh((y - 1)/(y + 1))`` with ``|(y-1)/(y+1)| < 1/3`` and ``ln 2 = 2 atanh(1/3)``;
    every truncation is rounded outward and the series tail is bounded, so the result
    is an enclosure (not an estimate).  The width is a few units for moderate ``k``.
    """
    if num <= 0 or den <= 0:
        raise ValueError("ln_bounds needs positive integers")
    k = num.bit_length() - den.bit_length()
    if k >= 0:
        yn, yd = num, den << k
    else:
        yn, yd = num << -k, den
    wk = w + 16 + max(1, abs(k)).bit_length() + max(1, w).bit_length()
    p, q = yn - yd, yn + yd
    if p >= 0:
        a_lo, a_hi = _atanh_bounds(p, q, wk)
        lo, hi = 2 * a_lo, 2 * a_hi
    else:
        a_lo, a_hi = _atanh_bounds(-p, q, wk)
        lo, hi = -2 * a_hi, -2 * a_lo
    if k:
        l2_lo, l2_hi = _ln2_bounds(wk)
        if k > 0:
            lo, hi = lo + k * l2_lo, hi + k * l2_hi
        else:
            lo, hi = lo + k * l2_hi, hi + k * l2_lo
    sh = wk - w
    return lo >> sh, -((-hi) >> sh)


def _gumbel_interval(m: int, n: int, w: int) -> tuple[Fraction | float, Fraction | float]:
    """Enclosure of G = -ln(-ln U) over U in [m / 2^n, (m + 1) / 2^n] at precision 2^-w."""
    one = 1 << n
    scale = 1 << w
    ghi: Fraction | float
    glo: Fraction | float
    if m + 1 == one:
        ghi = _INF  # U may be arbitrarily close to 1
    else:
        _, h = ln_bounds(m + 1, one, w)  # ln(U_hi) <= h / 2^w
        if h >= 0:
            ghi = _INF
        else:  # L_lo = -ln(U_hi) >= -h / 2^w  =>  G_hi <= -ln(-h / 2^w)
            l, _ = ln_bounds(-h, scale, w)
            ghi = Fraction(-l, scale)
    if m == 0:
        glo = -_INF  # U may be arbitrarily close to 0
    else:
        l, _ = ln_bounds(m, one, w)  # ln(U_lo) >= l / 2^w  =>  L_hi <= -l / 2^w
        _, h = ln_bounds(-l, scale, w)
        glo = Fraction(-h, scale)
    return glo, ghi


class _Contest:
    """Exact comparison of Gumbel scores a_j - ln(-ln U_j) with lazily refined U_j."""

    def __init__(self, words: Sequence[int], offsets: Sequence[Fraction],
                 src: _exact.WordSource) -> None:
        self.u = [_exact.LazyUniform(int(w), src) for w in words]
        self.a = list(offsets)
        self.extra = [64] * len(self.u)
        self._key: list[tuple[int, int] | None] = [None] * len(self.u)
        self._iv: list[tuple[Any, Any]] = [(-_INF, _INF)] * len(self.u)

    def interval(self, j: int) -> tuple[Any, Any]:
        u = self.u[j]
        key = (u.n, self.extra[j])
        if self._key[j] != key:
            glo, ghi = _gumbel_interval(u.m, u.n, u.n + self.extra[j])
            a = self.a[j]
            self._iv[j] = (glo if glo == -_INF else a + glo, ghi if ghi == _INF else a + ghi)
            self._key[j] = key
        return self._iv[j]

    def refine(self, j: int) -> None:
        self.u[j].refine()  # 64 fresh bits: U stays exactly uniform given its prefix
        self.extra[j] += 64

    def argmax(self, active: Sequence[int]) -> int:
        act = list(active)
        while len(act) > 1:
            ivs = [self.interval(j) for j in act]
            b = max(range(len(act)), key=lambda t: ivs[t][1])
            lo1 = ivs[b][0]
            keep = [t for t in range(len(act)) if t == b or ivs[t][1] >= lo1]
            act = [act[t] for t in keep]
            if len(act) > 1:
                for j in act:
                    self.refine(j)
        return act[0]

    def rank(self, need: int) -> list[int]:
        """The ``need`` largest scores' positions, in decreasing order, exactly."""
        active = list(range(len(self.u)))
        out = []
        for _ in range(need):
            j = self.argmax(active)
            out.append(j)
            active.remove(j)
        return out


def _blocks(lo: np.ndarray, hi: np.ndarray, k: int) -> list[np.ndarray]:
    """Candidates that can be among the top k, in blocks whose order is certified.

    Sorted by upper bound; a cut after position r is certified when the smallest lower
    bound up to r exceeds the largest upper bound after r.  Candidates whose upper bound
    is below the k-th largest lower bound are never in the top k.
    """
    n = lo.shape[0]
    if k < n:
        kth = np.partition(lo, n - k)[n - k]
        cand = np.flatnonzero(hi >= kth)
    else:
        cand = np.arange(n)
    order = cand[np.argsort(-hi[cand], kind="stable")]
    pmin = np.minimum.accumulate(lo[order])
    cuts = np.flatnonzero(pmin[:-1] > hi[order[1:]]) + 1
    return np.split(order, cuts)


def _exact_top(words: np.ndarray, u_row: np.ndarray, c: Fraction, c_f: float, k: int,
               src: Callable[[], _exact.WordSource], forced: bool) -> list[int]:
    """The k largest Gumbel scores of one row, in order, decided exactly.

    ``words[j]`` holds the first 64 bits of U_j; further bits come from ``src()``.
    Float bounds (rigorous) prune and order what they can; blocks they cannot order
    are ranked by :class:`_Contest`.  ``forced`` skips the float bounds entirely.
    """
    n = words.shape[0]
    um = float(np.max(u_row))
    if forced:
        blocks = [np.arange(n)]
    else:
        lo = np.empty(n)
        hi = np.empty(n)
        _ks.row_bounds(words, u_row, um, c_f, lo, hi)
        blocks = _blocks(lo, hi, k)
    out: list[int] = []
    fum = Fraction(um)
    for blk in blocks:
        if len(out) >= k:
            break
        if blk.shape[0] == 1:
            out.append(int(blk[0]))
            continue
        contest = _Contest([int(words[j]) for j in blk],
                           [c * (Fraction(float(u_row[j])) - fum) for j in blk], src())
        out.extend(int(blk[t]) for t in contest.rank(min(k - len(out), blk.shape[0])))
    return out



