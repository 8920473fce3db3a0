"""Local differential privacy: randomized response, OUE, OLH, count-mean sketches, RAPPOR.

In the local model every user randomizes her own value before it leaves her device; a
client mechanism ``M`` is ``epsilon``-LDP when for **any two inputs** ``v, v'`` and every
set of outputs ``S``: ``P[M(v) in S] <= e^epsilon P[M(v') in S]``.  Each client function
here states its per-report epsilon (**Privacy** sections) and exposes it as a privacy
event (:mod:`dpfast.accounting.events`) for the accountants.  The servers' estimators are
unbiased and come with their variances (exact formulas, and plug-in estimates on the
returned :class:`FrequencyEstimate`).

Exactness
---------
The reporting probabilities (``e^eps / (e^eps + k - 1)``, ``1 / (e^eps + 1)``,
``1 / (1 + e^(eps/2))``) are irrational.  They are sampled **exactly**: 64 decisions at a
time compare the bits of independent uniforms with the exact binary expansion of the
probability (computed by integer interval arithmetic, :mod:`dpfast._exact`), and the rare
comparison still undecided after 64 bits (probability ``2^-64``) is finished by refining
that uniform lazily, never by resampling (see :mod:`dpfast._kernels.local`).  RAPPOR's
``f, p, q`` and any other float probability are the exact binary rationals they encode and
are compared bit by bit to completion.  Every random bit comes from dpfast's ChaCha20
generator (``rng``: None, a :class:`dpfast.Generator` or a 32-byte key), split into fixed
chunks on their own streams, so a key gives the same output whatever the thread count.
The estimators themselves are float post-processing of integer counts.

Hashing (identical on clients and servers)
------------------------------------------
Items are first mapped to 64-bit *fingerprints* (:func:`fingerprint`): integers to their
two's-complement bit pattern, strings to BLAKE2b-64 of their UTF-8 bytes (bytes as they
are), with personalization ``b"dpfast.local"``.  Then:

* OLH uses, per user, a fresh strongly universal hash (multiply-add-shift with three
  random 64-bit words that the user sends with her report).
* Count-mean sketches and RAPPOR use ``num`` fixed public hash functions, each a simple
  tabulation hash (3-independent; 8 tables of 256 random 32-bit words per function)
  whose tables are the ChaCha20 keystream of the ``hash_seed``
  (:func:`hash_tables`).  Server and clients built with the same ``hash_seed`` hash
  identically; any other implementation can reproduce the tables from RFC 8439 ChaCha20.

A 32-bit hash ``h`` selects bucket ``(h * m) >> 32`` of ``[0, m)``.

References
----------
Warner, "Randomized response", JASA 1965.  Wang, Blocki, Li, Jha, "Locally Differentially
Private Protocols for Frequency Estimation", USENIX Security 2017.  Apple Differential
Privacy Team, "Learning with Privacy at Scale", 2017.  Erlingsson, Pihur, Korolova,
"RAPPOR: Randomized Aggregatable Privacy-Preserving Ordinal Response", CCS 2014.
Thorup, "High Speed Hashing for Integers and Strings", 2015.  Patrascu, Thorup, "The
Power of Simple Tabulation Hashing", JACM 2012.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import numbers
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any, NamedTuple

import mpmath
import numba
import numpy as np

from dpfast import _drive, _exact
from dpfast._kernels import local as _lk
from dpfast.accounting import events
from dpfast.random import Generator, as_generator, keystream

__all__ = [
    "FrequencyEstimate",
    "randomized_response",
    "randomized_response_estimate",
    "k_randomized_response",
    "k_randomized_response_estimate",
    "GeneralizedRandomizedResponse",
    "OptimizedUnaryEncoding",
    "OptimalLocalHashing",
    "OlhReports",
    "CountMeanSketch",
    "HadamardCountMeanSketch",
    "CmsReports",
    "HcmsReports",
    "Sketch",
    "Rappor",
    "RapporReports",
    "RapporCounts",
    "RapporDecoding",
    "rappor_epsilon",
    "fingerprint",
    "hash_tables",
]

_MAX_EPSILON = 1024.0
_MAX_DOMAIN = 1 << 31
_FP_PERSON = b"dpfast.local"
_TAB_STREAM = 0x6C6F63616C5F746162  # b"local_tab": stream id of the hash tables
_RAPPOR_TAG = 0x52415050  # nonce tag of the RAPPOR client PRF ("RAPP")


# ============================================================================ validation
def _epsilon(value: Any, name: str = "epsilon") -> Fraction:
    """A finite epsilon in (0, 1024], as the exact binary rational of the float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not math.isfinite(x) or not 0.0 < x <= _MAX_EPSILON:
        raise ValueError(f"{name} must be finite and in (0, {_MAX_EPSILON:g}], got {value!r}")
    return Fraction(value) if isinstance(value, (int, Fraction)) else Fraction(x)


def _int(value: Any, name: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool")
    if not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    v = int(value)
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be {rng}, got {v}")
    return v


def _prob(value: Any, name: str) -> Fraction:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if not (math.isfinite(x) and 0.0 <= x <= 1.0):
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return Fraction(value) if isinstance(value, Fraction) else Fraction(x)


def _domain_values(values: Any, k: int, name: str = "values") -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array of domain indices, got dtype "
                        f"{arr.dtype}")
    flat = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1) if arr.size else \
        np.zeros(0, np.int64)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= k:
        raise ValueError(f"{name} must lie in [0, {k}) (the domain), got max {int(arr.max())}")
    if flat.size and (int(flat.min()) < 0 or int(flat.max()) >= k):
        raise ValueError(f"{name} must lie in [0, {k}) (the domain), got range "
                         f"[{int(flat.min())}, {int(flat.max())}]")
    return flat


def _float_up(x: mpmath.mpf) -> float:
    """The smallest float >= x (x a positive mpf computed at high precision)."""
    v = float(x)
    if mpmath.mpf(v) < x:
        v = math.nextafter(v, math.inf)
    return v


def _mpf(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


# ============================================================================ thresholds
class _Threshold:
    """An exact probability c in [0, 1] for the kernels' bit-sliced Bernoulli lanes.

    Either a rational ``value`` (a float's exact binary rational), or
    ``c = (A + B x) / (C + D x)`` with ``x = exp(-gamma)``, ``gamma > 0`` rational and
    non-negative integers A, B, C, D (irrational unless degenerate).  ``words`` is the
    leading expansion of c handed to the kernels and ``terminal`` says how it ends
    (see :func:`dpfast._kernels.local.bern_lanes`).
    """

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
    """Test hook: ``dpfast._exact.force_exact(3)`` sends every irrational-threshold
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
                call(buf, st, gen._key_words, nonces, chunk, lo, hi - lo, force, start,
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


@contextlib.contextmanager
def _threads(work: float) -> Iterator[None]:
    """Run small kernel calls on one thread: waking a parallel team costs more than the
    work (results never depend on the thread count)."""
    if work >= _PARALLEL_WORK:
        yield
        return
    old = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(old)


def _lanes_words(nlanes_per_cell: float) -> float:
    """Expected random words of bit-sliced Bernoulli decisions per cell."""
    return 7.5 * nlanes_per_cell / 64.0


def _chunk_for(words_per_cell: float, multiple: int = 64) -> int:
    """Cells per chunk so that one chunk draws about 2^17 words (fixed per call shape)."""
    cells = max(1, int((1 << 17) / max(words_per_cell, 1e-3)))
    cells = max(multiple, (cells // multiple) * multiple)
    return min(cells, _drive.CHUNK)


# ============================================================================ hashing
def fingerprint(items: Any) -> np.ndarray:
    """64-bit fingerprints of items: the hash input shared by clients and servers.

    Parameters
    ----------
    items : array_like
        Integers (any integer dtype or bool; values must fit int64 or uint64), or strings
        / bytes (a list, a numpy ``str``/``bytes`` array or an object array of ``str``,
        ``bytes`` and ints).

    Returns
    -------
    numpy.ndarray of uint64, flattened
        Integers map to their 64-bit two's-complement pattern (injective); a string maps
        to the little-endian integer of ``BLAKE2b(utf8, digest_size=8,
        person=b"dpfast.local")`` and bytes to the same digest of the bytes themselves
        (distinct strings collide with probability about ``2^-64``).
    """
    if not isinstance(items, np.ndarray) and isinstance(items, (list, tuple)) and any(
            isinstance(x, (str, bytes, bytearray)) for x in items):
        arr = np.empty(len(items), dtype=object)  # keep ints as ints (asarray: strings)
        arr[:] = list(items)
    else:
        arr = np.asarray(items)
    if arr.dtype == np.bool_:
        return arr.astype(np.uint64).reshape(-1)
    if arr.dtype.kind == "i":
        return arr.astype(np.int64).reshape(-1).view(np.uint64).copy()
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64).reshape(-1)
    if arr.dtype.kind in "USO":
        flat = arr.reshape(-1)
        if flat.size == 0:
            return np.zeros(0, np.uint64)
        try:
            uniq, inv = np.unique(flat, return_inverse=True)
        except TypeError:  # unorderable mixed objects
            return np.array([_fp_one(x) for x in flat], np.uint64)
        fps = np.array([_fp_one(x) for x in uniq], np.uint64)
        return fps[inv.reshape(-1)]
    raise TypeError(f"items must be integers, strings or bytes, got dtype {arr.dtype}")


def _fp_one(x: Any) -> int:
    if isinstance(x, (bool, np.bool_)):
        return int(x)
    if isinstance(x, (numbers.Integral,)):
        v = int(x)
        if not -(1 << 63) <= v < (1 << 64):
            raise ValueError(f"integer item {v} does not fit 64 bits")
        return v % (1 << 64)
    if isinstance(x, str):
        data = x.encode("utf-8")
    elif isinstance(x, (bytes, bytearray, memoryview)):
        data = bytes(x)
    else:
        raise TypeError(f"items must be integers, strings or bytes, got {type(x).__name__}")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8, person=_FP_PERSON).digest(),
                          "little")


def _seed_key(hash_seed: Any) -> bytes:
    if isinstance(hash_seed, (bytes, bytearray, memoryview)):
        key = bytes(hash_seed)
        if len(key) != 32:
            raise ValueError(f"hash_seed must be 32 bytes or an int, got {len(key)} bytes")
        return key
    v = _int(hash_seed, "hash_seed", 0, (1 << 256) - 1)
    return v.to_bytes(32, "little")


def hash_tables(hash_seed: int | bytes, num: int) -> np.ndarray:
    """Simple-tabulation tables of ``num`` public hash functions, ``(num, 8, 256)`` uint32.

    Hash function ``f`` maps a fingerprint ``x`` (bytes ``x_0 .. x_7``, little-endian) to
    ``T[f, 0, x_0] ^ ... ^ T[f, 7, x_7]``.  The tables are the RFC 8439 ChaCha20 keystream
    under the key ``hash_seed`` (an int is written as 32 little-endian bytes), stream
    ``0x6c6f63616c5f746162``, read as little-endian 32-bit words.  Random tables make the
    functions 3-independent and mutually independent (Patrascu & Thorup 2012).
    """
    num = _int(num, "num", 1, 1 << 20)
    key = _seed_key(hash_seed)
    data = keystream(key, _TAB_STREAM, num * 8 * 256 * 4)
    return np.frombuffer(data, "<u4").astype(np.uint32).reshape(num, 8, 256)


def _resolve_seed(hash_seed: Any) -> int | bytes:
    if hash_seed is None:
        words = as_generator(None).random_raw(4)
        return b"".join(int(w).to_bytes(8, "little") for w in words)
    _seed_key(hash_seed)  # validate
    return hash_seed


# ============================================================================ estimates
@dataclasses.dataclass(frozen=True)
class FrequencyEstimate:
    """Unbiased frequency estimates of a local-DP protocol.

    Attributes
    ----------
    counts : numpy.ndarray of float64
        Unbiased estimates of the number of users holding each item (may be negative or
        exceed ``n``: unbiasedness forbids clipping; clip for display only).
    variance : numpy.ndarray of float64
        Plug-in estimate of each count estimate's variance: the protocol's exact variance
        formula (its ``variance`` method) with the unknown true counts replaced by the
        estimates clipped to ``[0, n]``.
    n : int
        Number of reports.
    """

    counts: np.ndarray
    variance: np.ndarray
    n: int

    @property
    def frequencies(self) -> np.ndarray:
        """Estimated fractions ``counts / n``."""
        return self.counts / max(self.n, 1)

    @property
    def std_error(self) -> np.ndarray:
        """Estimated standard errors of ``counts``."""
        return np.sqrt(self.variance)


def _pure_variance(n: Any, count: Any, ps: float, qs: float) -> Any:
    """Var of (C - n q*) / (p* - q*), C a sum of independent Bernoulli supports."""
    n = np.asarray(n, np.float64)
    count = np.asarray(count, np.float64)
    v = (count * ps * (1 - ps) + (n - count) * qs * (1 - qs)) / (ps - qs) ** 2
    return v if v.ndim else float(v)


def _pure_estimate(support: np.ndarray, n: int, ps: float, qs: float) -> FrequencyEstimate:
    support = np.asarray(support, np.float64)
    counts = (support - n * qs) / (ps - qs)
    var = _pure_variance(n, np.clip(counts, 0, n), ps, qs)
    return FrequencyEstimate(counts, np.asarray(var, np.float64), int(n))


# ============================================================================ k-RR
class GeneralizedRandomizedResponse:
    """k-ary (generalized) randomized response, "direct encoding" (Wang et al. 2017).

    Parameters
    ----------
    k : int
        Domain size (values are indices in ``[0, k)``), ``k >= 2``.
    epsilon : float
        Per-report privacy parameter, ``0 < epsilon <= 1024``.

    Notes
    -----
    A user with value ``v`` reports ``v`` with probability
    ``p = e^eps / (e^eps + k - 1)`` and each other value with probability
    ``q = 1 / (e^eps + k - 1)``.  For ``k = 2`` this is Warner's randomized response.

    **Privacy**

    ``epsilon``-LDP: for any inputs ``v, v'`` and output ``y``,
    ``P[y | v] / P[y | v'] <= p / q = e^epsilon`` (any two inputs are neighbours).
    Event: ``events.RandomizedResponse(epsilon, k)``.  Warner 1965; Wang et al.,
    USENIX Security 2017, sec. 4.1.

    **Numerics**

    ``p`` is irrational; it is sampled exactly (module docstring).  The estimator is
    float post-processing of integer counts.
    """

    def __init__(self, k: int, epsilon: float) -> None:
        self.k = _int(k, "k", 2, _MAX_DOMAIN)
        self._eps = _epsilon(epsilon)
        self.epsilon = float(epsilon)
        self._keep = _keep_threshold(self._eps, self.k)
        with mpmath.workdps(40):
            e = mpmath.exp(_mpf(self._eps))
            self.p = float(e / (e + self.k - 1))
            self.q = float(1 / (e + self.k - 1))

    def __repr__(self) -> str:
        return f"GeneralizedRandomizedResponse(k={self.k}, epsilon={self.epsilon!r})"

    @property
    def event(self) -> events.RandomizedResponse:
        """Privacy event of one report."""
        return events.RandomizedResponse(self.epsilon, self.k)

    def perturb(self, values: Any, *, rng: Any = None) -> np.ndarray:
        """Randomize each user's value (any shape; int64 result of the same shape).

        Parameters
        ----------
        values : array_like of int
            True values in ``[0, k)``.
        rng : None, Generator or bytes, optional
            Source of randomness (None: the process-wide urandom-keyed generator).
        """
        arr = np.asarray(values)
        x = _domain_values(arr, self.k)
        out = np.empty_like(x)
        _grr(as_generator(rng), x, self.k, self._keep, out)
        return out.reshape(arr.shape)

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: how many reports equal each value (int64, length k)."""
        y = _domain_values(reports, self.k, "reports")
        return np.bincount(y, minlength=self.k).astype(np.int64)

    def estimate(self, reports: Any) -> FrequencyEstimate:
        """Unbiased counts ``(C_v - n q) / (p - q)`` with plug-in variances."""
        y = _domain_values(reports, self.k, "reports")
        return _pure_estimate(np.bincount(y, minlength=self.k), y.size, self.p, self.q)

    def variance(self, n: Any, count: Any = 0) -> Any:
        """Exact variance of one count estimate.

        ``(c p (1 - p) + (n - c) q (1 - q)) / (p - q)^2`` for ``n`` users of whom ``c``
        (``count``) hold the value; ``count=0`` gives Wang et al.'s
        ``n q (1 - q) / (p - q)^2`` (``n (e^eps + k - 2) / (e^eps - 1)^2``).
        """
        return _pure_variance(n, count, self.p, self.q)


def _grr(gen: Generator, x: np.ndarray, k: int, keep: _Threshold, out: np.ndarray) -> None:
    n = x.size
    wpc = 7.5 / 64 + (0.0 if k == 2 else 1.05)
    chunk = _chunk_for(wpc)
    cw, term = keep.words, keep.terminal

    def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount, pidx):
        _lk.grr_kernel(buf, st, key, nonces, chunk_, base, count, x, k, out, cw, term, force,
                       start, resume, pcount, pidx)

    forced = _forced()

    def finish(i: int, src: _exact.WordSource) -> None:
        v = int(x[i])
        if keep.decide(src, forced):
            out[i] = v
        elif k == 2:
            out[i] = 1 - v
        else:
            o = _below_py(src, k - 1)
            out[i] = o if o < v else o + 1

    _run_lanes(gen, n, wpc, chunk, 64, call, finish)


def k_randomized_response(values: Any, k: int, epsilon: float, *, rng: Any = None
                          ) -> np.ndarray:
    """k-ary randomized response of each value in ``[0, k)`` (any shape, int64 out).

    Reports the true value with probability ``e^eps / (e^eps + k - 1)``, else a uniformly
    random other value.  Estimate with :func:`k_randomized_response_estimate`.

    **Privacy**

    ``epsilon``-LDP per report (any two inputs): the output probabilities of two inputs
    differ by at most the factor ``e^epsilon``.  Event:
    ``events.RandomizedResponse(epsilon, k)``.  Wang et al., USENIX Security 2017.

    **Numerics**

    The irrational keep probability is sampled exactly (see the module docstring).
    """
    return GeneralizedRandomizedResponse(k, epsilon).perturb(values, rng=rng)


def k_randomized_response_estimate(reports: Any, k: int, epsilon: float
                                   ) -> FrequencyEstimate:
    """Unbiased counts of each value from k-ary randomized-response reports.

    ``c_v = (C_v - n q) / (p - q)`` with ``C_v`` the number of reports equal to ``v``,
    ``p = e^eps / (e^eps + k - 1)``, ``q = 1 / (e^eps + k - 1)``; variance
    ``(c_v p (1 - p) + (n - c_v) q (1 - q)) / (p - q)^2``
    (:meth:`GeneralizedRandomizedResponse.variance`).
    """
    return GeneralizedRandomizedResponse(k, epsilon).estimate(reports)


def randomized_response(values: Any, epsilon: float, *, rng: Any = None) -> np.ndarray:
    """Warner's randomized response: keep each bit w.p. ``e^eps / (1 + e^eps)``, else flip.

    Parameters
    ----------
    values : array_like of bool or 0/1 integers
        Any shape.
    epsilon : float
        ``0 < epsilon <= 1024``.
    rng : None, Generator or bytes, optional
        Source of randomness.

    Returns
    -------
    numpy.ndarray
        Same shape and dtype as ``values``.

    **Privacy**

    ``epsilon``-LDP per bit: ``P[y | v] / P[y | 1 - v] <= e^epsilon``.  Event:
    ``events.RandomizedResponse(epsilon, 2)``.  Warner, JASA 1965.  Randomizing ``d``
    bits of one user costs ``d epsilon`` for that user.

    **Numerics**

    The flip probability ``1 / (1 + e^eps)`` is irrational and sampled exactly.
    """
    arr = np.asarray(values)
    if arr.dtype != np.bool_:
        if arr.dtype.kind not in "iu":
            raise TypeError(f"values must be bool or 0/1 integers, got dtype {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() > 1):
            raise ValueError("values must be 0 or 1")
    x = np.ascontiguousarray(arr, dtype=np.int64).reshape(-1)
    out = np.empty_like(x)
    _grr(as_generator(rng), x, 2, _keep_threshold(_epsilon(epsilon), 2), out)
    return out.astype(arr.dtype).reshape(arr.shape)


def randomized_response_estimate(reports: Any, epsilon: float, *, axis: int | None = None
                                 ) -> FrequencyEstimate:
    """Unbiased estimate of the number of ones behind randomized-response reports.

    Parameters
    ----------
    reports : array_like of bool or 0/1
        Outputs of :func:`randomized_response`.
    epsilon : float
        The epsilon they were produced with.
    axis : int, optional
        Estimate along this axis (e.g. ``axis=0`` for per-question counts of an
        ``(users, questions)`` array); None pools all entries.

    Returns
    -------
    FrequencyEstimate
        ``counts`` (and ``variance``) of the number of true ones, ``(Y - n q) / (p - q)``
        with ``Y`` the observed ones, ``p = e^eps / (1 + e^eps)``, ``q = 1 - p``; variance
        ``(c p (1 - p) + (n - c) q (1 - q)) / (p - q)^2 = n p q / (p - q)^2``.
    """
    arr = np.asarray(reports)
    if arr.dtype != np.bool_ and arr.dtype.kind not in "iu":
        raise TypeError(f"reports must be bool or 0/1 integers, got dtype {arr.dtype}")
    grr = GeneralizedRandomizedResponse(2, epsilon)
    ones = np.sum(arr.astype(np.int64), axis=axis)
    n = arr.size if axis is None else arr.shape[axis]
    return _pure_estimate(ones, n, grr.p, grr.q)


# ============================================================================ OUE
class OptimizedUnaryEncoding:
    """Optimized unary encoding (OUE; Wang, Blocki, Li, Jha, USENIX Security 2017).

    A user with value ``v`` in ``[0, k)`` sends ``k`` bits: bit ``v`` is 1 with
    probability ``p = 1/2``, every other bit with probability ``q = 1 / (e^eps + 1)``.

    Parameters
    ----------
    k : int
        Domain size.
    epsilon : float
        Per-report privacy parameter.

    Notes
    -----
    **Privacy**

    ``epsilon``-LDP: two inputs' encodings differ in two bits, so any report's
    probability ratio is at most ``(p (1 - q)) / ((1 - p) q) = e^epsilon``
    (Wang et al. 2017, Theorem 2 / sec. 4.3).  Event: ``events.Epsilon(epsilon)``.

    **Numerics**

    ``q`` is irrational and sampled exactly; ``p = 1/2`` is a fair coin.
    Estimator variance (Wang et al.): ``n 4 e^eps / (e^eps - 1)^2`` for a value nobody
    holds; :meth:`variance` gives the exact formula.
    """

    def __init__(self, k: int, epsilon: float) -> None:
        self.k = _int(k, "k", 2, _MAX_DOMAIN)
        self._eps = _epsilon(epsilon)
        self.epsilon = float(epsilon)
        self._q = _flip_threshold(self._eps)
        self.p = 0.5
        with mpmath.workdps(40):
            self.q = float(1 / (mpmath.exp(_mpf(self._eps)) + 1))

    def __repr__(self) -> str:
        return f"OptimizedUnaryEncoding(k={self.k}, epsilon={self.epsilon!r})"

    @property
    def event(self) -> events.Epsilon:
        return events.Epsilon(self.epsilon)

    def perturb(self, values: Any, *, rng: Any = None) -> np.ndarray:
        """Encode and perturb: ``(n, k)`` bool array, one row per user (1-D ``values``)."""
        x = _domain_values(values, self.k)
        k = self.k
        out = np.empty((x.size, k), np.uint8)
        wpc = _lanes_words(k) + 0.05
        chunk = _chunk_for(wpc, 1)
        cw, term = self._q.words, self._q.terminal
        thr = self._q
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.oue_kernel(buf, st, key, nonces, chunk_, base, count, x, k, out, cw, term,
                           force, start, resume, pcount, pidx)

        flat = out.reshape(-1)

        def finish(idx: int, src: _exact.WordSource) -> None:
            flat[idx] = 1 if thr.decide(src, forced) else 0

        _run_lanes(as_generator(rng), x.size, wpc, chunk, k, call, finish)
        return out.view(np.bool_)

    def aggregate(self, reports: Any) -> np.ndarray:
        """Support counts: column sums of the ``(n, k)`` reports (int64, length k)."""
        r = self._reports(reports)
        return r.sum(axis=0, dtype=np.int64)

    def _reports(self, reports: Any) -> np.ndarray:
        r = np.asarray(reports)
        if r.ndim != 2 or r.shape[1] != self.k:
            raise ValueError(f"reports must have shape (n, {self.k}), got {r.shape}")
        if r.dtype != np.bool_ and r.dtype.kind not in "iu":
            raise TypeError(f"reports must be bool or 0/1, got dtype {r.dtype}")
        return r

    def estimate(self, reports: Any) -> FrequencyEstimate:
        """Unbiased counts ``(C_v - n q) / (p - q)`` with plug-in variances."""
        r = self._reports(reports)
        return _pure_estimate(r.sum(axis=0, dtype=np.int64), r.shape[0], self.p, self.q)

    def variance(self, n: Any, count: Any = 0) -> Any:
        """Exact variance ``(c p(1-p) + (n - c) q(1-q)) / (p - q)^2`` of a count estimate
        (``count=0``: Wang et al.'s ``n 4 e^eps / (e^eps - 1)^2``)."""
        return _pure_variance(n, count, self.p, self.q)


# ============================================================================ OLH
class OlhReports(NamedTuple):
    """OLH reports: per user the hash parameters ``seeds (n, 3) uint64`` and the
    perturbed hash value ``values (n,) int64`` in ``[0, g)``."""

    seeds: np.ndarray
    values: np.ndarray


class OptimalLocalHashing:
    """Optimal local hashing (OLH; Wang, Blocki, Li, Jha, USENIX Security 2017).

    A user with value ``v`` draws a hash function ``H`` from a strongly universal family
    (three random 64-bit words), hashes ``v`` to ``[0, g)`` and reports ``H`` and the
    g-ary randomized response of ``H(v)``.

    Parameters
    ----------
    k : int
        Domain size: values are ``0 .. k - 1``.
    epsilon : float
        Per-report privacy parameter.
    g : int, optional
        Hash range; default ``round(e^eps) + 1`` (the paper's optimum ``e^eps + 1``).

    Notes
    -----
    Support of value ``v`` by a report ``(H, y)``: ``H(v) == y``.  For the user's own
    value this has probability ``p* = e^eps / (e^eps + g - 1)``, for any other value
    ``q* = 1/g`` (2-independence of ``H``), independently across users; the estimator is
    ``(C_v - n q*) / (p* - q*)`` with variance
    ``(c p*(1-p*) + (n-c) q*(1-q*)) / (p* - q*)^2``, which for ``c = 0`` and
    ``g = e^eps + 1`` is the paper's ``n 4 e^eps / (e^eps - 1)^2``.  (The 32-bit hash is
    bucketed by ``(h g) >> 32``, which changes ``q*`` by less than ``g 2^-64``.)

    **Privacy**

    ``epsilon``-LDP: given the (input-independent) hash function, the report is g-ary
    randomized response of ``H(v)``, whose output ratio for any two inputs is at most
    ``e^epsilon`` (Wang et al. 2017, sec. 4.4).  Event:
    ``events.RandomizedResponse(epsilon, g)`` (the hash is public and independent of the
    input, so OLH is a mixture of g-ary randomized responses and no less private).

    **Numerics**

    The keep probability is irrational and sampled exactly; hash parameters and the
    replacement value are exactly uniform.
    """

    def __init__(self, k: int, epsilon: float, g: int | None = None) -> None:
        self.k = _int(k, "k", 1, _MAX_DOMAIN)
        self._eps = _epsilon(epsilon)
        self.epsilon = float(epsilon)
        if g is None:
            g = max(2, int(round(math.exp(min(float(epsilon), 30.0)))) + 1)
        self.g = _int(g, "g", 2, 1 << 31)
        self._keep = _keep_threshold(self._eps, self.g)
        with mpmath.workdps(40):
            e = mpmath.exp(_mpf(self._eps))
            self.p = float(e / (e + self.g - 1))
        self.q = 1.0 / self.g

    def __repr__(self) -> str:
        return f"OptimalLocalHashing(k={self.k}, epsilon={self.epsilon!r}, g={self.g})"

    @property
    def event(self) -> events.RandomizedResponse:
        return events.RandomizedResponse(self.epsilon, self.g)

    def perturb(self, values: Any, *, rng: Any = None) -> OlhReports:
        """Client side for every user at once (1-D ``values`` in ``[0, k)``)."""
        x = _domain_values(values, self.k)
        fp = x.view(np.uint64)
        n = x.size
        seeds = np.empty((n, 3), np.uint64)
        out = np.empty(n, np.int64)
        g = self.g
        keep = self._keep
        cw, term = keep.words, keep.terminal
        wpc = 7.5 / 64 + 3.0 + 1.05
        chunk = _chunk_for(wpc)
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.olh_client_kernel(buf, st, key, nonces, chunk_, base, count, fp, g, seeds,
                                  out, cw, term, force, start, resume, pcount, pidx)

        def finish(i: int, src: _exact.WordSource) -> None:
            h = int(out[i])
            if not keep.decide(src, forced):
                o = _below_py(src, g - 1)
                out[i] = o if o < h else o + 1

        _run_lanes(as_generator(rng), n, wpc, chunk, 64, call, finish)
        return OlhReports(seeds, out)

    def _check(self, reports: Any) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(reports, tuple) or len(reports) != 2:
            raise TypeError("reports must be an OlhReports (seeds, values) pair")
        seeds = np.ascontiguousarray(reports[0])
        y = np.ascontiguousarray(reports[1])
        if seeds.dtype != np.uint64 or seeds.ndim != 2 or seeds.shape[1] != 3:
            raise ValueError("reports.seeds must be a (n, 3) uint64 array")
        if y.ndim != 1 or y.shape[0] != seeds.shape[0] or y.dtype.kind not in "iu":
            raise ValueError("reports.values must be a 1-D integer array matching seeds")
        if y.size and (int(y.min()) < 0 or int(y.max()) >= self.g):
            raise ValueError(f"reports.values must lie in [0, g={self.g})")
        return seeds, y.astype(np.int64, copy=False)

    def aggregate(self, reports: OlhReports) -> np.ndarray:
        """Support counts ``C_v = #{users : H_i(v) == y_i}`` for every ``v`` (int64, k).

        Costs ``n k`` hash evaluations, in parallel.
        """
        seeds, y = self._check(reports)
        parts = max(1, min(numba.get_num_threads() * 4, y.size // 1024 + 1))
        counts = np.zeros((parts, self.k), np.int64)
        with _threads(y.size * self.k):
            _lk.olh_support(seeds, y, self.g, self.k, parts, counts)
        return counts.sum(axis=0)

    def estimate(self, reports: OlhReports) -> FrequencyEstimate:
        """Unbiased counts ``(C_v - n / g) / (p* - 1/g)`` with plug-in variances."""
        support = self.aggregate(reports)
        return _pure_estimate(support, int(reports[1].shape[0]), self.p, self.q)

    def estimate_from_support(self, support: Any, n: int) -> FrequencyEstimate:
        """Estimate from support counts (e.g. summed over shards of reports)."""
        return _pure_estimate(np.asarray(support), _int(n, "n", 0), self.p, self.q)

    def variance(self, n: Any, count: Any = 0) -> Any:
        """Exact variance of a count estimate (see the class notes)."""
        return _pure_variance(n, count, self.p, self.q)


# ============================================================================ sketches
@dataclasses.dataclass
class Sketch:
    """Server-side state of a (Hadamard) count-mean sketch: integer tallies.

    ``ones[j, r]``: CMS - reports of row ``j`` whose coordinate ``r`` is +1; HCMS - sum
    of the ±1 bits of reports at (row j, column r).  ``totals[j]``: reports of row j.
    Sketches of shards add with ``+``.
    """

    ones: np.ndarray
    totals: np.ndarray
    n: int

    def __add__(self, other: Sketch) -> Sketch:
        if not isinstance(other, Sketch) or other.ones.shape != self.ones.shape:
            return NotImplemented
        return Sketch(self.ones + other.ones, self.totals + other.totals, self.n + other.n)


class CmsReports(NamedTuple):
    """Count-mean-sketch reports: hash index ``rows (n,)`` and the perturbed ±1 vector
    ``bits (n, ceil(m / 8)) uint8`` packed like ``np.packbits(..., bitorder="little")``
    (bit 1 = +1)."""

    rows: np.ndarray
    bits: np.ndarray


class HcmsReports(NamedTuple):
    """Hadamard count-mean-sketch reports: ``rows``, ``cols`` and the perturbed Hadamard
    entry ``bits`` (uint8, 1 = +1)."""

    rows: np.ndarray
    cols: np.ndarray
    bits: np.ndarray


class _SketchBase:
    def __init__(self, epsilon: float, num_hashes: int, sketch_size: int,
                 hash_seed: Any) -> None:
        self._eps = _epsilon(epsilon)
        self.epsilon = float(epsilon)
        self.num_hashes = _int(num_hashes, "num_hashes", 1, 1 << 16)
        self.sketch_size = _int(sketch_size, "sketch_size", 2, 1 << 24)
        self.hash_seed = _resolve_seed(hash_seed)
        self._tables = hash_tables(self.hash_seed, self.num_hashes)

    @property
    def event(self) -> events.Epsilon:
        """Privacy event of one report."""
        return events.Epsilon(self.epsilon)

    def buckets(self, items: Any) -> np.ndarray:
        """``(len(items), num_hashes)`` sketch columns ``h_j(item)`` (the public hashes)."""
        fp = fingerprint(items)
        out = np.empty((fp.size, self.num_hashes), np.int64)
        _lk.hash_buckets(self._tables, np.zeros(fp.size, np.int64), fp, self.sketch_size,
                         out)
        return out

    def _frequency(self, matrix: np.ndarray, n: int, candidates: Any) -> np.ndarray:
        k, m = self.num_hashes, self.sketch_size
        cols = self.buckets(candidates)
        vals = matrix[np.arange(k)[None, :], cols].mean(axis=1)
        return m / (m - 1) * (vals - n / m)

    def _plugin(self, counts: np.ndarray, n: int) -> np.ndarray:
        c = np.clip(counts, 0, n)
        rest = max(0.0, n - float(c.sum()))
        sq = float(np.sum(c * c))
        return np.array([self.variance(n, ci, sq - ci * ci + rest) for ci in c], np.float64)

    def _sketch_of(self, data: Any) -> Sketch:
        if isinstance(data, Sketch):
            return data
        return self.aggregate(data)


class CountMeanSketch(_SketchBase):
    """Apple's count-mean sketch (CMS; "Learning with Privacy at Scale", 2017).

    Parameters
    ----------
    epsilon : float
        Per-report privacy parameter.
    num_hashes : int
        ``k``: number of hash functions (rows of the sketch matrix).
    sketch_size : int
        ``m``: width of the sketch (bits per report).
    hash_seed : int, bytes or None
        Seed of the public hash functions (:func:`hash_tables`); None draws a fresh one
        (read it back from ``.hash_seed`` to configure servers).

    Notes
    -----
    Client: pick ``j`` uniform in ``[0, k)``, encode ``v`` as the ±1 vector with +1 only at
    ``h_j(v)``, flip every coordinate independently with probability
    ``1 / (1 + e^(eps/2))``, send ``(j, vector)``.  Server: the sketch matrix row ``j``
    accumulates ``k (c/2 * vector + 1/2)`` with ``c = (e^(eps/2) + 1) / (e^(eps/2) - 1)``
    and the frequency of ``d`` is
    ``m / (m - 1) * (mean_j M[j, h_j(d)] - n / m)``, unbiased over the random hash
    functions (Apple 2017, Algorithms 1-3).

    **Privacy**

    ``epsilon``-LDP: two inputs' encodings differ in at most two coordinates, each
    flipped with probability ``1 / (1 + e^(eps/2))``, so the output ratio is at most
    ``(e^(eps/2))^2 = e^epsilon``; the row index is independent of the input (Apple 2017,
    Theorem 3.1).  Event: ``events.Epsilon(epsilon)``.

    **Numerics**

    The flip probability is irrational and sampled exactly.  The sketch is kept as
    integer tallies (:class:`Sketch`); the matrix and estimates are float
    post-processing.
    """

    def __repr__(self) -> str:
        return (f"CountMeanSketch(epsilon={self.epsilon!r}, num_hashes={self.num_hashes}, "
                f"sketch_size={self.sketch_size})")

    def __init__(self, epsilon: float, num_hashes: int = 64, sketch_size: int = 1024, *,
                 hash_seed: Any = None) -> None:
        super().__init__(epsilon, num_hashes, sketch_size, hash_seed)
        self._flip = _flip_threshold(self._eps / 2)
        with mpmath.workdps(40):
            e = mpmath.exp(_mpf(self._eps) / 2)
            self.flip_probability = float(1 / (1 + e))
            self.c = float((e + 1) / (e - 1))
            self._noise = float(e / (e - 1) ** 2)  # (c^2 - 1) / 4

    def perturb(self, items: Any, *, rng: Any = None) -> CmsReports:
        """Client side for every user at once (items: ints or strings, 1-D)."""
        fp = fingerprint(items)
        rows, words = self._perturb_words(fp, as_generator(rng))
        m = self.sketch_size
        nbytes = -(-m // 8)
        bits = words.view(np.uint8).reshape(fp.size, -1)[:, :nbytes]
        return CmsReports(rows, np.ascontiguousarray(bits))

    def _perturb_words(self, fp: np.ndarray, gen: Generator) -> tuple[np.ndarray, np.ndarray]:
        n = fp.size
        k, m = self.num_hashes, self.sketch_size
        nw = -(-m // 64)
        rows = np.empty(n, np.int64)
        words = np.empty((n, nw), np.uint64)
        thr = self._flip
        cw, term = thr.words, thr.terminal
        tables = self._tables
        wpc = _lanes_words(64 * nw) + 1.05
        chunk = _chunk_for(wpc, 1)
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.cms_client_kernel(buf, st, key, nonces, chunk_, base, count, fp, tables, k,
                                  m, rows, words, cw, term, force, start, resume, pcount,
                                  pidx)

        def finish(idx: int, src: _exact.WordSource) -> None:
            i, r = divmod(idx, m)
            if thr.decide(src, forced):
                words[i, r // 64] ^= np.uint64(1 << (r % 64))

        _run_lanes(gen, n, wpc, chunk, m, call, finish)
        return rows, words

    def _words_of(self, reports: Any) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(reports, tuple) or len(reports) != 2:
            raise TypeError("reports must be a CmsReports (rows, bits) pair")
        rows = np.ascontiguousarray(reports[0], dtype=np.int64)
        bits = np.asarray(reports[1])
        m = self.sketch_size
        nbytes = -(-m // 8)
        if bits.dtype != np.uint8 or bits.ndim != 2 or bits.shape != (rows.size, nbytes):
            raise ValueError(f"reports.bits must be a ({rows.size}, {nbytes}) uint8 array")
        if rows.ndim != 1 or (rows.size and (rows.min() < 0 or rows.max() >= self.num_hashes)):
            raise ValueError(f"reports.rows must be 1-D in [0, {self.num_hashes})")
        nw = -(-m // 64)
        words = np.zeros((rows.size, nw * 8), np.uint8)
        words[:, :nbytes] = bits
        return rows, words.view(np.uint64)

    def aggregate(self, reports: CmsReports) -> Sketch:
        """Integer tallies of the reports (add sketches of shards with ``+``)."""
        rows, words = self._words_of(reports)
        return self._tally(rows, words)

    def _tally(self, rows: np.ndarray, words: np.ndarray) -> Sketch:
        k, m = self.num_hashes, self.sketch_size
        parts = max(1, min(numba.get_num_threads(), rows.size // 4096 + 1))
        ones = np.zeros((parts, k, m), np.int64)
        totals = np.zeros((parts, k), np.int64)
        with _threads(rows.size * m / 8):
            _lk.count_bits(rows, words, k, m, parts, ones, totals)
        return Sketch(ones.sum(axis=0), totals.sum(axis=0), int(rows.size))

    def collect(self, items: Any, *, rng: Any = None, batch: int = 1 << 18) -> Sketch:
        """Perturb and aggregate in batches (simulation of many clients in bounded memory).

        Equivalent to ``aggregate(perturb(items))`` in distribution.
        """
        fp = fingerprint(items)
        gen = as_generator(rng)
        batch = _int(batch, "batch", 1)
        total: Sketch | None = None
        for a in range(0, max(fp.size, 1), batch):
            rows, words = self._perturb_words(fp[a:a + batch], gen)
            s = self._tally(rows, words)
            total = s if total is None else total + s
        assert total is not None
        return total

    def matrix(self, sketch: Sketch) -> np.ndarray:
        """Apple's sketch matrix ``M[j, r] = sum over row-j reports of k (c/2 x_r + 1/2)``."""
        k = self.num_hashes
        t = sketch.totals[:, None].astype(np.float64)
        plus_minus = 2.0 * sketch.ones - t  # sum of the ±1 entries
        return k * (self.c / 2 * plus_minus + t / 2)

    def estimate(self, data: CmsReports | Sketch, candidates: Any) -> FrequencyEstimate:
        """Unbiased count estimates of ``candidates`` from reports or a :class:`Sketch`.

        The variances are the plug-in of :meth:`variance` with the other candidates'
        clipped estimates as the other items' counts (mass not covered by the candidates
        counted as distinct singletons).
        """
        sk = self._sketch_of(data)
        counts = self._frequency(self.matrix(sk), sk.n, candidates)
        return FrequencyEstimate(counts, self._plugin(counts, sk.n), sk.n)

    def variance(self, n: float, count: float = 0.0, sum_sq_others: float | None = None
                 ) -> float:
        """Variance of the count estimate of an item, over the clients' randomness and
        random (3-independent) hash functions.

        ``(m/(m-1))^2 [n e^(eps/2) / (e^(eps/2) - 1)^2
        + (1/m)(1 - 1/m)((n - c)(1 - 1/k) + S2 / k)]`` with ``c`` = ``count`` and
        ``S2 = sum over other items v of n_v^2`` (``sum_sq_others``; default ``n - c``:
        every other user holds a distinct item).  The first term is Apple's
        ``n (c_eps^2 - 1) / 4``; the second comes from hash collisions.
        """
        k, m = self.num_hashes, self.sketch_size
        s2 = (n - count) if sum_sq_others is None else sum_sq_others
        v = n * self._noise + (1 / m) * (1 - 1 / m) * ((n - count) * (1 - 1 / k) + s2 / k)
        return (m / (m - 1)) ** 2 * v


class HadamardCountMeanSketch(_SketchBase):
    """Apple's Hadamard count-mean sketch (HCMS): one bit per report.

    Parameters
    ----------
    epsilon : float
        Per-report privacy parameter.
    num_hashes : int
        ``k`` rows.
    sketch_size : int
        ``m`` columns, a power of two.
    hash_seed : int, bytes or None
        Seed of the public hash functions.

    Notes
    -----
    Client: ``j`` uniform in ``[0, k)``, ``l`` uniform in ``[0, m)``, the Hadamard entry
    ``w = H_m[h_j(v), l]`` flipped with probability ``1 / (1 + e^eps)``; send
    ``(j, l, w)``.  Server: ``M[j, l] += k c w`` with ``c = (e^eps + 1) / (e^eps - 1)``,
    then ``M <- M H_m^T`` and the CMS estimator (Apple 2017, Algorithms 4-5).

    **Privacy**

    ``epsilon``-LDP: one bit of randomized response (ratio ``e^epsilon``); ``j`` and
    ``l`` do not depend on the input (Apple 2017, Theorem 3.2).
    Event: ``events.Epsilon(epsilon)``.

    **Numerics**

    The flip probability is irrational and sampled exactly; the transform is float
    post-processing.
    """

    def __init__(self, epsilon: float, num_hashes: int = 64, sketch_size: int = 1024, *,
                 hash_seed: Any = None) -> None:
        super().__init__(epsilon, num_hashes, sketch_size, hash_seed)
        m = self.sketch_size
        if m & (m - 1):
            raise ValueError(f"sketch_size must be a power of two, got {m}")
        self._flip = _flip_threshold(self._eps)
        with mpmath.workdps(40):
            e = mpmath.exp(_mpf(self._eps))
            self.flip_probability = float(1 / (1 + e))
            self.c = float((e + 1) / (e - 1))

    def __repr__(self) -> str:
        return (f"HadamardCountMeanSketch(epsilon={self.epsilon!r}, "
                f"num_hashes={self.num_hashes}, sketch_size={self.sketch_size})")

    def perturb(self, items: Any, *, rng: Any = None) -> HcmsReports:
        """Client side for every user at once (items: ints or strings, 1-D)."""
        fp = fingerprint(items)
        n = fp.size
        k, m = self.num_hashes, self.sketch_size
        rows = np.empty(n, np.int64)
        cols = np.empty(n, np.int64)
        out = np.empty(n, np.uint8)
        thr = self._flip
        cw, term = thr.words, thr.terminal
        tables = self._tables
        wpc = 7.5 / 64 + 2.1
        chunk = _chunk_for(wpc)
        forced = _forced()

        def call(buf, st, key, nonces, chunk_, base, count, force, start, resume, pcount,
                 pidx):
            _lk.hcms_client_kernel(buf, st, key, nonces, chunk_, base, count, fp, tables, k,
                                   m, rows, cols, out, cw, term, force, start, resume, pcount,
                                   pidx)

        def finish(i: int, src: _exact.WordSource) -> None:
            if thr.decide(src, forced):
                out[i] ^= 1

        _run_lanes(as_generator(rng), n, wpc, chunk, 64, call, finish)
        return HcmsReports(rows, cols, out)

    def aggregate(self, reports: HcmsReports) -> Sketch:
        """Integer tallies: ``ones[j, l]`` = sum of the ±1 report bits at (j, l)."""
        if not isinstance(reports, tuple) or len(reports) != 3:
            raise TypeError("reports must be an HcmsReports (rows, cols, bits) triple")
        k, m = self.num_hashes, self.sketch_size
        rows = np.asarray(reports[0], np.int64)
        cols = np.asarray(reports[1], np.int64)
        bits = np.asarray(reports[2])
        n = rows.size
        if cols.shape != (n,) or bits.shape != (n,) or rows.ndim != 1:
            raise ValueError("reports.rows, .cols and .bits must be 1-D of equal length")
        if n and (rows.min() < 0 or rows.max() >= k or cols.min() < 0 or cols.max() >= m):
            raise ValueError("reports.rows / reports.cols out of the sketch's range")
        cell = rows * m + cols
        pm = 2 * bits.astype(np.int64) - 1
        ones = np.bincount(cell, weights=pm, minlength=k * m)
        ones = np.rint(ones).astype(np.int64).reshape(k, m)
        totals = np.bincount(rows, minlength=k).astype(np.int64)
        return Sketch(ones, totals, n)

    def matrix(self, sketch: Sketch) -> np.ndarray:
        """The transformed sketch ``M H^T`` (Apple's Algorithm 5)."""
        mat = self.num_hashes * self.c * sketch.ones.astype(np.float64)
        return _fwht(mat)

    def estimate(self, data: HcmsReports | Sketch, candidates: Any) -> FrequencyEstimate:
        """Unbiased count estimates of ``candidates`` (plug-in variances as for CMS)."""
        sk = self._sketch_of(data)
        counts = self._frequency(self.matrix(sk), sk.n, candidates)
        return FrequencyEstimate(counts, self._plugin(counts, sk.n), sk.n)

    def variance(self, n: float, count: float = 0.0, sum_sq_others: float | None = None
                 ) -> float:
        """Variance of a count estimate over the clients' randomness and random
        (3-independent) hash functions:
        ``(m/(m-1))^2 [n c^2 - c_d - (n - c_d) E[a^2] + S2 (1/(k m))(1 - 1/m)]`` with
        ``E[a^2] = (1/(k m))(1 - 1/m) + 1/m^2``, ``c_d`` = ``count``,
        ``S2 = sum over other items of n_v^2`` (default ``n - c_d``)."""
        k, m = self.num_hashes, self.sketch_size
        s2 = (n - count) if sum_sq_others is None else sum_sq_others
        ea2 = (1 / (k * m)) * (1 - 1 / m) + 1 / m ** 2
        v = n * self.c ** 2 - count - (n - count) * ea2 + s2 * (1 / (k * m)) * (1 - 1 / m)
        return (m / (m - 1)) ** 2 * v


def _fwht(a: np.ndarray) -> np.ndarray:
    """Fast Walsh-Hadamard transform along the last axis (Sylvester order, unnormalized)."""
    a = a.copy()
    m = a.shape[-1]
    h = 1
    while h < m:
        a = a.reshape(*a.shape[:-1], m // (2 * h), 2, h)
        x = a[..., 0, :].copy()
        y = a[..., 1, :]
        a[..., 0, :] = x + y
        a[..., 1, :] = x - y
        a = a.reshape(*a.shape[:-3], m)
        h *= 2
    return a


# ============================================================================ RAPPOR
def rappor_epsilon(f: float, p: float, q: float, num_hashes: int) -> tuple[float, float]:
    """RAPPOR's privacy: ``(epsilon_one_report, epsilon_longitudinal)``, rounded up.

    Erlingsson, Pihur, Korolova (CCS 2014), sec. 3: with
    ``q* = f (p + q) / 2 + (1 - f) q`` and ``p* = f (p + q) / 2 + (1 - f) p``,

    * one report: ``epsilon_1 = h ln(q* (1 - p*) / (p* (1 - q*)))``;
    * any number of reports of the same value (the permanent response bounds them):
      ``epsilon_inf = 2 h ln((1 - f/2) / (f/2))`` (``inf`` for ``f = 0``).

    Returns absolute values (if ``q < p`` the roles of the two bit values swap).
    """
    fr, pr, qr = _prob(f, "f"), _prob(p, "p"), _prob(q, "q")
    h = _int(num_hashes, "num_hashes", 1)
    with mpmath.workdps(60):
        ff, pp, qq = _mpf(fr), _mpf(pr), _mpf(qr)
        qs = ff * (pp + qq) / 2 + (1 - ff) * qq
        ps = ff * (pp + qq) / 2 + (1 - ff) * pp
        if qs == ps:
            e1 = mpmath.mpf(0)
        elif min(qs, ps) <= 0 or max(qs, ps) >= 1:
            e1 = mpmath.inf
        else:
            e1 = abs(h * mpmath.log(qs * (1 - ps) / (ps * (1 - qs))))
        if ff == 0:
            einf = mpmath.inf
        else:
            einf = 2 * h * mpmath.log((1 - ff / 2) / (ff / 2))
        return (math.inf if e1 == mpmath.inf else _float_up(e1),
                math.inf if einf == mpmath.inf else _float_up(einf))


class RapporReports(NamedTuple):
    """RAPPOR reports: ``cohorts (n,) int64`` and the reported Bloom bits
    ``bits (n, ceil(m / 8)) uint8`` packed like ``np.packbits(..., bitorder="little")``."""

    cohorts: np.ndarray
    bits: np.ndarray


class RapporCounts(NamedTuple):
    """Aggregated RAPPOR reports: ``counts[j, i]`` reports of cohort j with bit i set and
    ``totals[j]`` reports of cohort j."""

    counts: np.ndarray
    totals: np.ndarray


@dataclasses.dataclass(frozen=True)
class RapporDecoding:
    """Result of :meth:`Rappor.decode`.

    Attributes
    ----------
    candidates : list
        The candidate list, in the given order.
    counts : numpy.ndarray
        Estimated number of clients per candidate (0 where not selected by the
        regression).
    std_errors : numpy.ndarray
        Standard errors of ``counts`` (``nan`` where not selected).
    p_values : numpy.ndarray
        One-sided p-values of ``count > 0`` (1 where not selected).
    detected : numpy.ndarray of bool
        Significant after the Bonferroni correction (``p < alpha / len(candidates)``).
    """

    candidates: list
    counts: np.ndarray
    std_errors: np.ndarray
    p_values: np.ndarray
    detected: np.ndarray

    def top(self) -> list[tuple[Any, float, float]]:
        """Detected candidates as (candidate, count, std_error), largest count first."""
        idx = np.flatnonzero(self.detected)
        idx = idx[np.argsort(-self.counts[idx], kind="stable")]
        return [(self.candidates[i], float(self.counts[i]), float(self.std_errors[i]))
                for i in idx]


class Rappor:
    """RAPPOR (Erlingsson, Pihur, Korolova, CCS 2014): Bloom filter, permanent and
    instantaneous randomized response, cohorts, regression decoding.

    Parameters
    ----------
    num_bits : int
        ``k`` in the paper: Bloom filter size ``m``.
    num_hashes : int
        ``h``: hash functions per cohort.
    num_cohorts : int
        Number of cohorts (each with its own ``h`` hash functions).
    f : float
        Permanent randomized response: each Bloom bit is replaced by a fair coin with
        probability ``f`` (memoized per client and value).
    p, q : float
        Instantaneous randomized response: a reported bit is 1 with probability ``q`` if
        the permanent bit is 1, ``p`` if it is 0 (``p != q``).
    hash_seed : int, bytes or None
        Seed of the public Bloom hash functions (:func:`hash_tables`; function
        ``cohort * h + t`` is the ``t``-th hash of a cohort).

    Notes
    -----
    The permanent response of client ``id`` for a value is a deterministic function of
    ``(secret, id, value)``: block 0 of ChaCha20 under ``secret`` with nonce
    ``(id, 0x52415050)`` gives the client key (its first 32 bytes) and the client's cohort
    (exactly uniform on ``[0, num_cohorts)`` from its last 32 bytes), and the coins are the
    ChaCha20 stream under the client key with nonce ``(fingerprint(value), 0x52415051)``.
    Re-encoding the same value reuses the same permanent bits, which is what bounds the
    longitudinal privacy loss; only the instantaneous response is fresh (from ``rng``).
    The ``secret`` stays on the clients: whoever holds it can remove the permanent
    noise.

    **Privacy**

    Neighbouring inputs: any two values of one client.  One report is
    ``epsilon_1``-LDP and any number of reports of the same value are jointly
    ``epsilon_inf``-LDP (:func:`rappor_epsilon`; paper sec. 3.2, 3.3).  Events:
    :attr:`event` (``Epsilon(epsilon_1)``, per report) and :attr:`longitudinal_event`
    (``Epsilon(epsilon_inf)``, a cap on all reports of one value: account a client's
    reports as ``min(sum of epsilon_1, epsilon_inf)``).  Reports of *different* values of
    one client each use their own permanent response and compose.

    **Numerics**

    ``f, p, q`` are the exact binary rationals of the floats and are sampled exactly.
    Decoding is float linear algebra (post-processing).
    """

    def __init__(self, num_bits: int = 128, num_hashes: int = 2, num_cohorts: int = 64,
                 f: float = 0.5, p: float = 0.5, q: float = 0.75, *,
                 hash_seed: Any = 0) -> None:
        self.num_bits = _int(num_bits, "num_bits", 1, 1 << 20)
        self.num_hashes = _int(num_hashes, "num_hashes", 1, 64)
        if self.num_hashes > self.num_bits:
            raise ValueError("num_hashes must be <= num_bits")
        self.num_cohorts = _int(num_cohorts, "num_cohorts", 1, 1 << 16)
        self._f, self._p, self._q = _prob(f, "f"), _prob(p, "p"), _prob(q, "q")
        if self._p == self._q:
            raise ValueError("p and q must differ (p == q reveals nothing)")
        if self._f == 1:
            raise ValueError("f must be < 1 (f = 1 reveals nothing)")
        self.f, self.p, self.q = float(f), float(p), float(q)
        self.hash_seed = _resolve_seed(hash_seed)
        self._tables = hash_tables(self.hash_seed, self.num_cohorts * self.num_hashes)
        ft = _Threshold(self._f)
        self._fw, self._ft = ft.words, ft.terminal
        qt, pt = _Threshold(self._q), _Threshold(self._p)
        length = max(len(qt.words), len(pt.words), 1)
        self._qw, self._qt = self._pad(qt, length)
        self._pw, self._pt = self._pad(pt, length)
        self.epsilon_one, self.epsilon_longitudinal = rappor_epsilon(
            f, p, q, self.num_hashes)

    @staticmethod
    def _pad(t: _Threshold, length: int) -> tuple[np.ndarray, int]:
        if t.terminal == 2:  # c = 1: all-one expansion, ties decide 1
            return np.full(length, (1 << 64) - 1, np.uint64), 1
        w = np.zeros(length, np.uint64)
        w[:len(t.words)] = t.words
        return w, 0

    def __repr__(self) -> str:
        return (f"Rappor(num_bits={self.num_bits}, num_hashes={self.num_hashes}, "
                f"num_cohorts={self.num_cohorts}, f={self.f!r}, p={self.p!r}, q={self.q!r})")

    @property
    def event(self) -> events.Epsilon:
        """Privacy event of one report (``epsilon_1``)."""
        return events.Epsilon(self.epsilon_one)

    @property
    def longitudinal_event(self) -> events.Epsilon:
        """Cap on any number of reports of one value (``epsilon_inf``)."""
        return events.Epsilon(self.epsilon_longitudinal)

    # -- clients
    def _clients(self, values: Any, client_ids: Any, secret: Any
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        fp = fingerprint(values)
        ids = np.asarray(client_ids)
        if ids.dtype.kind not in "iu":
            raise TypeError(f"client_ids must be integers, got dtype {ids.dtype}")
        ids = ids.astype(np.int64 if ids.dtype.kind == "i" else np.uint64).reshape(-1)
        ids = ids.view(np.uint64) if ids.dtype == np.int64 else ids
        if ids.size != fp.size:
            raise ValueError(f"client_ids has {ids.size} entries, values has {fp.size}")
        if not isinstance(secret, (bytes, bytearray, memoryview)) or len(bytes(secret)) != 32:
            raise TypeError("secret must be 32 bytes")
        key = np.frombuffer(bytes(secret), "<u4").astype(np.uint32)
        return fp, np.ascontiguousarray(ids), key

    def cohorts(self, client_ids: Any, secret: bytes) -> np.ndarray:
        """Each client's permanent cohort (deterministic from ``secret`` and the id)."""
        _, ids, key = self._clients(np.zeros(np.asarray(client_ids).size, np.int64),
                                    client_ids, secret)
        out = np.empty(ids.size, np.int64)
        with _threads(ids.size * 32):
            _lk.rappor_cohorts(key, ids, self.num_cohorts, _RAPPOR_TAG, out)
        return out

    def _prr_words(self, fp: np.ndarray, ids: np.ndarray, key: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
        coh = np.empty(ids.size, np.int64)
        nw = -(-self.num_bits // 64)
        prr = np.empty((ids.size, nw), np.uint64)
        with _threads(ids.size * 32 * nw):
            _lk.rappor_prr(key, ids, fp, self.num_cohorts, self._tables, self.num_hashes,
                           self.num_bits, self._fw, self._ft, _RAPPOR_TAG, coh, prr)
        return coh, prr

    def _pack(self, words: np.ndarray) -> np.ndarray:
        nbytes = -(-self.num_bits // 8)
        return np.ascontiguousarray(words.view(np.uint8).reshape(words.shape[0], -1)[:, :nbytes])

    def permanent(self, values: Any, client_ids: Any, secret: bytes) -> RapporReports:
        """The memoized permanent randomized responses (what :meth:`encode` starts from)."""
        fp, ids, key = self._clients(values, client_ids, secret)
        coh, prr = self._prr_words(fp, ids, key)
        return RapporReports(coh, self._pack(prr))

    def encode(self, values: Any, client_ids: Any, secret: bytes, *, rng: Any = None
               ) -> RapporReports:
        """One report per client (vectorized over clients).

        Parameters
        ----------
        values : array_like
            Each client's value (ints or strings), 1-D.
        client_ids : array_like of int
            Stable 64-bit client identifiers (the permanent response is memoized per id).
        secret : bytes
            32-byte client secret (never sent).
        rng : None, Generator or bytes, optional
            Randomness of the instantaneous response.
        """
        fp, ids, key = self._clients(values, client_ids, secret)
        coh, prr = self._prr_words(fp, ids, key)
        gen = as_generator(rng)
        n = ids.size
        m = self.num_bits
        out = np.empty_like(prr)
        nw = prr.shape[1]
        wpc = _lanes_words(64 * nw) * 1.1
        chunk = _chunk_for(wpc, 1)
        for lo, hi, buf, st, nonces in _drive.batches(gen, n, wpc, chunk) if n else ():
            nch = buf.shape[0]
            start = lo + np.arange(nch, dtype=np.int64) * chunk
            resume = np.empty(nch, np.int64)
            with _threads((hi - lo) * wpc):
                _lk.rappor_irr_kernel(buf, st, gen._key_words, nonces, chunk, lo, hi - lo,
                                      prr, m, self._qw, self._qt, self._pw, self._pt, out,
                                      start, resume)
            _drive.check_wrap(st)
        return RapporReports(coh, self._pack(out))

    # -- server
    def aggregate(self, reports: RapporReports) -> RapporCounts:
        """Per-cohort bit counts of the reports."""
        if not isinstance(reports, tuple) or len(reports) != 2:
            raise TypeError("reports must be a RapporReports (cohorts, bits) pair")
        coh = np.ascontiguousarray(reports[0], dtype=np.int64)
        bits = np.asarray(reports[1])
        m = self.num_bits
        nbytes = -(-m // 8)
        if bits.dtype != np.uint8 or bits.shape != (coh.size, nbytes) or coh.ndim != 1:
            raise ValueError(f"reports.bits must be a ({coh.size}, {nbytes}) uint8 array")
        if coh.size and (coh.min() < 0 or coh.max() >= self.num_cohorts):
            raise ValueError(f"reports.cohorts must lie in [0, {self.num_cohorts})")
        nw = -(-m // 64)
        words = np.zeros((coh.size, nw * 8), np.uint8)
        words[:, :nbytes] = bits
        parts = max(1, min(numba.get_num_threads(), coh.size // 4096 + 1))
        counts = np.zeros((parts, self.num_cohorts, m), np.int64)
        totals = np.zeros((parts, self.num_cohorts), np.int64)
        with _threads(coh.size * m / 8):
            _lk.count_bits(coh, words.view(np.uint64), self.num_cohorts, m, parts, counts,
                           totals)
        return RapporCounts(counts.sum(axis=0), totals.sum(axis=0))

    def bit_estimates(self, data: RapporReports | RapporCounts
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased estimates of how many clients of each cohort have each true Bloom bit
        set, and their variances.

        ``t_ji = (c_ji - p* N_j) / (q* - p*)`` with ``p* = p + f (q - p) / 2``,
        ``q* - p* = (1 - f)(q - p)`` (paper sec. 4); variance
        ``(t q* (1 - q*) + (N_j - t) p* (1 - p*)) / (q* - p*)^2`` (plug-in: ``t`` clipped
        to ``[0, N_j]``; exact for the true ``t``, the clients' permanent responses being
        fresh).
        """
        cnt = data if isinstance(data, RapporCounts) else self.aggregate(data)
        counts = np.asarray(cnt.counts, np.float64)
        totals = np.asarray(cnt.totals, np.float64)[:, None]
        f, p, q = self.f, self.p, self.q
        ps = p + f * (q - p) / 2
        qs = ps + (1 - f) * (q - p)
        t = (counts - ps * totals) / (qs - ps)
        tc = np.clip(t, 0, totals)
        var = (tc * qs * (1 - qs) + (totals - tc) * ps * (1 - ps)) / (qs - ps) ** 2
        return t, var

    def bloom_bits(self, candidates: Any) -> np.ndarray:
        """``(num_cohorts, num_bits, len(candidates))`` 0/1 Bloom-filter design tensor."""
        fp = fingerprint(candidates)
        c, h, m = self.num_cohorts, self.num_hashes, self.num_bits
        out = np.zeros((c, m, fp.size), np.float64)
        pos = np.empty((fp.size, h), np.int64)
        for j in range(c):
            _lk.hash_buckets(self._tables, np.full(fp.size, j * h, np.int64), fp, m, pos)
            for t in range(h):
                out[j, pos[:, t], np.arange(fp.size)] = 1.0
        return out

    def decode(self, data: RapporReports | RapporCounts, candidates: Sequence[Any], *,
               alpha: float = 0.05) -> RapporDecoding:
        """Estimate candidate counts by regression, keep the significant ones.

        Erlingsson et al. sec. 4: per cohort ``j`` and bit ``i``, the number of clients
        whose true Bloom bit is set is estimated without bias by
        ``t_ji = (c_ji - (p + f (q - p) / 2) N_j) / ((1 - f)(q - p))``; it is regressed on
        the candidates' Bloom bits (weighted by the cohort's share ``N_j / N``, so that
        coefficients are client counts).  Non-negative least squares
        (``scipy.optimize.nnls``, in place of the paper's LASSO) selects candidates;
        ordinary least squares on the selected ones gives counts, standard errors and
        one-sided t-test p-values; candidates with ``p < alpha / len(candidates)``
        (Bonferroni) are detected.
        """
        from scipy import optimize, stats

        cnt = data if isinstance(data, RapporCounts) else self.aggregate(data)
        cands = list(candidates)
        if not cands:
            raise ValueError("candidates must not be empty")
        a = float(alpha)
        if not 0 < a < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        totals = np.asarray(cnt.totals, np.float64)
        n = float(totals.sum())
        t, _ = self.bit_estimates(cnt)
        design = self.bloom_bits(cands) * (totals / max(n, 1.0))[:, None, None]
        x = design.reshape(-1, len(cands))
        y = t.reshape(-1)
        keep = np.flatnonzero(x.any(axis=0))
        beta = np.zeros(len(cands))
        if keep.size:
            beta[keep], _ = optimize.nnls(x[:, keep], y, maxiter=50 * len(cands) + 100)
        sel = np.flatnonzero(beta > 0)
        est = np.zeros(len(cands))
        se = np.full(len(cands), np.nan)
        pv = np.ones(len(cands))
        if sel.size:
            xs = x[:, sel]
            coef, _, rank, _ = np.linalg.lstsq(xs, y, rcond=None)
            df = max(1, xs.shape[0] - sel.size)
            resid = y - xs @ coef
            sigma2 = float(resid @ resid) / df
            cov = sigma2 * np.linalg.pinv(xs.T @ xs)
            s = np.sqrt(np.maximum(np.diag(cov), 0.0))
            est[sel] = coef
            se[sel] = s
            with np.errstate(divide="ignore", invalid="ignore"):
                tstat = np.where(s > 0, coef / s, np.inf * np.sign(coef))
            pv[sel] = stats.t.sf(tstat, df)
        detected = pv < a / len(cands)
        return RapporDecoding(cands, est, se, pv, detected)
