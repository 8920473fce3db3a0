"""Drives the kernels: per-call streams, fixed-size chunks, bulk keystream, slow path.

Every call that consumes a data-dependent number of random words takes fresh stream ids
from the generator's key allocator, one per chunk of ``CHUNK`` cells.  Each chunk's
buffer is pre-filled in bulk by the C keystream (in parallel threads; cffi releases the
GIL) and the kernel refills it from the same stream in numba if it runs dry.  Chunks are
processed in batches so that the buffers stay small (in-place noising of 10^8 cells
needs only a few tens of MiB beyond the array).  Output depends only on the key and the
call sequence, never on the number of threads.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numba
import numpy as np

from dpfast import _envelope, _exact, _native, _parallel, _streams
from dpfast._kernels import chacha as _ck
from dpfast._kernels import samplers as _sk
from dpfast._kernels import uniform as _uk
from dpfast._validate import check_size

CHUNK = 1 << 16  # cells per chunk (fixed: part of the output definition for a key)
BATCH_WORDS = 1 << 21  # uint64 words of pre-filled keystream per batch (16 MiB)

_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _executor() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=max(1, numba.config.NUMBA_NUM_THREADS),
                thread_name_prefix="dpfast-keystream")
        return _pool


def _reset_after_fork() -> None:
    """A forked child inherits the pool object but not its worker threads (and maybe a
    held lock): start over with a fresh lock and no pool."""
    global _pool, _pool_lock
    _pool_lock = threading.Lock()
    _pool = None


_parallel.register_after_fork(_reset_after_fork)


@contextlib.contextmanager
def threads_for(nchunks: int) -> Iterator[None]:
    """Run a batch of one chunk on the calling thread: a parallel launch costs more than
    a small batch's work.  Output never depends on the thread count."""
    _parallel.check_fork_safe()
    if nchunks > 1:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _nonces(first: int, n: int) -> np.ndarray:
    return _streams.nonce_words(first, n)


def source_of(gen: Any) -> _streams.StreamSource:
    """The stream source of a generator (or a stream source itself)."""
    return gen.streams if hasattr(gen, "streams") else gen


def fill_streams(key_words: np.ndarray, nonces: np.ndarray, words: int) -> np.ndarray:
    """(n, words) uint64 keystream buffers, stream i from block 0, filled in parallel."""
    n = nonces.shape[0]
    nblocks = words // 8
    out = np.empty((n, words), np.uint64)
    counters = np.zeros(n, np.uint32)
    flat = out.reshape(-1).view(np.uint32)
    threads = min(numba.get_num_threads(), n)
    if threads <= 1 or n * words < (1 << 16):
        _native.chacha20_streams(key_words, nonces, counters, nblocks, flat)
        return out
    bounds = np.linspace(0, n, threads + 1).astype(int)
    per = nblocks * 16

    def work(a: int, b: int) -> None:
        _native.chacha20_streams(key_words, nonces[a:b].copy(), counters[a:b].copy(),
                                 nblocks, flat[a * per:b * per])

    futures = [_executor().submit(work, int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])
               if b > a]
    for f in futures:
        f.result()
    return out


class Batch:
    """One batch of chunks of a call: cells [lo, hi), chunks c0 .. c0 + nchunks - 1."""

    __slots__ = ("lo", "hi", "c0", "buf", "st", "nonces")

    def __init__(self, lo: int, hi: int, c0: int, buf: np.ndarray, st: np.ndarray,
                 nonces: np.ndarray) -> None:
        self.lo, self.hi, self.c0 = lo, hi, c0
        self.buf, self.st, self.nonces = buf, st, nonces

    def streams(self, key_words: np.ndarray) -> tuple[np.ndarray, ...]:
        """The kernels' ``streams`` tuple (see dpfast._kernels.samplers)."""
        return (self.buf, self.st, key_words, self.nonces)

    def as_tuple(self) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray]:
        return self.lo, self.hi, self.buf, self.st, self.nonces


class CallStreams:
    """The streams of one call: one fresh stream id per chunk of ``chunk`` cells,
    processed in batches whose keystream buffers are pre-filled in bulk.

    ``words_per_cell`` is the expected consumption; buffers get some headroom and the
    kernels refill from the chunk's own stream when they run dry.  A batch can be
    regenerated bit for bit (:meth:`batch`), which is how an overflowing in-place call is
    undone.
    """

    def __init__(self, gen: Any, n: int, words_per_cell: float, chunk: int = CHUNK) -> None:
        src = source_of(gen)
        self.key_words = src.key_words
        self.n = n
        self.chunk = chunk
        self.nchunks = max(1, -(-n // chunk))
        self.first = src.allocate(self.nchunks)
        cells = min(chunk, max(n, 1))
        # expected use + 5% + a little: the kernels refill (slower, in numba) if it runs dry
        words = int(cells * words_per_cell * 1.05) + 256
        self.words = -(-words // 8) * 8
        self.per_batch = max(1, BATCH_WORDS // self.words)

    def __len__(self) -> int:
        return -(-self.nchunks // self.per_batch)

    def batch(self, b: int) -> Batch:
        c0 = b * self.per_batch
        c1 = min(self.nchunks, c0 + self.per_batch)
        nonces = _nonces(self.first + c0, c1 - c0)
        buf = fill_streams(self.key_words, nonces, self.words)
        st = np.zeros((c1 - c0, _ck.ST_COLS), np.int64)
        st[:, _ck.ST_BLOCK] = self.words // 8
        starts = c0 * self.chunk + np.arange(c1 - c0, dtype=np.int64) * self.chunk
        st[:, _ck.ST_CELL] = starts
        st[:, _ck.ST_END] = np.minimum(starts + self.chunk, self.n)
        return Batch(c0 * self.chunk, min(self.n, c1 * self.chunk), c0, buf, st, nonces)

    def __iter__(self) -> Iterator[Batch]:
        for b in range(len(self)):
            yield self.batch(b)


def batches(gen: Any, n: int, words_per_cell: float, chunk: int = CHUNK
            ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Yield (first cell, end cell, buf, st, nonces) for batches of chunks covering n cells
    (the tuple form of :class:`CallStreams`, used by the local and selection drivers)."""
    for b in CallStreams(gen, n, words_per_cell, chunk):
        yield b.as_tuple()


def check_wrap(st: np.ndarray) -> None:
    if np.any(st[:, _ck.ST_WRAP]):  # unreachable: 2^64 blocks of one chunk
        raise RuntimeError("a chunk stream exhausted its 2**64 blocks; keystream is never "
                           "reused")


def uniform_below(gen: Any, span: int, n: int) -> np.ndarray:
    """n exactly uniform uint64 values in [0, span), 1 <= span <= 2**64."""
    out = np.empty(n, np.uint64)
    s = np.uint64(span % (1 << 64))
    calls = CallStreams(gen, n, 1.0)  # expected words per draw: 1 / P(accept) <= 2
    for b in calls:
        with threads_for(b.buf.shape[0]):
            _uk.uniform_below(b.buf, b.st, calls.key_words, b.nonces, CHUNK, b.hi - b.lo, s,
                              out[b.lo:b.hi])
        check_wrap(b.st)
    return out


# ----------------------------------------------------------------------------- parameters
MIN_SCALE = 2.0 ** -100  # discrete scales / sigmas below this: ValueError (documented)
MAX_SCALE = 2.0 ** 50  # discrete scales beyond this would overflow int64 noise
MAX_GAMMA = 2.0 ** 60


def _bound_text(v: float) -> str:
    e = math.frexp(v)[1] - 1
    return f"2**{e}" if v == 2.0 ** e else f"{v:g}"


class Param:
    """A positive rational parameter, scalar or per cell.

    ``values`` is float64 of length 1 (scalar, stride 0) or n; ``exact(i)`` returns the
    exact rational of cell i (a float is the binary rational it encodes).
    """

    def __init__(self, values: np.ndarray, exact_scalar: Fraction | None) -> None:
        self.values = values
        self.stride = 0 if values.size == 1 else 1
        self._exact_scalar = exact_scalar

    @property
    def scalar(self) -> Fraction | None:
        """The exact value of a scalar parameter (None when given per cell)."""
        return self._exact_scalar

    def exact(self, i: int) -> Fraction:
        if self._exact_scalar is not None:
            return self._exact_scalar
        return Fraction(float(self.values[i * self.stride]))


def parse_param(value: Any, name: str, *, allow_zero: bool = False,
                lower: float = MIN_SCALE, upper: float = MAX_SCALE
                ) -> tuple[np.ndarray | Fraction, tuple[int, ...]]:
    """Validate a scale-like parameter against its supported range.

    Positive parameters must lie in ``[lower, upper]``; with ``allow_zero`` the range is
    ``{0} ∪ [0, upper]``.  Returns (Fraction or float64 array, shape).
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number or an array of numbers, got bool")
    lo = 0.0 if allow_zero else lower
    rng_text = (f"in [0, {_bound_text(upper)}]" if allow_zero else
                f"in the supported range [{_bound_text(lo)}, {_bound_text(upper)}]")
    if isinstance(value, Fraction):
        exact = value
    elif isinstance(value, (int, np.integer)):
        exact = Fraction(int(value))
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
        exact = Fraction(float(value))
    else:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf" or arr.dtype == np.bool_:
            raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
        if arr.ndim == 0:
            return parse_param(arr.item(), name, allow_zero=allow_zero, lower=lower,
                               upper=upper)
        arr = arr.astype(np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        low_ok = np.all(arr >= 0) if allow_zero else np.all(arr > 0)
        if not low_ok:
            raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}")
        if np.any(arr > upper) or (not allow_zero and np.any(arr < lo)):
            raise ValueError(f"{name} must be {rng_text}")
        return arr, arr.shape
    if exact < 0 or (exact == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")
    if exact > upper or (exact != 0 and exact < lo):
        raise ValueError(f"{name} must be {rng_text}, got {value}")
    return exact, ()


def make_param(parsed: np.ndarray | Fraction, shape: tuple[int, ...]) -> Param:
    if isinstance(parsed, Fraction):
        return Param(np.array([float(parsed)]), parsed)
    return Param(np.ascontiguousarray(np.broadcast_to(parsed, shape)).reshape(-1), None)


def out_shape(size: Any, pshape: tuple[int, ...]) -> tuple[int, ...]:
    if size is None:
        return pshape
    shape = check_size(size)
    try:
        if np.broadcast_shapes(shape, pshape) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"parameter shape {pshape} does not broadcast to size {shape}") from None
    return shape


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
    t = float(np.max(p.values)) if kind == 0 else math.floor(float(np.max(p.values))) + 1.0
    geo = 2.07 if t >= 32.0 else 1.0  # H inversion + L (one word, 1/16 a second; 15/16 ok)
    lap = (geo + 1 / 64) / (1 - (1 - math.exp(-1 / t)) / 2)  # sign rejection of -0
    return lap if kind == 0 else (lap + 1.0) / 0.5  # CKS20 acceptance >= ~0.54


_OVERFLOW = "noisy value does not fit the integer dtype of x"
TABLE_MIN_LAPLACE_SCALE = 32

# Kernel = callable(streams, mode, force, pend) for one batch; Finish = callable(cell,
# ints row, u64s row) -> value (exact continuation); Store = callable(cell, value).
Kernel = Callable[[tuple, int, int, tuple], None]
Finish = Callable[[int, np.ndarray, np.ndarray], Any]
Store = Callable[[int, Any], None]


def _pending_rows(b: Batch, pend: tuple[np.ndarray, np.ndarray]
                  ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    ints, u64s = pend
    for c in range(b.st.shape[0]):
        for k in range(int(b.st[c, _ck.ST_PENDING])):
            yield int(ints[c, k, _sk.P_CELL]), ints[c, k], u64s[c, k]
    b.st[:, _ck.ST_PENDING] = 0


def _run_pending(gen: Any, n: int, words_per_cell: float, kernel: Kernel, finish: Finish,
                 store: Store, *, mode: int = _sk.MODE_WRITE,
                 undo: np.ndarray | None = None) -> None:
    """Common driver of the exact kernels.

    Runs ``kernel`` over the batches of chunks of a call.  The kernel records each
    undecided cell in the pending arrays; each is finished exactly, in cell order of its
    chunk, by ``finish`` and written by ``store``.  A chunk whose pending list fills up
    stops and is resumed, on the same stream, after its pending cells are finished.

    With ``undo`` (the ``out`` array of an in-place ``mode=ADD`` call) an overflow is
    undone before ``OverflowError`` propagates: the call's batches are regenerated bit for
    bit and every cell written so far gets its noise subtracted again, so ``out`` is
    left exactly as it was.
    """
    force = _exact.forced_mode()
    cap = CHUNK if force else 64
    calls = CallStreams(gen, n, words_per_cell)
    log: dict[int, Any] | None = {} if undo is not None else None
    b = None
    try:
        for b in calls:
            pend = _pending_arrays(b.st.shape[0], cap)
            streams = b.streams(calls.key_words)
            while True:
                with threads_for(b.st.shape[0]):
                    kernel(streams, mode, force, pend)
                check_wrap(b.st)
                if b.st[:, _ck.ST_OVERFLOW].any():
                    raise OverflowError(_OVERFLOW)
                for i, ints, u64s in _pending_rows(b, pend):
                    v = finish(i, ints, u64s)
                    store(i, v)
                    if log is not None:
                        log[i] = v
                if np.all(b.st[:, _ck.ST_CELL] >= b.st[:, _ck.ST_END]):
                    break
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
            with threads_for(b.st.shape[0]):
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


def run_discrete(gen: Any, kind: int, p: Param, n: int, out: np.ndarray,
                 x: np.ndarray | None = None, *, in_place: bool = False) -> None:
    """Discrete Laplace (kind 0) / Gaussian (kind 1) noise into ``out`` (int64, 1-D),
    added to ``x`` (int64, 1-D) when given.  Raises OverflowError on int64 overflow;
    with ``in_place`` (``x is out``) the cells written so far are restored first.

    Samplers: a scalar Gaussian sigma, or a scalar Laplace scale >= 32, uses the envelope
    table (dpfast._envelope: ~2 words and no log per sample); a Laplace scale < 32 uses
    the geometric inversion (~1 word and one log: fewer bits, which scales better across
    cores); per-cell sigmas use CKS20 Algorithm 3."""
    sc = p.scalar
    mode = _sk.MODE_WRITE if x is None else _sk.MODE_ADD
    undo = out if in_place else None
    xin = out if x is None else x
    store = _int_store(out, x)
    if sc is not None and (kind == 1 or sc >= TABLE_MIN_LAPLACE_SCALE):
        tab = _envelope.table("laplace" if kind == 0 else "gauss", sc)
        slow = _SlowStream(gen)
        table = tab.kernel_args

        def tkernel(streams: tuple, m: int, force: int, pend: tuple) -> None:
            _sk.table_kernel(tab.law_code, streams, (out if m == _sk.MODE_SUB else xin, out, m),
                             table, force, pend)

        def tfinish(i: int, ints: np.ndarray, u64s: np.ndarray) -> int:
            return _envelope.finish_pending(slow.exact, tab, ints, u64s)

        _run_pending(gen, n, tab.words, tkernel, tfinish, store, mode=mode, undo=undo)
        return
    slow = _SlowStream(gen)
    p2 = np.floor(p.values) + 1.0 if kind == 1 else p.values
    params = (p.values, p2, p.stride)
    finisher = _finish_laplace if kind == 0 else _finish_gaussian

    def kernel(streams: tuple, m: int, force: int, pend: tuple) -> None:
        _sk.discrete_kernel(kind, streams, (out if m == _sk.MODE_SUB else xin, out, m),
                            params, force, pend)

    def finish(i: int, ints: np.ndarray, u64s: np.ndarray) -> int:
        return finisher(slow.exact, int(ints[_sk.P_STATUS]), int(ints[_sk.P_SIGN]),
                        int(ints[_sk.P_A]), int(ints[_sk.P_B]), int(u64s[_sk.U_W]),
                        p.exact(i))

    _run_pending(gen, n, _words_per_cell(kind, p), kernel, finish, store, mode=mode,
                 undo=undo)


def discrete_laplace(gen: Any, scale: Any, size: Any) -> np.ndarray | int:
    parsed, pshape = parse_param(scale, "scale")
    return _generate(gen, 0, parsed, pshape, size)


def discrete_gaussian(gen: Any, sigma: Any, size: Any) -> np.ndarray | int:
    parsed, pshape = parse_param(sigma, "sigma")
    return _generate(gen, 1, parsed, pshape, size)


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
