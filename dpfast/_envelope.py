"""Exact discrete Gaussian by rejection from a piecewise-constant envelope (scalar sigma).

Target on m = |k| >= 0: w(m) = exp(-m^2 / (2 sigma^2)); a uniform sign is attached and
(negative, 0) rejected, which gives P(k) ∝ w(|k|) on the integers.

Envelope, built once per sigma with rigorous integer interval arithmetic:

* bins [i 2^p, (i+1) 2^p) for i < nb cover [0, M), M = nb 2^p >= 8 sigma; on bin i the
  envelope density is a dyadic ê_i >= w(i 2^p) (the maximum of w on the bin);
* a tail item for m >= M with the geometric envelope ê_T (1 - r) r^(m - M),
  r = exp(-M / sigma^2), which dominates w there because m^2 >= M^2 + 2M(m - M);
* a padding item that means "reject", so that the integer item weights fill an exact
  Walker alias table of ``ncol`` columns with capacity 2^(64 - log2 ncol) each.

A proposal is one 64-bit word (alias column + threshold), then a uniform offset in the
bin, accepted with probability w(k) / ê'_i (ê'_i the effective density, >= ê_i).  All
weights are exact integers, so the proposal distribution is exactly the envelope; the
acceptance decision is float-certified in the kernel and exact here when undecided.
Acceptance is about 97-100%, with no logarithm and rarely an exponential.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from dpfast._exact import Exact, LazyUniform, exp_neg_bounds, u_less_than

K_SIGMAS = 8  # the tail item starts at >= 8 sigma (mass ~1e-15)
NBINS = 256  # target number of bins
PREC = 62  # envelope heights are multiples of 2^-62


@dataclass(frozen=True)
class GaussTable:
    sigma: Fraction
    p: int  # log2 of the bin width
    nb: int  # number of bins; item nb = tail, item nb + 1 = padding
    m_tail: int  # M = nb << p
    cbits: int  # log2(number of alias columns)
    thresh: np.ndarray  # uint64[ncol]: column keeps its own item when v < thresh
    alias: np.ndarray  # int64[ncol]
    f: np.ndarray  # float64[nb]: w(a_i) / ê'_i in (0, 1], rounded to nearest
    inv2s2: float  # 1 / (2 sigma^2), rounded to nearest
    ehat: tuple[Fraction, ...]  # effective envelope density per bin
    ehat_tail: Fraction  # effective tail mass


def _vose(weights: list[int], ncol: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer Walker/Vose alias table: sum(weights) == ncol * cap."""
    w = weights + [0] * (ncol - len(weights))
    assert sum(w) == ncol * cap
    thresh = [0] * ncol
    alias = list(range(ncol))
    small = [j for j in range(ncol) if w[j] < cap]
    large = [j for j in range(ncol) if w[j] >= cap]
    while small and large:
        s = small.pop()
        g = large[-1]
        thresh[s] = w[s]
        alias[s] = g
        w[g] -= cap - w[s]
        if w[g] < cap:
            large.pop()
            small.append(g)
    for j in large + small:
        thresh[j] = cap  # exactly full (up to rounding there is none: integers)
    return np.array(thresh, dtype=np.uint64), np.array(alias, dtype=np.int64)


@functools.lru_cache(maxsize=64)
def table(sigma: Fraction) -> GaussTable:
    """The envelope table for ``sigma`` (cached)."""
    s2x2 = 2 * sigma * sigma
    m_min = math.ceil(K_SIGMAS * sigma)
    if m_min <= NBINS:
        p, nb = 0, max(1, m_min)
    else:
        p = max(0, (m_min // NBINS).bit_length() - 1)
        nb = -(-m_min // (1 << p))
    m_tail = nb << p
    one = 1 << PREC
    # bin needs (at scale 2^-PREC): hi bound of w(a_i), times the bin width
    his = [exp_neg_bounds(Fraction((i << p) ** 2) / s2x2, PREC)[1] for i in range(nb)]
    needs = [h << p for h in his]
    # tail: W_T >= exp(-M^2 / 2s^2) / (1 - exp(-M / s^2))
    t_tail = sigma * sigma / m_tail
    e_hi = exp_neg_bounds(Fraction(m_tail * m_tail) / s2x2, PREC)[1]
    r_hi = exp_neg_bounds(1 / t_tail, PREC)[1]
    one_minus_r_lo = max(one - r_hi, 1)
    n_tail = -(-(e_hi << PREC) // one_minus_r_lo)  # W_T * 2^PREC, rounded up
    needs.append(n_tail)
    total = sum(needs)
    nitems = nb + 2
    cbits = max(1, (nitems - 1).bit_length())
    ncol = 1 << cbits
    cap = 1 << (64 - cbits)
    q = ncol * cap - (nb + 1)
    weights = [-(-n * q // total) for n in needs]  # proportional, rounded up
    weights.append(ncol * cap - sum(weights))  # padding: "reject"
    thresh, alias = _vose(weights, ncol, cap)
    # effective densities: C * weight / (ncol * cap * width) with C = ncol*cap*total/(q*2^P)
    scale = Fraction(total, q * one)
    ehat = tuple(scale * weights[i] / (1 << p) for i in range(nb))
    ehat_tail = scale * weights[nb]
    f = np.empty(nb, np.float64)
    for i in range(nb):
        lo, hi = exp_neg_bounds(Fraction((i << p) ** 2) / s2x2, 80)
        f[i] = float(Fraction(lo + hi, 2 << 80) / ehat[i])
    return GaussTable(sigma, p, nb, m_tail, cbits, thresh, alias, f,
                      float(1 / s2x2), ehat, ehat_tail)


def _bounds_over(x: Fraction, denom: Fraction):
    """bounds(p) of exp(-x) / denom."""

    def bounds(prec: int) -> tuple[int, int]:
        lo, hi = exp_neg_bounds(x, prec)
        return (lo * denom.denominator) // denom.numerator, -((-hi * denom.denominator)
                                                                // denom.numerator)

    return bounds


def finish_accept(ex: Exact, tab: GaussTable, s: int, m: int, item: int, u_m: int,
                  u_bits: int) -> int:
    """Finish a kernel sample pending at its acceptance test (U known to u_bits bits)."""
    u = LazyUniform(u_m, ex.src, n=u_bits)
    x = Fraction(m * m) / (2 * tab.sigma * tab.sigma)
    if u_less_than(u, _bounds_over(x, tab.ehat[item])):
        return -m if s else m
    return ex.discrete_gaussian(tab.sigma)


def finish_tail(ex: Exact, tab: GaussTable, s: int) -> int:
    """Finish a kernel sample whose proposal chose the tail item (probability ~1e-15)."""
    sigma = tab.sigma
    mt = tab.m_tail
    t_tail = sigma * sigma / mt
    m = mt + ex.geometric(t_tail)  # P(m - M >= j) = r^j, r = exp(-1/t_tail)
    # accept with w(m) / (ê'_T (1 - r) r^(m - M)) = c_A * exp(-(m - M)^2 / (2 sigma^2))
    xa = Fraction(mt * mt) / (2 * sigma * sigma)

    def bounds_a(prec: int) -> tuple[int, int]:
        e_lo, e_hi = exp_neg_bounds(xa, prec)
        r_lo, r_hi = exp_neg_bounds(1 / t_tail, prec)
        one = 1 << prec
        # c_A = e / (ê'_T (1 - r)),  1 - r in [(one - r_hi), (one - r_lo)] / one
        lo = Fraction(e_lo * one) / (tab.ehat_tail * (one - r_lo))
        hi = Fraction(e_hi * one) / (tab.ehat_tail * max(one - r_hi, 1))
        return math.floor(lo), math.ceil(hi)

    if u_less_than(LazyUniform(ex.src.next(), ex.src), bounds_a):
        gamma_b = Fraction((m - mt) ** 2) / (2 * sigma * sigma)
        if ex.bern_exp_from(ex.src.next(), gamma_b):
            return -m if s else m
    return ex.discrete_gaussian(sigma)
