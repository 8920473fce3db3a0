"""Compatibility alias: the sampler drivers live in :mod:`dpfast.noise._drive`.

``dpfast._drive`` is the same module object, so old imports and monkeypatches keep
working.  New code imports :mod:`dpfast.noise._drive`.
"""

from __future__ import annotations

import sys

import dpfast.noise._drive as _impl

sys.modules[__name__] = _impl
