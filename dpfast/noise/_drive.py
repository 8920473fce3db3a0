"""Drives the exact samplers' kernels: pending cells, exact continuation, undo.

One noising call's data flows noise function -> :func:`run_discrete` -> kernel (per
batch of chunks, :mod:`dpfast.noise._chunks`) -> pending cells finished exactly in
Python (:mod:`dpfast.noise._exact`, :mod:`dpfast.noise._envelope`) -> kernel (resumed)
-> ... .  The kernel contract (a few tuples: streams, io, parameters, pending arrays)
is described in :mod:`dpfast._kernels.samplers`.

Where to add a sampler: a kernel in ``dpfast/_kernels/samplers.py`` following the
contract (per-chunk loop from ``st[c, ST_CELL]`` to ``st[c, ST_END]``, pending rows
``P_*``/``U_*``), a ``finish`` function that continues an undecided cell exactly from its
pending row, and a few lines here that hand both to :func:`_run_pending`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._kernels import chacha as _ck
from dpfast._kernels import samplers as _sk
from dpfast._kernels import table as _tk
from dpfast.noise import _envelope, _exact
from dpfast.noise._chunks import (  # noqa: F401  (re-exported for the other drivers)
    BATCH_WORDS,
    CHUNK,
    REFILL_BATCH,
    Batch,
    CallStreams,
    _executor,
    _nonces,
    batches,
    check_wrap,
    fill_streams,
    new_output,
    source_of,
    threads_for,
    uniform_below,
)
from dpfast.noise._params import (  # noqa: F401
    MAX_GAMMA,
    MAX_SCALE,
    MIN_SCALE,
    Param,
    describe,
    make_param,
    out_shape,
    parse_param,
    refuse_masked,
    refuse_wide_float,
)
from dpfast.random import _streams


class Law(enum.IntEnum):
    """The noise laws of the integer samplers (``kind`` of the kernels)."""

    LAPLACE = 0
    GAUSSIAN = 1


LAPLACE = Law.LAPLACE
GAUSSIAN = Law.GAUSSIAN


# ----------------------------------------------------------------------------- slow path
class _SlowStream:
    """Words of one stream reserved per call for the exact continuation."""

    def __init__(self, gen: Any) -> None:
        self._words = _streams.WordStream(source_of(gen))
        self._exact: _exact.Exact | None = None

    @property
    def exact(self) -> _exact.Exact:
        if self._exact is None:
            self._exact = _exact.Exact(_exact.WordSource(self._words.fetch))
        return self._exact


def _finish_laplace(ex: _exact.Exact, status: int, s: int, h: int, l: int, w: int,
                    t: Fraction) -> int:
    j, _ = _exact.split_scale(float(t))
    if status == _sk.PENDING_INVERSION:
        if j == 0:
            g = ex.geo_inv_from(w, t, force=True)
        else:
            g = (ex.geo_inv_from(w, t / (1 << j), force=True) << j) + ex.sample_l(t, j)
    else:  # pending rejection step of L
        lv = l if ex.accept_l_kernel(l, w, t) else ex.sample_l(t, j)
        g = (h << j) + lv
    v = ex.finish_laplace(s, g)
    return ex.discrete_laplace(t) if v is None else v


def _finish_gaussian(ex: _exact.Exact, status: int, s: int, h: int, l: int, w: int,
                     sigma: Fraction) -> int:
    t = math.floor(sigma) + 1
    if status == _sk.PENDING_BERNOULLI:
        y, accept = h, ex.bern_exp_from(w, ex.gauss_gamma(h, sigma, t), force=True)
    else:
        y = _finish_laplace(ex, status, s, h, l, w, Fraction(t))
        accept = ex.bern_exp_from(ex.src.next(), ex.gauss_gamma(y, sigma, t))
    return y if accept else ex.discrete_gaussian(sigma)


def _words_per_cell(kind: int, p: Param) -> float:
    """Expected keystream words per cell of the geometric / CKS20 kernels."""
    t = float(np.max(p.values)) if kind == LAPLACE else math.floor(float(np.max(p.values))) + 1.0
    geo = 2.07 if t >= 32.0 else 1.0  # H inversion + L (one word, 1/16 a second; 15/16 ok)
    lap = (geo + 1 / 64) / (1 - (1 - math.exp(-1 / t)) / 2)  # sign rejection of -0
    return lap if kind == LAPLACE else (lap + 1.0) / 0.5  # CKS20 acceptance >= ~0.54


_OVERFLOW = "noisy value does not fit the integer dtype of x"


class UnfitInput(ValueError):
    """A MODE_GRID call with a check found a cell of x that is not finite or whose
    ``x / g`` overflows (``grid``'s ``lim`` in :func:`run_discrete`)."""


TABLE_MIN_LAPLACE_SCALE = 1  # scalar Laplace scales >= 1 use the envelope table

# Kernel = callable(streams, mode, force, pend) for one batch; Finish = callable(cell,
# ints row, u64s row) -> value (exact continuation); Store = callable(cell, value).
Kernel = Callable[[tuple, int, int, tuple], None]
Finish = Callable[[int, np.ndarray, np.ndarray], Any]
Store = Callable[[int, Any], None]


def _pending_rows(b: Batch, pend: tuple[np.ndarray, np.ndarray]
                  ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    ints, u64s = pend
    counts = b.st[:, _ck.ST_PENDING]
    for c in np.flatnonzero(counts).tolist():  # the chunks with pending cells, in order
        for k in range(int(counts[c])):
            yield int(ints[c, k, _sk.P_CELL]), ints[c, k], u64s[c, k]
    counts[:] = 0


def _run_pending(gen: Any, n: int, words_per_cell: float, kernel: Kernel, finish: Finish,
                 store: Store, *, mode: int = _sk.MODE_WRITE,
                 undo: np.ndarray | None = None,
                 progress: Callable[[int], None] | None = None) -> None:
    """Common driver of the exact kernels.

    Runs ``kernel`` over the batches of chunks of a call.  The kernel records each
    undecided cell in the pending arrays; each is finished exactly, in cell order of its
    chunk, by ``finish`` and written by ``store``.  A chunk whose pending list fills up
    stops and is resumed, on the same stream, after its pending cells are finished.

    With ``undo`` (the ``out`` array of an in-place ``mode=ADD`` call) an overflow is
    undone before ``OverflowError`` propagates: the call's batches are regenerated bit for
    bit and every cell written so far gets its noise subtracted again, so ``out`` is
    left exactly as it was.  A separate ``out`` (``x`` given, not ``out``) is left as the
    failing chunk and the others wrote it (:mod:`dpfast.noise.integers`).
    """
    force = _exact.forced_mode()
    cap = CHUNK if force else 64
    calls = CallStreams(gen, n, words_per_cell, prefill=False)
    log: dict[int, Any] | None = {} if undo is not None else None
    b = None
    unfit = False  # a kernel passed an unfit x (MODE_GRID with a check): raised at the end
    try:
        for b in calls:
            pend = _pending_arrays(b.st.shape[0], cap)
            streams = b.streams(calls.key_words)
            one = b.st.shape[0] == 1  # a small call: scalar reads of the state row
            while True:
                with threads_for(b.st.shape[0], 1):
                    kernel(streams, mode, force, pend)
                if not one or b.st[0, _ck.ST_WRAP]:
                    check_wrap(b.st)
                flag = b.st[0, _ck.ST_OVERFLOW] if one else b.st[:, _ck.ST_OVERFLOW].max()
                if flag == _sk.UNFIT:
                    unfit = True
                elif flag:
                    raise OverflowError(_OVERFLOW)
                if not one or b.st[0, _ck.ST_PENDING]:
                    for i, ints, u64s in _pending_rows(b, pend):
                        if unfit:  # the call fails: pending cells are left, not finished
                            continue
                        v = finish(i, ints, u64s)
                        store(i, v)
                        if log is not None:
                            log[i] = v
                if (b.st[0, _ck.ST_CELL] >= b.st[0, _ck.ST_END] if one
                        else np.all(b.st[:, _ck.ST_CELL] >= b.st[:, _ck.ST_END])):
                    break
            if progress is not None:
                progress(b.hi - b.lo)
        if unfit:  # after every batch: the failure's timing does not depend on where x is
            raise UnfitInput("x is not finite, or x / granularity overflows")
    except OverflowError:
        if undo is not None and b is not None:
            _undo(calls, b, kernel, force, cap, log or {}, undo)
        raise


def _pending_arrays(nch: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    return (np.empty((nch, cap, _sk.P_COLS), np.int64),
            np.empty((nch, cap, _sk.U_COLS), np.uint64))


def _undo(calls: CallStreams, failed: Batch, kernel: Kernel, force: int, cap: int,
          log: dict[int, Any], out: np.ndarray) -> None:
    """Subtract again the noise of every cell an overflowing ADD call has written."""
    ends = failed.st[:, _ck.ST_CELL].copy()  # each chunk stopped here (cell not written)
    last = failed.c0 // calls.per_batch
    for bi in range(last + 1):
        b = calls.batch(bi)
        if bi == last:
            b.st[:, _ck.ST_END] = ends
        pend = _pending_arrays(b.st.shape[0], cap)
        streams = b.streams(calls.key_words)
        while True:
            with threads_for(b.st.shape[0], 1):
                kernel(streams, _sk.MODE_SUB, force, pend)
            for i, _, _ in _pending_rows(b, pend):
                if i in log:  # stored by the forward pass (else never written)
                    out[i] = int(out[i]) - int(log[i])
            if np.all(b.st[:, _ck.ST_CELL] >= b.st[:, _ck.ST_END]):
                break


def _int_store(out: np.ndarray, x: np.ndarray | None) -> Store:
    def store(i: int, v: int) -> None:
        if x is not None:
            v += int(x[i])
            if not -(1 << 63) <= v < (1 << 63):
                raise OverflowError(_OVERFLOW)
        out[i] = v

    return store


def grid_value(s: int, g: Fraction, sat: float) -> float:
    """The grid value ``s g`` (``g`` a power of two) rounded once to the nearest double, in
    integers (int / int true division is correctly rounded, subnormals included),
    saturated at ``±sat``."""
    try:
        r = (s * g.numerator) / g.denominator
    except OverflowError:
        r = math.inf if s > 0 else -math.inf
    return min(max(r, -sat), sat)


def _grid_store(out: np.ndarray, x: np.ndarray, g: float, sat: float) -> Store:
    """Store of MODE_GRID: out[i] = the exact grid value (rint(x[i]/g) + v) g rounded once
    (:func:`grid_value`), so a pending cell gets what the kernel's float path gives
    whenever that applies."""
    def store(i: int, v: int) -> None:
        # float(): a float32 x must not be divided in float32 (x / g could overflow)
        out[i] = grid_value(int(np.rint(float(x[i]) / g)) + int(v), Fraction(g), sat)

    return store


def run_discrete(gen: Any, kind: int, p: Param, n: int, out: np.ndarray,
                 x: np.ndarray | None = None, *, in_place: bool = False,
                 progress: Callable[[int], None] | None = None,
                 grid: tuple[float, float, float] | None = None) -> None:
    """Discrete Laplace (kind 0) / Gaussian (kind 1) noise into ``out`` (int64, 1-D),
    added to ``x`` (int64, 1-D) when given.  Raises OverflowError on int64 overflow;
    with ``in_place`` (``x is out``) the cells written so far are restored first.

    ``grid = (g, sat, lim)`` (``x`` and ``out`` float64 or float32, 1-D, ``out`` may be
    ``x``; a float32 ``out`` gets the float64 value rounded once more): the noise
    ``Z`` is not stored but fused into the grid output, ``out[i]`` = the exact grid value
    ``(rint(x[i]/g) + Z_i) g`` rounded once and saturated at ``±sat`` (``g`` a power of
    two), in one pass with no noise buffer.  ``x / g`` must be finite: with ``lim < 0``
    the caller checked it; with ``lim >= 0`` (``max double * g``, at most ``max double``)
    the kernels check ``|x| <= lim`` on every cell as they read it and the call raises
    :class:`UnfitInput` once every batch has run (so when it fails does not depend on
    where the unfit cell lies; ``out``, never ``x`` here, is then written but for the
    pending cells).

    Samplers: a scalar Gaussian sigma, or a scalar Laplace scale >= 1, uses the envelope
    table (dpfast.noise._envelope: ~2 words and no log per sample; with the refills in the
    kernel the extra word costs less than a log); a Laplace scale < 1 or per-cell scales
    the geometric inversion (~1 word and one log); per-cell sigmas use CKS20 Algorithm 3."""
    kind = int(kind)  # numba sees a plain int (an IntEnum would compile another kernel)
    sc = p.scalar
    if grid is not None:
        if x is None:
            raise ValueError("internal: grid mode needs x")
        g, sat, lim = grid
        mode = _sk.MODE_GRID
        if lim >= 0 and np.may_share_memory(x, out):  # the check would read outputs
            raise ValueError("internal: grid lim >= 0 needs an out that is not x")
        top = -1 if lim < 0 else _sk.unfit_top(lim, x.dtype)
        gp = (1.0 / g if g >= 2.0 ** -1022 else 0.0, float(g), float(sat), top)
        store = _grid_store(out, x, g, sat)
        undo = None
    else:
        mode = _sk.MODE_WRITE if x is None else _sk.MODE_ADD
        gp = _sk.NO_GRID
        store = _int_store(out, x)
        undo = out if in_place else None
    xin = out if x is None else x
    if sc is not None and (kind == GAUSSIAN or sc >= TABLE_MIN_LAPLACE_SCALE):
        tab = _envelope.table(Law(kind), sc)
        slow = _SlowStream(gen)
        table = tab.kernel_args

        def tkernel(streams: tuple, m: int, force: int, pend: tuple) -> None:
            _tk.run_table_kernel(tab.law_code, streams,
                             (out if m == _sk.MODE_SUB else xin, out, m, gp), table, force,
                             pend)

        def tfinish(i: int, ints: np.ndarray, u64s: np.ndarray) -> int:
            if ints[_sk.P_STATUS] == _sk.PENDING_GRID_BIG:
                return int(ints[_sk.P_A])
            return _envelope.finish_pending(slow.exact, tab, ints, u64s)

        _run_pending(gen, n, tab.words, tkernel, tfinish, store, mode=mode, undo=undo,
                     progress=progress)
        return
    slow = _SlowStream(gen)
    p2 = np.floor(p.values) + 1.0 if kind == GAUSSIAN else p.values
    params = (p.values, p2, p.stride)
    finisher = _finish_laplace if kind == LAPLACE else _finish_gaussian

    def kernel(streams: tuple, m: int, force: int, pend: tuple) -> None:
        _sk.run_discrete_kernel(kind, streams, (out if m == _sk.MODE_SUB else xin, out, m, gp),
                            params, force, pend)

    def finish(i: int, ints: np.ndarray, u64s: np.ndarray) -> int:
        if ints[_sk.P_STATUS] == _sk.PENDING_GRID_BIG:
            return int(ints[_sk.P_A])
        return finisher(slow.exact, int(ints[_sk.P_STATUS]), int(ints[_sk.P_SIGN]),
                        int(ints[_sk.P_A]), int(ints[_sk.P_B]), int(u64s[_sk.U_W]),
                        p.exact(i))

    _run_pending(gen, n, _words_per_cell(kind, p), kernel, finish, store, mode=mode,
                 undo=undo, progress=progress)


def discrete_laplace(gen: Any, scale: Any, size: Any) -> np.ndarray | int:
    parsed, pshape = parse_param(scale, "scale")
    return _generate(gen, LAPLACE, parsed, pshape, size)


def discrete_gaussian(gen: Any, sigma: Any, size: Any) -> np.ndarray | int:
    parsed, pshape = parse_param(sigma, "sigma")
    return _generate(gen, GAUSSIAN, parsed, pshape, size)


def _generate(gen: Any, kind: int, parsed: Any, pshape: tuple[int, ...],
              size: Any) -> np.ndarray | int:
    shape = out_shape(size, pshape)
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, np.int64)
    if n:
        run_discrete(gen, kind, make_param(parsed, shape), n, out)
    if size is None and not shape:
        return int(out[0])
    return out.reshape(shape)


def bernoulli_exp(gen: Any, gamma: Any, size: Any) -> np.ndarray | bool:
    parsed, pshape = parse_param(gamma, "gamma", allow_zero=True, upper=MAX_GAMMA)
    shape = out_shape(size, pshape)
    n = int(np.prod(shape, dtype=np.int64))
    out = np.empty(n, np.uint8)
    p = make_param(parsed, shape)
    slow = _SlowStream(gen)

    def kernel(streams: tuple, m: int, force: int, pend: tuple) -> None:
        _sk.bernoulli_exp_kernel(streams, out, p.values, p.stride, force, pend)

    def finish(i: int, ints: np.ndarray, u64s: np.ndarray) -> bool:
        return slow.exact.bern_exp_from(int(u64s[_sk.U_W]), p.exact(i), force=True)

    def store(i: int, v: bool) -> None:
        out[i] = v

    if n:
        _run_pending(gen, n, 1.0, kernel, finish, store)
    res = out.astype(bool)
    if size is None and not shape:
        return bool(res[0])
    return res.reshape(shape)
