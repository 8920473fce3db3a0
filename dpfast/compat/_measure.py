"""Exact sampling of ``P(i) ∝ m_i exp(c u_i)`` for float measures ``m`` (exponential mechanism
with a base measure, as ``diffprivlib.tools.quantile`` uses).

Inversion of the cumulative weights with a ChaCha20 uniform.  The float64 fast path decides a
draw only when a rigorous error bound separates the uniform's whole interval from both
neighbouring cumulative sums; otherwise the draw continues exactly: the weights are
recomputed in mpmath interval arithmetic (``mpmath.iv``: outward-rounded ``exp``/``log`` of
the exact binary rationals ``u_i``, ``m_i`` and the exact rational ``c``) and the uniform is
refined with fresh 64-bit words, at doubling precision, until the decision is certain.  The
result is exactly the target distribution given ideal bits (never resampled).

Error bound of the fast path: ``ℓ_i = c u_i + ln m_i - max ℓ`` is computed with absolute
error at most ``(|c u_i| + |ln m_i| + |max ℓ|) 2^-40`` (a handful of roundings of 2^-53 each,
and ``log`` within 2^12 ulps -- glibc's is within 1-2), each weight
``w_i = exp(ℓ_i)`` then has relative error at most ``expm1(that) + 2^-40`` (``exp`` within
2^12 ulps), and each cumulative sum at most the sum of those plus ``n 2^-52`` times the
total.  The bound is doubled.  The uniform's 64-bit word ``k`` is bracketed as
``[k - 2^12, k + 2^12] / 2^64`` after its conversion to float.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from mpmath import iv

__all__ = ["sample_measured", "sample_measured_rows"]

FORCE_EXACT = False  # test hook: send every draw to the exact continuation


def _words(gen: Any, n: int) -> np.ndarray:
    return np.asarray(gen.random_raw(n), dtype=np.uint64).reshape(-1)


def _exact_pick(u: np.ndarray, m: np.ndarray, c: Fraction, shift: float, word: int,
                gen: Any) -> int:
    """Exact continuation for one draw whose first 64 uniform bits are ``word``."""
    k, nbits, prec = int(word), 64, 128
    saved = iv.prec
    try:
        return _exact_loop(u, m, c, shift, k, nbits, prec, gen)
    finally:
        iv.prec = saved


def _exact_loop(u: np.ndarray, m: np.ndarray, c: Fraction, shift: float, k: int, nbits: int,
                prec: int, gen: Any) -> int:
    while True:
        iv.prec = prec
        ci = iv.mpf(c.numerator) / c.denominator
        lo_c, hi_c = [], []
        total = iv.mpf(0)
        for ui, mi in zip(u.tolist(), m.tolist()):
            total = total + iv.exp(ci * iv.mpf(ui) + iv.log(iv.mpf(mi)) - iv.mpf(shift))
            lo_c.append(total.a)
            hi_c.append(total.b)
        scale = iv.mpf(2) ** -nbits
        t_lo = (iv.mpf(k) * scale * total).a
        t_hi = (iv.mpf(k + 1) * scale * total).b
        for i in range(len(lo_c)):
            prev_hi = hi_c[i - 1] if i else 0
            if t_lo >= prev_hi and t_hi <= lo_c[i]:
                return i
        k = (k << 64) | int(_words(gen, 1)[0])
        nbits += 64
        prec *= 2


def sample_measured(utility: Any, measure: Any, c: Fraction, gen: Any, n: int) -> np.ndarray:
    """``n`` independent indices with ``P(i) ∝ measure_i · exp(c · utility_i)``, exactly.

    ``measure`` entries must be finite and >= 0 with at least one positive; ``c > 0`` is the
    exact rational coefficient (``epsilon / (2 sensitivity)``, or ``epsilon / sensitivity``
    for monotonic utilities).
    """
    u_all = np.asarray(utility, dtype=np.float64)
    m_all = np.asarray(measure, dtype=np.float64)
    if not (np.all(np.isfinite(m_all)) and np.all(m_all >= 0) and np.any(m_all > 0)):
        raise ValueError("measure must be finite, non-negative and have a positive entry")
    keep = np.flatnonzero(m_all > 0)
    u, m = u_all[keep], m_all[keep]
    cf = float(c)
    log_m = np.log(m)
    ell = cf * u + log_m
    shift = float(np.max(ell))
    w = np.exp(ell - shift)
    cum = np.cumsum(w)
    total = float(cum[-1])
    mag = np.abs(cf * u) + np.abs(log_m) + abs(shift)
    rel = np.expm1(mag * 2.0 ** -40) + 2.0 ** -40
    err = 2 * (float(np.sum(w * rel)) + keep.size * 2.0 ** -52 * total) + 2.0 ** -50 * total

    words = _words(gen, n)
    wf = words.astype(np.float64)  # within 2^11 of the word
    lo = np.maximum(wf - 2.0 ** 12, 0.0) * 2.0 ** -64  # <= the uniform
    hi = (wf + 2.0 ** 12) * 2.0 ** -64  # >= the uniform's upper end
    idx = np.minimum(np.searchsorted(cum, lo * total, side="right"), keep.size - 1)
    prev = np.where(idx > 0, cum[np.maximum(idx - 1, 0)], 0.0)
    t_lo = lo * (total - err) * (1 - 2.0 ** -50)
    t_hi = hi * (total + err) * (1 + 2.0 ** -50)
    decided = (t_lo >= prev + err) & (t_hi <= cum[idx] - err)
    if FORCE_EXACT:
        decided[:] = False
    out = idx.copy()
    for j in np.flatnonzero(~decided):
        out[j] = _exact_pick(u, m, c, shift, int(words[j]), gen)
    return keep[out]


def sample_measured_rows(utility: Any, measure: Any, c: Fraction, gen: Any) -> np.ndarray:
    """One index per row ``r`` of ``utility`` (shape ``(L, R)``), independently, with
    ``P(i) ∝ measure_i · exp(c · utility[r, i])`` exactly: :func:`sample_measured`'s
    certified inversion and exact continuation, vectorized over the rows (one array pass
    for all of them instead of one call per row)."""
    u_all = np.asarray(utility, dtype=np.float64)
    m_all = np.asarray(measure, dtype=np.float64)
    if u_all.ndim != 2 or u_all.shape[1] != m_all.shape[0]:
        raise ValueError("utility must have shape (rows, len(measure))")
    if not (np.all(np.isfinite(m_all)) and np.all(m_all >= 0) and np.any(m_all > 0)):
        raise ValueError("measure must be finite, non-negative and have a positive entry")
    keep = np.flatnonzero(m_all > 0)
    u, m = u_all[:, keep], m_all[keep]
    rows = u.shape[0]
    cf = float(c)
    log_m = np.log(m)
    ell = cf * u + log_m
    shift = np.max(ell, axis=1)
    w = np.exp(ell - shift[:, None])
    cum = np.cumsum(w, axis=1)
    total = cum[:, -1]
    mag = np.abs(cf * u) + np.abs(log_m) + np.abs(shift)[:, None]
    rel = np.expm1(mag * 2.0 ** -40) + 2.0 ** -40
    err = 2 * (np.sum(w * rel, axis=1) + keep.size * 2.0 ** -52 * total) + 2.0 ** -50 * total

    words = _words(gen, rows)
    wf = words.astype(np.float64)  # within 2^11 of the word
    lo = np.maximum(wf - 2.0 ** 12, 0.0) * 2.0 ** -64  # <= the uniform
    hi = (wf + 2.0 ** 12) * 2.0 ** -64  # >= the uniform's upper end
    # per row: the first cumulative sum > lo * total (searchsorted side="right")
    idx = np.minimum(np.sum(cum <= (lo * total)[:, None], axis=1), keep.size - 1)
    r = np.arange(rows)
    prev = np.where(idx > 0, cum[r, np.maximum(idx - 1, 0)], 0.0)
    t_lo = lo * (total - err) * (1 - 2.0 ** -50)
    t_hi = hi * (total + err) * (1 + 2.0 ** -50)
    decided = (t_lo >= prev + err) & (t_hi <= cum[r, idx] - err)
    if FORCE_EXACT:
        decided[:] = False
    out = idx.copy()
    for j in np.flatnonzero(~decided):
        out[j] = _exact_pick(u[j], m, c, float(shift[j]), int(words[j]), gen)
    return keep[out]
