"""Discretised privacy-loss distributions: construction, FFT composition, queries.

A :class:`Pmf` holds the masses ``p[i]`` of the losses ``(lo + i) * dx``, a mass
``inf`` at ``+inf`` and ``err``, an allowance for floating-point error.  A *pessimistic*
pmf reports ``delta + err`` (an upper bound), an *optimistic* one ``delta - err``.

* :func:`connect_dots` builds the pessimistic pmf of a curve (Doroshenko, Ghazi,
  Kamath, Kumar & Manurangsi 2022, "Connect the Dots", Algorithm 1): its privacy
  curve, as a function of ``x = e^eps``, is the piecewise-linear interpolation of the
  true (convex) curve at the grid points, hence lies above it.  The masses come from
  chord slopes, weighted averages over one grid cell of ``Q(L <= e)`` (the slope of
  ``delta(x) - (1 - x)_+``, used left of 0 while ``Q(L <= e) < 1/2``) or ``-Q(L > e)``
  (the slope of ``delta``, used elsewhere), computed by adaptive 4-node Gauss-Legendre
  quadrature in the curve's smooth variable (no differences of nearly equal ``delta``
  values), pieces halved until a per-piece error bound is below 1e-13 relative +
  1e-17 x cell width.  The bound is *added* to each slope (subtracted in
  :mod:`._lower`): for the Gaussian curves of the remove direction it is certified
  (derivative bound of the rule, float placement of the nodes, rounding of the
  argument of ``ndtr``: ``GaussianRemove.gl4_error_bound``); the Laplace remove pair
  has its integrals in closed form with a certified rounding bound
  (:mod:`._laplace_cells`); for the add directions when discretised directly (only
  where the swap of :mod:`._swap` is not used: ``q`` above about 0.75) it is ``|G4 - G3|``, an
  asymptotic estimate.  Each slope is then rounded *up* by 64 ulps (the special
  functions' own error) and the slopes made monotone, so the curve they define starts
  at ``(0, 1)`` and stays above the exact interpolation: pessimistic by construction
  (modulo the rounding of the cell ends in the smooth variable and, for a directly
  discretised add direction, the asymptotic estimate), and a valid distribution
  (masses >= 0).  Missing total mass, if any, is put at ``+inf``.
* :func:`round_down` builds the optimistic pmf (each loss rounded down to the grid, the
  survival function rounded down: the loss is stochastically smaller, so every
  hockey-stick divergence is smaller, also after composition).  Its gap to the
  pessimistic one grows like ``count * dx / 2`` in epsilon.
* :func:`self_compose` raises the real FFT of one pmf to the power ``count`` over a
  window chosen by a Chernoff bound (each tail outside it <= ``tau / 2``; the wrapped
  mass is accounted as explained there); :func:`compose` convolves two different pmfs
  linearly.  Both truncate tails of mass <= ``tau / 2`` (pessimistic: upper tail to
  ``+inf``, lower tail up to the first kept loss; optimistic: lower tail dropped, upper
  tail moved down).
* Round-off of the FFTs is *bounded*, under the standard floating-point model of a
  mixed-radix Cooley-Tukey FFT (:func:`_rho`: every output coefficient within
  ``10 u (log2 n + 1) ||x||_1``; Higham 2002, Sec. 24.1): the deviation of every
  spectral coefficient is bounded (forward error, pointwise product or polar power,
  the latter amplifying the forward error ``count`` times) and mapped to an L1 bound
  on the output (Parseval: ``||F^-1 d||_1 <= ||d||_2``, or ``<= ||d||_1``), plus the
  inverse FFT's own error; since ``delta`` is a sum of output masses with weights in
  [0, 1], that bound is added to ``err``.  It is a proof modulo the model (pocketfft's
  butterflies and twiddle accuracy are assumed, not verified).  Its size: ~5e-10 for
  10^4 compositions, ~5e-9 for 10^5 in double; when that exceeds 1e-3 of the queried
  ``delta`` the accountant redoes the power in long double (``precise``; 2^-64 on
  x86-64), leaving ~1e-10, dominated by ``count`` times the per-event allowance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft as sfft

from . import _atomic
from ._curves import Curve
from ._finite import Finite
from ._quadrature import _GL_T, _GL_W, _cell_integrals, _gl_n  # noqa: F401 (re-exported)
from ._roundoff import _U, _UL, _conv_err, _floor_err, _power_err, _rho

_KAPPA = 64.0  # ulps allowed per evaluated slope (special functions + quadrature)
#: masses below this are moved to +inf (pessimistic) or dropped (optimistic): keeps
#: subnormal numbers (slow arithmetic) out of the FFTs and the queries
_TINY = 1e-280


#: Chernoff exponents (per grid index, divided by the support length), both signs
_LAM = np.concatenate([np.geomspace(2e-3, 20.0, 7), -np.geomspace(2e-3, 20.0, 7)])


class GridTooLargeError(ValueError):
    """A distribution needs more grid points than the memory bound allows."""


@dataclass
class Pmf:
    lo: int
    p: np.ndarray
    inf: float
    err: float
    pess: bool


def _grid(curve: Curve, dx: float, max_bins: int) -> tuple[int, int]:
    # one point beyond each end: no atom sits on the lowest point (the bottom chord's
    # slope is then Q(L < lo) = 0 for exact ranges)
    k_lo = min(math.floor(curve.lo / dx) - 1, -1)
    k_hi = max(math.ceil(curve.hi / dx) + 1, 1)
    if k_hi - k_lo + 1 > max_bins:
        raise GridTooLargeError(
            f"value_discretization_interval={dx:g} needs {k_hi - k_lo + 1} grid points "
            f"for one event (limit {max_bins})")
    return k_lo, k_hi


def _chord_slopes(curve: Curve, dx: float, max_bins: int
                  ) -> tuple[int, np.ndarray, int, np.ndarray, np.ndarray]:
    """Grid, switch cell ``c``, chord slopes (D-form before ``c``, delta-form from ``c``
    on) of ``curve`` and the slopes' quadrature error bounds."""
    k_lo, k_hi = _grid(curve, dx, max_bins)
    eps = np.arange(k_lo, k_hi + 1) * dx
    i0 = -k_lo  # index of the grid point e = 0
    # Cells left of 0 where Q(L <= e) < 1/2 use the slopes of D(x) = delta - (1 - x)_+,
    # i.e. Q(L <= e) (small, accurate); the others the slopes of delta, -Q(L > e).
    q_end = curve.q_le(eps[1:i0 + 1])
    comp = np.maximum.accumulate(q_end > 0.5) if i0 else np.zeros(0, bool)
    c = int(np.argmax(comp)) if comp.size and comp.any() else i0  # first delta-form cell
    if isinstance(curve, Finite):  # atoms: exact chord slopes, vectorised
        return (k_lo, eps, c) + _atomic.chord_slopes(curve, dx, k_lo, eps.size - 1, c)
    h = np.full(eps.size - 1, dx)
    # both forms in one pass (fewer, larger array operations)
    integ, ierr = _cell_integrals(curve, eps[:-1], h, gt=np.arange(eps.size - 1) >= c)
    if curve.reparam:  # the part of a delta-form cell below the loss range: -Q(L > e) = -1
        lows = np.flatnonzero(eps[c:-1] < curve.flat_below) + c
        flat = np.expm1(np.minimum(curve.flat_below, eps[lows + 1]) - eps[lows])
        integ[lows] -= flat
        ierr[lows] += 4.0 * _U * np.abs(flat)
    for brk in curve.breaks:  # split the cells holding an atom at the jump
        j = math.floor(brk / dx) - k_lo
        if 0 <= j < eps.size - 1 and eps[j] < brk < eps[j + 1]:
            g = j >= c
            left, le = _cell_integrals(curve, eps[j:j + 1], np.array([brk - eps[j]]), g)
            right, re = _cell_integrals(curve, np.array([brk]), np.array([eps[j + 1] - brk]),
                                        g)
            f = math.exp(brk - eps[j])
            integ[j] = left[0] + f * right[0]
            ierr[j] = (le[0] + f * re[0]) * (1.0 + 4.0 * _U)
    scale = math.expm1(dx)
    return k_lo, eps, c, integ / scale, ierr / scale * (1.0 + 4.0 * _U)


def connect_dots(curve: Curve, dx: float, max_bins: int) -> Pmf:
    """Pessimistic connect-the-dots pmf of ``curve`` on the grid ``dx * Z``."""
    if isinstance(curve, Finite):  # atoms: split exactly between the grid points
        k_lo, k_hi = _grid(curve, dx, max_bins)
        return Pmf(k_lo, *_atomic.split_atoms(curve, dx, k_lo, k_hi), True)
    k_lo, eps, c, slopes, serr = _chord_slopes(curve, dx, max_bins)
    slopes = slopes + serr  # the quadrature's error bound, on the safe side
    # Round every slope up by its error bound and make the delta-slopes nondecreasing:
    # the curve built from them starts at (0, 1) and has larger slopes than the exact
    # connect-the-dots curve, so it lies above it (pessimistic by construction), and
    # its masses are >= 0 (a valid distribution).
    slopes = slopes + _KAPPA * _U * np.abs(slopes)
    s_bot = max(float(curve.q_le(eps[:1])[0]), 0.0)  # >= the chord from x = 0 (D form)
    dform = np.maximum.accumulate(np.concatenate([[s_bot], slopes[:c]]))
    dslope = np.maximum.accumulate(np.maximum(slopes[c:], dform[-1] - 1.0))
    dslope = np.minimum(dslope, 0.0)
    x = np.exp(eps)
    dxs = np.diff(x)
    # height of the curve at the top grid point = mass at +inf (the curve is flat beyond)
    top = math.fsum(np.concatenate([[1.0, -x[c], x[0] * dform[0]], dform[1:] * dxs[:c],
                                    dslope * dxs[c:]]).tolist())
    v = np.concatenate([dform, dslope, [0.0]])
    p = x * np.diff(v)
    p[c] = x[c] * ((dslope[0] + 1.0) - dform[-1])  # the switch from D- to delta-slopes
    inf = max(top, float(curve.p_gt(eps[-1:])[0])) + 4 * _U * float(np.max(np.abs(v)))
    err = 8 * _U  # rounding of the masses themselves (relative 2u each) and of p[c]
    p = np.maximum(p, 0.0)
    tiny = p < _TINY
    inf += float(p[tiny].sum()) * (1.0 + 1e-9)  # moved to +inf: pessimistic
    p[tiny] = 0.0
    # safety net: the masses must sum to 1; missing mass (a quadrature failure) goes to
    # +inf, which only makes the result more pessimistic
    inf += max(0.0, 1.0 - (math.fsum(p.tolist()) + inf))
    return Pmf(k_lo, p, min(1.0, inf), err, True)


def _edge_cumsum(p: np.ndarray, limit: float) -> np.ndarray:
    """A prefix of ``np.cumsum(p)`` (the same values) long enough to pass ``limit``
    (or all of it): the tails cut are short, the arrays long."""
    m = 2048
    while m < p.size:
        c = np.cumsum(p[:m])
        if c[-1] > limit:
            return c
        m *= 8
    return np.cumsum(p)


def _truncate(lo: int, p: np.ndarray, inf: float, pess: bool, tau: float
              ) -> tuple[int, np.ndarray, float]:
    c = _edge_cumsum(p, tau / 2)
    i = int(np.searchsorted(c, tau / 2, side="right"))  # p[:i] sums to <= tau/2
    r = _edge_cumsum(p[::-1], tau / 2)
    k = int(np.searchsorted(r, tau / 2, side="right"))  # p[n-k:] sums to <= tau/2
    j = p.size - k
    if i >= j:
        return lo, p, inf
    left = float(c[i - 1]) if i else 0.0
    right = float(r[k - 1]) if k else 0.0
    q = p[i:j].copy()
    if pess:
        q[0] += left
        inf = inf + right
    else:
        q[-1] += right
    return lo + i, q, inf


def _finish(lo: int, c: np.ndarray, inf: float, err: float, pess: bool, tau: float,
            max_bins: int) -> Pmf:
    """Clip round-off negatives, truncate the tails, check the size."""
    np.maximum(c, 0.0, out=c)
    tiny = c < _TINY
    n_tiny = int(np.count_nonzero(tiny))
    if n_tiny:
        if pess:  # moved to +inf (each below _TINY); optimistic: dropped
            inf += n_tiny * _TINY
        np.putmask(c, tiny, 0.0)
    inf = math.nextafter(inf, math.inf) if pess else math.nextafter(inf, 0.0)
    lo, c, inf = _truncate(lo, c, inf, pess, tau)
    if c.size > max_bins:
        raise GridTooLargeError(f"composed distribution needs {c.size} grid points "
                                f"(limit {max_bins})")
    return Pmf(lo, c, min(1.0, inf), err, pess)


def compose(a: Pmf, b: Pmf, tau: float, max_bins: int) -> Pmf:
    """Composition (linear convolution by FFT) of two pmfs on the same grid."""
    if a.p.size == 1 and a.lo == 0 and a.inf == 0.0 and a.err == 0.0 and a.p[0] == 1.0:
        return b
    n = a.p.size + b.p.size - 1
    if n > 2 * max_bins:
        raise GridTooLargeError(f"composition needs {n} grid points (limit {2 * max_bins})")
    nf = sfft.next_fast_len(n, real=True)
    fa, fb = sfft.rfft(a.p, nf), sfft.rfft(b.p, nf)
    c = sfft.irfft(fa * fb, nf)[:n]
    err = a.err + b.err + a.err * b.err + _conv_err(a.p, b.p, fa, fb, nf)
    inf = a.inf + b.inf - a.inf * b.inf
    return _finish(a.lo + b.lo, c, inf, err, a.pess, tau, max_bins)


def _chernoff(a: Pmf, count: int, tau: float) -> tuple[int, int]:
    """Index range holding all but ``tau/2`` of each tail of the ``count``-fold sum."""
    m = a.p.size
    pos = np.flatnonzero(a.p > 0.0)
    if pos.size == 0:
        return a.lo * count, a.lo * count
    idx = a.lo + pos.astype(np.float64)
    logp = np.log(a.p[pos])
    lam = _LAM / max(m, 1)
    ref = float(idx[0])
    with np.errstate(over="ignore", invalid="ignore"):
        mat = logp[None, :] + lam[:, None] * (idx - ref)[None, :]
        top = mat.max(axis=1)
        k = top + np.log(np.exp(mat - top[:, None]).sum(axis=1)) + lam * ref
        bounds = (count * k + math.log(2.0 / tau)) / lam
    bounds = np.where(np.isfinite(bounds), bounds, np.nan)
    up, down = bounds[lam > 0], bounds[lam < 0]
    hi, lo = count * float(idx[-1]), count * float(idx[0])
    if not np.all(np.isnan(up)):
        hi = min(hi, float(np.nanmin(up)))
    if not np.all(np.isnan(down)):
        lo = max(lo, float(np.nanmax(down)))
    return math.floor(lo), math.ceil(hi)


def self_compose(a: Pmf, count: int, tau: float, max_bins: int, precise: bool = False
                 ) -> Pmf:
    """``count``-fold composition by one FFT, a power and one inverse FFT.

    The round-off of the forward FFT and of the power is amplified ``count`` times (a
    relative error ``r`` of a coefficient becomes ``count * r``); ``precise`` computes
    both in long double (about 4x slower; the inverse FFT stays double), which divides
    that part of the error bound by ``2^11`` on x86-64.

    The window is chosen by a Chernoff bound so that each tail outside it holds at most
    ``tau / 2``; that mass wraps around (circular convolution).  Pessimistic: ``tau / 2``
    is added to the mass at ``+inf`` (the upper tail's mass, misplaced lower) and the
    wrapped lower tail only adds mass; optimistic: ``tau`` is added to ``err``.
    """
    if count == 1:
        return a
    lo, hi = _chernoff(a, count, tau)
    width = hi - lo + 1
    if width > max_bins:
        raise GridTooLargeError(f"composed distribution needs {width} grid points "
                                f"(limit {max_bins})")
    nf = sfft.next_fast_len(max(width, a.p.size), real=True)
    u = _UL if precise else _U
    fa = sfft.rfft(a.p.astype(np.longdouble) if precise else a.p, nf)
    e = _rho(nf, u) * math.fsum(a.p.tolist()) * (1.0 + 1e-12)  # bound on |A_hat_k - A_k|
    # the coefficients that matter: (|A_hat| + e)^(count - 1) > e^-600 (the threshold
    # is lowered a little, so the selection errs on the inclusive side; compared in
    # squares, whose relative rounding (a few u) the lowering covers)
    thr = math.exp(-600.0 / max(count - 1, 1)) * (1.0 - 1e-9) - e
    if thr > 0.0:
        sel = np.flatnonzero(fa.real * fa.real + fa.imag * fa.imag > thr * thr)
    else:
        sel = np.arange(fa.size)
    ms = np.abs(fa[sel])
    with np.errstate(under="ignore", divide="ignore"):
        # power in polar form (numpy's complex power is several times slower); the
        # coefficients of modulus^count below 1e-200 are set to 0 (no subnormal numbers
        # in the inverse FFT; the error bound covers it)
        mag = np.exp(count * np.log(ms))
        mag[mag <= 1e-200] = 0.0
        ang = count * np.angle(fa[sel])
        sub = mag * (np.cos(ang) + 1j * np.sin(ang))
    spec = np.zeros(fa.size, dtype=np.complex128)
    spec[sel] = sub
    c = sfft.irfft(spec, nf)
    # entry r holds the sums with index count*a.lo + j, j = r (mod nf)
    s0 = (lo - count * a.lo) % nf
    c = c[s0:s0 + width].copy() if s0 + width <= nf else np.concatenate(
        [c[s0:], c[:s0 + width - nf]])
    err = count * a.err + _power_err(ms, spec[sel], e, count, nf, u) + _floor_err(fa.size, nf)
    inf = -math.expm1(count * math.log1p(-min(a.inf, 1.0 - 1e-16)))
    if a.pess:
        inf += tau / 2
    else:
        err += tau
    return _finish(lo, c, inf, err, a.pess, tau, max_bins)


def identity(pess: bool) -> Pmf:
    return Pmf(0, np.ones(1), 0.0, 0.0, pess)


#: delta's tail sums run in long double when their double-precision rounding bound
#: would exceed this share of the answer
_SUM_SHARE = 1e-3


def _positive_part(pmf: Pmf, dx: float, precise: bool = False
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Losses > 0, their tail sums ``A_j = sum_{i>=j} p_i`` and ``B_j = sum p_i e^-l_i``,
    and a bound on their rounding (as it enters ``delta``).  The sums are sequential:
    ``n u`` of the total in double, ``n u_L`` in long double (``precise``; ~2^11 smaller
    on x86-64, which fine grids need), rounded to double (u relative); the weights
    ``e^-l`` (2 ulps) and the caller's ``exp(epsilon)`` and subtraction: 8 u of ``A_0``."""
    start = max(0, 1 - pmf.lo)
    p = pmf.p[start:]
    losses = (np.arange(p.size, dtype=np.float64) + float(pmf.lo + start)) * dx
    dt = np.longdouble if precise else np.float64
    a = np.cumsum(p[::-1], dtype=dt)[::-1].astype(np.float64)
    b = np.cumsum((p * np.exp(-losses))[::-1], dtype=dt)[::-1].astype(np.float64)
    u = _UL if precise else _U
    margin = (4.0 * u * (p.size + 2) + 8.0 * _U) * (float(a[0]) if a.size else 0.0)
    return losses, np.append(a, 0.0), np.append(b, 0.0), margin


def delta(pmf: Pmf, dx: float, epsilon: float) -> float:
    """Hockey-stick divergence at ``epsilon >= 0`` (upper bound if pessimistic, else lower)."""
    d = _delta(pmf, dx, epsilon, False)
    if 4.0 * _U * (pmf.p.size + 2) > _SUM_SHARE * max(d, 1e-300):
        d = _delta(pmf, dx, epsilon, True)
    return d


def _delta(pmf: Pmf, dx: float, epsilon: float, precise: bool) -> float:
    losses, a, b, margin = _positive_part(pmf, dx, precise)
    j = int(np.searchsorted(losses, epsilon, side="right"))
    d = float(a[j] - math.exp(epsilon) * b[j]) if j < losses.size else 0.0
    d = max(d, 0.0) + pmf.inf
    d = d + pmf.err + margin if pmf.pess else d - pmf.err - margin
    return min(1.0, max(0.0, d))


def epsilon(pmf: Pmf, dx: float, target: float) -> float:
    """Smallest ``epsilon >= 0`` with ``delta(epsilon) <= target`` (``inf`` if none)."""
    precise = 4.0 * _U * (pmf.p.size + 2) > _SUM_SHARE * target
    losses, a, b, margin = _positive_part(pmf, dx, precise)
    slack = pmf.err + margin
    d = target - pmf.inf - (slack if pmf.pess else -slack)
    if d <= 0.0:
        return math.inf if pmf.pess or target <= pmf.inf else 0.0
    if losses.size == 0:
        return 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        at_grid = a[1:] - np.exp(losses) * b[1:]  # delta(l_j), using losses > l_j
    at_grid = np.where(b[1:] > 0.0, at_grid, a[1:])
    f0 = float(a[0] - b[0])
    if f0 <= d:
        return 0.0
    above = np.flatnonzero(at_grid > d)
    j = int(above[-1]) + 1 if above.size else 0  # epsilon in (l_{j-1}, l_j]
    aj, bj = float(a[j]), float(b[j])
    if bj <= 0.0:
        e = float(losses[j - 1]) if j else 0.0
    else:
        e = math.log((aj - d) / bj)
        lo_l = float(losses[j - 1]) if j else 0.0
        e = min(max(e, lo_l), float(losses[j]) if j < losses.size else e)
    if pmf.pess:
        return math.nextafter(e * (1 + 1e-12) + 1e-15, math.inf)
    return max(0.0, e * (1 - 1e-12) - 1e-15)
