"""Compatibility alias: the envelope tables live in :mod:`dpfast.noise._envelope`.

``dpfast._envelope`` is the same module object, so old imports and monkeypatches keep
working.  New code imports :mod:`dpfast.noise._envelope`.
"""

from __future__ import annotations

import sys

import dpfast.noise._envelope as _impl

sys.modules[__name__] = _impl
