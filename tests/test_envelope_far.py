"""The envelope-table sampler where its tests did not look (issue 22, item 14).

The continuation tests (``test_continuation.py``) used offset 0 in a bin (where the
acceptance factor is ``f_i`` exactly, so the kernel's ``g = x(m) - x(a_i)`` is 0), the
one-word layout only, and never the tail item; a squeeze computing ``g`` with the wrong
law survived them.  Here, with constructed keystreams and exact (mpmath) references:

* acceptance at offsets ``> 0`` straddling the exact threshold ``exp(-x(m)) / ê_i``, for
  both laws and the Gaussian two-word layout, decided by the kernel's squeeze, its
  refinement word or the exact continuation;
* the far bins (20-40 scales, 5-8 sigma), where the sampler almost never goes: proposals
  forced into one bin with uniform random bits, acceptance rate and the accepted
  offsets' law against the exact ones, plus the same data against a wrong law (power);
* the tail item: the kernel hands it over, and its exact finisher accepts at the exact
  rate ``sum_{m >= M} w(m) / ê_T`` with the exact conditional law.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

import dpfast
from dpfast._kernels import chacha as ck
from dpfast._kernels import samplers as sk
from dpfast._kernels import table as tk
from dpfast.noise import _drive, _envelope

from .helpers import KEY, chisquare_pvalue, table_halves, table_word
from .test_continuation import PREC, RESTART, F, below_above, exact_with

P_MIN = 1e-6
W = 16  # words per constructed cell buffer


@pytest.fixture(autouse=True)
def _mp_precision():
    with mp.workprec(PREC):
        yield


# ----------------------------------------------------------------------------- words
def _column(tab: _envelope.Table, item: int) -> tuple[int, int, list[int]]:
    """An alias column, top bits of the alias value and (a far bin's small weight is
    reachable only so) the fresh word of a tie of those bits, that select ``item``."""
    vb = tab.lay[0]
    lo = 64 - tab.cbits - vb
    cap = 1 << (64 - tab.cbits)
    for col in range(len(tab.thresh)):
        t = int(tab.thresh[col])
        th, tl = t >> lo, t & ((1 << lo) - 1)
        if col == item and t > 0:  # v < thresh: the column's own item
            return (col, 0, []) if th > 0 else (col, 0, [0])
        if int(tab.alias[col]) == item and t < cap:  # v >= thresh: the alias
            if th + 1 < 1 << vb or tl == 0:  # (a tie reads no word where tl = 0)
                return (col, th + 1 if th + 1 < 1 << vb else th, [])
            return (col, th, [tl << (64 - lo)])
    raise AssertionError(f"item {item} not reachable")


def _proposal(tab: _envelope.Table, item: int, off, ux, sign) -> list:
    """The words of a proposal of ``item`` (``_kernel_table.layout``): word A, a tie's fresh
    word if any, word B of a two-word layout; ``off``, ``ux``, ``sign`` may be numpy
    uint64 arrays (one proposal per row)."""
    vb, two, pa, pb, ubits = tab.lay
    col, vh, tie = _column(tab, item)
    lo = 64 - tab.cbits - vb
    u = np.uint64
    head = u(col << (64 - tab.cbits)) | u(vh << lo)
    off, ux, sign = u(0) + off, u(0) + ux, u(0) + sign
    ties = [u(0) + u(w) + 0 * off for w in tie]
    if not two:
        return [head | (sign << u(lo - 1)) | (off << u(ubits)) | ux, *ties]
    a = head | (sign << u(lo - 1)) | ((off >> u(pb)) << u(lo - 1 - pa))
    b = ((off & u((1 << pb) - 1)) << u(64 - pb)) | ux
    return [a, *ties, b]


def _run(tab: _envelope.Table, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The table kernel on one cell per row of words: (out, st, pending)."""
    n = rows.shape[0]
    buf = np.ascontiguousarray(rows, dtype=np.uint64)
    st = np.zeros((n, ck.ST_COLS), np.int64)
    st[:, ck.ST_BLOCK] = buf.shape[1] // 8
    st[:, ck.ST_CELL] = np.arange(n)
    st[:, ck.ST_END] = np.arange(n) + 1
    pend = (np.zeros((n, 1, sk.P_COLS), np.int64), np.zeros((n, 1, sk.U_COLS), np.uint64))
    out = np.zeros(n, np.int64)
    tk.table_kernel(tab.law_code, (buf, st, np.zeros(8, np.uint32), np.zeros((n, 3), np.uint32)),
                    (out, out, sk.MODE_WRITE, sk.NO_GRID), tab.kernel_args, sk.FORCE_NONE, pend)
    return out, st, pend


def _half_rows(tab: _envelope.Table, words: list, sent: list) -> tuple:
    """The rows of keystream words of a table with the half-word layout
    (``helpers.table_halves``) for ``words`` (a proposal's word per row, then its tie
    words) followed by sentinels: the proposal's first half, its second unless the first
    decides it, each tie word's two halves, then the sentinel's halves as often as they
    fit in ``W`` words; and per row the halves the proposal takes."""
    h1, h2, dec = table_halves(tab, words[0])
    n = h1.size
    m32 = np.uint64(0xFFFFFFFF)
    tail = []
    for t in words[1:]:
        t = np.asarray(t, np.uint64) + np.zeros(n, np.uint64)
        tail += [t >> np.uint64(32), t & m32]
    s1, s2, sdec = table_halves(tab, [sent[0]])
    sh = [int(s1[0])] + ([] if sdec[0] else [int(s2[0])])
    sh += [x for w in sent[1:] for x in (int(w) >> 32, int(w) & 0xFFFFFFFF)]
    halves = np.zeros((n, 2 * W), np.uint64)
    for rows, head in ((dec, [h1]), (~dec, [h1, h2])):
        cols = [c[rows] for c in head + tail]
        while len(cols) + len(sh) <= 2 * W:
            cols += [np.full(int(rows.sum()), x, np.uint64) for x in sh]
        halves[rows, :len(cols)] = np.stack(cols, axis=1)
    taken = np.where(dec, 1, 2) + len(tail)
    return (halves[:, 0::2] << np.uint64(32)) | halves[:, 1::2], taken


def _sentinel(tab: _envelope.Table) -> list:
    """A proposal accepted at once with value 0 (item 0, offset 0, U = 0): after a
    rejected proposal the kernel lands on it, which marks the rejection."""
    return _proposal(tab, 0, 0, 0, 0)


def _stream(tab: _envelope.Table, first: list, rest: list) -> list:
    """The keystream words of a proposal ``first`` (its words, as :func:`_proposal` gives
    them, one proposal its first half leaves undecided) then the whole words ``rest``,
    then sentinels.  A table with a direct table reads halves: the proposal's two halves
    make one word (``helpers.table_halves``), and a sentinel, decided on its first half,
    fills both halves of a word."""
    sent = _sentinel(tab)
    if tab.kernel_args[-1]:
        h1, h2, dec = table_halves(tab, [first[0]])
        assert not dec[0], "the first half decides this proposal"
        first = [(int(h1[0]) << 32) | int(h2[0]), *first[1:]]
        s1, _, sdec = table_halves(tab, [sent[0]])
        assert sdec[0]
        sent = [(int(s1[0]) << 32) | int(s1[0])]
    words = [int(w) for w in first] + [int(w) for w in rest]
    while len(words) < W:
        words += [int(w) for w in sent]
    return words[:W]


def _w(tab: _envelope.Table, m: int) -> mp.mpf:
    return mp.exp(-F(tab.x(m)))


def _wrong_x(tab: _envelope.Table, a: int, m: int) -> Fraction:
    """x(m) with the squeeze's g computed by the other law's formula (g = off coef for
    the Gaussian, g = off (m + a) coef for the Laplace): what the tests must reject."""
    off = m - a
    if tab.law == "gauss":
        return tab.x(a) + Fraction(off) / (2 * tab.param * tab.param)
    return tab.x(a) + Fraction(off * (m + a)) / tab.param


# ----------------------------------------------------------------------------- straddle
# wide bins with a direct table (the half-word layout, p = 5 and 4), wide bins the wide
# loop takes (p = 9), a two-word layout
CASES = [("laplace", Fraction(1000), 300, 17), ("laplace", Fraction(1000), 1249, 31),
         ("gauss", Fraction(1000), 250, 9), ("gauss", Fraction(1000), 499, 15),
         ("laplace", Fraction(20000), 700, 417), ("laplace", Fraction(20000), 1562, 511),
         ("gauss", Fraction(20000), 234, 300),
         ("gauss", Fraction(2**46), 170, 2**40 + 12345),
         ("gauss", Fraction(2**46), 255, 3 * 2**39 + 7)]


@pytest.mark.parametrize("law,param,item,off", CASES)
def test_acceptance_at_an_offset_straddles_the_exact_threshold(law, param, item, off) -> None:
    """U a hair (2^-20 relative) below / above exp(-x(m)) / ê_i at m = a_i + off > 0: the
    kernel (squeeze, refinement word or exact continuation) accepts below and rejects
    above.  A squeeze with the other law's g has its threshold outside that window."""
    tab = _envelope.table(law, param)
    ubits = tab.lay[4]
    a = item << tab.p
    m = a + off
    c = _w(tab, m) / F(tab.ehat[item])
    assert 0 < c < 1
    wrong = mp.exp(-F(_wrong_x(tab, a, m))) / F(tab.ehat[item])
    eps = mp.mpf(2) ** -20
    assert abs(wrong / c - 1) > 8 * eps  # the window below separates the two laws
    nbits = ubits + 64
    for rel, accept in ((1 - eps, True), (1 + eps, False)):
        uu = int(mp.floor(c * rel * mp.mpf(2) ** nbits))
        ux, wv = uu >> 64, uu & (2**64 - 1)
        first = [int(w) for w in _proposal(tab, item, off, ux, 1)]
        row = _stream(tab, first, [wv])
        out, st, pend = _run(tab, np.array([row], dtype=np.uint64))
        if st[0, ck.ST_PENDING]:
            got = _envelope.finish_pending(exact_with([2**63] * 8), tab, pend[0][0, 0],
                                           pend[1][0, 0])
        else:
            got = int(out[0]) if st[0, ck.ST_POS] <= len(first) + 1 else RESTART
        assert (got == -m) is accept, (law, param, item, off, rel)


@pytest.mark.parametrize("law,param,item,off", [CASES[1], CASES[3], CASES[5], CASES[7]])
def test_undecided_acceptance_at_an_offset_continues(law, param, item, off) -> None:
    """U known to the kernel's ubits + 64 bits and straddling the threshold there: the
    kernel leaves it pending with exactly those bits (both words of a two-word layout),
    and the continuation decides with the next bits, as the exact rule does."""
    tab = _envelope.table(law, param)
    ubits = tab.lay[4]
    m = (item << tab.p) + off
    c = _w(tab, m) / F(tab.ehat[item])
    scaled = c * mp.mpf(2) ** (ubits + 64)
    whole = int(mp.floor(scaled))
    ux, wv = whole >> 64, whole & (2**64 - 1)
    frac = (scaled - whole) * mp.mpf(2) ** 64
    first = [int(w) for w in _proposal(tab, item, off, ux, 0)]
    out, st, pend = _run(tab, np.array([_stream(tab, first, [wv])], dtype=np.uint64))
    ints, u64s = pend[0][0, 0], pend[1][0, 0]
    assert st[0, ck.ST_PENDING] == 1, "the kernel decided an undecidable case"
    assert ints[sk.P_STATUS] == sk.PENDING_ENV_ACCEPT and ints[sk.P_BITS] == ubits + 64
    assert ints[sk.P_A] == m and ints[sk.P_B] == item
    assert (int(u64s[sk.U_W]), int(u64s[sk.U_W2])) == (ux, wv)
    for w3, u_less in below_above(frac):
        got = _envelope.finish_pending(exact_with([w3, 0]), tab, ints, u64s)
        assert got == (m if u_less else RESTART)


# ----------------------------------------------------------------------------- far bins
# bins of width 1 (a direct table) 7 t .. 10 t: their weights, rounded up to the direct
# table's grid, leave acceptance rates from 7% to 71% (farther ones accept < 0.1%)
FAR = [("laplace", Fraction(20), [140, 160, 200]),
       # wide bins with a direct table (the offset in the first half; weights on its
       # grid, as for bins of width 1): 6.4 t .. 9.6 t, 32 offsets; 3.7 .. 4 sigma, 16
       ("laplace", Fraction(1000), [200, 260, 300]),
       ("gauss", Fraction(1000), [230, 240, 250]),
       # (the wide loop's weights are on the grid of their top bits: beyond about 20 t or
       # 6 sigma a bin's weight is mostly rounding, and it accepts too rarely to measure)
       ("laplace", Fraction(20000), [550, 600, 650]),  # 14 t .. 16.6 t, 512 offsets
       ("gauss", Fraction(20000), [215, 225, 234]),  # 5.5 .. 6 sigma, 512 offsets
       ("gauss", Fraction(2**46), [160, 255])]  # 5 .. 8 sigma, two-word layout
GROUPS = 16  # offsets pooled by their top bits when a bin is wide


def _group_mass(tab: _envelope.Table, a: int, lo: int, hi: int) -> mp.mpf:
    """sum_{o in [lo, hi)} w(a + o): Laplace by the geometric series (exact); Gaussian
    term by term for a short range, else by Euler-Maclaurin (the erfc integral plus half
    the end terms; the next term is below 1e-20 relative for these bins)."""
    s = F(tab.param)
    if tab.law == "laplace":
        r = mp.exp(-1 / s)
        return _w(tab, a + lo) * (1 - r ** (hi - lo)) / (1 - r)
    if hi - lo <= 64:
        return mp.fsum(_w(tab, a + o) for o in range(lo, hi))
    k = s * mp.sqrt(2)
    integral = s * mp.sqrt(mp.pi / 2) * (mp.erfc((a + lo) / k) - mp.erfc((a + hi) / k))
    return integral + (_w(tab, a + lo) - _w(tab, a + hi)) / 2


def _wrong_mass(tab: _envelope.Table, a: int, lo: int, hi: int) -> mp.mpf:
    """The group's mass under the wrong law (sampled at 64 offsets: for the power check)."""
    step = max(1, (hi - lo) // 64)
    pts = range(lo, hi, step)
    return mp.fsum(mp.exp(-F(_wrong_x(tab, a, a + o))) for o in pts) * (hi - lo) / len(pts)


@pytest.mark.parametrize("law,param,items", FAR)
def test_far_bins_accept_at_the_exact_rate_with_the_exact_law(law, param, items) -> None:
    tab = _envelope.table(law, param)
    vb, two, pa, pb, ubits = tab.lay
    width = 1 << tab.p
    ngroups = min(GROUPS, width)
    rng = np.random.default_rng(1234)
    for item in items:
        # about 40,000 accepted proposals (the far bins accept less often; 160,000 where
        # a bin's 16 offsets change its density by only 6%: the power check needs them)
        want = 160_000 if (law, param) == ("gauss", Fraction(1000)) else 40_000
        n = int(want / max(float(tab.f[item]), 0.1))
        a = item << tab.p
        off = rng.integers(0, width, n, dtype=np.uint64) if width > 1 else np.zeros(n, np.uint64)
        ux = rng.integers(0, 1 << ubits, n, dtype=np.uint64)
        sign = rng.integers(0, 2, n, dtype=np.uint64)
        words = _proposal(tab, item, off, ux, sign)
        # then sentinels: the first one is U's refinement word when the kernel needs one
        # (rarely: its fixed bits bias nothing measurable), else the next proposal
        sent = _sentinel(tab)
        halves = tab.kernel_args[-1] > 0
        if halves:  # a direct table: halves taken, the proposal's own (P) or a sentinel's
            rows, taken = _half_rows(tab, words, sent)
        else:
            cols = [*words]
            while len(cols) + len(sent) <= W:
                cols += [np.full(n, s, np.uint64) for s in sent]
            cols += [np.zeros(n, np.uint64)] * (W - len(cols))
            rows = np.stack(cols, axis=1)
            first = len(words) + 1
        out, st, pend = _run(tab, rows)
        if halves:  # on the proposal itself: its P halves, or P + 2 with a refinement word
            used = 2 * st[:, ck.ST_POS] - st[:, ck.ST_NSIGNS]
            own = (used == taken) | (used == taken + 2)
            assert own.any() and not own.all()  # the count tells the two apart
        else:
            own = st[:, ck.ST_POS] <= first
        got = out.copy()
        inbin = (np.abs(out) >= a) & (np.abs(out) < a + width)
        got[~own | ~inbin] = RESTART  # rejected: the sentinel's 0
        for c in np.flatnonzero(st[:, ck.ST_PENDING]):  # undecided: finished exactly
            more = rng.integers(0, 2**64, 8, dtype=np.uint64).tolist()
            v = _envelope.finish_pending(exact_with(more), tab, pend[0][c, 0], pend[1][c, 0])
            got[c] = v if own[c] else RESTART
        acc = got != RESTART
        m = np.abs(got[acc])
        assert np.all((m >= a) & (m < a + width)) and np.all((got[acc] < 0) == sign[acc])
        # the exact law: accepted offset o with probability w(a + o) / (ê_i 2^p)
        bounds = [width * g // ngroups for g in range(ngroups + 1)]
        mass = [_group_mass(tab, a, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
        rate = float(mp.fsum(mass) / (F(tab.ehat[item]) * width))
        z = (acc.sum() - n * rate) / math.sqrt(n * rate * (1 - rate))
        assert abs(z) < 5, (law, param, item, acc.mean(), rate)
        counts = np.histogram((m - a).astype(np.float64), bins=np.array(bounds, float))[0]
        if ngroups > 1:
            assert chisquare_pvalue(counts, [float(x) for x in mass]) > P_MIN
            # power: the same draws are far from what a wrong squeeze would give
            wrong = [_wrong_mass(tab, a, lo, hi) for lo, hi in zip(bounds, bounds[1:])]
            wr = float(mp.fsum(wrong) / (F(tab.ehat[item]) * width))
            wz = abs(acc.sum() - n * wr) / math.sqrt(n * max(wr * (1 - wr), 1e-9))
            assert chisquare_pvalue(counts, [float(x) for x in wrong]) < 1e-12 or wz > 10


# ----------------------------------------------------------------------------- tail
TAILS = [("laplace", Fraction(20)), ("laplace", Fraction(1000)), ("gauss", Fraction(10)),
         ("gauss", Fraction(1000))]


@pytest.mark.parametrize("law,param", TAILS)
def test_the_kernel_hands_the_tail_item_over(law, param) -> None:
    tab = _envelope.table(law, param)
    words = [int(w) for w in _proposal(tab, tab.nb, 0, 0, 1)]  # item nb = the tail
    words[0] = table_word(tab, words[0])
    out, st, pend = _run(tab, np.array([(words + [0] * W)[:W]], dtype=np.uint64))
    ints = pend[0][0, 0]
    assert st[0, ck.ST_PENDING] == 1 and ints[sk.P_STATUS] == sk.PENDING_ENV_TAIL
    assert ints[sk.P_SIGN] == 1


def _tail_mass(tab: _envelope.Table) -> mp.mpf:
    """sum_{m >= M} w(m), exactly (Laplace: geometric series; Gaussian: summed until the
    terms are below 2^-300 of the first)."""
    mt = tab.m_tail
    if tab.law == "laplace":
        return _w(tab, mt) / (1 - mp.exp(-1 / F(tab.param)))
    total, m = mp.mpf(0), mt
    first = _w(tab, mt)
    while True:
        term = _w(tab, m)
        total += term
        if term < first * mp.mpf(2) ** -300:
            return total
        m += 1


def _tail_draws(tab: _envelope.Table, n: int) -> np.ndarray:
    ex = _drive._SlowStream(dpfast.default_rng(KEY)).exact
    ex.discrete_gaussian = lambda s: RESTART  # restarts are marked, not drawn
    ex.discrete_laplace = lambda t: RESTART
    return np.array([_envelope.finish_tail(ex, tab, k & 1) for k in range(n)])


def _rate_z(vals: np.ndarray, rate: float) -> float:
    n = vals.size
    return float(((vals != RESTART).sum() - n * rate) / math.sqrt(n * rate * (1 - rate)))


@pytest.mark.parametrize("law,param", TAILS)
def test_tail_item_acceptance_rate_and_law_are_exact(law, param) -> None:
    """The tail item's exact finisher (geometric proposal, then two exact acceptance
    steps) accepts with probability sum_{m >= M} w(m) / ê_T, and accepted values follow
    w restricted to m >= M (sign as given); 20,000 draws resolve the rate to ~0.1%."""
    tab = _envelope.table(law, param)
    n = 20_000
    vals = _tail_draws(tab, n)
    total = _tail_mass(tab)
    rate = float(total / F(tab.ehat_tail))
    assert 0.5 < rate <= 1
    assert abs(_rate_z(vals, rate)) < 5, ((vals != RESTART).mean(), rate)
    acc = vals != RESTART
    got = vals[acc]
    assert np.all((got < 0) == (np.arange(n) & 1).astype(bool)[acc])
    d = np.abs(got) - tab.m_tail
    assert d.min() >= 0
    top = int(d.max()) + 2
    w0 = _w(tab, tab.m_tail)
    probs = [_w(tab, tab.m_tail + j) / w0 for j in range(top)]
    probs.append(total / w0 - mp.fsum(probs))  # the mass beyond: observed 0 times
    counts = np.append(np.bincount(d, minlength=top), 0)
    assert chisquare_pvalue(counts, [float(x) for x in probs]) > P_MIN


@pytest.mark.parametrize("law,param,change", [
    ("gauss", Fraction(10), {"t_tail": Fraction(101, 100)}),  # the envelope's scale 1% off
    ("gauss", Fraction(1000), {"t_tail": Fraction(101, 100)}),
    ("laplace", Fraction(20), {"law": "gauss"}),  # the Gaussian's x(m) for a Laplace
])
def test_a_wrong_tail_fails_the_rate_test(law, param, change) -> None:
    """Power: the finisher run with a 1% error in its geometric scale (c_A and gamma_B
    then off) or with the other law's x(m) moves the acceptance rate well outside the
    band of the test above.  (A Laplace tail scale that is too *large* is no error: the
    envelope still dominates and the finisher stays exact.)"""
    tab = _envelope.table(law, param)
    kw = {k: (getattr(tab, k) * v if k == "t_tail" else v) for k, v in change.items()}
    wrong = dataclasses.replace(tab, **kw)
    rate = float(_tail_mass(tab) / F(tab.ehat_tail))
    assert abs(_rate_z(_tail_draws(wrong, 20_000), rate)) > 5
