"""Report-noisy-max and one-shot Gumbel top-k."""

from __future__ import annotations

from typing import Any

import numpy as np

from dpfast import random as _random
from dpfast._kernels import selection as _ks
from dpfast.random import RngLike
from dpfast.selection._bits import _draw_words, _LazySource
from dpfast.selection._validate import (
    _check_noise,
    _check_utilities,
    _coefficient,
    _forced,
    _threads,
)
from dpfast.selection.continuation import _exact_top
from dpfast.selection.gumbel import exponential
from dpfast.selection.permute_flip import permute_and_flip

_TOPK_KERNEL = 64  # largest k certified in the numba kernel (insertion lists)


def report_noisy_max(utilities: Any, epsilon: Any, sensitivity: Any = 1.0, *,
                     noise: str = "exponential", rng: RngLike = None) -> int | np.ndarray:
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



# --------------------------------------------------------------------------- top-k
def top_k(utilities: Any, k: int, epsilon: Any, sensitivity: Any = 1.0, *,
          rng: RngLike = None) -> np.ndarray:
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
        with _threads(rows * n):
            _ks.topk_scan(m, u2.reshape(-1), umax, n, k, c_f, _ks.GTABLE, forced, *work, out,
                          ok)
        pending = np.flatnonzero(~ok)
    else:
        pending = np.arange(rows)
    for r in pending:
        out[r] = _exact_top(m[r * n:(r + 1) * n], u2[r], c, c_f, k, src, forced)
    return out[0] if one_d else out



