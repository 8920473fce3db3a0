"""The add-direction pmf derived from the remove-direction one (the swapped pair).

For a pair ``(P, Q)`` with privacy curve ``H(x) = sup_A P(A) - x Q(A)`` the swapped
pair ``(Q, P)`` has ``H'(x) = x H(1/x) + 1 - x`` (complements: ``Q(A) - x P(A) =
x (P(A^c) - Q(A^c) / x) + 1 - x``).  The map ``H -> H'`` is monotone (``H1 >= H2``
pointwise gives ``H1' >= H2'``) and maps a piecewise-linear function with knots at
``1/x_i`` to one with knots at ``x_i``; on the grid ``x_i = e^(i dx)`` (symmetric under
``i -> -i``) it therefore maps the pessimistic connect-the-dots curve of ``(P, Q)`` to a
curve above the exact ``H'`` with knots on the same grid: the connect-the-dots curve
of ``(Q, P)`` (up to the rounding already in the remove pmf, which only raises it).

The swapped discrete pair: a ``P``-mass ``p_i`` at loss ``l_i`` is a ``Q``-mass
``p_i e^(-l_i)`` at loss ``-l_i`` of the swapped pair; the ``Q``-mass not carried by the
finite losses, ``1 - sum_i p_i e^(-l_i)``, sits at ``+inf`` of the swapped pair; the
``P``-mass at ``+inf`` carries no ``Q``-mass and disappears.  Used by the accountant for
the Poisson-subsampled Gaussian and Laplace, whose add direction is exactly the swap of
the remove direction (same ``q`` and scale): one discretisation instead of two, and
(swapping commutes with composition) one FFT composition instead of two where the
composed remove pmf's lowest loss keeps ``err`` small.

Numerics (pessimistic side): the stored remove pmf ``H~`` satisfies ``H~ + err >= H``
everywhere (:func:`._pmf.connect_dots`; the compositions of :mod:`._pmf` keep it), so
the exact swapped curve is at most
``x (H~(1/x) + err) + 1 - x``.  With ``T = sum_i p_i + inf >= 1`` (the remove pmf's
masses are rounded up; the sum bounded from above) that is the swapped pmf's curve plus
``x (T - 1 + err)``.  Only ``x <= e^(hi)`` matters, ``hi`` the largest swapped loss:
beyond it the swapped pmf reports its ``+inf`` mass and the exact curve, nonincreasing,
is below its value at ``e^(hi)``.  Each swapped mass has a relative rounding error
``<= (4 + max |l|) u`` (the loss, ``exp``, the product) and enters ``delta`` with a
weight in [0, 1]; the ``+inf`` mass is rounded up.  Hence
``err' = (err + T - 1 + 4u) e^(hi) + (4 + max |l|) u sum_i p_i e^(-l_i)``, negligible
when ``hi`` is small: :data:`MAX_HI` (the accountant discretises the add direction
directly beyond it).
"""

from __future__ import annotations

import math

import numpy as np

from ._pmf import Pmf
from ._roundoff import _U

#: masses below this are moved to +inf (as in :mod:`._pmf`): no subnormal numbers
_TINY = 1e-280
#: largest swapped loss for which the derivation is used (``err`` grows like ``e^hi``)
MAX_HI = math.log(4.0)


def swap_pmf(pmf: Pmf, dx: float, exact_sums: bool = True) -> Pmf:
    """The pessimistic pmf of the swapped pair, from the pessimistic pmf of ``(P, Q)``.

    Valid for any pessimistic pmf (one event's, or a composition's: swapping commutes
    with composition, since ``e^-l`` is multiplicative over independent losses); its
    ``err`` grows like ``e^hi``, ``hi = -pmf.lo * dx`` the largest swapped loss, so the
    callers use it where that is small (:data:`MAX_HI` for one event; the accountant
    compares the result's ``err`` with what the query can afford).

    The two sums are correctly rounded (``math.fsum``) with ``exact_sums`` (one event's
    pmf, composed many times afterwards), else plain numpy sums with the recursive-
    summation bound ``(n + 1) u sum |x_i|`` on their rounding (a composed pmf: about
    ``n u``, used once); either way applied on the safe side: ``sum p`` up (the excess
    mass), ``sum q`` down for the ``+inf`` mass and up in ``err``.
    """
    n = pmf.p.size
    losses = (np.arange(n, dtype=np.float64) + float(pmf.lo)) * dx
    qm = pmf.p * np.exp(-losses)
    if exact_sums:
        g, s_q, s_p = _U, math.fsum(qm.tolist()), math.fsum(pmf.p.tolist())
    else:
        g, s_q, s_p = (n + 2) * _U, float(qm.sum()), float(pmf.p.sum())
    q_lo, q_hi = s_q * (1.0 - g), s_q * (1.0 + g)
    hi = -float(losses[0])
    lmax = max(abs(float(losses[0])), abs(float(losses[-1])))
    excess = max(s_p * (1.0 + g) + pmf.inf - 1.0, 0.0) + 4.0 * _U
    inf = max(0.0, 1.0 - q_lo) + 4.0 * _U * (q_hi + 1.0)
    new = qm[::-1].copy()
    tiny = new < _TINY
    if tiny.any():
        inf += float(new[tiny].sum()) * (1.0 + 1e-9)
        new[tiny] = 0.0
    err = ((pmf.err + excess) * math.exp(hi) + (4.0 + lmax) * _U * q_hi) * (1.0 + 1e-9)
    return Pmf(-(pmf.lo + n - 1), new, min(1.0, math.nextafter(inf, math.inf)), err, True)
