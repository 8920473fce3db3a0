"""The exact continuation continues; it never resamples (constructed keystreams).

Each test builds a kernel's keystream by hand (known words), so that the kernel leaves
a cell undecided with a known uniform prefix, then finishes the cell with known
continuation words and checks the outcome against the exact rule evaluated with
mpmath.  The uniform is chosen to *straddle* the threshold at the kernel's precision,
so the outcome depends on the continuation words: a continuation that threw the
kernel's bits away and drew a fresh uniform gives a different answer, which the last
test checks with a deliberately resampling variant.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from dpfast._kernels import chacha as ck
from dpfast._kernels import samplers as sk
from dpfast._kernels import table as tk
from dpfast.noise import _drive, _envelope, _exact

from .helpers import table_word


@pytest.fixture(autouse=True)
def _mp_precision():
    """This module's mpmath precision, for its tests only (a module-level assignment
    would leak into every test module collected after it)."""
    with mp.workprec(400):
        yield

PREC = 400  # mpmath working precision of every exact reference below (set locally:
# other test modules set mpmath's global precision at import)
RESTART = 10**9  # marks "rejected: the sampler restarts with a fresh sample"
W = 64  # words in a constructed buffer


def F(x: Fraction) -> mp.mpf:
    return mp.mpf(x.numerator) / x.denominator


def streams(words: list[int], filler: int = 0) -> tuple:
    buf = np.full((1, W), filler, np.uint64)
    buf[0, :len(words)] = words
    st = np.zeros((1, ck.ST_COLS), np.int64)
    st[0, ck.ST_BLOCK] = W // 8
    st[0, ck.ST_END] = 1
    return buf, st, np.zeros(8, np.uint32), np.zeros((1, 3), np.uint32)


def pend() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((1, 4, sk.P_COLS), np.int64), np.zeros((1, 4, sk.U_COLS), np.uint64)


def exact_with(words: list[int]) -> _exact.Exact:
    it = iter(words)
    ex = _exact.Exact(_exact.WordSource(lambda n: np.array([next(it)], np.uint64), batch=1))
    ex.discrete_laplace = lambda t: RESTART  # restarts are marked, not drawn
    ex.discrete_gaussian = lambda s: RESTART
    return ex


def straddle(c: mp.mpf, bits: int) -> tuple[int, mp.mpf]:
    """U's first ``bits`` bits m with m/2^bits <= c < (m+1)/2^bits, and the fraction of
    the next 64 bits at which U crosses c."""
    scaled = c * mp.mpf(2) ** bits
    m = int(mp.floor(scaled))
    return m, (scaled - m) * mp.mpf(2) ** 64


def below_above(frac: mp.mpf) -> list[tuple[int, bool]]:
    """Continuation words just below / above the crossing: (word, U < c)."""
    w = int(mp.floor(frac))
    return [(w - 1, True), (w + 1, False)]


# ----------------------------------------------------------------------------- geometric
@mp.workprec(PREC)
def check_geometric(finish: Callable) -> None:
    t = Fraction(37, 10)
    k = 5  # the boundary exp(-k/t) falls inside U's first 64 bits
    m, frac = straddle(mp.exp(-F(Fraction(k) / t)), 64)
    for w2, u_less in below_above(frac):
        st_ = streams([0, m])  # sign word (bit 0 = +), then the inversion's word
        p = pend()
        sk.discrete_kernel(0, st_, (np.zeros(1, np.int64), np.zeros(1, np.int64), sk.MODE_WRITE,
                                 sk.NO_GRID),
                           (np.array([float(t)]), np.array([float(t)]), 0),
                           sk.FORCE_INVERSION, p)
        ints, u64s = p[0][0, 0], p[1][0, 0]
        assert st_[1][0, ck.ST_PENDING] == 1 and ints[sk.P_STATUS] == sk.PENDING_INVERSION
        assert int(u64s[sk.U_W]) == m
        got = finish(exact_with([w2, 2**63, 2**63, 2**63]), int(ints[sk.P_STATUS]),
                     int(ints[sk.P_SIGN]), int(ints[sk.P_A]), int(ints[sk.P_B]),
                     int(u64s[sk.U_W]), t)
        # G = max{g : U < exp(-g/t)}: U < exp(-5/t) means G >= 5, else G = 4
        assert got == (k if u_less else k - 1), (got, u_less)


def test_geometric_inversion_continues() -> None:
    check_geometric(_drive._finish_laplace)


# ----------------------------------------------------------------------------- CKS20
@mp.workprec(PREC)
def check_cks20(finish: Callable) -> None:
    sigma = Fraction(23, 10)
    t = 3  # floor(sigma) + 1
    y = 2  # proposal: U = 1/2 gives floor(-3 ln 1/2) = 2, certified in the kernel
    gamma = (y - sigma * sigma / t) ** 2 / (2 * sigma * sigma)
    m, frac = straddle(mp.exp(-F(gamma)), 64)
    for w2, u_less in below_above(frac):
        st_ = streams([0, 2**63, m])
        p = pend()
        sk.discrete_kernel(1, st_, (np.zeros(1, np.int64), np.zeros(1, np.int64), sk.MODE_WRITE,
                                 sk.NO_GRID),
                           (np.array([float(sigma)]), np.array([float(t)]), 0),
                           sk.FORCE_ACCEPT, p)
        ints, u64s = p[0][0, 0], p[1][0, 0]
        assert ints[sk.P_STATUS] == sk.PENDING_BERNOULLI and ints[sk.P_A] == y
        assert int(u64s[sk.U_W]) == m
        got = finish(exact_with([w2, 2**63]), int(ints[sk.P_STATUS]), int(ints[sk.P_SIGN]),
                     int(ints[sk.P_A]), int(ints[sk.P_B]), int(u64s[sk.U_W]), sigma)
        assert got == (y if u_less else RESTART)


def test_cks20_acceptance_continues() -> None:
    check_cks20(_drive._finish_gaussian)


# ----------------------------------------------------------------------------- Bernoulli
@mp.workprec(PREC)
def check_bernoulli(ex_factory: Callable[[list[int]], _exact.Exact]) -> None:
    gamma = Fraction(1, 3)
    m, frac = straddle(mp.exp(-F(gamma)), 64)
    for w2, u_less in below_above(frac):
        st_ = streams([m])
        p = pend()
        out = np.zeros(1, np.uint8)
        sk.bernoulli_exp_kernel(st_, out, np.array([float(gamma)]), 0, sk.FORCE_ACCEPT, p)
        assert st_[1][0, ck.ST_PENDING] == 1 and int(p[1][0, 0, sk.U_W]) == m
        got = ex_factory([w2, 0]).bern_exp_from(int(p[1][0, 0, sk.U_W]), gamma, force=True)
        assert got is u_less


def test_bernoulli_exp_continues() -> None:
    check_bernoulli(exact_with)


# ----------------------------------------------------------------------------- table
def _proposal_words(tab: _envelope.Table, item: int, off: int = 0, ux: int = 0,
                    sign: int = 0) -> list[int]:
    """The words of a one-word proposal (layout of ``_kernel_table.layout``) whose alias
    column selects ``item`` -- plus the fresh word of a tie when the item is reachable
    only through one -- with the given offset in the bin, sign and U bits."""
    vb, two, pa, pb, ubits = tab.lay
    assert not two and pb == 0 and 0 <= ux < 1 << ubits and 0 <= off < 1 << tab.p
    lo = 64 - tab.cbits - vb  # the alias value's bits below the word's top vb
    cap = 1 << (64 - tab.cbits)
    for col in range(len(tab.thresh)):
        t = int(tab.thresh[col])
        th, tl = t >> lo, t & ((1 << lo) - 1)
        if col == item and t > 0:  # v < thresh: the column's own item
            vh, tie = (0, []) if th > 0 else (0, [0])
        elif int(tab.alias[col]) == item and t < cap:  # v >= thresh: the alias
            vh, tie = (th + 1, []) if th + 1 < 1 << vb else (th, [tl << (64 - lo)])
        else:
            continue
        word = (col << (64 - tab.cbits)) | (vh << lo) | (sign << (lo - 1))
        # (bins of width 1 read halves: the word that gives this one as its virtual word)
        return [table_word(tab, word | (off << ubits) | ux), *tie]
    raise AssertionError("item not reachable")


def _table_case(law: str, param: Fraction, item: int):
    tab = _envelope.table(law, param)
    m = item << tab.p  # offset 0 in the bin: the acceptance probability is f exactly
    c = mp.exp(-F(tab.x(m))) / F(tab.ehat[item])
    return tab, m, c


def _run_table(tab: _envelope.Table, words: list[int], force: int):
    st_ = streams(words, filler=2**64 - 1)
    p = pend()
    out = np.zeros(1, np.int64)
    tk.table_kernel(tab.law_code, st_, (out, out, sk.MODE_WRITE, sk.NO_GRID), tab.kernel_args,
                    force, p)
    return st_[1], p, int(out[0])


@mp.workprec(PREC)
def check_table(finish: Callable) -> None:
    tab, m, c = _table_case("laplace", Fraction(100), 37)
    ubits = tab.lay[4]
    # forced at the first word: U known to the ubits bits of the proposal's word
    ux, frac = straddle(c, ubits)
    for w2, u_less in below_above(frac):
        st_, p, _ = _run_table(tab, _proposal_words(tab, 37, ux=ux), sk.FORCE_ACCEPT)
        ints, u64s = p[0][0, 0], p[1][0, 0]
        assert ints[sk.P_STATUS] == sk.PENDING_ENV_ACCEPT and ints[sk.P_BITS] == ubits
        assert int(u64s[sk.U_W]) == ux and ints[sk.P_A] == m
        assert finish(exact_with([w2, 0]), tab, ints, u64s) == (m if u_less else RESTART)
    # the kernel's second-word refinement: undecided after 64 more bits as well
    scaled = c * mp.mpf(2) ** (ubits + 64)
    whole = int(mp.floor(scaled))
    ux, wv = whole >> 64, whole & (2**64 - 1)
    frac = (scaled - whole) * mp.mpf(2) ** 64
    for w3, u_less in below_above(frac):
        st_, p, _ = _run_table(tab, [*_proposal_words(tab, 37, ux=ux), wv], sk.FORCE_NONE)
        ints, u64s = p[0][0, 0], p[1][0, 0]
        assert st_[0, ck.ST_PENDING] == 1, "the kernel decided an undecidable case"
        assert ints[sk.P_BITS] == ubits + 64
        assert (int(u64s[sk.U_W]), int(u64s[sk.U_W2])) == (ux, wv)
        assert finish(exact_with([w3, 0]), tab, ints, u64s) == (m if u_less else RESTART)


def test_table_acceptance_continues() -> None:
    check_table(_envelope.finish_pending)


def test_table_proposal_layout_tie_and_two_words() -> None:
    """Where the kernel takes a proposal's bits (``_kernel_table.layout``): a tie of the alias
    value's top bits reads its other bits from the next word -- only in the tail's column,
    whose threshold is the one off the grid of the top bits (every other tie is the
    alias, reading nothing); a wide bin's offset continues in a second word whose remaining
    bits start U."""
    tab = _envelope.table("laplace", Fraction(100))
    vb, _, _, _, ubits = tab.lay
    lo = 64 - tab.cbits - vb
    cap = 1 << (64 - tab.cbits)
    cols = [c for c in range(len(tab.thresh))
            if 0 < int(tab.thresh[c]) < cap and int(tab.thresh[c]) & ((1 << lo) - 1)]
    assert cols == [tab.nb]  # the tail's own column
    col = tab.nb
    t = int(tab.thresh[col])
    a_word = (col << (64 - tab.cbits)) | ((t >> lo) << lo) | 12345  # tie, sign 0, U 12345
    # the value below the threshold: the tail item, pending after both words
    st_, p, _ = _run_table(tab, [a_word, (t % (1 << lo) - 1) << (64 - lo)], sk.FORCE_ACCEPT)
    ints = p[0][0, 0]
    assert st_[0, ck.ST_POS] == 2 and ints[sk.P_STATUS] == sk.PENDING_ENV_TAIL
    assert ints[sk.P_B] == tab.nb
    # not below: the alias (padding), rejected; the next proposal starts at the third word
    st_, p, _ = _run_table(tab, [a_word, (t % (1 << lo)) << (64 - lo)], sk.FORCE_ACCEPT)
    ints = p[0][0, 0]
    assert int(tab.alias[col]) == tab.nb + 1
    assert st_[0, ck.ST_POS] == 3 and ints[sk.P_STATUS] == sk.PENDING_ENV_ACCEPT
    assert ints[sk.P_B] < tab.nb and ints[sk.P_BITS] == ubits
    wide = _envelope.table("laplace", Fraction(2**45))
    vb, two, pa, pb, ubits = wide.lay
    assert two and pb > 0 and ubits == 64 - pb
    lo = 64 - wide.cbits - vb
    col = next(c for c in range(len(wide.thresh)) if c == 5 and int(wide.thresh[c]) >> lo)
    off_a, off_b, ux = 0b101, 0b11, 777
    a_word = (col << (64 - wide.cbits)) | (1 << (lo - 1)) | (off_a << (lo - 1 - pa))
    b_word = (off_b << (64 - pb)) | ux
    st_, p, _ = _run_table(wide, [a_word, b_word], sk.FORCE_ACCEPT)
    ints, u64s = p[0][0, 0], p[1][0, 0]
    assert st_[0, ck.ST_POS] == 2 and ints[sk.P_SIGN] == 1
    assert ints[sk.P_B] == 5 and ints[sk.P_A] == (5 << wide.p) + ((off_a << pb) | off_b)
    assert int(u64s[sk.U_W]) == ux and ints[sk.P_BITS] == ubits


@pytest.mark.parametrize("law,param", [("laplace", Fraction(100)), ("laplace", Fraction(32)),
                                       ("gauss", Fraction(10)), ("gauss", Fraction(1000))])
@mp.workprec(PREC)
def test_table_kernel_never_accepts_what_the_exact_rule_rejects(law, param) -> None:
    """Hardening item 3: a far-out bin's factor f must be known to 2^-52 *relative*.
    U is put just above the exact threshold (and between the float and the exact
    factor when they differ): the kernel must not accept there."""
    tab = _envelope.table(law, param)
    ubits = tab.lay[4]
    errs = []
    for i in range(tab.nb):
        exact_f = mp.exp(-F(tab.x(i << tab.p))) / F(tab.ehat[i])
        errs.append((abs(mp.mpf(float(tab.f[i])) - exact_f) / exact_f, i, exact_f))
    _, item, exact_f = max(errs)
    lo_t, hi_t = sorted([exact_f, mp.mpf(float(tab.f[item]))])
    # U's first ubits bits in the proposal's word, its next 64 in the kernel's refinement
    # word, then 1000... from the continuation: U is just above uu / 2^nbits
    nbits = ubits + 64
    candidates = {int(mp.floor(exact_f * 2**nbits)) + 1,
                  int(mp.floor((lo_t + hi_t) / 2 * 2**nbits))}
    for uu in candidates:
        rejects = mp.mpf(uu) / mp.mpf(2) ** nbits >= exact_f
        ux, wv = uu >> 64, uu & (2**64 - 1)
        words = _proposal_words(tab, item, ux=ux)
        st_, p, out = _run_table(tab, [*words, wv, 2**63], sk.FORCE_NONE)
        if st_[0, ck.ST_PENDING]:  # undecided: finished exactly
            got = _envelope.finish_pending(exact_with([2**63] * 4), tab, p[0][0, 0], p[1][0, 0])
        else:  # decided on this proposal (its words + 1) or rejected it and went on
            got = out if st_[0, ck.ST_POS] <= len(words) + 1 else RESTART
        accepted = got == item << tab.p
        assert accepted is not bool(rejects), (law, param, item, uu)


# ----------------------------------------------------------------------------- power
def test_a_resampling_continuation_fails_these_tests(monkeypatch) -> None:
    """The tests above have power: continuations that discard the kernel's bits and
    draw a fresh uniform from the continuation stream fail every one of them."""
    orig_geo = _exact.Exact.geo_inv_from
    orig_bern = _exact.Exact.bern_exp_from

    def geo_resample(self, m, t, force=False):
        return orig_geo(self, self.src.next(), t, force)

    def bern_resample(self, w, gamma, force=False):
        return orig_bern(self, self.src.next(), gamma, force)

    def table_resample(ex, tab, ints, u64s):
        ints = ints.copy()
        u64s = u64s.copy()
        u64s[sk.U_W] = np.uint64(ex.src.next() >> (64 - tab.lay[4]))
        ints[sk.P_BITS] = tab.lay[4]
        return _envelope.finish_pending(ex, tab, ints, u64s)

    monkeypatch.setattr(_exact.Exact, "geo_inv_from", geo_resample)
    with pytest.raises(AssertionError):
        check_geometric(_drive._finish_laplace)
    monkeypatch.setattr(_exact.Exact, "bern_exp_from", bern_resample)
    with pytest.raises(AssertionError):
        check_cks20(_drive._finish_gaussian)
    with pytest.raises(AssertionError):
        check_bernoulli(exact_with)
    monkeypatch.undo()
    with pytest.raises(AssertionError):
        check_table(table_resample)
