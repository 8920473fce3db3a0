"""The exponential mechanism, sampled exactly by Gumbel-max."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast._kernels import selection as _ks
from dpfast.random import RngLike
from dpfast.selection._bits import _draw_words, _LazySource
from dpfast.selection._validate import (
    _PARALLEL_SCAN,
    _SEG,
    _check_flag,
    _check_utilities,
    _coefficient,
    _forced,
    _threads,
)
from dpfast.selection.continuation import _exact_top


def _gumbel_argmax(gen: _random.Generator, u2: np.ndarray, umax: np.ndarray, c: Fraction,
                   c_f: float) -> np.ndarray:
    rows, n = u2.shape
    if n == 1:
        return np.zeros(rows, np.int64)
    src = _LazySource(gen)
    return argmax_words(_draw_words(gen, rows * n), u2, umax, c, c_f, lambda r: src)


def argmax_words(m: np.ndarray, u2: np.ndarray, umax: np.ndarray, c: Fraction, c_f: float,
                 source_of_row: Callable[[int], Any]) -> np.ndarray:
    """Gumbel-max selection per row of ``u2`` from given keystream words.

    ``m``: one uint64 word per cell (``rows * n``, row-major), uniform and independent;
    ``source_of_row(r)``: the exact path's word source for row ``r`` (a callable returning
    an ``_exact.WordSource``, e.g. :class:`~dpfast.selection._bits._LazySource`), used only
    for rows the float certificate leaves undecided; its bits must be independent of ``m``.
    For callers that address each row's randomness themselves (per-key streams of a
    release); :func:`exponential` draws ``m`` from its generator.
    """
    rows, n = u2.shape
    out = np.zeros(rows, np.int64)
    if n == 1:
        return out
    flat = u2.reshape(-1)
    nps = -(-n // _SEG)
    nseg = rows * nps
    j1 = np.empty(nseg, np.int64)
    lo1 = np.empty(nseg)
    hi1 = np.empty(nseg)
    hi2 = np.empty(nseg)
    sp = np.empty(nseg, np.bool_)
    forced = _forced()
    with _threads(rows * n, _PARALLEL_SCAN):
        _ks.em_scan(m, flat, umax, n, _SEG, c_f, _ks.GTABLE, j1, lo1, hi1, hi2, sp)
    _ks.em_combine(nps, j1, lo1, hi1, hi2, sp, forced, out)
    pending = np.flatnonzero(out < 0)
    for r in pending.tolist():
        out[r] = _exact_top(m[r * n:(r + 1) * n], u2[r], c, c_f, 1, source_of_row(r),
                            forced)[0]
    return out


def exponential(utilities: Any, epsilon: Any, sensitivity: Any = 1.0, *,
                monotonic: bool = False, rng: RngLike = None) -> int | np.ndarray:
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



