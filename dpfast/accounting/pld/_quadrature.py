"""Chord-slope integrals by adaptive Gauss-Legendre quadrature (see :mod:`._pmf`).

``int_a^(a+h) S(e) e^(e - a) de`` per grid cell, with ``S`` the slope function of
:func:`_slope_values`, in the curve's smooth variable where it has one, with an error
bound added on the caller's safe side (certified where the curve provides one; closed
form where the curve has ``cell_integrals``).
"""

from __future__ import annotations

import numpy as np

from ._curves import Curve

_GL_T, _GL_W = np.polynomial.legendre.leggauss(4)
_GL3_T, _GL3_W = np.polynomial.legendre.leggauss(3)


def _slope_values(curve: Curve, e: np.ndarray, gt: bool | np.ndarray = False
                  ) -> np.ndarray:
    """``S(e)``: ``Q(L <= e)`` for ``e < 0``, ``-Q(L > e)`` for ``e >= 0`` (or for all
    ``e`` where ``gt``, a flag or one per element)."""
    if gt is True:
        return -curve.q_gt(e)
    neg = (e < 0.0) & np.logical_not(gt)
    out = np.empty_like(e)
    if np.any(neg):
        out[neg] = curve.q_le(e[neg])
    if np.any(~neg):
        out[~neg] = -curve.q_gt(e[~neg])
    return out


def _gl_n(curve: Curve, a: np.ndarray, h: np.ndarray, base: np.ndarray,
          nodes: np.ndarray, weights: np.ndarray, gt: bool | np.ndarray = False
          ) -> np.ndarray:
    """``int S(e) e^(e - base) de`` over ``[a, a + h]`` (in the curve's smooth variable)
    by Gauss-Legendre with the given nodes on [-1, 1]; ``gt`` a flag or one per piece."""
    t = a[:, None] + (nodes[None, :] + 1.0) * 0.5 * h[:, None]
    g = gt[:, None] if isinstance(gt, np.ndarray) else gt
    with np.errstate(under="ignore"):
        if curve.reparam:  # t is the smooth variable w
            f = curve.s_of_w(t, g) * curve.weight_of_w(t, base[:, None])
        else:
            g = np.broadcast_to(g, t.shape).ravel() if isinstance(gt, np.ndarray) else gt
            f = _slope_values(curve, t.ravel(), g).reshape(t.shape) * np.exp(
                t - base[:, None])
        acc = f[:, 0] * weights[0]
        for j in range(1, weights.size):  # no BLAS call (threads) for a 4-vector
            acc = acc + f[:, j] * weights[j]
        return acc * 0.5 * h


def _cell_integrals(curve: Curve, a: np.ndarray, h: np.ndarray,
                    gt: bool | np.ndarray = False) -> tuple[np.ndarray, np.ndarray]:
    """``int_a^(a+h) S(e) e^(e - a) de`` and a bound on its quadrature error, adaptive
    (halving where the error bound exceeds the tolerance), integrating in the curve's
    smooth variable where it has one.

    A curve with ``cell_integrals`` (the Laplace remove pair) gives them in closed form
    with a certified bound.  The error bound is *certified* where the curve provides
    ``gl4_error_bound`` (the Gaussian remove direction, hence also the derived add
    direction: a derivative bound of the 4-node Gauss-Legendre rule); elsewhere it is
    ``|G4 - G3|`` (the 3-node rule's
    error estimate, which exceeds the 4-node rule's error on these smooth integrands:
    an asymptotic estimate, not a proof).  Callers add it on their safe side.
    ``gt`` selects the slope form (see :func:`_slope_values`), a flag or one per cell.
    """
    closed = getattr(curve, "cell_integrals", None)
    if closed is not None:  # closed form with a certified bound (the Laplace remove pair)
        return closed(a, h, gt)
    base = a.copy()
    if isinstance(gt, np.ndarray):
        gt = gt.copy()
    if curve.reparam:
        lo, hi = curve.w_of_eps(a), curve.w_of_eps(a + h)
        w = hi - lo
    else:
        lo, w = a.copy(), h.copy()
    out = np.zeros(a.size)
    err_out = np.zeros(a.size)
    idx = np.arange(a.size)
    pieces = np.maximum(np.ceil(np.abs(w)), 1).astype(np.int64)  # wide cells: unit pieces
    if np.any(pieces > 1):
        idx = np.repeat(idx, pieces)
        start = np.cumsum(pieces) - pieces
        k = np.arange(idx.size) - np.repeat(start, pieces)
        step = np.repeat(w / pieces, pieces)
        lo = np.repeat(lo, pieces) + k * step
        w = step
        base = np.repeat(base, pieces)
        if isinstance(gt, np.ndarray):
            gt = np.repeat(gt, pieces)
    bound = getattr(curve, "gl4_error_bound", None) if curve.reparam else None
    fine = _gl_n(curve, lo, w, base, _GL_T, _GL_W, gt)
    for _ in range(60):
        if bound is not None:
            err = bound(lo, w, base, gt)
        else:
            err = np.abs(fine - _gl_n(curve, lo, w, base, _GL3_T, _GL3_W, gt))
        ok = err <= 1e-13 * np.abs(fine) + 1e-17 * np.abs(h[idx])
        if idx.size > 8 * a.size + 2000:
            ok[:] = True  # pragma: no cover - refinement budget spent (err still added)
        np.add.at(out, idx[ok], fine[ok])
        np.add.at(err_out, idx[ok], err[ok])
        bad = ~ok
        if not np.any(bad):
            return out, err_out * (1.0 + 1e-9)
        half = 0.5 * w[bad]
        idx = np.concatenate([idx[bad], idx[bad]])
        lo = np.concatenate([lo[bad], lo[bad] + half])
        w = np.concatenate([half, half])
        base = np.concatenate([base[bad], base[bad]])
        if isinstance(gt, np.ndarray):
            gt = np.concatenate([gt[bad], gt[bad]])
        fine = _gl_n(curve, lo, w, base, _GL_T, _GL_W, gt)
    raise AssertionError("quadrature depth limit")  # pragma: no cover - budget stops first
