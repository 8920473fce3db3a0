"""The local-DP client: a device's randomizer with a persistent per-period privacy budget."""

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
from dpfast._core.validate import check_exact_positive, check_positive
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
from dpfast.random import RngLike

DAY = 86400.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS spend (period INTEGER PRIMARY KEY, spent TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS uses (period INTEGER, fp INTEGER, count INTEGER NOT NULL,
                                 PRIMARY KEY (period, fp));
CREATE TABLE IF NOT EXISTS memo (fp INTEGER PRIMARY KEY, cohort INTEGER NOT NULL,
                                 prr BLOB NOT NULL);
"""


class BudgetExhaustedError(Exception):
    """A report would take a client past its privacy budget for the period (nothing was
    charged, nothing randomized)."""


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
        Randomness of the reports.

    Notes
    -----
    :meth:`report` charges first and randomizes after: the charge is committed before
    any report exists, so a crash in between loses budget, never the reverse; a report
    beyond the budget raises :class:`BudgetExhaustedError` and charges nothing.

    **Privacy**

    Neighbouring relation: any two values of one client (local DP).  Each report of a
    pure protocol is ``epsilon``-LDP; a period's reports are ``(sum of their
    epsilons)``-LDP by basic composition, which the budget caps: the reports of one period
    are jointly ``budget``-LDP.  RAPPOR: reports of one value ``v`` reuse its memoized
    permanent randomized response, so ``k`` reports of ``v`` cost
    ``min(k epsilon_1, epsilon_inf)`` (instantaneous responses compose up to the
    permanent response's ``epsilon_inf``); different values compose.  Erlingsson, Pihur,
    Korolova, CCS 2014 (sec. 3); Apple, "Learning with Privacy at Scale", 2017 (per-day
    budget); Wang et al., USENIX Security 2017.  Budget arithmetic is exact (rational).
    """

    def __init__(self, protocol: Any, path: str | os.PathLike[str], *,
                 budget: float | None = None, period: float = DAY,
                 clock: Callable[[], float] | None = None, rng: RngLike = None,
                 timeout: float = 30.0) -> None:
        self._clock = time.time if clock is None else clock
        self._rng = rng
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

    def _rappor_charge(self, period: int, fps: np.ndarray) -> tuple[Fraction, list]:
        e1 = Fraction(self.protocol.epsilon_one)
        einf = self.protocol.epsilon_longitudinal
        cap = None if math.isinf(einf) else Fraction(einf)
        uniq, cnt = np.unique(fps, return_counts=True)
        charge = Fraction(0)
        uses = []
        for fp, k in zip(_signed(uniq), cnt.tolist()):
            row = self._db.execute("SELECT count FROM uses WHERE period=? AND fp=?",
                                   (period, fp)).fetchone()
            before = 0 if row is None else int(row[0])
            after = before + k
            lo, hi = before * e1, after * e1
            if cap is not None:
                lo, hi = min(lo, cap), min(hi, cap)
            charge += hi - lo
            uses.append((period, fp, after))
        return charge, uses

    def cost(self, values: Any) -> float:
        """Epsilon that reporting ``values`` now would charge (rounded up)."""
        n, fps = self._size(values)
        if self._name != "rappor":
            return float_up(n * Fraction(self.protocol.epsilon))
        return float_up(self._rappor_charge(self._period(), fps)[0])

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

        Raises :class:`BudgetExhaustedError` (charging nothing) if the period's budget
        would be exceeded.  Returns the reports as a :class:`ReportBatch` (send its
        ``to_bytes()`` or ``to_json()``).
        """
        n, fps = self._size(values)  # checked before anything is charged
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            period = self._period()
            spent = self._spent(period)
            if self._name == "rappor":
                charge, uses = self._rappor_charge(period, fps)
            else:
                charge, uses = n * Fraction(self.protocol.epsilon), []
            if spent + charge > self._budget:
                raise BudgetExhaustedError(
                    f"client {self.client_id}: {n} report(s) would cost {float_up(charge):g}; "
                    f"{float_down(self._budget - spent):g} of the {float(self._budget):g} "
                    f"budget is left in period {period} (refused, nothing charged)")
            db.execute("INSERT OR REPLACE INTO spend VALUES (?, ?)", (period, str(spent + charge)))
            db.executemany("INSERT OR REPLACE INTO uses VALUES (?, ?, ?)", uses)
            db.execute("UPDATE meta SET value=? WHERE key='last_period'", (str(period),))
            prr = self._memoized(fps) if self._name == "rappor" else None
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if prr is not None:  # charged: now the (fresh) instantaneous responses
            return batch_of(self.protocol, self.protocol.instantaneous(prr, rng=self._rng))
        return randomize(self.protocol, fps, self._rng)

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
