"""State shared by the PipelineDP backend's modules: the installed generator, the shared
scalar noise blocks, and PipelineDP's original functions (taken at import, before any
patching)."""

from __future__ import annotations

from typing import Any

from dpfast.compat._patching import Patches
from dpfast.compat._random_state import SharedNoiseBuffers

try:
    import pipeline_dp as _pdp  # the package itself initialises before its submodules
    from pipeline_dp import combiners as _cb
    from pipeline_dp import dp_computations as _dc
    from pipeline_dp import partition_selection as _ps
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpfast.compat.pipeline_dp needs pipeline-dp: "
                      "pip install 'dpfast[compat]'") from exc

INSTALLED = Patches()
STATE: dict[str, Any] = {"gen": None}
# scalar noise blocks shared by every mechanism object (PipelineDP builds one per partition
# and metric); keyed by the law, its parameters and the installed generator
SCALAR_BUFFERS = SharedNoiseBuffers()

ORIGINAL: dict[str, Any] = {
    "add_noise": _dc.AdditiveMechanism.add_noise,
    "create_additive_mechanism": _dc.create_additive_mechanism,
    "create_partition_selection_strategy": _ps.create_partition_selection_strategy,
    "QuantileCombiner": _cb.QuantileCombiner,
}

_ = _pdp


def gen() -> Any:
    """The generator of the current installation (None when not installed)."""
    return STATE["gen"]
