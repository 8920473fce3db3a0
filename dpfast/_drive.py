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

from dpfast import _envelope, _exact, _native
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


@contextlib.contextmanager
def threads_for(nchunks: int) -> Iterator[None]:
    """Run a batch of one chunk on the calling thread: a parallel launch costs more than
    a small batch's work.  Output never depends on the thread count."""
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
    ids = np.arange(n, dtype=object) + first
    out = np.empty((n, 3), np.uint32)
    for i, s in enumerate(ids):
        out[i] = (s & 0xFFFFFFFF, (s >> 32) & 0xFFFFFFFF, (s >> 64) & 0xFFFFFFFF)
    return out


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


def batches(gen: Any, n: int, words_per_cell: float, chunk: int = CHUNK
            ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray, np.ndarray]]:
    """Yield (first cell, end cell, buf, st, nonces) for batches of chunks covering n cells.

    ``words_per_cell`` is the expected consumption; buffers get some headroom and the
    kernels refill from the chunk's own stream when they run dry.
    """
    nchunks = max(1, -(-n // chunk))
    first_stream = gen._allocate_streams(nchunks)
    cells = min(chunk, max(n, 1))
    # expected use + 5% + a little: the kernels refill (slower, in numba) if it runs dry
    words = int(cells * words_per_cell * 1.05) + 256
    words = -(-words // 8) * 8
    per_batch = max(1, BATCH_WORDS // words)
    key_words = gen._key_words
    for c0 in range(0, nchunks, per_batch):
        c1 = min(nchunks, c0 + per_batch)
        nonces = _nonces(first_stream + c0, c1 - c0)
        buf = fill_streams(key_words, nonces, words)
        st = np.zeros((c1 - c0, 5), np.int64)  # pos, next block, wrap, signs, nsigns
        st[:, 1] = words // 8
        yield c0 * chunk, min(n, c1 * chunk), buf, st, nonces


def check_wrap(st: np.ndarray) -> None:
    if np.any(st[:, 2]):
        raise RuntimeError("a chunk stream exhausted its 2**32 blocks; keystream is never reused")


def uniform_below(gen: Any, span: int, n: int) -> np.ndarray:
    """n exactly uniform uint64 values in [0, span), 1 <= span <= 2**64."""
    out = np.empty(n, np.uint64)
    s = np.uint64(span % (1 << 64))
    # expected words per draw: 1 / P(accept) <= 2; usually ~1
    for lo, hi, buf, st, nonces in batches(gen, n, 1.0):
        with threads_for(buf.shape[0]):
            _uk.uniform_below(buf, st, gen._key_words, nonces, CHUNK, hi - lo, s, out[lo:hi])
        check_wrap(st)
    return out


# ----------------------------------------------------------------------------- parameters
MAX_SCALE = 2.0 ** 50  # discrete scales beyond this would overflow int64 noise
MAX_GAMMA = 2.0 ** 60


class Param:
    """A positive rational parameter, scalar or per cell.

    ``values`` is float64 of length 1 (scalar, stride 0) or n; ``exact(i)`` returns the
    exact rational of cell i (a float is the binary rational it encodes).
    """

    def __init__(self, values: np.ndarray, exact_scalar: Fraction | None) -> None:
        self.values = values
        self.stride = 0 if values.size == 1 else 1
        self._exact_scalar = exact_scalar

    def exact(self, i: int) -> Fraction:
        if self._exact_scalar is not None:
            return self._exact_scalar
        return Fraction(float(self.values[i * self.stride]))


def parse_param(value: Any, name: str, *, allow_zero: bool = False,
                upper: float = MAX_SCALE) -> tuple[np.ndarray | Fraction, tuple[int, ...]]:
    """Validate a scale-like parameter.  Returns (Fraction or float64 array, shape)."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number or an array of numbers, got bool")
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
            return parse_param(arr.item(), name, allow_zero=allow_zero, upper=upper)
        arr = arr.astype(np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        low_ok = np.all(arr >= 0) if allow_zero else np.all(arr > 0)
        if not low_ok:
            raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}")
        if np.any(arr > upper):
            raise ValueError(f"{name} must be <= {upper:g}")
        return arr, arr.shape
    if exact < 0 or (exact == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")
    if exact > upper:
        raise ValueError(f"{name} must be <= {upper:g}, got {value}")
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
        self._gen = gen
        self._stream = gen._allocate_streams(1)
        self._word = 0
        self._exact: _exact.Exact | None = None

    def _fetch(self, n: int) -> np.ndarray:
        b0 = self._word // 8
        b1 = -(-(self._word + n) // 8)
        tmp = np.empty((b1 - b0) * 16, np.uint32)
        _native.chacha20_blocks(self._gen._key_words, _nonces(self._stream, 1)[0], b0, b1 - b0,
                                tmp)
        off = self._word - 8 * b0
        self._word += n
        return tmp.view("<u8")[off:off + n].copy()

    @property
    def exact(self) -> _exact.Exact:
        if self._exact is None:
            self._exact = _exact.Exact(_exact.WordSource(self._fetch))
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


def _run_pending(gen: Any, n: int, words_per_cell: float, n_int: int, n_u64: int,
                 call: Callable[..., None], finish: Callable[[int, list[int], list[int]], Any],
                 store: Callable[[int, Any], None]) -> None:
    """Common driver of the exact kernels.

    Runs ``call(buf, st, nonces, base, n, force, start, resume, pcount, ints, u64s, ovf)``
    over batches of chunks.  The kernel records each undecided cell in the pending arrays
    (``ints[0]`` = cell index, then ``n_int - 1`` int64 and ``n_u64`` uint64 state
    columns); each is finished exactly, in cell order, by ``finish(i, ints, u64s)`` and
    written by ``store(i, value)``.  A chunk whose pending list fills up stops and is
    resumed, on the same stream, after its pending cells are finished.
    """
    force = _exact.forced_mode()
    cap = CHUNK if force else 64
    for lo, hi, buf, st, nonces in batches(gen, n, words_per_cell):
        nch = buf.shape[0]
        start = lo + np.arange(nch, dtype=np.int64) * CHUNK
        ends = np.minimum(start + CHUNK, hi)
        resume = np.empty(nch, np.int64)
        pcount = np.zeros(nch, np.int64)
        ints = [np.empty((nch, cap), np.int64) for _ in range(n_int)]
        u64s = [np.empty((nch, cap), np.uint64) for _ in range(n_u64)]
        ovf = np.zeros(nch, np.int64)
        while True:
            with threads_for(nch):
                call(buf, st, nonces, lo, hi - lo, force, start, resume, pcount, ints, u64s,
                     ovf)
            check_wrap(st)
            if ovf.any():
                raise OverflowError(_OVERFLOW)
            for c in range(nch):
                for k in range(int(pcount[c])):
                    i = int(ints[0][c, k])
                    store(i, finish(i, [int(a[c, k]) for a in ints[1:]],
                                    [int(a[c, k]) for a in u64s]))
            pcount[:] = 0
            if np.all(resume >= ends):
                break
            start = resume.copy()


def _int_store(out: np.ndarray, x: np.ndarray | None) -> Callable[[int, int], None]:
    def store(i: int, v: int) -> None:
        if x is not None:
            v += int(x[i])
            if not -(1 << 63) <= v < (1 << 63):
                raise OverflowError(_OVERFLOW)
        out[i] = v

    return store


def run_discrete(gen: Any, kind: int, p: Param, n: int, out: np.ndarray,
                 x: np.ndarray | None = None) -> None:
    """Discrete Laplace (kind 0) / Gaussian (kind 1) noise into ``out`` (int64, 1-D),
    added to ``x`` (int64, 1-D) when given.  Raises OverflowError on int64 overflow.

    Samplers: a scalar Gaussian sigma, or a scalar Laplace scale >= 32, uses the envelope
    table (dpfast._envelope: ~2 words and no log per sample); a Laplace scale < 32 uses
    the geometric inversion (~1 word and one log: fewer bits, which scales better across
    cores); per-cell sigmas use CKS20 Algorithm 3."""
    sc = p._exact_scalar
    if sc is not None and (kind == 1 or sc >= TABLE_MIN_LAPLACE_SCALE):
        _run_table(gen, "laplace" if kind == 0 else "gauss", sc, n, out, x)
        return
    add = x is not None
    xin = x if add else out
    slow = _SlowStream(gen)
    p2 = np.floor(p.values) + 1.0 if kind == 1 else p.values
    key = gen._key_words
    finisher = _finish_laplace if kind == 0 else _finish_gaussian

    def call(buf, st, nonces, base, m, force, start, resume, pcount, ints, u64s, ovf):
        _sk.discrete_kernel(kind, buf, st, key, nonces, xin, out, add, base, m, CHUNK,
                            p.values, p2, p.stride, force, start, resume, pcount, *ints,
                            *u64s, ovf)

    def finish(i: int, state: list[int], u64: list[int]) -> int:
        return finisher(slow.exact, *state, u64[0], p.exact(i))

    _run_pending(gen, n, _words_per_cell(kind, p), 5, 1, call, finish, _int_store(out, x))


def _run_table(gen: Any, law: str, param: Fraction, n: int, out: np.ndarray,
               x: np.ndarray | None) -> None:
    """Discrete Laplace/Gaussian for a scalar parameter by the envelope table."""
    tab = _envelope.table(law, param)
    add = x is not None
    xin = x if add else out
    slow = _SlowStream(gen)
    key = gen._key_words

    def call(buf, st, nonces, base, m, force, start, resume, pcount, ints, u64s, ovf):
        _sk.table_kernel(tab.law_code, buf, st, key, nonces, xin, out, add, base, m, CHUNK,
                         tab.thresh, tab.alias, tab.f, tab.nb, tab.p, tab.cbits, tab.coef,
                         force, start, resume, pcount, *ints[:5], *u64s, ints[5], ovf)

    def finish(i: int, state: list[int], u64: list[int]) -> int:
        status, s, m, item, nbits = state
        if status == _sk.PENDING_ENV_TAIL:
            return _envelope.finish_tail(slow.exact, tab, s)
        u_m = u64[0] if nbits <= 64 - tab.p else (u64[0] << 64) | u64[1]
        return _envelope.finish_accept(slow.exact, tab, s, m, item, u_m, nbits)

    _run_pending(gen, n, tab.words, 6, 2, call, finish, _int_store(out, x))


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
    key = gen._key_words

    def call(buf, st, nonces, base, m, force, start, resume, pcount, ints, u64s, ovf):
        _sk.bernoulli_exp_kernel(buf, st, key, nonces, out, base, m, CHUNK, p.values,
                                 p.stride, force, start, resume, pcount, ints[0], u64s[0])

    def finish(i: int, state: list[int], u64: list[int]) -> bool:
        return slow.exact.bern_exp_from(u64[0], p.exact(i), force=True)

    def store(i: int, v: bool) -> None:
        out[i] = v

    _run_pending(gen, n, 1.0, 1, 1, call, finish, store)
    res = out.astype(bool)
    if size is None and not shape:
        return bool(res[0])
    return res.reshape(shape)
