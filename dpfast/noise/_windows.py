"""Integer noise in bounded windows: peak extra memory O(window), not O(n).

:func:`dpfast.noise._drive.run_discrete` writes the int64 noise (or ``x + noise``) of a
whole call into one int64 array.  For any other dtype, byte order or layout, that
array, and the conversions around it, cost several times the data.
Here the call's noise is produced *window by window* (``WINDOW_CHUNKS`` chunks of
``CHUNK`` cells, relative cell indices into one small int64 buffer) and handed to the
caller range by range, so the caller converts, checks and stores each range and drops it.

The noise is bit for bit that of :func:`run_discrete` for the same generator state: the
same stream ids (the continuation stream first, then one per chunk), the same batches of
``REFILL_BATCH`` chunks, each chunk drawing its cells in order from its own stream, and
the pending (undecided) cells of a batch finished, round by round, in chunk order on the
call's continuation stream, exactly as ``_run_pending`` does.  Windows only split the
kernel's parallel loop over a batch's chunks; chunks are independent, so nothing else
changes.

A :class:`WindowedNoise` can :meth:`~WindowedNoise.replay` its noise: the same batches
are regenerated from their streams and the finished pending values are taken from a log.
That is how an in-place call that overflows is undone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dpfast._kernels import chacha as _ck
from dpfast._kernels import samplers as _sk
from dpfast._kernels import table as _tk
from dpfast.noise import _drive, _envelope

__all__ = ["WindowedNoise", "WINDOW_CHUNKS"]

WINDOW_CHUNKS = 16  # chunks per window: 2**20 cells, an 8 MiB int64 buffer
RANGE_CELLS = 1 << 18  # cells handed out per range (the caller's conversions: ~2 MiB each)

OnRange = Callable[[int, int, np.ndarray], None]  # (first cell, end cell, int64 noise)
OnCell = Callable[[int, int], None]  # (cell, noise) of a finished pending cell


class _StopReplay(Exception):
    """Internal: a replay reached the point where the forward pass stopped."""


class WindowedNoise:
    """The discrete Laplace (kind 0) / Gaussian (kind 1) noise of one call of ``n`` cells,
    produced window by window.  Allocates its streams when constructed (as
    :func:`run_discrete` does when called)."""

    def __init__(self, gen: Any, kind: int, p: _drive.Param, n: int,
                 window_chunks: int = WINDOW_CHUNKS) -> None:
        self.kind = int(kind)
        self.p = p
        self.n = n
        self.window = max(1, int(window_chunks))
        self.force = _drive._exact.forced_mode()
        self.cap = _drive.CHUNK if self.force else 64
        sc = p.scalar
        self.slow = _drive._SlowStream(gen)  # allocated first, as in run_discrete
        if sc is not None and (self.kind == _drive.GAUSSIAN
                               or sc >= _drive.TABLE_MIN_LAPLACE_SCALE):
            self.tab: Any = _envelope.table(_drive.Law(self.kind), sc)
            words = self.tab.words
        else:
            self.tab = None
            words = _drive._words_per_cell(self.kind, p)
        self.calls = _drive.CallStreams(gen, n, words, prefill=False)
        self.log: dict[int, int] = {}
        self.events = 0  # ranges and cells handed out by the forward pass

    # ------------------------------------------------------------------ kernels
    def _kernel(self, streams: tuple, z: np.ndarray, lo: int, hi: int, pend: tuple) -> None:
        io = (z, z, _sk.MODE_WRITE, _sk.NO_GRID)
        if self.tab is not None:
            _tk.run_table_kernel(self.tab.law_code, streams, io, self.tab.kernel_args,
                             self.force, pend)
            return
        v = self.p.values
        if self.p.stride:
            v = v[lo:hi]
        p2 = np.floor(v) + 1.0 if self.kind == _drive.GAUSSIAN else v
        _sk.run_discrete_kernel(self.kind, streams, io, (v, p2, self.p.stride), self.force, pend)

    def _finish(self, i: int, ints: np.ndarray, u64s: np.ndarray) -> int:
        ex = self.slow.exact
        if self.tab is not None:
            return int(_envelope.finish_pending(ex, self.tab, ints, u64s))
        fin = _drive._finish_laplace if self.kind == _drive.LAPLACE else \
            _drive._finish_gaussian
        return int(fin(ex, int(ints[_sk.P_STATUS]), int(ints[_sk.P_SIGN]),
                       int(ints[_sk.P_A]), int(ints[_sk.P_B]), int(u64s[_sk.U_W]),
                       self.p.exact(i)))

    # ------------------------------------------------------------------ driver
    def _run(self, on_range: OnRange, on_cell: OnCell, replay: bool,
             progress: Callable[[int], None] | None = None) -> None:
        ck = _drive.CHUNK
        wcells = self.window * ck
        z = np.empty(min(wcells, max(self.n, 1)), np.int64)
        for bi in range(len(self.calls)):
            b = self.calls.batch(bi)
            st = b.st
            nch = st.shape[0]
            while True:
                rows: list[tuple[int, np.ndarray, np.ndarray]] = []
                for a in range(0, nch, self.window):
                    e = min(nch, a + self.window)
                    w = st[a:e]
                    if np.all(w[:, _ck.ST_CELL] >= w[:, _ck.ST_END]):
                        continue
                    lo = int(b.lo + a * ck)
                    hi = int(min(self.n, b.lo + e * ck))
                    before = w[:, _ck.ST_CELL].copy()
                    w[:, _ck.ST_CELL] -= lo
                    w[:, _ck.ST_END] -= lo
                    pend = _drive._pending_arrays(e - a, self.cap)
                    streams = (b.buf[a:e], w, self.calls.key_words, b.nonces[a:e])
                    try:
                        with _drive.threads_for(e - a, 1):
                            self._kernel(streams, z, lo, hi, pend)
                    finally:
                        w[:, _ck.ST_CELL] += lo
                        w[:, _ck.ST_END] += lo
                    _drive.check_wrap(w)
                    ints, u64s = pend
                    for c in range(e - a):
                        for k in range(int(w[c, _ck.ST_PENDING])):
                            rel = int(ints[c, k, _sk.P_CELL])
                            z[rel] = 0  # finished later, as a cell
                            rows.append((lo + rel, ints[c, k].copy(), u64s[c, k].copy()))
                    w[:, _ck.ST_PENDING] = 0
                    self._ranges(on_range, z, lo, before, w[:, _ck.ST_CELL])
                for i, ints_row, u64s_row in rows:  # chunk order, as _run_pending
                    self._emit()
                    if replay:
                        v = self.log[i]
                    else:
                        v = self.log[i] = self._finish(i, ints_row, u64s_row)
                    on_cell(i, v)
                    if not replay:
                        self.events += 1
                if np.all(st[:, _ck.ST_CELL] >= st[:, _ck.ST_END]):
                    break
            if progress is not None:
                progress(b.hi - b.lo)

    def _ranges(self, on_range: OnRange, z: np.ndarray, lo: int, before: np.ndarray,
                after: np.ndarray) -> None:
        """Hand out the cells the window's chunks wrote in this round (adjacent chunk
        ranges merged)."""
        a0 = a1 = -1
        for s, t in zip(before.tolist(), after.tolist()):
            if t <= s:
                continue
            if s == a1:
                a1 = t
                continue
            if a1 > a0:
                self._range(on_range, z, lo, a0, a1)
            a0, a1 = s, t
        if a1 > a0:
            self._range(on_range, z, lo, a0, a1)

    def _range(self, on_range: OnRange, z: np.ndarray, lo: int, a: int, b: int) -> None:
        for s in range(a, b, RANGE_CELLS):  # the caller's temporaries stay small
            t = min(b, s + RANGE_CELLS)
            self._emit()
            on_range(s, t, z[s - lo:t - lo])
            if not self._replaying:
                self.events += 1

    _replaying = False
    _budget = 0

    def _emit(self) -> None:
        if self._replaying:
            if self._budget <= 0:
                raise _StopReplay
            self._budget -= 1

    def run(self, on_range: OnRange, on_cell: OnCell,
            progress: Callable[[int], None] | None = None) -> None:
        """Produce the noise: ``on_range(a, b, z)`` for cells ``[a, b)`` (``z`` int64,
        valid only during the call; 0 at cells still pending) and ``on_cell(i, v)`` for
        each pending cell once finished.  A callback that raises stops the pass; what it
        had accepted before is :attr:`events` (for :meth:`replay`)."""
        self.events = 0
        self._replaying = False
        self._run(on_range, on_cell, False, progress)

    def replay(self, on_range: OnRange, on_cell: OnCell, events: int | None = None) -> None:
        """The same ranges and cells again, bit for bit (regenerated from the streams,
        pending values from the log), the first ``events`` of them (all by default)."""
        self._replaying = True
        self._budget = self.events if events is None else events
        try:
            self._run(on_range, on_cell, True)
        except _StopReplay:
            pass
        finally:
            self._replaying = False


def window_bytes() -> int:
    """The int64 window buffer's size in bytes (for the memory tests)."""
    return WINDOW_CHUNKS * _drive.CHUNK * 8

