"""The ledger's anchor: a small file next to the ledger (``<ledger>-anchor``) holding the
number of rows and the last row itself, outside SQLite's write-ahead log.

SQLite treats a damaged or missing ``-wal`` as "these transactions never happened": one
flipped bit, a truncated or lost ``-wal`` after a crash rolls committed charges back, and
the hash chain of what is left is still intact.  The anchor is written in the charge's
transaction, *before* its commit, and ``fdatasync``'d in a helper thread while SQLite
syncs the commit (the two flushes overlap); :meth:`Budget.spend` returns when both are
durable.  So every charge a caller was told about is in the anchor, and the anchor is
at most one row -- the charge being committed -- ahead of the ledger.

Opening (:mod:`.session`): the ledger must have the anchor's row count, with the
anchor's hash at that row.  A ledger exactly one row short whose next row is the
anchor's (it continues the chain, its hash is right) is completed with that row -- a
crash during a commit, or a ``-wal`` that lost the last commit: the charge counts (a
crash loses budget, never the reverse).  Anything shorter is refused (LedgerError).

Layout: two slots of :data:`SLOT` bytes, written alternately (slot ``count % 2``), each a
text line ``dpfast-anchor 2 <kind> <count> <head> <ledger id> <row> <mac>`` (``row``:
the row as base64 JSON, or ``-``) checked by its MAC; a torn write leaves the other slot,
one row behind, valid.  ``kind`` is ``sha256`` (a checksum: detects storage faults and a
naive edit) or ``hmac-sha256:<key id>`` (keyed with the operator's key,
:func:`ledger_key`: without the key, the anchor cannot be forged).  Every write happens
under SQLite's write lock of the ledger, so writers never race.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import queue
import threading
from typing import Any, NamedTuple

from .records import LedgerError

__all__ = ["ENV_KEY", "Anchor", "AnchorFile", "key_id", "kind_of", "ledger_key"]

#: the environment variable with the operator's ledger key (used when no key is passed)
ENV_KEY = "DPFAST_LEDGER_KEY"
SLOT = 1 << 16  # the largest record: a row with about 48 KiB of note and event text
MAGIC = "dpfast-anchor"
VERSION = "2"


def ledger_key(key: Any = None) -> bytes | None:
    """The operator's key: ``key`` (str or bytes, at least 16 bytes), else the environment
    variable :data:`ENV_KEY` (unset or empty: no key)."""
    where = "ledger_key"
    if key is None:
        env = os.environ.get(ENV_KEY)
        if not env:
            return None
        key, where = env, f"the environment variable {ENV_KEY}"
    if isinstance(key, str):
        key = key.encode()
    if not isinstance(key, (bytes, bytearray)):
        raise TypeError(f"ledger_key must be None, str or bytes, got {type(key).__name__}")
    if len(key) < 16:
        raise ValueError(f"{where} must be at least 16 bytes long, got {len(key)}")
    return bytes(key)


def key_id(key: bytes) -> str:
    """A public fingerprint of the key (names it in the ledger; reveals nothing of it)."""
    return hmac.new(key, b"dpfast ledger key id", hashlib.sha256).hexdigest()[:16]


def kind_of(key: bytes | None) -> str:
    return "sha256" if key is None else f"hmac-sha256:{key_id(key)}"


def mac(key: bytes | None, text: str) -> str:
    """SHA-256 of ``text``, or its HMAC-SHA256 under ``key``."""
    if key is None:
        return hashlib.sha256(text.encode()).hexdigest()
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


class Anchor(NamedTuple):
    """A valid slot: the ledger has ``rows`` rows, the last of hash ``head``; ``row``
    (the 13 columns of row ``rows``) when the writer recorded it."""

    rows: int
    head: str
    row: tuple[Any, ...] | None


# --------------------------------------------------------------------------- the syncer
# One helper thread per process runs fdatasync while the charging thread commits; it is
# stopped before fork (no thread crosses fork, and forking warns about none).

_jobs: queue.SimpleQueue[Any] | None = None
_thread: threading.Thread | None = None
_start = threading.Lock()


def _work(jobs: queue.SimpleQueue[Any]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        fd, done, failed = job
        try:
            os.fdatasync(fd)
        except OSError as exc:
            failed.append(exc)
        done.set()


def _submit(fd: int) -> tuple[threading.Event, list[OSError]]:
    global _jobs, _thread
    with _start:
        if _thread is None or not _thread.is_alive():
            _jobs = queue.SimpleQueue()
            _thread = threading.Thread(target=_work, args=(_jobs,), daemon=True,
                                       name="dpfast-ledger-anchor")
            _thread.start()
        assert _jobs is not None
        done, failed = threading.Event(), []  # type: ignore[var-annotated]
        _jobs.put((fd, done, failed))
    return done, failed


def _stop() -> None:
    global _jobs, _thread
    with _start:
        if _thread is not None and _thread.is_alive() and _jobs is not None:
            _jobs.put(None)
            _thread.join()
        _jobs, _thread = None, None


def _forget() -> None:  # in a forked child: the parent's thread does not exist here
    global _jobs, _thread, _start
    _jobs, _thread, _start = None, None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_stop, after_in_child=_forget)


class Pending:
    """An anchor record being flushed (see :meth:`AnchorFile.stage`)."""

    __slots__ = ("done", "failed")

    def __init__(self, fd: int) -> None:
        self.done, self.failed = _submit(fd)

    def wait(self) -> None:
        """Until the record is durable (OSError if the flush failed)."""
        self.done.wait()
        if self.failed:
            raise self.failed[0]


# --------------------------------------------------------------------------- the file


class AnchorFile:
    """The anchor of one ledger, as seen by one process (reopened after ``fork``)."""

    def __init__(self, ledger_path: str, ledger_id: str, kind: str, key: bytes | None) -> None:
        self.path = ledger_path + "-anchor"
        self.ledger_id = ledger_id
        self.kind = kind
        self.key = key
        self._fd: int | None = None
        self._pid = 0

    def _record(self, count: int, head: str, row: tuple[Any, ...] | None) -> bytes:
        packed = "-" if row is None else base64.b64encode(
            json.dumps(list(row), separators=(",", ":"), allow_nan=True).encode()).decode()
        body = f"{MAGIC} {VERSION} {self.kind} {count} {head} {self.ledger_id} {packed}"
        data = f"{body} {mac(self.key, body)}\n".encode()
        if len(data) > SLOT:
            raise LedgerError(f"the record is too large for the ledger's anchor "
                              f"({len(data)} bytes; at most {SLOT}): shorten the note")
        return data

    def _parse(self, raw: bytes) -> tuple[Anchor | None, str]:
        text = raw.split(b"\n", 1)[0].decode("ascii", "replace")
        parts = text.split(" ")
        if len(parts) != 8 or parts[0] != MAGIC or parts[1] != VERSION:
            return None, "damaged"
        _, _, kind, count, head, ledger_id, packed, tag = parts
        if ledger_id != self.ledger_id:
            return None, "foreign"
        if kind != self.kind:
            return None, kind
        expected = mac(self.key, " ".join(parts[:7])).encode()
        if not (count.isascii() and count.isdigit()) or not hmac.compare_digest(
                tag.encode(), expected):
            return None, "damaged"
        row = None
        if packed != "-":
            try:
                row = tuple(json.loads(base64.b64decode(packed, validate=True)))
            except ValueError:
                return None, "damaged"
        return Anchor(int(count), head, row), ""

    def read(self) -> Anchor | None:
        """The anchor (None when the file does not exist); LedgerError if it is unusable."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise LedgerError(f"cannot read the anchor {self.path!r}: {exc}") from exc
        try:
            slots = [self._parse(os.pread(fd, SLOT, s * SLOT)) for s in (0, 1)]
        finally:
            os.close(fd)
        found = [a for a, _ in slots if a is not None]
        if found:
            return max(found, key=lambda a: a.rows)
        why = {w for _, w in slots}
        if "foreign" in why:
            text = ("it was written for another ledger: the ledger's definition has been "
                    "tampered with, or the anchor was copied from elsewhere")
        elif why - {"damaged", ""}:
            other = sorted(why - {"damaged", "", "foreign"})[0]
            if other.startswith("hmac") and self.key is None:
                text = (f"it is keyed ({other}): set {ENV_KEY} or pass ledger_key= to "
                        "open this ledger")
            else:
                text = f"it was written with {other}, not {self.kind} (another key?)"
        else:
            text = "neither of its records matches its checksum or key (damaged or forged)"
        raise LedgerError(f"the anchor {self.path!r} of the ledger cannot be used: {text}")

    def _handle(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            self._fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK
                               | os.O_CLOEXEC)
            self._pid = os.getpid()
        return self._fd

    def create(self, count: int, head: str) -> bool:
        """Write a new anchor file (owner-only; call under the ledger's write lock).
        False if one exists (it is left alone).

        The file appears complete or not at all: both records are written and synced in a
        private temporary file first, which is then hard-linked to the anchor's name
        (``link`` fails if the name exists) -- a process opening the ledger at that moment
        never reads an empty anchor (it would report it as damaged)."""
        if os.path.lexists(self.path):
            return False
        tmp = f"{self.path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            try:
                os.fchmod(fd, 0o600)
                rec = self._record(count, head, None)
                os.pwrite(fd, rec, 0)
                os.pwrite(fd, rec, SLOT)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                return False
        finally:
            os.unlink(tmp)
        _fsync_dir(os.path.dirname(self.path))
        return True

    def write(self, count: int, head: str, row: tuple[Any, ...] | None) -> Pending:
        """Record ``count`` rows ending in ``head`` (and ``row``, row ``count``) in slot
        ``count % 2`` and start flushing it (call under the ledger's write lock)."""
        fd = self._handle()
        os.pwrite(fd, self._record(count, head, row), SLOT * (count % 2))
        return Pending(fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and self._pid == os.getpid():
            os.close(fd)


def _fsync_dir(directory: str) -> None:
    """fsync a directory (a new file's entry durable); best effort where unsupported."""
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
