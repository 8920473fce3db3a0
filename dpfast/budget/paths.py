"""Where a ledger may live: the one check of a ledger's path, its companion files and its
directory, used alike by :class:`~dpfast.Budget` and by ``dpfast ledger show/verify``.

The rules (each refusal is a :class:`~dpfast.budget.LedgerError` naming the path):

* symbolic links are resolved once (a loop, or a link to nothing, is refused) and the
  real path is used from then on; the link's directory and the real file's directory
  are both checked;
* a directory that others can write without the sticky bit, or that belongs to another
  user (root excepted), is refused: whoever controls it can replace the ledger;
* the ledger, its ``-wal``/``-shm`` files and its anchor (``-anchor``) must be regular
  files (a FIFO would block an open forever, whatever ``timeout=``), owned by the
  effective user, and writable by no one else (group or others).
"""

from __future__ import annotations

import errno
import os
import stat

from .records import LedgerError

__all__ = ["COMPANIONS", "check_ledger_path", "check_permissions"]

#: the files that belong to a ledger ``path``: ``path + suffix``
COMPANIONS = ("-wal", "-shm", "-anchor")


def _owner_name(uid: int) -> str:
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def _check_file(p: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise LedgerError(f"ledger file {p!r} is {_kind(st.st_mode)}, not a regular file; "
                          "dpfast refuses to use it.")
    euid = os.geteuid()
    if st.st_uid != euid:
        raise LedgerError(
            f"ledger file {p!r} is owned by {_owner_name(st.st_uid)}, not by the user running "
            f"dpfast ({_owner_name(euid)}): its owner could rewrite the audit log and restore "
            "spent budget; dpfast refuses to use it."
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise LedgerError(
            f"ledger {p!r} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o}): "
            "they could rewrite the audit log and restore spent budget. If that is not "
            f"intended, run 'chmod 600 {p}'; dpfast refuses to use it as it is."
        )


def _check_directory(directory: str, what: str) -> None:
    try:
        st = os.stat(directory)
    except FileNotFoundError:
        raise LedgerError(f"directory of {what} does not exist") from None
    except OSError as exc:
        raise LedgerError(f"cannot use the directory of {what}: {exc}") from exc
    if not stat.S_ISDIR(st.st_mode):
        raise LedgerError(f"directory of {what} is not a directory")
    if st.st_mode & stat.S_IWOTH and not st.st_mode & stat.S_ISVTX:
        raise LedgerError(
            f"the directory {directory!r} of {what} is writable by every user without the "
            f"sticky bit (mode {stat.S_IMODE(st.st_mode):04o}): anyone could replace the "
            "ledger; dpfast refuses to use it. Keep ledgers in a directory only you can write."
        )
    if st.st_uid not in (os.geteuid(), 0):
        raise LedgerError(
            f"the directory {directory!r} of {what} belongs to {_owner_name(st.st_uid)}, "
            "who could replace the ledger; dpfast refuses to use it."
        )


def check_permissions(path: str) -> None:
    """The file rules for ``path`` and its companion files that exist (no symlinks)."""
    for p in (path, *(path + s for s in COMPANIONS)):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise LedgerError(f"cannot use ledger file {p!r}: {exc}") from exc
        _check_file(p, st)


def check_ledger_path(path: str, *, must_exist: bool) -> str:
    """Apply every rule above to the ledger ``path``; returns its real absolute path.

    ``must_exist=False`` accepts a path where nothing is yet (the ledger is then created
    there); the directory rules still apply.
    """
    shown = repr(path)
    absolute = os.path.abspath(path)
    _check_directory(os.path.dirname(absolute), f"ledger {shown}")
    try:
        os.stat(absolute)
    except FileNotFoundError:
        if os.path.lexists(absolute):
            raise LedgerError(f"ledger {shown} is a symbolic link to nothing (its target "
                              f"{os.path.realpath(absolute)!r} does not exist)") from None
        if must_exist:
            raise LedgerError(f"ledger {shown} does not exist") from None
        return absolute
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LedgerError(f"ledger {shown} is a loop of symbolic links") from None
        raise LedgerError(f"cannot use ledger {shown}: {exc}") from exc
    real = os.path.realpath(absolute)
    if real != absolute:
        _check_directory(os.path.dirname(real), f"ledger {shown} (the target of its link)")
    check_permissions(real)
    return real
