"""The ledger's anchor: a small file next to the ledger (``<ledger>-anchor``) holding the
number of rows and the hash of the last one, outside SQLite's write-ahead log.

SQLite treats a damaged or missing ``-wal`` as "these transactions never happened": one
flipped bit, a truncated or lost ``-wal`` after a crash rolls committed charges back, and
the hash chain of what is left is still intact.  The anchor is updated (and
``fdatasync``'d) after every commit, before :meth:`Budget.spend` returns, so a charge the
caller was told about is counted in the anchor; a ledger with fewer rows than its anchor,
or whose row ``count`` does not have the anchor's hash, is refused.

Layout: two 512-byte slots, written alternately (slot ``count % 2``), each a text record
``dpfast-anchor 1 <kind> <count> <head> <ledger id> <mac>`` checked by its MAC; a torn
write leaves the other slot, one row behind, valid.  ``kind`` is ``sha256`` (a checksum:
detects storage faults and a naive edit) or ``hmac-sha256:<key id>`` (keyed with the
operator's key, :func:`ledger_key`: without the key, the anchor cannot be forged).
Updates take an exclusive ``flock`` on the anchor and only ever raise the count, so
processes charging one ledger never move it backwards.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import os
from typing import Any, NamedTuple

from .records import LedgerError

__all__ = ["ENV_KEY", "Anchor", "AnchorFile", "key_id", "kind_of", "ledger_key"]

#: the environment variable with the operator's ledger key (used when no key is passed)
ENV_KEY = "DPFAST_LEDGER_KEY"
SLOT = 512
MAGIC = "dpfast-anchor"
VERSION = "1"


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
    """A valid slot: the ledger had ``count`` rows, the last of hash ``head``."""

    count: int
    head: str
    kind: str


def _record(kind: str, count: int, head: str, ledger_id: str, key: bytes | None) -> bytes:
    body = f"{MAGIC} {VERSION} {kind} {count} {head} {ledger_id}"
    data = f"{body} {mac(key, body)}\n".encode()
    assert len(data) < SLOT
    return data.ljust(SLOT, b"\0")


class AnchorFile:
    """The anchor of one ledger, as seen by one process (reopened after ``fork``)."""

    def __init__(self, ledger_path: str, ledger_id: str, kind: str, key: bytes | None) -> None:
        self.path = ledger_path + "-anchor"
        self.ledger_id = ledger_id
        self.kind = kind
        self.key = key
        self._fd: int | None = None
        self._pid = 0

    def _parse(self, raw: bytes) -> Anchor | None:
        text = raw.split(b"\0", 1)[0].decode("ascii", "replace").strip()
        parts = text.split(" ")
        if len(parts) != 7 or parts[0] != MAGIC or parts[1] != VERSION:
            return None
        _, _, kind, count, head, ledger_id, tag = parts
        if kind != self.kind or ledger_id != self.ledger_id or not count.isdigit():
            return None
        if not hmac.compare_digest(tag, mac(self.key, " ".join(parts[:6]))):
            return None
        return Anchor(int(count), head, kind)

    def _best(self, raw: bytes) -> Anchor | None:
        found = [a for a in (self._parse(raw[:SLOT]), self._parse(raw[SLOT:2 * SLOT])) if a]
        return max(found, key=lambda a: a.count) if found else None

    def _diagnose(self, raw: bytes) -> str:
        kinds = set()
        for s in (raw[:SLOT], raw[SLOT:2 * SLOT]):
            parts = s.split(b"\0", 1)[0].decode("ascii", "replace").split(" ")
            if len(parts) == 7 and parts[0] == MAGIC:
                kinds.add(parts[2])
                if parts[5] != self.ledger_id:
                    return ("it was written for another ledger: the ledger's definition has "
                            "been tampered with, or the anchor was copied from elsewhere")
        if kinds and self.kind not in kinds:
            other = kinds.pop()
            if other.startswith("hmac") and self.key is None:
                return (f"it is keyed ({other}): set {ENV_KEY} or pass ledger_key= to "
                        "open this ledger")
            return f"it was written with {other}, not {self.kind} (another key?)"
        return "neither of its records matches its checksum or key (damaged or forged)"

    def _open(self, flags: int) -> int:
        return os.open(self.path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)

    def read(self) -> Anchor | None:
        """The anchor (None when the file does not exist); LedgerError if it is unusable."""
        try:
            fd = self._open(os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise LedgerError(f"cannot read the anchor {self.path!r}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            raw = os.pread(fd, 2 * SLOT, 0)
        finally:
            os.close(fd)
        best = self._best(raw)
        if best is None:
            raise LedgerError(f"the anchor {self.path!r} of the ledger cannot be used: "
                              f"{self._diagnose(raw)}")
        return best

    def create(self, count: int, head: str) -> None:
        """Write a new anchor file (owner-only); an existing one is left alone."""
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            return
        try:
            os.fchmod(fd, 0o600)
            rec = _record(self.kind, count, head, self.ledger_id, self.key)
            os.pwrite(fd, rec + rec, 0)
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(os.path.dirname(self.path))

    def update(self, count: int, head: str) -> None:
        """Record that the ledger has ``count`` rows ending in ``head`` (only forward)."""
        if self._fd is None or self._pid != os.getpid():
            self._fd = self._open(os.O_RDWR)  # a forked child gets its own description
            self._pid = os.getpid()
        fd = self._fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            raw = os.pread(fd, 2 * SLOT, 0)
            if _largest_count(raw) >= count:  # rare: check the records before skipping
                current = self._best(raw)
                if current is not None and current.count >= count:
                    return  # another process already recorded as much (or more)
            os.pwrite(fd, _record(self.kind, count, head, self.ledger_id, self.key),
                      SLOT * (count % 2))
            os.fdatasync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None and self._pid == os.getpid():
            os.close(fd)


def _largest_count(raw: bytes) -> int:
    """The larger count of the two slots, read without checking them (a fast test; a
    count that would stop an update is checked first)."""
    best = -1
    for start in (0, SLOT):
        parts = raw[start:start + 64].split(b" ", 4)
        if len(parts) == 5 and parts[0] == b"dpfast-anchor" and parts[3].isdigit():
            best = max(best, int(parts[3]))
    return best


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
