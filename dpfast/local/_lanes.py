"""Exact Bernoulli thresholds and the driver of the bit-sliced client kernels.

See :mod:`dpfast.local` (Exactness) and :mod:`dpfast._kernels.local`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast.noise import _drive, _exact
from dpfast.random import Generator


class _Threshold:
    """An exact probability c in [0, 1] for the kernels' bit-sliced Bernoulli lanes.

    Either a rational ``value`` (a float's exact binary rational), or
    ``c = (A + B x) / (C + D x)`` with ``x = exp(-gamma)``, ``gamma > 0`` rational and
    non-negative integers A, B, C, D (irrational unless degenerate).  ``words`` is the
    leading expansion of c handed to the kernels and ``terminal`` says how it ends
    (see :func:`dpfast._kernels.local.bern_lanes`).
    """

    words: np.ndarray  # (any shape parameter: numpy's stubs differ between versions)
    terminal: int

    def __init__(self, value: Fraction | None = None, *, gamma: Fraction | None = None,
                 coef: tuple[int, int, int, int] = (0, 0, 1, 0)) -> None:
        self._rat = value
        self._gamma = gamma
        self._coef = coef
        if value is None:
            assert gamma is not None and gamma > 0
            a, b, c, d = coef
            if a * d == b * c:  # (A + Bx)/(C + Dx) constant
                self._rat = Fraction(a, c) if c else Fraction(b, d)
        if self._rat is not None:
            r = self._rat
            if not 0 <= r <= 1:
                raise ValueError("probability out of [0, 1]")
            den = r.denominator
            if r == 1:
                self.words, self.terminal = np.zeros(0, np.uint64), 2
            elif den & (den - 1) == 0:  # binary rational: exact finite expansion
                nbits = den.bit_length() - 1
                nwords = -(-nbits // 64)
                num = r.numerator << (64 * nwords - nbits)
                ws = [(num >> (64 * (nwords - 1 - i))) & ((1 << 64) - 1) for i in range(nwords)]
                while ws and ws[-1] == 0:
                    ws.pop()
                self.words, self.terminal = np.array(ws, np.uint64), 1
            else:
                self.words = np.array([(r.numerator << 64) // den], np.uint64)
                self.terminal = 0
        else:
            prec = 128
            while True:
                lo, hi = self.bounds(prec)
                if lo >> (prec - 64) == hi >> (prec - 64):
                    break
                prec *= 2
            self.words, self.terminal = np.array([lo >> (prec - 64)], np.uint64), 0

    def bounds(self, prec: int) -> tuple[int, int]:
        """Integers (lo, hi) with lo <= c 2^prec <= hi."""
        if self._rat is not None:
            num = self._rat.numerator << prec
            den = self._rat.denominator
            return num // den, -(-num // den)
        a, b, c, d = self._coef
        w = prec + 16 + max(a, b, c, d, 1).bit_length()
        xl, xh = _exact.exp_neg_bounds(self._gamma, w)
        los, his = [], []
        for xi in (xl, xh):
            num = ((a << w) + b * xi) << prec
            den = (c << w) + d * xi
            los.append(num // den)
            his.append(-(-num // den))
        return min(los), max(his)

    def decide(self, src: _exact.WordSource, forced: bool) -> bool:
        """Finish an undecided lane exactly: U < c for the lane's uniform U.

        A lane left undecided by the kernel has consumed ``64 len(words)`` bits equal to
        ``words``; a forced lane (test hook) has consumed none.
        """
        if forced:
            u = _exact.LazyUniform(0, src, 0)
        else:
            m = 0
            for wd in self.words:
                m = (m << 64) | int(wd)
            u = _exact.LazyUniform(m, src, 64 * len(self.words))
        return _exact.u_less_than(u, self.bounds)

    def __float__(self) -> float:
        if self._rat is not None:
            return float(self._rat)
        lo, hi = self.bounds(80)
        return float(Fraction(lo + hi, 2 << 80))


def _keep_threshold(epsilon: Fraction, k: int) -> _Threshold:
    """e^eps / (e^eps + k - 1) = 1 / (1 + (k - 1) e^-eps)."""
    return _Threshold(gamma=epsilon, coef=(1, 0, 1, k - 1))


def _flip_threshold(gamma: Fraction) -> _Threshold:
    """1 / (1 + e^gamma) = e^-gamma / (1 + e^-gamma)."""
    return _Threshold(gamma=gamma, coef=(0, 1, 1, 1))


def _below_py(src: _exact.WordSource, span: int) -> int:
    """Exactly uniform on [0, span) from 64-bit words (Lemire)."""
    x = src.next() * span
    low = x & ((1 << 64) - 1)
    if low < span:
        t = ((1 << 64) - span) % span
        while low < t:
            x = src.next() * span
            low = x & ((1 << 64) - 1)
    return x >> 64


def _forced() -> bool:
    """Test hook: ``dpfast.noise._exact.force_exact(3)`` sends every irrational-threshold
    decision of this module through the exact continuation."""
    return _exact.forced_mode() == 3


def _run_lanes(gen: Generator, n: int, words_per_cell: float, chunk: int, per_cell: int,
               call: Callable[..., None], finish: Callable[[int, Any], None]) -> None:
    """Drive a client kernel over n cells in fixed chunks with the exact continuation.

    ``call(buf, st, key, nonces, chunk, base, count, force, start, resume, pcount, pidx)``
    runs the kernel; ``finish(index, word_source)`` completes one undecided decision.
    ``per_cell`` bounds the decisions one kernel step can leave undecided.
    """
    if n == 0:
        return
    force = _forced()
    key_words = _drive.source_of(gen).key_words
    slow: _drive._SlowStream | None = None
    for lo, hi, buf, st, nonces in _drive.batches(gen, n, words_per_cell, chunk):
        nch = buf.shape[0]
        start = lo + np.arange(nch, dtype=np.int64) * chunk
        ends = np.minimum(start + chunk, hi)
        resume = np.empty(nch, np.int64)
        pcount = np.zeros(nch, np.int64)
        cap = per_cell * (min(chunk, n) + 1) if force else 4 * per_cell
        pidx = np.empty((nch, cap), np.int64)
        while True:
            with _threads((hi - lo) * words_per_cell):
                call(buf, st, key_words, nonces, chunk, lo, hi - lo, force, start,
                     resume, pcount, pidx)
            _drive.check_wrap(st)
            if pcount.any():
                if slow is None:
                    slow = _drive._SlowStream(gen)
                src = slow.exact.src
                for c in range(nch):
                    for t in range(int(pcount[c])):
                        finish(int(pidx[c, t]), src)
            pcount[:] = 0
            if np.all(resume >= ends):
                break
            start = resume.copy()


_PARALLEL_WORK = 1 << 16


def _threads(work: float) -> contextlib.AbstractContextManager[None]:
    """Run small kernel calls on one thread (:func:`dpfast.noise._drive.threads_for`): waking a
    parallel team costs more than the work (results never depend on the thread count)."""
    return _drive.threads_for(2 if work >= _PARALLEL_WORK else 1)


def _lanes_words(nlanes_per_cell: float) -> float:
    """Expected random words of bit-sliced Bernoulli decisions per cell."""
    return 7.5 * nlanes_per_cell / 64.0


def _chunk_for(words_per_cell: float, multiple: int = 64) -> int:
    """Cells per chunk so that one chunk draws about 2^17 words (fixed per call shape)."""
    cells = max(1, int((1 << 17) / max(words_per_cell, 1e-3)))
    cells = max(multiple, (cells // multiple) * multiple)
    return min(cells, _drive.CHUNK)



