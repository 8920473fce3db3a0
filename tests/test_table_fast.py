"""The envelope-table kernel's fast loops (``csrc/table.c``, called as
``_kernels/table._c_fast``) against its general loop, the direct table they read
(``_kernel_table.KernelTable.direct_table``), and the wide-bin acceptance floor
(``_envelope.bin_accept_floor``).

The fast loops take the common case of a proposal (one-word layout, decided by the squeeze)
in C; by construction they read the same words and take the same decisions as the general
loop, which handles every case.  ``FORCE_GENERAL`` runs the general loop alone,
``FORCE_SCALAR`` the C step loop, ``FORCE_PORTABLE`` the direct table without AVX2, and
``FORCE_NONE`` what this CPU runs (the AVX2 loop here), so all are compared bit for bit on
real keystreams: every output cell and every chunk's
state (words used, block counter, next cell, pending rows, overflow flag), in every store
mode, with buffers small enough that ties of the alias value fall on a buffer's last word.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from dpfast import _native
from dpfast._kernels import chacha as ck
from dpfast._kernels import samplers as sk
from dpfast._kernels import table as tk
from dpfast.noise import _envelope, _kernel_table

from .helpers import SUBPROCESS_TIMEOUT_S, direct_lines, table_halves

KEY_WORDS = (np.arange(8, dtype=np.uint64) * np.uint64(0x9E3779B9) + np.uint64(7)).astype(
    np.uint32)
NCH = 4  # chunks per kernel call
CELLS = 4000  # cells per chunk

# (law, parameter): one-word layouts with bins of width 1 (p = 0), wide bins with a direct
# table (p = 1 to 7: the half-word layout with the offset in the first half), wide bins
# without one (p = 9, and p = 34 where the alias value has only 6 top bits in the word, so
# ties are frequent), and one two-word layout (the fast loop is off there: both runs are
# the general loop)
TABLES = [("laplace", 1), ("laplace", 10), ("gauss", 10), ("laplace", 100), ("laplace", 1000),
          ("gauss", 1000), ("laplace", 5000), ("gauss", 3000), ("laplace", 20000),
          ("gauss", 2**40), ("laplace", 2**40), ("gauss", 2**46)]


def _call(tab: _envelope.Table, words: int, io: tuple, force: int):
    buf = np.zeros((NCH, words), np.uint64)
    st = np.zeros((NCH, ck.ST_COLS), np.int64)
    st[:, ck.ST_POS] = words  # an empty buffer: the first word read refills it
    st[:, ck.ST_FILL] = _native.blocks_address()
    st[:, ck.ST_CELL] = np.arange(NCH) * CELLS
    st[:, ck.ST_END] = st[:, ck.ST_CELL] + CELLS
    nonces = np.zeros((NCH, 3), np.uint32)
    nonces[:, 0] = np.arange(NCH) + 11
    pend = (np.zeros((NCH, 64, sk.P_COLS), np.int64), np.zeros((NCH, 64, sk.U_COLS), np.uint64))
    tk.table_kernel(tab.law_code, (buf, st, KEY_WORDS, nonces), io, tab.kernel_args, force,
                    pend)
    return st, pend


def _io(mode: str, rng: np.random.Generator) -> tuple:
    n = NCH * CELLS
    if mode == "write":
        out = np.zeros(n, np.int64)
        return (out, out, sk.MODE_WRITE, sk.NO_GRID)
    if mode == "add":  # in place, some cells near the int64 limits (overflow stops a chunk)
        x = rng.integers(-2**40, 2**40, n)
        x[rng.random(n) < 1e-3] = 2**63 - 1  # any positive noise overflows
        x[rng.random(n) < 1e-3] = -2**63  # any negative noise overflows
        return (x, x, sk.MODE_ADD, sk.NO_GRID)
    if mode == "sub":  # the undo of an in-place call: out -= noise
        x = rng.integers(-2**40, 2**40, n)
        return (x, x, sk.MODE_SUB, sk.NO_GRID)
    g = 2.0 ** -10
    if mode == "grid64":
        x = rng.normal(0, 100, n)
        return (x, x, sk.MODE_GRID, (1.0 / g, g, float(np.finfo(np.float64).max), -1))
    if mode == "grid64sep":  # float64 in, a separate float64 out
        x = rng.normal(0, 100, n)
        out64 = np.full(n, np.nan)
        dmax = float(np.finfo(np.float64).max)
        top = sk.unfit_top(dmax * g, x.dtype)
        return (x, out64, sk.MODE_GRID, (1.0 / g, g, dmax, top))  # x checked as read
    if mode == "grid64unfit":  # a separate out, x checked as read: unfit cells in chunk 1, 3
        x = rng.normal(0, 100, n)
        dmax = float(np.finfo(np.float64).max)
        x[CELLS + 17], x[3 * CELLS + 3999] = np.nan, dmax * g * 2  # x / g overflows
        x[3 * CELLS + 5] = -np.inf
        x[2 * CELLS + 9], x[2 * CELLS + 10] = dmax * g, -dmax * g  # at lim: fit
        top = sk.unfit_top(dmax * g, x.dtype)
        return (x, np.full(n, np.nan), sk.MODE_GRID, (1.0 / g, g, dmax, top))
    if mode == "grid64tiny":  # a grid whose 1/g is not a normal double: ginv 0, x / g
        gt = 2.0 ** -1060  # (the wide loop leaves such grids to the step loop)
        x = rng.normal(0, 100, n) * 2.0 ** -1040
        dmax = float(np.finfo(np.float64).max)
        return (x, np.full(n, np.nan), sk.MODE_GRID, (0.0, gt, dmax, -1))
    if mode == "grid64to32":  # float64 in, a separate float32 out
        x = rng.normal(0, 100, n)
        out32 = np.full(n, np.nan, np.float32)
        top = sk.unfit_top(float(np.finfo(np.float64).max) * g, x.dtype)
        return (x, out32, sk.MODE_GRID, (1.0 / g, g, float(np.finfo(np.float32).max), top))
    x = rng.normal(0, 100, n).astype(np.float32)  # float32 in and out
    return (x, x, sk.MODE_GRID, (1.0 / g, g, float(np.finfo(np.float32).max), -1))


@pytest.mark.parametrize("words", [16, 2048])
@pytest.mark.parametrize("mode", ["write", "add", "sub", "grid64", "grid64sep", "grid32",
                                  "grid64to32", "grid64unfit", "grid64tiny"])
@pytest.mark.parametrize("law,param", TABLES)
def test_fast_loop_equals_general_loop(law: str, param: int, mode: str, words: int) -> None:
    tab = _envelope.table(law, Fraction(param))
    res = []
    for force in (sk.FORCE_NONE, sk.FORCE_GENERAL, sk.FORCE_SCALAR, sk.FORCE_PORTABLE):
        io = _io(mode, np.random.default_rng(3))
        st, pend = _call(tab, words, io, force)
        res.append((io[1], st, pend))
    (out_f, st_f, pend_f), (out_g, st_g, pend_g) = res[:2]
    for out_o, st_o, pend_o in res[1:]:
        assert out_f.tobytes() == out_o.tobytes()
        assert np.array_equal(st_f, st_o)
        assert np.array_equal(pend_f[0], pend_o[0]) and np.array_equal(pend_f[1], pend_o[1])
    if mode == "add":
        assert st_f[:, ck.ST_OVERFLOW].any()  # the overflow stop was exercised
    else:
        assert np.all(st_f[:, ck.ST_CELL] == st_f[:, ck.ST_END])
    # the chunks that passed an unfit cell, and only those, are flagged (and go on)
    unfit = [0, sk.UNFIT, 0, sk.UNFIT] if mode == "grid64unfit" else [0] * NCH
    if mode != "add":
        assert st_f[:, ck.ST_OVERFLOW].tolist() == unfit


@pytest.mark.parametrize("grid", [False, True])
@pytest.mark.parametrize("law,param", [("gauss", 2**40), ("laplace", 10)])
def test_tie_on_a_buffer_end(law: str, param: int, grid: bool) -> None:
    """A proposal whose alias value ties with its column's threshold on the buffer's last
    word: its other bits are the next buffer's first word (the fast loop leaves it to the
    general loop, which refills); constructed words, every loop, bit for bit.  Wide bins
    (6 top bits of the alias value: a tie in 64 proposals) and bins of width 1 (the
    direct table's loops); integer and grid stores (the wide bins' four-word grid loop)."""
    tab = _envelope.table(law, Fraction(param))
    vb, two, _, _, ubits = tab.lay
    assert not two
    lo = 64 - tab.cbits - vb
    col = next(c for c in range(len(tab.thresh)) if 0 < int(tab.thresh[c]) < 1 << (64 - tab.cbits))
    tie = (col << (64 - tab.cbits)) | ((int(tab.thresh[col]) >> lo) << lo) | (1 << (ubits - 1))
    words = 16
    rows = []
    for force in (sk.FORCE_NONE, sk.FORCE_GENERAL, sk.FORCE_SCALAR, sk.FORCE_PORTABLE):
        buf = np.zeros((1, words), np.uint64)
        buf[0, -1] = tie  # words 0..14: zero words, accepted at once (item of column 0, U = 0)
        st = np.zeros((1, ck.ST_COLS), np.int64)
        st[0, ck.ST_BLOCK] = words // 8
        st[0, ck.ST_END] = 40
        st[0, ck.ST_FILL] = _native.blocks_address()
        out = np.zeros(40, np.float64 if grid else np.int64)
        io = ((out, out, sk.MODE_GRID, (1.0, 1.0, float(np.finfo(np.float64).max), -1)) if grid
              else (out, out, sk.MODE_WRITE, sk.NO_GRID))
        pend = (np.zeros((1, 64, sk.P_COLS), np.int64), np.zeros((1, 64, sk.U_COLS), np.uint64))
        tk.table_kernel(tab.law_code, (buf, st, KEY_WORDS, np.zeros((1, 3), np.uint32)),
                        io, tab.kernel_args, force, pend)
        rows.append((out, st))
    for out, st in rows[1:]:
        assert np.array_equal(rows[0][0], out) and np.array_equal(rows[0][1], st)
    assert rows[0][1][0, ck.ST_BLOCK] > words // 8  # the tie's word came from a refill


@pytest.mark.parametrize("law,param", [("laplace", 1000), ("gauss", 1000), ("gauss", 2**40),
                                       ("laplace", 2**40), ("gauss", 3**20)])
def test_wide_bin_acceptance_floor(law: str, param: int) -> None:
    """``ta[i] 2^-64`` is at most the smallest exact acceptance probability of bin i,
    ``w(a_i + 2^p - 1) / ê_i`` (mpmath, 200 bits), and close to it (within 2^-30)."""
    tab = _envelope.table(law, Fraction(param))
    assert tab.p > 0
    ta = tab.squeeze[0]
    with mp.workprec(200):
        for i in range(tab.nb):
            m = ((i + 1) << tab.p) - 1
            x, e = tab.x(m), tab.ehat[i]
            acc = mp.exp(-mp.mpf(x.numerator) / x.denominator) * e.denominator / e.numerator
            lo = mp.mpf(int(ta[i])) / mp.mpf(2) ** 64
            assert lo <= acc
            assert acc - lo <= acc * mp.mpf(2) ** -30 + mp.mpf(2) ** -60


WIDE = [("laplace", 1000), ("gauss", 1000), ("laplace", 20000), ("gauss", 2**40),
        ("laplace", 2**40), ("gauss", 3**20)]
# the wide tables the four-word wide loop takes (no direct table)
WIDE_LOOP = [t for t in WIDE if not _envelope.table(t[0], Fraction(t[1])).kernel_args[-1]]


@pytest.mark.parametrize("law,param", WIDE)
def test_wide_lines_decide_exactly_with_a_margin(law: str, param: int) -> None:
    """The wide loop's lines (``Table.wide_lines``): on every cell of the offset's top bits
    h, ``A - (h S >> qs)`` is at most the cell's smallest exact acceptance probability
    ``w(m) / ê_i`` (mpmath, 200 bits) times ``2^ub (1 - 2^-31)``, less one unit (so
    ``u < A - ...`` means U below it), and ``R - (h S >> qs)`` at least its largest times
    ``2^ub (1 + 2^-31)``; and they are useful: most bins have them, and between them lies
    under 1% of U's range at the first cell."""
    tab = _envelope.table(law, Fraction(param))
    acc, rej, slope, qs = tab.kernel.wide_lines()
    ub = min(tab.lay[4], 31)
    q = min(tab.p, _kernel_table.LINE_BITS)
    width = 1 << (tab.p - q)
    has = np.flatnonzero(slope)
    assert has.size >= 0.9 * tab.nb
    assert float(np.median((rej[has].astype(float) - acc[has]) / 2.0 ** ub)) < 0.01
    rng = np.random.default_rng(5)
    items = sorted({0, 1, int(has[-1]), *rng.choice(has, 12).tolist()})
    with mp.workprec(200):
        def prob(i: int, m: int) -> mp.mpf:
            x, e = tab.x(m), tab.ehat[i]
            return mp.exp(-mp.mpf(x.numerator) / x.denominator) * e.denominator / e.numerator

        for i in items:
            a = i << tab.p
            for h in sorted({0, 1, (1 << q) // 2, (1 << q) - 1}):
                drop = (h * int(slope[i])) >> qs
                lo = prob(i, a + (h + 1) * width - 1)
                hi = prob(i, a + h * width)
                ta = int(acc[i]) - drop
                tr = int(rej[i]) - drop
                assert ta + 1 <= lo * mp.mpf(2) ** ub * (1 - mp.mpf(2) ** -31) or ta <= 0
                assert tr >= hi * mp.mpf(2) ** ub * (1 + mp.mpf(2) ** -31)


DIRECT_WIDE = [("laplace", 100), ("laplace", 1000), ("gauss", 1000), ("laplace", 5000),
               ("gauss", 3000)]


@pytest.mark.parametrize("law,param", DIRECT_WIDE)
def test_direct_lines_of_wide_bins_decide_exactly_with_a_margin(law: str, param: int) -> None:
    """A direct table of wide bins (the half-word layout with the offset ``h`` in the first
    half): its entries' lines ``A - (h S >> qs)`` and ``R - (h S >> qs)`` on U's top ``k``
    bits, at every offset of a bin, against the exact acceptance probability ``w(m) /
    ê_i`` (mpmath, 200 bits): ``u < A - drop`` only where U lies below it times ``1 -
    2^-31``, ``u > R - drop`` only where U lies above it times ``1 + 2^-31``; every entry
    of an item holds the same lines; the padding rejects, the undecided entries decide
    nothing."""
    tab = _envelope.table(law, Fraction(param))
    *_, direct, dbits = tab.kernel_args
    assert dbits and tab.p > 0
    k = min(31 - dbits - tab.p, 16)
    u = np.uint64
    e, qs = direct[:-1], int(direct[-1])
    item = (e >> u(_kernel_table.D_ITEM)).astype(np.int64)
    lines = e & u((1 << _kernel_table.D_ITEM) - 1)
    for i in np.unique(item).tolist():  # one set of lines per item
        assert np.unique(lines[item == i]).size == 1
    first = {int(i): int(lines[np.flatnonzero(item == i)[0]]) for i in np.unique(item)}
    assert first[tab.nb + 1] == 0  # padding: A = R = 0 (rejects unless u = 0)
    if tab.nb in first:  # undecided: A = 0, R never rejects, no slope
        assert first[tab.nb] == _kernel_table.R_NEVER
    rng = np.random.default_rng(6)
    real = [i for i in first if i < tab.nb]
    items = sorted({min(real), max(real), *rng.choice(real, 10).tolist()})
    top = mp.mpf(2) ** k
    with mp.workprec(200):
        def prob(i: int, m: int) -> mp.mpf:
            x, ex = tab.x(m), tab.ehat[i]
            return mp.exp(-mp.mpf(x.numerator) / x.denominator) * ex.denominator / ex.numerator

        for i in items:
            w = first[i]
            slope = (w >> _kernel_table.D_SLOPE) & 0xFFFF
            acc = (w >> _kernel_table.D_ACC) & 0x1FFFF
            rej = w & 0x1FFFF
            a = i << tab.p
            for h in range(1 << tab.p):
                drop = (h * slope) >> qs
                pr = prob(i, a + h)
                assert acc - drop <= 0 or acc - drop <= pr * top * (1 - mp.mpf(2) ** -31)
                assert rej - drop + 1 >= pr * top * (1 + mp.mpf(2) ** -31)
                if rej != _kernel_table.R_NEVER:  # (not a bin the squeeze leaves, g >= 0.45)
                    assert rej + 1 - acc <= 12  # a few units of u between the lines


@pytest.mark.parametrize("words", [16, 2048])
@pytest.mark.parametrize("law,param", WIDE_LOOP)
def test_wide_loop_add_into_a_separate_out_stops_as_the_general_loop(law: str, param: int,
                                                                      words: int) -> None:
    """x + noise into a separate out with cells near the int64 limits: the wide loop (its
    values written one batch behind its decisions) stops at the same overflow with the
    same state, and writes no cell after it -- every cell equal to the general loop's."""
    tab = _envelope.table(law, Fraction(param))
    res = []
    for force in (sk.FORCE_NONE, sk.FORCE_GENERAL, sk.FORCE_SCALAR):
        rng = np.random.default_rng(4)
        n = NCH * CELLS
        x = rng.integers(-2**40, 2**40, n)
        x[rng.random(n) < 3e-4] = 2**63 - 1
        x[rng.random(n) < 3e-4] = -2**63
        out = np.full(n, 7, np.int64)
        st, pend = _call(tab, words, (x, out, sk.MODE_ADD, sk.NO_GRID), force)
        res.append((out, st, pend))
    for out, st, pend in res[1:]:
        assert np.array_equal(res[0][0], out) and np.array_equal(res[0][1], st)
        assert np.array_equal(res[0][2][0], pend[0]) and np.array_equal(res[0][2][1], pend[1])
    assert res[0][1][:, ck.ST_OVERFLOW].any()


@pytest.mark.parametrize("grid", [False, True])
@pytest.mark.parametrize("law,param", [("laplace", 2**40), ("gauss", 2**40), ("laplace", 20000)])
def test_tie_in_the_tail_column(law: str, param: int, grid: bool) -> None:
    """The tail's column holds the one threshold off the grid of the alias value's top
    bits, so a tie there reads the next word (every other tie is the alias): constructed
    ties in that column, with next words below and above the threshold's other bits, in
    the middle of a buffer; every loop, bit for bit."""
    tab = _envelope.table(law, Fraction(param))
    vb, two, _, _, ubits = tab.lay
    assert not two and tab.p > 0
    lo = 64 - tab.cbits - vb
    col = tab.nb  # the tail's own column
    th = int(tab.thresh[col])
    assert th & ((1 << lo) - 1)  # off the grid
    tie = (col << (64 - tab.cbits)) | ((th >> lo) << lo) | 5
    low = th & ((1 << lo) - 1)
    nxt = [(low - 1) << (tab.cbits + vb), (low + 1) << (tab.cbits + vb)]  # below, above
    words = 32
    for after in nxt:
        rows = []
        for force in (sk.FORCE_NONE, sk.FORCE_GENERAL, sk.FORCE_SCALAR, sk.FORCE_PORTABLE):
            buf = np.zeros((1, words), np.uint64)
            buf[0, 9] = tie
            buf[0, 10] = after
            buf[0, 17] = tie
            buf[0, 18] = after
            st = np.zeros((1, ck.ST_COLS), np.int64)
            st[0, ck.ST_BLOCK] = words // 8
            st[0, ck.ST_END] = 40
            st[0, ck.ST_FILL] = _native.blocks_address()
            out = np.zeros(40, np.float64 if grid else np.int64)
            io = ((out, out, sk.MODE_GRID, (1.0, 1.0, float(np.finfo(np.float64).max), -1))
                  if grid else (out, out, sk.MODE_WRITE, sk.NO_GRID))
            pend = (np.zeros((1, 64, sk.P_COLS), np.int64),
                    np.zeros((1, 64, sk.U_COLS), np.uint64))
            tk.table_kernel(tab.law_code, (buf, st, KEY_WORDS, np.zeros((1, 3), np.uint32)),
                            io, tab.kernel_args, force, pend)
            rows.append((out, st, pend[0][0, :2].copy()))
        for out, st, pd in rows[1:]:
            assert np.array_equal(rows[0][0], out) and np.array_equal(rows[0][1], st)
            assert np.array_equal(rows[0][2], pd)


@pytest.mark.parametrize("law,param", TABLES)
def test_column_selection(law: str, param: int) -> None:
    """The fast loop's per-column selection ``sel``: the column's own item and its
    ``ta >> (64 - ubits)``, then its alias and the alias's; threshold 0 for the tail and
    padding items (sorted out before U is looked at)."""
    tab = _envelope.table(law, Fraction(param))
    *_, ubits, sel, _, _ = tab.kernel_args
    ta = tab.squeeze[0]

    def want(item: int) -> int:
        return int(ta[item]) >> (64 - ubits) if item < tab.nb else 0

    rows = sel.reshape(-1, 4)
    assert rows.shape[0] == len(tab.thresh)
    for col in range(len(tab.thresh)):
        ali = int(tab.alias[col])
        assert [int(v) for v in rows[col]] == [col, want(col), ali, want(ali)]


@pytest.mark.parametrize("law,param", [t for t in TABLES
                                       if _envelope.table(t[0], Fraction(t[1])).kernel_args[-1]])
def test_direct_table_decides_as_the_alias_rule(law: str, param: int) -> None:
    """The direct table (``KernelTable.direct_table``, the half-word loops of ``csrc/table.c``
    and the general loop) against the alias rule and the squeeze it shortcuts, on random
    words and on words whose alias value sits just below, at and above its column's
    threshold, each split into its two halves: a decided item is the alias rule's item
    (``v < threshold``: the column's own, ``v > threshold``: its alias); on U's top bits
    ``u`` in the first half (after the offset's ``p`` bits), ``u < A`` only where the
    squeeze accepts (``U < ta 2^-64``: for wide bins the bin's smallest acceptance
    probability) and ``u > R`` only where it rejects (``U 2^64 > trm1``; wide bins ``U >
    fhi (1 + 2^-30)``, above every offset's acceptance probability) *whatever the second
    half holds* (a proposal they decide reads no more); an undecided entry is exactly a
    range of values holding the threshold's top bits; the halves give back the word."""
    tab = _envelope.table(law, Fraction(param))
    pack, thresh, *_, direct, dbits = tab.kernel_args
    vb, _, _, _, ubits = tab.lay
    ta, trm1, _, _ = tab.squeeze
    assert dbits > tab.cbits and direct.size == (1 << dbits) + 1  # and the lines' shift
    rng = np.random.default_rng(11)
    words = rng.integers(0, 2**63, 200_000, dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, 200_000, dtype=np.uint64)
    # words at the thresholds: v's top vb bits = th - 1, th, th + 1 (within range)
    col = rng.integers(0, len(thresh), 30_000).astype(np.uint64)
    th = (pack[col] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    vtop = np.clip(th + rng.integers(-1, 2, col.size), 0, (1 << vb) - 1).astype(np.uint64)
    low = rng.integers(0, 2**63, col.size, dtype=np.uint64) >> np.uint64(tab.cbits + vb - 1)
    edge = (col << np.uint64(64 - tab.cbits)) | (vtop << np.uint64(64 - tab.cbits - vb)) | low
    words = np.concatenate([words, edge])
    h1, h2, _ = table_halves(tab, words)
    q, k1 = tab.cbits + vb - dbits, 31 - dbits
    back = [tk._virtual_word(np.uint64(a), np.uint64(b), dbits, q, k1)
            for a, b in zip(h1[:2000].tolist(), h2[:2000].tolist())]
    assert np.array_equal(np.array(back, np.uint64), words[:2000])
    e = direct[h1 >> np.uint64(32 - dbits)]
    item = (e >> np.uint64(_kernel_table.D_ITEM)).astype(np.int64)
    a_thr, r_thr = direct_lines(tab, h1)  # at each proposal's offset
    c = (words >> np.uint64(64 - tab.cbits)).astype(np.int64)
    vh = ((words >> np.uint64(64 - tab.cbits - vb)) & np.uint64((1 << vb) - 1)).astype(np.int64)
    t = (pack[c] & np.uint64(0xFFFFFFFF)).astype(np.int64)
    rule = np.where(vh < t, c, tab.alias[c])
    decided = item != tab.nb
    assert np.array_equal(item[decided], rule[decided])
    # undecided entries: the tail item, or the value's top bits reach the threshold's --
    # except where the threshold starts the range and has no bits below its top vb (a
    # tie takes the alias then), which the quantized weights make of every threshold
    s = dbits - tab.cbits
    jlo = (vh >> (vb - s)) << (vb - s)
    flat = (thresh[c] & np.uint64((1 << (64 - tab.cbits - vb)) - 1)) == 0
    straddle = (jlo <= t) & (t <= jlo + (1 << (vb - s)) - 1) & ~((jlo == t) & flat)
    assert np.array_equal(~decided, straddle | (rule == tab.nb))
    # every threshold on the direct table's grid but the tail's, alone in its column
    assert not straddle[c != tab.nb].any()
    off_grid = np.flatnonzero(thresh % np.uint64(1 << (64 - dbits)))
    assert off_grid.tolist() == [tab.nb] and tab.alias[tab.nb] == tab.nb + 1
    ku = k1 - tab.p  # U's bits in the first half, after the offset's
    k = min(ku, 16)
    ut = (h1 & np.uint64((1 << ku) - 1)) >> np.uint64(ku - k)
    # U's bits the first half leaves open: all ones (U's largest) or all zeros (smallest)
    rest = np.uint64(ubits - k)
    u_hi = (ut << rest) | np.uint64((1 << (ubits - k)) - 1)
    u_lo = ut << rest
    real = item < tab.nb
    it = np.minimum(item, tab.nb - 1)
    acc = real & (ut < a_thr)
    rej = real & (ut > r_thr)
    if tab.p == 0:
        assert np.all((u_hi[acc] << np.uint64(64 - ubits)) < ta[it[acc]])
        assert np.all((u_lo[rej] << np.uint64(64 - ubits)) > trm1[it[rej]])
    else:  # against the acceptance probability at the proposal's offset, with a margin
        off = ((h1 >> np.uint64(ku)) & np.uint64((1 << tab.p) - 1)).astype(np.float64)
        if law == "laplace":
            g = off / param
        else:
            g = off * (2.0 * np.ldexp(it.astype(np.float64), tab.p) + off) / (2.0 * param**2)
        prob = tab.f[it] * np.exp(-g)
        # U's bounds (u_hi + 1 and u_lo are below 2^34: exact as doubles)
        assert np.all(np.ldexp(u_hi[acc].astype(np.float64) + 1.0, -ubits)
                      < prob[acc] * (1.0 - 2.0 ** -36))
        assert np.all(np.ldexp(u_lo[rej].astype(np.float64), -ubits)
                      > prob[rej] * (1.0 + 2.0 ** -36))
        assert rej[:200_000].any()
    assert acc[:200_000].mean() > 0.9  # the table accepts most random proposals
    # the lines leave few proposals to the second half
    assert (acc | rej)[:200_000][real[:200_000]].mean() > 0.99
    # the words at the thresholds: decided on their first half (the quantized weights)
    assert decided[200_000:][c[200_000:] != tab.nb].all()
    pad = item == tab.nb + 1
    assert np.all(a_thr[pad] == 0) and np.all(r_thr[pad] == 0)
    assert np.all(a_thr[~real] == 0)


def test_direct_table_where_the_first_half_keeps_enough_of_u() -> None:
    """A one-word table gets a direct table where its first half keeps at least
    ``DIRECT_MIN_UBITS`` bits of U after the index, the sign and the offset's ``p`` bits
    (bins of width 1 to 2^8 here); wider bins and two-word layouts get the step and wide
    loops."""
    seen = set()
    for law, param in TABLES:
        tab = _envelope.table(law, Fraction(param))
        *_, direct, dbits = tab.kernel_args
        want = not tab.lay[1] and 31 - _kernel_table.DIRECT_BITS - tab.p >= (
            _kernel_table.DIRECT_MIN_UBITS)
        assert (dbits > 0) == want and (dbits in (0, _kernel_table.DIRECT_BITS))
        seen.add((tab.p == 0, dbits > 0))
    assert seen == {(True, True), (False, True), (False, False)}


def _one_chunk(tab: _envelope.Table, io: tuple, force: int, cells: int) -> np.ndarray:
    buf = np.zeros((1, 64), np.uint64)
    st = np.zeros((1, ck.ST_COLS), np.int64)
    st[0, ck.ST_POS] = 64
    st[0, ck.ST_FILL] = _native.blocks_address()
    st[0, ck.ST_END] = cells
    pend = (np.zeros((1, 64, sk.P_COLS), np.int64), np.zeros((1, 64, sk.U_COLS), np.uint64))
    tk.table_kernel_serial(tab.law_code, (buf, st, KEY_WORDS, np.zeros((1, 3), np.uint32)),
                           sk.either_io(io), tab.kernel_args, force, pend, tk.NO_CLAIM)
    return st


def test_grid_store_keeps_a_nan_as_the_general_loop() -> None:
    """The C stores clamp as numba's ``min(max(r, -sat), sat)`` does, NaN included (the
    public samplers refuse a NaN ``x``; the kernels agree anyway)."""
    tab = _envelope.table("laplace", Fraction(10))
    outs = []
    for force in (sk.FORCE_GENERAL, sk.FORCE_NONE, sk.FORCE_SCALAR, sk.FORCE_PORTABLE):
        x = np.full(40, np.nan)
        x[::3] = 1e308  # saturates at sat
        _one_chunk(tab, (x, x, sk.MODE_GRID, (8.0, 0.125, 1e308, -1)), force, 40)
        outs.append(x)
    for x in outs[1:]:
        assert x.tobytes() == outs[0].tobytes()
    assert np.isnan(outs[0]).sum() > 20


def test_c_loop_refuses_arrays_it_cannot_address() -> None:
    """The C loops read raw data pointers: a strided output is a compile-time error, not
    cells written in the wrong places."""
    import numba

    tab = _envelope.table("laplace", Fraction(10))
    out = np.zeros(16, np.int64)[::2]
    with pytest.raises(numba.core.errors.TypingError, match="C-contiguous"):
        _one_chunk(tab, (out, out, sk.MODE_WRITE, sk.NO_GRID), sk.FORCE_NONE, 8)


def test_grid_value_too_large_is_returned_by_every_loop() -> None:
    """A grid value ``|v| >= 2^53`` (no real one-word table reaches it: |v| < 2^49) is
    returned to the kernel as pending (r = -1, its word consumed, nothing written) by every
    C loop alike, not dropped: a synthetic table of 8 columns with bins of width 2^51,
    called directly (``dpf_table_fast``, csrc/table.c)."""
    ffi, lib = _native.ffi, _native.lib
    cbits, vb, p, ubits, nbins = 3, 2, 51, 7, 6
    alias = [1, 0, 3, 2, 5, 4, 6, 7]
    pack = np.array([(4 if c % 2 == 0 else 2) | (alias[c] << 32) for c in range(8)], np.uint64)
    thresh = np.array([((4 if c % 2 == 0 else 2) << (64 - cbits - vb)) for c in range(8)],
                      np.uint64)
    sel = np.array([[c, 128, alias[c], 128] for c in range(8)], np.uint64).reshape(-1)
    trm1 = np.zeros(8, np.uint64)
    flo = fhi = np.full(8, 0.5)
    direct = np.zeros(1, np.uint64)
    # column 4 (its own item 4: m = 4 2^51 + 5 >= 2^53), sign 0, U = 0 (accepted)
    word = np.array([(4 << 61) | (5 << ubits)], np.uint64)

    def ptr(a: np.ndarray, t: str) -> object:
        return ffi.cast(t, a.ctypes.data)

    got = []
    for impl in (0, 1, 2):
        fx = np.zeros(4)
        fo = np.full(4, 7.0)
        res = np.zeros(8, np.int64)
        r = lib.dpf_table_fast(impl, 0, ptr(word, "uint64_t *"), 1, 0, 0, 0, 0, 4,
                               ffi.NULL, ffi.NULL, ptr(fx, "void *"), ptr(fo, "void *"), 1, 3,
                               1.0, 1.0, 1e308, ptr(pack, "uint64_t *"),
                               ptr(thresh, "uint64_t *"), ptr(sel, "uint64_t *"),
                               ptr(trm1, "uint64_t *"), ptr(flo, "double *"),
                               ptr(fhi, "double *"), nbins, p, cbits, vb, ubits, 0.0,
                               ptr(direct, "uint64_t *"), 0, ptr(res, "int64_t *"))
        got.append((r, res.tolist(), fo.tolist()))
    assert got[0] == (-1, [1, 0, (4 << 51) + 5, 0, 4, 0, 0, 0], [7.0] * 4)
    assert got[1] == got[0] and got[2] == got[0]


def test_the_avx2_loop_is_chosen_at_run_time() -> None:
    """``dpf_table_simd``: the four-word loops where the keystream's AVX2 path runs (the same
    CPU check and ``DPFAST_SIMD`` cap), besides the wide loop's AVX-512VL build only where
    the keystream's 16-lane path runs too (not under ``DPFAST_SIMD=avx2``), the portable
    loops under ``DPFAST_SIMD=portable``."""
    import os
    import subprocess
    import sys

    level = _native.table_simd()
    assert (level > 0) == (_native.simd_level() >= 2)
    assert level < 2 or _native.simd_level() == 3
    code = "from dpfast import _native; print(_native.table_simd(), _native.simd_level())"
    for cap, want in (("portable", ["0", "1"]), ("avx2", ["1", "2"])):
        env = {**os.environ, "DPFAST_SIMD": cap}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, timeout=120).stdout.split()
        assert out == want or (cap == "avx2" and level == 0 and out == ["0", "1"])


_SIMD_SCRIPT = """
import hashlib, numpy as np, dpfast
h = hashlib.sha256()
key = bytes(range(32))
x = np.random.default_rng(3).normal(0, 100, 300_001)
for fn in (dpfast.laplace, dpfast.gaussian):
    h.update(fn(x, 10.0, rng=key).tobytes())  # a new output
    out = np.full_like(x, np.nan)
    h.update(fn(x, 10.0, rng=key, out=out).tobytes())  # a separate out
    y = x.copy()
    h.update(fn(y, 10.0, rng=key, out=y).tobytes())  # in place
    y32 = x.astype(np.float32)
    h.update(fn(y32, 10.0, rng=key, out=y32).tobytes())  # float32 in place
    h.update(fn(x, 10.0, rng=key, out=np.empty(x.size, np.float32)).tobytes())
    # a grid of 1/4: 40 steps a scale, a direct table's grid stores
    h.update(fn(x, 10.0, rng=key, granularity=0.25).tobytes())
xi = np.random.default_rng(4).integers(-2**40, 2**40, 300_001)
for fn, s in ((dpfast.discrete_laplace, 20000.0), (dpfast.discrete_gaussian, 30000.0),
              (dpfast.discrete_laplace, 1000.0), (dpfast.discrete_laplace, 10.0),
              (dpfast.discrete_gaussian, 10.0)):
    h.update(fn(np.zeros(300_001, np.int64), s, rng=key).tobytes())
    y = xi.copy()
    h.update(fn(y, s, rng=key, out=y).tobytes())
    y[::7] = 2**63 - 1  # overflows: the call fails and undoes what it wrote
    try:
        fn(y, s, rng=key, out=y)
    except OverflowError:
        pass
    h.update(y.tobytes())
print(dpfast._native.table_simd(), h.hexdigest())
"""


def test_every_simd_level_gives_the_same_output() -> None:
    """The table kernel's loops at each level this CPU runs (the wide loop's AVX-512VL
    build, the AVX2 loops, the portable loops): the grid samplers (new, separate and in-place
    outputs, float64 and float32; the default grid's wide loop and a coarse grid's direct
    table) and the discrete ones through the wide loop and the direct tables of wide bins
    and of bins of width 1 (write, in-place addition, an overflow undone), bit for bit."""
    import os
    import subprocess
    import sys

    got = {}
    for cap in ("", "avx2", "portable"):
        env = {k: v for k, v in os.environ.items() if k != "DPFAST_SIMD"}
        if cap:
            env["DPFAST_SIMD"] = cap
        out = subprocess.run([sys.executable, "-c", _SIMD_SCRIPT], env=env,
                             capture_output=True, text=True, check=True,
                             timeout=SUBPROCESS_TIMEOUT_S).stdout.split()
        got[cap] = out
    assert got["portable"][0] == "0"
    assert len({v[1] for v in got.values()}) == 1, got
