"""Choosing epsilon: the use-case ranges and published deployments, as data.

People who publish statistics rarely start from ``epsilon``; they ask "what do others in
my field use?" and "what did the Census use?".  This module holds the answers this project
follows, so the tools can say where a choice sits (:func:`placement`) and warn when a
release leaves its use case's range (:func:`check_use_case`, used by
``Budget(use_case=...)``, the release functions' ``use_case=`` and ``dpfast plan``).

The ranges are conventions from practice, *not* guarantees: an ``epsilon`` inside a range
is not "safe", one outside is not "unsafe".  The warning is a prompt to write down why.

>>> from dpfast import guidelines
>>> guidelines.use_case_range("healthcare")
(0.5, 2.0)
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

__all__ = [
    "UseCase",
    "Deployment",
    "USE_CASES",
    "DEPLOYMENTS",
    "use_case",
    "use_case_range",
    "check_use_case",
    "placement",
    "ZCDP_DELTA",
]

# Sources.
_GUIDANCE = (
    "the production deployment guidance this project follows (dpfast issue 16): ranges "
    "of total epsilon by use case, conventions from practice rather than theorems"
)
_CENSUS = (
    "US Census Bureau, 'Disclosure Avoidance for the 2020 Census: An Introduction' (2021) "
    "and the June 2021 privacy-loss budget allocation for the 2020 redistricting data "
    "(P.L. 94-171): persons 17.14 + housing units 2.47, zCDP converted at delta = 1e-10"
)
_APPLE = (
    "Apple Differential Privacy Team, 'Learning with Privacy at Scale', Apple Machine "
    "Learning Journal (2017), and Apple's 'Differential Privacy Overview' (2017)"
)
_RAPPOR = (
    "Erlingsson, Pihur, Korolova, 'RAPPOR: Randomized Aggregatable Privacy-Preserving "
    "Ordinal Response', CCS 2014"
)

#: delta at which a zCDP release's rho is converted to epsilon for the use-case checks
#: (the conversion the 2020 Census reported its total with).
ZCDP_DELTA = 1e-10


@dataclass(frozen=True)
class UseCase:
    """A use case and its conventional range of total ``epsilon``."""

    key: str
    name: str
    low: float
    high: float
    source: str = _GUIDANCE


@dataclass(frozen=True)
class Deployment:
    """A published deployment's ``epsilon`` (a range where the publisher gives one)."""

    name: str
    low: float
    high: float
    unit: str
    source: str

    def describe(self) -> str:
        eps = f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"
        return f"{self.name}: epsilon = {eps} ({self.unit})"


USE_CASES: dict[str, UseCase] = {
    u.key: u
    for u in (
        UseCase("government_statistics", "Government statistics", 0.1, 1.0),
        UseCase("healthcare", "Healthcare analytics", 0.5, 2.0),
        UseCase("location", "Location analytics", 1.0, 3.0),
        UseCase("product_analytics", "Product analytics", 1.0, 5.0),
        UseCase("ab_testing", "A/B testing", 2.0, 8.0),
        UseCase("public_reporting", "Public aggregate reporting", 0.5, 3.0),
    )
}

_ALIASES = {
    "government": "government_statistics",
    "official_statistics": "government_statistics",
    "healthcare_analytics": "healthcare",
    "health": "healthcare",
    "location_analytics": "location",
    "product": "product_analytics",
    "a/b_testing": "ab_testing",
    "a_b_testing": "ab_testing",
    "ab": "ab_testing",
    "public_aggregate_reporting": "public_reporting",
    "public": "public_reporting",
}

DEPLOYMENTS: tuple[Deployment, ...] = (
    Deployment("US Census 2020 (redistricting data)", 19.61, 19.61,
               "total, (epsilon, delta = 1e-10) from zCDP", _CENSUS),
    Deployment("Apple emoji suggestions", 4.0, 4.0, "local DP, per device per day", _APPLE),
    Deployment("Apple Safari telemetry", 8.0, 8.0, "local DP, per device per day", _APPLE),
    Deployment("Google RAPPOR (Chrome)", 2.0, 9.0, "local DP, per report and longitudinal",
               _RAPPOR),
)


def use_case(name: str) -> UseCase:
    """The :class:`UseCase` for ``name`` (case, spaces and hyphens ignored; aliases such
    as ``"healthcare analytics"`` or ``"A/B testing"`` accepted).

    Raises
    ------
    TypeError
        ``name`` is not a string.
    ValueError
        Unknown use case (the message lists the known ones).
    """
    if not isinstance(name, str):
        raise TypeError(f"use_case must be a string, got {type(name).__name__}")
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    key = _ALIASES.get(key, key)
    if key not in USE_CASES:
        raise ValueError(
            f"use_case must be one of {', '.join(USE_CASES)}, got {name!r}"
        )
    return USE_CASES[key]


def use_case_range(name: str) -> tuple[float, float]:
    """``(low, high)``: the conventional range of total ``epsilon`` for ``name``."""
    u = use_case(name)
    return (u.low, u.high)


def check_use_case(name: str | None, epsilon: float, *, what: str = "total epsilon",
                   stacklevel: int = 3) -> bool:
    """Warn (``UserWarning``, never an error) when ``epsilon`` leaves ``name``'s range.

    Returns True when ``epsilon`` lies in the range (or ``name`` is None).  ``name`` is
    validated (``ValueError`` for an unknown use case) so that a typo is not silently
    ignored.
    """
    if name is None:
        return True
    u = use_case(name)
    eps = float(epsilon)
    if math.isnan(eps):
        raise ValueError("epsilon must not be NaN")
    if u.low <= eps <= u.high:
        return True
    side = "above" if eps > u.high else "below"
    warnings.warn(
        f"{what} {eps:.4g} is {side} the range {u.low:g}-{u.high:g} conventional for "
        f"{u.name.lower()} (dpfast.guidelines); record why this choice is appropriate",
        UserWarning,
        stacklevel=stacklevel,
    )
    return False


def placement(epsilon: float, name: str | None = None) -> list[str]:
    """Lines saying where ``epsilon`` sits among the use-case ranges and deployments."""
    eps = float(epsilon)
    lines: list[str] = []
    if name is not None:
        u = use_case(name)
        if eps < u.low:
            where = f"below the {u.low:g}-{u.high:g} range"
        elif eps > u.high:
            where = f"above the {u.low:g}-{u.high:g} range"
        else:
            where = f"inside the {u.low:g}-{u.high:g} range"
        lines.append(f"{u.name}: {where}")
    inside = [u.name for u in USE_CASES.values() if u.low <= eps <= u.high]
    lines.append(
        "use cases whose range contains it: " + (", ".join(inside) if inside else "none")
    )
    for d in DEPLOYMENTS:
        if eps < d.low:
            rel = "below"
        elif eps > d.high:
            rel = "above"
        else:
            rel = "within"
        lines.append(f"{rel} {d.describe()}")
    return lines
