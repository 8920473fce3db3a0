"""Exact discrete Gaussian / Laplace by rejection from a piecewise-constant envelope.

Used for a scalar parameter.  Target on m = |k| >= 0: w(m) = exp(-x(m)) with
x(m) = m^2 / (2 sigma^2) (discrete Gaussian) or x(m) = m / t (discrete Laplace); a uniform
sign is attached and (negative, 0) rejected, which gives P(k) ∝ w(|k|) on the integers.

Envelope, built once per sigma with rigorous integer interval arithmetic:

* bins [i 2^p, (i+1) 2^p) for i < nb cover [0, M), M = nb 2^p >= 8 sigma (Gaussian) or
  40 t (Laplace); on bin i the envelope density is a dyadic ê_i >= w(i 2^p) (the
  maximum of w on the bin);
* a tail item for m >= M with the geometric envelope ê_T (1 - r) r^(m - M): for the
  Gaussian r = exp(-M / sigma^2), which dominates w there because
  m^2 >= M^2 + 2M(m - M); for the Laplace r = exp(-1/t) and the envelope is w itself;
* a padding item that means "reject", so that the integer item weights fill an exact
  Walker alias table of ``ncol`` columns with capacity 2^(64 - log2 ncol) each.

A proposal is one 64-bit word holding the alias column, the top bits of the alias value
(the rest from a fresh word only when they tie with the column's threshold and it has bits
below them), the sign,
the uniform offset in the bin and the first bits of the acceptance uniform U (two words
when the bin is too wide to leave ``UMIN`` bits for U:
:func:`dpfast.noise._kernel_table.layout`); it is accepted
with probability w(k) / ê'_i (ê'_i the effective density, >= ê_i).  All weights are
exact integers, so the proposal distribution is exactly the envelope; the acceptance
decision is float-certified in the kernel on U's known bits (one more word when they do
not suffice) and exact here when undecided.  Acceptance is about 96-100%, with no
logarithm and rarely an exponential.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._kernels import samplers as sk
from dpfast.noise._exact import Exact, LazyUniform, exp_neg_bounds, u_less_than
from dpfast.noise._kernel_table import DIRECT_MIN_CBITS, KernelTable, direct_bits, layout

K_SIGMAS = 8  # Gaussian: the tail item starts at >= 8 sigma (mass ~1e-15)
K_SCALES = 40  # Laplace: the tail item starts at >= 40 t (mass ~4e-18)
NBINS = {"gauss": 256, "laplace": 1024}  # target number of bins
PREC = 62  # envelope heights are multiples of 2^-62


@dataclass(frozen=True)
class Table:
    law: str  # "gauss" (param = sigma) or "laplace" (param = scale t)
    param: Fraction
    p: int  # log2 of the bin width
    nb: int  # number of bins; item nb = tail, item nb + 1 = padding
    m_tail: int  # M = nb << p
    cbits: int  # log2(number of alias columns)
    thresh: np.ndarray  # uint64[ncol]: column keeps its own item when v < thresh
    alias: np.ndarray  # int64[ncol]
    f: np.ndarray  # float64[nb]: w(a_i) / ê'_i in (0, 1], rounded to nearest
    coef: float  # 1 / (2 sigma^2) or 1 / t, rounded to nearest
    ehat: Any  # effective envelope density per bin (exact Fractions, indexable)
    ehat_tail: Fraction  # effective tail mass
    t_tail: Fraction  # the tail's geometric scale
    words: float  # expected keystream words per sample
    squeeze: tuple = ()  # (ta, trm1, flo): the kernel's fast acceptance bounds
    lay: tuple = ()  # (vb, two, pa, pb, ubits): the proposal's word layout, see layout()

    @property
    def law_code(self) -> int:
        return 0 if self.law == "laplace" else 1

    @functools.cached_property
    def kernel(self) -> KernelTable:
        """The table kernel's encoding of this table (:mod:`dpfast.noise._kernel_table`)."""
        return KernelTable(self)

    @property
    def kernel_args(self) -> tuple:
        """The ``table`` tuple of :func:`dpfast._kernels.table.table_kernel` (built once, by
        :attr:`kernel`)."""
        return self.kernel.args

    def x(self, m: int) -> Fraction:
        """w(m) = exp(-x(m))."""
        if self.law == "laplace":
            return Fraction(m) / self.param
        return Fraction(m * m) / (2 * self.param * self.param)


def _weights(needs: list[int], total: int, mass: int, quantum: int) -> tuple[int, list[int]]:
    """``(q, weights)``: the alias weights ``weights[i] >= needs[i] q / total``, each a
    multiple of ``quantum`` (a power of two dividing a column's capacity), with the
    largest ``q`` for which they fit in ``mass`` (the rest is padding).

    With ``quantum = 2^(64 - dbits)`` every Vose threshold is a multiple of it (the
    weights, the capacity and so every remainder are), so a proposal's top ``dbits`` bits
    decide its item: no entry of the direct table straddles a column's threshold.  The
    price is up to one quantum of padding per item (the bisection on ``q`` takes about
    half of it back), i.e. slightly more rejected proposals -- far cheaper than the
    kernel's fallback for a straddling entry, which it replaces.  ``quantum = 1``: the
    plain proportional weights, rounded up, with ``q = mass - len(needs)``."""
    def fit(q: int) -> list[int]:
        return [-(-n * q // (total * quantum)) * quantum for n in needs]

    k = len(needs)
    lo = mass - k * quantum  # sum(fit(lo)) <= lo + k quantum = mass: always fits
    if quantum == 1:
        return lo, fit(lo)
    # the largest q that fits, to within (mass - lo) / 2^16, bisected in floats (a
    # vectorized set-up cost), then checked exactly (else the q that always fits)
    a = np.array([n / (total * quantum) for n in needs])
    qlo, qhi, room = float(lo), float(mass), mass // quantum
    for _ in range(16):
        mid = (qlo + qhi) / 2
        if np.ceil(a * mid).sum() <= room:
            qlo = mid
        else:
            qhi = mid
    w = fit(int(qlo))
    return (int(qlo), w) if sum(w) <= mass else (lo, fit(lo))


def _vose(weights: list[int], ncol: int, cap: int, alone: int | None = None
          ) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer Walker/Vose alias table: sum(weights) == ncol * cap.  ``alone``: an
    item whose column holds it and the padding (the last item) only, its threshold its
    weight; the other columns are Vose's on what is left."""
    w = weights + [0] * (ncol - len(weights))
    assert sum(w) == ncol * cap
    thresh = [0] * ncol
    alias = list(range(ncol))
    cols: list[int] | range = range(ncol)
    if alone is not None:
        pad = len(weights) - 1
        thresh[alone], alias[alone] = w[alone], pad
        w[pad] -= cap - w[alone]
        assert w[pad] >= 0
        w[alone] = 0
        cols = [j for j in range(ncol) if j != alone]
    small = [j for j in cols if w[j] < cap]
    large = [j for j in cols if w[j] >= cap]
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


TABLE_CACHE = 64  # envelope tables kept (least recently used dropped first)
_LAW_NAMES = {0: "laplace", 1: "gauss", "laplace": "laplace", "gauss": "gauss",
              "gaussian": "gauss"}


def table(law: int | str, param: Fraction) -> Table:
    """The envelope table for ``law`` (``Law.LAPLACE`` / "laplace": scale t;
    ``Law.GAUSSIAN`` / "gauss": sigma), from a bounded LRU cache of ``TABLE_CACHE``."""
    key = law if isinstance(law, str) else int(law)
    if key not in _LAW_NAMES:
        raise ValueError(f"internal: unknown law {law!r}")
    return _table(_LAW_NAMES[key], param if type(param) is Fraction else Fraction(param))


@functools.lru_cache(maxsize=TABLE_CACHE)
def _table(law: str, param: Fraction) -> Table:
    if law == "gauss":
        m_min = math.ceil(K_SIGMAS * param)
        coef = float(1 / (2 * param * param))
    else:
        m_min = math.ceil(K_SCALES * param)
        coef = float(1 / param)
    nbins = NBINS[law]
    if m_min <= nbins:
        p, nb = 0, max(1, m_min)
    else:
        p = max(0, (m_min // nbins).bit_length() - 1)
        nb = -(-m_min // (1 << p))
    m_tail = nb << p
    proto = Table(law, param, p, nb, m_tail, 0, np.empty(0, np.uint64), np.empty(0, np.int64),
                  np.empty(0), coef, (), Fraction(0), Fraction(0), 0.0)
    one = 1 << PREC
    # w(a_i) = exp(-x(a_i)) enclosed for every bin by a recurrence in WORK-bit fixed point
    # (two directed multiplications per bin instead of one exp per bin); the enclosure
    # stays within 2^-72 relative of w even in the farthest bin (see _bin_bounds)
    los, his_w = _bin_bounds(law, param, p, nb)
    shift = WORK - PREC
    his = [-((-h) >> shift) for h in his_w]  # hi bound of w(a_i) at scale 2^-PREC
    needs = [h << p for h in his]
    # tail: W_T >= w(M) / (1 - r), r = exp(-1 / t_tail)
    t_tail = param * param / m_tail if law == "gauss" else param
    e_hi = exp_neg_bounds(proto.x(m_tail), PREC)[1]
    r_hi = exp_neg_bounds(1 / t_tail, PREC)[1]
    one_minus_r_lo = max(one - r_hi, 1)
    n_tail = -(-(e_hi << PREC) // one_minus_r_lo)  # W_T * 2^PREC, rounded up
    needs.append(n_tail)
    total = sum(needs)
    nitems = nb + 2
    cbits = max(1, (nitems - 1).bit_length())
    lay = layout(cbits, p)
    if direct_bits(cbits, p, nb, lay):  # a direct table's: its tail column costs 1 / ncol
        cbits = max(cbits, DIRECT_MIN_CBITS)
        lay = layout(cbits, p)
    ncol = 1 << cbits
    cap = 1 << (64 - cbits)
    dbits = direct_bits(cbits, p, nb, lay)
    tail_col = None
    # the bins' weights on a grid (the tail's exact, alone in its own column with padding
    # above it: the one threshold off the grid): the direct table's (no entry straddles a
    # threshold; a proposal reaches the tail's column with probability <= 2^-dbits), or
    # for the wide loops (one-word proposals without a direct table) the grid of the top
    # cbits + vb bits, so a tie of the alias value's top bits with a threshold reads no
    # word (the value is not below it) except in the tail's column
    quantum = 1 << (64 - dbits) if dbits else (
        1 << (64 - cbits - lay[0]) if not lay[1] and p > 0 else 0)
    if quantum:
        q, weights = _weights(needs[:nb], total, (ncol - 1) * cap, quantum)
        weights.append(-(-n_tail * q // total))
        assert weights[nb] < cap
        tail_col = nb
    else:
        q, weights = _weights(needs, total, ncol * cap, 1)
    weights.append(ncol * cap - sum(weights))  # padding: "reject"
    thresh, alias = _vose(weights, ncol, cap, tail_col)
    # effective densities: C * weight / (ncol * cap * width) with C = ncol*cap*total/(q*2^P)
    ehat = _Densities(total, q * one, weights[:nb], p)
    ehat_tail = Fraction(total, q * one) * weights[nb]
    # f_i = w(a_i) / ehat_i = mid_i q one 2^p / (2^(WORK+1) total weight_i), one correctly
    # rounded int / int division: relative error <= 2^-53 + the enclosure's 2^-72
    fnum = q * one << p
    fden = total << (WORK + 1)
    f = np.array([((los[i] + his_w[i]) * fnum) / (fden * weights[i]) for i in range(nb)])
    # a proposal costs one word (two for very wide bins; about half a word for a table
    # with a direct table, which decides most proposals on one 32-bit half); m = 0
    # (probability ~ one / total of the envelope) loses half its proposals to the sign;
    # the envelope is ~96-100% tight
    p0 = min(one / total, 1.0)
    per = 2.0 if lay[1] else (0.53 if dbits else 1.0)
    words = per / (1.0 - p0 / 2.0) / 0.96
    sq = squeeze_bounds(f)
    if p > 0:  # wide bins: ta[i] bounds the acceptance probability over the whole bin
        sq = (bin_accept_floor(law, param, p, nb, sq[2]), *sq[1:])
    return Table(law, param, p, nb, m_tail, cbits, thresh, alias, f, coef, ehat, ehat_tail,
                 t_tail, words, sq, lay)


def bin_accept_floor(law: str, param: Fraction, p: int, nb: int, flo: np.ndarray
                     ) -> np.ndarray:
    """``ta`` for bins of width ``2^p > 1``: ``ta[i] <= 2^64 min_off f_i exp(-g(off))``,
    the smallest acceptance probability of bin ``i`` (``g(off) = x(a_i + off) - x(a_i)``
    grows with the offset, so the minimum is at ``off = 2^p - 1``), so a proposal whose
    U's known bits ``u`` satisfy ``u < ta[i] >> (64 - ubits)`` is accepted with no float
    arithmetic.  ``flo[i] <= f_i``; g's float value is rounded up (a relative 2^-48 covers
    its at most four roundings) and exp (numpy's, within a few ulp) rounded down by 2^-45,
    with a 2^-40 margin on the product, so the kernel takes this shortcut only where its
    float certificate on the same bits accepts too (the same words are read).  Vectorized:
    part of a new scale's set-up cost."""
    span = (1 << p) - 1
    if law == "laplace":  # g(2^p - 1) = (2^p - 1) / t in every bin
        gm = np.full(nb, float(Fraction(span) / param))
    else:  # (2^p - 1) (2 a_i + 2^p - 1) / (2 sigma^2)
        coef = float(1 / (2 * param * param))
        ai = np.arange(nb, dtype=np.float64) * float(1 << p)
        gm = float(span) * (2.0 * ai + float(span)) * coef
    e_lo = np.exp(-gm * (1.0 + 2.0 ** -48)) * (1.0 - 2.0 ** -45)
    v = np.floor(np.ldexp(flo * e_lo * (1.0 - 2.0 ** -40), 64))  # < 2^64: flo, e_lo < 1
    return v.astype(np.uint64)


def squeeze_bounds(f: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The table kernel's fast acceptance bounds, from ``f`` with ``|f - f_i| <= 2^-52 f_i``
    (f_i the exact acceptance factor):

    * ``ta[i] <= f_i 2^64`` (an integer): a word ``u < ta[i]`` means U < f_i (for bins of
      width ``2^p > 1`` the table replaces it by :func:`bin_accept_floor`);
    * ``trm1[i] + 1 >= f_i 2^64``: a word ``u > trm1[i]`` means U >= f_i (``2^64 - 1``,
      never, where f_i may be 1);
    * ``flo[i] <= f_i (1 - 2^-46 + 2^-51)``, the margin the kernel's float squeeze
      ``U < flo (1 - g)`` assumes;
    * ``fhi[i] >= f_i``, for the kernel's rejection squeeze ``U >= fhi (1 - g + g^2/2)``.

    Every bound is rounded to the safe side: ``f (1 -+ 2^-49)`` is outside f_i's interval
    even after its own rounding (2^-53)."""
    lo = f * (1.0 - 2.0 ** -49)
    hi = f * (1.0 + 2.0 ** -49)
    ta = np.floor(np.ldexp(lo, 64)).astype(np.uint64)  # lo < 1: below 2^64
    never = hi >= 1.0
    up = np.ceil(np.ldexp(np.where(never, 0.5, hi), 64)).astype(np.uint64)
    trm1 = np.where(never, np.uint64(2**64 - 1), up - np.uint64(1)).astype(np.uint64)
    flo = f * (1.0 - 2.0 ** -46)
    return ta, trm1, flo, hi


WORK = PREC + 100  # fixed-point bits of the bin recurrence


def _bin_bounds(law: str, param: Fraction, p: int, nb: int) -> tuple[list[int], list[int]]:
    """Integer enclosures ``lo_i <= w(i 2^p) 2^WORK <= hi_i`` for i < nb.

    Laplace: ``w(a_{i+1}) = w(a_i) e^{-d}``, ``d = 2^p / t``.  Gaussian:
    ``w(a_{i+1}) = w(a_i) r_i`` with ``r_i = e^{-(2i+1) c}``, ``r_{i+1} = r_i e^{-2c}``,
    ``c = 2^{2p} / (2 sigma^2)``.  Every product is rounded down for ``lo`` and up for
    ``hi`` (all terms positive), so the enclosures are rigorous; each step widens them by
    at most a few units of ``2^-WORK``, i.e. ``<= 2^-(WORK - 13)`` absolute over 2048
    bins, which is ``< 2^-80`` relative to the smallest bin value (``w >= 2^-60``:
    ``x <= 41``).
    """
    top = 1 << WORK
    lo, hi = [top], [top]
    if law == "laplace":
        elo, ehi = exp_neg_bounds(Fraction(1 << p) / param, WORK)
        for _ in range(nb - 1):
            lo.append((lo[-1] * elo) >> WORK)
            hi.append(-((-hi[-1] * ehi) >> WORK))
        return lo, hi
    c = Fraction(1 << (2 * p)) / (2 * param * param)
    r_lo, r_hi = exp_neg_bounds(c, WORK)
    g_lo, g_hi = exp_neg_bounds(2 * c, WORK)
    for _ in range(nb - 1):
        lo.append((lo[-1] * r_lo) >> WORK)
        hi.append(-((-hi[-1] * r_hi) >> WORK))
        r_lo = (r_lo * g_lo) >> WORK
        r_hi = -((-r_hi * g_hi) >> WORK)
    return lo, hi


class _Densities:
    """The effective envelope densities ``ehat_i = total weight_i / (den 2^p)`` as exact
    Fractions, made on demand (the exact paths need one or two; building all would cost
    more than the rest of the table)."""

    def __init__(self, total: int, den: int, weights: list[int], p: int) -> None:
        self._total, self._den, self._w, self._p = total, den, weights, p

    def __len__(self) -> int:
        return len(self._w)

    def __getitem__(self, i: int) -> Fraction:
        return Fraction(self._total * self._w[i], self._den << self._p)


def _bounds_over(x: Fraction, denom: Fraction):
    """bounds(p) of exp(-x) / denom."""

    def bounds(prec: int) -> tuple[int, int]:
        lo, hi = exp_neg_bounds(x, prec)
        return (lo * denom.denominator) // denom.numerator, -((-hi * denom.denominator)
                                                                // denom.numerator)

    return bounds


def _fresh(ex: Exact, tab: Table) -> int:
    """A fresh exact sample (what the rejection loop restarts with)."""
    if tab.law == "laplace":
        return ex.discrete_laplace(tab.param)
    return ex.discrete_gaussian(tab.param)


def finish_pending(ex: Exact, tab: Table, ints: np.ndarray, u64s: np.ndarray) -> int:
    """Finish a table-kernel cell from its pending row (dpfast._kernels.samplers P_*/U_*
    columns): the tail item, or an undecided acceptance with U's known bits."""
    status, s = int(ints[sk.P_STATUS]), int(ints[sk.P_SIGN])
    if status == sk.PENDING_ENV_TAIL:
        return finish_tail(ex, tab, s)
    m, item, nbits = int(ints[sk.P_A]), int(ints[sk.P_B]), int(ints[sk.P_BITS])
    u_m = int(u64s[sk.U_W])
    if nbits > 64:  # the kernel's refinement word follows U's first nbits - 64 bits
        u_m = (u_m << 64) | int(u64s[sk.U_W2])
    return finish_accept(ex, tab, s, m, item, u_m, nbits)


def finish_accept(ex: Exact, tab: Table, s: int, m: int, item: int, u_m: int,
                  u_bits: int) -> int:
    """Finish a kernel sample pending at its acceptance test (U known to u_bits bits)."""
    u = LazyUniform(u_m, ex.src, n=u_bits)
    if u_less_than(u, _bounds_over(tab.x(m), tab.ehat[item])):
        return -m if s else m
    return _fresh(ex, tab)


def finish_tail(ex: Exact, tab: Table, s: int) -> int:
    """Finish a kernel sample whose proposal chose the tail item (probability < 1e-14)."""
    mt = tab.m_tail
    t_tail = tab.t_tail
    m = mt + ex.geometric(t_tail)  # P(m - M >= j) = r^j, r = exp(-1/t_tail)
    # accept with w(m) / (ê'_T (1 - r) r^(m - M)) = c_A * exp(-gamma_B), where
    # c_A = w(M) / (ê'_T (1 - r)) <= 1 and gamma_B = x(m) - x(M) - (m - M) / t_tail >= 0
    # (Gaussian: (m - M)^2 / (2 sigma^2); Laplace: 0)
    xa = tab.x(mt)

    def bounds_a(prec: int) -> tuple[int, int]:
        e_lo, e_hi = exp_neg_bounds(xa, prec)
        r_lo, r_hi = exp_neg_bounds(1 / t_tail, prec)
        one = 1 << prec
        lo = Fraction(e_lo * one) / (tab.ehat_tail * (one - r_lo))
        hi = Fraction(e_hi * one) / (tab.ehat_tail * max(one - r_hi, 1))
        return math.floor(lo), math.ceil(hi)

    if u_less_than(LazyUniform(ex.src.next(), ex.src), bounds_a):
        gamma_b = tab.x(m) - xa - Fraction(m - mt) / t_tail
        if gamma_b == 0 or ex.bern_exp_from(ex.src.next(), gamma_b):
            return -m if s else m
    return _fresh(ex, tab)
