"""Argument validation for the randomness and noise modules.

The checks are written once in :mod:`dpfast._core.validate` (``check_x(value, name)``);
this module re-exports the ones ``random`` and the drivers use, so their imports keep
working.  New code imports :mod:`dpfast._core.validate` directly.
"""

from __future__ import annotations

from dpfast._core.validate import check_int, check_key, check_size

__all__ = ["check_key", "check_int", "check_size"]
