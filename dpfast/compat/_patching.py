"""Nested, thread-safe monkey patching shared by the drop-in backends.

Each backend (:mod:`dpfast.compat.diffprivlib`, :mod:`dpfast.compat.pipeline_dp`) keeps one
:class:`Patches`: ``install`` calls nest (each needs one ``uninstall``), the outermost one
applies the replacements and the last ``uninstall`` restores the saved originals exactly,
in reverse order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Patches"]


class Patches:
    """A set of ``setattr(owner, attr, new)`` replacements that can be undone."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._depth = 0
        self._saved: list[tuple[Any, str, Any]] = []

    @property
    def installed(self) -> bool:
        """Whether the replacements are in place."""
        return self._depth > 0

    def install(self, targets: Callable[[], Iterable[tuple[Any, str, Any]]],
                before: Callable[[], None] | None = None) -> None:
        """One nesting level more; the outermost call runs ``before()`` then applies every
        ``(owner, attr, new)`` of ``targets()`` (the original taken from ``vars(owner)``)."""
        with self._lock:
            self._depth += 1
            if self._depth > 1:
                return
            if before is not None:
                before()
            for owner, attr, new in list(targets()):
                self._saved.append((owner, attr, vars(owner)[attr]))
                setattr(owner, attr, new)

    def uninstall(self, after: Callable[[], None] | None = None) -> None:
        """One nesting level less; the last restores the originals, then runs ``after()``.
        A call without a matching :meth:`install` does nothing."""
        with self._lock:
            if self._depth == 0:
                return
            self._depth -= 1
            if self._depth:
                return
            while self._saved:
                owner, attr, old = self._saved.pop()
                setattr(owner, attr, old)
            if after is not None:
                after()
