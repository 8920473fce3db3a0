"""The command line's file helpers: its one-line error, the writability check made before
any budget is spent, and the atomic write of an output (stdlib only; re-exported by
:mod:`dpfast.cli`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

__all__ = ["CliError", "check_writable", "write_atomic"]


class CliError(Exception):
    """A one-line error for the user; ``code`` is the exit status (2: bad input, 1: refused)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


def check_writable(path: str) -> None:
    """Raise :class:`CliError` naming ``path`` if a file cannot be written there (its
    directory is missing or not writable, or it is a directory) -- checked before a
    release spends any budget."""
    directory = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise CliError(f"cannot write {path}: it is a directory")
    if not os.path.isdir(directory):
        raise CliError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise CliError(f"cannot write {path}: directory {directory} is not writable")


def _umask_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomic(path: str, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` then rename the temporary file onto ``path``.

    A failure leaves ``path`` untouched (nothing half-written); errors name ``path``,
    never the temporary file.  The file gets the mode the user's umask gives a new file.
    """
    check_writable(path)
    directory = os.path.dirname(os.path.abspath(path)) or "."
    try:
        fd, tmp = tempfile.mkstemp(prefix=".dpfast-", suffix=os.path.splitext(path)[1],
                                   dir=directory)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _umask_mode())
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
