"""Releasing against a :class:`~dpfast.Budget`: :meth:`~dpfast.Budget.release` and the
charge point of every release, :meth:`~dpfast.Budget.charge` (charge, run the release,
record a failure after the charge as a ``failed`` row -- never a refund)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from . import _inputs
from .records import FAILED, Charge, LedgerError
from .sync import _LedgerSync, identity

if TYPE_CHECKING:
    from dpfast.random import RngLike

__all__ = ["Releasing"]


class Releasing:
    """The release methods of :class:`~dpfast.Budget` (a base class of it)."""

    _lock: threading.RLock
    _sync: _LedgerSync

    if TYPE_CHECKING:
        def spend(self, event: Any, *, note: str = "", analyst: str = "",
                  query_id: str = "") -> Charge: ...

    def release(
        self, mechanism: Any, x: Any, *, note: str = "", analyst: str = "", rng: RngLike = None,
        query_id: str = "",
    ) -> Any:
        """Validate ``x``, charge ``mechanism.event``, then return ``mechanism(x, rng=rng)``.

        Everything that can be checked without the noise is checked before the
        charge (the mechanism's ``validate(x, rng=None)`` if it has one; for
        dpfast's mechanisms the dtype, finiteness, range and ``rng``): bad input
        raises and costs nothing.  The charge is committed before the mechanism
        runs, so its noise is drawn only once it is paid for.  A failure after that
        (one that depends on the drawn noise, e.g. an ``OverflowError`` when
        ``x + noise`` leaves the dtype) keeps the charge -- the output may depend on
        the data -- and the ledger records it as failed (:attr:`Charge.status`).

        Raises
        ------
        BudgetExceededError
            The charge does not fit; the mechanism was not called.
        TypeError, ValueError
            Bad mechanism or input; nothing was charged.
        """
        try:
            event = mechanism.event
        except AttributeError:
            raise TypeError(
                f"mechanism must have an .event attribute, got {type(mechanism).__name__}"
            ) from None
        if not callable(mechanism):
            raise TypeError(f"mechanism must be callable, got {type(mechanism).__name__}")
        _inputs.validate_release(mechanism, x, rng)
        with self.charge(event, note=note, analyst=analyst, query_id=query_id):
            return mechanism(x, rng=rng)

    @contextlib.contextmanager
    def charge(self, event: Any, *, note: str = "", analyst: str = "",
               query_id: str = "") -> Iterator[Charge]:
        """Charge ``event`` (as :meth:`spend`, with its ``analyst`` and ``query_id``), then
        run the ``with`` block: the release.

        If the block raises -- any exception, ``KeyboardInterrupt`` included (a disk
        full while drawing noise, a cluster computation cancelled before the noise) --
        the ledger records the charge as failed (a ``"failed"`` row referring to it,
        shown by :meth:`history` and ``dpfast ledger show``) and the exception
        propagates.  The budget is **not** refunded: the failure may depend on the data
        or on noise already drawn.  A process killed outright (``SIGKILL``) leaves the
        charge counted without a failed row.

        Yields
        ------
        Charge
            The committed charge.

        Raises
        ------
        BudgetExceededError, TypeError, ValueError, LedgerError
            As :meth:`spend`; the block does not run.

        Examples
        --------
        >>> import dpfast as dp
        >>> from dpfast.accounting import events
        >>> budget = dp.Budget(epsilon=1.0)
        >>> with budget.charge(events.Epsilon(0.5), note="weekly counts") as charge:
        ...     pass                                  # draw the noise and publish here
        >>> charge.status, budget.remaining().epsilon
        ('charged', 0.5)
        """
        charge = self.spend(event, note=note, analyst=analyst, query_id=query_id)
        try:
            yield charge
        except BaseException as exc:
            self._record_failure(charge, exc)
            raise

    def _record_failure(self, charge: Charge, exc: BaseException) -> None:
        user, host, pid = identity()
        why = f"{type(exc).__name__}: {exc}"[:500]
        with self._lock:
            try:
                fields = [time.time(), charge.id, charge.analyst, why, charge.event_json,
                          "[]", user, host, pid, charge.query_id]
                self._sync.append(fields, lambda: FAILED)
            except (LedgerError, ValueError, RuntimeError):
                pass  # the charge stays counted; never mask the mechanism's error

