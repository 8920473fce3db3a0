"""Accuracy-first calibration: the epsilon a target accuracy needs, and back.

Data publishers start from "counts within +-10 at 95% confidence", not from ``epsilon``.
:func:`accuracy_to_epsilon` returns the smallest ``epsilon`` whose noise has an exact
two-sided ``(1 - alpha)`` interval of half-width at most ``accuracy``;
:func:`epsilon_to_accuracy` is the inverse.  Both use the mechanisms' own calibration
and their exact ``confidence_interval`` (:mod:`dpfast.mechanisms`), so the plan is exactly
what the release will do::

    >>> import dpfast
    >>> eps = dpfast.accuracy_to_epsilon(10, 0.05)        # discrete Laplace, sensitivity 1
    >>> dpfast.epsilon_to_accuracy(eps, 0.05) <= 10
    True

The half-width is a step function of ``epsilon`` (integers for the discrete mechanisms,
multiples of the grid for the float ones); the search runs over the float grid itself, so
the returned ``epsilon`` is *rounded up* to the first float that reaches the accuracy:
``epsilon_to_accuracy(eps) <= accuracy`` and
``epsilon_to_accuracy(math.nextafter(eps, 0)) > accuracy``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from dpfast._core.rounding import float_boundary, float_down, sqrt_up
from dpfast._core.validate import (
    check_finite,
    check_int,
    check_nonneg,
    check_positive,
    check_probability,
)
from dpfast.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
)
from dpfast.mechanisms.gaussian import _largest_rho

__all__ = ["accuracy_to_epsilon", "epsilon_to_accuracy", "MECHANISMS"]

MECHANISMS = ("discrete_laplace", "laplace", "discrete_gaussian", "gaussian")
_EPS_MAX = 1e4  # beyond this no calibration is meaningful


def _count(value: Any, name: str) -> int | None:
    if value is None:
        return None
    return check_int(value, name, minimum=1)


class _Plan:
    """Validated (mechanism, sensitivity, delta, bounds): builds the mechanism for an
    ``epsilon`` and returns its exact half-width."""

    def __init__(self, mechanism: Any, sensitivity: Any, delta: Any, max_partitions: Any,
                 max_per_partition: Any) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, "
                             f"got {mechanism!r}")
        self.mechanism = str(mechanism)
        sens = check_positive(sensitivity, "sensitivity")
        self.discrete = self.mechanism.startswith("discrete")
        if self.discrete and sens != int(sens):
            raise ValueError(f"sensitivity must be an integer for {mechanism}, got "
                             f"{sensitivity!r}")
        d = check_finite(delta, "delta")
        self.gaussian = self.mechanism.endswith("gaussian")
        if self.gaussian:
            if not 0.0 < d < 1.0:
                raise ValueError(f"delta must lie in (0, 1) for {mechanism}, got {delta!r}")
        elif d != 0.0:
            raise ValueError(f"delta must be 0 for {mechanism} (pure epsilon-DP), got "
                             f"{delta!r}")
        self.delta = d
        mp = _count(max_partitions, "max_partitions")
        mpp = _count(max_per_partition, "max_per_partition")
        self.table = mp is not None or mpp is not None
        self.k = 1 if mp is None else mp
        c = 1 if mpp is None else mpp
        s = Fraction(sens)
        self.l1 = s * self.k * c           # one person's L1 effect on the table
        self.l2sq = self.k * (s * c) ** 2  # and squared L2 effect

    def mechanism_for(self, epsilon: float) -> Any:
        eps = epsilon
        if self.mechanism == "discrete_laplace":
            return DiscreteLaplaceMechanism(epsilon=eps, sensitivity=int(self.l1))
        if self.mechanism == "laplace":
            return LaplaceMechanism(epsilon=eps, sensitivity=float(self.l1),
                                    max_changed=self.k)
        if not self.table:  # a single query: the mechanism's own (epsilon, delta) calibration
            if self.mechanism == "discrete_gaussian":
                # a scalar: neighbours differ in its one coordinate, by at most the
                # sensitivity -- CKS20 Thm. 7's exact curve, and an event with the
                # sensitivity (exact PLD accounting)
                return DiscreteGaussianMechanism(epsilon=eps, delta=self.delta,
                                                 sensitivity=int(self.l1), max_changed=1)
            return GaussianMechanism(epsilon=eps, delta=self.delta, sensitivity=float(self.l1))
        # a table (dpfast.tables' calibration): rho = the largest rho-zCDP implying
        # (epsilon, delta) (CKS20 Cor. 13), for the squared L2 sensitivity k (s c)^2
        rho = _largest_rho(eps, self.delta)
        if self.mechanism == "discrete_gaussian":
            # sigma as dpfast.tables computes it: the unit-sensitivity sigma at rho / l2sq
            # (only its interval is used here; no max_changed: this mechanism's event
            # would state sensitivity 1 for a shift of up to sqrt(l2sq))
            r = float_down(Fraction(rho) / self.l2sq)
            return DiscreteGaussianMechanism(rho=r, sensitivity=1)
        return GaussianMechanism(rho=rho, sensitivity=sqrt_up(self.l2sq), max_changed=self.k)

    def halfwidth(self, epsilon: float, alpha: float) -> float:
        return self.mechanism_for(epsilon).confidence_interval(alpha)


def _alpha(alpha: Any) -> float:
    return check_probability(alpha, "alpha")


def epsilon_to_accuracy(
    epsilon: float,
    alpha: float,
    *,
    mechanism: str = "discrete_laplace",
    sensitivity: float = 1,
    delta: float = 0.0,
    max_partitions: int | None = None,
    max_per_partition: int | None = None,
) -> float:
    """The exact half-width ``w`` of the noise's ``(1 - alpha)`` interval at ``epsilon``.

    ``P(|noise| <= w) >= 1 - alpha`` with the smallest such ``w`` (an integer for the
    discrete mechanisms, a grid multiple for the float ones): the mechanism's own
    ``confidence_interval`` for the mechanism calibrated to ``epsilon``.

    Parameters
    ----------
    epsilon : float
        The privacy target, ``> 0``.
    alpha : float
        ``1 - alpha`` is the confidence level, ``0 < alpha < 1``.
    mechanism : {"discrete_laplace", "laplace", "discrete_gaussian", "gaussian"}
        The noise (Laplace kinds: pure ``epsilon``-DP, ``delta = 0``; Gaussian kinds:
        ``(epsilon, delta)``-DP with ``delta > 0``).
    sensitivity : float, default 1
        One row's effect on its value (an integer for the discrete mechanisms).
    delta : float, default 0
    max_partitions, max_per_partition : int, optional
        Contribution bounds of a table release (:mod:`dpfast.tables`): one person changes
        at most ``max_partitions`` cells by at most ``max_per_partition * sensitivity``
        each, so the L1 sensitivity is ``max_partitions * max_per_partition *
        sensitivity`` and the L2 one ``sqrt(max_partitions) * max_per_partition *
        sensitivity``.  Given, the Gaussian kinds are calibrated as the tables do (zCDP:
        the largest ``rho`` implying ``(epsilon, delta)``, CKS20 Cor. 13); not given, as
        the single-query mechanisms do: a scalar query, so
        ``DiscreteGaussianMechanism(epsilon, delta, sensitivity, max_changed=1)`` (the
        exact CKS20 Thm. 7 curve; release with the same ``max_changed=1``, whose event
        :class:`~dpfast.accounting.PldAccountant` accounts exactly), and
        :class:`dpfast.GaussianMechanism`'s analytic calibration.

    Returns
    -------
    float or int

    Notes
    -----
    The half-width is calibrated, not a loose bound: released at ``epsilon``, the noise
    lies in ``[-w, w]`` with probability at least ``1 - alpha`` and at most that plus the
    law's mass at ``±w`` (the tables' counts and float sums with the planned bounds and
    the single-query mechanisms: ``tests/test_coverage.py``; docs/benchmarks.md,
    "Interval coverage").  A table's float sum adds its
    fixed-point rounding to the sensitivity (a relative ``~1e-11``), so its own stated
    half-width can exceed ``w`` by that relative amount.
    """
    plan = _Plan(mechanism, sensitivity, delta, max_partitions, max_per_partition)
    eps = check_positive(epsilon, "epsilon")
    return plan.halfwidth(eps, _alpha(alpha))


def accuracy_to_epsilon(
    accuracy: float,
    alpha: float,
    *,
    mechanism: str = "discrete_laplace",
    sensitivity: float = 1,
    delta: float = 0.0,
    max_partitions: int | None = None,
    max_per_partition: int | None = None,
) -> float:
    """The smallest ``epsilon`` whose noise is within ``+-accuracy`` with probability
    ``>= 1 - alpha``.

    Parameters
    ----------
    accuracy : float
        Target half-width, ``>= 0`` (e.g. 10 for "counts within +-10").
    alpha : float
        ``1 - alpha`` is the confidence level (0.05 for 95%).
    mechanism, sensitivity, delta, max_partitions, max_per_partition
        As in :func:`epsilon_to_accuracy`.

    Returns
    -------
    float
        ``epsilon`` with ``epsilon_to_accuracy(epsilon, alpha, ...) <= accuracy`` and
        ``epsilon_to_accuracy(math.nextafter(epsilon, 0), alpha, ...) > accuracy``:
        rounded *up* to the float grid (the accuracy promise holds; one float less
        breaks it).

    Raises
    ------
    ValueError
        Invalid arguments, or an accuracy no ``epsilon <= 1e4`` reaches.

    Privacy
    -------
    This is a plan, not a release: it reads no data and spends nothing.  The release made
    with the returned ``epsilon`` has the mechanism's guarantee (see the mechanism's
    Privacy section).  A single ``discrete_gaussian`` query is planned for
    ``DiscreteGaussianMechanism(epsilon, delta, sensitivity, max_changed=1)`` (a scalar:
    one coordinate changes by at most ``sensitivity``); its event carries the
    sensitivity, so :class:`~dpfast.accounting.PldAccountant` accounts it exactly.

    Numerics
    --------
    The half-width is the mechanisms' exact ``confidence_interval`` (256-bit mpmath tails,
    ties resolved towards the wider interval).  The search brackets ``epsilon`` by
    doubling, then bisects over the bit patterns of the positive floats (about 60
    evaluations); it relies on the half-width being non-increasing in ``epsilon`` only to
    find the *smallest* such float -- the returned float and its predecessor satisfy the
    two stated properties by construction.
    """
    plan = _Plan(mechanism, sensitivity, delta, max_partitions, max_per_partition)
    acc = check_nonneg(accuracy, "accuracy")
    a = _alpha(alpha)

    errors: list[str] = []

    def ok(e: float) -> bool:
        try:
            return plan.halfwidth(e, a) <= acc
        except (ValueError, OverflowError) as exc:  # beyond the mechanism's range
            errors.append(str(exc))
            return False

    # a first guess from the Laplace / Gaussian tails, then bracket by doubling
    s = float(plan.l1) if not plan.gaussian else math.sqrt(float(plan.l2sq))
    width = max(acc, 0.5)
    if plan.gaussian:
        guess = s * math.sqrt(2 * math.log(2 / a)) * math.sqrt(
            2 * (math.log(1.25) - math.log(plan.delta)))  # no overflow for subnormal delta
        guess /= width
    else:
        guess = s * math.log(1 / a) / width
    hi = min(max(guess, 1e-12), _EPS_MAX)
    while not ok(hi):
        if hi >= _EPS_MAX or errors:
            why = (f"the mechanism cannot be calibrated at epsilon {hi:.4g}: {errors[-1]}"
                   if errors else f"it needs epsilon > {_EPS_MAX:g}")
            raise ValueError(f"accuracy {accuracy!r} at alpha {alpha!r} is out of reach "
                             f"with {mechanism}: {why}")
        hi = min(hi * 2.0, _EPS_MAX)
    lo = hi / 2.0
    while ok(lo):  # at most ~1000 halvings
        hi, lo = lo, lo / 2.0
        if lo < 1e-300:
            raise ValueError(f"accuracy {accuracy!r} at alpha {alpha!r} with {mechanism}: "
                             "met for every epsilon down to 1e-300")  # pragma: no cover
    return float_boundary(ok, lo, hi)[1]  # not ok(lo), ok(hi)
