"""Analyst names and the text a ledger shows: what may enter, and how it is printed.

An analyst's name is written into every ledger row of their charges and printed by
``dpfast ledger show``, the usage report and error messages.  A name is therefore
restricted to a safe character set (:data:`NAME_PATTERN`: letters, digits and ``. _ @ -``,
starting with a letter or digit, at most 64 characters): no newline that could forge a
row of a report, no ANSI escape, NUL or bidirectional control that could rewrite a
terminal.  Text that was stored before this rule, and free text such as notes, is shown
through :func:`shown`, which escapes every non-printable character.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["NAME_PATTERN", "check_name", "shown"]

#: what an analyst's name must match (in full)
NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}"
_NAME = re.compile(NAME_PATTERN)


def check_name(value: Any, name: str = "name") -> str:
    """``value`` if it is a safe analyst name; TypeError / ValueError naming ``name``
    otherwise (empty, too long, or a character outside :data:`NAME_PATTERN`; the
    message shows the value escaped)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")
    if _NAME.fullmatch(value) is None:
        what = (f"{len(value)} characters" if len(value) > 64
                else f"'{shown(value)}'")
        raise ValueError(f"{name} must be 1 to 64 letters, digits, '.', '_', '@' or '-', "
                         f"starting with a letter or digit (no spaces or control "
                         f"characters), got {what}")
    return value


def shown(text: Any, *, backslash: bool = True) -> str:
    """``text`` with every non-printable character escaped as Python writes it
    (``\\n``, ``\\x1b``, ``\\x00``, ``\\u202e``), and the backslash doubled (unless
    ``backslash=False``, for text escaped before): what is printed is one line that
    cannot move the cursor, change colours or reorder text."""
    s = str(text)
    keep = "" if backslash else "\\"
    if s.isprintable() and ("\\" not in s or keep):
        return s
    return "".join(c if (c.isprintable() and c != "\\") or c == keep else repr(c)[1:-1]
                   for c in s)
