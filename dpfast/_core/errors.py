"""Exception types of dpfast, one per kind of failure (standard library only)."""

from __future__ import annotations

__all__ = ["UnsupportedEventError", "NeighbouringRelationError"]


class UnsupportedEventError(ValueError):
    """An accountant cannot account for an event (it has no bound of that accountant's kind).

    Raised by every accountant's ``compose`` (nothing is composed then) and by the
    conversion functions (``approx_dp``, ``zcdp_rho``, ``rdp_epsilons``).  A subclass of
    ``ValueError``, so code that caught ``ValueError`` keeps working.
    """


class NeighbouringRelationError(ValueError):
    """Events (or an event and an accountant) state incompatible neighbouring relations.

    Raised where no valid conversion exists: for example a replace-one event composed into
    an accountant fixed to add/remove-one without a group-privacy conversion.
    """
