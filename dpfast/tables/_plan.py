"""Charge step's input: calibrate the noise of each part of a release and state its event.

A *part* is one noised vector (the counts, or the sums) with its L1 / L2 sensitivity; the
plan turns the caller's privacy target into one mechanism per part, the noise laws and the
event of the whole release (the key selection is planned by :mod:`dpfast.tables._select`).
Nothing here looks at the data.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Protocol

from dpfast._core.rounding import float_down, float_up, sqrt_up
from dpfast._core.validate import check_real
from dpfast.accounting import events as _events
from dpfast.mechanisms import (
    DiscreteGaussianMechanism,
    DiscreteLaplaceMechanism,
    GaussianMechanism,
    LaplaceMechanism,
)
from dpfast.mechanisms.gaussian import _largest_rho
from dpfast.tables._law import NoiseLaw

#: The largest ``epsilon`` a release takes (ValueError beyond, before any charge): past it
#: the exact key-selection arithmetic grows without bound, and no noise is left anyway.
#: The other end of the range is the noise's: a part whose discrete noise scale or sigma
#: leaves ``[2**-100, 2**50]`` (:data:`dpfast.mechanisms._common.DISCRETE_SCALE_RANGE`), or
#: whose float grid does not converge, is refused when the plan is made (ValueError naming
#: the parameter), also before the charge.
MAX_EPSILON = 2.0 ** 30


@dataclasses.dataclass(frozen=True)
class Privacy:
    """The validated privacy target."""

    noise: str  # "laplace" or "gaussian"
    epsilon: float | None
    delta: float
    rho: float | None
    select: bool  # private partition selection (domain=None)


def privacy(epsilon: float | None, delta: float, rho: float | None, noise: str | None,
            select: bool) -> Privacy:
    """Validate ``epsilon`` / ``delta`` / ``rho`` / ``noise`` (ValueError/TypeError naming
    the parameter)."""
    if epsilon is None and rho is None:
        raise ValueError("give epsilon (pure or (epsilon, delta)-DP) or rho (zCDP)")
    if epsilon is not None and rho is not None:
        raise ValueError("give epsilon or rho, not both")
    d = check_real(delta, "delta")
    if not 0.0 <= d < 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    eps = None
    r = None
    if epsilon is not None:
        eps = check_real(epsilon, "epsilon")
        if not 0.0 < eps < math.inf:
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
        if eps > MAX_EPSILON:
            raise ValueError(f"epsilon must be at most 2**30 (the supported range of a "
                             f"release), got {epsilon!r}")
    if rho is not None:
        r = check_real(rho, "rho")
        if not 0.0 < r < math.inf:
            raise ValueError(f"rho must be finite and > 0, got {rho!r}")
    if noise is None:
        kind = "gaussian" if r is not None else "laplace"
    elif noise in ("laplace", "gaussian"):
        kind = noise
    else:
        raise ValueError(f"noise must be None, 'laplace' or 'gaussian', got {noise!r}")
    if kind == "laplace" and r is not None:
        raise ValueError("noise='laplace' takes epsilon, not rho")
    if kind == "gaussian" and r is None and d == 0.0:
        raise ValueError("noise='gaussian' needs rho, or epsilon with delta > 0")
    if select:
        if d == 0.0:
            raise ValueError("domain=None (keys not known in advance) needs delta > 0 for "
                             "private partition selection; or pass the public keys as domain")
        if r is not None:
            raise ValueError("domain=None (private key selection) needs (epsilon, delta), "
                             "not rho; or pass the public keys as domain")
    return Privacy(kind, eps, d, r, select)


def split_for_selection(p: Privacy, share: Fraction) -> tuple[Privacy, float, float]:
    """With private key selection: ``(the statistics' Privacy, the selection's epsilon,
    the selection's target delta)``.

    The selection gets ``share`` of ``epsilon``.  Laplace statistics: ``p`` itself (each
    part takes its own ``share`` of ``epsilon``) and all of ``delta`` for the selection.
    Gaussian statistics: ``(epsilon (1 - share), delta / 2)`` for the statistics together
    and ``delta / 2`` for the selection (both rounded down, so the sums stay within
    ``(epsilon, delta)``)."""
    assert p.epsilon is not None and p.select
    e_sel = float_down(Fraction(p.epsilon) * share)
    if p.noise == "laplace":
        return p, e_sel, p.delta
    d_stat = float_down(Fraction(p.delta) / 2)
    d_sel = float_down(Fraction(p.delta) - Fraction(d_stat))
    e_stat = float_down(Fraction(p.epsilon) - Fraction(e_sel))
    return dataclasses.replace(p, epsilon=e_stat, delta=d_stat), e_sel, d_sel


class Evented(Protocol):
    """What the release event composes: anything with an ``event`` (a :class:`Part`, a
    rank part's event)."""

    @property
    def event(self) -> _events.DpEvent: ...


@dataclasses.dataclass(frozen=True)
class Part:
    """One noised vector: its mechanism's noise law, the event, the sensitivities."""

    law: NoiseLaw
    event: _events.DpEvent
    l1: float
    l2: float
    integer: bool


def part(p: Privacy, share: Fraction, l1: Fraction, l2sq: Fraction, k: int,
         integer: bool) -> Part:
    """Calibrate one part that gets ``share`` of the budget (a fraction of ε or of ρ).

    ``l1`` / ``l2sq`` are the L1 sensitivity and the squared L2 sensitivity, ``k`` the
    number of keys one person may change (for the float grid mechanisms' rounding term).
    """
    l2 = sqrt_up(l2sq)
    if p.noise == "laplace":
        assert p.epsilon is not None
        eps = float_down(Fraction(p.epsilon) * share)
        if integer:
            m = DiscreteLaplaceMechanism(epsilon=eps, sensitivity=int(l1))
            return Part(NoiseLaw("discrete_laplace", m.scale), m.event, float(l1), l2, True)
        lm = LaplaceMechanism(epsilon=eps, sensitivity=float_up(l1), max_changed=k)
        return Part(NoiseLaw("laplace", lm.scale, lm.granularity), lm.event, float(l1), l2,
                    False)
    # Gaussian: a zCDP share rho_part; (epsilon, delta) through the largest rho that
    # implies it (CKS20 Cor. 13), split between the parts
    if p.rho is not None:
        rho_total = Fraction(p.rho)
    else:
        assert p.epsilon is not None
        rho_total = Fraction(_largest_rho(float_down(Fraction(p.epsilon)), p.delta))
    rho_part = float_down(rho_total * share)
    if integer:
        # sigma for L2 sensitivity sqrt(l2sq): the unit-sensitivity sigma at rho / l2sq
        unit = DiscreteGaussianMechanism(rho=float_down(Fraction(rho_part) / l2sq),
                                         sensitivity=1)
        event = _events.Zcdp(float_up(l2sq / (2 * Fraction(unit.sigma) ** 2)))
        return Part(NoiseLaw("discrete_gaussian", unit.sigma), event, float(l1), l2, True)
    gm = GaussianMechanism(rho=rho_part, sensitivity=l2, max_changed=k)
    return Part(NoiseLaw("gaussian", gm.sigma, gm.granularity), gm.event, float(l1), l2,
                False)


def release_event(p: Privacy, parts: Sequence[Evented], selection_delta: float | None = None
                  ) -> _events.DpEvent:
    """The event of the whole release, stated for add/remove-one-person neighbours.

    Private key selection: ``EpsilonDelta(epsilon, selection_delta)`` (the selection's
    exact δ, :mod:`dpfast.tables._select`; its ε share and the parts' pure shares sum to at
    most ``epsilon``; Gaussian statistics add their ``δ/2``, basic composition).  Gaussian
    noise calibrated from (ε, δ): ``EpsilonDelta(epsilon, delta)`` (the parts' zCDP
    guarantees compose to at most that).  Otherwise the parts' events, composed.  Every part says
    ``neighbouring="add_remove"``: the sensitivities (``k c``, ``sqrt(k) c``, times ``B``)
    bound what adding or removing all rows of one privacy id changes, so the guarantee is
    for that relation (under replace-one they double; a budget refuses to compose the event
    with replace-one charges).
    """
    if p.select:
        assert p.epsilon is not None and selection_delta is not None
        d = selection_delta
        if p.noise == "gaussian":  # the statistics' delta share (split_for_selection)
            d = float_up(Fraction(d) + Fraction(float_down(Fraction(p.delta) / 2)))
        event: _events.DpEvent = _events.EpsilonDelta(p.epsilon, d)
    elif p.noise == "gaussian" and p.rho is None:
        assert p.epsilon is not None
        event = _events.EpsilonDelta(p.epsilon, p.delta)
    elif len(parts) == 1:
        event = parts[0].event
    else:
        event = _events.Composed(tuple(q.event for q in parts))
    return _events.with_neighbouring(event, _events.ADD_REMOVE)
