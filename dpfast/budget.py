"""Privacy budget with a durable, concurrent ledger.

A :class:`Budget` is a *privacy filter*: it admits a sequence of charges, each
described by an event of :mod:`dpfast.accounting.events`, for as long as the
whole (fully adaptive) sequence stays within an overall ``(epsilon, delta)``
guarantee, and refuses (:class:`BudgetExceededError`) the first charge that
would not.  Every accepted charge is written to a ledger -- an in-memory or
on-disk SQLite database -- which is also the audit log (who, what, when, cost).

The check and the charge are one atomic step (``BEGIN IMMEDIATE`` on the
ledger), taken *before* any noise is drawn: :meth:`Budget.release` charges and
only then calls the mechanism, so a crash between the two loses budget and
never releases an uncharged output.  An on-disk ledger is safe to share between
threads and between processes, and reopening it resumes its remaining budget.
"""

from __future__ import annotations

import dataclasses
import datetime
import fractions
import json
import math
import numbers
import os
import pathlib
import secrets
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import mpmath

from dpfast.accounting import events as _events

__all__ = [
    "Budget",
    "BudgetExceededError",
    "Charge",
    "Cost",
    "LedgerError",
    "Remaining",
    "DEFAULT_ORDERS",
]

#: Renyi orders of the default RDP filter.  The filter splits ``delta`` evenly
#: across its orders (see :class:`Budget`), so the grid is deliberately short:
#: each extra order costs ``log(m) / (alpha - 1)`` of every order's budget.
DEFAULT_ORDERS: tuple[float, ...] = (
    1.5, 1.75, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0,
    32.0, 48.0, 64.0, 96.0, 128.0, 256.0,
)

_ACCOUNTINGS = ("basic", "zcdp", "rdp")

# SQLite file identification: PRAGMA application_id = 'dpLg', meta format/version.
_APPLICATION_ID = 0x64704C67
_FORMAT = "dpfast-ledger"
_FORMAT_VERSION = 1
_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = (
    """CREATE TABLE meta (
        key   TEXT PRIMARY KEY NOT NULL,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE charges (
        id      INTEGER PRIMARY KEY AUTOINCREMENT,
        time    REAL NOT NULL,
        analyst TEXT NOT NULL,
        note    TEXT NOT NULL,
        event   TEXT NOT NULL,
        epsilon REAL,
        delta   REAL,
        rho     REAL,
        rdp     TEXT
    )""",
    # The ledger is an append-only audit log.
    """CREATE TRIGGER charges_no_update BEFORE UPDATE ON charges
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
    """CREATE TRIGGER charges_no_delete BEFORE DELETE ON charges
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger is append-only'); END""",
    """CREATE TRIGGER meta_no_update BEFORE UPDATE ON meta
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger definition is immutable'); END""",
    """CREATE TRIGGER meta_no_delete BEFORE DELETE ON meta
       BEGIN SELECT RAISE(ABORT, 'the dpfast ledger definition is immutable'); END""",
)


# ---------------------------------------------------------------------------
# exceptions and records
# ---------------------------------------------------------------------------


class LedgerError(ValueError):
    """A ledger file cannot be used: not SQLite, not a dpfast ledger, damaged,
    of an unknown format version, or locked for longer than the timeout.

    The message names the ledger path.  dpfast never overwrites, repairs or
    re-initialises a file that raised this error.
    """


class BudgetExceededError(Exception):
    """A charge was refused because it would exceed the privacy budget.

    Nothing was recorded and no noise was drawn.

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
    """

    def __init__(
        self,
        message: str,
        event: Any = None,
        cost: Cost | None = None,
        remaining: Remaining | None = None,
        ledger: str | None = None,
    ) -> None:
        super().__init__(message)
        self.event = event
        self.cost = cost
        self.remaining = remaining
        self.ledger = ledger

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.event, self.cost, self.remaining, self.ledger))


@dataclasses.dataclass(frozen=True)
class Cost:
    """The cost of one charge, in the terms of the budget's accounting.

    Attributes
    ----------
    epsilon, delta : float or None
        ``accounting="basic"``: the event's ``(epsilon, delta)``-DP guarantee.
    rho : float or None
        ``accounting="zcdp"``: the event's zCDP parameter.
    orders, rdp : tuple of float or None
        ``accounting="rdp"``: the event's RDP epsilon at each order
        (``inf`` where it has no RDP bound of that order).
    """

    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    orders: tuple[float, ...] | None = None
    rdp: tuple[float, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Remaining:
    """What is left of a budget.  See :meth:`Budget.remaining`.

    Attributes
    ----------
    accounting : str
        ``"basic"``, ``"zcdp"`` or ``"rdp"``.
    epsilon : float
        The largest ``epsilon'`` such that a charge for *any* ``epsilon'``-DP
        mechanism still fits (rounded down; up to the accountant's own upward
        rounding of that mechanism's cost).  ``basic``: the epsilon left.
        ``zcdp``: ``sqrt(2 * rho)`` since ``epsilon'``-DP implies
        ``epsilon'**2 / 2``-zCDP.  ``rdp``: the largest per-order remainder,
        since ``epsilon'``-DP implies ``(alpha, epsilon')``-RDP at every order.
    delta : float
        ``basic``: the delta left.  ``zcdp``/``rdp``: the budget's delta (the
        filter's overall delta, spent as a whole at the end, not per charge).
    rho : float or None
        ``zcdp``: the zCDP budget left (rounded down).
    orders, rdp : tuple of float or None
        ``rdp``: the orders and, per order, the RDP budget left,
        ``B_alpha - sum of charges`` (rounded down).  A non-positive entry
        means that order is exhausted; ``-inf`` means a charge had no RDP
        bound at that order.
    exhausted : bool
        True when no charge of positive cost can fit any more.
    """

    accounting: str
    epsilon: float
    delta: float
    rho: float | None = None
    orders: tuple[float, ...] | None = None
    rdp: tuple[float, ...] | None = None
    exhausted: bool = False


@dataclasses.dataclass(frozen=True)
class Charge:
    """One accepted charge: a record of the audit log.

    Attributes
    ----------
    id : int
        Position in the ledger (increasing, never reused).
    time : datetime.datetime
        When the charge was committed (UTC, timezone-aware).
    analyst, note : str
        Free text given to :meth:`Budget.spend` / :meth:`Budget.release`.
    event : DpEvent or None
        The event, reconstructed from ``event_json`` with
        :func:`dpfast.accounting.events.from_dict` (None only if this version
        of dpfast cannot reconstruct it; ``event_json`` is kept).
    event_json : str
        The event as stored: ``{"type": <class name>, <field>: <value>, ...}``
        (:meth:`~dpfast.accounting.events.DpEvent.to_dict`), nested events as
        nested objects.
    cost : Cost
        What the charge cost in the budget's terms.
    """

    id: int
    time: datetime.datetime
    analyst: str
    note: str
    event: Any
    event_json: str
    cost: Cost


# ---------------------------------------------------------------------------
# event (de)serialization
# ---------------------------------------------------------------------------


def _serialize_event(event: Any) -> str:
    """JSON text of an event: :meth:`DpEvent.to_dict` (``{"type": ..., fields}``,
    nested events as nested objects); floats round-trip exactly."""
    if not isinstance(event, _events.DpEvent):
        raise TypeError(
            "event must be an event of dpfast.accounting.events (a DpEvent), "
            f"got {type(event).__name__}"
        )
    return json.dumps(event.to_dict(), separators=(",", ":"), allow_nan=True)


def _deserialize_event(text: str) -> Any:
    """Rebuild an event from :func:`_serialize_event` text (its validation runs)."""
    return _events.from_dict(json.loads(text))


# ---------------------------------------------------------------------------
# exact arithmetic helpers
# ---------------------------------------------------------------------------

# Every finite double is an integer multiple of 2**-1074: sums of doubles are
# kept exactly as Python ints in units of 2**-1074.
_UNIT_EXP = 1074


def _exact(x: float) -> int:
    """``x`` (finite) as an exact integer multiple of ``2**-1074``."""
    num, den = x.as_integer_ratio()
    return num << (_UNIT_EXP + 1 - den.bit_length())


def _float_down(n: int) -> float:
    """Largest double ``<=`` the exact value ``n * 2**-1074``."""
    try:
        f = n / (1 << _UNIT_EXP)  # correctly rounded int/int division
    except OverflowError:
        return sys.float_info.max if n > 0 else -math.inf
    if _exact(f) > n:
        f = math.nextafter(f, -math.inf)
    return f


def _mp_float_down(value: mpmath.mpf) -> float:
    """A double certainly ``<=`` the real number approximated by ``value``.

    ``value`` is computed at 200 bits; a relative margin of ``2**-150`` covers
    its error, then the conversion is rounded down.
    """
    with mpmath.workprec(200):
        safe = value - abs(value) * mpmath.mpf(2) ** -150 - mpmath.mpf(2) ** -1100
        f = float(safe)
        if mpmath.mpf(f) > safe:
            f = math.nextafter(f, -math.inf)
    return f


def _rdp_threshold(epsilon: float, delta: mpmath.mpf, alpha: float) -> mpmath.mpf:
    """``B`` with ``(alpha, B)``-RDP => ``(epsilon, delta)``-DP (CKS20 Prop. 12).

    ``B = epsilon + (log(delta) + log(alpha)) / (alpha - 1) - log(1 - 1/alpha)``,
    at 200 bits (``delta`` may be an mpf, e.g. ``delta / m``).
    """
    with mpmath.workprec(200):
        a = mpmath.mpf(alpha)
        return (
            mpmath.mpf(epsilon)
            + (mpmath.log(mpmath.mpf(delta)) + mpmath.log(a)) / (a - 1)
            - mpmath.log(1 - 1 / a)
        )


def _rdp_thresholds(epsilon: float, delta: float, orders: Sequence[float]) -> tuple[float, ...]:
    """Per-order caps ``B_alpha`` with ``delta`` split evenly, rounded down."""
    with mpmath.workprec(200):
        share = mpmath.mpf(delta) / len(orders)
        return tuple(_mp_float_down(_rdp_threshold(epsilon, share, a)) for a in orders)


def _zcdp_threshold(epsilon: float, delta: float) -> tuple[float, float]:
    """Largest certified ``rho`` with ``rho``-zCDP => ``(epsilon, delta)``-DP.

    ``rho``-zCDP is ``(alpha, alpha*rho)``-RDP at every order, so by CKS20
    Prop. 12 any ``alpha > 1`` certifies ``rho = B_alpha(epsilon, delta)/alpha``
    (this is CKS20 Cor. 13 solved for ``rho``).  The best ``alpha`` is found in
    floating point; the value at that ``alpha`` is then evaluated at 200 bits
    and rounded down, so the result is valid whatever ``alpha`` was found.
    Returns ``(rho, alpha)``.
    """

    def f(u: float) -> float:  # -B_alpha/alpha at alpha = 1 + exp(u), floats
        a = 1.0 + math.exp(u)
        b = epsilon + (math.log(delta) + math.log(a)) / (a - 1.0) - math.log1p(-1.0 / a)
        return -b / a

    # coarse scan, then golden-section refinement around the best point
    grid = [-12.0 + 0.01 * i for i in range(5601)]  # alpha - 1 in [6e-6, 2.6e19]
    vals = [f(u) for u in grid]
    i = min(range(len(grid)), key=vals.__getitem__)
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    for _ in range(80):
        if f(c) < f(d):
            hi = d
        else:
            lo = c
        c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    alpha = 1.0 + math.exp((lo + hi) / 2.0)
    with mpmath.workprec(200):
        rho = _mp_float_down(_rdp_threshold(epsilon, delta, alpha) / mpmath.mpf(alpha))
    return rho, alpha


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    out = float(value)
    if math.isnan(out):
        raise ValueError(f"{name} must not be NaN")
    return out


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    return value


def _canonical_definition(
    epsilon: float, delta: float, accounting: str, orders: tuple[float, ...] | None
) -> dict[str, Any]:
    return {
        "epsilon": epsilon,
        "delta": delta,
        "accounting": accounting,
        "orders": list(orders) if orders is not None else None,
    }


# ---------------------------------------------------------------------------
# SQLite ledger
# ---------------------------------------------------------------------------


def _connect(target: str, timeout: float, *, uri: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(
        target,
        timeout=timeout,
        isolation_level=None,  # explicit BEGIN IMMEDIATE / COMMIT
        check_same_thread=False,  # guarded by the Budget's lock
        uri=uri,
    )
    return conn


def _init_schema(conn: sqlite3.Connection, definition: dict[str, Any]) -> None:
    conn.execute(f"PRAGMA application_id = {_APPLICATION_ID}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("format", _FORMAT),
                ("version", str(_FORMAT_VERSION)),
                ("definition", json.dumps(definition, sort_keys=True)),
                ("created", datetime.datetime.now(datetime.timezone.utc).isoformat()),
            ],
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _create_ledger_file(path: str, definition: dict[str, Any], timeout: float) -> None:
    """Create a fully initialised ledger at ``path`` unless a file is there.

    The ledger is built in a temporary file of the same directory and published
    with ``os.link``, which fails if ``path`` exists: a ledger file that exists
    is therefore always complete, concurrent creators cannot clobber each other,
    and an existing file is never overwritten.
    """
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(
        directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(6)}.init"
    )
    try:
        conn = _connect(tmp, timeout, uri=False)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            _init_schema(conn, definition)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            return  # someone else created it first; it is opened and checked
        except OSError:
            # No hard links on this file system: exclusive create and copy.
            with open(tmp, "rb") as src:
                data = src.read()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileExistsError:
                return
            with os.fdopen(fd, "wb") as dst:
                dst.write(data)
                dst.flush()
                os.fsync(dst.fileno())
        _fsync_dir(directory)
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.remove(tmp + suffix)
            except FileNotFoundError:
                pass


def _open_ledger_file(
    path: str,
    definition: dict[str, Any],
    timeout: float,
    read_charges: Callable[[sqlite3.Connection], None],
) -> sqlite3.Connection:
    """Open an existing ledger: validate it read-only, then connect read-write.

    Nothing is written to a file before it has been recognised as a dpfast
    ledger of the same definition and ``read_charges`` has read its charges
    (a read-only connection cannot replay a foreign journal into a file that
    is not ours, nor write to a damaged one).
    """
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except IsADirectoryError:
        raise LedgerError(f"ledger path {path!r} is a directory") from None
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {path!r}: {exc}") from exc
    if len(header) < 100 or not header.startswith(_SQLITE_MAGIC):
        what = "empty" if not header else "not a SQLite database"
        raise LedgerError(
            f"ledger {path!r} is {what}: it is not a dpfast ledger, or it is damaged. "
            "The file was left untouched; move it away or pass another path."
        )
    uri = pathlib.Path(path).absolute().as_uri()
    try:
        ro = _connect(uri + "?mode=ro", timeout, uri=True)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {path!r}: {exc}") from exc
    try:
        _check_ledger(ro, path, definition)
        try:
            read_charges(ro)
        except sqlite3.Error as exc:
            raise LedgerError(
                f"ledger {path!r} is damaged ({exc}); it was left untouched."
            ) from exc
    finally:
        ro.close()
    try:
        conn = _connect(uri + "?mode=rw", timeout, uri=True)
        try:
            (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
            if str(mode).lower() != "wal":
                try:
                    conn.execute("PRAGMA journal_mode = WAL")
                except sqlite3.OperationalError:
                    pass  # busy: rollback-journal mode is also safe, only slower
            conn.execute("PRAGMA synchronous = FULL")
        except BaseException:
            conn.close()
            raise
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {path!r}: {exc}") from exc
    return conn


def _check_ledger(conn: sqlite3.Connection, path: str, definition: dict[str, Any]) -> None:
    try:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        tables = {
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if app_id != _APPLICATION_ID or not {"meta", "charges"} <= tables:
            raise LedgerError(
                f"{path!r} is a SQLite database but not a dpfast ledger; "
                "it was left untouched."
            )
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        raise LedgerError(
            f"ledger {path!r} is damaged or not a SQLite database ({exc}); "
            "it was left untouched."
        ) from exc
    if meta.get("format") != _FORMAT or "version" not in meta or "definition" not in meta:
        raise LedgerError(f"ledger {path!r} has no valid dpfast metadata; it was left untouched.")
    try:
        version = int(meta["version"])
        stored = json.loads(meta["definition"])
    except ValueError as exc:
        raise LedgerError(f"ledger {path!r} has damaged metadata ({exc})") from exc
    if version != _FORMAT_VERSION:
        raise LedgerError(
            f"ledger {path!r} has format version {version}; this dpfast reads "
            f"version {_FORMAT_VERSION}"
        )
    if stored != definition:
        raise ValueError(
            f"ledger {path!r} was created for the budget {json.dumps(stored, sort_keys=True)}, "
            f"not {json.dumps(definition, sort_keys=True)}; "
            "a ledger's budget definition cannot change (open it with the stored "
            "definition, or start a new ledger)"
        )


# ---------------------------------------------------------------------------
# Budget
# ---------------------------------------------------------------------------


class Budget:
    r"""A privacy budget: a privacy filter with a durable SQLite ledger.

    Parameters
    ----------
    epsilon : float
        Overall privacy-loss bound, finite and ``> 0``.
    delta : float, default 0.0
        Overall failure probability, in ``[0, 1)``; must be ``> 0`` for
        ``accounting="zcdp"`` and ``"rdp"`` (they cannot give pure DP).
    ledger : str, os.PathLike or None, default None
        ``None`` keeps the ledger in memory (this process only).  A path
        names a SQLite file: created (atomically) if it does not exist,
        otherwise opened, checked and resumed.  A file that is not a dpfast
        ledger raises :class:`LedgerError` and is never modified.
    accounting : {"rdp", "zcdp", "basic"}, default "rdp"
        How charges are measured and composed; see *Privacy*.
    orders : sequence of float, optional
        ``accounting="rdp"`` only: the Renyi orders (each ``> 1``, finite) of
        the filter; default :data:`DEFAULT_ORDERS`.  Part of the ledger's
        definition.
    timeout : float, default 30.0
        Seconds to wait for the ledger's write lock before raising
        :class:`LedgerError`.

    Attributes
    ----------
    epsilon, delta, accounting, orders, ledger
        The definition (``ledger`` is the path, or None).
    thresholds : tuple of float
        The filter's caps, in the accounting's own units: ``(epsilon, delta)``
        for basic, ``(rho_budget,)`` for zcdp, ``(B_alpha, ...)`` per order for
        rdp (all rounded down).

    Raises
    ------
    TypeError, ValueError
        Bad parameters (the message names the parameter).  ValueError also
        when ``ledger`` holds a ledger of a different definition.
    LedgerError
        ``ledger`` names a file that is not a usable dpfast ledger.

    See Also
    --------
    dpfast.accounting.RdpAccountant : offline accounting of a fixed sequence.

    Notes
    -----
    :meth:`spend` is one atomic check-and-charge: in one SQLite
    ``BEGIN IMMEDIATE`` transaction it reads every charge committed so far (by
    any thread or process), checks that the new charge fits, and inserts it.
    The ledger uses WAL mode with ``synchronous=FULL``, so a charge that
    :meth:`spend` returned is durable even across a power loss.
    :meth:`release` charges *before* calling the mechanism: a crash after the
    commit and before the noisy output leaves the budget charged for nothing
    (budget is lost), and an output is never released uncharged.

    Each process opens its own SQLite connection (a budget inherited through
    ``fork`` reconnects); threads share it under a lock.  An in-memory budget
    belongs to the process that created it: using it in a forked child, or
    pickling it, raises, because a copy would be a second, independent budget.
    A file-backed budget pickles as "reopen this ledger".

    The ledger is an append-only audit log (SQLite triggers refuse updates and
    deletes).  Tables: ``meta(key, value)`` with the format name, format version
    and the definition ``{"epsilon", "delta", "accounting", "orders"}`` as JSON;
    ``charges(id, time, analyst, note, event, epsilon, delta, rho, rdp)`` with
    the event as JSON (:meth:`~dpfast.accounting.events.DpEvent.to_dict`) and its cost (``rdp`` is a
    JSON array, one entry per order).

    Privacy
    -------
    Let :math:`M_1, M_2, \dots` be the mechanisms whose events were charged,
    chosen *fully adaptively*: the mechanism and its privacy parameters may
    depend on all earlier outputs.  A refused charge releases nothing and its
    refusal is a function of earlier outputs only.  For every pair of
    neighbouring datasets :math:`x \sim x'` (under the neighbouring relation
    the events are stated for; all charges to one budget must use the same
    relation), the whole transcript of accepted outputs satisfies

    .. math:: \Pr[T(x) \in S] \le e^{\varepsilon} \Pr[T(x') \in S] + \delta
              \quad\text{for all } S.

    The filters, by ``accounting``:

    ``"basic"``
        A charge with :math:`(\varepsilon_i, \delta_i)` (from
        :func:`dpfast.accounting.pure.approx_dp`) is accepted iff
        :math:`\sum_i \varepsilon_i \le \varepsilon` and
        :math:`\sum_i \delta_i \le \delta`.  Basic composition remains valid
        as a filter under full adaptivity (Rogers, Roth, Ullman, Vadhan 2016).
    ``"zcdp"``
        A charge of :math:`\rho_i`-zCDP (:func:`dpfast.accounting.zcdp.zcdp_rho`)
        is accepted iff :math:`\sum_i \rho_i \le \rho_B`, where
        :math:`\rho_B = \max_{\alpha>1} B_\alpha(\varepsilon,\delta)/\alpha`
        is the largest :math:`\rho` whose conversion by CKS20 Cor. 13 gives
        :math:`(\varepsilon,\delta)`-DP (evaluated at the optimising
        :math:`\alpha` and rounded down).  zCDP filters are valid under full
        adaptivity (Whitehouse, Ramdas, Rogers, Wu 2023; it is a Renyi filter
        at every order at once, Feldman & Zrnic 2021), so the transcript is
        :math:`\rho_B`-zCDP and hence :math:`(\varepsilon,\delta)`-DP.
    ``"rdp"``
        A Renyi filter over the :math:`m` orders :math:`\alpha_1..\alpha_m`
        with :math:`\delta` split evenly.  Order :math:`\alpha` has the cap

        .. math:: B_\alpha = \varepsilon + \frac{\log(\delta/m) + \log\alpha}
                  {\alpha-1} - \log(1 - 1/\alpha),

        the largest RDP value that CKS20 Prop. 12 converts to
        :math:`(\varepsilon, \delta/m)`-DP.  A charge with RDP curve
        :math:`r_i(\alpha)` (:func:`dpfast.accounting.rdp.rdp_epsilons`) is
        accepted iff **at least one** order still fits after it:
        :math:`\exists\alpha:\ \sum_{j\le i} r_j(\alpha) \le B_\alpha`
        (sums over accepted charges).  Costs are non-negative, so an order
        that stops fitting never fits again ("is exhausted").

        Validity under full adaptivity: for each order let :math:`\tau_\alpha`
        be the last accepted charge at which order :math:`\alpha` still fits.
        Stopped at :math:`\tau_\alpha`, the interaction is a Renyi filter of
        order :math:`\alpha` with cap :math:`B_\alpha` (a predictable stopping
        rule with :math:`\sum r_j(\alpha) \le B_\alpha` almost surely), so its
        transcript :math:`T_\alpha` is :math:`(\alpha, B_\alpha)`-RDP (Feldman &
        Zrnic 2021, Renyi filter theorem; Whitehouse et al. 2023) and thus
        :math:`(\varepsilon, \delta/m)`-DP: its hockey-stick divergence
        :math:`\mathbb{E}_P[(1 - e^{\varepsilon - L_{\tau_\alpha}})_+]`
        (:math:`L` the privacy-loss random variable) is at most
        :math:`\delta/m`.  The last accepted charge is :math:`\tau_\alpha` for
        some order, so pointwise :math:`(1 - e^{\varepsilon - L_T})_+ \le
        \sum_\alpha (1 - e^{\varepsilon - L_{\tau_\alpha}})_+`; taking
        expectations, the full transcript's hockey-stick divergence is at
        most :math:`m \cdot \delta/m = \delta`.  This is why ``delta`` is
        split across the orders: the order that ends up decisive is chosen
        adaptively, and a filter may not pick the best order after the fact
        without paying for the choice.  See also Lecuyer (2021) on Renyi
        filters and odometers.

    Numerics
    --------
    Charges are summed exactly: every double is an integer multiple of
    :math:`2^{-1074}`, so sums are kept as Python integers and compared with
    the caps without rounding (strictly safer than summing with ``math.fsum``
    and rounding up).  A float parameter is taken as the exact binary rational
    it encodes: ten charges of ``epsilon=0.1`` exceed ``epsilon=1.0``, because
    the double 0.1 is slightly above 1/10 (``0.25`` four times fits exactly).
    The caps :math:`B_\alpha` and :math:`\rho_B` are evaluated with mpmath at
    200 bits and rounded down; :meth:`remaining` rounds down.

    References
    ----------
    .. [1] V. Feldman, T. Zrnic, "Individual Privacy Accounting via a Renyi
       Filter", NeurIPS 2021.
    .. [2] J. Whitehouse, A. Ramdas, R. Rogers, Z. S. Wu, "Fully-Adaptive
       Composition in Differential Privacy", ICML 2023.
    .. [3] R. Rogers, A. Roth, J. Ullman, S. Vadhan, "Privacy Odometers and
       Filters: Pay-as-you-Go Composition", NeurIPS 2016.
    .. [4] C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
       Differential Privacy", NeurIPS 2020 (Prop. 12, Cor. 13).
    .. [5] M. Lecuyer, "Practical Privacy Filters and Odometers with Renyi
       Differential Privacy and Applications to Differentially Private Deep
       Learning", 2021.
    .. [6] M. Bun, T. Steinke, "Concentrated Differential Privacy:
       Simplifications, Extensions, and Lower Bounds", TCC 2016.

    Examples
    --------
    >>> import dpfast as dp
    >>> from dpfast.accounting import events
    >>> budget = dp.Budget(epsilon=1.0, delta=1e-6, accounting="basic")
    >>> charge = budget.spend(events.Epsilon(0.25), note="count", analyst="ana")
    >>> budget.remaining().epsilon
    0.75
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        ledger: str | os.PathLike[str] | None = None,
        accounting: str = "rdp",
        orders: Sequence[float] | None = None,
        timeout: float = 30.0,
    ) -> None:
        eps = _real(epsilon, "epsilon")
        if not (0.0 < eps < math.inf):
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
        dlt = _real(delta, "delta")
        if not (0.0 <= dlt < 1.0):
            raise ValueError(f"delta must be in [0, 1), got {delta!r}")
        if not isinstance(accounting, str):
            raise TypeError(f"accounting must be a str, got {type(accounting).__name__}")
        if accounting not in _ACCOUNTINGS:
            raise ValueError(f"accounting must be one of {_ACCOUNTINGS}, got {accounting!r}")
        if accounting != "basic" and dlt == 0.0:
            raise ValueError(
                f"delta must be > 0 for accounting={accounting!r} (RDP and zCDP give "
                "(epsilon, delta)-DP only with delta > 0); use accounting='basic' "
                "for pure epsilon-DP"
            )
        ords: tuple[float, ...] | None = None
        if accounting == "rdp":
            ords = self._check_orders(DEFAULT_ORDERS if orders is None else orders)
        elif orders is not None:
            raise ValueError(f"orders applies to accounting='rdp' only, not {accounting!r}")
        tmo = _real(timeout, "timeout")
        if not tmo >= 0.0:
            raise ValueError(f"timeout must be >= 0, got {timeout!r}")
        if ledger is not None and not isinstance(ledger, (str, os.PathLike)):
            raise TypeError(f"ledger must be None or a path, got {type(ledger).__name__}")
        path = None if ledger is None else os.fspath(ledger)
        if isinstance(path, bytes):
            raise TypeError("ledger must be a str path, not bytes")
        if path == "" or path == ":memory:":
            raise ValueError("ledger must be a file path; pass ledger=None for memory")

        self._epsilon = eps
        self._delta = dlt
        self._accounting = accounting
        self._orders = ords
        self._timeout = tmo
        self._path = path
        self._definition = _canonical_definition(eps, dlt, accounting, ords)

        if accounting == "basic":
            self._thresholds: tuple[float, ...] = (eps, dlt)
            self._zcdp_alpha = None
        elif accounting == "zcdp":
            rho, alpha = _zcdp_threshold(eps, dlt)
            self._thresholds = (rho,)
            self._zcdp_alpha = alpha
        else:
            assert ords is not None
            self._thresholds = _rdp_thresholds(eps, dlt, ords)
            self._zcdp_alpha = None
        self._limits = [_exact(t) for t in self._thresholds]

        # per-process state
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._closed = False
        self._conn: sqlite3.Connection | None = None
        self._abandoned: list[sqlite3.Connection] = []
        self._cost_cache: dict[Any, tuple[float, ...]] = {}
        dims = len(self._thresholds)
        self._last_id = 0
        self._sums = [0] * dims
        self._infinite = [False] * dims

        if path is None:
            conn = _connect(":memory:", tmo, uri=False)
            _init_schema(conn, self._definition)
            self._conn = conn
            self._sync(conn)
        else:
            self._conn = self._open_file()  # reads the charges (resumes the budget)

    # -- construction helpers ------------------------------------------------

    @staticmethod
    def _check_orders(orders: Any) -> tuple[float, ...]:
        if isinstance(orders, (str, bytes)):
            raise TypeError("orders must be a sequence of floats")
        try:
            orders = list(orders)
        except TypeError:
            raise TypeError("orders must be a sequence of floats") from None
        out = []
        for a in orders:
            value = _real(a, "orders")
            if not (1.0 < value < math.inf):
                raise ValueError(f"orders must be finite and > 1, got {a!r}")
            out.append(value)
        if not out:
            raise ValueError("orders must not be empty")
        if len(set(out)) != len(out):
            raise ValueError("orders must not repeat")
        return tuple(sorted(out))

    def _open_file(self) -> sqlite3.Connection:
        assert self._path is not None
        path = self._path
        if not os.path.lexists(path):
            directory = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(directory):
                raise LedgerError(f"directory of ledger {path!r} does not exist")
            try:
                _create_ledger_file(path, self._definition, self._timeout)
            except sqlite3.Error as exc:
                raise LedgerError(f"cannot create ledger {path!r}: {exc}") from exc
        return _open_ledger_file(path, self._definition, self._timeout, self._sync)

    def _connection(self) -> sqlite3.Connection:
        """This process's connection (call with the lock held)."""
        if self._closed:
            raise ValueError("operation on a closed Budget")
        if self._pid != os.getpid():
            # Inherited through fork: SQLite connections must not cross fork.
            if self._path is None:
                raise RuntimeError(
                    "an in-memory Budget cannot be used in a forked child process: "
                    "the copy would be a second, independent budget. "
                    "Use Budget(..., ledger=path) to share a budget across processes."
                )
            if self._conn is not None:
                self._abandoned.append(self._conn)  # never closed in the child
            self._conn = None
            self._pid = os.getpid()
        if self._conn is None:
            self._conn = self._open_file()
        return self._conn

    def _ledger_error(self, exc: BaseException, action: str) -> LedgerError:
        where = "in-memory ledger" if self._path is None else f"ledger {self._path!r}"
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return LedgerError(
                f"{action}: {where} stayed locked for more than timeout={self._timeout} s"
            )
        return LedgerError(f"{action}: {where} failed: {exc}")

    # -- state ---------------------------------------------------------------

    def _row_costs(self, epsilon: Any, delta: Any, rho: Any, rdp: Any) -> list[float]:
        if self._accounting == "basic":
            return [float(epsilon), float(delta)]
        if self._accounting == "zcdp":
            return [float(rho)]
        values = json.loads(rdp)
        if len(values) != len(self._thresholds):
            raise ValueError("RDP cost has the wrong number of orders")
        return [float(v) for v in values]

    def _sync(self, conn: sqlite3.Connection) -> None:
        """Add charges committed since the last sync to the exact sums."""
        rows = conn.execute(
            "SELECT id, epsilon, delta, rho, rdp FROM charges WHERE id > ? ORDER BY id",
            (self._last_id,),
        ).fetchall()
        if not rows:
            return
        sums = list(self._sums)
        infinite = list(self._infinite)
        last = self._last_id
        for row_id, eps, dlt, rho, rdp in rows:
            try:
                costs = self._row_costs(eps, dlt, rho, rdp)
            except (TypeError, ValueError) as exc:
                where = "in-memory ledger" if self._path is None else repr(self._path)
                raise LedgerError(f"charge {row_id} of ledger {where} is damaged: {exc}") from exc
            for k, c in enumerate(costs):
                if math.isinf(c) and c > 0:
                    infinite[k] = True
                elif math.isfinite(c) and c >= 0:
                    sums[k] += _exact(c)
                else:
                    raise LedgerError(f"charge {row_id} has an invalid cost {c!r}")
            last = row_id
        self._sums, self._infinite, self._last_id = sums, infinite, last

    def _fits(self, costs: Sequence[float]) -> bool:
        ok = []
        for k, c in enumerate(costs):
            if math.isinf(c) or self._infinite[k]:
                ok.append(False)
            else:
                ok.append(self._sums[k] + _exact(c) <= self._limits[k])
        return any(ok) if self._accounting == "rdp" else all(ok)

    def _remaining_unlocked(self) -> Remaining:
        rem = tuple(
            -math.inf if self._infinite[k] else _float_down(self._limits[k] - self._sums[k])
            for k in range(len(self._limits))
        )
        if self._accounting == "basic":
            return Remaining(
                accounting="basic",
                epsilon=rem[0],
                delta=rem[1],
                exhausted=rem[0] <= 0.0,
            )
        if self._accounting == "zcdp":
            rho = rem[0]
            eps = math.sqrt(2.0 * rho) if rho > 0 else 0.0
            exact_rho = fractions.Fraction(rho)
            while eps > 0 and fractions.Fraction(eps) ** 2 / 2 > exact_rho:
                eps = math.nextafter(eps, 0.0)  # certify eps**2 / 2 <= rho exactly
            return Remaining(
                accounting="zcdp",
                epsilon=eps,
                delta=self._delta,
                rho=rho,
                exhausted=rho <= 0.0,
            )
        best = max(rem)
        return Remaining(
            accounting="rdp",
            epsilon=max(best, 0.0),
            delta=self._delta,
            orders=self._orders,
            rdp=rem,
            exhausted=best <= 0.0,
        )

    # -- costs ---------------------------------------------------------------

    def _costs(self, event: Any) -> tuple[float, ...]:
        """The event's cost vector (cached: events are frozen and hashable)."""
        try:
            return self._cost_cache[event]
        except KeyError:
            pass
        except TypeError:  # unhashable field: compute every time
            return self._compute_costs(event)
        costs = self._compute_costs(event)
        if len(self._cost_cache) >= 1024:
            self._cost_cache.clear()
        self._cost_cache[event] = costs
        return costs

    def _compute_costs(self, event: Any) -> tuple[float, ...]:
        if self._accounting == "basic":
            from dpfast.accounting.pure import approx_dp

            eps, dlt = approx_dp(event)
            costs: tuple[float, ...] = (float(eps), float(dlt))
        elif self._accounting == "zcdp":
            from dpfast.accounting.zcdp import zcdp_rho

            costs = (float(zcdp_rho(event)),)
        else:
            from dpfast.accounting.rdp import rdp_epsilons

            assert self._orders is not None
            values = rdp_epsilons(event, self._orders)
            costs = tuple(float(v) for v in values)
            if len(costs) != len(self._orders):
                raise RuntimeError("rdp_epsilons returned the wrong number of orders")
            if not any(math.isfinite(c) for c in costs):
                raise ValueError(
                    f"event {event!r} has no finite RDP bound at any order of this "
                    "budget; use accounting='basic' for (epsilon, delta) events"
                )
        for c in costs:
            if math.isnan(c) or c < 0:
                raise ValueError(f"the accountant returned an invalid cost {c!r} for {event!r}")
        return costs

    def _cost_record(self, costs: Sequence[float]) -> Cost:
        if self._accounting == "basic":
            return Cost(epsilon=costs[0], delta=costs[1])
        if self._accounting == "zcdp":
            return Cost(rho=costs[0])
        return Cost(orders=self._orders, rdp=tuple(costs))

    def _cost_columns(self, costs: Sequence[float]) -> tuple[Any, Any, Any, Any]:
        if self._accounting == "basic":
            return costs[0], costs[1], None, None
        if self._accounting == "zcdp":
            return None, None, costs[0], None
        return None, None, None, json.dumps(list(costs), allow_nan=True)

    def _describe_refusal(self, costs: Sequence[float], remaining: Remaining) -> str:
        if self._accounting == "basic":
            return (
                f"charge of (epsilon={costs[0]!r}, delta={costs[1]!r}) exceeds the "
                f"remaining budget (epsilon={remaining.epsilon!r}, "
                f"delta={remaining.delta!r})"
            )
        if self._accounting == "zcdp":
            return (
                f"charge of rho={costs[0]!r} exceeds the remaining zCDP budget "
                f"rho={remaining.rho!r}"
            )
        assert remaining.rdp is not None and self._orders is not None
        slack = [r - c for r, c in zip(remaining.rdp, costs, strict=True)]
        k = max(range(len(slack)), key=slack.__getitem__)
        return (
            "charge exceeds the remaining RDP budget at every order; closest: "
            f"order {self._orders[k]!r} costs {costs[k]!r} with {remaining.rdp[k]!r} left"
        )

    # -- public API ----------------------------------------------------------

    @property
    def epsilon(self) -> float:
        """The overall epsilon of the budget."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """The overall delta of the budget."""
        return self._delta

    @property
    def accounting(self) -> str:
        """``"basic"``, ``"zcdp"`` or ``"rdp"``."""
        return self._accounting

    @property
    def orders(self) -> tuple[float, ...] | None:
        """The Renyi orders of an ``"rdp"`` budget (None otherwise)."""
        return self._orders

    @property
    def ledger(self) -> str | None:
        """The ledger path, or None for an in-memory budget."""
        return self._path

    @property
    def thresholds(self) -> tuple[float, ...]:
        """The filter's caps in the accounting's units (rounded down)."""
        return self._thresholds

    def spend(self, event: Any, *, note: str = "", analyst: str = "") -> Charge:
        """Check that ``event`` fits the budget and charge it, atomically.

        Parameters
        ----------
        event : event of :mod:`dpfast.accounting.events`
            The guarantee of what is about to be released.
        note, analyst : str, optional
            Recorded in the audit log.

        Returns
        -------
        Charge
            The committed record (durable when this returns).

        Raises
        ------
        BudgetExceededError
            The charge does not fit; nothing was recorded.
        TypeError, ValueError
            ``event`` is not an event, or has no guarantee in this budget's
            accounting (e.g. ``EpsilonDelta`` under ``"zcdp"``).
        LedgerError
            The ledger could not be written (locked beyond ``timeout``,
            damaged, disk full); nothing was recorded.
        """
        _text(note, "note")
        _text(analyst, "analyst")
        event_json = _serialize_event(event)  # TypeError unless an event
        costs = self._costs(event)  # outside the lock: may be slow
        columns = self._cost_columns(costs)
        with self._lock:
            conn = self._connection()
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._ledger_error(exc, "cannot lock the ledger") from exc
            try:
                self._sync(conn)
                if not self._fits(costs):
                    remaining = self._remaining_unlocked()
                    conn.execute("ROLLBACK")
                    raise BudgetExceededError(
                        self._describe_refusal(costs, remaining),
                        event,
                        self._cost_record(costs),
                        remaining,
                        self._path,
                    )
                now = time.time()
                cursor = conn.execute(
                    "INSERT INTO charges (time, analyst, note, event, epsilon, delta, rho, rdp)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (now, analyst, note, event_json, *columns),
                )
                row_id = cursor.lastrowid
                conn.execute("COMMIT")
            except BaseException as exc:
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                if isinstance(exc, sqlite3.Error):
                    raise self._ledger_error(exc, "cannot record the charge") from exc
                raise
        # The new row is added to the sums by the next _sync (it reads id > last).
        assert row_id is not None
        return Charge(
            id=row_id,
            time=datetime.datetime.fromtimestamp(now, datetime.timezone.utc),
            analyst=analyst,
            note=note,
            event=event,
            event_json=event_json,
            cost=self._cost_record(costs),
        )

    def release(
        self,
        mechanism: Any,
        x: Any,
        *,
        note: str = "",
        analyst: str = "",
        rng: Any = None,
    ) -> Any:
        """Charge ``mechanism.event``, then return ``mechanism(x, rng=rng)``.

        The charge is committed before the mechanism runs, so its noise is
        drawn only once it is paid for.  If the mechanism raises, the budget
        stays charged (conservative: the mechanism may have touched the data).

        Parameters
        ----------
        mechanism : object with ``.event`` and ``__call__(x, *, rng=None)``
            E.g. :class:`dpfast.LaplaceMechanism`.
        x : array_like
            The exact (sensitive) value to release.
        note, analyst : str, optional
            Recorded in the audit log.
        rng : optional
            Passed to the mechanism.

        Raises
        ------
        BudgetExceededError
            The charge does not fit; the mechanism was not called.
        """
        try:
            event = mechanism.event
        except AttributeError:
            raise TypeError(
                f"mechanism must have an .event attribute, got {type(mechanism).__name__}"
            ) from None
        if not callable(mechanism):
            raise TypeError(f"mechanism must be callable, got {type(mechanism).__name__}")
        self.spend(event, note=note, analyst=analyst)
        return mechanism(x, rng=rng)

    def remaining(self) -> Remaining:
        """The budget left, in the budget's own terms (all rounded down).

        ``basic``: ``epsilon`` and ``delta`` left.  ``zcdp``: ``rho`` left
        (and ``epsilon = sqrt(2 rho)``, the largest pure-DP charge that fits).
        ``rdp``: per order, ``rdp[i] = B_alpha_i - sum of charges at
        alpha_i`` (non-positive: exhausted), and ``epsilon = max(rdp)``, the
        largest ``epsilon'`` such that any ``epsilon'``-DP mechanism still
        fits (an ``epsilon'``-DP mechanism is ``(alpha, epsilon')``-RDP at
        every order).  See :class:`Remaining`.
        """
        with self._lock:
            conn = self._connection()
            try:
                self._sync(conn)
            except sqlite3.Error as exc:
                raise self._ledger_error(exc, "cannot read the ledger") from exc
            return self._remaining_unlocked()

    def spent(self) -> Cost:
        """Total charged so far (rounded up), in the accounting's terms."""
        with self._lock:
            conn = self._connection()
            try:
                self._sync(conn)
            except sqlite3.Error as exc:
                raise self._ledger_error(exc, "cannot read the ledger") from exc
            totals = []
            for k, s in enumerate(self._sums):
                if self._infinite[k]:
                    totals.append(math.inf)
                else:
                    f = _float_down(s)
                    totals.append(f if _exact(f) == s else math.nextafter(f, math.inf))
            return self._cost_record(totals)

    def history(self) -> list[Charge]:
        """The audit log: every accepted charge, oldest first.

        Returns
        -------
        list of Charge
            With time (UTC), analyst, note, the event (serialized and
            reconstructed) and its cost.
        """
        with self._lock:
            conn = self._connection()
            try:
                rows = conn.execute(
                    "SELECT id, time, analyst, note, event, epsilon, delta, rho, rdp "
                    "FROM charges ORDER BY id"
                ).fetchall()
            except sqlite3.Error as exc:
                raise self._ledger_error(exc, "cannot read the ledger") from exc
        out = []
        for row_id, t, analyst, note, event_json, eps, dlt, rho, rdp in rows:
            try:
                event = _deserialize_event(event_json)
            except (TypeError, ValueError):
                event = None
            out.append(
                Charge(
                    id=row_id,
                    time=datetime.datetime.fromtimestamp(t, datetime.timezone.utc),
                    analyst=analyst,
                    note=note,
                    event=event,
                    event_json=event_json,
                    cost=self._cost_record(self._row_costs(eps, dlt, rho, rdp)),
                )
            )
        return out

    def close(self) -> None:
        """Close this process's connection to the ledger.

        A closed budget refuses further use.  Closing an in-memory budget
        discards it.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            conn, self._conn = self._conn, None
            if conn is not None and self._pid == os.getpid():
                conn.close()

    def __enter__(self) -> Budget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed and self._pid == os.getpid() and self._conn is not None:
                self._conn.close()
        except Exception:
            pass

    def __reduce__(self) -> tuple[Callable[..., Budget], tuple[Any, ...]]:
        if self._path is None:
            raise TypeError(
                "an in-memory Budget cannot be pickled: the copy would be a second, "
                "independent budget. Use Budget(..., ledger=path) to share it."
            )
        return (
            _reopen,
            (
                self._epsilon,
                self._delta,
                os.path.abspath(self._path),
                self._accounting,
                self._orders,
                self._timeout,
            ),
        )

    def __repr__(self) -> str:
        where = "memory" if self._path is None else repr(self._path)
        return (
            f"Budget(epsilon={self._epsilon!r}, delta={self._delta!r}, "
            f"accounting={self._accounting!r}, ledger={where})"
        )


def _reopen(
    epsilon: float,
    delta: float,
    path: str,
    accounting: str,
    orders: tuple[float, ...] | None,
    timeout: float,
) -> Budget:
    return Budget(
        epsilon, delta, ledger=path, accounting=accounting, orders=orders, timeout=timeout
    )
