"""Events: validation, immutability, equality and (de)serialisation."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpfast.accounting import events as ev

NAN = float("nan")


@pytest.mark.parametrize(
    ("factory", "exc", "field"),
    [
        (lambda: ev.Epsilon(NAN), ValueError, "epsilon"),
        (lambda: ev.Epsilon(-1.0), ValueError, "epsilon"),
        (lambda: ev.Epsilon(math.inf), ValueError, "epsilon"),
        (lambda: ev.Epsilon("1"), TypeError, "epsilon"),
        (lambda: ev.Epsilon(True), TypeError, "epsilon"),
        (lambda: ev.EpsilonDelta(1.0, 1.0), ValueError, "delta"),
        (lambda: ev.EpsilonDelta(1.0, -0.1), ValueError, "delta"),
        (lambda: ev.EpsilonDelta(1.0, NAN), ValueError, "delta"),
        (lambda: ev.Zcdp(-0.5), ValueError, "rho"),
        (lambda: ev.Laplace(0.0), ValueError, "noise_multiplier"),
        (lambda: ev.Gaussian(NAN), ValueError, "noise_multiplier"),
        (lambda: ev.Gaussian(None), TypeError, "noise_multiplier"),
        (lambda: ev.DiscreteLaplace(-1), ValueError, "noise_multiplier"),
        (lambda: ev.DiscreteGaussian(math.inf), ValueError, "noise_multiplier"),
        (lambda: ev.RandomizedResponse(1.0, 1), ValueError, "k"),
        (lambda: ev.RandomizedResponse(1.0, 2.0), TypeError, "k"),
        (lambda: ev.Exponential(NAN), ValueError, "epsilon"),
        (lambda: ev.PoissonSampled(ev.Gaussian(1.0), 1.5), ValueError, "rate"),
        (lambda: ev.PoissonSampled(ev.Gaussian(1.0), NAN), ValueError, "rate"),
        (lambda: ev.PoissonSampled(1.0, 0.5), TypeError, "event"),
        (lambda: ev.SampledWithoutReplacement(ev.Gaussian(1.0), 5, 3), ValueError, "sample_size"),
        (lambda: ev.SampledWithoutReplacement(ev.Gaussian(1.0), 1, 0), ValueError, "population"),
        (lambda: ev.SampledWithoutReplacement(ev.Gaussian(1.0), 1.0, 3), TypeError, "sample_size"),
        (lambda: ev.Composed(ev.Gaussian(1.0)), TypeError, "events"),
        (lambda: ev.Composed([ev.Gaussian(1.0), 3]), TypeError, "events"),
        (lambda: ev.SelfComposed(ev.Gaussian(1.0), -1), ValueError, "count"),
        (lambda: ev.SelfComposed(ev.Gaussian(1.0), 2.5), TypeError, "count"),
    ],
)
def test_validation_names_the_field(factory, exc, field):
    with pytest.raises(exc, match=field):
        factory()


def test_frozen_hashable_and_normalised():
    a = ev.Gaussian(np.float32(2.0))
    b = ev.Gaussian(2)
    assert a == b and hash(a) == hash(b)
    assert type(a.noise_multiplier) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.noise_multiplier = 3.0  # type: ignore[misc]
    s = ev.SelfComposed(ev.Epsilon(1), np.int64(3))
    assert type(s.count) is int


def test_composed_copies_caller_list():
    parts = [ev.Epsilon(0.1), ev.Gaussian(1.0)]
    c = ev.Composed(parts)
    assert isinstance(c.events, tuple)
    parts.append(ev.Epsilon(5.0))
    assert len(c.events) == 2


def test_snapping_and_edge_values():
    assert ev.Snapping(0.5).epsilon == 0.5
    assert ev.PoissonSampled(ev.Gaussian(1.0), 0).rate == 0.0
    assert ev.SampledWithoutReplacement(ev.Gaussian(1.0), 0, 1).sample_size == 0
    assert ev.RandomizedResponse(0.0).k == 2


leaf = st.one_of(
    st.floats(0, 10).map(ev.Epsilon),
    st.tuples(st.floats(0, 10), st.floats(0, 0.5)).map(lambda t: ev.EpsilonDelta(*t)),
    st.floats(0.01, 10).map(ev.Gaussian),
    st.floats(0.01, 10).map(ev.Laplace),
    st.floats(0.01, 10).map(ev.DiscreteGaussian),
    st.tuples(st.floats(0.01, 10), st.one_of(st.none(), st.integers(1, 50))).map(
        lambda t: ev.DiscreteGaussian(*t)),
    st.tuples(st.floats(0.01, 10), st.one_of(st.none(), st.integers(1, 50))).map(
        lambda t: ev.DiscreteLaplace(*t)),
    st.tuples(st.floats(0, 5), st.integers(2, 9)).map(lambda t: ev.RandomizedResponse(*t)),
    st.floats(0, 5).map(ev.Exponential),
    st.floats(0, 5).map(ev.Zcdp),
)
events_strategy = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.tuples(inner, st.floats(0, 1)).map(lambda t: ev.PoissonSampled(*t)),
        st.tuples(inner, st.integers(0, 20)).map(lambda t: ev.SelfComposed(*t)),
        st.lists(inner, max_size=3).map(ev.Composed),
        st.tuples(inner, st.integers(0, 10)).map(
            lambda t: ev.SampledWithoutReplacement(t[0], t[1], 10)
        ),
    ),
    max_leaves=6,
)


@settings(derandomize=True)
@given(events_strategy)
def test_dict_roundtrip_through_json(event):
    data = json.loads(json.dumps(event.to_dict()))
    assert ev.from_dict(data) == event


def test_from_dict_errors():
    with pytest.raises(ValueError, match="type"):
        ev.from_dict({"type": "Nope"})
    with pytest.raises(ValueError, match="unknown fields"):
        ev.from_dict({"type": "Epsilon", "epsilon": 1.0, "x": 2})
    with pytest.raises(ValueError, match="bad fields"):
        ev.from_dict({"type": "Epsilon"})
    with pytest.raises(TypeError, match="data"):
        ev.from_dict([1])


def test_exact_rationals_round_to_the_safe_side():
    from fractions import Fraction

    third = Fraction(1, 3)
    assert Fraction(ev.Epsilon(third).epsilon) >= third  # a cost rounds up
    assert Fraction(ev.EpsilonDelta(third, Fraction(1, 10**7)).delta) >= Fraction(1, 10**7)
    assert Fraction(ev.Zcdp(third).rho) >= third
    assert Fraction(ev.RandomizedResponse(Fraction(2, 3)).epsilon) >= Fraction(2, 3)
    assert Fraction(ev.Laplace(third).noise_multiplier) <= third  # a noise scale rounds down
    assert Fraction(ev.Gaussian(Fraction(7, 3)).noise_multiplier) <= Fraction(7, 3)
    assert Fraction(ev.PoissonSampled(ev.Gaussian(1.0), third).rate) >= third
