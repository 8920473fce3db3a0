"""A TopDown state's fields against each other (:func:`dpfast.tables._topdown_state.read_state`).

Issue 39 left one channel open in ``TopDownRelease.from_state``: every field was checked
alone, but none against the others, so a state whose accounting record (``event``,
``rho_total``) disagreed with the noise actually used (``sigma``, from which the published
standard errors and intervals come) was rebuilt as if it were a release -- as were
variances above the noise's, estimates that are not the consistent ones, a level's
mechanism that is not its ``rho``'s, or a BLUE whose estimate is not the least squares of
its own measurements.  Every test here builds a tampered state that the old code accepted
(each FAILS on it: ``from_state`` returned a release) and that is now refused, ValueError
naming the field; the untouched states of every kind load unchanged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import dpfast
from dpfast import tables
from dpfast.accounting import events as ev
from dpfast.tables.state import decode_array, decode_scalar, encode_array, encode_scalar

from .helpers import KEY

LEVELS = [np.zeros(12, np.int64), np.repeat(np.arange(3), 4), np.arange(12)]
COUNTS = np.random.default_rng(9).poisson(5, (12, 2))


def _release(kind: str) -> tables.TopDownRelease:
    """One release of each kind a state can hold."""
    rng = dpfast.default_rng(KEY)
    if kind == "person":  # k = 2: Zcdp level events
        g = np.random.default_rng(3)
        return tables.topdown(g.integers(0, 12, 400), LEVELS, rho=1.0,
                              privacy_ids=g.integers(0, 90, 400), max_partitions=2,
                              rng=rng)
    if kind == "invariant":
        return tables.topdown(COUNTS, LEVELS, rho=[0.0, 0.5, 0.5], total_invariant=True,
                              rng=rng)
    if kind == "unrounded":
        return tables.topdown(COUNTS, LEVELS, rho=0.5, nonnegative=False, integer=False,
                              rng=rng)
    if kind == "rounded_blue":
        return tables.topdown(COUNTS, LEVELS, rho=0.5, rng=rng, estimator="blue").rounded()
    return tables.topdown(COUNTS, LEVELS, rho=0.5, rng=rng, estimator=kind)


KINDS = ["topdown", "blue", "person", "invariant", "unrounded", "rounded_blue"]


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_of_state_loads_and_equals_the_release(kind: str) -> None:
    """The checks refuse nothing a release writes: each kind rebuilt is the same release
    (its state again, bit for bit)."""
    r = _release(kind)
    assert tables.TopDownRelease.from_state(r.to_state()).to_state() == r.to_state()


def _event_edit(level: int, **change: Any) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        e = ev.from_dict(state["event"])
        assert isinstance(e, ev.Composed)
        parts = list(e.events)
        parts[level] = dataclasses.replace(parts[level], **change)
        state["event"] = ev.Composed(tuple(parts)).to_dict()
    return edit


def _scale_event(level: int, factor: float) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        e = ev.from_dict(state["event"])
        assert isinstance(e, ev.Composed)
        parts = list(e.events)
        p = parts[level]
        parts[level] = (dataclasses.replace(p, rho=p.rho * factor) if isinstance(p, ev.Zcdp)
                        else dataclasses.replace(p, noise_multiplier=p.noise_multiplier
                                                 * factor))
        state["event"] = ev.Composed(tuple(parts)).to_dict()
    return edit


def _drop_event(state: dict[str, Any]) -> None:
    e = ev.from_dict(state["event"])
    assert isinstance(e, ev.Composed)
    state["event"] = ev.Composed(e.events[:-1]).to_dict()


def _level(field: str, j: int, make: Callable[[np.ndarray], np.ndarray]
           ) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        arrays = list(state[field])
        arrays[j] = encode_array(make(decode_array(arrays[j])))
        state[field] = arrays
    return edit


def _both(j: int, make: Callable[[np.ndarray], np.ndarray]) -> Callable[[dict[str, Any]], None]:
    """``consistent[j]`` and ``estimates[j]`` moved alike (an unrounded BLUE stays equal)."""
    def edit(state: dict[str, Any]) -> None:
        _level("consistent", j, make)(state)
        _level("estimates", j, make)(state)
    return edit


def _bump(a: np.ndarray, delta: float = 1.0) -> np.ndarray:
    a = a.copy()
    a.reshape(-1)[0] += delta
    return a


def _negative_sibling(a: np.ndarray) -> np.ndarray:
    """An entry -1 and its sibling +(its value + 1): the level's total kept."""
    a = a.copy()
    flat = a.reshape(-1) if a.ndim == 1 else a[:, 0]
    flat[1] += flat[0] + 1
    flat[0] = -1
    return a


def _set(name: str, value: Callable[[dict[str, Any]], Any]
         ) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        state[name] = value(state)
    return edit


def _scalars(xs: list[float]) -> list[Any]:
    return [encode_scalar(float(x)) for x in xs]


# (id, kinds it applies to, edit, the field the ValueError names)
_TAMPERED: list[tuple[str, list[str], Callable[[dict[str, Any]], None], str]] = [
    # the accounting record says more noise (a smaller charge) than the levels got
    ("event_sigma", ["topdown", "blue", "invariant", "unrounded", "rounded_blue"],
     _scale_event(0, 2.0), "event"),
    ("event_sigma_down", ["topdown", "blue"], _scale_event(1, 0.5), "event"),
    ("event_rho", ["person"], _scale_event(1, 0.5), "event"),
    ("event_level_dropped", KINDS, _drop_event, "event"),
    ("event_sensitivity", ["topdown", "blue"],
     _event_edit(0, sensitivity=None), "event"),
    ("event_relation", ["topdown"], _event_edit(2, neighbouring="replace_one"), "event"),
    ("event_legacy_zcdp_other_rho", ["topdown", "blue"],
     _set("event", lambda s: ev.Zcdp(0.01).to_dict()), "event"),
    ("rho_total", KINDS, _set("rho_total", lambda s: encode_scalar(
        math.nextafter(tables.TopDownRelease.from_state(s).rho_total, 0.0))), "rho_total"),
    # the levels' rho (and the mechanisms they make) against the event
    ("rho_level", ["topdown", "blue"],
     _set("rho", lambda s: [s["rho"][0], encode_scalar(1.0), s["rho"][2]]), r"mech_rho\[1\]"),
    ("invariant_flag_on", ["topdown"], _set("total_invariant", lambda s: True), r"rho\[0\]"),
    ("invariant_flag_off", ["invariant"], _set("total_invariant", lambda s: False),
     r"rho\[0\]"),
    ("sensitivity_not_a_root", ["person"],
     _set("sensitivity", lambda s: _scalars([1.5, 1.5, 1.5])), "sensitivity"),
    ("sensitivity_huge", ["person"],
     _set("sensitivity", lambda s: _scalars([1e300, 1e300, 1e300])), "sensitivity"),
    ("sensitivity_of_a_record", ["topdown"],
     _set("sensitivity", lambda s: _scalars([2.0, 2.0, 2.0])), "sensitivity"),
    # the variances above the level's noise (wider intervals than the noise gives, and
    # standard errors no release can have)
    ("variances_above_the_noise", ["topdown", "blue", "person", "rounded_blue"],
     _level("variances", 2, lambda a: a * 10.0), r"variances\[2\]"),
    ("variances_of_an_exact_root", ["invariant"],
     _level("variances", 0, lambda a: a + 1.0), r"variances\[0\]"),
    # a BLUE with its hierarchy: the least squares of its own measurements
    ("blue_variances_halved", ["blue"], _level("variances", 1, lambda a: a * 0.5),
     r"variances\[1\]"),
    ("blue_consistent_moved", ["blue"], _both(2, lambda a: _bump(a, 1.0)),
     r"consistent\[2\]"),
    # released estimates against the consistent ones and each other
    ("unrounded_estimates", ["blue", "unrounded"],
     _level("estimates", 2, lambda a: _bump(a, 0.5)), r"estimates\[2\]"),
    ("negative_estimate", ["topdown", "rounded_blue"],
     _level("estimates", 2, _negative_sibling), r"estimates\[2\].*>= 0"),
    ("level_totals", ["topdown", "person", "invariant"],
     _level("estimates", 2, _bump), r"estimates\[2\]"),
    ("invariant_root", ["invariant"], _level("consistent", 0, lambda a: _bump(a, 0.5)),
     r"consistent\[0\]"),
]


@pytest.mark.parametrize("kind,edit,field", [
    pytest.param(k, e, f, id=f"{n}-{k}") for n, kinds, e, f in _TAMPERED for k in kinds])
def test_state_fields_that_disagree_are_refused(kind: str, edit: Callable[[dict[str, Any]],
                                                                           None],
                                                field: str) -> None:
    """Closes the channel of issue 39's follow-up: a state whose fields disagree (above
    all the ``event`` against the ``sigma``) was rebuilt by the old ``from_state``; now
    each is refused, ValueError naming the field."""
    state = dict(_release(kind).to_state())
    edit(state)
    with pytest.raises(ValueError, match=field):
        tables.TopDownRelease.from_state(state)


def test_event_scaled_with_coherent_levels_is_refused() -> None:
    """The event of one budget with every per-level field of another (``sigma``, ``rho``,
    ``mech_rho``, the measurements and estimates all coherent with each other): the
    accounting record charges ``rho = 2`` while the intervals are those of the noise of
    ``rho = 0.5``.  The old code checked ``sigma`` against ``rho`` only, and accepted it."""
    small = tables.topdown(COUNTS, LEVELS, rho=0.5, rng=dpfast.default_rng(KEY),
                           estimator="blue").to_state()
    large = tables.topdown(COUNTS, LEVELS, rho=2.0, rng=dpfast.default_rng(KEY),
                           estimator="blue").to_state()
    for fields in (("event",), ("event", "rho_total")):
        state = dict(small, **{f: large[f] for f in fields})
        with pytest.raises(ValueError, match=fields[-1]):
            tables.TopDownRelease.from_state(state)


def test_former_single_zcdp_event_still_loads() -> None:
    """A state written when the event was one ``Zcdp(rho_total)`` (before the per-level
    events) loads: its ``rho`` is the one the ``sigma`` imply."""
    r = _release("topdown")
    state = dict(r.to_state(), event=ev.Zcdp(r.rho_total).to_dict())
    back = tables.TopDownRelease.from_state(state)
    assert back.event == ev.Zcdp(r.rho_total)


@pytest.mark.parametrize("kind", ["topdown", "person"])
def test_the_event_is_the_function_of_sigma(kind: str) -> None:
    """The check and the release share one rule: the release's event and ``rho_total`` are
    :func:`~dpfast.tables._topdown_events.release_event` of its ``sigma`` and squared
    sensitivities."""
    from dpfast.tables import _topdown_events

    r = _release(kind)
    l2sq = r.to_state()["l2sq"]
    assert l2sq == [round(s * s) for s in r.sensitivity]  # (small: the float's square)
    assert _topdown_events.release_event(r.sigma, l2sq) == (r.event, r.rho_total)


@pytest.mark.parametrize("estimator", ["topdown", "blue"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_states_of_random_trees_load(estimator: str, seed: int) -> None:
    """The checks refuse no release: random trees, unequal ``rho`` per level (the BLUE's
    exact variances then not proportional to ``sigma^2``), small ``sigma`` (the lattice),
    with and without an invariant total, one cell or two, and with seed 0 a finest level
    of ``2^15`` units (the fused least-squares kernels, which the recomputation of a
    BLUE's state runs too); each rebuilt release writes the same state."""
    from .test_topdown import random_tree

    g = np.random.default_rng(seed)
    sizes = [2, 30, 400, 1 << 15] if seed == 0 else [1, 7, 50, 300]
    levels = random_tree(g, sizes, extra_leaves=40)
    n = levels[0].shape[0]
    counts = g.poisson(2, n) if seed != 1 else g.poisson(2, (n, 2))
    invariant = seed == 2
    rho = [0.0 if invariant else 0.3, 2.0, 0.05, 0.8]
    r = tables.topdown(counts, levels, rho=rho, total_invariant=invariant,
                       rng=dpfast.default_rng(KEY), estimator=estimator)
    releases = [r, r.rounded()] if estimator == "blue" else [r]
    for rel in releases:
        state = rel.to_state()
        assert tables.TopDownRelease.from_state(state).to_state() == state


def _wide(c: int) -> tables.TopDownRelease:
    """A per-person release whose squared sensitivities are not a float's square: 10,003
    leaves, a middle level of units of 5000, 5000 and 3 leaves, ``k = 10,003`` and
    ``max_per_partition = c`` (``l2sq`` of the middle level ``(2 * 5000^2 + 9) c^2``,
    above ``2^52`` from ``c = 10^4``, above ``2^62`` from ``c = 10^6``)."""
    n = 10_003
    mid = np.concatenate([np.zeros(5000), np.ones(5000), np.full(3, 2)]).astype(np.int64)
    g = np.random.default_rng(0)
    return tables.topdown(g.integers(0, n, 2000), [np.zeros(n, np.int64), mid, np.arange(n)],
                          rho=1e3, privacy_ids=g.integers(0, 300, 2000), max_partitions=n,
                          max_per_partition=c, rng=dpfast.default_rng(KEY))


@pytest.mark.parametrize("c", [10_000, 12_345, 10 ** 6, 2 ** 26 + 1, 987_654_321_987])
def test_per_person_state_with_large_sensitivities_round_trips(c: int) -> None:
    """A genuine per-person state whose ``l2sq`` is not ``round(sensitivity^2)`` (above
    ``2^52``; the old reading took that square and refused the state, "mech_rho[1] is not
    rho[1] / sensitivity[1]^2", and refused ``l2sq >= 2^62`` outright): FAILS on the old
    code.  The state now holds the exact ``l2sq`` and rebuilds the same release."""
    r = _wide(c)
    state = r.to_state()
    assert state["l2sq"] == [(10_003 * c) ** 2, (2 * 5000 ** 2 + 9) * c ** 2, 10_003 * c ** 2]
    assert state["l2sq"][1] != round(r.sensitivity[1] ** 2)
    assert tables.TopDownRelease.from_state(state).to_state() == state


@pytest.mark.parametrize("c", [1, 7, 10_000, 12_345, 10 ** 6, 2 ** 26 + 1, 10 ** 9,
                               987_654_321_987])
def test_state_without_l2sq_still_loads(c: int) -> None:
    """A state written before ``l2sq`` was stored (the field absent) loads: of the
    integers whose root is the stated sensitivity, one whose mechanism and event match is
    found (several above ``2^52``; the release's event is the same); it is written back
    without the field.  With ``c >= 10^4`` this FAILS on the old code."""
    r = _wide(c) if c != 7 else _release("person")
    state = r.to_state()
    del state["l2sq"]
    back = tables.TopDownRelease.from_state(state)
    assert back.event == r.event and back.rho_total == r.rho_total
    assert back.to_state() == state


@pytest.mark.parametrize("name,edit,field", [
    ("event_rho", _scale_event(1, 0.5), "event"),
    ("rho_total", _set("rho_total", lambda s: encode_scalar(
        math.nextafter(tables.TopDownRelease.from_state(s).rho_total, 0.0))), "rho_total"),
    ("mech_rho", _set("mech_rho", lambda s: [encode_scalar(decode_scalar(m) * 0.5)
                                             for m in s["mech_rho"]]), r"mech_rho\[0\]"),
    ("sensitivity_not_a_root", _set("sensitivity", lambda s: _scalars([1.5, 1.5, 1.5])),
     "sensitivity"),
    ("sensitivity_huge", _set("sensitivity", lambda s: _scalars([1e300, 1e300, 1e300])),
     "sensitivity")])
def test_tampered_state_without_l2sq_is_refused(name: str, edit: Callable[[dict[str, Any]],
                                                                          None],
                                                field: str) -> None:
    """An older state (no ``l2sq``) whose fields disagree is refused as before: no
    integer near ``sensitivity^2`` makes them agree."""
    state = dict(_wide(10_000).to_state())
    del state["l2sq"]
    tables.TopDownRelease.from_state(state)  # (untouched: loads)
    edit(state)
    with pytest.raises(ValueError, match=field):
        tables.TopDownRelease.from_state(state)


def _l2sq_edit(j: int, delta: int) -> Callable[[dict[str, Any]], None]:
    def edit(state: dict[str, Any]) -> None:
        state["l2sq"] = [d + delta if i == j else d for i, d in enumerate(state["l2sq"])]
    return edit


@pytest.mark.parametrize("c,edit,field", [
    # another l2sq: a different root, or above 2^52 the same root and another mechanism,
    # event or rho_total
    (7, _l2sq_edit(1, -1), r"sensitivity\[1\]"),
    (10_000, _l2sq_edit(1, -(10 ** 4)), r"sensitivity\[1\]"),
    (10_000, _l2sq_edit(1, 1), r"mech_rho\[1\]"),
    (10_000, _l2sq_edit(0, 1), r"mech_rho\[0\]"),
    (10_000, _l2sq_edit(0, -1), "rho_total"),
    (10 ** 6, _l2sq_edit(2, -1), "event"),
    (7, _set("l2sq", lambda s: s["l2sq"][:2]), "l2sq"),
    (7, _set("l2sq", lambda s: [0, *s["l2sq"][1:]]), r"l2sq\[0\]"),
    (7, _set("l2sq", lambda s: [True, *s["l2sq"][1:]]), r"l2sq\[0\]"),
    (7, _set("l2sq", lambda s: [float(d) for d in s["l2sq"]]), r"l2sq\[0\]"),
    (7, _set("l2sq", lambda s: "441"), "l2sq")])
def test_tampered_l2sq_is_refused(c: int, edit: Callable[[dict[str, Any]], None],
                                  field: str) -> None:
    """A stored ``l2sq`` that is not the one the sensitivity, the mechanisms and the event
    were made with (or not one int ``>= 1`` per level) is refused, naming the field.  (Far
    above ``2^53`` neighbouring integers can share every one of those floats: such an
    ``l2sq`` is as consistent with the accounting record as the true one, and loads.)"""
    state = dict((_wide(c) if c != 7 else _release("person")).to_state())
    edit(state)
    with pytest.raises(ValueError, match=field):
        tables.TopDownRelease.from_state(state)
