"""Private selection: exact exponential mechanism, permute-and-flip, report-noisy-max, top-k.

Every function here is *exact* in the sense of docs/design.md: assuming ideal random bits,
the output distribution equals the stated one exactly, with utilities taken as the
binary rationals their float64 values encode and ``epsilon`` and ``sensitivity`` as
exact rationals.

Gumbel-max (``exponential``, ``report_noisy_max(noise="gumbel")``, ``top_k``)
-------------------------------------------------------------------------------
Candidate ``i`` gets the score ``c * (u_i - u_max) - ln(-ln U_i)`` with ``U_i`` uniform
on (0, 1); the index of the largest score is distributed exactly as
``P(i) = exp(c u_i) / sum_j exp(c u_j)`` (the Gumbel-max trick), and the indices of
the ``k`` largest scores, in order, are distributed as ``k`` sequential draws without
replacement (Plackett-Luce), i.e. as the peeling exponential mechanism.

A float Gumbel has a bounded range (about ``[-3.6, 36.7]`` for 53-bit uniforms), so a
naive ``argmax(c u + gumbel)`` gives every candidate more than ~40/c utility units
behind the leader probability exactly 0, which breaks pure DP.  Here each ``U_i`` is a
*lazily refined* uniform: its first 64 bits come from the bulk ChaCha20 keystream and
bound the score to a small interval (rigorous float error bounds, numba kernel in
:mod:`dpfast._kernels.selection`).  The winner is certified when its lower bound exceeds
every other upper bound.  Otherwise (rare: about ``1e-13`` per row, or when a word is
within ``2^-52`` of 1, or under :func:`force_exact`) the contending candidates'
uniforms are refined with fresh random bits (64 at a time) and their scores compared
with exact integer interval arithmetic (:func:`ln_bounds`) until the intervals separate.
Nothing is resampled, so a candidate 60 (or 6000) units behind keeps its exact, tiny,
nonzero probability.

Permute-and-flip (``permute_and_flip``, ``report_noisy_max(noise="exponential")``)
-----------------------------------------------------------------------------------
Each candidate's coin is Bernoulli(exp(-c (u_max - u_i))), decided exactly (certified
float comparison of a 64-bit uniform with ``exp``, exact continuation with
:func:`dpfast._exact.u_less_exp` otherwise).  Permute-and-flip returns the first head
in a uniformly random order; since the order is independent of the coins, that is a
uniformly random head, which is drawn exactly (Lemire's method).

Batches
-------
Two-dimensional ``utilities`` of shape ``(batch, candidates)`` run one independent
selection per row, vectorized (numba, parallel over row segments).  Each row is a
separate mechanism: selections over the same dataset compose (``batch`` times the
row's event).

Reproducibility: all randomness comes from ``rng`` (a :class:`dpfast.Generator`, a
32-byte key, or ``None`` for fresh OS entropy).  With a fixed key the result is a
deterministic function of the key, the call sequence and the utilities' differences, so
adding a constant that keeps all utilities exactly representable does not change it.
"""

from __future__ import annotations

import contextlib
import functools
import math
import numbers
import threading
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import numba
import numpy as np

from dpfast import _drive, _exact, _native
from dpfast import random as _random
from dpfast._kernels import selection as _ks
from dpfast.accounting import events as _events

__all__ = [
    "exponential",
    "permute_and_flip",
    "report_noisy_max",
    "top_k",
    "exponential_event",
    "permute_and_flip_event",
    "report_noisy_max_event",
    "top_k_event",
    "force_exact",
    "ln_bounds",
]

# candidates per parallel segment of a row (a fixed constant: results never depend on it)
_SEG = 1 << 16
# makes _drive.batches size each chunk's buffer to exactly CHUNK words (one per cell)
_WORDS_PER_CELL = 0.79921875
_TOPK_KERNEL = 64  # largest k certified in the numba kernel (insertion lists)
_MIN_C = 2.0 ** -1000  # c = epsilon / (2 sensitivity) must be a normal float
_INF = math.inf

_force = threading.local()
_NUM_THREADS = numba.get_num_threads


# --------------------------------------------------------------------------- test hook
@contextlib.contextmanager
def force_exact() -> Iterator[None]:
    """Test hook: send every selection drawn in this thread through the exact path.

    Inside the ``with`` block the float certificate is declared undecided for every row
    (Gumbel-max) and every coin (permute-and-flip), so all decisions are taken by the
    exact continuation: lazily refined uniforms and integer interval arithmetic.  The
    output distribution is the same; only the speed differs.
    """
    old = getattr(_force, "on", False)
    _force.on = True
    try:
        yield
    finally:
        _force.on = old


def _forced() -> bool:
    return bool(getattr(_force, "on", False))


# --------------------------------------------------------------------------- validation
def _check_utilities(utilities: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """(float64 C-contiguous (rows, n) array -- possibly the caller's, never written to --,
    row maxima, input was 1-D)."""
    arr = np.asarray(utilities)
    if arr.dtype == np.bool_:
        raise TypeError("utilities must be real numbers, got dtype bool")
    if arr.dtype.kind in "iu":
        f = arr.astype(np.float64)
        if f.size and np.any(np.abs(f) >= 2.0 ** 53):
            raise ValueError("utilities: integer utilities must have magnitude < 2**53 "
                             "(larger integers are not exactly representable as float64)")
    elif arr.dtype.kind == "f" and arr.dtype.itemsize <= 8:
        f = arr.astype(np.float64, copy=False)  # read only from here on
    else:
        raise TypeError(f"utilities must be real numbers (int or float up to 64 bits), "
                        f"got dtype {arr.dtype}")
    if f.ndim not in (1, 2):
        raise ValueError(f"utilities must be 1-D (candidates) or 2-D (batch, candidates), "
                         f"got {f.ndim} dimensions")
    if f.size == 0:
        raise ValueError(f"utilities must be non-empty, got shape {f.shape}")
    one_d = f.ndim == 1
    f2 = np.ascontiguousarray(f.reshape(1, -1) if one_d else f)
    umax = np.empty(f2.shape[0])
    bad = np.empty(f2.shape[0], np.uint8)
    _ks.row_max(f2.reshape(-1), f2.shape[1], umax, bad)
    if bad.any():
        raise ValueError("utilities must be finite (no NaN or inf)")
    return f2, umax, one_d


def _positive(value: Any, name: str) -> Fraction:
    """A finite positive real as the exact rational it encodes."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got bool")
    if isinstance(value, (Fraction, int, np.integer)):
        x = Fraction(int(value)) if isinstance(value, (int, np.integer)) else value
    elif isinstance(value, (numbers.Real, np.floating)):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"{name} must be finite, got {value!r}")
        x = Fraction(v)
    else:
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    if x <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return x


def _coefficient(epsilon: Any, sensitivity: Any, denom: int) -> tuple[Fraction, float]:
    """(exact c, float c) with c = epsilon / (denom * sensitivity)."""
    eps = _positive(epsilon, "epsilon")
    sens = _positive(sensitivity, "sensitivity")
    c = eps / (denom * sens)
    try:
        c_f = float(c)  # correctly rounded (integer true division)
    except OverflowError:
        c_f = _INF
    if not _MIN_C <= c_f < _INF:
        raise ValueError(f"epsilon / sensitivity = {float(eps / sens):g} is out of the supported "
                         "range [2**-999, 2**1023]")
    return c, c_f


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


# --------------------------------------------------------------------------- bits
def _draw_words(gen: _random.Generator, n: int) -> np.ndarray:
    """n uint64 keystream words, one per cell, from fresh per-chunk streams of ``gen``.

    Cells are split into chunks of ``dpfast._drive.CHUNK``; chunk ``j`` reads its words
    from block 0 of a fresh stream id (the same layout as :func:`dpfast._drive.batches`),
    written in place by the C keystream in parallel threads (cffi releases the GIL).
    The result depends only on the key and the call sequence, never on the thread count.
    """
    chunk = _drive.CHUNK
    full, tail = divmod(n, chunk)
    nchunks = full + (tail > 0)
    first = gen._allocate_streams(nchunks)
    tail_blocks = -(-tail // 8)
    out = np.empty(full * chunk + 8 * tail_blocks, np.uint64)
    flat = out.view(np.uint32)
    nonces = _drive._nonces(first, nchunks)
    key_words = gen._key_words
    per = 2 * chunk  # uint32 words per full chunk

    def work(a: int, b: int, nblocks: int) -> None:
        _native.chacha20_streams(key_words, nonces[a:b].copy(), np.zeros(b - a, np.uint32),
                                 nblocks, flat[a * per:])

    if tail:  # the last chunk needs only the prefix of its stream
        work(full, full + 1, tail_blocks)
    threads = min(_NUM_THREADS(), full)
    if threads <= 1:
        if full:
            work(0, full, chunk // 8)
    else:
        bounds = np.linspace(0, full, threads + 1).astype(int)
        futures = [_drive._executor().submit(work, int(a), int(b), chunk // 8)
                   for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        for f in futures:
            f.result()
    return out[:n]


def _uniform_spans(gen: _random.Generator, spans: np.ndarray) -> np.ndarray:
    """Exactly uniform integers in [0, spans[i]) (uint64 spans >= 1)."""
    out = np.empty(spans.shape[0], np.uint64)
    for lo, hi, buf, st, nonces in _drive.batches(gen, spans.shape[0], 1.0):
        _ks.uniform_spans(buf, st, gen._key_words, nonces, _drive.CHUNK, hi - lo,
                          spans[lo:hi], out[lo:hi])
        _drive.check_wrap(st)
    return out


class _LazySource:
    """The exact path's word source, allocated on first use (a fresh stream of ``gen``)."""

    def __init__(self, gen: _random.Generator) -> None:
        self._gen = gen
        self._src: _exact.WordSource | None = None

    def __call__(self) -> _exact.WordSource:
        if self._src is None:
            self._src = _drive._SlowStream(self._gen).exact.src
        return self._src


# --------------------------------------------------------------------------- exact math
def _atanh_bounds(p: int, q: int, w: int) -> tuple[int, int]:
    """Integers (lo, hi) with lo <= atanh(p/q) 2^w <= hi, for 0 <= p/q <= 1/3 (+ rounding)."""
    if p == 0:
        return 0, 0
    z_lo = (p << w) // q
    z_hi = -((-p << w) // q)
    z2_lo = (z_lo * z_lo) >> w
    z2_hi = -((-(z_hi * z_hi)) >> w)
    t_lo, t_hi = z_lo, z_hi  # bounds of z^d 2^w, d = 1, 3, 5, ...
    s_lo = s_hi = 0
    d = 1
    while True:
        s_lo += t_lo // d
        s_hi += -((-t_hi) // d)
        t_lo = (t_lo * z2_lo) >> w
        t_hi = -((-(t_hi * z2_hi)) >> w)
        d += 2
        if t_hi <= 1:
            break
    # omitted tail sum_{j>=0} z^(d+2j)/(d+2j) <= z^d / (1 - z^2) <= (9/8) t_hi / 2^w
    return s_lo, s_hi + 2 * t_hi + 1


@functools.lru_cache(maxsize=256)
def _ln2_bounds(w: int) -> tuple[int, int]:
    lo, hi = _atanh_bounds(1, 3, w)  # ln 2 = 2 atanh(1/3)
    return 2 * lo, 2 * hi


def ln_bounds(num: int, den: int, w: int) -> tuple[int, int]:
    """Rigorous integer bounds ``lo <= ln(num / den) * 2**w <= hi`` for positive integers.

    Pure integer arithmetic: ``num/den = 2^k y`` with ``y`` in (1/2, 2), ``ln y =
    2 atanh((y - 1)/(y + 1))`` with ``|(y-1)/(y+1)| < 1/3`` and ``ln 2 = 2 atanh(1/3)``;
    every truncation is rounded outward and the series tail is bounded, so the result
    is an enclosure (not an estimate).  The width is a few units for moderate ``k``.
    """
    if num <= 0 or den <= 0:
        raise ValueError("ln_bounds needs positive integers")
    k = num.bit_length() - den.bit_length()
    if k >= 0:
        yn, yd = num, den << k
    else:
        yn, yd = num << -k, den
    wk = w + 16 + max(1, abs(k)).bit_length() + max(1, w).bit_length()
    p, q = yn - yd, yn + yd
    if p >= 0:
        a_lo, a_hi = _atanh_bounds(p, q, wk)
        lo, hi = 2 * a_lo, 2 * a_hi
    else:
        a_lo, a_hi = _atanh_bounds(-p, q, wk)
        lo, hi = -2 * a_hi, -2 * a_lo
    if k:
        l2_lo, l2_hi = _ln2_bounds(wk)
        if k > 0:
            lo, hi = lo + k * l2_lo, hi + k * l2_hi
        else:
            lo, hi = lo + k * l2_hi, hi + k * l2_lo
    sh = wk - w
    return lo >> sh, -((-hi) >> sh)


def _gumbel_interval(m: int, n: int, w: int) -> tuple[Fraction | float, Fraction | float]:
    """Enclosure of G = -ln(-ln U) over U in [m / 2^n, (m + 1) / 2^n] at precision 2^-w."""
    one = 1 << n
    scale = 1 << w
    ghi: Fraction | float
    glo: Fraction | float
    if m + 1 == one:
        ghi = _INF  # U may be arbitrarily close to 1
    else:
        _, h = ln_bounds(m + 1, one, w)  # ln(U_hi) <= h / 2^w
        if h >= 0:
            ghi = _INF
        else:  # L_lo = -ln(U_hi) >= -h / 2^w  =>  G_hi <= -ln(-h / 2^w)
            l, _ = ln_bounds(-h, scale, w)
            ghi = Fraction(-l, scale)
    if m == 0:
        glo = -_INF  # U may be arbitrarily close to 0
    else:
        l, _ = ln_bounds(m, one, w)  # ln(U_lo) >= l / 2^w  =>  L_hi <= -l / 2^w
        _, h = ln_bounds(-l, scale, w)
        glo = Fraction(-h, scale)
    return glo, ghi


class _Contest:
    """Exact comparison of Gumbel scores a_j - ln(-ln U_j) with lazily refined U_j."""

    def __init__(self, words: Sequence[int], offsets: Sequence[Fraction],
                 src: _exact.WordSource) -> None:
        self.u = [_exact.LazyUniform(int(w), src) for w in words]
        self.a = list(offsets)
        self.extra = [64] * len(self.u)
        self._key: list[tuple[int, int] | None] = [None] * len(self.u)
        self._iv: list[tuple[Any, Any]] = [(-_INF, _INF)] * len(self.u)

    def interval(self, j: int) -> tuple[Any, Any]:
        u = self.u[j]
        key = (u.n, self.extra[j])
        if self._key[j] != key:
            glo, ghi = _gumbel_interval(u.m, u.n, u.n + self.extra[j])
            a = self.a[j]
            self._iv[j] = (glo if glo == -_INF else a + glo, ghi if ghi == _INF else a + ghi)
            self._key[j] = key
        return self._iv[j]

    def refine(self, j: int) -> None:
        self.u[j].refine()  # 64 fresh bits: U stays exactly uniform given its prefix
        self.extra[j] += 64

    def argmax(self, active: Sequence[int]) -> int:
        act = list(active)
        while len(act) > 1:
            ivs = [self.interval(j) for j in act]
            b = max(range(len(act)), key=lambda t: ivs[t][1])
            lo1 = ivs[b][0]
            keep = [t for t in range(len(act)) if t == b or ivs[t][1] >= lo1]
            act = [act[t] for t in keep]
            if len(act) > 1:
                for j in act:
                    self.refine(j)
        return act[0]

    def rank(self, need: int) -> list[int]:
        """The ``need`` largest scores' positions, in decreasing order, exactly."""
        active = list(range(len(self.u)))
        out = []
        for _ in range(need):
            j = self.argmax(active)
            out.append(j)
            active.remove(j)
        return out


def _blocks(lo: np.ndarray, hi: np.ndarray, k: int) -> list[np.ndarray]:
    """Candidates that can be among the top k, in blocks whose order is certified.

    Sorted by upper bound; a cut after position r is certified when the smallest lower
    bound up to r exceeds the largest upper bound after r.  Candidates whose upper bound
    is below the k-th largest lower bound are never in the top k.
    """
    n = lo.shape[0]
    if k < n:
        kth = np.partition(lo, n - k)[n - k]
        cand = np.flatnonzero(hi >= kth)
    else:
        cand = np.arange(n)
    order = cand[np.argsort(-hi[cand], kind="stable")]
    pmin = np.minimum.accumulate(lo[order])
    cuts = np.flatnonzero(pmin[:-1] > hi[order[1:]]) + 1
    return np.split(order, cuts)


def _exact_top(words: np.ndarray, u_row: np.ndarray, c: Fraction, c_f: float, k: int,
               src: Callable[[], _exact.WordSource], forced: bool) -> list[int]:
    """The k largest Gumbel scores of one row, in order, decided exactly.

    ``words[j]`` holds the first 64 bits of U_j; further bits come from ``src()``.
    Float bounds (rigorous) prune and order what they can; blocks they cannot order
    are ranked by :class:`_Contest`.  ``forced`` skips the float bounds entirely.
    """
    n = words.shape[0]
    um = float(np.max(u_row))
    if forced:
        blocks = [np.arange(n)]
    else:
        lo = np.empty(n)
        hi = np.empty(n)
        _ks.row_bounds(words, u_row, um, c_f, lo, hi)
        blocks = _blocks(lo, hi, k)
    out: list[int] = []
    fum = Fraction(um)
    for blk in blocks:
        if len(out) >= k:
            break
        if blk.shape[0] == 1:
            out.append(int(blk[0]))
            continue
        contest = _Contest([int(words[j]) for j in blk],
                           [c * (Fraction(float(u_row[j])) - fum) for j in blk], src())
        out.extend(int(blk[t]) for t in contest.rank(min(k - len(out), blk.shape[0])))
    return out


# --------------------------------------------------------------------------- Gumbel-max
def _gumbel_argmax(gen: _random.Generator, u2: np.ndarray, umax: np.ndarray, c: Fraction,
                   c_f: float) -> np.ndarray:
    rows, n = u2.shape
    out = np.zeros(rows, np.int64)
    if n == 1:
        return out
    m = _draw_words(gen, rows * n)
    flat = u2.reshape(-1)
    nps = -(-n // _SEG)
    nseg = rows * nps
    j1 = np.empty(nseg, np.int64)
    lo1 = np.empty(nseg)
    hi1 = np.empty(nseg)
    hi2 = np.empty(nseg)
    sp = np.empty(nseg, np.bool_)
    forced = _forced()
    _ks.em_scan(m, flat, umax, n, _SEG, c_f, _ks.GTABLE, j1, lo1, hi1, hi2, sp)
    _ks.em_combine(nps, j1, lo1, hi1, hi2, sp, forced, out)
    pending = np.flatnonzero(out < 0)
    if pending.size:
        src = _LazySource(gen)
        for r in pending:
            out[r] = _exact_top(m[r * n:(r + 1) * n], u2[r], c, c_f, 1, src, forced)[0]
    return out


def exponential(utilities: Any, epsilon: Any, sensitivity: Any = 1.0, *,
                monotonic: bool = False, rng: Any = None) -> int | np.ndarray:
    """Exponential mechanism, sampled exactly by Gumbel-max.

    Selects index ``i`` with probability exactly
    ``exp(c u_i) / sum_j exp(c u_j)``, ``c = epsilon / (2 sensitivity)``
    (``epsilon / sensitivity`` when ``monotonic``).

    Parameters
    ----------
    utilities : array_like of float or int, shape (n,) or (batch, n)
        Utility of each candidate (finite; integers must be below 2**53 in magnitude).
        Two-dimensional input runs one independent selection per row.  Not modified.
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : float, optional
        Sensitivity ``Delta`` of the utilities: ``|u_i(x) - u_i(x')| <= Delta`` for every
        candidate and neighbouring datasets ``x, x'``.  Finite and > 0.
    monotonic : bool, optional
        The utilities are monotone: between neighbours all ``u_i`` move in the same
        direction.  Then ``c = epsilon / sensitivity`` is ``epsilon``-DP.
    rng : dpfast.Generator, 32-byte key or None
        Source of randomness (``None``: the process-wide OS-keyed generator).

    Returns
    -------
    int or numpy.ndarray of int64
        The selected index (1-D input) or one index per row (2-D input).

    Raises
    ------
    ValueError
        Empty, non-finite or wrongly shaped ``utilities``; ``epsilon`` or
        ``sensitivity`` not finite and > 0 (or their ratio out of range).
    TypeError
        Non-numeric arguments.

    Privacy
    -------
    ``epsilon``-DP (McSherry & Talwar 2007): for neighbouring datasets
    ``x ~ x'`` (whatever relation the sensitivity is stated for) and every ``i``,
    ``P[M(x) = i] <= exp(epsilon) P[M(x') = i]``.  It is also ``epsilon``-bounded-range,
    hence ``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021).  Event:
    :func:`exponential_event` (``dpfast.accounting.events.Exponential(epsilon)``) per
    row; the rows of a batch are separate mechanisms.

    Numerics
    --------
    Exact (see the module docstring): every ``U_i`` starts from 64 bits
    of ChaCha20 keystream and the float score bounds are certified (error analysis in
    :mod:`dpfast._kernels.selection`); undecided rows (about ``1e-13`` of rows, plus
    rows with a word within ``2^-52`` of 1) refine the contenders' uniforms with fresh
    bits and decide with exact integer interval arithmetic.  Utilities are the exact
    binary rationals of their float64 values, ``c`` the exact rational
    ``epsilon / (2 sensitivity)``.  No candidate's probability is ever rounded to 0.
    Cost: one 64-bit word per candidate; two logarithms only for candidates that can
    still reach the top two of their row segment.

    References
    ----------
    F. McSherry, K. Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.
    M. Cesar, R. Rogers, "Bounding, Concentrating, and Truncating: Unifying Privacy Loss
    Composition for Data Analytics", ALT 2021.

    Examples
    --------
    >>> import dpfast
    >>> i = dpfast.exponential([3.0, 1.0, 0.0], epsilon=1.0, rng=bytes(32))
    """
    u2, umax, one_d = _check_utilities(utilities)
    monotonic = _check_flag(monotonic, "monotonic")
    c, c_f = _coefficient(epsilon, sensitivity, 1 if monotonic else 2)
    gen = _random.as_generator(rng)
    out = _gumbel_argmax(gen, u2, umax, c, c_f)
    return int(out[0]) if one_d else out


def _float_up(x: Fraction) -> float:
    """The smallest float >= x (privacy parameters round to the safe side)."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, _INF)


def exponential_event(epsilon: float) -> _events.Exponential:
    """Privacy event of one :func:`exponential` selection (one row).

    Returns ``dpfast.accounting.events.Exponential(epsilon)``: ``epsilon``-DP and
    ``epsilon``-bounded-range (McSherry & Talwar 2007; Cesar & Rogers 2021).  A
    rational ``epsilon`` that is not a float is rounded up.
    """
    return _events.Exponential(_float_up(_positive(epsilon, "epsilon")))


# --------------------------------------------------------------------------- permute-and-flip
def permute_and_flip(utilities: Any, epsilon: Any, sensitivity: Any = 1.0, *,
                     rng: Any = None) -> int | np.ndarray:
    """Permute-and-flip mechanism (McKenna & Sheldon 2020), exact.

    Visits the candidates in a uniformly random order and returns the first ``i`` whose
    coin ``Bernoulli(exp(epsilon (u_i - u_max) / (2 sensitivity)))`` comes up heads (the
    maximum always does).

    Parameters
    ----------
    utilities : array_like of float or int, shape (n,) or (batch, n)
        Utilities (finite; one independent selection per row for 2-D input).
        Not modified.
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : float, optional
        Sensitivity of every utility between neighbouring datasets, finite and > 0.
    rng : dpfast.Generator, 32-byte key or None
        Source of randomness.

    Returns
    -------
    int or numpy.ndarray of int64
        The selected index (1-D input) or one index per row.

    Raises
    ------
    ValueError, TypeError
        As :func:`exponential`.

    Privacy
    -------
    ``epsilon``-DP for neighbouring datasets under which every utility
    changes by at most ``sensitivity`` (McKenna & Sheldon 2020):
    ``P[M(x) = i] <= exp(epsilon) P[M(x') = i]``.  Its expected error is never worse than
    the exponential mechanism's at the same ``epsilon``.  It is distributed exactly as
    report-noisy-max with exponential noise of scale ``2 sensitivity / epsilon`` (Ding,
    Kifer et al. 2021).  Event: :func:`permute_and_flip_event` (pure ``epsilon``-DP) per row.

    Numerics
    --------
    All ``n`` coins are drawn (the order is independent of the coins, so
    "first head in a uniform order" is a uniformly random head); each coin compares a
    64-bit uniform with ``exp(-gamma)``, ``gamma = c (u_max - u_i)``, by a certified float
    test and otherwise exactly (lazily refined uniform against integer bounds of
    ``exp(-gamma)`` for the exact rational ``gamma``).  The random head is drawn exactly
    uniformly (Lemire's method on ChaCha20 words).

    References
    ----------
    R. McKenna, D. Sheldon, "Permute-and-Flip: A new mechanism for differentially
    private selection", NeurIPS 2020.  Z. Ding, D. Kifer, et al., "The Permute-and-Flip
    Mechanism is Identical to Report-Noisy-Max with Exponential Noise", 2021.
    """
    u2, umax, one_d = _check_utilities(utilities)
    c, c_f = _coefficient(epsilon, sensitivity, 2)
    gen = _random.as_generator(rng)
    rows, n = u2.shape
    out = np.zeros(rows, np.int64)
    if n > 1:
        flat = u2.reshape(-1)
        m = _draw_words(gen, rows * n)
        flags = np.empty(rows * n, np.uint8)
        _ks.pf_flips(m, flat, umax, n, _SEG, c_f, _forced(), flags)
        pending = np.flatnonzero(flags == _ks.PENDING)
        if pending.size:
            src = _LazySource(gen)
            for i in pending:
                gamma = c * (Fraction(float(umax[i // n])) - Fraction(float(flat[i])))
                flags[i] = _exact.u_less_exp(_exact.LazyUniform(int(m[i]), src()), gamma)
        counts = flags.reshape(rows, n).sum(axis=1, dtype=np.uint64)
        ranks = _uniform_spans(gen, counts)
        _ks.pf_pick(flags, n, ranks, out)
    return int(out[0]) if one_d else out


def permute_and_flip_event(epsilon: float) -> _events.Epsilon:
    """Privacy event of one :func:`permute_and_flip` selection: pure ``epsilon``-DP."""
    return _events.Epsilon(_float_up(_positive(epsilon, "epsilon")))


# --------------------------------------------------------------------------- report noisy max
_NOISES = ("exponential", "gumbel")


def _check_noise(noise: Any) -> str:
    if not isinstance(noise, str):
        raise TypeError(f"noise must be 'exponential' or 'gumbel', got {type(noise).__name__}")
    if noise not in _NOISES:
        raise ValueError(f"noise must be 'exponential' or 'gumbel', got {noise!r}")
    return noise


def report_noisy_max(utilities: Any, epsilon: Any, sensitivity: Any = 1.0, *,
                     noise: str = "exponential", rng: Any = None) -> int | np.ndarray:
    """Report-noisy-max: the index of the largest ``u_i + noise_i``, sampled exactly.

    Parameters
    ----------
    utilities : array_like, shape (n,) or (batch, n)
        Utilities (finite).  Not modified.
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : float, optional
        Sensitivity of every utility, finite and > 0.
    noise : {"exponential", "gumbel"}
        ``"exponential"``: i.i.d. exponential noise of scale ``2 sensitivity / epsilon``,
        identical in distribution to :func:`permute_and_flip` (Ding, Kifer et al. 2021)
        and computed by it.  ``"gumbel"``: Gumbel noise of scale
        ``2 sensitivity / epsilon``, identical to the exponential mechanism and computed
        by :func:`exponential`.
    rng : dpfast.Generator, 32-byte key or None
        Source of randomness.

    Returns
    -------
    int or numpy.ndarray of int64
        The index of the largest noisy utility (1-D input) or one index per row.

    Raises
    ------
    ValueError, TypeError
        As :func:`exponential`; also for an unknown ``noise``.

    Privacy
    -------
    ``epsilon``-DP for neighbouring datasets under which each utility
    changes by at most ``sensitivity`` (Dwork & Roth 2014, Sec. 3.3;
    Ding, Kifer et al. 2021 for exponential noise; McSherry & Talwar 2007 for Gumbel).  Event:
    :func:`report_noisy_max_event`.

    Numerics
    --------
    Exact; see :func:`permute_and_flip` and :func:`exponential`.

    References
    ----------
    C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014.
    Z. Ding, D. Kifer, et al., "The Permute-and-Flip Mechanism is Identical to
    Report-Noisy-Max with Exponential Noise", 2021.
    """
    noise = _check_noise(noise)
    if noise == "gumbel":
        return exponential(utilities, epsilon, sensitivity, rng=rng)
    return permute_and_flip(utilities, epsilon, sensitivity, rng=rng)


def report_noisy_max_event(epsilon: float, noise: str = "exponential") -> _events.DpEvent:
    """Event of one :func:`report_noisy_max`: ``Epsilon`` (exponential noise) or
    ``Exponential`` (Gumbel noise, also bounded-range)."""
    if _check_noise(noise) == "gumbel":
        return exponential_event(epsilon)
    return permute_and_flip_event(epsilon)


# --------------------------------------------------------------------------- top-k
def top_k(utilities: Any, k: int, epsilon: Any, sensitivity: Any = 1.0, *,
          rng: Any = None) -> np.ndarray:
    """One-shot Gumbel top-k (Durfee & Rogers 2019), exact.

    Adds i.i.d. Gumbel noise of scale ``2 sensitivity / epsilon`` to every utility and
    returns the indices of the ``k`` largest noisy values, largest first.

    Parameters
    ----------
    utilities : array_like, shape (n,) or (batch, n)
        Utilities (finite).  Not modified.
    k : int
        Number of indices to return, ``1 <= k <= n``.
    epsilon : float
        Privacy parameter *per selected index*, finite and > 0.
    sensitivity : float, optional
        Sensitivity of every utility, finite and > 0.
    rng : dpfast.Generator, 32-byte key or None
        Source of randomness.

    Returns
    -------
    numpy.ndarray of int64, shape (k,) or (batch, k)
        Distinct indices in decreasing order of noisy utility.

    Privacy
    -------
    The ordered output has exactly the distribution of ``k`` rounds of the
    peeling exponential mechanism (each ``epsilon``-DP, selecting without replacement
    with ``P(i) ∝ exp(epsilon u_i / (2 sensitivity))``), Durfee & Rogers 2019 (one-shot
    Gumbel top-k equals peeling).
    Hence ``k epsilon``-DP for neighbours under which every utility changes by at most
    ``sensitivity``, ``k epsilon^2 / 8``-zCDP by bounded-range composition (Cesar &
    Rogers 2021), and ``(epsilon', delta)``-DP by advanced composition.  Event:
    :func:`top_k_event` (``SelfComposed(Exponential(epsilon), k)``).

    Numerics
    --------
    Exact: the set *and* order of the top ``k`` are decided on certified
    score intervals; the certificate includes the cut between rank ``k`` and rank
    ``k + 1``, and candidates whose intervals overlap are ranked by the exact
    continuation of :func:`exponential` (refined uniforms, integer interval arithmetic).

    References
    ----------
    D. Durfee, R. Rogers, "Practical Differentially Private Top-k Selection with
    Pay-what-you-get Composition", NeurIPS 2019.
    """
    u2, umax, one_d = _check_utilities(utilities)
    n = u2.shape[1]
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    k = int(k)
    if not 1 <= k <= n:
        raise ValueError(f"k must satisfy 1 <= k <= {n} (number of candidates), got {k}")
    c, c_f = _coefficient(epsilon, sensitivity, 2)
    gen = _random.as_generator(rng)
    rows = u2.shape[0]
    m = _draw_words(gen, rows * n)
    src = _LazySource(gen)
    forced = _forced()
    out = np.empty((rows, k), np.int64)
    if k <= _TOPK_KERNEL:
        ok = np.empty(rows, np.bool_)
        nw = min(rows, 256)
        work = (np.empty((nw, k + 1)), np.empty((nw, k + 1)), np.empty((nw, k + 1), np.int64))
        _ks.topk_scan(m, u2.reshape(-1), umax, n, k, c_f, _ks.GTABLE, forced, *work, out, ok)
        pending = np.flatnonzero(~ok)
    else:
        pending = np.arange(rows)
    for r in pending:
        out[r] = _exact_top(m[r * n:(r + 1) * n], u2[r], c, c_f, k, src, forced)
    return out[0] if one_d else out


def top_k_event(epsilon: float, k: int) -> _events.SelfComposed:
    """Event of one :func:`top_k` call: ``SelfComposed(Exponential(epsilon), k)``."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return _events.SelfComposed(exponential_event(epsilon), int(k))
