"""Exact samplers' fast paths: float decisions certified by rigorous error bounds.

Every decision compares a uniform U, known from 64 random bits as
U in [w/2^64, (w+1)/2^64), with a threshold computed in floating point.  The decision is
taken only when the float error bound cannot change it; otherwise the cell is recorded
as *pending* with the bits it drew and finished exactly in Python
(``dpfast.noise._exact``).
Nothing is resampled.

Geometric with P(G >= k) = exp(-k/t):
  * t < 32: inversion G = floor(-t ln U).
  * t >= 32: G = 2^J H + L with J = floor(log2 t) - 4, H geometric with scale t/2^J in
    [16, 32) (inversion) and L on [0, 2^J) with P(L = l) ∝ exp(-l/t), independent of H
    (the pmf factorizes); L by uniform proposal accepted with probability exp(-l/t),
    which is >= 15/16, so U >= 1/16 accepts without evaluating anything (l and the
    first 4 bits of U share one 64-bit word).
Discrete Laplace: sign bit + geometric, rejecting (negative, 0) [CKS20 Alg. 2 structure].
Discrete Gaussian: CKS20 Alg. 3: discrete Laplace proposal of scale floor(sigma) + 1,
accepted with probability exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)).

Error model: glibc's log, exp and expm1 are accurate to about 1 ulp; every float
threshold below is widened by a relative 2^-48 (16x that, plus input roundings).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from numba.extending import overload

from dpfast._kernels._launch import NO_CLAIM, claimed, next_chunk
from dpfast._kernels.chacha import (
    ST_CELL,
    ST_END,
    ST_NSIGNS,
    ST_OVERFLOW,
    ST_PENDING,
    ST_POS,
    ST_SIGNS,
    next_u64,
)

REL = 2.0 ** -48
INV64 = 2.0 ** -64
INV68 = 2.0 ** -68
TOP4 = np.uint64(1 << 60)
BIG_M = np.uint64(1 << 32)
# --- the driver-kernel contract ------------------------------------------------------
# A kernel call takes few arguments, each a tuple the driver builds once per call:
#   streams = (buf, st, key, nonces)   the chunks' bit sources (dpfast._kernels.chacha);
#                                      st also holds each chunk's next cell / end /
#                                      pending count / overflow flag (ST_* columns)
#   io      = (x, out, mode, grid)     mode: WRITE out[i] = v; ADD out[i] = x[i] + v
#                                      (checked: on overflow the chunk stops before i and
#                                      sets ST_OVERFLOW); SUB out[i] -= v (undo of ADD);
#                                      int64 x and out.  GRID (float64 x and out, grid =
#                                      (1/g or 0, g, sat, top)): out[i] = the exact grid
#                                      value (rint(x[i]/g) + v) g rounded once, saturated
#                                      at +-sat; a cell with |v| >= 2^53 (whose float64(v)
#                                      would round) becomes pending with status
#                                      PENDING_GRID_BIG and v in P_A.  top >= 0 (an int):
#                                      every cell a chunk passes is checked (unfit: |x| <=
#                                      lim, so x is finite and x/g too); one that is not
#                                      sets ST_OVERFLOW to UNFIT (the chunk goes on: the
#                                      output is not x).  Other modes pass NO_GRID.
#   pend    = (ints, u64s)             pending cells: ints[c, k, P_*], u64s[c, k, U_*]
# A chunk runs from st[c, ST_CELL] to st[c, ST_END] and stops early when its pending list
# (capacity ints.shape[1]) is full; the driver finishes pending cells exactly and resumes.
MODE_WRITE = 0
MODE_ADD = 1
MODE_SUB = 2
MODE_GRID = 3
NO_GRID = (0.0, 1.0, 0.0, -1)  # the grid element of io for the integer modes
UNFIT = 2  # ST_OVERFLOW of a chunk that passed an unfit cell (MODE_GRID with top >= 0)
GRID_EXACT = 1 << 53  # |v| below this converts to float64 exactly

P_CELL = 0  # ints columns of a pending cell
P_STATUS = 1
P_SIGN = 2
P_A = 3  # geometric / CKS20: h; table: m
P_B = 4  # geometric / CKS20: l; table: item
P_BITS = 5  # table: bits of U known
P_COLS = 6
U_W = 0  # u64s columns: the uniform's first word (table: its first 64 - p bits)
U_W2 = 1  # table: the second word of the refinement
U_COLS = 2

# pending statuses
PENDING_INVERSION = 1
PENDING_REJECTION = 2
PENDING_BERNOULLI = 3
PENDING_ENV_ACCEPT = 4
PENDING_ENV_TAIL = 5
PENDING_GRID_BIG = 6  # MODE_GRID: the value is known (P_A) but |v| >= 2^53

# force_exact modes (dpfast.noise._exact.ForceMode): which step is declared undecided
FORCE_NONE = 0
FORCE_INVERSION = 1
FORCE_REJECTION = 2
FORCE_ACCEPT = 3
FORCE_GENERAL = 4  # table kernel only: no fast loop, every proposal in the general one (tests)
FORCE_SCALAR = 5  # table kernel only: the common case on its step-by-step C loop (tests)
FORCE_PORTABLE = 6  # table kernel only: the common case's direct table without AVX2 (tests)


@nb.njit(cache=True, _nrt=False, inline="always")
def split_scale(t):
    """(J, t/2^J): J = 0 for t < 32, else floor(log2 t) - 4."""
    if t < 32.0:
        return 0, t
    _, e = math.frexp(t)
    j = e - 5
    return j, math.ldexp(t, -j)


@nb.njit(cache=True, _nrt=False, inline="always")
def geo_inv(buf, pos, st, key, nonce, t, forced):
    """(G or -1 if undecided, pos, bits) for G = floor(-t ln U).

    U lies in [m, m+1) / 2^64; the certificate covers that interval (ln((m+1)/m) <=
    1/m), the rounding of m + 1/2 to a double, log's error and the product's rounding.
    For m >= 2^32 the interval term is bounded by the constant 2^-33 (no division)."""
    m, pos = next_u64(buf, pos, st, key, nonce)
    if forced or m < BIG_M:
        return geo_inv_small(m, t, forced), pos, m
    y = -t * math.log((np.float64(m) + 0.5) * INV64)
    err = (t * 2.0 ** -32 + y * REL) * 1.01
    a = math.floor(y - err)
    if y + err >= a + 1.0:
        return -1, pos, m
    return np.int64(a), pos, m


@nb.njit(cache=True, _nrt=False)
def geo_inv_small(m, t, forced):
    if forced or m == 0:
        return -1
    mf = np.float64(m)
    y = -t * math.log((mf + 0.5) * INV64)
    err = (t * (0.5 / mf + 2.0 ** -50) + y * REL) * 1.01
    a = math.floor(y - err)
    if y + err >= a + 1.0:
        return -1
    return np.int64(a)


@nb.njit(cache=True, _nrt=False, inline="always")
def accept_l(l, w, t, forced):
    """Accept proposal l with probability exp(-l/t) when U < 2^-4 is known as
    U in [w, w+1) / 2^68: returns 1, 0 or -1 (undecided)."""
    if forced:
        return -1
    d = -math.expm1(-np.float64(l) / t)
    wf = np.float64(w) * INV68
    if wf * (1.0 - 2.0 ** -52) >= d * (1.0 + 2.0 ** -46):
        return 1
    if wf * (1.0 + 2.0 ** -52) + INV68 <= d * (1.0 - 2.0 ** -46):
        return 0
    return -1


@nb.njit(cache=True, _nrt=False, inline="always")
def bern_exp_decide(g, eg, w):
    """Decide U < exp(-g') where |g' - g| <= eg: 1, 0 or -1 (undecided)."""
    if eg > 2.0 ** -20:
        return -1
    wf = np.float64(w) * INV64
    u_lo = wf * (1.0 - 2.0 ** -52)
    u_hi = wf * (1.0 + 2.0 ** -52) + INV64
    gh = g + eg
    if gh < 1.0:
        # squeeze without exp: 1 - G + G^2/2 - G^3/6 <= e^-G <= 1 - G + G^2/2 (G >= 0);
        # the polynomials' rounding error is far below the 2^-50 margin
        if u_hi <= 1.0 - gh * (1.0 - gh * (0.5 - gh * (1.0 / 6.0))) - 2.0 ** -50:
            return 1
        gl = max(g - eg, 0.0)
        if u_lo >= 1.0 - gl * (1.0 - 0.5 * gl) + 2.0 ** -50:
            return 0
    e = math.exp(-g)
    err = e * (eg * (1.0 + eg) * 1.01 + REL) + 2.0 ** -1070
    if u_hi <= e - err:
        return 1
    if u_lo >= e + err:
        return 0
    return -1


@nb.njit(cache=True, _nrt=False, inline="always")
def dlap_cell(buf, pos, st, key, nonce, t, j, th, force, signs, nsigns):
    """One discrete Laplace sample (j, th = split_scale(t); signs: bit reservoir).

    Returns (value, pos, status, sign, h, l, bits, signs, nsigns): status 0 = done,
    else pending at an inversion (1) or a rejection step (2) with the state needed to
    finish exactly.
    """
    while True:
        if nsigns == 0:
            signs, pos = next_u64(buf, pos, st, key, nonce)
            nsigns = 64
        s = np.int64(signs & np.uint64(1))
        signs = signs >> np.uint64(1)
        nsigns -= 1
        if j == 0:
            g, pos, m = geo_inv(buf, pos, st, key, nonce, t, force == FORCE_INVERSION)
            if g < 0:
                return 0, pos, PENDING_INVERSION, s, 0, 0, m, signs, nsigns
        else:
            h, pos, m = geo_inv(buf, pos, st, key, nonce, th, force == FORCE_INVERSION)
            if h < 0:
                return 0, pos, PENDING_INVERSION, s, 0, 0, m, signs, nsigns
            first = True
            while True:
                # one word: l = top J bits; the next 4 bits start U.  U >= 1/16 accepts
                # at once (exp(-l/t) >= 15/16); otherwise U = w / 2^68 with a fresh w.
                x, pos = next_u64(buf, pos, st, key, nonce)
                l = np.int64(x >> np.uint64(64 - j))
                if ((x << np.uint64(j)) >> np.uint64(60)) != np.uint64(0):
                    break
                w, pos = next_u64(buf, pos, st, key, nonce)
                a = accept_l(l, w, t, force == FORCE_REJECTION and first)
                first = False
                if a == 1:
                    break
                if a < 0:
                    return 0, pos, PENDING_REJECTION, s, h, l, w, signs, nsigns
            g = (h << j) + l
        if (g | (s ^ 1)) == 0:  # (negative, 0), without a branch on the random sign
            continue
        # -g if s else g, without a branch on the random sign
        return (g ^ -s) + s, pos, 0, s, 0, 0, np.uint64(0), signs, nsigns


@nb.njit(cache=True, _nrt=False, inline="always")
def dgauss_cell(buf, pos, st, key, nonce, sigma, tg, j, th, force, signs, nsigns):
    """One discrete Gaussian sample (CKS20 Alg. 3); pending states as dlap_cell, plus
    status 3 = pending Bernoulli acceptance of proposal ``h``.  (j, th) split tg."""
    s2 = sigma * sigma
    b = s2 / tg
    inv_a2 = 0.5 / s2  # rounding error (relative 2^-52) is inside the REL margin below
    while True:
        y, pos, status, s, h, l, w, signs, nsigns = dlap_cell(buf, pos, st, key, nonce, tg, j,
                                                               th, force, signs, nsigns)
        if status != 0:
            return 0, pos, status, s, h, l, w, signs, nsigns
        w, pos = next_u64(buf, pos, st, key, nonce)
        if force == FORCE_ACCEPT:
            return 0, pos, PENDING_BERNOULLI, 0, y, 0, w, signs, nsigns
        d = abs(np.float64(y)) - b
        ed = (b + abs(d)) * 2.0 ** -49
        g = d * d * inv_a2
        eg = (2.0 * abs(d) * ed + ed * ed) * inv_a2 * 1.01 + g * REL + 2.0 ** -1060
        a = bern_exp_decide(g, eg, w)
        if a == 1:
            return y, pos, 0, 0, 0, 0, np.uint64(0), signs, nsigns
        if a < 0:
            return 0, pos, PENDING_BERNOULLI, 0, y, 0, w, signs, nsigns


def _store(x, out, mode, grid, i, v):  # pragma: no cover - numba only (overload below)
    """Write cell i (see the contract above): 1 written, 0 overflow (nothing written),
    -1 (MODE_GRID) |v| too large for the float path (nothing written)."""
    raise NotImplementedError("_store is compiled by numba only")


@overload(_store, inline="always", jit_options={"_nrt": False})
def _store_impl(x, out, mode, grid, i, v):
    if isinstance(out.dtype, nb.types.Float):
        def grid_store(x, out, mode, grid, i, v):
            if v >= GRID_EXACT or v <= -GRID_EXACT:
                return -1
            ginv, g, sat, _ = grid
            xi = x[i]
            # rint(x/g) g and v g are exact doubles (g a power of two, |v| < 2^53), so one
            # correctly rounded addition gives the exact grid value rounded once; x/g =
            # x (1/g) exactly when 1/g is a normal double (ginv != 0)
            q = np.rint(xi * ginv) if ginv != 0.0 else np.rint(xi / g)
            out[i] = min(max(q * g + np.float64(v) * g, -sat), sat)
            return 1

        return grid_store

    def int_store(x, out, mode, grid, i, v):
        if mode == MODE_ADD:
            xi = x[i]
            # wrapping add in uint64 (signed overflow would be undefined behaviour for
            # LLVM), then the two's-complement overflow test
            r = np.int64(np.uint64(xi) + np.uint64(v))
            if ((xi ^ r) & (v ^ r)) < 0:
                return 0
            out[i] = r
        elif mode == MODE_SUB:
            out[i] = np.int64(np.uint64(out[i]) - np.uint64(v))
        else:
            out[i] = v
        return 1

    return int_store


def abs_bits_max(x, a, b):  # pragma: no cover - numba only (overload below)
    """The largest bit pattern of ``|x|`` over ``x[a:b]`` (float64 or float32; 0 if
    empty), as a uint64: for non-negative floats the order of the bits is that of the
    values, with infinity and NaN above every finite one, so this is the pattern of
    ``max |x|`` (at least infinity's when ``x`` holds a NaN or an infinity).  One unsigned
    max over the bits: vectorised, no branch.  Integer ``x`` (the integer modes, compiled
    but never checked): 0."""
    raise NotImplementedError("abs_bits_max is compiled by numba only")


@overload(abs_bits_max, jit_options={"_nrt": False})
def _abs_bits_max_impl(x, a, b):
    if isinstance(x.dtype, nb.types.Float) and x.dtype.bitwidth in (32, 64):
        ut = np.uint64 if x.dtype.bitwidth == 64 else np.uint32  # x's bits
        absmask = ut(np.iinfo(ut).max >> 1)  # all but the sign bit

        def floats(x, a, b):
            w = x[a:b].view(ut)
            m = ut(0)
            for j in range(w.size):
                m = max(m, w[j] & absmask)
            return np.uint64(m)

        return floats

    def integers(x, a, b):
        return np.uint64(0)

    return integers


@nb.njit(cache=True, _nrt=False, inline="always")
def unfit(x, a, b, top):
    """Whether a cell of ``x[a:b]`` is not ``|x| <= lim``: a NaN, an infinity, or beyond
    ``lim`` (with ``lim = max double * g``: ``x / g`` overflows); ``top`` >= 0, the bits of
    ``lim`` in x's format rounded down (:func:`unfit_top`).  A kernel checks the cells it
    just read while they are in cache (:func:`abs_bits_max`)."""
    return abs_bits_max(x, a, b) > np.uint64(top)


def unfit_top(lim: float, dtype: np.dtype) -> int:
    """``unfit``'s ``top`` for ``lim >= 0`` and x of ``dtype``: the bits of the largest
    float64 / float32 at most ``lim``."""
    if dtype == np.float32:
        f = np.float32(min(lim, float(np.finfo(np.float32).max)))
        if float(f) > lim:
            f = np.nextafter(f, np.float32(0))
        return int(np.array([f], np.float32).view(np.uint32)[0])
    return int(np.array([lim], np.float64).view(np.uint64)[0])


@nb.njit(cache=True, _nrt=False, inline="always")
def store_either(x, out, fx, fout, mode, grid, i, v):
    """:func:`_store` of a kernel compiled once for both stores (``io = (x, out, fx, fout,
    mode, grid)``: int64 ``x``/``out`` for the integer modes, float64 ``fx``/``fout`` for
    MODE_GRID; the other pair empty, see :func:`either_io`)."""
    if mode != MODE_GRID:
        return _store(x, out, mode, grid, i, v)
    return _store(fx, fout, mode, grid, i, v)


_NO_INT = np.zeros(0, np.int64)
_NO_FLOAT = np.zeros(0, np.float64)


def either_io(io):
    """The ``io`` of :func:`store_either` from the contract's ``(x, out, mode, grid)``
    (unchanged when it is one already): one kernel signature for the int64 and the
    float64 output, so a process that draws both compiles the kernel once."""
    if len(io) == 6:
        return io
    x, out, mode, grid = io
    if mode == MODE_GRID:
        return (_NO_INT, _NO_INT, x, out, mode, grid)
    return (x, out, _NO_FLOAT, _NO_FLOAT, mode, grid)


@nb.njit(cache=True, nogil=True, _nrt=False)
def discrete_kernel_serial(kind, streams, io, params, force, pend, claim):
    """Discrete Laplace (kind 0) / Gaussian (kind 1, CKS20 Alg. 3) noise, per chunk:
    every chunk in order for ``claim = NO_CLAIM``, else the chunks this thread claims
    (:func:`dpfast._kernels._launch.next_chunk`; :data:`discrete_kernel` runs it so on
    several threads).

    ``params = (p1, p2, pstride)``: kind 0 uses the scale p2[i]; kind 1 the sigma p1[i]
    and proposal scale p2[i] = floor(sigma) + 1; indexed ``i * pstride`` (0: scalar).
    Pending cells: status, sign, h, l in ints; the undecided word in u64s[..., U_W].
    """
    buf, st, key, nonces = streams
    x, out, mode, grid = io
    p1, p2, pstride = params
    ints, u64s = pend
    cap = ints.shape[1]
    nch = buf.shape[0]
    c = next_chunk(claim, -1)
    while c < nch:
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        signs = np.uint64(s_[ST_SIGNS])
        nsigns = s_[ST_NSIGNS]
        k = s_[ST_PENDING]
        i = s_[ST_CELL]
        hi = s_[ST_END]
        t = p2[0]
        sigma = p1[0]
        j, th = split_scale(t)
        i0 = i
        while i < hi:
            if k == cap:
                break
            if pstride != 0:
                t = p2[i]
                sigma = p1[i]
                j, th = split_scale(t)
            if kind == 0:
                v, pos, status, sg, h, l, w, signs, nsigns = dlap_cell(
                    b, pos, s_, key, nonce, t, j, th, force, signs, nsigns)
            else:
                v, pos, status, sg, h, l, w, signs, nsigns = dgauss_cell(
                    b, pos, s_, key, nonce, sigma, t, j, th, force, signs, nsigns)
            if status == 0:
                r = _store(x, out, mode, grid, i, v)
                if r == 0:
                    s_[ST_OVERFLOW] = 1
                    break
                if r < 0:
                    status = PENDING_GRID_BIG
                    h = v
            if status != 0:
                ints[c, k, P_CELL] = i
                ints[c, k, P_STATUS] = status
                ints[c, k, P_SIGN] = sg
                ints[c, k, P_A] = h
                ints[c, k, P_B] = l
                u64s[c, k, U_W] = w
                k += 1
            i += 1
        if mode == MODE_GRID and grid[3] >= 0 and unfit(x, i0, i, grid[3]):
            s_[ST_OVERFLOW] = UNFIT
        s_[ST_CELL] = i
        s_[ST_PENDING] = k
        s_[ST_POS] = pos
        s_[ST_SIGNS] = np.int64(signs)
        s_[ST_NSIGNS] = nsigns
        c = next_chunk(claim, c)


def chunk_count(streams_at):
    """The number of chunks of a sampler kernel's call, its ``streams`` argument at
    position ``streams_at`` (for :func:`dpfast._kernels._launch.claimed`)."""
    def count(args):
        return args[streams_at][0].shape[0]
    return count


#: :func:`discrete_kernel_serial` over the chunks on ``numba.get_num_threads()`` threads,
#: each claiming chunks as it becomes free (the chunks are independent: the same output)
discrete_kernel = claimed(discrete_kernel_serial, chunk_count(1))

#: a launch over at most this many cells in all runs on the calling thread alone
SERIAL_CELLS = 1 << 16


def serial_launch(streams):
    """Whether a sampler launch is small enough for the calling thread alone: one chunk,
    or few cells over all its chunks (addressed noise: one chunk per key of a small
    table).  The chunks are independent, so the output is the same either way."""
    st = streams[1]
    if st.shape[0] <= 1:
        return True
    return int((st[:, ST_END] - st[:, ST_CELL]).sum()) <= SERIAL_CELLS


def run_discrete_kernel(kind, streams, io, params, force, pend):
    """:data:`discrete_kernel`, or for a small launch (:func:`serial_launch`: nothing
    worth a thread) :func:`discrete_kernel_serial` on the calling thread; one compilation
    either way."""
    if serial_launch(streams):
        discrete_kernel_serial(kind, streams, io, params, force, pend, NO_CLAIM)
    else:
        discrete_kernel(kind, streams, io, params, force, pend)


@nb.njit(cache=True, nogil=True, _nrt=False)
def bernoulli_exp_kernel_serial(streams, out, gam, pstride, force, pend, claim):
    """out[i] = 1{U_i < exp(-gam[i * pstride])}; undecided cells become pending with
    their word (u64s[..., U_W]).  Chunks as :func:`discrete_kernel_serial`
    (:data:`bernoulli_exp_kernel` runs it on several threads)."""
    buf, st, key, nonces = streams
    ints, u64s = pend
    cap = ints.shape[1]
    nch = buf.shape[0]
    c = next_chunk(claim, -1)
    while c < nch:
        b = buf[c]
        s_ = st[c]
        nonce = nonces[c]
        pos = s_[ST_POS]
        k = s_[ST_PENDING]
        i = s_[ST_CELL]
        hi = s_[ST_END]
        g = gam[0]
        while i < hi:
            if k == cap:
                break
            w, pos = next_u64(b, pos, s_, key, nonce)
            if pstride != 0:
                g = gam[i]
            a = -1
            if force != FORCE_ACCEPT:
                a = bern_exp_decide(g, g * 2.0 ** -50, w)
            if a >= 0:
                out[i] = a
            else:
                ints[c, k, P_CELL] = i
                u64s[c, k, U_W] = w
                k += 1
            i += 1
        s_[ST_CELL] = i
        s_[ST_PENDING] = k
        s_[ST_POS] = pos
        c = next_chunk(claim, c)


#: :func:`bernoulli_exp_kernel_serial` over the chunks on ``numba.get_num_threads()``
#: threads, each claiming chunks as it becomes free
bernoulli_exp_kernel = claimed(bernoulli_exp_kernel_serial, chunk_count(0))
