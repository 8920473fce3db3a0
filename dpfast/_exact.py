"""Compatibility alias: the exact continuation live in :mod:`dpfast.noise._exact`.

``dpfast._exact`` is the same module object, so old imports and monkeypatches keep
working.  New code imports :mod:`dpfast.noise._exact`.
"""

from __future__ import annotations

import sys

import dpfast.noise._exact as _impl

sys.modules[__name__] = _impl
