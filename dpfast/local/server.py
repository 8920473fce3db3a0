"""The streaming local-DP server: add report batches, merge partial aggregates, estimate."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpfast.local import _tally
from dpfast.local._validate import _domain_values
from dpfast.local.reports import (
    STATE_MAGIC,
    ReportBatch,
    build_protocol,
    pack,
    protocol_name,
    protocol_params,
    unpack,
)

_SKETCHES = ("cms", "hcms", "rappor")
_MAX_N = 1 << 62


def _candidates(values: Any, name: str) -> list[Any]:
    """A candidate list as JSON-ready items (ints or strings)."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    out = list(values)
    for c in out:
        if isinstance(c, bool) or not isinstance(c, (int, str)):
            raise TypeError(f"{name} must be integers or strings, got {type(c).__name__}")
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out


class Aggregator:
    """Streaming server of one local-DP protocol configuration.

    Parameters
    ----------
    protocol : protocol object
        A :mod:`dpfast.local` protocol (:class:`GeneralizedRandomizedResponse` -- ``rr``
        for ``k = 2``, else ``krr`` --, :class:`OptimizedUnaryEncoding`,
        :class:`OptimalLocalHashing`, :class:`CountMeanSketch`,
        :class:`HadamardCountMeanSketch`, :class:`Rappor`) configured with the public
        parameters the clients use; or build one from a report's parameters with
        :meth:`from_params`.
    candidates : sequence, optional
        The items to estimate.  ``rr``/``krr``/``oue``/``olh``: domain indices (default
        the whole domain ``[0, k)``; OLH counts support for exactly these values, so it
        needs them up front for a domain over ``2^26``).  ``cms``/``hcms``/``rappor``:
        any ints or strings (the sketch answers any candidate; they may also be given to
        :meth:`estimate`), stored with the state.

    Notes
    -----
    The state is integer tallies (per-value support counts; sketch or per-cohort bit
    counts and row totals) and the number of reports ``n``: :meth:`add` takes batches of
    any size, :meth:`merge` adds another aggregator's tallies (same configuration), so a
    set of reports gives the *same* state however it is split into batches or shards and
    in whatever order they arrive (integer addition).  Estimates
    (:meth:`estimate`, :func:`dpfast.local.monitor.estimates`) are float post-processing
    of the state at any point.  Reports whose protocol or public parameters differ from
    the aggregator's, or that no client of it could produce, are refused with a
    ``ValueError`` naming what mismatched.

    **Privacy**

    The server only post-processes reports that are already ``epsilon``-LDP per report
    (the protocol's own **Privacy** section): aggregation, merging, estimation and
    saving the state cost nothing further.  Erlingsson et al. 2014; Apple 2017; Wang et
    al., USENIX Security 2017.
    """

    def __init__(self, protocol: Any, *, candidates: Sequence[Any] | None = None) -> None:
        self.protocol = protocol_name(protocol)
        self.params = protocol_params(protocol)
        self._proto = protocol
        self.n = 0
        self._items: np.ndarray | None = None
        self.candidates: list[Any] | None = None
        if candidates is not None:
            cands = _candidates(candidates, "candidates")
            if self.protocol not in _SKETCHES:
                self._items = _domain_values(np.asarray(cands), protocol.k, "candidates")
                cands = self._items.tolist()
            self.candidates = cands
        width = None if self._items is None else self._items.size
        if self.protocol == "olh" and width is None and protocol.k > (1 << 26):
            raise ValueError(f"k={protocol.k} is too large to count the whole domain; pass "
                             "candidates= (the domain values to count)")
        self._state = _tally.empty(self.protocol, protocol, width)

    @classmethod
    def from_params(cls, protocol: str, params: dict[str, Any], *,
                    candidates: Sequence[Any] | None = None) -> Aggregator:
        """An aggregator for the protocol wire name and public parameters (e.g. of a
        :class:`~dpfast.local.reports.ReportBatch`)."""
        return cls(build_protocol(protocol, params), candidates=candidates)

    def __repr__(self) -> str:
        return f"Aggregator({self.protocol!r}, n={self.n}, params={self.params})"

    @property
    def protocol_object(self) -> Any:
        """The protocol object (estimators, variances)."""
        return self._proto

    @property
    def state(self) -> dict[str, np.ndarray]:
        """A copy of the integer tallies."""
        return {k: v.copy() for k, v in self._state.items()}

    @property
    def epsilon(self) -> float:
        """Per-report epsilon of the reports aggregated (RAPPOR: one report's)."""
        return float(getattr(self._proto, "epsilon", getattr(self._proto, "epsilon_one", 0)))

    # -- input
    def _batch(self, reports: Any) -> ReportBatch:
        if isinstance(reports, (bytes, bytearray, memoryview)):
            return ReportBatch.from_bytes(bytes(reports))
        if isinstance(reports, str):
            return ReportBatch.from_json(reports)
        if isinstance(reports, ReportBatch):
            return reports
        raise TypeError(f"reports must be a ReportBatch, its bytes or its JSON, got "
                        f"{type(reports).__name__}")

    def _same(self, protocol: str, params: dict[str, Any], what: str) -> None:
        if protocol != self.protocol:
            raise ValueError(f"{what} are of protocol {protocol!r}, this aggregator's is "
                             f"{self.protocol!r}")
        for key, mine in self.params.items():
            theirs = params.get(key)
            if theirs != mine:
                raise ValueError(f"{what}' {key} = {theirs!r} differs from this aggregator's "
                                 f"{key} = {mine!r} (reports of another configuration)")

    def add(self, reports: Any) -> Aggregator:
        """Aggregate a batch of reports (a :class:`ReportBatch`, its bytes or JSON).

        The whole batch is checked before anything is counted: a refused batch leaves the
        state unchanged.  Returns ``self``.
        """
        batch = self._batch(reports)
        self._same(batch.protocol, batch.params, "reports")
        arrays = _tally.check(self.protocol, self._proto, batch.arrays)
        n = batch.n
        if self.n + n > _MAX_N:
            raise OverflowError("more than 2^62 reports in one aggregate")
        if n:  # checked above: counting cannot fail half-way
            _tally.tally(self.protocol, self._proto, arrays, self._state, self._items)
        self.n += n
        return self

    def add_all(self, batches: Any) -> Aggregator:
        """:meth:`add` every batch of an iterable; returns ``self``."""
        for b in batches:
            self.add(b)
        return self

    def merge(self, other: Aggregator) -> Aggregator:
        """Add another aggregator's tallies (same protocol, parameters and OLH candidates);
        returns ``self``.  Merging is exact integer addition."""
        if not isinstance(other, Aggregator):
            raise TypeError(f"other must be an Aggregator, got {type(other).__name__}")
        self._same(other.protocol, other.params, "the other aggregator's reports")
        if self.protocol not in _SKETCHES and self.candidates != other.candidates:
            raise ValueError("the other aggregator counts other candidates")
        if self.n + other.n > _MAX_N:
            raise OverflowError("more than 2^62 reports in one aggregate")
        self._state = {k: v + other._state[k] for k, v in self._state.items()}
        self.n += other.n
        return self

    def copy(self) -> Aggregator:
        """An independent copy."""
        return Aggregator.from_bytes(self.to_bytes())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Aggregator):
            return NotImplemented
        return (self.protocol == other.protocol and self.params == other.params
                and self.n == other.n and self.candidates == other.candidates
                and all(np.array_equal(v, other._state[k]) for k, v in self._state.items()))

    __hash__ = None  # type: ignore[assignment]

    # -- estimates
    def estimate(self, candidates: Sequence[Any] | None = None, *, alpha: float = 0.05
                 ) -> Any:
        """Estimates with ``1 - alpha`` confidence intervals now
        (:func:`dpfast.local.monitor.estimates`)."""
        from dpfast.local.monitor import estimates

        return estimates(self, candidates, alpha=alpha)

    def heavy_hitters(self, candidates: Sequence[Any] | None = None, *, alpha: float = 0.05,
                      min_count: float = 0.0, top: int | None = None) -> list[tuple]:
        """Candidates significantly above ``min_count`` (see
        :meth:`dpfast.local.monitor.Estimates.heavy_hitters`)."""
        return self.estimate(candidates, alpha=alpha).heavy_hitters(
            alpha=alpha, min_count=min_count, top=top)

    # -- serialization
    def to_bytes(self) -> bytes:
        """The state as a versioned binary container (header JSON + int64 arrays)."""
        head = {"format": "dpfast.ldp.state", "protocol": self.protocol,
                "params": self.params, "n": self.n, "candidates": self.candidates}
        return pack(STATE_MAGIC, head, self._state)

    @classmethod
    def from_bytes(cls, data: bytes) -> Aggregator:
        """Decode :meth:`to_bytes`, checking every tally (``ValueError`` if malformed)."""
        head, arrays = unpack(STATE_MAGIC, data, "aggregator state")
        if head.get("format") != "dpfast.ldp.state":
            raise ValueError("aggregator state: format must be 'dpfast.ldp.state'")
        n = head.get("n")
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= _MAX_N:
            raise ValueError(f"aggregator state: n must be an integer in [0, 2^62], got {n!r}")
        agg = cls.from_params(head.get("protocol"), head.get("params"),  # type: ignore[arg-type]
                              candidates=head.get("candidates"))
        width = None if agg._items is None else agg._items.size
        agg._state = _tally.check_state(agg.protocol, agg._proto, arrays, n, width)
        agg.n = n
        return agg

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the state to ``path`` atomically (temporary file, fsync, rename)."""
        write_atomic(path, self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Aggregator:
        """Read a state written by :meth:`save`."""
        with open(path, "rb") as fh:
            return cls.from_bytes(fh.read())

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        return (Aggregator.from_bytes, (self.to_bytes(),))


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically: a crash leaves the old or the new file."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path)) or "."
    fd, tmp = tempfile.mkstemp(prefix=".dpfast-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
