"""An envelope table's encoding for the table kernel (:mod:`dpfast._kernels.table`,
``csrc/table.c``): where a proposal's bits lie in the keystream (:func:`layout`,
:func:`direct_bits`) and the arrays the kernel's loops read (:class:`KernelTable`: the
alias columns packed with the thresholds' top bits, the fast loop's per-column selection,
the half-word loops' direct table, the wide loop's column records and acceptance lines).

:mod:`dpfast.noise._envelope` builds the envelope itself (the exact integer weights, the
alias table, the acceptance factors and their bounds) and asks this module where the
proposal's bits lie; what the kernel reads is built here, from the envelope's fields
(:class:`Envelope`), once per table.  Every line and threshold here decides only where
the kernel's own certificates decide the same way (the margins are in each docstring), so
the encoding changes the speed of a sample, never its law.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Protocol

import numpy as np

from dpfast._kernels import table as tk

VB = 20  # top bits of the alias value in a proposal's word, at most
VB_MIN = 6  # ... and at least (a tie, which reads one more word, has probability 2^-vb)
UMIN = 8  # fewest bits of U a one-word proposal carries (else two words)
U_PREF = 24  # U's bits in one word before the alias value gets more than VB_MIN
DIRECT_BITS = 15  # the direct table's index bits, at most (2^15 uint64: 256 KiB)
# a direct table's entry (KernelTable.direct_table): its layout is the kernels'
D_ITEM, D_SLOPE, D_ACC, D_UBITS = tk.D_ITEM, tk.D_SLOPE, tk.D_ACC, tk.D_UBITS
D_SBITS = D_ITEM - D_SLOPE  # the slope's bits
R_NEVER = (1 << D_ACC) - 1  # a rejection threshold on at most 16 bits of U that never rejects
DIRECT_ITEMS = 1 << 12  # tables with more items (and padding, tail) have no direct table
LINE_BITS = 16  # the offset's top bits the wide loop's acceptance lines read
DIRECT_MIN_CBITS = 9  # a direct table's alias columns, at least (its tail's column: 1 / 512)
DIRECT_MIN_UBITS = 8  # U's top bits a direct table's first half keeps, at least (wide bins)


def layout(cbits: int, p: int) -> tuple[int, bool, int, int, int]:
    """``(vb, two, pa, pb, ubits)``: where a proposal's bits lie in the keystream.

    Word A, from the top bit: alias column (``cbits``), the alias value's top ``vb`` bits
    (on a tie with the threshold's top bits, probability <= 2^-vb, its other
    ``64 - cbits - vb`` bits are the top of a fresh word read right after A -- unless the
    threshold's own bits below its top ``vb`` are all 0: then the value is not below it
    and no word is read), sign (1),
    then the offset in the bin (``pa`` bits).
    One word (when ``63 - cbits - p >= VB_MIN + UMIN``): ``pa = p`` and U's first
    ``ubits`` bits are the rest of A, with ``vb`` in ``[VB_MIN, VB]`` leaving U up to
    ``U_PREF`` bits.  Two words: ``vb = VB``, ``pa = min(p, 63 - cbits - VB)`` bits of A
    (the rest of A is not used), the offset's other ``pb = p - pa`` bits are the top of
    word B and U's first ``ubits = 64 - pb`` bits the rest of B."""
    r0 = 63 - cbits - p
    if r0 >= VB_MIN + UMIN:
        vb = max(VB_MIN, min(VB, r0 - U_PREF))
        return vb, False, p, 0, r0 - vb
    pa = min(p, 63 - cbits - VB)
    return VB, True, pa, p - pa, 64 - (p - pa)


def direct_bits(cbits: int, p: int, nb: int, lay: tuple) -> int:
    """The index bits of a table's direct table (:meth:`KernelTable.direct_table`): the alias
    column's ``cbits`` and the alias value's top ``min(DIRECT_BITS - cbits, vb)`` bits;
    0 (no direct table) for two-word proposals, more than ``DIRECT_ITEMS`` items (with the
    tail and padding), or bins so wide that the first half would keep fewer than
    ``DIRECT_MIN_UBITS`` bits of U after the offset's ``p``."""
    if lay[1] or nb + 2 > DIRECT_ITEMS:
        return 0
    dbits = cbits + max(0, min(DIRECT_BITS - cbits, lay[0]))
    return dbits if 31 - dbits - p >= DIRECT_MIN_UBITS else 0


class Envelope(Protocol):
    """What the encoding reads of an envelope table (:class:`dpfast.noise._envelope.Table`,
    whose fields these are)."""

    @property
    def law(self) -> str: ...
    @property
    def param(self) -> Fraction: ...
    @property
    def p(self) -> int: ...
    @property
    def nb(self) -> int: ...
    @property
    def cbits(self) -> int: ...
    @property
    def thresh(self) -> np.ndarray: ...
    @property
    def alias(self) -> np.ndarray: ...
    @property
    def f(self) -> np.ndarray: ...
    @property
    def coef(self) -> float: ...
    @property
    def squeeze(self) -> tuple: ...
    @property
    def lay(self) -> tuple: ...


class KernelTable:
    """What the table kernel reads for one envelope table ``tab``: :attr:`args`, built on
    first use (a new scale's set-up cost, vectorized), and the pieces it is made of."""

    def __init__(self, tab: Envelope) -> None:
        self.tab = tab

    @functools.cached_property
    def args(self) -> tuple:
        """The ``table`` tuple of :func:`dpfast._kernels.table.table_kernel`."""
        tab = self.tab
        # the threshold's top vb + 1 bits and the alias in one word (the rest of the
        # threshold, in thresh, is read only on a tie of the top bits)
        hi = tab.thresh >> np.uint64(64 - tab.cbits - tab.lay[0])
        pack = hi | (tab.alias.astype(np.uint64) << np.uint64(32))
        # the fast loop's (item, acceptance threshold on U's ubits known bits, i.e.
        # ta >> (64 - ubits)) per alias column, for the column's own item (sel[4 col],
        # sel[4 col + 1]) and for its alias (sel[4 col + 2], sel[4 col + 3]); threshold 0 for
        # the tail and padding items, which the loop sorts out first.  Indexed by the
        # outcome of the alias test, so the choice is an address, not a branch.
        ncol = len(tab.thresh)
        tas = np.zeros(tab.nb + 2, np.uint64)
        tas[:tab.nb] = tab.squeeze[0] >> np.uint64(64 - tab.lay[4])
        own = np.arange(ncol, dtype=np.int64)
        sel = np.empty((ncol, 4), np.uint64)
        sel[:, 0] = own
        sel[:, 1] = tas[np.minimum(own, tab.nb)]
        sel[:, 2] = tab.alias
        sel[:, 3] = tas[np.minimum(tab.alias, tab.nb)]
        direct, dbits = self.direct_table(hi)
        if not dbits:  # the wide loop's column records take the direct table's place
            direct = self.column_records(hi, sel)
        return (pack, tab.thresh, tab.f, tab.nb, tab.p, tab.cbits, tab.coef, *tab.squeeze,
                *tab.lay, sel.reshape(-1), direct, dbits)

    @functools.cached_property
    def tie_reads(self) -> np.ndarray:
        """Per alias column: its threshold has bits below the alias value's top ``vb`` bits,
        so a tie of those bits reads the next word (with the weights on a grid,
        ``_envelope._table``: the tail's column only)."""
        tab = self.tab
        return (tab.thresh & np.uint64((1 << (64 - tab.cbits - tab.lay[0])) - 1)) != 0

    def column_records(self, th: np.ndarray, sel: np.ndarray) -> np.ndarray:
        """Per alias column, for a table without a direct table (``csrc/table.c``'s
        four-word wide loop), four words:

        * ``th | own << 21 | alias << 42``: the threshold's top bits as ``pack`` holds them,
          the column's own item and its alias -- in the tail's column, the tail as its
          alias too (that column's threshold is the one off the grid of the top bits, so
          a tie there reads a word: the loop leaves the whole column to the step);
        * ``S | A << 32`` for the own item, the same for the alias (:meth:`wide_lines`);
        * ``R_own | R_alias << 32``;

        then one word more, ``qs | q << 8`` of the lines.  ``(five zeros)`` for a two-word
        layout, whose proposals the C loops do not take."""
        tab = self.tab
        if tab.lay[1]:
            return np.zeros(5, np.uint64)
        assert int(th.max()) < 1 << 21 and tab.nb + 2 <= 1 << 21
        acc, rej, slope, qs = self.wide_lines()
        # the items past the bins: the tail's lines decide nothing (the step takes it),
        # the padding's reject every proposal (as the step does)
        acc = np.concatenate([acc, np.zeros(2, np.uint64)])
        rej = np.concatenate([rej, np.array([2**32 - 1, 0], np.uint64)])
        slope = np.concatenate([slope, np.zeros(2, np.uint64)])
        own = np.minimum(sel[:, 0], np.uint64(tab.nb + 1)).astype(np.int64)
        ali = np.minimum(sel[:, 2], np.uint64(tab.nb + 1)).astype(np.int64)
        # every threshold but the tail column's is on the grid of the top bits (_table)
        tail_col = own == tab.nb
        assert not (self.tie_reads & ~tail_col).any()
        alias = np.where(tail_col, np.uint64(tab.nb), sel[:, 2])
        ali = np.where(tail_col, tab.nb, ali)
        rec = np.empty((len(th), 4), np.uint64)
        rec[:, 0] = th | (sel[:, 0] << np.uint64(21)) | (alias << np.uint64(42))
        rec[:, 1] = slope[own] | (acc[own] << np.uint64(32))
        rec[:, 2] = slope[ali] | (acc[ali] << np.uint64(32))
        rec[:, 3] = rej[own] | (rej[ali] << np.uint64(32))
        trailer = np.array([qs | min(tab.p, LINE_BITS) << 8], np.uint64)
        return np.concatenate([rec.reshape(-1), trailer])

    def wide_lines(self, ub: int | None = None, q: int | None = None, sbits: int = 32,
                   spare: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """``(A, R, S, qs)``: the wide loop's acceptance and rejection lines per bin (and,
        with ``ub``, ``q = p``, ``sbits = 16`` and ``spare = False``, the direct table's of
        wide bins).

        With U's top ``ub = min(ubits, 31)`` known bits ``u`` (U's known bits
        ``>> (ubits - ub)``) and ``h`` the offset's top ``q = min(p, LINE_BITS)`` bits, a
        proposal of bin ``i`` is accepted where ``u < A_i - (h S_i >> qs)`` and rejected
        where ``u >= R_i - (h S_i >> qs)`` (else the step decides; where ``h``'s cell holds
        more than one offset, ``A_i`` holds the line's drop over it, ``ceil(S_i / 2^qs) +
        1``, so one product serves both).

        Both are exact decisions with a margin: the acceptance line lies below
        ``f_i (1 - g) 2^ub <= f_i exp(-g) 2^ub`` (``g`` bounded above over the offsets of
        ``h``'s cell, linearly: ``off / t``, or ``off (2 a_i + 2^p) / (2 sigma^2)``)
        by ``2^-30`` relative and one unit of ``u``, the rejection line above
        ``f_i (1 - y + y^2 / 2) 2^ub >= f_i exp(-y) 2^ub`` (``y <= g`` the cell's smallest
        ``g``, linearly) by as much -- far outside the kernel's and the general loop's
        certificates' margins (``2^-47``, ``2^-50``), so both take the same decision on the
        same bits, and the same words are read.  The unit of ``u`` (two for the rejection
        line) is spare, kept where ``ub`` is 31 bits (it costs nothing there); ``spare =
        False`` drops it, for the direct table's few bits of U, where a unit is 0.4% of U's
        range at 8 bits (the relative margin alone makes the certificates agree).  Bins
        whose ``g`` reaches ``0.45`` over their offsets (where the step's squeeze stops) get
        lines that decide nothing.  Vectorized: part of a new scale's set-up cost."""
        tab = self.tab
        nb, p = tab.nb, tab.p
        ub = min(tab.lay[4], 31) if ub is None else ub
        q = min(p, LINE_BITS) if q is None else q
        unit = 2.0 ** ub
        f = np.asarray(tab.f, dtype=np.float64)
        f_lo = f * (1.0 - 2.0 ** -40)
        f_hi = f * (1.0 + 2.0 ** -40)
        if tab.law == "laplace":
            c = float(1 / tab.param)
            k_up = np.full(nb, c * (1.0 + 2.0 ** -40))
            k_lo = np.full(nb, c * (1.0 - 2.0 ** -40))
        else:
            c = float(1 / (2 * tab.param * tab.param))
            a2 = np.arange(nb, dtype=np.float64) * float(2 << p)  # 2 a_i, exact
            k_up = (a2 + float(1 << p)) * c * (1.0 + 2.0 ** -40)
            k_lo = a2 * c * (1.0 - 2.0 ** -40)
        ok = float(1 << p) * k_up < 0.45
        width = float(1 << (p - q))  # offsets per cell of h
        cell = f_hi * unit * width * k_up * (1.0 + 2.0 ** -30)  # the drop per cell, in u
        top = float(cell[ok].max()) if ok.any() else 1.0
        qs = max(0, min(48, math.floor(math.log2((2.0 ** sbits - 1) / top)) - 1))
        slope = np.ceil(np.ldexp(cell, qs))
        # - 1: (h S >> qs) >= h S / 2^qs - 1; the other unit is spare
        acc = np.floor(f_lo * unit * (1.0 - 2.0 ** -30)) - (2.0 if spare else 1.0)
        # R >= max over h of f_hi (1 - y + y^2/2) unit (1 + 2^-30) + h S / 2^qs, y = h w k_lo
        # (convex in h: at h = 0 or h = 2^q - 1)
        hm = float((1 << q) - 1)
        y = hm * width * k_lo
        far = f_hi * unit * (1.0 + 2.0 ** -30) * (1.0 - y + y * y / 2) + hm * np.ldexp(slope, -qs)
        rej = np.ceil(np.maximum(f_hi * unit * (1.0 + 2.0 ** -30), far) * (1.0 + 2.0 ** -40)) + (
            2.0 if spare else 0.0)
        # (h + 1) S >> qs <= (h S >> qs) + ceil(S / 2^qs): the line at h's far end (a
        # cell of one offset, q = p, has its far end at h)
        if width > 1.0:
            acc = acc - np.ceil(np.ldexp(slope, -qs)) - 1.0
        acc = np.where(ok, np.maximum(acc, 0.0), 0.0)
        slope = np.where(ok, slope, 0.0)
        rej = np.where(ok, rej, 2.0 ** 32 - 1)
        assert float(slope.max(initial=0.0)) < 2.0 ** sbits and float(rej.max()) < 2.0 ** 32
        return (acc.astype(np.uint64), rej.astype(np.uint64), slope.astype(np.uint64), qs)

    def direct_table(self, th: np.ndarray) -> tuple[np.ndarray, int]:
        """The common case's direct table (``csrc/table.c``), indexed by a proposal's top
        ``dbits`` bits (the alias column and the top ``dbits - cbits`` bits of its alias
        value), which with the sign, the offset in the bin (``p`` bits) and U's top ``ku =
        31 - dbits - p`` bits make its first 32-bit half (the half-word layout,
        :func:`dpfast._kernels.table.table_kernel_serial`):
        ``(item << D_ITEM) | (S << D_SLOPE) | (A << D_ACC) | R`` -- the item those bits
        choose, and on U's top ``k = min(ku, 16)`` bits ``u`` (U rounded down to k bits)
        and the offset ``h`` the lines ``u < A - (h S >> qs)`` accept, ``u > R - (h S >>
        qs)`` reject (bins of width 1: ``S = 0``, :func:`fast_thresholds`; wide bins
        :meth:`wide_lines` on those bits); a proposal they decide takes that half alone.
        One word more, after the ``2^dbits`` entries, holds ``qs``.
        Where the value's top bits straddle the column's threshold ``th`` (its top ``vb``
        bits, as ``pack`` holds them: ``v < th`` keeps the column's own item, ``v > th``
        takes the alias, ``v = th`` takes the alias where the threshold has no bits below
        its top ``vb``, else reads the next word) the item is undecided:
        ``(nb << D_ITEM) | R_NEVER`` (A = 0), as for the tail item -- which the weights of
        a table with a direct table rule out (:func:`dpfast.noise._envelope._weights`); padding is
        ``((nb + 1) << D_ITEM)`` (A = R = 0: reject unless u = 0).  ``(one zero, 0)``
        without a direct table (:func:`direct_bits`: bins too wide for U's bits in the
        first half, two-word layouts, too many items): the kernel's step and four-word
        wide loops take those (:attr:`args` passes :meth:`column_records` in this
        table's place)."""
        tab = self.tab
        vb = tab.lay[0]
        dbits = direct_bits(tab.cbits, tab.p, tab.nb, tab.lay)
        if not dbits:
            return np.zeros(1, np.uint64), 0
        s = dbits - tab.cbits
        ncol = len(tab.thresh)
        col = np.repeat(np.arange(ncol, dtype=np.int64), 1 << s)
        j = np.tile(np.arange(1 << s, dtype=np.int64), ncol)
        t = th.astype(np.int64)[col]
        lo = j << (vb - s)  # the alias value's top vb bits run over [lo, hi]
        hi = ((j + 1) << (vb - s)) - 1
        # a tie of the top bits (vh = t) takes the alias at once where the threshold has no
        # bits below them (the quantized weights of _envelope._weights: every threshold)
        low = self.tie_reads
        item = np.where(hi < t, col, tab.alias[col])
        item[(lo <= t) & (t <= hi) & ~((lo == t) & ~low[col])] = tab.nb  # undecided
        k = min(31 - dbits - tab.p, D_UBITS)
        if tab.p == 0:
            acc, rej = self.fast_thresholds(k)
            slope, qs = np.zeros(tab.nb, np.uint64), 0
        else:  # u >= R_line - drop rejects: u > R_line - 1 - drop
            acc, rej_line, slope, qs = self.wide_lines(ub=k, q=tab.p, sbits=D_SBITS,
                                                       spare=False)
            rej = np.minimum(rej_line.astype(np.int64) - 1, R_NEVER).astype(np.uint64)
        acc = np.append(acc, [0, 0]).astype(np.uint64)
        rej = np.append(rej, [R_NEVER, 0]).astype(np.uint64)
        slope = np.append(slope, [0, 0]).astype(np.uint64)
        assert int(acc.max()) <= R_NEVER and int(slope.max()) < 1 << D_SBITS
        u = np.uint64
        entries = ((item.astype(np.uint64) << u(D_ITEM)) | (slope[item] << u(D_SLOPE))
                   | (acc[item] << u(D_ACC)) | rej[item])
        return np.append(entries, u(qs)), dbits

    def fast_thresholds(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Per bin ``(A, R)`` on U's top ``k`` (<= 16, <= ubits) bits ``u`` (``U >= u
        2^-k``, ``U < (u + 1) 2^-k``), for bins of width 1: ``u < A`` only where the
        general loop's first squeeze accepts (``A = ta >> (64 - k)``: U < ta 2^-64), and
        ``u > R`` only where it rejects (``R = trm1 >> (64 - k)``: U 2^64 > trm1)."""
        tab = self.tab
        assert 0 < k <= min(tab.lay[4], D_UBITS)
        sh = np.uint64(64 - k)
        ta, trm1, _, _ = tab.squeeze
        return ta >> sh, trm1 >> sh
