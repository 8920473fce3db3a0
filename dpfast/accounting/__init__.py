"""Privacy accounting: events, RDP, zCDP and (epsilon, delta) composition.

Events live in :mod:`dpfast.accounting.events` (importable without numpy/scipy).
"""

from __future__ import annotations

from . import events

__all__ = ["events"]
