"""The budget's records and exceptions: :class:`Cost`, :class:`Remaining`, :class:`Charge`,
:class:`BudgetExceededError`, :class:`LedgerError`, and the JSON form of events."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

from dpfast.accounting import events as _events

__all__ = [
    "BudgetExceededError",
    "Charge",
    "Cost",
    "LedgerError",
    "Remaining",
    "serialize_event",
    "deserialize_event",
]

#: ``Charge.status`` values.
CHARGED = "charged"
FAILED = "failed"
REFUSED = "refused"
#: row kinds of format 3 that are not charges (see :mod:`dpfast.budget.schema`)
ANALYST = "analyst"
STORED = "stored"
HIT = "hit"


class LedgerError(ValueError):
    """A ledger file cannot be used: not SQLite, not a dpfast ledger, damaged, tampered
    with (its hash chain is broken), behind its anchor (committed charges lost), of an
    unknown format version, another user's or writable by other users, not a regular
    file, in a directory others can write, or locked for longer than the timeout.

    The message names the ledger path.  dpfast never overwrites, repairs or
    re-initialises a file that raised this error.
    """


class BudgetExceededError(Exception):
    """A charge was refused because it would exceed the privacy budget.

    No noise was drawn.  The refusal is recorded in the ledger's audit log
    (``status="refused"``, never counted against the budget).

    Attributes
    ----------
    event : object
        The event whose charge was refused.
    cost : Cost
        What the event would have cost, in the budget's terms.
    remaining : Remaining
        The budget remaining at the moment of the refusal.
    ledger : str or None
        Path of the ledger, or None for an in-memory budget.
    detail : str
        The accounting's own figures (RDP per order, zCDP rho...); the message speaks
        in ``(epsilon, delta)``.
    """

    def __init__(
        self,
        message: str,
        event: Any = None,
        cost: Cost | None = None,
        remaining: Remaining | None = None,
        ledger: str | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.event = event
        self.cost = cost
        self.remaining = remaining
        self.ledger = ledger
        self.detail = detail

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.event, self.cost, self.remaining, self.ledger,
                             self.detail))


@dataclasses.dataclass(frozen=True)
class Cost:
    """A cost: of one charge (:attr:`Charge.cost`) or of all charges so far
    (:meth:`Budget.spent`).

    Attributes
    ----------
    epsilon, delta : float or None
        ``(epsilon, delta)``-DP.  Per charge, in every mode: the event's own guarantee
        where it has one (pure or approximate DP), else the accounting's figures (RDP
        curve, zCDP rho) converted at the budget's delta, rounded up (``inf``: no
        bound).  From
        :meth:`Budget.spent`: in every mode, the ``(epsilon, delta)`` that the
        accounting certifies for the accepted charges now (rounded up).
    rho : float or None
        ``accounting="zcdp"``: the zCDP parameter.
    orders, rdp : tuple of float or None
        ``accounting="rdp"``: the orders of the filter (``inf`` is the pure-DP
        member) and the RDP epsilon at each (``inf`` where there is no bound).
    """

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    orders: tuple[float, ...] | None = None
    rdp: tuple[float, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Remaining:
    """What is left of a budget, in the same units whatever the accounting.

    See :meth:`Budget.remaining`.

    Attributes
    ----------
    accounting : str
        ``"basic"``, ``"advanced"``, ``"zcdp"`` or ``"rdp"``.
    epsilon : float
        The largest ``epsilon'`` such that a next charge of
        ``events.Epsilon(epsilon')`` (any ``epsilon'``-DP release) is accepted.
        Exact with respect to the filter's own decision: a charge of
        ``Epsilon(epsilon)`` fits, ``Epsilon(nextafter(epsilon, inf))`` does not.
    delta : float
        ``basic``: the delta left for ``(epsilon, delta)`` charges.  Other modes:
        the budget's delta (spent as a whole by the filter, not per charge;
        ``advanced``: the share left for the charges' own deltas).
    sigma : float
        The smallest noise multiplier (``sigma / L2 sensitivity``) of a next
        Gaussian release (``events.Gaussian(sigma)``) that is accepted; ``inf``
        when none is (``basic`` and ``advanced`` cannot charge a Gaussian).
    rho : float or None
        The zCDP parameter of that Gaussian, ``1 / (2 sigma**2)`` rounded down
        (``zcdp``: exactly the rho left); None where no Gaussian fits.
    orders, rdp : tuple of float or None
        ``rdp``: the filter's orders and, per order, the RDP budget left
        (rounded down; negative: exhausted; ``-inf``: a dead order, or one charged
        an event without a bound there; see :class:`~dpfast.budget.RdpFilter`).
    exhausted : bool
        True when no charge of positive cost fits any more.
    """

    accounting: str
    epsilon: float
    delta: float
    rho: float | None = None
    orders: tuple[float, ...] | None = None
    rdp: tuple[float, ...] | None = None
    exhausted: bool = False
    sigma: float = float("inf")


@dataclasses.dataclass(frozen=True)
class Charge:
    """One record of the audit log.

    Attributes
    ----------
    id : int
        Position in the ledger (1, 2, ...; never reused).
    time : datetime.datetime
        When the record was committed (UTC, timezone-aware).
    analyst, note : str
        Free text given to :meth:`Budget.spend` / :meth:`Budget.release`.
    event : DpEvent or None
        The event, rebuilt from ``event_json`` (None if this version of dpfast
        cannot rebuild it; ``event_json`` is kept).
    event_json : str
        The event as stored (:meth:`~dpfast.accounting.events.DpEvent.to_dict`).
    cost : Cost
        What the charge cost (or, refused, would have cost) in the budget's terms.
    status : str
        ``"charged"``: accepted and counted.  ``"failed"``: accepted and counted,
        but the release failed after the charge (see :meth:`Budget.charge`).
        ``"refused"``: refused, not counted.
    user, host : str
        Operating-system user and host name of the process that wrote the record
        (empty for records migrated from format 1).
    pid : int
        Its process id (0 for migrated records).
    query_id : str
        The query id the charge was made for (empty: none).
    """

    id: int
    time: datetime.datetime
    analyst: str
    note: str
    event: Any
    event_json: str
    cost: Cost
    status: str = CHARGED
    user: str = ""
    host: str = ""
    pid: int = 0
    query_id: str = ""


def serialize_event(event: Any) -> str:
    """JSON text of an event: :meth:`DpEvent.to_dict` (``{"type": ..., fields}``,
    nested events as nested objects); floats round-trip exactly."""
    if not isinstance(event, _events.DpEvent):
        raise TypeError(
            "event must be an event of dpfast.accounting.events (a DpEvent), "
            f"got {type(event).__name__}"
        )
    return json.dumps(event.to_dict(), separators=(",", ":"), allow_nan=True)


def deserialize_event(text: str) -> Any:
    """Rebuild an event from :func:`serialize_event` text (its validation runs)."""
    return _events.from_dict(json.loads(text))


def utc(t: float) -> datetime.datetime:
    """A POSIX time as an aware UTC datetime."""
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc)
