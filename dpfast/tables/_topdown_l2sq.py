"""The squared L2 sensitivities of a :class:`~dpfast.tables.TopDownRelease` state, the
exact integers ``l2sq_j`` its noise was calibrated for (:mod:`dpfast.tables._topdown_state`
checks the fields against them).

A release states ``sensitivity_j = float(math.sqrt(l2sq_j))``
(:meth:`dpfast.tables.hierarchy.TopDownPlan.finish`); above ``2^52`` the float's square
does not give ``l2sq_j`` back, so the state stores the integers (``l2sq``), checked against
the stated roots.  A state written before that field (:func:`recover_l2sq`): of the few
integers whose root is the stated sensitivity, those whose mechanism (``mech_rho``), level
event and ``rho_total`` match -- a function of the state's public fields only, deterministic.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dpfast._core.rounding import float_down, float_up
from dpfast.accounting import events as _events

from . import _topdown_events as _tevents

if TYPE_CHECKING:
    from ._topdown_release import TopDownFields

__all__ = ["check_l2sq", "l2sq_of", "recover_l2sq", "stated_root"]


def check_l2sq(values: object, n: int) -> list[int]:
    """The state's ``l2sq``: one int ``>= 1`` per level (``n``), the exact squared L2
    sensitivity its noise was calibrated for (ValueError naming the field otherwise)."""
    if not isinstance(values, list) or len(values) != n:
        got = len(values) if isinstance(values, list) else type(values).__name__
        raise ValueError(f"state's l2sq must hold one entry per level ({n}), got {got}")
    out = []
    for j, x in enumerate(values):
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise ValueError(f"state's l2sq[{j}] must be an int >= 1, got {x!r}")
        out.append(x)
    return out


def stated_root(d: int) -> float:
    """The sensitivity a release states for the squared L2 sensitivity ``d``
    (:meth:`dpfast.tables.hierarchy.TopDownPlan.finish` states it with this function):
    ``float(math.sqrt(d))``."""
    return float(math.sqrt(d))


def _root(d: int) -> float:
    """:func:`stated_root`, ``inf`` beyond the float range (no release states it)."""
    try:
        return stated_root(d)
    except OverflowError:
        return math.inf


def _first(lo: int, hi: int, pred: Any) -> int:
    """The smallest ``d`` in ``[lo, hi]`` with ``pred(d)`` (``pred`` monotone, False
    then True), ``hi + 1`` if none."""
    while lo <= hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid - 1
        else:
            lo = mid + 1
    return lo


def _where(lo: int, hi: int, key: Any, target: float) -> tuple[int, int]:
    """The integers of ``[lo, hi]`` where the monotone (nondecreasing) ``key`` equals
    ``target``: an interval, ``(lo, hi)`` unchanged when it is empty (the checks of
    :func:`check_relations` then refuse the state, naming the field)."""
    a = _first(lo, hi, lambda d: key(d) >= target)
    b = _first(lo, hi, lambda d: key(d) > target) - 1
    return (a, b) if a <= b else (lo, hi)


def _roots_of(s: float, j: int) -> tuple[int, int]:
    """The integers ``d >= 1`` with ``_root(d) == s``, an interval (ValueError when
    empty): ``fl(sqrt(fl(d)))`` is within 3 * 2^-53 relative of ``sqrt(d)``, so they lie
    within ``s^2 (1 +- 2^-48)``."""
    if s < 1.0 or s >= 2.0 ** 512:  # (sqrt(1) = 1; fl(d) finite below 2^1024)
        raise ValueError(f"state's sensitivity[{j}] must be the square root of an "
                         f"integer >= 1, got {s!r}")
    sq = Fraction(s) ** 2
    lo = max(1, math.floor(sq * (1 - Fraction(1, 2 ** 48))))
    hi = math.ceil(sq * (1 + Fraction(1, 2 ** 48))) + 1
    a = _first(lo, hi, lambda d: _root(d) >= s)
    b = _first(lo, hi, lambda d: _root(d) > s) - 1
    if a > b:
        raise ValueError(f"state's sensitivity[{j}] must be the square root of an "
                         f"integer >= 1, got {s!r}")
    return a, b


def recover_l2sq(f: TopDownFields, mech_rho: list[float | None]) -> list[int]:
    """The squared L2 sensitivities of a state without ``l2sq`` (written before it was
    stored): per level, of the integers ``d`` whose stated root is ``sensitivity[j]``
    (:func:`_roots_of`; one below ``2^52``, a few above), those whose mechanism (``mech_rho``)
    and level event match, the smallest; then raised, level by level, as far as needed
    for ``rho_total`` to match.  A function of the state's public fields only, and what
    a genuine state holds is among them; :func:`check_relations` checks the result as it
    checks a stored ``l2sq``."""
    sigma, rho, L = f["sigma"], f["rho"], len(f["sigma"])
    sens = f.get("sensitivity", [1.0] * L)
    measured = [j for j in range(L) if sigma[j] != 0.0]
    evs = f["event"].events if isinstance(f["event"], _events.Composed) else ()
    level_ev = dict(zip(measured, evs)) if len(evs) == len(measured) else {}
    spans = []
    for j in range(L):
        a, b = _roots_of(sens[j], j)
        m = mech_rho[j]
        if m is not None and rho[j] > 0.0:  # float_down(rho / d): nonincreasing in d
            a, b = _where(a, b, lambda d, r=Fraction(rho[j]): -float_down(r / d), -m)
        e = level_ev.get(j)
        w = Fraction(1) / (2 * Fraction(sigma[j]) ** 2) if sigma[j] else Fraction(0)
        if isinstance(e, _events.Zcdp) and b >= 2:  # Zcdp(float_up(d / (2 sigma^2)))
            a, b = _where(max(a, 2), b, lambda d, w=w: float_up(d * w), e.rho)
        elif e is not None and a == 1 and _tevents.level_event(sigma[j], 1) == e:
            b = 1
        spans.append((a, b, w))
    d2 = [a for a, _, _ in spans]
    total = sum((Fraction(d) * w for d, (_, _, w) in zip(d2, spans)), Fraction(0))
    top = Fraction(f["rho_total"])
    below = Fraction(math.nextafter(f["rho_total"], -math.inf))
    for j in measured:  # float_up(total) == rho_total: below < total <= top
        if total > below:
            break
        a, b, w = spans[j]
        step = min(b - a, math.floor((top - total) / w)) if w else 0
        if step > 0:
            d2[j] += step
            total += step * w
    return d2


def l2sq_of(f: TopDownFields, mech_rho: list[float | None]) -> list[int]:
    """The squared L2 sensitivities of a state (the stored ``l2sq``, or for an older state
    :func:`recover_l2sq`), each checked against the stated ``sensitivity`` (the root the
    release states for it, :func:`_root`)."""
    L = len(f["sigma"])
    sens = f.get("sensitivity", [1.0] * L)
    stored = f.get("l2sq")
    l2sq = recover_l2sq(f, mech_rho) if stored is None else stored
    for j, (d, s) in enumerate(zip(l2sq, sens)):
        if _root(d) != s:
            raise ValueError(f"state's sensitivity[{j}] is not the square root of its "
                             f"l2sq[{j}] ({d}), got {s!r}")
    return l2sq
