"""Permute-and-flip (McKenna & Sheldon 2020), exact."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast._kernels import selection as _ks
from dpfast.noise import _exact
from dpfast.random import RngLike
from dpfast.selection._bits import _draw_words, _LazySource, _uniform_spans
from dpfast.selection._validate import _SEG, _check_utilities, _coefficient, _forced, _threads


def permute_and_flip(utilities: Any, epsilon: Any, sensitivity: Any = 1.0, *,
                     rng: RngLike = None) -> int | np.ndarray:
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
        with _threads(rows * n):
            _ks.pf_flips(m, flat, umax, n, _SEG, c_f, _forced(), flags)
        # PENDING is the largest flag value: one reduction tells whether any coin is undecided
        pending = np.flatnonzero(flags == _ks.PENDING) if flags.max() == _ks.PENDING else ()
        if len(pending):
            src = _LazySource(gen)
            for i in pending:
                gamma = c * (Fraction(float(umax[i // n])) - Fraction(float(flat[i])))
                flags[i] = _exact.u_less_exp(_exact.LazyUniform(int(m[i]), src()), gamma)
        counts = flags.reshape(rows, n).sum(axis=1, dtype=np.uint64)
        ranks = _uniform_spans(gen, counts)
        _ks.pf_pick(flags, n, ranks, out)
    return int(out[0]) if one_d else out



