"""Exact loss distributions of the discrete (integer-valued) noise mechanisms.

Both pairs are *atomic*: the output is an integer ``x`` and the loss
``L(x) = log(P(x) / Q(x))`` takes one value per ``x`` (or per run of ``x`` with the same
loss), so they are :class:`~._finite.Finite` curves, discretised by :mod:`._atomic`.

* Discrete Gaussian (Canonne, Kamath & Steinke 2020): ``P = N_Z(0, s^2)``,
  ``Q = N_Z(D, s^2)``, ``s = noise_multiplier * D``, ``L(x) = (D^2 - 2 D x) / (2 s^2)``.
  By CKS20, Thm. 7 the hockey-stick divergence of the shift by ``D`` is at least that of
  every integer shift ``|k| <= D`` at every ``epsilon >= 0``, and the pair is symmetric
  (``x -> D - x`` swaps ``P`` and ``Q``), so it dominates every scalar release of
  sensitivity ``D`` in both directions.  ``x`` is kept in ``[-K, K + D]``,
  ``K = floor(sqrt(90) s)``; the ``P``-mass outside (a geometric-series bound, below
  ``2 e^-45 < 1e-19`` of the total) is put at ``L = +inf`` and
  the ``Q``-mass outside at ``-inf`` by :mod:`._atomic` (the exact pair is then a
  post-processing of the truncated one: merging those two outcomes gives it back), a
  pessimistic step; the optimistic side just drops it (``cut_mass``: a smaller ``delta``).
* Losses above :data:`MAX_LOSS` (noise so small that ``epsilon > 700``) and more than
  :data:`MAX_ATOMS` atoms are refused by the accountant.
* Discrete Laplace: ``P = DLap(0, t)``, ``Q = DLap(D, t)``, ``t = noise_multiplier * D``,
  ``P(x) = (1 - r) / (1 + r) r^|x|`` with ``r = e^(-1/t)``; ``L(x) = (|x - D| - |x|) / t``:
  an atom ``D / t`` (all ``x <= 0``, ``P``-mass ``1 / (1 + r)``), one per ``0 < x < D``
  (``(D - 2x) / t``) and ``-D / t`` (all ``x >= D``, ``P``-mass ``r^D / (1 + r)``).

Numerics: float64.  The normalising sum of the discrete Gaussian is an ``fsum`` of the
kept terms (correctly rounded); every mass and loss carries a stated relative error bound
(``mass_rel_err``, ``loss_rel_err``: the rounding of ``s``, ``2 s^2``, the exponent and
``exp``, each a few ulps times the size of the exponent) that :mod:`._atomic` turns into
its error allowance.  The bounds also cover any noise scale up to ``2u`` relative above
``noise_multiplier * D`` (the mechanisms round ``noise_multiplier`` down, so their own
``sigma`` or ``t`` lies there): the pair is analysed for the mechanism actually run.
"""

from __future__ import annotations

import math

import numpy as np

from ._finite import Finite

_U = 2.0**-53
#: most atoms of one discrete pair (16 MiB per float64 array): a discrete Gaussian up to
#: sigma of about 10^5
MAX_ATOMS = 2**21
#: the discrete Gaussian keeps x in [-K, K + D] with K = floor(_TAILS * sigma): the
#: P-mass outside is below 2 e^-45 < 1e-19 (see discrete_gaussian)
_TAILS = math.sqrt(90.0)
#: largest privacy loss of a supported pair (e^L must be a float64; the PLD arithmetic
#: exponentiates losses): smaller noise is refused
MAX_LOSS = 700.0


def _k(m: float, sens: int) -> int:
    return math.floor(_TAILS * m * sens)


def size_and_max_loss(kind: str, m: float, sens: int) -> tuple[float, float]:
    """Number of atoms and largest loss of :func:`discrete_gaussian` (``kind="dgauss"``)
    or :func:`discrete_laplace` (``"dlap"``), checked against :data:`MAX_ATOMS` and
    :data:`MAX_LOSS` before a pair is built (``inf`` where they overflow)."""
    if kind == "dlap":
        return sens + 1.0, 1.0 / m
    s = m * sens
    if not (1e-100 < s < 1e100):
        return math.inf, math.inf
    k = _k(m, sens)
    return 2.0 * k + sens + 1.0, sens * (sens + 2.0 * k) / (2.0 * s * s)


def discrete_gaussian(m: float, sens: int) -> Finite:
    """The pair ``N_Z(0, s^2)``, ``N_Z(sens, s^2)``, ``s = m * sens`` (see the module)."""
    s = m * sens
    k = _k(m, sens)
    x = np.arange(-k, k + sens + 1, dtype=np.float64)  # exact integers
    s2 = 2.0 * s * s
    with np.errstate(under="ignore"):
        expo = x * x / s2
        terms = np.exp(-expo)
    z = math.fsum(terms.tolist())  # >= 1 (the term x = 0)
    # each tail: sum_{x >= k+1} e^(-x^2 / 2 s^2) <= e^(-(k+1)^2 / 2 s^2) sum_j
    # e^(-(k+1) j / s^2) (x^2 >= (k+1)^2 + 2 (k+1) j), a geometric series; the upper
    # tail starts further out (k + sens + 1); 1e-300 covers an underflow
    g = math.exp(-((k + 1) ** 2) / s2) / -math.expm1(-2.0 * (k + 1) / s2)
    tail = (2.0 * g / z + 1e-300) * (1.0 + 1e-9)
    masses = terms / z
    losses = (float(sens) * sens - 2.0 * sens * x) / s2  # numerator exact (< 2^53)
    curve = Finite(losses[::-1], masses[::-1])
    curve.cut_mass = tail  # P-mass outside (-> +inf on the pessimistic side only)
    # exponent: s = m * sens (u), s * s (u), the division (u): <= 4u relative, so the
    # term is within (4.01 E + 2) u relative (exp: <= 2u); z (fsum of such terms, then
    # correctly rounded) within the largest of these + u; the mass (a division) within
    # twice that + u, and within the tail share of the untruncated normalisation
    # Plus any sigma in [s, s (1 + 2u)] (the mechanism's own: noise_multiplier is its
    # sigma / sens rounded down): d log P(x) / d log s = 2 E_x - E[2 E_X], at most
    # 2 E_max + 2 in modulus, so (4 E_max + 4) u more; the loss 4u more.
    e_max = float(np.max(expo))
    curve.mass_rel_err = ((2.0 * (4.01 * e_max + 2.0) + 4.0) + 4.01 * (e_max + 1.0)) * _U \
        + 2.0 * tail
    # loss: 2 s^2 within 3u relative, the division u; the sigma above 4u
    curve.loss_rel_err = 9.0 * _U
    # D (D - 2x) / (2 s^2): D - 2x is odd for odd D, even for even D
    curve.lattice = (1.0 if sens % 2 else 2.0) * sens / s2
    return curve


def discrete_laplace(m: float, sens: int) -> Finite:
    """The pair ``DLap(0, t)``, ``DLap(sens, t)``, ``t = m * sens`` (see the module)."""
    t = m * sens
    x = np.arange(0, sens + 1, dtype=np.float64)
    with np.errstate(under="ignore"):
        r = math.exp(-1.0 / t)
        masses = -math.expm1(-1.0 / t) * np.exp(-x / t) / (1.0 + r)
        masses[0] = 1.0 / (1.0 + r)  # every x <= 0
        masses[-1] = math.exp(-sens / t) / (1.0 + r)  # every x >= sens
    losses = (float(sens) - 2.0 * x) / t
    curve = Finite(losses[::-1], masses[::-1])
    # t = m * sens within u: each exponent x / t within 2u relative (<= 2u sens / t
    # absolute), exp / expm1 2u each, the products and the division 4u; plus any scale
    # in [t, t (1 + 2u)] (the mechanism's own; noise_multiplier is rounded down):
    # d log P(x) / d log t is at most sens / t + 2 in modulus, the loss 2u relative
    curve.mass_rel_err = (8.02 * sens / t + 24.0) * _U
    curve.loss_rel_err = 5.0 * _U
    curve.lattice = (1.0 if sens % 2 else 2.0) / t  # (D - 2x) / t
    return curve
