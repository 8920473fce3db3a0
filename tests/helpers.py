"""Shared test references: the fixed key, exact pmfs and privacy profiles, a chi-square test.

Statistical tests use :data:`KEY` (or the ``key`` fixture of ``conftest.py``) so they are
deterministic.  References are exact formulas evaluated with mpmath (or, where stated,
float64 with an error far below what the test resolves), never another sampler.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

KEY = bytes(range(32))  # fixed key: statistical tests are deterministic

#: The one wall-clock limit of the suite's subprocesses, child processes, queues and
#: alarms: a guard against a hang, never a performance check (no test asserts a duration).
#: Generous on purpose: on a 2-core machine loaded to ~8 runnable processes a cold numba
#: compile in a child takes 5-10x its quiet time, and a limit hit under load is a false
#: failure.  Seconds.
SUBPROCESS_TIMEOUT_S = 1200

__all__ = [
    "KEY",
    "mp",
    "dlap_pmf",
    "dlap_tail",
    "dgauss_pmf_table",
    "dgauss_tail",
    "dgauss_pmf_float",
    "analytic_gaussian_delta",
    "cks20_delta",
    "cor13_delta",
    "cor13_epsilon",
    "chisquare_pvalue",
]


def mp(q: Fraction | float | int) -> mpmath.mpf:
    """The exact value of a float / Fraction / int as an mpmath number."""
    q = Fraction(q)
    return mpmath.mpf(q.numerator) / q.denominator


# --------------------------------------------------------------------------- exact pmfs


def dlap_pmf(t: Fraction | float, k: int) -> mpmath.mpf:
    """P(K = k), K discrete Laplace of scale t: (1 - p) / (1 + p) p^|k| with p = exp(-1/t)."""
    with mpmath.workdps(60):
        p = mpmath.exp(-1 / mp(t))
        return (1 - p) / (1 + p) * p ** abs(int(k))


def dlap_tail(t: Fraction | float, w: int) -> mpmath.mpf:
    """P(|K| > w), K discrete Laplace of scale t (P(k) ~ exp(-|k|/t)), summing the pmf."""
    with mpmath.workdps(60):
        tt = mp(t)
        p = mpmath.exp(-1 / tt)
        z = (1 + p) / (1 - p)
        return 2 * mpmath.nsum(lambda k: p**k, [w + 1, mpmath.inf]) / z


@functools.cache
def dgauss_pmf_table(sigma: Fraction | float, width: int = 15) -> dict[int, mpmath.mpf]:
    """pmf of N_Z(0, sigma^2) on [-K, K], K = width * sigma, in mpmath (dps 40)."""
    with mpmath.workdps(40):
        s = mp(sigma)
        k_max = int(width * float(sigma)) + 2
        ks = range(-k_max, k_max + 1)
        w = [mpmath.exp(-mpmath.mpf(k) ** 2 / (2 * s * s)) for k in ks]
        z = mpmath.fsum(w)
        return {k: v / z for k, v in zip(ks, w, strict=True)}


def dgauss_tail(table: dict[int, mpmath.mpf], w: int) -> mpmath.mpf:
    """P(|K| > w) from a :func:`dgauss_pmf_table`."""
    with mpmath.workdps(40):
        return mpmath.fsum(v for k, v in table.items() if abs(k) > w)


def dgauss_pmf_float(sigma: float, width: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """(support, pmf) of N_Z(0, sigma^2) in float64 on [-width sigma, width sigma].

    Relative error of each value about 1e-15, truncated mass below exp(-width^2 / 2): for
    convolutions (multivariate shifts) where mpmath would be slow.
    """
    k_max = int(width * sigma) + 2
    ks = np.arange(-k_max, k_max + 1)
    w = np.exp(-(ks.astype(np.float64) ** 2) / (2.0 * sigma * sigma))
    return ks, w / math.fsum(w)


# --------------------------------------------------------------------------- privacy profiles


def analytic_gaussian_delta(eps, sigma, sens) -> mpmath.mpf:
    """Balle & Wang 2018, Thm. 8: delta of the continuous Gaussian mechanism."""
    with mpmath.workdps(50):
        e, s, d = mp(eps), mp(sigma), mp(sens)
        return mpmath.ncdf(d / (2 * s) - e * s / d) - mpmath.exp(e) * mpmath.ncdf(
            -d / (2 * s) - e * s / d
        )


def cks20_delta(eps, sigma, sens) -> mpmath.mpf:
    """CKS20 Thm. 7: exact delta of the 1-D discrete Gaussian with integer sensitivity."""
    table = dgauss_pmf_table(sigma)
    with mpmath.workdps(40):
        e, s, d = mp(eps), mp(sigma), mp(sens)
        a = e * s * s / d - d / 2
        b = e * s * s / d + d / 2
        return mpmath.fsum(v for k, v in table.items() if k > a) - mpmath.exp(e) * mpmath.fsum(
            v for k, v in table.items() if k > b
        )


def cor13_delta(rho, eps) -> mpmath.mpf:
    """CKS20 Cor. 13, inf_a exp((a-1)(a rho - eps)) (1-1/a)^(a-1) / a, at the exact optimum.

    The log is convex in a with derivative 2 a rho - rho - eps + log(1 - 1/a); its root
    is found by bisection at 60 digits.
    """
    with mpmath.workdps(60):
        r, e = mp(rho), mp(eps)
        if r == 0:
            return mpmath.mpf(0)

        def slope(a):
            return 2 * a * r - r - e + mpmath.log1p(-1 / a)

        lo, hi = mpmath.mpf(1) + mpmath.mpf(10) ** -50, mpmath.mpf(2)
        while slope(hi) < 0:
            hi *= 2
        for _ in range(400):
            mid = (lo + hi) / 2
            if slope(mid) < 0:
                lo = mid
            else:
                hi = mid
        a = (lo + hi) / 2
        val = mpmath.exp((a - 1) * (a * r - e) + (a - 1) * mpmath.log1p(-1 / a) - mpmath.log(a))
        return min(val, mpmath.mpf(1))


def cor13_epsilon(rho, delta) -> mpmath.mpf:
    """CKS20 Cor. 13, inf_a a rho + log(1 - 1/a) - (log delta + log a)/(a - 1), exactly.

    The derivative in a is rho + (log delta + log a) / (a - 1)^2, increasing in a.
    """
    with mpmath.workdps(60):
        r, d = mp(rho), mp(delta)
        if r == 0:
            return mpmath.mpf(0)
        ld = mpmath.log(d)

        def slope(a):
            return r * (a - 1) ** 2 + ld + mpmath.log(a)

        lo, hi = mpmath.mpf(1) + mpmath.mpf(10) ** -50, mpmath.mpf(2)
        while slope(hi) < 0:
            hi *= 2
        for _ in range(400):
            mid = (lo + hi) / 2
            if slope(mid) < 0:
                lo = mid
            else:
                hi = mid
        a = (lo + hi) / 2
        val = a * r + mpmath.log1p(-1 / a) - (ld + mpmath.log(a)) / (a - 1)
        return max(val, mpmath.mpf(0))


# --------------------------------------------------------------------------- chi-square


def chisquare_pvalue(counts: Sequence[int], probs: Sequence[float], *,
                     min_expected: float = 50.0) -> float:
    """Pearson chi-square p-value of ``counts`` against exact bin probabilities.

    Adjacent bins are pooled until each expects at least ``min_expected`` counts; the
    probabilities are renormalised to the total count.
    """
    from scipy import stats

    c = np.asarray(counts, dtype=np.float64)
    p = np.asarray(probs, dtype=np.float64)
    p = p / p.sum()
    n = c.sum()
    keep_c: list[float] = []
    keep_e: list[float] = []
    acc_c = acc_e = 0.0
    for ci, ei in zip(c, p * n, strict=True):
        acc_c += ci
        acc_e += ei
        if acc_e >= min_expected:
            keep_c.append(acc_c)
            keep_e.append(acc_e)
            acc_c = acc_e = 0.0
    if acc_e > 0 and keep_c:
        keep_c[-1] += acc_c
        keep_e[-1] += acc_e
    if len(keep_c) < 2:
        return 1.0
    return float(stats.chisquare(keep_c, keep_e).pvalue)


def same_release(a: Any, b: Any, *, release_id: bool = True) -> None:
    """Assert two table releases are the same: statistic, event, law, threshold, keys
    (dtype and values), the values' bytes, and (``release_id``) the release id."""
    assert getattr(a, "statistic", None) == getattr(b, "statistic", None)
    assert a.event == b.event and a.law == b.law and a.threshold == b.threshold
    ka = a.keys if isinstance(a.keys, tuple) else (a.keys,)
    kb = b.keys if isinstance(b.keys, tuple) else (b.keys,)
    assert len(ka) == len(kb)
    for x, y in zip(ka, kb):
        assert x.dtype == y.dtype and x.tolist() == y.tolist()
    assert a.values.dtype == b.values.dtype and a.values.tobytes() == b.values.tobytes()
    if release_id:
        assert a.release_id == b.release_id



def assert_partly_written(out: np.ndarray, fill: int, x: np.ndarray, noise: np.ndarray) -> None:
    """A separate integer ``out`` after an ``OverflowError`` (numpy's ``out=`` semantics):
    each cell holds what it held (``fill``), its noisy value ``x + noise`` (exact, in Python
    integers) or -- the vector loop writes whole groups of four cells -- x's own value, and
    that only in at most three cells of a chunk, right after its last noisy one; never
    anything else (a wrapped sum, another cell's value)."""
    got = out.reshape(-1).tolist()
    xs = [int(a) for a in x.reshape(-1).tolist()]
    want = [a + int(b) for a, b in zip(xs, noise.reshape(-1).tolist())]
    assert all(g == fill or g == w or g == a for g, w, a in zip(got, want, xs))
    bare = [k for k, (g, w, a) in enumerate(zip(got, want, xs)) if g == a != w and g != fill]
    assert len(bare) <= 4 * (-(-len(got) // 65536))


def table_halves(tab: Any, words: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A table with a direct table reads the keystream in 32-bit halves
    (:func:`dpfast._kernels.table.table_kernel_serial`): the two halves ``(h1, h2)`` whose
    virtual word is each one-word-layout word in ``words``, and whether the direct table
    decides the proposal on ``h1`` alone (it then reads no ``h2``).  The first half holds
    the top ``dbits`` bits, the sign and the next ``k1 = 31 - dbits`` bits (the offset's
    ``p``, then U's top ``k1 - p``); the second the alias value's other ``q`` bits and U's
    other bits."""
    u = np.uint64
    words = np.asarray(words, dtype=np.uint64)
    *_, direct, dbits = tab.kernel_args
    assert dbits > 0, "a table without a direct table reads whole words"
    vb, _, _, _, ubits = tab.lay
    q, k1 = tab.cbits + vb - dbits, 31 - dbits
    ku = k1 - tab.p
    idx = words >> u(64 - dbits)
    vlo = (words >> u(64 - dbits - q)) & u((1 << q) - 1)
    sgn = (words >> u(63 - dbits - q)) & u(1)
    rest = tab.p + ubits  # the offset and U: the bits after the sign
    uu = words & u((1 << rest) - 1)
    h1 = (idx << u(32 - dbits)) | (sgn << u(k1)) | (uu >> u(rest - k1))
    h2 = (vlo << u(32 - q)) | (uu & u((1 << (32 - q)) - 1))
    acc, rej = direct_lines(tab, h1)
    top = ((h1 & u((1 << ku) - 1)) >> u(max(ku - 16, 0))).astype(np.int64)
    decided = (top < acc) | (top > rej)
    return h1, h2, decided


def direct_lines(tab: Any, h1: Any) -> tuple[np.ndarray, np.ndarray]:
    """The acceptance and rejection lines ``A - drop``, ``R - drop`` (int64) of the first
    halves ``h1`` of a table with a direct table, at their offsets (``drop = (h S) >>
    qs``, 0 for bins of width 1;
    :meth:`dpfast.noise._kernel_table.KernelTable.direct_table`)."""
    from dpfast.noise import _kernel_table

    u = np.uint64
    *_, direct, dbits = tab.kernel_args
    h1 = np.asarray(h1, dtype=np.uint64)
    ku = 31 - dbits - tab.p
    e = direct[h1 >> u(32 - dbits)]
    off = (h1 >> u(ku)) & u((1 << tab.p) - 1)
    drop = ((off * ((e >> u(_kernel_table.D_SLOPE)) & u(0xFFFF))) >> direct[-1]).astype(np.int64)
    acc = ((e >> u(_kernel_table.D_ACC)) & u(0x1FFFF)).astype(np.int64) - drop
    rej = (e & u(0x1FFFF)).astype(np.int64) - drop
    return acc, rej


def table_word(tab: Any, word: int) -> int:
    """The keystream word that gives a proposal the one-word-layout word ``word`` when it
    starts on a whole word: ``word`` itself for a table without a direct table, else its
    two halves (:func:`table_halves`; the proposal must be one the first half does not
    decide, or it would read one half only)."""
    if tab.kernel_args[-1] == 0:
        return int(word)
    h1, h2, decided = table_halves(tab, [word])
    assert not decided[0], "decided on its first half: the proposal reads one half"
    return (int(h1[0]) << 32) | int(h2[0])
