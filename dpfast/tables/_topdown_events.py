"""The privacy event of a :func:`dpfast.tables.topdown` release, as a function of the
noise it used: one event per measured level, composed, and ``rho_total``.

Shared by the plan (:func:`dpfast.tables._topdown_measure.record_mechanisms`, per person
:func:`dpfast.tables._topdown_units.level_mechanisms`) and by the checks of a rebuilt
release (:mod:`dpfast.tables._topdown_state`): the accounting record of a state is the one
its per-level ``sigma`` and sensitivities imply, with the same rounding.  See the Privacy
section of :func:`dpfast.tables.topdown` for the relation.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from dpfast._core.rounding import float_up
from dpfast.accounting import events as _events

__all__ = ["level_event", "release_event"]


def level_event(sigma: float, l2sq: int) -> _events.DpEvent:
    """The event of one measured level: noise ``N_Z(0, sigma^2)`` on a table that one
    neighbour moves by at most ``sqrt(l2sq)`` in L2, add/remove one.

    ``l2sq = 1`` (one coordinate by 1: per record, or per person with ``k = c = 1``): the
    exact scalar pair, ``DiscreteGaussian(sigma, sensitivity=1)`` (CKS20, Thm. 7).
    Above (one person may move several coordinates): ``Zcdp(l2sq / (2 sigma^2))``, rounded
    up (CKS20, Thm. 14)."""
    if l2sq == 1:
        return _events.DiscreteGaussian(noise_multiplier=float(sigma), sensitivity=1,
                                        neighbouring=_events.ADD_REMOVE)
    return _events.Zcdp(float_up(Fraction(l2sq) / (2 * Fraction(sigma) ** 2)),
                        neighbouring=_events.ADD_REMOVE)


def release_event(sigma: Sequence[float], l2sq: Sequence[int]
                  ) -> tuple[_events.Composed, float]:
    """The release's event (one :func:`level_event` per measured level, ``sigma_j > 0``,
    in level order, composed) and ``rho_total = sum_j l2sq_j / (2 sigma_j^2)`` (exact sum,
    rounded up once)."""
    evs: list[_events.DpEvent] = []
    total = Fraction(0)
    for s, d2 in zip(sigma, l2sq):
        if s == 0.0:  # an unmeasured (invariant) root
            continue
        evs.append(level_event(s, d2))
        total += Fraction(d2) / (2 * Fraction(s) ** 2)
    return _events.Composed(tuple(evs)), float_up(total)
