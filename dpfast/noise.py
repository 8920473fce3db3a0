"""Array-at-a-time exact and secure noise: the public noising API.

All functions take numpy array-likes of any shape, never modify their input unless it is
passed as ``out``, draw their bits only from dpfast's ChaCha20 generator (``rng``: None
for the process-wide generator, a :class:`dpfast.Generator`, or a 32-byte key), and split
the work into fixed chunks on their own streams run on all cores, so a given key gives the
same output whatever the thread count.

Exactness: the integer samplers' output distributions are exactly their targets given
ideal random bits (see :mod:`dpfast._exact` and :mod:`dpfast._kernels.samplers`); the
float mechanisms are exact discrete mechanisms on a power-of-two grid, whose only float
operation is one correctly rounded addition (post-processing).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast import _drive
from dpfast._kernels import grid as _grid
from dpfast.random import as_generator

__all__ = ["discrete_laplace", "discrete_gaussian", "laplace", "gaussian", "granularity",
           "snapping", "snapping_epsilon", "snapping_delta", "GRANULARITY_BITS"]

GRANULARITY_BITS = 40  # default grid: scale / granularity in (2^39, 2^40]
MIN_FLOAT_SCALE = 2.0 ** -1022  # laplace / gaussian scale range (docstrings, ValueError)
MAX_FLOAT_SCALE = 2.0 ** 1000
_SLICE = 1 << 20  # float functions work in slices of this many cells (bounded memory)


# ----------------------------------------------------------------------------- helpers
def _int_input(x: Any, out: Any) -> tuple[np.ndarray, np.ndarray | None]:
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f":
            raise TypeError("x must be an integer array; use dpfast.laplace / dpfast.gaussian "
                            "for floats")
        raise TypeError(f"x must be an integer array, got dtype {arr.dtype}")
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError("out must be a numpy array")
        if out.shape != arr.shape:
            raise ValueError(f"out has shape {out.shape}, x has shape {arr.shape}")
        if out.dtype != arr.dtype:
            raise TypeError(f"out has dtype {out.dtype}, x has dtype {arr.dtype}")
        if not out.flags.writeable:
            raise ValueError("out is read-only")
    return arr, out


def _float_input(x: Any, out: Any) -> tuple[np.ndarray, np.ndarray | None]:
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"x must be a real (float or integer) array, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and arr.size and not (np.isfinite(np.max(arr))
                                                   and np.isfinite(np.min(arr))):
        # max/min propagate NaN and see inf, without allocating a mask of x's size
        raise ValueError("x must be finite (no NaN or inf)")
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError("out must be a numpy array")
        if out.shape != arr.shape:
            raise ValueError(f"out has shape {out.shape}, x has shape {arr.shape}")
        if out.dtype != np.float64:
            raise TypeError(f"out must have dtype float64, got {out.dtype}")
        if not out.flags.writeable:
            raise ValueError("out is read-only")
    return arr, out


def _param_for(value: Any, name: str, shape: tuple[int, ...]) -> _drive.Param:
    parsed, pshape = _drive.parse_param(value, name)
    if pshape:
        try:
            if np.broadcast_shapes(pshape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"{name} with shape {pshape} does not broadcast to x's shape "
                             f"{shape}") from None
    return _drive.make_param(parsed, shape)


def _add_discrete(kind: int, x: Any, param: Any, name: str, rng: Any, out: Any) -> np.ndarray:
    arr, out = _int_input(x, out)
    gen = as_generator(rng)
    p = _param_for(param, name, arr.shape)
    n = arr.size
    dt = arr.dtype
    if out is not None and np.shares_memory(out, arr) and not _same_buffer(out, arr):
        arr = arr.copy()  # out overlaps x only in part: read x from a copy
    native64 = dt.kind == "i" and dt.itemsize == 8 and dt.isnative
    if native64 and arr.flags.c_contiguous:
        if out is not None and _same_buffer(out, arr):
            # in place: on overflow the cells written so far are restored (out unchanged)
            if n:
                _drive.run_discrete(gen, kind, p, n, out.reshape(-1), x=arr.reshape(-1),
                                    in_place=True)
            return out
        result = np.empty(arr.shape, np.int64)
        if n:
            _drive.run_discrete(gen, kind, p, n, result.reshape(-1), x=arr.reshape(-1))
        if out is None:
            return result
        out[...] = result  # only after every cell is known to fit
        return out
    # general dtypes / byte orders / layouts: noise in int64, exact range check (in the
    # native int64 or uint64 domain), cast back; out is written only if every cell fits
    noise = np.empty(n, np.int64)
    if n:
        _drive.run_discrete(gen, kind, p, n, noise)
    flat = np.ascontiguousarray(arr).reshape(-1)
    info = np.iinfo(dt)
    if dt.kind == "u" and dt.itemsize == 8:
        xu = flat.astype(np.uint64)
        res = xu + noise.view(np.uint64)  # modulo 2^64
        bad = np.where(noise >= 0, res < xu, res > xu)
    elif dt.itemsize == 8:  # int64 of any byte order or layout
        x64 = flat.astype(np.int64)
        res = (x64.view(np.uint64) + noise.view(np.uint64)).view(np.int64)  # modulo 2^64
        bad = ((x64 ^ res) & (noise ^ res)) < 0  # two's-complement overflow test
    else:
        x64 = flat.astype(np.int64)
        res = x64 + noise
        # |x| < 2^32, |noise| < 2^63: detect int64 overflow before the range test
        bad = ((x64 ^ res) & (noise ^ res)) < 0
        bad |= (res < info.min) | (res > info.max)
    if bad.any():
        raise OverflowError(f"noisy value does not fit the dtype {dt} of x")
    result = res.astype(dt).reshape(arr.shape)
    if out is None:
        return result
    out[...] = result
    return out


# ----------------------------------------------------------------------------- integers
def discrete_laplace(x: Any, scale: Any, *, rng: Any = None,
                     out: np.ndarray | None = None) -> np.ndarray:
    """Add exact discrete Laplace noise to integer data.

    Parameters
    ----------
    x : array_like of integers
        Any shape, memory order and integer dtype (not bool).
    scale : float, int, Fraction or array_like
        ``t > 0``: noise ``P(k) = (1 - e^{-1/t}) / (1 + e^{-1/t}) * e^{-|k|/t}``.  A float
        is the exact binary rational it encodes; an array broadcasts to ``x`` (per-cell
        noise levels).  Supported range ``[2**-100, 2**50]`` (``ValueError`` outside).
    rng : None, Generator or bytes, optional
        None: the process-wide urandom-keyed generator; a 32-byte key replays.
    out : ndarray, optional
        Same shape and dtype as ``x`` (``out=x`` noises in place).

    Returns
    -------
    ndarray
        ``x + noise`` with x's dtype and shape.

    Raises
    ------
    OverflowError
        If a noisy value does not fit the dtype (it never wraps).  ``out`` (also
        ``out=x``) is then left exactly as it was: an in-place call undoes the cells it
        already wrote, a separate ``out`` is written only once every cell fits.
    ValueError
        If ``scale`` is outside its supported range.

    Privacy
    -------
    For integer queries with L1 sensitivity ``Δ`` (neighbouring datasets differ in one
    individual; add/remove or replace as the sensitivity was computed), the release is
    ``ε = Δ / t`` differentially private: the pmf ratio at any output is at most
    ``e^{|k - k'| / t}``.  Canonne, Kamath & Steinke, "The Discrete Gaussian for
    Differential Privacy", NeurIPS 2020 (CKS20), Sec. 2; Ghosh, Roughgarden & Sundararajan
    2012 (geometric mechanism).

    Numerics
    --------
    Exact: a scalar scale >= 32 uses rejection from a piecewise-constant envelope held in
    an exact integer alias table (:mod:`dpfast._envelope`); smaller or per-cell scales a
    geometric by inversion (with a power-of-two split for per-cell scales >= 32).  Every
    float decision is certified by a rigorous error bound and undecided cases are
    finished with integer interval arithmetic on a lazily refined uniform (never
    resampled).
    """
    return _add_discrete(0, x, scale, "scale", rng, out)


def discrete_gaussian(x: Any, sigma: Any, *, rng: Any = None,
                      out: np.ndarray | None = None) -> np.ndarray:
    """Add exact discrete Gaussian noise to integer data.

    Parameters
    ----------
    x : array_like of integers
        Any shape, memory order and integer dtype (not bool).
    sigma : float, int, Fraction or array_like
        ``σ > 0``: noise ``P(k) ∝ exp(-k² / (2σ²))`` on the integers; arrays broadcast to
        ``x``.  Supported range ``[2**-100, 2**50]``.
    rng : None, Generator or bytes, optional
        As in :func:`discrete_laplace`.
    out : ndarray, optional
        Same shape and dtype as ``x``.

    Returns
    -------
    ndarray
        ``x + noise`` with x's dtype and shape.

    Raises
    ------
    OverflowError
        As in :func:`discrete_laplace` (``out`` is left unchanged).

    Privacy
    -------
    For integer vector queries with L2 sensitivity ``Δ₂`` this is ``ρ = Δ₂² / (2σ²)``
    zero-concentrated DP and satisfies the (ε, δ) curve of CKS20 Theorem 7 (at least as
    good as the continuous Gaussian's up to a negligible term).  CKS20, Sec. 2-4.

    Numerics
    --------
    A scalar ``σ`` uses the envelope table (:mod:`dpfast._envelope`); per-cell ``σ``
    CKS20 Algorithm 3 (discrete Laplace proposal with scale ``floor(σ) + 1``, Bernoulli
    acceptance ``exp(-(|y| - σ²/t)² / (2σ²))``).  Every decision is certified or
    finished exactly as in :func:`discrete_laplace`.
    """
    return _add_discrete(1, x, sigma, "sigma", rng, out)


# ----------------------------------------------------------------------------- floats
def granularity(scale: Any, bits: int = GRANULARITY_BITS) -> float:
    """The default output grid for a noise scale: the smallest power of two ``g`` with
    ``scale / g <= 2**bits`` (so the discrete noise keeps about ``bits`` significant bits
    below the scale)."""
    s = float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    m, e = math.frexp(s)  # s = m 2^e, m in [0.5, 1)
    k = e - bits if m > 0.5 else e - 1 - bits
    return math.ldexp(1.0, k)


MIN_GRANULARITY = 2.0 ** -1074  # the smallest positive double
MAX_GRANULARITY = 2.0 ** 960  # grid multiples stay exact up to the largest double
_DBL_MAX = float(np.finfo(np.float64).max)


def _check_granularity(g: Any) -> float:
    if isinstance(g, (bool, np.bool_)):
        raise TypeError("granularity must be a power of two, got bool")
    try:
        gf = float(g)
    except (TypeError, ValueError):
        raise TypeError(f"granularity must be a power of two, got {g!r}") from None
    if not (math.isfinite(gf) and gf > 0 and math.frexp(gf)[0] == 0.5):
        raise ValueError(f"granularity must be a positive power of two, got {g!r}")
    if gf > MAX_GRANULARITY:
        raise ValueError(f"granularity must be at most 2**960, got {g!r}")
    return gf


def _grid_fix(flat: np.ndarray, z: np.ndarray, g: float, sat: float, res: np.ndarray,
              nbig: np.ndarray) -> None:
    """Cells the kernel left (|z| >= 2^53): the exact grid value rounded once, in
    integers (int / int true division is correctly rounded, subnormals included)."""
    blk = _grid.GRID_BLOCK
    gfrac = Fraction(g)
    for b in np.flatnonzero(nbig):
        lo = int(b) * blk
        zz = z[lo:lo + blk]
        for k in np.flatnonzero(np.abs(zz.astype(np.float64)) >= _grid.EXACT_Z):
            i = lo + int(k)
            s = int(np.rint(flat[i] / g)) + int(z[i])
            try:
                v = (s * gfrac.numerator) / gfrac.denominator
            except OverflowError:
                v = math.inf if s > 0 else -math.inf
            res[i] = min(max(v, -sat), sat)


def _add_grid(kind: int, x: Any, param: Any, name: str, rng: Any, out: Any,
              gran: Any) -> np.ndarray:
    arr, out = _float_input(x, out)
    parsed, pshape = _drive.parse_param(param, name, lower=MIN_FLOAT_SCALE,
                                        upper=MAX_FLOAT_SCALE)
    if pshape:
        raise TypeError(f"{name} must be a scalar for the float mechanisms")
    scale = parsed
    g = granularity(float(scale)) if gran is None else _check_granularity(gran)
    t = scale / Fraction(g)
    if t > _drive.MAX_SCALE:
        raise ValueError(f"{name} / granularity = {float(t):g} exceeds 2**50; use a coarser "
                         "granularity")
    if t < _drive.MIN_SCALE:
        raise ValueError(f"{name} / granularity = {float(t):g} is below 2**-100; use a finer "
                         "granularity")
    gen = as_generator(rng)
    flat = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)
    if flat.size and not np.isfinite(max(abs(float(flat.max())), abs(float(flat.min()))) / g):
        raise ValueError("x / granularity overflows; x is too large for this granularity")
    if out is not None and np.shares_memory(out, flat) and not _same_buffer(out, flat):
        flat = flat.copy()  # out overlaps x only in part: read x from a copy
    direct = out is not None and out.flags.c_contiguous
    # with a contiguous out (out=x included: each cell is read before it is written) the
    # result goes straight into it, so in-place noising allocates only the slice buffers;
    # nothing after this point can fail, so out is never left half noised
    result = out.reshape(-1) if direct else np.empty(flat.size, np.float64)
    p = _drive.Param(np.array([float(t)]), t)
    z = np.empty(min(_SLICE, flat.size), np.int64)
    nbig = np.zeros(-(-max(1, min(_SLICE, flat.size)) // _grid.GRID_BLOCK), np.int64)
    sat = _DBL_MAX  # the largest grid value: DBL_MAX = (2^53 - 1) 2^971 is a multiple of g
    for lo in range(0, flat.size, _SLICE):
        hi = min(flat.size, lo + _SLICE)
        _drive.run_discrete(gen, kind, p, hi - lo, z[:hi - lo])
        with _drive.threads_for(-(-(hi - lo) // _drive.CHUNK)):
            _grid.grid_add(flat[lo:hi], z[:hi - lo], g, sat, result[lo:hi], nbig)
        if nbig.any():
            _grid_fix(flat[lo:hi], z[:hi - lo], g, sat, result[lo:hi], nbig)
            nbig[:] = 0
    if direct:
        return out
    result = result.reshape(arr.shape)
    if out is None:
        return result
    out[...] = result
    return out


def _same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """True if ``a`` and ``b`` address exactly the same elements in the same order."""
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
            and a.size == b.size and a.dtype.itemsize == b.dtype.itemsize
            and (a.size <= 1 or (a.flags.c_contiguous and b.flags.c_contiguous)
                 or (a.shape == b.shape and a.strides == b.strides)))


def laplace(x: Any, scale: Any, *, rng: Any = None, out: np.ndarray | None = None,
            granularity: Any = None) -> np.ndarray:
    """Secure Laplace noise for real-valued data, on a power-of-two grid.

    Parameters
    ----------
    x : array_like of floats (or integers)
        Finite values, any shape.
    scale : float, int or Fraction
        Laplace scale ``b``, supported range ``[2**-1022, 2**1000]``; ``b / g`` must lie
        in ``[2**-100, 2**50]``.
    rng : None, Generator or bytes, optional
        As in :func:`discrete_laplace`.
    out : ndarray of float64, optional
        Same shape as ``x``.
    granularity : float, optional
        Output grid ``g`` (a power of two, at most ``2**960``).  Default
        :func:`dpfast.noise.granularity` ``(scale)``, the smallest power of two with
        ``scale / g <= 2**40``.

    Returns
    -------
    ndarray of float64
        ``round_g(x) + g * Z``, ``Z`` discrete Laplace with scale ``b / g``, i.e. the exact
        grid value rounded once to the nearest double.

    Privacy
    -------
    Rounding to the grid moves each value by at most ``g / 2``, so neighbouring inputs with
    L1 sensitivity ``Δ`` give grid points at most ``Δ + g`` apart, and the release is
    ``ε = (Δ + g) / b`` differentially private (exactly: ``floor(Δ/g + 1) g / b``).  The
    output support is the grid ``g Z`` for every input, so the floating-point attacks of
    Mironov (CCS 2012) and Jin et al. (S&P 2022) do not apply.  Construction: Google DP
    team, "Secure Noise Generation" (2020); CKS20 for the discrete Laplace.

    Numerics
    --------
    The output is the exact grid value ``(rint(x/g) + Z) g`` rounded once: for
    ``|Z| < 2**53`` both terms are exact doubles and one addition rounds; larger ``Z``
    are added in exact integer arithmetic.  A value beyond the float64 range saturates
    at ``±max double`` (a multiple of every allowed ``g``), so the output is always
    finite and still a function of the exact grid value only (post-processing).
    """
    return _add_grid(0, x, scale, "scale", rng, out, granularity)


def gaussian(x: Any, sigma: Any, *, rng: Any = None, out: np.ndarray | None = None,
             granularity: Any = None) -> np.ndarray:
    """Secure Gaussian noise for real-valued data, on a power-of-two grid.

    Parameters
    ----------
    x : array_like of floats (or integers)
        Finite values, any shape.
    sigma : float, int or Fraction
        Standard deviation ``σ`` of the (discrete) Gaussian; ranges as ``scale`` in
        :func:`laplace`.
    rng, out, granularity
        As in :func:`laplace`; the default grid is :func:`granularity` ``(sigma)``.

    Returns
    -------
    ndarray of float64
        ``round_g(x) + g * Z``, ``Z`` discrete Gaussian with ``σ / g``.

    Privacy
    -------
    Grid rounding adds at most ``g`` to the L2 sensitivity of a vector of ``d`` values
    only per coordinate: use ``Δ₂' = Δ₂ + g sqrt(d)`` (or ``Δ₂ + g`` for a scalar).  The
    release is ``ρ = Δ₂'² / (2σ²)``-zCDP and satisfies the discrete Gaussian (ε, δ) curve
    of CKS20 Theorem 7 with sensitivity ``Δ₂' / g`` grid units.  Google DP team, "Secure
    Noise Generation" (2020); CKS20.

    Numerics
    --------
    As :func:`laplace`.
    """
    return _add_grid(1, x, sigma, "sigma", rng, out, granularity)


# ----------------------------------------------------------------------------- snapping
SNAP_MIN = 2.0 ** -960  # supported range of the snapping scale and bound: normal
SNAP_MAX = 2.0 ** 960  # doubles whose products with ln(U*) (|ln U*| <= 745) stay normal
SNAP_PURE_RATIO = 372  # B <= 372 lambda: every output is reachable from every input
_LN_UMIN = 744.5  # > |ln 2^-1074|: the largest |ln U*|


def _snap_value(v: Any, name: str) -> Fraction:
    """A positive finite real as its exact rational (ints of any size, Fractions,
    floats); ValueError / TypeError naming the parameter."""
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be a number, got bool")
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


def snapping(x: Any, scale: Any, bound: Any, *, rng: Any = None) -> np.ndarray:
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
        As in :func:`discrete_laplace`.

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
    arr, _ = _float_input(x, None)
    gen = as_generator(rng)
    flat = np.ascontiguousarray(arr, dtype=np.float64).reshape(-1)
    out = np.empty(flat.size, np.float64)
    m, e = math.frexp(lam)
    big_lam = lam if m == 0.5 else math.ldexp(1.0, e)  # the smallest power of two >= lam
    for lo, hi, buf, st, nonces in _drive.batches(gen, flat.size, 2.05):
        with _drive.threads_for(buf.shape[0]):
            _grid.snapping(buf, st, gen._key_words, nonces, flat, out, lo, hi - lo,
                           _drive.CHUNK, lam, big_lam, b)
        _drive.check_wrap(st)
    return out.reshape(arr.shape)
