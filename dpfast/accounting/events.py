"""Privacy events: plain descriptions of what a release cost.

A mechanism describes its guarantee with an *event*; accountants
(:mod:`dpfast.accounting.rdp`, :mod:`dpfast.accounting.zcdp`,
:mod:`dpfast.accounting.pure`) consume events and compose them.  Events are
frozen, hashable dataclasses that validate their fields on construction and
import nothing of dpfast, so that mechanisms can state their guarantee without
depending on any accountant (docs/design.md, "Layers").

Conventions
-----------
* ``noise_multiplier`` is always the noise scale divided by the sensitivity:
  ``scale / sensitivity`` for (discrete) Laplace noise and
  ``sigma / L2 sensitivity`` for (discrete) Gaussian noise.  For the discrete
  mechanisms the sensitivity is an integer.
* Unless an event says otherwise the neighbouring relation is the one of the
  mechanism that produced it; the subsampling events state theirs
  (:class:`PoissonSampled`: add/remove one record;
  :class:`SampledWithoutReplacement`: replace one record, dataset size public).
* Numbers are stored as Python ``float`` / ``int`` (numpy scalars are
  converted), so equal events compare and hash equal.

Every event converts to and from a JSON-friendly ``dict`` (:meth:`DpEvent.to_dict`,
:func:`from_dict`), which a ledger can store.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import operator
from typing import Any

__all__ = [
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
]


# --------------------------------------------------------------------------- validation


def _real(owner: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{owner}: {name} must be a real number, got {type(value).__name__}")
    x = float(value)
    if math.isnan(x):
        raise ValueError(f"{owner}: {name} must not be NaN")
    return x


def _nonneg_finite(owner: str, name: str, value: Any) -> float:
    x = _real(owner, name, value)
    if not (0.0 <= x < math.inf):
        raise ValueError(f"{owner}: {name} must be finite and >= 0, got {x!r}")
    return x


def _positive_finite(owner: str, name: str, value: Any) -> float:
    x = _real(owner, name, value)
    if not (0.0 < x < math.inf):
        raise ValueError(f"{owner}: {name} must be finite and > 0, got {x!r}")
    return x


def _integer(owner: str, name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be an integer, got bool")
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(
            f"{owner}: {name} must be an integer, got {type(value).__name__}"
        ) from None
    if n < minimum:
        raise ValueError(f"{owner}: {name} must be >= {minimum}, got {n}")
    return int(n)


def _event(owner: str, name: str, value: Any) -> DpEvent:
    if not isinstance(value, DpEvent):
        raise TypeError(f"{owner}: {name} must be a DpEvent, got {type(value).__name__}")
    return value


def _set(obj: object, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)


# --------------------------------------------------------------------------- base


@dataclasses.dataclass(frozen=True)
class DpEvent:
    """Base class of all privacy events."""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-friendly ``dict`` (``{"type": ClassName, **fields}``).

        Nested events become nested dicts; :func:`from_dict` inverts this.
        """
        out: dict[str, Any] = {"type": type(self).__name__}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, DpEvent):
                v = v.to_dict()
            elif isinstance(v, tuple):
                v = [e.to_dict() for e in v]
            out[f.name] = v
        return out


# --------------------------------------------------------------------------- guarantees


@dataclasses.dataclass(frozen=True)
class Epsilon(DpEvent):
    """Pure ``epsilon``-DP: ``P[M(x) in S] <= exp(epsilon) P[M(x') in S]``."""

    epsilon: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("Epsilon", "epsilon", self.epsilon))


@dataclasses.dataclass(frozen=True)
class EpsilonDelta(DpEvent):
    """Approximate ``(epsilon, delta)``-DP with ``0 <= delta < 1``."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("EpsilonDelta", "epsilon", self.epsilon))
        d = _real("EpsilonDelta", "delta", self.delta)
        if not (0.0 <= d < 1.0):
            raise ValueError(f"EpsilonDelta: delta must lie in [0, 1), got {d!r}")
        _set(self, "delta", d)


@dataclasses.dataclass(frozen=True)
class Zcdp(DpEvent):
    """``rho``-zero-concentrated DP (Bun & Steinke 2016): ``D_alpha <= rho * alpha``."""

    rho: float

    def __post_init__(self) -> None:
        _set(self, "rho", _nonneg_finite("Zcdp", "rho", self.rho))


# --------------------------------------------------------------------------- additive noise


@dataclasses.dataclass(frozen=True)
class Laplace(DpEvent):
    """Laplace noise with ``noise_multiplier = scale / L1 sensitivity``."""

    noise_multiplier: float

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("Laplace", "noise_multiplier", self.noise_multiplier),
        )


@dataclasses.dataclass(frozen=True)
class Gaussian(DpEvent):
    """Gaussian noise with ``noise_multiplier = sigma / L2 sensitivity``."""

    noise_multiplier: float

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("Gaussian", "noise_multiplier", self.noise_multiplier),
        )


@dataclasses.dataclass(frozen=True)
class DiscreteLaplace(DpEvent):
    """Discrete Laplace noise, ``P(x) ~ exp(-|x|/t)``, ``noise_multiplier = t / sensitivity``.

    The sensitivity is an integer (L1).
    """

    noise_multiplier: float

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("DiscreteLaplace", "noise_multiplier", self.noise_multiplier),
        )


@dataclasses.dataclass(frozen=True)
class DiscreteGaussian(DpEvent):
    """Discrete Gaussian noise, ``P(x) ~ exp(-x^2 / 2 sigma^2)``.

    ``noise_multiplier = sigma / sensitivity`` with an integer (L2) sensitivity.
    """

    noise_multiplier: float

    def __post_init__(self) -> None:
        _set(
            self,
            "noise_multiplier",
            _positive_finite("DiscreteGaussian", "noise_multiplier", self.noise_multiplier),
        )


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


@dataclasses.dataclass(frozen=True)
class Exponential(DpEvent):
    """Exponential mechanism (or report-noisy-max with Gumbel noise) that is ``epsilon``-DP.

    ``epsilon`` is the pure-DP parameter, i.e. the mechanism samples
    ``P(i) ~ exp(epsilon * u_i / (2 * sensitivity))`` (or ``epsilon * u_i / sensitivity``
    for monotone utilities).  It is also ``epsilon``-bounded-range and hence
    ``epsilon^2 / 8``-zCDP (Cesar & Rogers 2021).
    """

    epsilon: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("Exponential", "epsilon", self.epsilon))


@dataclasses.dataclass(frozen=True)
class Snapping(DpEvent):
    """Snapping mechanism (Mironov 2012) with its corrected pure-DP ``epsilon``.

    Accountants treat it exactly like :class:`Epsilon`.
    """

    epsilon: float

    def __post_init__(self) -> None:
        _set(self, "epsilon", _nonneg_finite("Snapping", "epsilon", self.epsilon))


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
        r = _real("PoissonSampled", "rate", self.rate)
        if not (0.0 <= r <= 1.0):
            raise ValueError(f"PoissonSampled: rate must lie in [0, 1], got {r!r}")
        _set(self, "rate", r)


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


_TYPES: dict[str, type[DpEvent]] = {
    cls.__name__: cls
    for cls in (
        Epsilon, EpsilonDelta, Zcdp, Laplace, Gaussian, DiscreteLaplace, DiscreteGaussian,
        RandomizedResponse, Exponential, Snapping, PoissonSampled,
        SampledWithoutReplacement, Composed, SelfComposed,
    )
}


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
