"""Private partition selection: which keys may be published when they are not public.

A key seen in the data is published only if its noisy (bounded) count reaches a threshold
``tau``; the released value is that same noisy count (Laplace thresholding: Wilson, Zhang,
Lam, Desfontaines, Simmons-Marengo, Gipson, "Differentially Private SQL with Bounded User
Contribution", PoPETs 2020; Desfontaines, Voss, Gipson, Mandayam, "Differentially private
partition selection", PoPETs 2022; Google's differential-privacy library, "partition
selection").  Here the noise is exact discrete Laplace and the threshold is calibrated
with an exact tail, rounded to the safe side.
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import mpmath

__all__ = ["partition_threshold", "selection_delta"]

_PREC = 256


def _tail(t: Fraction, m: int) -> mpmath.mpf:
    """Upper bound of P(Z >= m), Z discrete Laplace of scale t, m >= 1:
    ``a^m / (1 + a)``, ``a = exp(-1/t)``."""
    with mpmath.workprec(_PREC):
        a = mpmath.exp(-mpmath.mpf(t.denominator) / t.numerator)
        p = mpmath.power(a, m) / (1 + a)
        return p * (1 + mpmath.mpf(2) ** -200)  # covers the rounding of exp/power/div


def selection_delta(scale: float | Fraction, threshold: int, max_partitions: int,
                    max_per_partition: int) -> float:
    """The δ of thresholding at ``threshold`` (an upper bound, rounded up).

    ``1 - (1 - P(Z >= threshold - c))^k`` with ``k = max_partitions``,
    ``c = max_per_partition``: the probability that at least one of the (at most ``k``) keys
    that only the added person holds (each with bounded count at most ``c``) is published.
    """
    t = Fraction(scale)
    m = int(threshold) - int(max_per_partition)
    if m < 1:
        return 1.0
    with mpmath.workprec(_PREC):
        p = _tail(t, m)
        # 1 - (1 - p)^k without cancellation: for p below 2^-256 the plain form gives 0
        d = -mpmath.expm1(int(max_partitions) * mpmath.log1p(-p))
        d = d * (1 + mpmath.mpf(2) ** -200)
        f = float(d)
        return f if f >= d else math.nextafter(f, math.inf)


def partition_threshold(scale: float | Fraction, delta: float, max_partitions: int = 1,
                        max_per_partition: int = 1) -> int:
    """Smallest integer threshold ``tau`` whose selection δ is at most ``delta``.

    Parameters
    ----------
    scale : float or Fraction
        Scale ``t`` of the discrete Laplace noise added to the bounded counts.
    delta : float
        Target ``0 < delta < 1``.
    max_partitions, max_per_partition : int
        The contribution bounds ``k`` and ``c``.

    Returns
    -------
    int
        ``tau``: publish a key iff its noisy count ``>= tau``.

    Privacy
    -------
    Let the released table be ``{(key, n_key + Z_key) : key has a bounded count n_key >= 1
    and n_key + Z_key >= tau}`` with i.i.d. discrete Laplace ``Z`` of scale ``t = Δ1/ε``,
    ``Δ1 = k c``.  Neighbouring datasets differ by adding or removing one person (all their
    rows).  The person changes the counts of the keys both datasets hold by at most ``Δ1``
    in L1 (ε-DP on those keys, thresholding being post-processing), and adds at most ``k``
    keys that the other dataset lacks, each with count ``<= c``; all of them stay
    unpublished except with probability ``δ' = 1 - (1 - P(Z >= tau - c))^k``.  Conditioning
    on that event gives ``P[M(D) ∈ S] <= e^ε P[M(D') ∈ S] + δ'`` in both directions (in the
    direction from the larger dataset the factor is ``(1 - δ') e^ε``, absorbed since pure
    ε-DP of the common part bounds it by ``δ'``), so the release is ``(ε, δ')``-DP with
    ``δ' <= delta``, for any ``max_partitions`` (Wilson et al. 2020, Thm. 3.2;
    Desfontaines et al. 2022, Sec. 3).

    Numerics
    --------
    The tail ``P(Z >= m) = a^m / (1 + a)``, ``a = exp(-1/t)``, is evaluated in 256-bit
    arithmetic with a relative safety margin; ``tau`` is verified, not estimated.
    """
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"delta must be a real number, got {type(delta).__name__}")
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"delta must be in (0, 1) for private partition selection, got "
                         f"{delta!r}")
    t = Fraction(scale)
    k, c = int(max_partitions), int(max_per_partition)
    # estimate: k a^m / (1 + a) = delta  =>  m = t ln(k / (delta (1 + a))), in logs (a
    # subnormal delta does not overflow)
    a = math.exp(-1.0 / float(t))
    est = float(t) * (math.log(k) - math.log(float(delta)) - math.log1p(a))
    guess = max(1, int(min(est, 2.0**62)) - 2)

    def ok(m: int) -> bool:
        return selection_delta(t, c + m, k, c) <= delta

    # the smallest m >= 1 with ok(m) (decreasing in m): gallop from the estimate, then
    # bisect on the integers -- bounded (about 2 log2 of the distance to the estimate)
    if ok(guess):
        hi, step = guess, 1
        lo = hi - step
        while lo >= 1 and ok(lo):
            hi, step = lo, step * 2
            lo = hi - step
        lo = max(lo, 0)  # m = 0 is not allowed: a sentinel, never evaluated
    else:
        lo, step = guess, 1
        hi = lo + step
        for _ in range(200):
            if ok(hi):
                break
            lo, step = hi, step * 2
            hi = lo + step
        else:  # pragma: no cover - the tail decreases geometrically in m
            raise ValueError(f"no partition-selection threshold reaches delta={delta!r} "
                             f"with scale {float(t):.6g}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return c + hi
