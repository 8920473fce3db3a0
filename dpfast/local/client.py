"""The local-DP client: a device's randomizer with a persistent per-period privacy budget.

Two rules keep what the server sees a function of the reports alone (issue 36, channel 9):

* **A data-independent charge.**  Every report is charged its worst case, the epsilon of
  one report of a value never reported before (RAPPOR: ``epsilon_1``; the pure protocols:
  ``epsilon``), whatever the values.  So whether a report is sent or refused
  (:class:`BudgetExhaustedError`, nothing sent) depends only on the number of reports
  asked for in the period and the public parameters (budget, epsilon, period), never on
  the values: the absence of a report tells the server nothing it could not count.
* **Fresh randomness per report.**  ``rng`` given as a raw 32-byte key is never used as
  it is: report batch ``j`` of a client (a counter kept in its state, advanced in the same
  transaction as the charge) randomizes with the generator keyed
  ``BLAKE2b(key=key, data=REPORT_TAG || j)`` (:func:`report_generator`), so two reports of
  one value are independent, and only the same report re-run (the same counter, e.g. a
  restored state file) reproduces its output.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._core.rounding import float_down, float_up
from dpfast._core.validate import check_exact_positive, check_key, check_positive
from dpfast.local._validate import _domain_values
from dpfast.local.hashing import fingerprint
from dpfast.local.rappor_reports import RapporReports
from dpfast.local.reports import (
    ReportBatch,
    batch_of,
    build_protocol,
    protocol_name,
    protocol_params,
)
from dpfast.noise._addressed import derive_key
from dpfast.random import Generator, RngLike, as_generator, default_rng

DAY = 86400.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spend (period INTEGER PRIMARY KEY, spent TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memo (fp INTEGER PRIMARY KEY, cohort INTEGER NOT NULL,
                                 prr BLOB NOT NULL);
"""


#: the domain tag of the per-report generators derived from a raw key
REPORT_TAG = b"dpfast.local.report v1"


class BudgetExhaustedError(Exception):
    """A report would take a client past its privacy budget for the period (nothing was
    charged, nothing randomized).  Raised on the number of reports alone (every report is
    charged its worst case), never on the values."""


def check_rng(rng: RngLike, name: str = "rng") -> RngLike:
    """``rng`` of a client, checked before anything is charged: a raw key is returned as
    32 ``bytes`` (each report batch derives its own generator from it,
    :func:`report_generator`), a :class:`dpfast.Generator` or None as given (TypeError
    naming ``name`` otherwise)."""
    if isinstance(rng, (bytes, bytearray, memoryview)):
        return check_key(bytes(rng), name)
    return as_generator(rng, name) if rng is not None else None


def report_generator(rng: RngLike, report: int) -> Generator:
    """The generator of report batch number ``report`` (``0 <= report < 2**128``) of a
    client whose ``rng`` is :func:`check_rng`'s: a raw key gives
    ``default_rng(BLAKE2b(key=key, data=REPORT_TAG || report))`` (a keyed PRF: batches of
    distinct numbers are independent); a :class:`dpfast.Generator` is used as given (its
    allocator hands every batch fresh streams; one rebuilt from the same key replays its
    sequence), None is the process-wide OS-keyed generator."""
    if isinstance(rng, bytes):
        return default_rng(derive_key(rng, REPORT_TAG, int(report)))
    return as_generator(rng)


def randomize(protocol: Any, values: Any, rng: RngLike = None) -> ReportBatch:
    """One report per value, array-at-a-time, as a :class:`ReportBatch` (no budget:
    the pure protocols; RAPPOR needs a client's secret, see :class:`Client`)."""
    name = protocol_name(protocol)
    if name == "rappor":
        raise TypeError("RAPPOR reports need a client id and secret: use Client or ClientPool")
    return batch_of(protocol, protocol.perturb(values, rng=rng))


def _fraction(text: str) -> Fraction:
    return Fraction(text)


def _period_index(clock: Callable[[], float], period: float) -> int:
    return int(math.floor(float(clock()) / period))


def _signed(fp: np.ndarray) -> list[int]:
    return [int(x) for x in fp.astype(np.uint64).view(np.int64)]


class Client:
    """One device: its randomizer, a persistent per-period privacy budget, memoized
    permanent responses, and serialized reports.

    Parameters
    ----------
    protocol : protocol object or None
        The :mod:`dpfast.local` protocol (public parameters shared with the server).  None
        reopens an existing state file with the protocol it was created with.
    path : str or os.PathLike
        The client's state: a small SQLite file (created on first use) holding the
        configuration, a random 64-bit client id and 32-byte secret, the epsilon spent per
        period and RAPPOR's memoized permanent responses.  Every charge is one
        ``BEGIN IMMEDIATE`` transaction, so the budget holds across restarts and across
        processes and threads sharing the file (one ``Client`` object per thread: SQLite
        connections are not shared between threads).
    budget : float
        Privacy budget per period (e.g. Apple's 4 per day); required when creating.
    period : float
        Period length in seconds (default one day); periods are ``floor(clock() /
        period)`` (UTC days by default).  A clock that goes back never reopens a spent
        period: the latest period seen is used.
    clock : callable, optional
        Seconds since the epoch (default :func:`time.time`; tests pass their own).
    rng : None, Generator or bytes, optional
        Randomness of the reports, checked here (before any charge).  A raw 32-byte key
        derives a fresh generator for every report batch from a counter kept in the state
        (:func:`report_generator`): two reports of one value are independent; give every
        client its own key (two clients with one key and fresh states would draw the same
        streams).  A :class:`dpfast.Generator` is used as given (one rebuilt from the same
        key after a restart replays its earlier reports' randomness: pass the raw key for
        a client that restarts).  None: the OS-keyed process-wide generator.

    Notes
    -----
    :meth:`report` charges first and randomizes after: the charge is committed before
    any report exists, so a crash in between loses budget, never the reverse; a report
    beyond the budget raises :class:`BudgetExhaustedError` and charges nothing.

    **Privacy**

    Neighbouring relation: any two values of one client (local DP), in the protocol's
    domain (a value outside it is refused with ``ValueError`` before any charge).  Every
    report is charged ``epsilon`` (RAPPOR: ``epsilon_1``, the cost of one report of a
    value never reported before), whatever the values, so a period's reports are jointly
    ``budget``-LDP by basic composition (at most ``floor(budget / epsilon)`` of them), and
    the number of reports sent in a period -- and which requests are refused -- is a
    function of the number of reports asked for, the period and the public parameters
    only: a refused request sends nothing and its refusal depends on no value.  (Charging
    a repeated RAPPOR value less, as its memoized permanent response would allow, made the
    refusals depend on whether the values repeat: (v, v, v, v, v) and (v, v, v, v, w)
    sent different numbers of reports.)  RAPPOR: reports of one value reuse its memoized
    permanent randomized response, so all reports of one value, over every period, are
    also jointly ``epsilon_inf``-LDP (the longitudinal bound; Erlingsson, Pihur, Korolova,
    CCS 2014, sec. 3).  Every report has its own randomness (``rng``).  Apple, "Learning
    with Privacy at Scale", 2017 (per-day budget); Wang et al., USENIX Security 2017.
    Budget arithmetic is exact (rational).
    """

    def __init__(self, protocol: Any, path: str | os.PathLike[str], *,
                 budget: float | None = None, period: float = DAY,
                 clock: Callable[[], float] | None = None, rng: RngLike = None,
                 timeout: float = 30.0) -> None:
        self._clock = time.time if clock is None else clock
        self._rng = check_rng(rng)
        self.path = os.fspath(path)
        self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)
        try:
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._configure(protocol, budget, period)
        except BaseException:
            self._db.close()
            raise

    def _configure(self, protocol: Any, budget: Any, period: Any) -> None:
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
            if not meta:
                if protocol is None or budget is None:
                    raise ValueError("a new client state needs protocol and budget")
                b = check_exact_positive(budget, "budget")
                if not math.isfinite(float(b)):
                    raise ValueError("budget must be finite")
                per = check_positive(period, "period")
                meta = {"format": "dpfast.ldp.client/1", "protocol": protocol_name(protocol),
                        "params": json.dumps(protocol_params(protocol), sort_keys=True),
                        "budget": str(b), "period": repr(per),
                        "client_id": str(int.from_bytes(os.urandom(8), "little") >> 1),
                        "secret": os.urandom(32).hex(), "last_period": "-1"}
                db.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            elif meta.get("format") != "dpfast.ldp.client/1":
                raise ValueError(f"{self.path} is not a dpfast client state")
            else:
                self._check_same(meta, protocol, budget, period)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self.protocol = (protocol if protocol is not None else
                         build_protocol(meta["protocol"], json.loads(meta["params"])))
        self._name = meta["protocol"]
        eps = (self.protocol.epsilon_one if self._name == "rappor" else
               self.protocol.epsilon)
        self._epsilon = Fraction(eps)  # every report's charge: its worst case
        self._budget = _fraction(meta["budget"])
        self.period = float(meta["period"])
        self.client_id = int(meta["client_id"])
        self._secret = bytes.fromhex(meta["secret"])

    def _check_same(self, meta: dict[str, str], protocol: Any, budget: Any,
                    period: Any) -> None:
        if protocol is not None:
            mine = (protocol_name(protocol), protocol_params(protocol))
            theirs = (meta["protocol"], json.loads(meta["params"]))
            if mine != theirs:
                raise ValueError(f"{self.path} was created for protocol {theirs[0]} with "
                                 f"parameters {theirs[1]}, not {mine[0]} {mine[1]}")
        if budget is not None and check_exact_positive(budget, "budget") != \
                _fraction(meta["budget"]):
            raise ValueError(f"budget differs from the {meta['budget']} per period {self.path} "
                             "was created with (a client's budget cannot be changed)")
        if check_positive(period, "period") != float(meta["period"]):
            raise ValueError(f"period differs from the {meta['period']} s {self.path} was "
                             "created with")

    # -- budget
    def _period(self) -> int:
        (last,) = self._db.execute("SELECT value FROM meta WHERE key='last_period'").fetchone()
        return max(_period_index(self._clock, self.period), int(last))

    def _spent(self, period: int) -> Fraction:
        row = self._db.execute("SELECT spent FROM spend WHERE period=?", (period,)).fetchone()
        return Fraction(0) if row is None else _fraction(row[0])

    @property
    def budget(self) -> float:
        """Budget per period (rounded down)."""
        return float_down(self._budget)

    def spent(self) -> float:
        """Epsilon spent in the current period (rounded up)."""
        return float_up(self._spent(self._period()))

    def remaining(self) -> float:
        """Epsilon left in the current period (rounded down)."""
        return max(0.0, float_down(self._budget - self._spent(self._period())))

    @property
    def epsilon(self) -> float:
        """The charge of one report (RAPPOR: ``epsilon_1``), whatever its value."""
        return float_up(self._epsilon)

    @property
    def max_reports(self) -> int:
        """Reports a period admits: ``floor(budget / epsilon)`` (public)."""
        return int(self._budget // self._epsilon)

    def cost(self, values: Any) -> float:
        """Epsilon that reporting ``values`` now would charge (rounded up): ``epsilon``
        per value, whatever the values."""
        n, _ = self._size(values)
        return float_up(n * self._epsilon)

    def _size(self, values: Any) -> tuple[int, np.ndarray]:
        if self._name in ("cms", "hcms", "rappor"):
            fps = fingerprint(values)
            return fps.size, fps
        if np.ndim(values) != 1:
            raise ValueError(f"values must be 1-D, got shape {np.shape(values)}")
        arr = _domain_values(values, self.protocol.k)
        return arr.size, arr

    # -- reports
    def report(self, values: Any) -> ReportBatch:
        """Charge the budget for one report per value, then randomize them.

        Raises :class:`BudgetExhaustedError` (charging nothing, sending nothing) if the
        period's budget would be exceeded: ``epsilon`` per value, so whether it is raised
        depends on the number of values and the reports already made in the period only.
        Returns the reports as a :class:`ReportBatch` (send its ``to_bytes()`` or
        ``to_json()``).
        """
        n, fps = self._size(values)  # checked before anything is charged
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            period = self._period()
            spent = self._spent(period)
            charge = n * self._epsilon  # data-independent: the worst case of each report
            if spent + charge > self._budget:
                raise BudgetExhaustedError(
                    f"client {self.client_id}: {n} report(s) would cost {float_up(charge):g}; "
                    f"{float_down(self._budget - spent):g} of the {float(self._budget):g} "
                    f"budget is left in period {period} (refused, nothing charged)")
            db.execute("INSERT OR REPLACE INTO spend VALUES (?, ?)", (period, str(spent + charge)))
            db.execute("UPDATE meta SET value=? WHERE key='last_period'", (str(period),))
            number = self._next_report()
            prr = self._memoized(fps) if self._name == "rappor" else None
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        gen = report_generator(self._rng, number)  # this batch's own randomness
        if prr is not None:  # charged: now the (fresh) instantaneous responses
            return batch_of(self.protocol, self.protocol.instantaneous(prr, rng=gen))
        return randomize(self.protocol, fps, gen)

    def _next_report(self) -> int:
        """This report batch's number (inside the charge's transaction): the count of
        batches charged before it, kept in the state (0 for a state without one)."""
        row = self._db.execute("SELECT value FROM meta WHERE key='reports'").fetchone()
        number = 0 if row is None else int(row[0])
        self._db.execute("INSERT OR REPLACE INTO meta VALUES ('reports', ?)", (str(number + 1),))
        return number

    def _memoized(self, fps: np.ndarray) -> RapporReports:
        """The permanent responses of the values (computed once per value, stored)."""
        proto = self.protocol
        nbytes = -(-proto.num_bits // 8)
        keys = _signed(fps)
        uniq = sorted(set(keys))
        known: dict[int, tuple[int, bytes]] = {}
        for fp in uniq:
            row = self._db.execute("SELECT cohort, prr FROM memo WHERE fp=?", (fp,)).fetchone()
            if row is not None:
                known[fp] = (int(row[0]), bytes(row[1]))
        missing = [fp for fp in uniq if fp not in known]
        if missing:
            fresh = proto.permanent(np.array(missing, np.int64).view(np.uint64),
                                    np.full(len(missing), self.client_id, np.uint64),
                                    self._secret)
            for fp, coh, bits in zip(missing, fresh.cohorts.tolist(), fresh.bits):
                known[fp] = (int(coh), bits.tobytes())
                self._db.execute("INSERT INTO memo VALUES (?, ?, ?)", (fp, int(coh),
                                                                      bits.tobytes()))
        coh = np.array([known[k][0] for k in keys], np.int64)
        bits = np.frombuffer(b"".join(known[k][1] for k in keys), np.uint8)
        return RapporReports(coh, bits.reshape(len(keys), nbytes).copy())

    def close(self) -> None:
        """Close the state file."""
        self._db.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"Client({self._name}, id={self.client_id}, budget={float(self._budget):g} "
                f"per {self.period:g} s)")
