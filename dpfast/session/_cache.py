"""A release through the result cache: the query id, the ledger query, the payload.

A release's privacy event is data-independent -- a function of its spec and of the
columns' types -- so the session learns it *before* touching the data: from the release's
plan (:func:`dpfast.tables.plan.plan` over the table's schema, :mod:`dpfast.session._release`;
a histogram's :func:`dpfast.tables.histogram.plan_histogram`, TopDown's
:func:`dpfast.tables.hierarchy.plan_topdown`: no release is run before the charge).
Then ``budget.query(query_id, event)`` either returns the stored answer (a hit: no data
read, nothing charged) or charges the event, and the release runs on the real rows; its
event must equal the planned one (else the computation fails, recorded as failed).

The query id is the spec's (:meth:`dpfast.tables.spec.ReleaseSpec.query_id`): a method
call and an SQL aggregate asking the same question have the same spec, so the same id,
and are charged once.  After the charge every failure is one fixed
:class:`~dpfast._core.errors.ReleaseFailedError` (:func:`cached`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar, cast

from dpfast import tables as _tables
from dpfast._core.errors import ReleaseFailedError
from dpfast.tables.spec import ReleaseSpec

if TYPE_CHECKING:
    import numpy as np

    from dpfast.accounting.events import DpEvent
    from dpfast.tables.hierarchy import TopDownRelease
    from dpfast.tables.quantile_release import QuantileRelease
    from dpfast.tables.release import TableRelease

    from ._store import Store
    from .session import Session

__all__ = ["ReleaseFailedError", "cached", "from_payload", "question"]

#: a release of :mod:`dpfast.tables` a session caches (a statistic per key)
Released: TypeAlias = "TableRelease | QuantileRelease"
#: a cached answer: a release, a TopDownRelease, or a histogram's ``(hist, edges, release)``
Answer: TypeAlias = ("TableRelease | QuantileRelease | TopDownRelease"
                     " | tuple[np.ndarray, np.ndarray, TableRelease]")
#: the answer a call of :func:`cached` computes (and finds stored: of the same kind)
_A = TypeVar("_A", bound=Answer)


class _Evented(Protocol):
    """A release: it states the privacy event it was charged."""

    @property
    def event(self) -> DpEvent:
        """The release's privacy event."""

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


def _query_id(store: Store, spec: ReleaseSpec) -> str:
    """The ledger query id of a release: its spec's id (prefixed by its question's in a
    question of several parts); where an answer of the spec is stored already -- asked by
    a method call, or as a part of any question -- that answer's id (a hit)."""
    part = spec.query_id()
    asked = _QUESTION.get()
    if asked is not None and not asked:
        asked.append(part)
    stored = store.result_id(part)
    if stored is not None:
        return stored
    if asked is None:
        return part
    return f"{asked[0]}~{part}"


def _encode(obj: dict[str, object]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def table_payload(rel: Released) -> dict[str, object]:
    kind = "quantile" if isinstance(rel, _tables.QuantileRelease) else "table"
    return {"kind": kind, "release": rel.to_state()}


def from_payload(payload: bytes) -> Answer:
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
        from dpfast.tables.state import decode_array

        return (decode_array(d["hist"]), decode_array(d["edges"]),
                _tables.TableRelease.from_state(d["release"]))
    raise ValueError(f"unknown cached payload kind {d['kind']!r}")


def cached(session: Session, spec: ReleaseSpec, what: str, event: DpEvent,
           compute: Callable[[], _A], payload: Callable[[_A], dict[str, object]],
           release_of: Callable[[_A], _Evented], need: float | None = None) -> _A:
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
            assert q.payload is not None  # a hit has its stored answer
            return cast("_A", from_payload(q.payload))  # the stored answer of this spec
        data: bytes | None = None
        try:
            result = compute()
            if release_of(result).event != event:  # a bug: the plan promised another
                raise RuntimeError("the release's event is not the planned one")
            data = _encode(payload(result))
        except Exception:  # noqa: BLE001 - every failure after the charge is the same one
            pass
        if data is None:
            raise ReleaseFailedError() from None
        q.store(data)
    return result
