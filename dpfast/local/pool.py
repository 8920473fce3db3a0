"""Many clients at once: per-client budgets for a fleet, randomized array-at-a-time."""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import numpy as np

from dpfast._core.rounding import float_down
from dpfast._core.validate import check_exact_positive, check_int, check_positive
from dpfast.local._validate import _domain_values, _indices
from dpfast.local.client import (
    DAY,
    BudgetExhaustedError,
    _period_index,
    check_rng,
    randomize,
    report_generator,
)
from dpfast.local.hashing import fingerprint
from dpfast.local.reports import (
    ReportBatch,
    batch_of,
    build_protocol,
    compact,
    pack,
    protocol_name,
    protocol_params,
    unpack,
)
from dpfast.local.server import write_atomic
from dpfast.random import RngLike

POOL_MAGIC = b"DPLDPPOL"


class ClientPool:
    """``num_clients`` clients (ids ``0 .. num_clients - 1``) sharing one protocol, each
    with its own per-period budget, randomized array-at-a-time.

    For simulations and for gateways that randomize on behalf of many devices: a batch of
    a million values is charged and randomized in a few vectorized passes.

    Parameters
    ----------
    protocol : protocol object or None
        The :mod:`dpfast.local` protocol (None: reopen ``path`` with its own).
    path : str or os.PathLike
        State file (versioned binary container, replaced atomically on every charge, under
        an exclusive ``flock`` of ``path + ".lock"``): the configuration, the current
        period, each client's number of reports in it, the number of report batches
        charged so far (the stream counter of a raw-key ``rng``) and the pool's 32-byte
        RAPPOR secret.
    num_clients : int
        Number of clients (required when creating).
    budget : float
        Privacy budget of every client per period (required when creating).
    period, clock :
        As for :class:`~dpfast.local.client.Client`.
    rng : None, Generator or bytes, optional
        As for :class:`~dpfast.local.client.Client`, checked here: a raw 32-byte key
        derives a fresh generator for every call of :meth:`report` /
        :meth:`report_allowed` from the batch counter kept in the state
        (:func:`~dpfast.local.client.report_generator`), so two reports of one value --
        by one client or by two -- are independent; only the same batch re-run (a
        restored state file) reproduces.

    Notes
    -----
    **Privacy**

    Each report is ``epsilon``-LDP for its client (RAPPOR: ``epsilon_1``); a client's
    reports in one period are at most ``budget``-LDP by basic composition: the pool
    admits at most ``floor(budget / epsilon)`` reports per client and period (exact
    rational arithmetic).  The charge is ``epsilon`` per report whatever the value, so
    which entries are refused depends only on the client ids of the requests (and the
    period, and the public parameters), never on the values: :meth:`report` refuses a
    whole batch, :meth:`report_allowed` drops each client's entries past its budget, in
    input order, and nothing is sent for them.  RAPPOR's permanent response is memoized
    per (client, value) by a PRF of the pool secret
    (:meth:`dpfast.local.Rappor.permanent`), so all reports of one value of one client
    are also jointly ``epsilon_inf``-LDP.  Every batch has its own randomness (``rng``).
    Apple 2017; Erlingsson et al. 2014; Wang et al. 2017.
    """

    def __init__(self, protocol: Any, path: str | os.PathLike[str], *,
                 num_clients: int | None = None, budget: float | None = None,
                 period: float = DAY, clock: Callable[[], float] | None = None,
                 rng: RngLike = None) -> None:
        self.path = os.fspath(path)
        self._clock = time.time if clock is None else clock
        self._rng = check_rng(rng)
        with self._locked():
            if os.path.exists(self.path):
                head, _ = self._read()
                if protocol is not None:
                    mine = (protocol_name(protocol), protocol_params(protocol))
                    if mine != (head["protocol"], head["params"]):
                        raise ValueError(f"{self.path} was created for {head['protocol']} "
                                         f"{head['params']}, not {mine[0]} {mine[1]}")
                for key, given in (("num_clients", num_clients), ("budget", budget)):
                    if given is not None and Fraction(given) != Fraction(head[key]):
                        raise ValueError(f"{key} differs from the {head[key]} {self.path} "
                                         "was created with")
                if check_positive(period, "period") != head["period"]:
                    raise ValueError(f"period differs from the {head['period']} s "
                                     f"{self.path} was created with")
            else:
                if protocol is None or num_clients is None or budget is None:
                    raise ValueError("a new pool needs protocol, num_clients and budget")
                b = check_exact_positive(budget, "budget")
                if not math.isfinite(float(b)):
                    raise ValueError("budget must be finite")
                head = {"format": "dpfast.ldp.pool", "protocol": protocol_name(protocol),
                        "params": protocol_params(protocol), "budget": str(b),
                        "period": check_positive(period, "period"),
                        "num_clients": check_int(num_clients, "num_clients", minimum=1),
                        "period_index": -1, "reports": 0,
                        "secret": os.urandom(32).hex()}
                self._write(head, np.zeros(head["num_clients"], np.int64))
        self.protocol = (protocol if protocol is not None else
                         build_protocol(head["protocol"], head["params"]))
        self._name = head["protocol"]
        self.num_clients = int(head["num_clients"])
        self.period = float(head["period"])
        self._budget = Fraction(head["budget"])
        self._secret = bytes.fromhex(head["secret"])
        eps = self.protocol.epsilon_one if self._name == "rappor" else self.protocol.epsilon
        self.epsilon = float(eps)
        self.max_reports = int(self._budget // Fraction(eps))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.path + ".lock", "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _read(self) -> tuple[dict[str, Any], np.ndarray]:
        with open(self.path, "rb") as fh:
            head, arrays = unpack(POOL_MAGIC, fh.read(), "client pool state")
        if head.get("format") != "dpfast.ldp.pool" or set(arrays) != {"counts"}:
            raise ValueError(f"{self.path} is not a dpfast client pool state")
        counts = arrays["counts"]
        if counts.shape != (head["num_clients"],) or counts.dtype.kind not in "iu":
            raise ValueError(f"{self.path}: counts must have one entry per client")
        return head, np.array(counts, np.int64)

    def _write(self, head: dict[str, Any], counts: np.ndarray) -> None:
        # counts never exceed max_reports: the smallest dtype that holds them (1 byte per
        # client for up to 255 reports a period)
        top = int(counts.max()) if counts.size else 0
        write_atomic(self.path, pack(POOL_MAGIC, head, {"counts": compact(counts, top + 1)}))

    def _current(self) -> tuple[dict[str, Any], np.ndarray, int]:
        head, counts = self._read()
        period = max(_period_index(self._clock, self.period), int(head["period_index"]))
        if period != head["period_index"]:
            counts[:] = 0  # a new period: every client's budget is fresh
        return head, counts, period

    def counts(self) -> np.ndarray:
        """Reports of each client in the current period."""
        with self._locked():
            return self._current()[1]

    def remaining(self) -> np.ndarray:
        """Epsilon left to each client in the current period (rounded down)."""
        ks, inv = np.unique(self.counts(), return_inverse=True)
        eps = Fraction(self.epsilon)
        return np.array([max(0.0, float_down(self._budget - int(k) * eps)) for k in ks])[inv]

    def _values(self, values: Any, n: int) -> np.ndarray:
        if self._name in ("cms", "hcms", "rappor"):
            v = fingerprint(values)
        else:
            if np.ndim(values) != 1:
                raise ValueError(f"values must be 1-D, got shape {np.shape(values)}")
            v = _domain_values(values, self.protocol.k)
        if v.size != n:
            raise ValueError(f"values has {v.size} entries, client_ids has {n}")
        return v

    def _charge(self, ids: np.ndarray, partial: bool) -> tuple[np.ndarray | None, int]:
        """Charge one report per entry of ``ids`` (durably, before any report exists).

        All or nothing (``partial=False``: mask None) or each client's first allowed
        entries (the mask of accepted entries); and the batch's number (the count of
        batches charged before it, stored with the charge)."""
        with self._locked():
            head, counts, period = self._current()
            if partial:
                allowed = self._first_allowed(ids, counts)
                counts += np.bincount(ids[allowed], minlength=self.num_clients)
            else:
                allowed = None
                counts += np.bincount(ids, minlength=self.num_clients)
                over = np.flatnonzero(counts > self.max_reports)
                if over.size:
                    raise BudgetExhaustedError(
                        f"{over.size} client(s) (e.g. id {int(over[0])}) would exceed "
                        f"{self.max_reports} report(s) of epsilon {self.epsilon:g} in this "
                        f"period (budget {float(self._budget):g}); refused, nothing charged")
            head["period_index"] = period
            number = int(head.get("reports", 0))
            head["reports"] = number + 1
            self._write(head, counts)  # charged (durably) before any report exists
        return allowed, number

    def _first_allowed(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        order = np.argsort(ids, kind="stable")
        sid = ids[order]
        first = np.searchsorted(sid, sid, side="left")
        rank = np.empty(ids.size, np.int64)
        rank[order] = np.arange(ids.size) - first
        return rank < (self.max_reports - counts)[ids]

    def _ids(self, client_ids: Any) -> np.ndarray:
        if np.ndim(client_ids) != 1:
            raise ValueError(f"client_ids must be 1-D, got shape {np.shape(client_ids)}")
        return _indices(client_ids, "client_ids", self.num_clients)

    def report(self, client_ids: Any, values: Any) -> ReportBatch:
        """Charge each client one report per entry and randomize (all or nothing).

        Raises :class:`BudgetExhaustedError`, charging nothing, if any client would
        exceed its budget in the current period.
        """
        ids = self._ids(client_ids)
        vals = self._values(values, ids.size)
        _, number = self._charge(ids, partial=False)
        return self._randomize(ids, vals, number)

    def report_allowed(self, client_ids: Any, values: Any) -> tuple[ReportBatch, np.ndarray]:
        """Like :meth:`report`, but refuse only the entries beyond each client's budget
        (a client's first allowed entries, in input order, are kept).  Returns the
        reports of the accepted entries and the boolean mask of accepted entries."""
        ids = self._ids(client_ids)
        vals = self._values(values, ids.size)
        ok, number = self._charge(ids, partial=True)
        assert ok is not None
        return self._randomize(ids[ok], vals[ok], number), ok

    def _randomize(self, ids: np.ndarray, vals: np.ndarray, number: int) -> ReportBatch:
        gen = report_generator(self._rng, number)  # this batch's own randomness
        if self._name == "rappor":
            return batch_of(self.protocol, self.protocol.encode(
                vals, ids.astype(np.uint64), self._secret, rng=gen))
        return randomize(self.protocol, vals, gen)

    def __repr__(self) -> str:
        return (f"ClientPool({self._name}, {self.num_clients} clients, budget "
                f"{float(self._budget):g} per {self.period:g} s)")
