"""Array-at-a-time exact and secure noise: the public noising API.

All functions take numpy array-likes of any shape, never modify their input unless it is
passed as ``out``, draw their bits only from dpfast's ChaCha20 generator (``rng``: None
for the process-wide generator, a :class:`dpfast.Generator`, or a 32-byte key), and split
the work into fixed chunks on their own streams run on all cores, so a given key gives the
same output whatever the thread count.

Exactness: the integer samplers' output distributions are exactly their targets given
ideal random bits; the float mechanisms are exact discrete mechanisms on a power-of-two
grid, whose only float operation is one correctly rounded addition (post-processing).

Layout (public functions beside their drivers):

* :mod:`~dpfast.noise.integers` -- ``discrete_laplace``, ``discrete_gaussian``;
* :mod:`~dpfast.noise.grid` -- ``laplace``, ``gaussian``, ``granularity``;
* :mod:`~dpfast.noise.snap` -- ``snapping``, ``snapping_epsilon``, ``snapping_delta``;
* ``_inputs`` (data / ``out`` validation), ``_params`` (scale ranges), ``_chunks``
  (streams, chunks, bulk keystream), ``_drive`` (kernels, pending cells, undo),
  ``_exact`` (the exact continuation), ``_envelope`` (envelope tables).
"""

from __future__ import annotations

from dpfast.noise.grid import (  # noqa: F401  (private names: dpfast.dask, tests)
    _DBL_MAX,
    GRANULARITY_BITS,
    MAX_FLOAT_SCALE,
    MAX_GRANULARITY,
    MIN_FLOAT_SCALE,
    MIN_GRANULARITY,
    _check_granularity,
    _grid_fix,
    gaussian,
    granularity,
    laplace,
)
from dpfast.noise.integers import discrete_gaussian, discrete_laplace
from dpfast.noise.snap import (  # noqa: F401  (_snap_params: mechanisms)
    SNAP_MAX,
    SNAP_MIN,
    _snap_params,
    snapping,
    snapping_delta,
    snapping_epsilon,
)

__all__ = ["discrete_laplace", "discrete_gaussian", "laplace", "gaussian", "granularity",
           "snapping", "snapping_epsilon", "snapping_delta", "GRANULARITY_BITS",
           "MIN_FLOAT_SCALE", "MAX_FLOAT_SCALE", "MIN_GRANULARITY", "MAX_GRANULARITY",
           "SNAP_MIN", "SNAP_MAX"]
