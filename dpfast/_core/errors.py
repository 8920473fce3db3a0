"""Exception types of dpfast, one per kind of failure (standard library only)."""

from __future__ import annotations

__all__ = ["UnsupportedEventError", "NeighbouringRelationError", "ReleaseFailedError",
           "RELEASE_FAILED"]


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


class ReleaseFailedError(RuntimeError):
    """A release that was charged failed while it read the private rows or computed.

    The message is fixed (:data:`RELEASE_FAILED`): whatever went wrong after the charge --
    an engine's error whose text holds private values, a check on the real rows -- could
    depend on the data, so neither its message, its type nor a value, a row count or a
    traceback of it reaches the caller (no ``__cause__``, no ``__context__``).  The charge
    stands (no refund) and the ledger records it as ``failed`` with the same fixed text.
    Errors that follow from public information (the query, parameters, column types) are
    raised *before* the charge, as ``ValueError`` / ``TypeError`` naming what is wrong.
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(RELEASE_FAILED)


#: the one message of :class:`ReleaseFailedError` (it holds nothing data-dependent)
RELEASE_FAILED = ("the release failed after its charge was recorded; the charge stands, the "
                  "ledger records it as failed, and the reason is not reported (it could "
                  "depend on the private rows)")
