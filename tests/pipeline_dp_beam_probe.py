"""A Beam plugin for tests/test_compat_pipeline_dp_beam.py (imported by every Beam SDK worker
listed before the dpfast hook in ``beam_plugins``): records, in the file named by
``DPFAST_BEAM_PROBE``, each noise draw of the importing process -- ``<pid> dpfast`` for
dpfast's samplers, ``<pid> quantile`` for dpfast's PERCENTILE draw, ``<pid> pydp`` for
PipelineDP's own (PyDP) additive noise."""

from __future__ import annotations

import os
from typing import Any

from pipeline_dp import dp_computations

import dpfast
from dpfast.compat.pipeline_dp import _quantile

_PATH = os.environ.get("DPFAST_BEAM_PROBE")


def _record(what: str) -> None:
    with open(_PATH, "a") as f:  # type: ignore[arg-type]
        f.write(f"{os.getpid()} {what}\n")


def _wrap(owner: Any, name: str, what: str) -> None:
    original = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _record(what)
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


if _PATH:
    _wrap(dpfast, "laplace", "dpfast")
    _wrap(dpfast, "gaussian", "dpfast")
    _wrap(_quantile, "sample_measured_rows", "quantile")
    # PyDP's path: wrapped before the dpfast hook installs (which then keeps it as PipelineDP's
    # original, used where dpfast falls back to PyDP's noise)
    _wrap(dp_computations.AdditiveMechanism, "add_noise", "pydp")
