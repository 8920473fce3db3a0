"""The accountant contract (docs/design.md, "Add an accountant"), the events' round trip,
the zCDP conversions over their whole domain, and neighbouring relations."""

from __future__ import annotations

import importlib
import json
import math
import pkgutil

import mpmath
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpfast
import dpfast.accounting
from dpfast.accounting import (
    Accountant,
    NeighbouringRelationError,
    PldAccountant,
    PureDpAccountant,
    RdpAccountant,
    UnsupportedEventError,
    ZcdpAccountant,
    zcdp_delta,
    zcdp_epsilon,
)
from dpfast.accounting import events as ev

from .helpers import cor13_delta, cor13_epsilon

G = ev.Gaussian(2.0)
# at least one instance of every event class (a new class without an example fails below)
EXAMPLES: list[ev.DpEvent] = [
    ev.Epsilon(0.5),
    ev.EpsilonDelta(0.5, 1e-6),
    ev.EpsilonDelta(0.5, 0.0),
    ev.Zcdp(0.1),
    ev.Laplace(2.0),
    ev.Gaussian(2.0),
    ev.DiscreteLaplace(3.0),
    ev.DiscreteGaussian(3.0),
    ev.DiscreteGaussian(3.0, sensitivity=2),
    ev.DiscreteLaplace(3.0, sensitivity=4),
    ev.RandomizedResponse(1.0, 4),
    ev.Exponential(0.3),
    ev.Snapping(0.7),
    ev.PoissonSampled(G, 0.01),
    ev.PoissonSampled(ev.Laplace(1.0), 0.1),
    ev.SampledWithoutReplacement(ev.Laplace(1.0), 10, 100),
    ev.SampledWithoutReplacement(G, 10, 100),
    ev.Composed([ev.Laplace(2.0), G]),
    ev.Composed([ev.Epsilon(0.1), ev.EpsilonDelta(0.2, 1e-7)]),
    ev.SelfComposed(G, 3),
    ev.SelfComposed(ev.PoissonSampled(G, 0.5), 2),
]


def accountant_classes() -> list[type[Accountant]]:
    """Every concrete subclass of :class:`Accountant` (recursively) defined in
    :mod:`dpfast.accounting`: importing every module of the package registers them, so a
    new accountant is covered without being named here."""
    for info in pkgutil.walk_packages(dpfast.accounting.__path__, "dpfast.accounting."):
        importlib.import_module(info.name)
    found: list[type[Accountant]] = []
    todo = list(Accountant.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return [c for c in found if c.__module__.startswith("dpfast.accounting.")
            and not getattr(c, "__abstractmethods__", None)]


def test_examples_cover_every_event_class() -> None:
    assert {type(e) for e in EXAMPLES} == set(ev.EVENT_TYPES)
    assert {PureDpAccountant, RdpAccountant, ZcdpAccountant, PldAccountant} <= set(
        accountant_classes()
    )


@pytest.mark.parametrize("event", EXAMPLES, ids=repr)
def test_every_event_round_trips(event: ev.DpEvent) -> None:
    data = json.loads(json.dumps(event.to_dict()))
    assert ev.from_dict(data) == event


@pytest.mark.parametrize("event", EXAMPLES, ids=repr)
def test_every_accountant_supports_or_rejects_every_event(event: ev.DpEvent) -> None:
    for cls in accountant_classes():
        acct = cls()
        ok = acct.supports(event)
        if ok:
            acct.compose(event, 2)
            e = acct.get_epsilon(0.5)
            assert e >= 0.0
            assert 0.0 <= acct.get_delta(max(e, 1.0)) <= 1.0
        else:
            before = acct.get_delta(1.0)
            with pytest.raises((UnsupportedEventError, NeighbouringRelationError)):
                acct.compose(event)
            assert acct.get_delta(1.0) == before  # nothing composed


def test_unsupported_is_one_exception_type() -> None:
    assert dpfast.UnsupportedEventError is UnsupportedEventError
    with pytest.raises(UnsupportedEventError):
        PureDpAccountant().compose(ev.Gaussian(1.0))
    with pytest.raises(UnsupportedEventError):
        ZcdpAccountant().compose(ev.PoissonSampled(G, 0.1))
    with pytest.raises(UnsupportedEventError):
        RdpAccountant().compose(ev.PoissonSampled(ev.Laplace(1.0), 0.1))

    class Foreign(ev.DpEvent):
        pass

    for cls in accountant_classes():
        assert not cls().supports(Foreign())
        with pytest.raises(UnsupportedEventError):
            cls().compose(Foreign())


def test_accountants_share_the_base_class() -> None:
    for cls in (PureDpAccountant, RdpAccountant, ZcdpAccountant):
        assert issubclass(cls, Accountant)
        for name in ("supports", "compose", "get_epsilon", "get_delta"):
            assert callable(getattr(cls, name))


# --------------------------------------------------------------------------- zCDP (item 12)


def test_zcdp_conversions_no_longer_crash() -> None:
    # issue 17 item 12: each of these raised "math domain error"
    assert ZcdpAccountant().compose(ev.Gaussian(0.02)).get_delta(1.0) == 1.0
    assert zcdp_delta(50.0, 1.0) == 1.0
    assert zcdp_delta(1e6, 1.0) == 1.0
    assert zcdp_epsilon(1e-3, 1 - 1e-16) == 0.0
    assert zcdp_epsilon(1e-3, 0.999999) == 0.0


_RHO = st.one_of(
    st.floats(min_value=0.0, max_value=1e300, allow_nan=False),
    st.floats(min_value=1e-300, max_value=1e3).map(float),
    st.sampled_from([0.0, 5e-324, 1e-12, 0.5, 50.0, 1e6, math.inf]),
)
_EPS = st.one_of(
    st.floats(min_value=0.0, max_value=1e300, allow_nan=False),
    st.floats(min_value=0.0, max_value=50.0),
    st.sampled_from([0.0, 5e-324, 1.0, math.inf]),
)
_DELTA = st.one_of(
    st.floats(min_value=5e-324, max_value=1.0, exclude_max=True),
    st.sampled_from([5e-324, 1e-300, 1e-10, 0.5, 1 - 1e-16, math.nextafter(1.0, 0.0)]),
)


@given(_RHO, _EPS)
def test_zcdp_delta_is_total_and_an_upper_bound(rho: float, eps: float) -> None:
    d = zcdp_delta(rho, eps)
    assert 0.0 <= d <= 1.0
    if math.isinf(rho) or math.isinf(eps) or rho == 0.0:
        assert d == (1.0 if math.isinf(rho) and not math.isinf(eps) else 0.0)
        return
    ref = cor13_delta(rho, eps)
    assert d >= ref * (1 - mpmath.mpf(2) ** -40) or ref < 1e-320  # never below the bound
    assert d <= ref * (1 + 1e-6) + 1e-300  # and close to the optimal order


@given(_RHO, _DELTA)
def test_zcdp_epsilon_is_total_and_an_upper_bound(rho: float, delta: float) -> None:
    e = zcdp_epsilon(rho, delta)
    assert e >= 0.0
    if math.isinf(rho) or rho == 0.0:
        assert e == (math.inf if math.isinf(rho) else 0.0)
        return
    ref = cor13_epsilon(rho, delta)
    assert e >= ref * (1 - mpmath.mpf(2) ** -40)
    assert e <= ref * (1 + 1e-6) + 1e-12


@given(_RHO, _EPS)
def test_zcdp_conversions_are_consistent(rho: float, eps: float) -> None:
    d = zcdp_delta(rho, eps)
    if 0.0 < d < 1.0 and math.isfinite(eps):
        assert zcdp_epsilon(rho, d) <= eps * (1 + 1e-6) + 1e-9


# --------------------------------------------------------------------------- relations (item 14)


def test_events_state_their_neighbouring_relation() -> None:
    assert ev.PoissonSampled(G, 0.1).neighbouring == ev.ADD_REMOVE
    assert ev.SampledWithoutReplacement(G, 1, 10).neighbouring == ev.REPLACE_ONE
    assert ev.RandomizedResponse(1.0).neighbouring == ev.REPLACE_ONE
    assert G.neighbouring is None
    mixed = ev.Composed([ev.PoissonSampled(G, 0.1), ev.RandomizedResponse(1.0)])
    assert ev.relations_of(mixed) == {ev.ADD_REMOVE, ev.REPLACE_ONE}


@pytest.mark.parametrize("cls", [PureDpAccountant, ZcdpAccountant, RdpAccountant])
def test_mixed_relations_are_not_composed_silently(cls) -> None:
    # issue 17 item 14: add/remove-one and replace-one events were summed without a word
    poisson = ev.PoissonSampled(ev.Laplace(1.0) if cls is PureDpAccountant else G, 0.01)
    if cls is ZcdpAccountant:
        poisson = ev.PoissonSampled(G, 1.0)
    acct = cls().compose(poisson)
    assert acct.neighbouring == ev.ADD_REMOVE
    with pytest.raises(NeighbouringRelationError):
        acct.compose(ev.RandomizedResponse(1.0))
    with pytest.raises(NeighbouringRelationError):
        cls().compose(ev.Composed([poisson, ev.SampledWithoutReplacement(G, 1, 10)]))
    fixed = cls(neighbouring=ev.ADD_REMOVE)
    assert not fixed.supports(ev.RandomizedResponse(1.0))


def test_add_remove_converts_to_replace_one_by_group_privacy() -> None:
    pure = PureDpAccountant(neighbouring=ev.REPLACE_ONE)
    pure.compose(ev.RandomizedResponse(1.0))
    pure.compose(ev.PoissonSampled(ev.Laplace(1.0), 0.1))
    e_ar = math.log1p(0.1 * math.expm1(1.0))
    assert pure.epsilon == pytest.approx(1.0 + 2 * e_ar, rel=1e-12)
    assert pure.epsilon >= 1.0 + 2 * e_ar

    z = ZcdpAccountant(neighbouring=ev.REPLACE_ONE).compose(ev.PoissonSampled(G, 1.0))
    assert z.rho == pytest.approx(4 * (1 / 8), rel=1e-12)  # k^2 rho with k = 2

    with pytest.raises(NeighbouringRelationError):
        RdpAccountant(neighbouring=ev.REPLACE_ONE).compose(ev.PoissonSampled(G, 0.01))
    with pytest.raises(ValueError, match="neighbouring"):
        RdpAccountant(neighbouring="swap")


@pytest.mark.parametrize("cls", [PureDpAccountant, ZcdpAccountant, RdpAccountant])
def test_one_dispatch_table_names_every_event_type(cls) -> None:
    # every event type has a handler (which may be an explicit rejection)
    assert set(cls._HANDLERS) == set(ev.EVENT_TYPES)
