"""Rigorous bounds on the round-off of the FFT compositions of :mod:`._pmf`.

Model (Higham 2002, Sec. 24.1): a mixed-radix Cooley-Tukey FFT whose every output
coefficient is within ``_rho(n) ||x||_1`` of the exact DFT; the bounds below carry that
through the pointwise product (two pmfs) or the polar power (self-composition) and the
inverse FFT to an L1 bound on the output masses, hence on ``delta`` (a sum of masses
with weights in [0, 1]).  pocketfft's implementation is assumed to meet the model, not
verified.  Subnormal numbers are avoided (floors, clamped exponents): they are slow.
"""

from __future__ import annotations

import math

import numpy as np

_U = 2.0**-53
#: unit roundoff of numpy's long double (x87 extended on x86-64: 2^-64; on platforms
#: where it is plain double, 2^-53 and the "precise" power gains nothing but stays valid)
_UL = float(np.finfo(np.longdouble).eps) / 2.0


def _rho(n: int, u: float = _U) -> float:
    """Componentwise error factor of one length-``n`` real FFT (forward or inverse,
    unnormalised): ``|fl(F x)_k - (F x)_k| <= _rho(n) * ||x||_1`` for every ``k``.

    Model (Higham 2002, Sec. 24.1, componentwise form of Thm. 24.2): a mixed-radix
    Cooley-Tukey FFT of ``ceil(log2 n)`` radix-2 levels or fewer radix-3/4/5 stages,
    twiddle factors of modulus 1 accurate to ``2u``; every intermediate value is a
    signed, twiddled partial sum of the input, so it is at most ``||x||_1`` in modulus,
    and each level adds at most ``(2 + 4 sqrt 2) u < 8u`` of that (one complex twiddle
    product and complex additions; a radix-``r`` stage counts as ``log2 r`` levels and
    adds less).  One extra level covers the real-input packing step; ``10u`` per level
    leaves a margin, and the factor ``(1 + 1e-3)`` covers the products of errors.
    """
    return 10.0 * u * (math.ceil(math.log2(max(n, 2))) + 1) * (1.0 + 1e-3)


#: floor of every coefficient's deviation bound (keeps squares normal numbers)
_DEV_FLOOR = 1e-150


def _floor_err(m: int, nf: int) -> float:
    """The floor :data:`_DEV_FLOOR` over the ``m`` rfft coefficients not passed to
    :func:`_spectrum_to_l1` (an upper bound on their L1 contribution)."""
    return 2.0 * m * _DEV_FLOOR


def _spectrum_to_l1(dev: np.ndarray, spec: np.ndarray, nf: int) -> float:
    """Bound on ``||c_hat - c||_1`` over all ``nf`` outputs of the inverse FFT.

    ``dev[k]`` bounds ``|S_hat_k - S_k|`` on some rfft coefficients, ``spec`` is the
    computed ``S_hat`` there (the others are 0 and their deviations are accounted by
    the caller); all are counted twice (a coefficient and its conjugate).  The exact
    inverse DFT maps the deviation to ``||F^-1 dev||_1 <= sqrt(nf) ||F^-1 dev||_2 =
    ||dev||_2`` (Parseval, full spectrum) and to ``<= ||dev||_1``.  The inverse FFT's
    own rounding: componentwise (the model of :func:`_rho`) at most ``_rho(nf)
    ||S_hat||_1 / nf`` per output, ``nf`` outputs; normwise (Higham 2002, Thm. 24.2, the
    form the theorem states) ``||fl(F* S_hat) - F* S_hat||_2 <= _rho(nf) sqrt(nf)
    ||S_hat||_2``, i.e. at most ``_rho(nf) ||S_hat||_2`` in L1 after the scaling by
    ``1/nf`` (``sqrt(nf)`` from L2 to L1) — far smaller for spectra that do not decay
    (atoms far apart on a fine grid); the smaller is used.  The final scaling by
    ``1/nf`` errs by ``u`` relative per output, at most ``u (1 + the rest)`` in all (the
    exact output of the input pmfs has L1 norm <= 1).
    """
    dev = np.maximum(dev, _DEV_FLOOR)  # squares stay normal numbers (subnormals are slow)
    # plain numpy sums (no BLAS threads); the factor (1 + 2 nf u) covers their rounding
    l2 = math.sqrt(2.0 * float(np.sum(dev * dev)))
    l1 = 2.0 * float(np.sum(dev))
    mod = np.abs(spec)
    mod1 = 2.0 * float(np.sum(mod))
    mod = np.maximum(mod, _DEV_FLOOR)  # an upper bound; no subnormal squares
    mod2 = math.sqrt(2.0 * float(np.sum(mod * mod)))
    inv = _rho(nf) * min(mod1, mod2)
    part = min(l1, l2) + inv
    return (part + 2.0 * _U * (1.0 + part)) * (1.0 + 2.0 * (nf + 4) * _U)


def _conv_err(a: np.ndarray, b: np.ndarray, fa: np.ndarray, fb: np.ndarray, nf: int
              ) -> float:
    """Rigorous (under the model of :func:`_rho`) bound on the L1 error of the FFT
    convolution ``irfft(rfft(a) * rfft(b))``, hence on its effect on ``delta``."""
    rho = _rho(nf)
    ea = rho * math.fsum(a) * (1.0 + 1e-12)
    eb = rho * math.fsum(b) * (1.0 + 1e-12)
    ma, mb = np.abs(fa), np.abs(fb)
    # |A_hat B_hat (1 + theta) - A B| with |theta| <= sqrt 2 gamma_2 < 3u
    dev = ea * (mb + eb) + eb * (ma + ea) + ea * eb + 3.0 * _U * ma * mb
    return _spectrum_to_l1(dev * (1.0 + 8.0 * _U), fa * fb, nf)


def _power_err(ma: np.ndarray, spec: np.ndarray, e: float, count: int, nf: int,
               u: float = _U) -> float:
    """Bound on the L1 error of ``irfft(rfft(a) ** count)`` (power in polar form).

    ``ma``: ``|A_hat|`` on the selected coefficients (the others are covered by the
    floor below), ``spec``: the computed power there, ``e = _rho ||a||_1`` bounds
    ``|A_hat - A|``.  ``|A_hat^T - A^T| <= T e M^(T-1)`` with ``M = |A_hat| + e``
    (mean value theorem); the polar power: ``|A_hat|`` (hypot, 2u), ``log`` (u + u|log|),
    the product by ``T`` and ``exp`` give a relative error of at most
    ``expm1(2uT(1 + |log|A_hat||)) + 2u`` in the modulus; ``atan2`` (2u, angle <= pi)
    times ``T`` then ``cos``/``sin`` (correctly reduced, 1 ulp) at most ``4 pi u T + 6u``
    in the phase factor; a coefficient set to 0 errs by ``|A_hat|^T < 1e-200``.  The
    unselected coefficients have ``M^(T-1) <= e^-600``: their deviation is below the
    floor of 1e-150 that :func:`_spectrum_to_l1` puts under every coefficient.  With
    ``u = _UL`` the power was computed in long double and rounded to double at the end
    (``u`` relative more, not amplified by ``T``).
    """
    t = float(count)
    with np.errstate(under="ignore", divide="ignore", over="ignore"):
        # exponents clamped at -600: upper bounds, and no subnormal (slow) numbers
        grow = np.exp(np.maximum((t - 1.0) * np.log(ma + e), -600.0))  # (|A_hat|+e)^(T-1)
        la = np.abs(np.log(np.maximum(ma, 1e-300)))
        pw = np.exp(np.maximum(-t * la, -600.0))  # |A_hat|^T
        rel = np.expm1(2.0 * u * t * (1.0 + la)) + 4.0 * math.pi * u * t + 8.0 * u + 2.0 * _U
    dev = (t * e * grow + pw * (rel + (spec == 0.0))) * (1.0 + 1e-10)
    dev = dev.astype(np.float64)
    return _spectrum_to_l1(dev, spec, nf)
