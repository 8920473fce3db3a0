"""Privacy events: plain descriptions of what a release cost.

A mechanism describes its guarantee with an *event*; accountants
(:mod:`dpfast.accounting.rdp`, :mod:`dpfast.accounting.zcdp`,
:mod:`dpfast.accounting.pure`) consume events and compose them.  Events are
frozen, hashable dataclasses that validate their fields on construction and
import only the standard-library checks of :mod:`dpfast._core` (not even :mod:`fractions`),
so that mechanisms can state their guarantee cheaply and without depending on any
accountant (docs/design.md, "Layers").  Each event states the neighbouring relation its
guarantee is for (:attr:`DpEvent.neighbouring`).

Conventions
-----------
* ``noise_multiplier`` is always the noise scale divided by the sensitivity:
  ``scale / sensitivity`` for (discrete) Laplace noise and
  ``sigma / L2 sensitivity`` for (discrete) Gaussian noise.  For the discrete
  mechanisms the sensitivity is an integer; their events may state it
  (``sensitivity=``, optional) when the release is a scalar, which the PLD accountant
  needs for their exact loss distributions.
* ``neighbouring`` (optional, guarantee and noise events): the relation the sensitivity
  holds under (``"add_remove"`` for :mod:`dpfast.tables`); ``None``: the caller's.  Fixed
  by :class:`PoissonSampled` (add/remove one), :class:`SampledWithoutReplacement` and
  :class:`RandomizedResponse` (replace one).
* Numbers are stored as Python ``float`` / ``int`` (numpy scalars are
  converted), so equal events compare and hash equal.

Every event converts to and from a JSON-friendly ``dict`` (:meth:`DpEvent.to_dict`,
:func:`from_dict`), which a ledger can store.  The relations, field checks and the
:class:`DpEvent` base live in :mod:`dpfast.accounting._event_base` (re-exported here).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from dpfast.accounting._event_base import (
    ADD_REMOVE,
    RELATIONS,
    REPLACE_ONE,
    DpEvent,
    _event,
    _exact_real,
    _integer,
    _nonneg_finite,
    _positive_finite,
    _relation,
    _sensitivity,
    _set,
    relations_of,
    with_neighbouring,
)

__all__ = [
    "ADD_REMOVE",
    "REPLACE_ONE",
    "RELATIONS",
    "EVENT_TYPES",
    "DpEvent",
    "Epsilon",
    "EpsilonDelta",
    "Zcdp",
    "Laplace",
    "Gaussian",
    "DiscreteLaplace",
    "DiscreteGaussian",
    "RandomizedResponse",
    "Exponential",
    "Snapping",
    "PoissonSampled",
    "SampledWithoutReplacement",
    "Composed",
    "SelfComposed",
    "from_dict",
    "relations_of",
    "with_neighbouring",
]


# --------------------------------------------------------------------------- guarantees


@dataclasses.dataclass(frozen=True, repr=False)
class Epsilon(DpEvent):
    """Pure ``epsilon``-DP: ``P[M(x) in S] <= exp(epsilon) P[M(x') in S]``."""

    epsilon: float

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("Epsilon", "epsilon", self.epsilon))
        _set(self, "neighbouring", _relation("Epsilon", self.neighbouring))


@dataclasses.dataclass(frozen=True, repr=False)
class EpsilonDelta(DpEvent):
    """Approximate ``(epsilon, delta)``-DP with ``0 <= delta < 1``."""

    epsilon: float
    delta: float

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("EpsilonDelta", "epsilon", self.epsilon))
        d = _exact_real("EpsilonDelta", "delta", self.delta, down=False)
        if not (0.0 <= d < 1.0):
            raise ValueError(f"EpsilonDelta: delta must lie in [0, 1), got {d!r}")
        _set(self, "delta", d)
        _set(self, "neighbouring", _relation("EpsilonDelta", self.neighbouring))


@dataclasses.dataclass(frozen=True, repr=False)
class Zcdp(DpEvent):
    """``rho``-zero-concentrated DP (Bun & Steinke 2016): ``D_alpha <= rho * alpha``."""

    rho: float

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(self, "rho", _nonneg_finite("Zcdp", "rho", self.rho))
        _set(self, "neighbouring", _relation("Zcdp", self.neighbouring))


# --------------------------------------------------------------------------- additive noise


@dataclasses.dataclass(frozen=True, repr=False)
class Laplace(DpEvent):
    """Laplace noise with ``noise_multiplier = scale / L1 sensitivity``."""

    noise_multiplier: float

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("Laplace", "noise_multiplier", self.noise_multiplier),
        )
        _set(self, "neighbouring", _relation("Laplace", self.neighbouring))


@dataclasses.dataclass(frozen=True, repr=False)
class Gaussian(DpEvent):
    """Gaussian noise with ``noise_multiplier = sigma / L2 sensitivity``."""

    noise_multiplier: float

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("Gaussian", "noise_multiplier", self.noise_multiplier),
        )
        _set(self, "neighbouring", _relation("Gaussian", self.neighbouring))


@dataclasses.dataclass(frozen=True, repr=False)
class DiscreteLaplace(DpEvent):
    """Discrete Laplace noise, ``P(x) ~ exp(-|x|/t)``, ``noise_multiplier = t / sensitivity``.

    The sensitivity is an integer (L1).  ``sensitivity`` (optional, a positive ``int``)
    states it when the release is a *scalar* integer query (or one coordinate changes
    between neighbours) with ``|f(D) - f(D')| <= sensitivity``: the noise scale is then
    ``t = noise_multiplier * sensitivity`` and :class:`~dpfast.accounting.PldAccountant`
    uses the exact loss distribution of that shift.  ``None`` (default): any integer
    query of L1 sensitivity ``t / noise_multiplier`` (vector queries included); the PLD
    accountant then uses the pure ``1 / noise_multiplier``-DP bound, valid for all of
    them.  The other accountants ignore the field.
    """

    noise_multiplier: float
    sensitivity: int | None = None

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("DiscreteLaplace", "noise_multiplier", self.noise_multiplier),
        )
        _set(self, "sensitivity", _sensitivity("DiscreteLaplace", self.sensitivity))
        _set(self, "neighbouring", _relation("DiscreteLaplace", self.neighbouring))


@dataclasses.dataclass(frozen=True, repr=False)
class DiscreteGaussian(DpEvent):
    """Discrete Gaussian noise, ``P(x) ~ exp(-x^2 / 2 sigma^2)``.

    ``noise_multiplier = sigma / sensitivity`` with an integer (L2) sensitivity.
    ``sensitivity`` (optional, a positive ``int``) states it when the release is a
    *scalar* integer query (or one coordinate changes between neighbours) with
    ``|f(D) - f(D')| <= sensitivity``: ``sigma = noise_multiplier * sensitivity``, and
    :class:`~dpfast.accounting.PldAccountant` uses the exact loss distribution of the
    shift by ``sensitivity`` (Canonne, Kamath & Steinke 2020, Thm. 7: it bounds every
    smaller shift).  ``None`` (default): any integer vector query of that L2 sensitivity;
    the PLD accountant then refuses the event (its loss distribution depends on how the
    shift spreads over the coordinates).  RDP, zCDP and pure-DP accountants ignore the
    field (their bounds hold for every shift of L2 norm ``<= sensitivity``).
    """

    noise_multiplier: float
    sensitivity: int | None = None

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("DiscreteGaussian", "noise_multiplier", self.noise_multiplier),
        )
        _set(self, "sensitivity", _sensitivity("DiscreteGaussian", self.sensitivity))
        _set(self, "neighbouring", _relation("DiscreteGaussian", self.neighbouring))


@dataclasses.dataclass(frozen=True)
class RandomizedResponse(DpEvent):
    """``k``-ary randomized response with parameter ``epsilon``.

    Reports the true value with probability ``e^eps / (e^eps + k - 1)`` and each
    other value with probability ``1 / (e^eps + k - 1)``; neighbouring inputs
    differ in the one value (replace one).
    """

    epsilon: float
    k: int = 2

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("RandomizedResponse", "epsilon", self.epsilon))
        _set(self, "k", _integer("RandomizedResponse", "k", self.k, 2))

    @property
    def neighbouring(self) -> str | None:
        """:data:`REPLACE_ONE`: one person's value is replaced."""
        return REPLACE_ONE


@dataclasses.dataclass(frozen=True, repr=False)
class Exponential(DpEvent):
    """Exponential mechanism (or report-noisy-max with Gumbel noise) that is ``epsilon``-DP.

    ``epsilon`` is the pure-DP parameter, i.e. the mechanism samples
    ``P(i) ~ exp(epsilon * u_i / (2 * sensitivity))`` (or ``epsilon * u_i / sensitivity``
    for monotone utilities).  It is also ``epsilon``-bounded-range and hence
    ``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021).
    """

    epsilon: float

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("Exponential", "epsilon", self.epsilon))
        _set(self, "neighbouring", _relation("Exponential", self.neighbouring))


@dataclasses.dataclass(frozen=True, repr=False)
class Snapping(DpEvent):
    """Snapping mechanism (Mironov 2012) with its corrected pure-DP ``epsilon``.

    Accountants treat it exactly like :class:`Epsilon`.
    """

    epsilon: float

    neighbouring: str | None = None

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("Snapping", "epsilon", self.epsilon))
        _set(self, "neighbouring", _relation("Snapping", self.neighbouring))


# --------------------------------------------------------------------------- structure


@dataclasses.dataclass(frozen=True)
class PoissonSampled(DpEvent):
    """``event`` run on a Poisson subsample: each record kept independently w.p. ``rate``.

    Neighbouring relation: add/remove one record.
    """

    event: DpEvent
    rate: float

    def __post_init__(self) -> None:
        _event("PoissonSampled", "event", self.event)
        r = _exact_real("PoissonSampled", "rate", self.rate, down=False)
        if not (0.0 <= r <= 1.0):
            raise ValueError(f"PoissonSampled: rate must lie in [0, 1], got {r!r}")
        _set(self, "rate", r)

    @property
    def neighbouring(self) -> str | None:
        """:data:`ADD_REMOVE` (Poisson sampling amplifies under add/remove-one)."""
        return ADD_REMOVE


@dataclasses.dataclass(frozen=True)
class SampledWithoutReplacement(DpEvent):
    """``event`` run on a uniformly random subset of ``sample_size`` of ``population`` records.

    Neighbouring relation: replace one record (``population`` is public).
    """

    event: DpEvent
    sample_size: int
    population: int

    def __post_init__(self) -> None:
        _event("SampledWithoutReplacement", "event", self.event)
        n = _integer("SampledWithoutReplacement", "population", self.population, 1)
        m = _integer("SampledWithoutReplacement", "sample_size", self.sample_size, 0)
        if m > n:
            raise ValueError(
                f"SampledWithoutReplacement: sample_size ({m}) must be <= population ({n})"
            )
        _set(self, "population", n)
        _set(self, "sample_size", m)

    @property
    def neighbouring(self) -> str | None:
        """:data:`REPLACE_ONE` (the population size is public)."""
        return REPLACE_ONE


@dataclasses.dataclass(frozen=True)
class Composed(DpEvent):
    """Sequential (adaptive) composition of ``events`` (any iterable; stored as a tuple)."""

    events: tuple[DpEvent, ...]

    def __post_init__(self) -> None:
        if isinstance(self.events, DpEvent | str | bytes):
            raise TypeError("Composed: events must be an iterable of DpEvent")
        try:
            evs = tuple(self.events)
        except TypeError:
            raise TypeError(
                f"Composed: events must be an iterable of DpEvent, "
                f"got {type(self.events).__name__}"
            ) from None
        for i, e in enumerate(evs):
            _event("Composed", f"events[{i}]", e)
        _set(self, "events", evs)


@dataclasses.dataclass(frozen=True)
class SelfComposed(DpEvent):
    """``event`` composed with itself ``count`` times (``count >= 0``)."""

    event: DpEvent
    count: int

    def __post_init__(self) -> None:
        _event("SelfComposed", "event", self.event)
        _set(self, "count", _integer("SelfComposed", "count", self.count, 0))


#: Every concrete event class (a new event is added here, see docs/design.md).
EVENT_TYPES: tuple[type[DpEvent], ...] = (
    Epsilon, EpsilonDelta, Zcdp, Laplace, Gaussian, DiscreteLaplace, DiscreteGaussian,
    RandomizedResponse, Exponential, Snapping, PoissonSampled,
    SampledWithoutReplacement, Composed, SelfComposed,
)

_TYPES: dict[str, type[DpEvent]] = {cls.__name__: cls for cls in EVENT_TYPES}


def from_dict(data: dict[str, Any]) -> DpEvent:
    """Rebuild an event from :meth:`DpEvent.to_dict` output.

    Raises
    ------
    ValueError
        If ``data`` has no known ``"type"`` or its fields do not match.
    """
    if not isinstance(data, dict):
        raise TypeError(f"from_dict: data must be a dict, got {type(data).__name__}")
    kind = data.get("type")
    cls = _TYPES.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ValueError(f"from_dict: data['type'] is not a known event type: {kind!r}")
    kwargs = {k: v for k, v in data.items() if k != "type"}
    names = {f.name for f in dataclasses.fields(cls)}
    if set(kwargs) - names:
        raise ValueError(f"from_dict: unknown fields for {kind}: {sorted(set(kwargs) - names)}")
    if "event" in kwargs:
        kwargs["event"] = from_dict(kwargs["event"])
    if "events" in kwargs:
        kwargs["events"] = tuple(from_dict(e) for e in kwargs["events"])
    try:
        return cls(**kwargs)
    except TypeError as exc:  # missing fields
        raise ValueError(f"from_dict: bad fields for {kind}: {exc}") from None
