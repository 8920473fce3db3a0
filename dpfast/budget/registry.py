"""Which filter serves which ``accounting`` name.

**Where to add a filter:** write its class (a :class:`~dpfast.budget.filters.Filter`
subclass, in its own module of this package) and add one line to :data:`FILTERS`.
"""

from __future__ import annotations

from typing import Any

from .advanced import AdvancedFilter
from .filters import BasicFilter, Filter
from .mixed import MixedFilter
from .rdp import RdpFilter
from .zcdp import ZcdpFilter

__all__ = ["FILTERS", "make_filter"]

#: accounting name -> filter class; ``orders`` is passed to classes that take them.
FILTERS: dict[str, type[Filter]] = {
    "rdp": RdpFilter,
    "zcdp": ZcdpFilter,
    "basic": BasicFilter,
    "advanced": AdvancedFilter,
    "mixed": MixedFilter,
}

def make_filter(accounting: Any, epsilon: Any, delta: Any, orders: Any = None) -> Filter:
    """The filter of a budget definition (``orders`` only for filters that take them)."""
    cls = FILTERS.get(accounting) if isinstance(accounting, str) else None
    if cls is None:
        raise ValueError(f"accounting must be one of {tuple(FILTERS)}, got {accounting!r}")
    if cls.takes_orders:
        return cls(float(epsilon), float(delta), orders)  # type: ignore[call-arg]
    return cls(float(epsilon), float(delta))


