"""The per-key quantile mechanism: public candidate grid, rank utilities, exact sampling.

Steps (each a function, shared by :mod:`dpfast.tables.quantiles`, :mod:`dpfast.dask` and
:mod:`dpfast.tables.autobounds`):

1. :func:`grid` -- the public candidates ``g_0 < ... < g_{m-1}`` (data-independent).
2. :func:`slots_of` -- each clamped value's *slot* on the grid (``2p + 1``: equal to
   ``g_p``; ``2p``: strictly between ``g_{p-1}`` and ``g_p``).
3. :func:`bound_slots` -- contribution bounding that keeps rows (same keyed per-id
   streams and bounding policies as the sum's bounding), then :func:`slot_table`: the
   sparse, mergeable ``(key, slot) -> rows`` table (a cluster sums partial tables: the
   result is the same).
4. :func:`targets` -- the scaled target ``T`` per key, exact (:func:`scale`).
5. :func:`sample` -- per key, the exponential mechanism over the grid with utility
   ``u_p = -max(D a_p - T, T - D b_p, 0)`` (``a_p`` rows ``< g_p``, ``b_p`` rows
   ``<= g_p``), sampled exactly by Gumbel-max
   (:func:`dpfast.selection.gumbel.argmax_words`) on words addressed per key.

Utility (:func:`scale`)
-----------------------
``q = num / den`` exactly with ``den <= 2**16`` (0, 1, 1/2, 1/4, 3/4, 1/8, ...: min, max,
median, quartiles): ``D = den``, ``T = num n`` -- ``u_p = -den dist(q n, [a_p, b_p])``, the
distance of the exact target rank ``q n`` to the candidate's ranks in units of ``1/den``.
One row added below ``g_p`` moves ``D a_p - T`` by ``den - num`` and ``T - D b_p`` by
``num - den``; at ``g_p``: by ``-num`` and ``num - den``; above: by ``-num`` and ``num``
(removal: the opposite), so the utility sensitivity is ``S = max(num, den - num)`` per row
while one rank step is worth ``den``: for the median ``S = 1`` for a step of 2, twice the
resolution of Smith's ``-dist(floor(q n), [a_p, b_p])`` at the same ε (at ``q = 0, 1`` they
coincide).  With no tie at ``g_p`` (``a_p = b_p``) it is OpenDP's quantile score
``|(den - num) a_p - num (n - b_p)|`` (``make_quantile_score_candidates``); a candidate
with ties scores the distance to its whole rank interval (0 when ``q n`` falls inside),
never less than that score.  Any other ``q`` (0.9 as a float has a denominator of
``2**53``): Smith's utility, ``D = S = 1``, ``T = floor(q n)``.  Utilities are integers,
capped at ``2**53`` (exact in float64; only a key with more than ``2**37`` rows can reach the
cap, and a cap is 1-Lipschitz); a key with more than ``2**46`` rows raises OverflowError.

Randomness
----------
Quantile ``j`` of a release draws from the ChaCha20 key
``Q_j = BLAKE2b(key=release key, data=QUANTILE_TAG || j)`` (the release key of
:mod:`dpfast.tables.keynoise`); key ``K``'s words are the keystream of ``Q_j`` at the
96-bit nonce of ``K`` (:func:`dpfast.tables.keynoise.key_nonces`, part 0 of ``Q_j``), one
64-bit word per candidate, block counter from 0.  The rare undecided row continues with
the generator keyed ``BLAKE2b(key=Q_j, data=EXACT_TAG || nonce of K)``.  So a key's
released quantile depends only on (key, release stream, the key's own slot counts): not
on the other keys, the row order or a cluster's partitioning.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from dpfast import _native
from dpfast import random as _random
from dpfast._kernels import quantile as _kq
from dpfast.noise import _addressed
from dpfast.selection import gumbel as _gumbel
from dpfast.selection._bits import _LazySource
from dpfast.selection._validate import _coefficient
from dpfast.tables import _keys, keynoise

__all__ = ["QUANTILE_TAG", "EXACT_TAG", "MAX_DEN", "grid", "slots_of", "bound_slots",
           "slot_table", "scale", "targets", "sample", "rank_error"]

QUANTILE_TAG = b"dpfast.tables.quantile v1"
EXACT_TAG = b"dpfast.tables.quantile-exact v1"
MAX_CANDIDATES = 1 << 16
#: largest denominator of an exact q that gets the scaled utility (see the module docstring)
MAX_DEN = 1 << 16
_MAX_ROWS = 1 << 46  # rows of one key: D a_p and num n stay below 2**62 in int64
_DENSE_CELLS_LOG2 = 17  # cells of one bucket's dense (code, slot) histogram (1 MiB)
_CHUNK_CELLS = 1 << 21  # utilities of this many (key, candidate) cells per sampling step


def _count_arg(n: object, name: str) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(n).__name__}")
    if not 1 <= int(n) <= MAX_CANDIDATES:
        raise ValueError(f"{name} must be in [1, {MAX_CANDIDATES}], got {n}")
    return int(n)


def grid(bounds: tuple[float, float] | None, n_candidates: object,
         candidates: object,
         integer: bool) -> np.ndarray:
    """The public candidate grid (float64, strictly increasing).

    ``candidates`` given: those (finite, strictly increasing, 1 to 2**16 of them).
    Otherwise ``n_candidates`` evenly spaced points of ``bounds`` (``np.linspace``), for
    integer values the distinct integers nearest to them (all of ``[lo, hi]`` when it has
    at most ``n_candidates`` integers).
    """
    if candidates is not None:
        g = np.asarray(candidates)
        if g.dtype == np.bool_ or g.dtype.kind not in "iuf":
            raise TypeError(f"candidates must be numbers, got dtype {g.dtype}")
        g = g.astype(np.float64)
        if g.ndim != 1 or not 1 <= g.size <= MAX_CANDIDATES:
            raise ValueError(f"candidates must be 1-D with 1 to {MAX_CANDIDATES} points, "
                             f"got shape {g.shape}")
        if not np.isfinite(g).all():
            raise ValueError("candidates must be finite")
        if g.size > 1 and not (np.diff(g) > 0).all():
            raise ValueError("candidates must be strictly increasing")
        return np.ascontiguousarray(g)
    m = _count_arg(n_candidates, "n_candidates")
    assert bounds is not None
    lo, hi = float(bounds[0]), float(bounds[1])
    if integer and hi - lo + 1 <= m:
        return np.arange(int(bounds[0]), int(bounds[1]) + 1).astype(np.float64)
    g = np.linspace(lo, hi, m) if m > 1 else np.array([lo])
    if integer:
        g = np.unique(np.round(g))
    return np.unique(g)  # lo == hi: one candidate


def slots_of(values: np.ndarray, g: np.ndarray) -> np.ndarray:
    """int64 slot of each value (already clamped to ``[g_0, g_{m-1}]``) on the grid."""
    v = np.ascontiguousarray(values, np.float64)
    out = np.empty(v.shape[0], np.int64)
    m = g.shape[0]
    if v.shape[0]:
        span = float(g[-1] - g[0]) if m > 1 else 0.0
        even = m > 2 and span > 0 and np.isfinite(span) and bool(
            np.allclose(np.diff(g), span / (m - 1), rtol=1e-6, atol=0))
        inv = (m - 1) / span if even else 0.0
        _kq.grid_slots(v, np.ascontiguousarray(g, np.float64), float(g[0]), inv, even, out)
    return out


def bound_slots(codes: np.ndarray, ids: np.ndarray | None, k: int, c: int,
                skey: np.ndarray, slots: np.ndarray, policy: int = 0
                ) -> tuple[np.ndarray, np.ndarray]:
    """(key code, slot) of every kept row: per privacy id at most ``k`` keys and ``c`` rows
    per key (:func:`dpfast._kernels.quantile.bound_rows`); ``ids=None`` keeps every row.
    ``policy``: :func:`dpfast.tables.bounding.policy_code` of the bounding policy (the keys
    kept per id are those :func:`dpfast.tables.bounding.bound_codes` keeps)."""
    if ids is None:
        return codes, slots
    from dpfast._kernels import grouping as _kg

    n = codes.shape[0]
    id_codes, id_uniques = _keys.factorize_column(ids)
    n_ids = len(id_uniques)
    hashes = _keys.id_hashes(id_uniques)
    off = np.empty(n_ids + 1, np.int64)
    gkeys = np.empty(n, np.int64)
    gvals = np.empty(n, np.int64)
    _kg.group_by_id(id_codes, n_ids, codes, slots, True, off, gkeys, gvals,
                    np.empty(n, np.int32), _keys._threads())
    keep = np.empty(n, np.bool_)
    gk2, gst, gcn, graw = (np.empty(n, np.int64) for _ in range(4))  # scratch
    _kq.bound_rows(off, gkeys, gvals, hashes, skey, k, c, gk2, gst, gcn, graw, keep,
                   None if policy == 0 else np.int64(policy),
                   _keys._threads())
    return gkeys[keep], gvals[keep]


def slot_table(codes: np.ndarray, slots: np.ndarray, n_slots: int,
               weights: npt.ArrayLike | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sparse ``(key code, slot) -> rows`` table, sorted by (code, slot):
    ``(codes, slots, counts)``.  ``weights``: rows per input entry (merging partial
    tables); default one row per entry.  Slots lie in ``[0, n_slots)``."""
    n = codes.shape[0]
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z.copy(), z.copy()
    c = np.ascontiguousarray(codes, np.int64)
    use_w = weights is not None
    w = np.ascontiguousarray(weights, np.int64) if use_w else np.zeros(1, np.int64)
    oc = np.empty(n, np.int64)
    os_ = np.empty(n, np.int64)
    on = np.empty(n, np.int64)
    n_codes = int(c.max()) + 1
    sl = np.ascontiguousarray(slots, np.int64)
    shift = max(0, _DENSE_CELLS_LOG2 - int(n_slots - 1).bit_length())
    if n_slots <= 1 << 13 and (n_codes >> shift) * (1 << _DENSE_CELLS_LOG2) <= 16 * n + (1 << 22):
        size = _kq.key_slot_dense(c, sl, w, use_w, n_codes, int(n_slots), shift, oc, os_, on)
    else:  # large grids or very many keys: per-key runs
        size = _kq.key_slot_counts(c, sl, w, use_w, n_codes, int(n_slots), oc, os_, on)
    return oc[:size].copy(), os_[:size].copy(), on[:size].copy()


def scale(q: float) -> tuple[int, int]:
    """``(D, S)`` of quantile ``q``: one rank step moves the utility by ``D``, one row by at
    most ``S``.  ``q = num / den`` exactly with ``den <= MAX_DEN``: ``(den, max(num,
    den - num))`` (target ``T = num n``); else Smith's utility, ``(1, 1)`` (``T = floor(q
    n)``)."""
    fq = Fraction(q)
    num, den = fq.numerator, fq.denominator
    if den <= MAX_DEN:
        return den, int(max(num, den - num))
    return 1, 1


def targets(n_rows: np.ndarray, q: float) -> np.ndarray:
    """The scaled target ``T`` per key, exactly (``q`` the exact binary rational of its
    float): ``num n`` under the scaled utility, else ``floor(q n)`` (:func:`scale`)."""
    fq = Fraction(q)
    n = np.asarray(n_rows, np.int64).reshape(-1)
    if n.size and int(n.max()) > _MAX_ROWS:
        # unreachable below the 2**40 rows a release takes; a fixed message (no count)
        raise OverflowError("a key holds more than 2**46 rows: its rank utilities would "
                            "overflow")
    if fq.denominator <= MAX_DEN:
        return n * np.int64(fq.numerator)
    uniq, inv = np.unique(n, return_inverse=True)
    t = np.array([(fq.numerator * int(v)) // fq.denominator for v in uniq.tolist()],
                 np.int64)
    return t[inv.reshape(-1)] if uniq.size else np.zeros(0, np.int64)


def _words(qkey: bytes, nonces: np.ndarray, m: int) -> np.ndarray:
    """(rows, m) uint64 words: each row's keystream under ``qkey`` at its nonce."""
    rows = nonces.shape[0]
    nblocks = -(-m // 8)
    out = np.empty(rows * 16 * nblocks, np.uint32)
    if rows:
        _native.chacha20_streams(_addressed.key_words(qkey), np.ascontiguousarray(nonces),
                                 np.zeros(rows, np.uint32), nblocks, out)
    return np.ascontiguousarray(out.view(np.uint64).reshape(rows, 8 * nblocks)[:, :m])


def _exact_source(qkey: bytes, nonce: np.ndarray) -> _LazySource:
    call = int.from_bytes(np.ascontiguousarray(nonce, "<u4").tobytes(), "little")
    return _LazySource(_random.default_rng(_addressed.derive_key(qkey, EXACT_TAG, call)))


def sample(table: tuple[np.ndarray, np.ndarray, np.ndarray], cand: np.ndarray,
           cand_keys: np.ndarray | tuple[np.ndarray, ...], qs: tuple[float, ...], eps_q: float,
           sensitivity: int,
           m: int, rkey: bytes) -> np.ndarray:
    """Candidate index per key of ``cand`` (sorted key codes; ``cand_keys`` their
    canonical values) and per quantile: ``(len(cand), len(qs))`` int64.

    Each (key, quantile ``q``) is one exponential mechanism with ``epsilon = eps_q`` over
    the ``m`` candidates, with the utility of :func:`scale` and its sensitivity
    ``S * sensitivity`` (``sensitivity``: the rows ``c`` one person may keep per key):
    ``P(g_p) ∝ exp(eps_q u_p / (2 S c))``."""
    tc, ts, tn = table
    starts = np.searchsorted(tc, cand, side="left").astype(np.int64)
    ends = np.searchsorted(tc, cand, side="right").astype(np.int64)
    csum = np.concatenate([[0], np.cumsum(tn)]).astype(np.int64)
    n_rows = csum[ends] - csum[starts]
    out = np.zeros((cand.shape[0], len(qs)), np.int64)
    if cand.shape[0] == 0 or m == 1:
        return out
    step = max(1, _CHUNK_CELLS // m)
    for j, q in enumerate(qs):
        den, s_row = scale(q)
        c, c_f = _coefficient(eps_q, s_row * sensitivity, 2)
        t = targets(n_rows, q)
        qkey = _addressed.derive_key(rkey, QUANTILE_TAG, j)
        nonces = keynoise.key_nonces(qkey, cand_keys, 0)
        for a in range(0, cand.shape[0], step):
            b = min(cand.shape[0], a + step)
            u = np.empty((b - a, m), np.float64)
            _kq.fill_utilities(starts[a:b], ends[a:b], ts, tn, t[a:b], den, m, u)
            words = _words(qkey, nonces[a:b], m).reshape(-1)
            umax = u.max(axis=1)
            sub = nonces[a:b]

            def source(r: int, sub: np.ndarray = sub, qk: bytes = qkey) -> _LazySource:
                return _exact_source(qk, sub[r])

            out[a:b, j] = _gumbel.argmax_words(words, u, umax, c, c_f, source)
    return out


def rank_error(eps_q: float, sensitivity: int, m: int, alpha: float,
               q: float | None = None) -> int:
    """Smallest integer ``r`` with ``m exp(-eps_q D r / (2 S sensitivity)) <= alpha``
    (``(D, S)`` of :func:`scale` for ``q``; ``q=None``: ``D = S = 1``, Smith's utility):
    with probability at least ``1 - alpha`` the released candidate's rank distance to the
    target exceeds the best candidate's by at most ``r`` ranks (McSherry & Talwar 2007, Thm
    6: the utility is ``-D`` times that distance, its sensitivity ``S sensitivity``; one
    key, one quantile).  Rounded up (computed with a safety margin, then checked exactly)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if m == 1:
        return 0
    den, s_row = (1, 1) if q is None else scale(q)
    sens = Fraction(s_row * sensitivity, den)  # utility sensitivity in ranks
    r = max(0, math.ceil(2 * float(sens) * math.log(m / alpha) / eps_q * (1 + 1e-12)))
    import mpmath

    fe, fa = Fraction(eps_q), Fraction(alpha)
    with mpmath.workprec(128):  # certify the bound at r (and shrink r while it still holds)
        def ok(x: int) -> bool:
            return bool(m * mpmath.exp(-mpmath.mpf(fe.numerator * sens.denominator) * x
                                       / (2 * sens.numerator * fe.denominator))
                        <= mpmath.mpf(fa.numerator) / fa.denominator
                        * (1 - mpmath.mpf(2) ** -100))
        while not ok(r):
            r += 1
        while r > 0 and ok(r - 1):
            r -= 1
    return r
