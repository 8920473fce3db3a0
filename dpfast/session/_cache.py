"""A release through the result cache: the event probe, the ledger query, the payload.

A release's privacy event is data-independent -- a function of its public parameters and
of the columns' types -- so the session learns it *before* touching the data, by running
the release on one synthetic row with a budget that stops at the charge (:func:`probe`).
Then ``budget.query(query_id, event)`` either returns the stored answer (a hit: no data
read, nothing charged) or charges the event, and the release runs on the real rows; its
event must equal the probed one (else the computation fails, recorded as failed).

The probe reads no private row: its rows are synthetic (one row of zeros with the columns'
types), and the types come from the schema or, for a filtered or joined row query, from
binding the query without running it (:meth:`dpfast.session._source.Source.fetch`), so
what it raises is a function of public information.  After the charge every failure is
one fixed :class:`~dpfast._core.errors.ReleaseFailedError` (:func:`cached`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from dpfast import tables as _tables
from dpfast._core.errors import ReleaseFailedError

from . import _spec

__all__ = ["ReleaseFailedError", "cached", "from_payload", "one_row", "probe", "question"]

#: The question being answered (a SQL query), while :func:`question` runs: its parts'
#: query ids are ``<first part>~<part>`` (the first part's own id names the question, so
#: the same question written another way -- case, spacing -- has the same ids), and the
#: usage report counts the question once.
_QUESTION: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "dpfast_question", default=None)


@contextlib.contextmanager
def question() -> Iterator[None]:
    """Charge the releases made inside as the parts of one question."""
    token = _QUESTION.set([])
    try:
        yield
    finally:
        _QUESTION.reset(token)


def _query_id(store: Any, spec: dict[str, Any]) -> str:
    """The ledger query id of a release: its spec's id, prefixed by its question's."""
    part = _spec.query_id(spec)
    asked = _QUESTION.get()
    if asked is None:
        return part
    if not asked:
        asked.append(part)
    if store.budget.has_result(part):  # stored before questions were grouped: reuse it
        return part
    return f"{asked[0]}~{part}"


class _Event(Exception):
    def __init__(self, event: Any) -> None:
        super().__init__("probe")
        self.event = event


class _Probe:
    """A budget that records the event of the charge and stops the release there."""

    def spend(self, event: Any, *, note: str = "", analyst: str = "") -> Any:
        raise _Event(event)

    @contextlib.contextmanager
    def charge(self, event: Any, *, note: str = "", analyst: str = "") -> Iterator[None]:
        raise _Event(event)
        yield  # pragma: no cover


def probe(release: Callable[[Any], Any]) -> Any:
    """The event ``release(budget)`` charges (run on synthetic rows: it stops there)."""
    try:
        release(_Probe())
    except _Event as e:
        return e.event
    raise RuntimeError("the release charged nothing")


def one_row(empty: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One synthetic row with the dtypes of the (empty) columns ``empty``."""
    out = {}
    for name, a in empty.items():
        dt = np.asarray(a).dtype
        out[name] = (np.zeros(1, dt) if dt.kind in "iufbMm"
                     else np.array([""], dtype=object))
    return out


def _encode(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def table_payload(rel: Any) -> dict[str, Any]:
    kind = "quantile" if isinstance(rel, _tables.QuantileRelease) else "table"
    return {"kind": kind, "release": rel.to_state()}


def from_payload(payload: bytes) -> Any:
    """The cached answer: a TableRelease, a TopDownRelease, or a histogram's ``(hist,
    edges, release)``."""
    d = json.loads(payload)
    if d["kind"] == "table":
        return _tables.TableRelease.from_state(d["release"])
    if d["kind"] == "quantile":
        return _tables.QuantileRelease.from_state(d["release"])
    if d["kind"] == "topdown":
        return _tables.TopDownRelease.from_state(d["release"])
    if d["kind"] == "histogram":
        from dpfast.tables._state import decode_array

        return (decode_array(d["hist"]), decode_array(d["edges"]),
                _tables.TableRelease.from_state(d["release"]))
    raise ValueError(f"unknown cached payload kind {d['kind']!r}")


def cached(session: Any, spec: dict[str, Any], what: str, event: Any,
           compute: Callable[[], Any], payload: Callable[[Any], dict[str, Any]],
           release_of: Callable[[Any], Any] = lambda r: r, need: float | None = None) -> Any:
    """The stored answer of ``spec``, or ``compute()`` charged as ``event`` and stored.

    **After the charge, one fixed failure.**  Everything ``compute`` does -- reading,
    casting, filtering and joining the private rows, checking their values, computing the
    release and its payload -- depends on the data, so any exception it raises ends as
    :class:`~dpfast._core.errors.ReleaseFailedError` with its fixed message, raised
    outside the handler (no ``__cause__``, no ``__context__``: the engine's text and its
    traceback are dropped), and the charge is recorded as ``failed`` with that same text.
    Storing the result (a ledger write of a DP output) is not wrapped: its errors are the
    ledger's, not the data's.  ``KeyboardInterrupt`` and ``SystemExit`` pass unchanged.
    """
    store = session._store
    qid = _query_id(store, spec)
    if need is not None:
        session._check_room(need, what, qid)
    with store.query(qid, event, note=what, analyst=session.analyst_name) as q:
        if q.hit:
            return from_payload(q.payload)
        data: bytes | None = None
        try:
            result = compute()
            if release_of(result).event != event:  # a bug: the probe promised another
                raise RuntimeError("the release's event is not the probed one")
            data = _encode(payload(result))
        except Exception:  # noqa: BLE001 - every failure after the charge is the same one
            pass
        if data is None:
            raise ReleaseFailedError() from None
        q.store(data)
    return result
