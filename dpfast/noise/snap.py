"""Mironov's snapping mechanism (CCS 2012) and its privacy parameters."""

from __future__ import annotations

import math
import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._kernels import grid as _grid
from dpfast.noise import _chunks, _inputs, _params, _progress, _wrap
from dpfast.random import as_generator

__all__ = ["snapping", "snapping_epsilon", "snapping_delta", "SNAP_MIN", "SNAP_MAX"]

SNAP_MIN = 2.0 ** -960  # supported range of the snapping scale and bound: normal
SNAP_MAX = 2.0 ** 960  # doubles whose products with ln(U*) (|ln U*| <= 745) stay normal
SNAP_PURE_RATIO = 372  # B <= 372 lambda: every output is reachable from every input
_LN_UMIN = 744.5  # > |ln 2^-1074|: the largest |ln U*|


def _snap_value(v: Any, name: str) -> Fraction:
    """A positive finite real as its exact rational (ints of any size, Fractions,
    floats); ValueError / TypeError naming the parameter."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, got bool")
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if not isinstance(v, (numbers.Real, np.integer, np.floating)):
        # strings, Decimals, arrays: refused as by the other samplers' parameters
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    if isinstance(v, np.floating):
        _params.refuse_wide_float(np.dtype(type(v)), name)
    if isinstance(v, Fraction):
        q = v
    elif isinstance(v, (int, np.integer)):
        q = Fraction(int(v))
    else:
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number, got {type(v).__name__}") from None
        except OverflowError:
            raise ValueError(f"{name} must be finite, got {v!r}") from None
        if not math.isfinite(f):
            raise ValueError(f"{name} must be positive and finite, got {v!r}")
        q = Fraction(f)
    if q <= 0:
        raise ValueError(f"{name} must be positive, got {v!r}")
    return q


def _snap_params(scale: Any, bound: Any) -> tuple[float, float]:
    """Validated (lambda, B): doubles in [2^-960, 2^960] with lambda < B < 2^46 lambda."""
    lam_q = _snap_value(scale, "scale")
    b_q = _snap_value(bound, "bound")
    for q, name in ((lam_q, "scale"), (b_q, "bound")):
        if not SNAP_MIN <= q <= SNAP_MAX:
            shown = f"{float(q):g}" if q < 2**1000 else f"about 2**{q.numerator.bit_length()}"
            raise ValueError(f"{name} must be in the supported range [2**-960, 2**960], got "
                             f"{shown}")
        if Fraction(float(q)) != q:
            raise ValueError(f"{name} must be exactly representable as a float64")
    if not lam_q < b_q < 2**46 * lam_q:
        raise ValueError("snapping requires scale < bound < 2**46 * scale")
    return float(lam_q), float(b_q)


def snapping_epsilon(scale: Any, bound: Any, sensitivity: Any = 1.0) -> float:
    """Privacy of :func:`snapping`: ``ε = (Δ + 2^-49 B) / λ`` (Mironov 2012, Theorem 1,
    scaled to sensitivity ``Δ``), computed exactly and rounded up.

    Requires ``λ < B < 2^46 λ`` with ``λ, B`` in ``[2^-960, 2^960]`` (``ValueError``
    naming the parameter otherwise; the conditions are checked on the parameters
    themselves, before anything is divided by ``Δ``).  Pure ``ε``-DP holds when
    ``B <= 372 λ``; for a larger bound the smallest double ``U* = 2^-1074`` caps the
    noise at ``|λ ln U*| < 745 λ < 2B``, so neighbouring inputs reach slightly different
    output sets and the guarantee is ``(ε, δ)`` with :func:`snapping_delta`.
    """
    lam, b = _snap_params(scale, bound)
    d = _snap_value(sensitivity, "sensitivity")
    eps = (d + Fraction(b) / 2**49) / Fraction(lam)
    try:
        f = float(eps)
    except OverflowError:
        f = math.inf
    if math.isfinite(f) and Fraction(f) < eps:
        f = math.nextafter(f, math.inf)
    if not math.isfinite(f):
        raise ValueError("sensitivity / scale is too large: epsilon exceeds the float range")
    return f


def snapping_delta(scale: Any, bound: Any, sensitivity: Any = 1.0) -> float:
    """The ``δ`` of :func:`snapping` next to :func:`snapping_epsilon`'s ``ε``: 0 when
    ``B <= 372 λ`` (pure DP), else ``2^-1072 e^ε`` rounded up to a power of two.

    The noise ``S λ ln U*`` is bounded by ``745 λ``; with ``2B`` beyond that, an output
    reachable from ``x`` but not from a neighbour ``x'`` needs ``λ |ln U*| >= 745 λ - Δ``,
    i.e. ``U* <= 2^-1073 e^{Δ/λ}`` (probability at most twice that), and ``Δ/λ <= ε``.
    """
    lam, b = _snap_params(scale, bound)
    if b <= SNAP_PURE_RATIO * lam:
        return 0.0
    eps = snapping_epsilon(scale, bound, sensitivity)
    e2 = -1072 + math.ceil(eps * 1.4426950408889634) + 1  # 2^-1072 e^eps <= 2^e2
    if e2 > -100:
        raise ValueError("epsilon is too large for the snapping mechanism's (ε, δ) bound")
    return math.ldexp(1.0, e2)


def snapping(x: Any, scale: Any, bound: Any, *, rng: Any = None,
             progress: Any = False) -> Any:
    """Mironov's snapping mechanism (CCS 2012) for real-valued data.

    ``clamp_B(round_Λ(clamp_B(x) ⊕ S ⊗ λ ⊗ ln(U*)))`` with ``Λ`` the smallest power of
    two ``>= λ``, ``S`` a uniform sign and ``U*`` the uniform real on (0, 1) rounded down
    to a double (every double with probability equal to its gap to the next one, as the
    paper requires).

    Parameters
    ----------
    x : array_like of floats
        Finite values, any shape.
    scale : float
        ``λ``, a double in ``[2^-960, 2^960]``.
    bound : float
        Clamping bound ``B``, a double with ``λ < B < 2^46 λ``.
    rng : None, Generator or bytes, optional
        As in :func:`dpfast.discrete_laplace`.
    progress : bool or callable, optional
        As in :func:`dpfast.discrete_laplace` (off by default).

    Returns
    -------
    ndarray of float64
        Values in ``[-B, B]`` on the grid ``Λ Z`` (or ``±B``).

    Privacy
    -------
    ``ε = (Δ + 2^-49 B) / λ`` for sensitivity ``Δ`` (:func:`snapping_epsilon`), Mironov,
    "On Significance of the Least Significant Bits for Differential Privacy", CCS 2012,
    Theorem 1: pure ``ε``-DP when ``B <= 372 λ``, else ``(ε, δ)``-DP with the tiny
    :func:`snapping_delta` (about ``2^-1070`` for ``ε <= 1``: ``U*`` bottoms out at
    ``2^-1074``, so the noise is bounded and far outputs are reachable from one input
    only).  The analysis assumes a correctly rounded logarithm; dpfast uses the
    platform's ``log`` (glibc: < 1 ulp, almost always correctly rounded).  For exact
    guarantees prefer :func:`laplace`.

    Numerics
    --------
    Floating point by design: the snapping to ``Λ`` and the clamp absorb the rounding
    errors of ``λ ln(U*)``.
    """
    lam, b = _snap_params(scale, bound)
    x, rewrap = _wrap.unwrap(x)
    arr, _ = _inputs.float_input(x, None)
    tick, close = _progress.ticker(progress, arr.size)
    gen = as_generator(rng)
    out = np.empty(arr.size, np.float64)
    if arr.dtype == np.float64 and arr.flags.c_contiguous:
        flat = arr.reshape(-1)
    else:  # x converted into the output and snapped in place (the kernel reads, then writes)
        out.reshape(arr.shape)[...] = arr
        flat = out
    m, e = math.frexp(lam)
    big_lam = lam if m == 0.5 else math.ldexp(1.0, e)  # the smallest power of two >= lam
    calls = _chunks.CallStreams(gen, flat.size, 2.05)
    for bt in calls:
        with _chunks.threads_for(bt.buf.shape[0], 1):
            _grid.snapping(bt.buf, bt.st, calls.key_words, bt.nonces, flat, out, bt.lo,
                           bt.hi - bt.lo, _chunks.CHUNK, lam, big_lam, b)
        _chunks.check_wrap(bt.st)
        if tick is not None:
            tick(bt.hi - bt.lo)
    close()
    return rewrap(out.reshape(arr.shape))
