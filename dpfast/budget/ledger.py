"""The SQLite ledger: create, open and check a ledger file, read and append rows,
verify the hash chain.

A ledger is a SQLite database (WAL, ``synchronous=FULL``) with the tables of
:mod:`dpfast.budget.schema`.  Files are created owner-only (mode 0600, and SQLite gives
the ``-wal``/``-shm`` files the mode of the database) whatever the umask, and a
ledger that other users can write is refused.  Rows form a hash chain: each stores
the SHA-256 of the previous row's hash and its own content, and the first row's
``prev`` is derived from the ledger's definition, so deleting, editing or reordering
rows -- or truncating the log -- is detected when the ledger is opened.  The path rules
(owner, mode, file type, directory, symbolic links) are :mod:`.paths`; the anchor that
catches committed charges lost with the ``-wal`` is :mod:`.anchor`; reading and verifying
rows is :mod:`.chain`.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import pathlib
import secrets
import sqlite3
import stat
from collections.abc import Callable, Sequence
from typing import Any

from . import checkpoint, migrations, paths, schema
from .anchor import ENV_KEY, AnchorFile, _fsync_dir, kind_of
from .chain import Chain
from .records import LedgerError

__all__ = ["LedgerFile", "read_meta", "PRIVACY_UNIT", "unit_definition", "bind_unit"]

#: the ``meta`` key of the ledger's privacy unit (see :func:`bind_unit`)
PRIVACY_UNIT = "privacy_unit"


def connect(target: str, timeout: float, *, uri: bool = False) -> sqlite3.Connection:
    return sqlite3.connect(
        target,
        timeout=timeout,
        isolation_level=None,  # explicit BEGIN IMMEDIATE / COMMIT
        check_same_thread=False,  # guarded by the Budget's lock
        uri=uri,
    )


def _init_schema(conn: sqlite3.Connection, definition_text: str,
                 anchor_kind: str | None) -> None:
    """The tables of a new ledger; ``anchor_kind`` (file ledgers) is recorded in ``meta``:
    the ledger then always has an anchor, of that kind."""
    conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in schema.SCHEMA:
            conn.execute(statement)
        now = datetime.datetime.now(datetime.timezone.utc).isoformat()
        meta = [
            ("format", schema.FORMAT),
            ("version", str(schema.FORMAT_VERSION)),
            ("definition", definition_text),
            ("created", now),
        ]
        if anchor_kind is not None:
            for statement in checkpoint.SCHEMA:
                conn.execute(statement)
            meta.append(("anchor", anchor_kind))
        conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", meta)
        conn.execute(
            "INSERT INTO migrations (version, applied, description) VALUES (?, ?, ?)",
            (schema.FORMAT_VERSION, now, f"created in format {schema.FORMAT_VERSION}"),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _owner_only(path: str) -> None:
    """Create ``path`` empty with mode 0600 (umask cannot widen or narrow it)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


def _create_file(path: str, definition_text: str, timeout: float, anchor_kind: str) -> None:
    """Create a fully initialised ledger at ``path`` unless a file is there.

    Built in a temporary owner-only file of the same directory and published with
    ``os.link``, which fails if ``path`` exists: a ledger file that exists is always
    complete, concurrent creators cannot clobber each other, and an existing file is
    never overwritten.
    """
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(
        directory, f".{os.path.basename(path)}.{os.getpid()}.{secrets.token_hex(6)}.init"
    )
    try:
        _owner_only(tmp)
        conn = connect(tmp, timeout)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            _init_schema(conn, definition_text, anchor_kind)
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
                _owner_only(path)
            except FileExistsError:
                return
            with open(path, "r+b") as dst:
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


def read_meta(conn: sqlite3.Connection, where: str) -> dict[str, str]:
    """The ``meta`` table of a dpfast ledger (LedgerError if it is not one)."""
    try:
        (app_id,) = conn.execute("PRAGMA application_id").fetchone()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if app_id != schema.APPLICATION_ID or not {"meta", "charges"} <= tables:
            raise LedgerError(f"{where} is a SQLite database but not a dpfast ledger; "
                              "it was left untouched.")
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.Error as exc:
        raise LedgerError(f"{where} is damaged or not a SQLite database ({exc}); "
                          "it was left untouched.") from exc
    if meta.get("format") != schema.FORMAT or not {"version", "definition", "created"} <= set(meta):
        raise LedgerError(f"{where} has no valid dpfast metadata; it was left untouched.")
    try:
        version = int(meta["version"])
        json.loads(meta["definition"])
    except ValueError as exc:
        raise LedgerError(f"{where} has damaged metadata ({exc})") from exc
    if not 1 <= version <= schema.FORMAT_VERSION:
        raise LedgerError(f"{where} has format version {version}; this dpfast reads versions "
                          f"1 to {schema.FORMAT_VERSION}")
    return meta


def unit_definition(column: str | None) -> dict[str, Any]:
    """The privacy unit of a ledger's charges: the column naming the person (None: every
    row is a person) and the neighbouring relation it gives."""
    if column is None:
        relation = "add or remove one row (each row is a different person)"
    else:
        relation = f"add or remove one person: all rows with one value of column {column!r}"
    return {"column": column, "relation": relation}


def bind_unit(conn: sqlite3.Connection, definition: dict[str, Any]) -> dict[str, Any] | None:
    """Record ``definition`` (:func:`unit_definition`) as the ledger's privacy unit unless
    one is recorded; returns the unit recorded before (None: this call recorded it).

    The unit is a ``meta`` entry, which the schema's triggers make insert-only: once
    recorded it cannot change.  One write transaction, so two processes binding a new
    ledger at once agree on one unit.
    """
    text = json.dumps(definition, sort_keys=True)
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (PRIVACY_UNIT,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (PRIVACY_UNIT, text))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    if row is None:
        return None
    try:
        stored = json.loads(row[0])
    except ValueError as exc:
        raise LedgerError(f"the ledger's privacy unit is damaged ({exc})") from exc
    if not isinstance(stored, dict) or "column" not in stored:
        raise LedgerError("the ledger's privacy unit is damaged (no column)")
    return stored


def _header_check(path: str) -> None:
    try:  # O_NONBLOCK: never wait on a FIFO swapped in after the path was checked
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise LedgerError(f"ledger {path!r} is not a regular file")
            header = os.pread(fd, 100, 0)
        finally:
            os.close(fd)
    except IsADirectoryError:
        raise LedgerError(f"ledger path {path!r} is a directory") from None
    except OSError as exc:
        raise LedgerError(f"cannot read ledger {path!r}: {exc}") from exc
    if len(header) < 100 or not header.startswith(schema.SQLITE_MAGIC):
        what = "empty" if not header else "not a SQLite database"
        raise LedgerError(
            f"ledger {path!r} is {what}: it is not a dpfast ledger, or it is damaged. "
            "The file was left untouched; move it away or pass another path."
        )


def open_readonly(path: str, timeout: float = 30.0) -> tuple[sqlite3.Connection, dict[str, str]]:
    """A read-only connection to an existing ledger and its meta (nothing is written).

    ``path`` is checked first (:func:`.paths.check_ledger_path`, the rules of every
    ledger); the connection is to its real path."""
    path = paths.check_ledger_path(path, must_exist=True)
    _header_check(path)
    uri = pathlib.Path(path).absolute().as_uri()
    try:
        conn = connect(uri + "?mode=ro", timeout, uri=True)
    except sqlite3.Error as exc:
        raise LedgerError(f"cannot open ledger {path!r}: {exc}") from exc
    try:
        meta = read_meta(conn, f"ledger {path!r}")
    except BaseException:
        conn.close()
        raise
    return conn, meta


def append(conn: sqlite3.Connection, chain: Chain, fields: Sequence[Any]) -> schema.Row:
    """Insert the row after ``chain``'s end (in the caller's transaction); returns it.

    ``fields`` are ``time, status, ref, analyst, note, event, cost, user, host, pid`` and
    optionally ``query`` (default ``""``).
    The chain is advanced by the caller once the transaction committed.
    """
    row_id = chain.last_id + 1
    full = [row_id, *fields]
    if len(full) == 11:
        full.append("")
    digest = schema.row_hash(chain.last_hash, schema.hashed(full))
    conn.execute(
        f"INSERT INTO charges ({schema.COLUMNS}) VALUES ({schema.PLACEHOLDERS})",
        (*full, chain.last_hash, digest),
    )
    return schema.Row._make([*full, chain.last_hash, digest])


def insert(conn: sqlite3.Connection, row: schema.Row) -> None:
    """Insert a complete, verified row (the anchor's, restoring a lost commit)."""
    conn.execute(f"INSERT INTO charges ({schema.COLUMNS}) VALUES ({schema.PLACEHOLDERS})",
                 tuple(row))


class LedgerFile:
    """Where a budget's ledger lives: a file path or memory, with its definition and the
    operator's key (:func:`.anchor.ledger_key`) for its anchor and checkpoints.

    After :meth:`connect`: :attr:`genesis`, :attr:`anchor` (None in memory) and
    :attr:`anchor_required` (the ledger records that it has an anchor).
    """

    def __init__(self, path: str | None, definition: dict[str, Any], timeout: float,
                 key: bytes | None = None) -> None:
        self.path = path
        # resolved once: a later chdir (or a forked child's) must not move the ledger
        self.abspath = None if path is None else os.path.abspath(path)
        self.real: str | None = None  # the real path, fixed at the first open
        self.definition = definition
        self.definition_text = json.dumps(definition, sort_keys=True)
        self.timeout = timeout
        self.key = key
        self.where = "in-memory ledger" if path is None else f"ledger {path!r}"
        self.genesis = ""
        self.anchor: AnchorFile | None = None
        self.anchor_required = False

    def error(self, exc: BaseException, action: str) -> LedgerError:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return LedgerError(
                f"{action}: {self.where} stayed locked for more than timeout={self.timeout} s"
            )
        return LedgerError(f"{action}: {self.where} failed: {exc}")

    def _anchor_of(self, path: str, meta: dict[str, str]) -> None:
        """Set up :attr:`anchor` from the kind the ledger records (and the key given)."""
        stored = meta.get("anchor")
        kind = kind_of(self.key)
        if stored is not None and stored != kind:
            if stored.startswith("hmac") and self.key is None:
                why = (f"its anchor is keyed ({stored}): set {ENV_KEY} or pass "
                       "ledger_key= with the key it was created with")
            elif stored.startswith("hmac"):
                why = f"its anchor is keyed with another key ({stored}, not {kind})"
            else:
                why = ("it was created without a key (its anchor is a plain SHA-256), but a "
                       f"key was given (ledger_key= or {ENV_KEY}); a key cannot be added "
                       "to an existing ledger: start a new one, or open it without the key")
            raise LedgerError(f"cannot open {self.where}: {why}")
        self.genesis = schema.genesis_hash(meta["definition"], meta["created"])
        self.anchor = AnchorFile(path, self.genesis, kind, self.key)
        self.anchor_required = stored is not None

    def connect(self, load: Callable[[sqlite3.Connection], None]) -> sqlite3.Connection:
        """A read-write connection, creating, checking and migrating the ledger.

        ``load(conn)`` reads (and verifies) the rows; for a file of the current format it
        runs on a read-only connection *before* anything is written to the file, so a
        damaged or tampered ledger is never modified.
        """
        if self.path is None:
            conn = connect(":memory:", self.timeout)
            _init_schema(conn, self.definition_text, None)
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            self.genesis = schema.genesis_hash(meta["definition"], meta["created"])
            load(conn)
            return conn
        if self.real is None:
            assert self.abspath is not None
            path = paths.check_ledger_path(self.abspath, must_exist=False)
            if not os.path.lexists(path):
                try:
                    _create_file(path, self.definition_text, self.timeout, kind_of(self.key))
                except sqlite3.Error as exc:
                    raise LedgerError(f"cannot create ledger {path!r}: {exc}") from exc
            self.real = paths.check_ledger_path(path, must_exist=True)
        path = self.real
        # every rule again, before any connection creates -wal/-shm files
        ro, meta = open_readonly(path, self.timeout)
        try:
            if json.loads(meta["definition"]) != self.definition:
                raise LedgerError(
                    f"ledger {path!r} was created for the budget {meta['definition']}, not "
                    f"{self.definition_text}; a ledger's budget definition cannot change "
                    "(open it with the stored definition, or start a new ledger)"
                )
            version = int(meta["version"])
            current = version == schema.FORMAT_VERSION
            # format 2 reads as format 3 (no query ids yet): verified before it is migrated
            readable = version >= 2
            if readable:
                if not current:
                    migrations.check_genuine(ro, meta, path + "-anchor", f"ledger {path!r}")
                self._anchor_of(path, meta)
                try:
                    load(ro)
                except sqlite3.Error as exc:
                    raise LedgerError(
                        f"ledger {path!r} is damaged ({exc}); it was left untouched."
                    ) from exc
            else:
                migrations.check_genuine(ro, meta, path + "-anchor", f"ledger {path!r}")
        finally:
            ro.close()
        uri = pathlib.Path(path).absolute().as_uri()
        try:
            conn = connect(uri + "?mode=rw", self.timeout, uri=True)
            try:
                (mode,) = conn.execute("PRAGMA journal_mode").fetchone()
                if str(mode).lower() != "wal":
                    try:
                        conn.execute("PRAGMA journal_mode = WAL")
                    except sqlite3.OperationalError:
                        pass  # busy: rollback-journal mode is also safe, only slower
                conn.execute("PRAGMA synchronous = FULL")
                if not current:
                    self._migrate(conn)
                if not readable:
                    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                    self._anchor_of(path, meta)
                    load(conn)
                if not self.anchor_required or not checkpoint.exists(conn):
                    self._add_anchoring(conn)
            except BaseException:
                conn.close()
                raise
        except sqlite3.Error as exc:
            raise LedgerError(f"cannot open ledger {path!r}: {exc}") from exc
        return conn

    def _add_anchoring(self, conn: sqlite3.Connection) -> None:
        """A ledger of an older dpfast: record its anchor kind and add the checkpoint
        table (and move that into the main file, so a lost ``-wal`` cannot undo it)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in checkpoint.SCHEMA:
                conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('anchor', ?)",
                         (kind_of(self.key),))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.anchor_required = True
        with contextlib.suppress(sqlite3.Error):
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = int(dict(conn.execute("SELECT key, value FROM meta").fetchall())["version"])
            migrations.migrate(conn, version)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if isinstance(exc, (sqlite3.Error, ValueError, KeyError)):
                raise LedgerError(f"cannot migrate {self.where}: {exc}") from exc
            raise


def stored_orders(path: str | None, accounting: str) -> Any:
    """The orders of an existing ledger of this accounting (None if none)."""
    if path is None or not os.path.isfile(path):
        return None
    conn, meta = open_readonly(path)
    conn.close()
    stored = json.loads(meta["definition"])
    return stored.get("orders") if stored.get("accounting") == accounting else None
