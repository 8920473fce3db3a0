"""Kernels for DP-SGD: per-example L2 clipping and an exact sum on a 2^k grid.

Private: no validation; callers (``dpfast.dpsgd``) check shapes, dtypes and finiteness
and pass C-contiguous float64 arrays.

Each clipped coordinate is rounded to an integer multiple of the grid ``g`` (a power of
two, passed as ``inv_g = 1/g``) and the rows are summed in int64, so the sum is exact:
it does not depend on the summation order, the number of threads or the chunking.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from dpfast._kernels._launch import guarded

# columns handled by one parallel task of the summation
COLUMN_BLOCK = 2048
# below this many elements the serial kernels are used (thread start-up dominates)
PARALLEL_MIN = 1 << 16


@guarded
@nb.njit(parallel=True, cache=True)
def clip_factors(grads, clip_norm, norms, factors):
    """Fill ``norms[i]`` with the L2 norm of row ``i`` and ``factors[i]`` with its clip factor.

    The norm is ``sqrt`` of the sum of squares accumulated left to right; the factor is
    ``min(1, clip_norm / norm)`` (1 for a zero row, 0 for a row whose squared norm
    overflows to infinity).
    """
    n_rows, n_cols = grads.shape
    for i in nb.prange(n_rows):
        s = 0.0
        for j in range(n_cols):
            v = grads[i, j]
            s += v * v
        nrm = math.sqrt(s)
        norms[i] = nrm
        if nrm <= clip_norm:
            factors[i] = 1.0
        else:
            factors[i] = clip_norm / nrm  # 0.0 when nrm is inf


@nb.njit(cache=True)
def _sum_block(grads, factors, inv_g, out, j0, j1):
    n_rows = grads.shape[0]
    for j in range(j0, j1):
        out[j] = 0
    for i in range(n_rows):
        f = factors[i]
        for j in range(j0, j1):
            out[j] += np.int64(np.rint((grads[i, j] * f) * inv_g))


@guarded
@nb.njit(parallel=True, cache=True)
def clipped_grid_sum(grads, factors, inv_g, out):
    """``out[j] = sum_i rint(fl(grads[i, j] * factors[i]) * inv_g)``, summed in int64.

    ``inv_g`` is a power of two, so ``c * inv_g`` is exact (barring underflow) and the
    rounding error of each coordinate is at most half a grid step.  The caller bounds
    ``|out|`` below 2^62 beforehand.
    """
    n_cols = grads.shape[1]
    n_blocks = (n_cols + COLUMN_BLOCK - 1) // COLUMN_BLOCK
    for b in nb.prange(n_blocks):
        j0 = b * COLUMN_BLOCK
        j1 = min(n_cols, j0 + COLUMN_BLOCK)
        _sum_block(grads, factors, inv_g, out, j0, j1)


@guarded
@nb.njit(parallel=True, cache=True)
def clip_rows(grads, factors, out):
    """``out[i, j] = fl(grads[i, j] * factors[i])`` (exact copy where the factor is 1)."""
    n_rows, n_cols = grads.shape
    for i in nb.prange(n_rows):
        f = factors[i]
        for j in range(n_cols):
            out[i, j] = grads[i, j] * f


@nb.njit(cache=True)
def clip_factors_serial(grads, clip_norm, norms, factors):
    """Serial :func:`clip_factors` (identical results) for small inputs."""
    n_rows, n_cols = grads.shape
    for i in range(n_rows):
        s = 0.0
        for j in range(n_cols):
            v = grads[i, j]
            s += v * v
        nrm = math.sqrt(s)
        norms[i] = nrm
        if nrm <= clip_norm:
            factors[i] = 1.0
        else:
            factors[i] = clip_norm / nrm


@nb.njit(cache=True)
def clipped_grid_sum_serial(grads, factors, inv_g, out):
    """Serial :func:`clipped_grid_sum` (identical results) for small inputs."""
    _sum_block(grads, factors, inv_g, out, 0, grads.shape[1])
