"""The :class:`Budget`: a privacy filter composed with a durable ledger, with locking and
process handling.  What a charge costs and whether it fits is the filter's business
(:mod:`.filters`, :mod:`.rdp`, :mod:`.advanced`); storage is the ledger's
(:mod:`.ledger`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from dpfast import guidelines

from . import ledger as _store
from . import schema
from ._definition import check_definition, stored_definition
from .analysts import Analysts
from .anchor import ledger_key as _ledger_key
from .audit import charges_of, describe
from .filters import Filter
from .queries import Queries
from .records import (
    CHARGED,
    REFUSED,
    Charge,
    Cost,
    Remaining,
    utc,
)
from .registry import FILTERS, make_filter
from .releasing import Releasing
from .sync import _LedgerSync, identity

if TYPE_CHECKING:
    pass

__all__ = ["Budget"]

class Budget(Releasing, Analysts, Queries):
    r"""A privacy budget: a privacy filter with a durable, hash-chained SQLite ledger.

    Parameters
    ----------
    epsilon : float
        Overall privacy-loss bound, finite and ``> 0``.
    delta : float, optional
        Overall failure probability in ``[0, 1)``.  Omitted (or 0): pure
        ``epsilon``-DP with basic composition (``accounting="basic"``);
        ``"rdp"``, ``"zcdp"`` and ``"advanced"`` need ``delta > 0``.
    ledger : str, os.PathLike or None, default None
        ``None`` keeps the ledger in memory (this process only).  A path names a
        SQLite file: created (atomically, mode 0600) if it does not exist,
        otherwise opened, verified and resumed.  A file that is not a usable
        dpfast ledger raises :class:`LedgerError` and is never modified.
    accounting : {"mixed", "rdp", "zcdp", "basic", "advanced"}, optional
        The filter (see *Privacy*); default ``"mixed"`` when ``delta > 0`` (it charges
        every release the library makes: pure, approximate (key selection, as in
        :mod:`dpfast.tables`) and Gaussian/zCDP events in one ledger), else ``"basic"``;
        reopening an existing ledger without ``accounting`` uses the ledger's own.  An
        explicit choice is kept: ``"rdp"`` and ``"zcdp"`` cannot charge an
        ``(epsilon, delta)`` event with ``delta > 0``, ``"basic"`` and ``"advanced"``
        cannot charge a Gaussian (the error names the accounting that can).
    orders : sequence of float, optional
        ``"rdp"`` and ``"mixed"`` only: the Renyi orders (``> 1``; ``inf`` is the
        pure-DP member); default :func:`~dpfast.budget.rdp.default_orders` (rdp) or
        :data:`~dpfast.budget.DEFAULT_ORDERS` plus the Gaussian-optimal order (mixed),
        or the stored orders when reopening a ledger.  Part of the ledger's definition.
    timeout : float, default 30.0
        Seconds to wait for the ledger's write lock before :class:`LedgerError`.
    use_case : str, optional
        A use case of :mod:`dpfast.guidelines` (e.g. ``"healthcare"``): a
        ``UserWarning`` (never an error) when ``epsilon`` leaves its conventional
        range.  Not part of the ledger's definition.
    ledger_key : str or bytes, optional
        The operator's secret key (at least 16 bytes) for the ledger's anchor and
        checkpoints (HMAC-SHA256); default: the environment variable
        ``DPFAST_LEDGER_KEY`` if set, else none (plain SHA-256).  Fixed when the ledger
        is created: a keyed ledger opens only with its key, an unkeyed one only without.
        Without the key, no one can rebuild the anchor of a rewritten ledger.

    Raises
    ------
    TypeError, ValueError
        Bad parameters (the message names the parameter); ValueError also when an
        ``"rdp"`` budget would be born exhausted.
    LedgerError
        The file is not a usable ledger, its hash chain is broken, it lost committed
        charges (it is behind its anchor: a damaged or lost ``-wal``, deleted rows),
        it was created for another definition, or its path breaks the rules of
        :mod:`dpfast.budget.paths` (another user's file, writable by others, not a
        regular file, a symbolic link loop, a directory others can write).  The same
        rules as ``dpfast ledger verify``.

    Notes
    -----
    :meth:`spend` is one atomic check-and-charge: in one SQLite ``BEGIN
    IMMEDIATE`` transaction it reads (and verifies) every row committed since, by
    any thread or process, checks the new charge, and appends it -- accepted or
    refused -- to the chain.  WAL with ``synchronous=FULL``: a charge that
    returned is durable across a power loss; it is also counted in the ledger's
    anchor (``<ledger>-anchor``, outside SQLite's WAL), so a charge lost later with
    the ``-wal`` (a flipped bit, a truncated or deleted file) makes the ledger
    refuse to open instead of refunding it.  Opening verifies the rows after the
    last checkpoint (one every 1024 rows), in one read snapshot.  :meth:`release`
    validates its input, then charges, then draws the noise: a crash after the
    commit loses budget, an output is never released uncharged.  Each process
    opens its own connection (a budget inherited through ``fork`` reconnects);
    threads share it under a lock.
    An in-memory budget belongs to its process: using it in a forked child, or
    pickling it, raises.  A file-backed budget pickles as "reopen this ledger".

    Privacy
    -------
    Let :math:`M_1, M_2, \dots` be the mechanisms whose events were charged, chosen
    *fully adaptively* (the mechanism and its privacy parameters may depend on all
    earlier outputs).  A refused charge releases nothing and its refusal is a
    function of earlier outputs.  For neighbouring datasets :math:`x \sim x'` (the
    relation the events are stated for; all charges to one budget must use the same
    one) the transcript of accepted outputs satisfies :math:`\Pr[T(x) \in S] \le
    e^{\varepsilon} \Pr[T(x') \in S] + \delta` for all :math:`S`.  The filter, by
    ``accounting``, with its proof in its docstring: ``"basic"``
    (:class:`~dpfast.budget.BasicFilter`), ``"zcdp"``
    (:class:`~dpfast.budget.ZcdpFilter`), ``"rdp"``
    (:class:`~dpfast.budget.RdpFilter`), ``"advanced"``
    (:class:`~dpfast.budget.AdvancedFilter`), ``"mixed"``
    (:class:`~dpfast.budget.MixedFilter`).  Analysts' sub-budgets (:meth:`analyst`)
    only add refusals; cache hits (:meth:`query`) are post-processing and cost
    nothing.

    Numerics
    --------
    Charges are summed exactly (integers in units of :math:`2^{-1074}`), and a
    float is the exact binary rational it encodes: ten charges of ``0.1`` exceed
    ``1.0`` because the double 0.1 is slightly above 1/10 (``0.25`` four times
    fits exactly).  Caps are evaluated at 200 bits and rounded down.

    Examples
    --------
    >>> import dpfast as dp
    >>> from dpfast.accounting import events
    >>> budget = dp.Budget(epsilon=1.0)            # no delta: pure DP, basic composition
    >>> charge = budget.spend(events.Epsilon(0.25), note="count", analyst="ana")
    >>> budget.remaining().epsilon
    0.75
    """

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        ledger: str | os.PathLike[str] | None = None,
        accounting: str | None = None,
        orders: Sequence[float] | None = None,
        timeout: float = 30.0,
        use_case: str | None = None,
        ledger_key: str | bytes | None = None,
    ) -> None:
        eps, dlt, accounting, tmo, path = check_definition(
            epsilon, delta, ledger, accounting, orders, timeout)
        key = _ledger_key(ledger_key) if path is not None else None
        self._explicit_key = ledger_key
        cls = FILTERS[accounting]
        guidelines.check_use_case(use_case, eps, what="budget epsilon", stacklevel=3)
        if cls.takes_orders and orders is None:
            orders = _store.stored_orders(path, accounting)
        self._filter = make_filter(accounting, eps, dlt, orders)
        self._ledger = _store.LedgerFile(path, self._filter.definition(), tmo, key)
        self._sync = _LedgerSync(self._filter, self._ledger)
        self._lock = self._sync.lock

    # -- public API ------------------------------------------------------------------

    @classmethod
    def from_ledger(cls, path: str | os.PathLike[str], *, timeout: float = 30.0,
                    ledger_key: str | bytes | None = None) -> Budget:
        """Reopen an existing ledger file with the definition stored in it.

        Raises
        ------
        LedgerError
            ``path`` is not a usable dpfast ledger (missing, damaged, tampered with).
        """
        p, d = stored_definition(path)
        return cls(d["epsilon"], d["delta"], ledger=p, accounting=d["accounting"],
                   orders=d.get("orders"), timeout=timeout, ledger_key=ledger_key)


    @property
    def epsilon(self) -> float:
        """The overall epsilon of the budget."""
        return self._filter.epsilon

    @property
    def delta(self) -> float:
        """The overall delta of the budget."""
        return self._filter.delta

    @property
    def accounting(self) -> str:
        """``"basic"``, ``"zcdp"``, ``"rdp"``, ``"advanced"`` or ``"mixed"``."""
        return self._filter.accounting

    @property
    def orders(self) -> tuple[float, ...] | None:
        """The Renyi orders of an ``"rdp"`` budget (None otherwise)."""
        return getattr(self._filter, "orders", None)

    @property
    def ledger(self) -> str | None:
        """The ledger path, or None for an in-memory budget."""
        return self._ledger.path

    @property
    def thresholds(self) -> tuple[float, ...]:
        """The filter's caps in its own units (rounded down; ``-inf``: a dead order)."""
        return self._filter.thresholds

    @property
    def filter(self) -> Filter:
        """The privacy filter (:class:`~dpfast.budget.Filter`)."""
        return self._filter

    def spend(self, event: Any, *, note: str = "", analyst: str = "",
              query_id: str = "") -> Charge:
        """Check that ``event`` fits the budget and charge it, atomically.

        Parameters
        ----------
        event : event of :mod:`dpfast.accounting.events`
            The guarantee of what is about to be released.
        note : str, optional
            Recorded in the audit log (with the OS user, host and pid).
        analyst : str, optional
            Who asks: recorded, and if the analyst has a sub-budget
            (:meth:`analyst`) the charge must fit it as well as the budget.
        query_id : str, optional
            The id of the question, recorded (see :meth:`query` for cached answers).

        Returns
        -------
        Charge
            The committed record (durable when this returns).

        Raises
        ------
        BudgetExceededError
            The charge does not fit the budget, or the analyst's sub-budget (the
            message says which); it is recorded as refused, not counted.
        TypeError, ValueError
            ``event`` is not an event, or this accounting cannot charge it
            (e.g. a Gaussian under ``"basic"``); nothing is recorded.
        NeighbouringRelationError
            The event states a neighbouring relation (add/remove-one or
            replace-one) other than the one of the budget's earlier charges (the
            first charge that states one fixes it); nothing is recorded.
        LedgerError
            The ledger could not be read or written; nothing was recorded (or, the
            message says so, the charge was committed but its anchor could not be
            written: it counts).
        """
        event_json, rels, costs = self._prepare(event, note, analyst, query_id)
        user, host, pid = identity()
        now = time.time()
        verdict: list[str | None] = [None]

        def decide() -> str:
            status, verdict[0] = self._verdict(event, costs, rels, analyst)
            return status

        with self._lock:
            fields = [now, None, analyst, note, event_json, schema.encode_cost(costs),
                      user, host, pid, query_id]
            row = self._sync.append(fields, decide, costs, rels)
            if row.status == REFUSED:
                raise self._refusal(event, costs, analyst, verdict[0])
        return Charge(row.id, utc(now), analyst, note, event, event_json,
                      self._filter.cost_record(costs), CHARGED, user, host, pid, query_id)

    def remaining(self) -> Remaining:
        """The budget left, in the same units whatever the accounting (:class:`Remaining`):
        ``epsilon``, the largest epsilon of a next pure-DP release that fits, and
        ``sigma``/``rho``, the smallest noise multiplier (largest rho) of a next
        Gaussian release that fits, plus the accounting's own figures."""
        with self._lock:
            self._sync.read("cannot read the ledger")
            return self._filter.remaining(self._sync.state)

    def spent(self) -> Cost:
        """What the accepted charges cost so far: ``epsilon``/``delta`` in every mode,
        the ``(epsilon, delta)``-DP the accounting certifies for them (as a fixed
        sequence; whatever happens, the whole interaction is within the budget's
        ``(epsilon, delta)``), plus the accounting's totals (rounded up)."""
        with self._lock:
            self._sync.read("cannot read the ledger")
            return self._filter.spent(self._sync.state)

    def history(self, *, include_refused: bool = False) -> list[Charge]:
        """The audit log, oldest first: accepted charges (``status`` ``"charged"``, or
        ``"failed"`` when the release failed after the charge, see :meth:`charge`), and with
        ``include_refused=True`` the refused ones too."""
        with self._lock:
            conn = self._sync.read("cannot read the ledger")
            rows = [schema.Row(*r) for r in conn.execute(
                f"SELECT {schema.select_columns(conn)} FROM charges ORDER BY id").fetchall()]
        return charges_of(rows, self._filter, include_refused=include_refused)

    def close(self) -> None:
        """Close this process's connection to the ledger; a closed budget refuses
        further use (closing an in-memory budget discards it)."""
        with self._lock:
            self._sync.close()

    def __enter__(self) -> Budget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        sync = getattr(self, "_sync", None)
        if sync is not None:
            sync.dispose()

    def __reduce__(self) -> tuple[Callable[..., Budget], tuple[Any, ...]]:
        if self._ledger.path is None:
            raise TypeError(
                "an in-memory Budget cannot be pickled: the copy would be a second, "
                "independent budget. Use Budget(..., ledger=path) to share it."
            )
        # the key travels only if it was passed explicitly (else the environment's is used)
        return (_reopen, (self.epsilon, self.delta, os.path.abspath(self._ledger.path),
                          self.accounting, self.orders, self._ledger.timeout,
                          self._explicit_key))

    def plot(self, *, ax: Any = None) -> Any:
        """Plot the epsilon spent over time from the ledger: after each accepted charge,
        the ``(epsilon, delta)`` the accounting certifies for the charges so far (at the
        budget's delta, as :meth:`spent` said then), one step curve for the budget and one
        per analyst when charges name analysts, against the budget's epsilon (a
        horizontal line; sub-budgets dotted), refused charges marked, dates on the time
        axis; returns the matplotlib Axes.  Needs matplotlib (``pip install
        'dpfast[plot]'``); ``dpfast ledger plot FILE -o spend.png`` draws the same."""
        from dpfast.budget.plot import plot_spending

        where = "memory" if self._ledger.path is None else os.path.basename(self._ledger.path)
        with self._lock:
            conn = self._sync.read("cannot read the ledger")
            rows = [schema.Row(*r) for r in conn.execute(
                f"SELECT {schema.select_columns(conn)} FROM charges ORDER BY id").fetchall()]
        return plot_spending(self._filter, rows, ax=ax,
                             title=f"privacy budget spent over time ({where})")

    def _repr_html_(self) -> str:
        """Jupyter's view: definition, spent, what is left, the last charges."""
        from dpfast.budget.plot import budget_html

        return budget_html(self)

    def __repr__(self) -> str:
        where = "memory" if self._ledger.path is None else repr(self._ledger.path)
        head = (f"Budget(epsilon={self.epsilon!r}, delta={self.delta!r}, "
                f"accounting={self.accounting!r}, ledger={where})")
        if self._sync.closed:
            return head + " [closed]"
        try:
            return f"{head}: {describe(self.spent(), self.remaining())}"
        except Exception:  # a repr never raises (damaged ledger, other process)
            return head


def _reopen(epsilon: float, delta: float, path: str, accounting: str,
            orders: tuple[float, ...] | None, timeout: float,
            ledger_key: str | bytes | None = None) -> Budget:
    return Budget(epsilon, delta, ledger=path, accounting=accounting, orders=orders,
                  timeout=timeout, ledger_key=ledger_key)
