"""TopDown's non-negative integer rounding, top down: the post-processing step shared by the
default release and :meth:`dpfast.tables.TopDownRelease.rounded` (the BLUE rounded).

The roots are rounded (or exact with an invariant total); then, level by level, each
parent's children are projected onto ``{c >= 0, sum c = parent}`` (weighted by their
subtree variances; Michelot's active-set algorithm) and rounded by largest remainders,
which keeps ``sum c = parent`` exactly (numba kernels, :mod:`dpfast._kernels.topdown`).

Everything it needs besides the estimates is public and data-independent: the parent
arrays of the hierarchy and the per-level noise variances, from which
:func:`subtree_variances` rebuilds the weights bit for bit as
:func:`dpfast.tables._wls.least_squares` makes them; so a release rebuilt from its state
(which holds the parent arrays) rounds exactly as the one :func:`~dpfast.tables.topdown`
returned.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpfast._kernels import topdown as _k

from . import _keys

__all__ = ["round_tree", "subtree_variances", "check_parents"]

_NONE = np.empty(0, np.int64)  # split_children: no order (children in parent order)
_NO_WEIGHTS = np.empty(0, np.float64)  # split_children: one weight for every child


def subtree_variances(parents: Sequence[np.ndarray | None], sizes: Sequence[int],
                      var: Sequence[float]) -> list[np.ndarray]:
    """The upward pass's subtree variances ``V[j]`` for levels ``1 .. L-2`` (the ones
    :func:`round_tree` reads; ``V[0]`` and ``V[L-1]`` are left empty), with the operations
    of :func:`dpfast.tables._wls.least_squares` in its order (the same bits)."""
    L = len(sizes)
    V: list[np.ndarray] = [np.empty(0)] * L
    below: np.ndarray | None = None  # V[j + 1] (None: the finest level, var[-1] each)
    for j in range(L - 2, 0, -1):
        par = parents[j + 1]
        assert par is not None
        weights = np.full(par.shape[0], float(var[-1])) if below is None else below
        w = np.bincount(par, weights=weights, minlength=int(sizes[j]))
        inv_v = 1.0 / float(var[j])
        inv_w = 1.0 / w
        prec = inv_v + inv_w
        V[j] = below = 1.0 / prec
    return V


def round_tree(sizes: Sequence[int], parents: Sequence[np.ndarray | None],
               x: list[np.ndarray], V: list[np.ndarray], var: Sequence[float],
               root_exact: np.ndarray | None, nonnegative: bool, integer: bool
               ) -> list[np.ndarray]:
    """Non-negativity and integers, top down (post-processing of the consistent 2-D
    estimates ``x`` with subtree variances ``V``): the roots rounded (or exact), then each
    parent's children projected onto ``{c >= 0, sum c = parent}`` (weights ``V``) and
    rounded by largest remainders; every parent the exact sum of its children."""
    L = len(sizes)
    estimates: list[np.ndarray] = []
    if root_exact is not None:
        top = root_exact.astype(np.float64)
    else:
        top = np.rint(x[0]) if integer else x[0].copy()
        if nonnegative:
            np.maximum(top, 0.0, out=top)
    estimates.append(top.astype(np.int64) if integer else top)
    prev: np.ndarray = top
    for j in range(1, L):
        par = parents[j]
        assert par is not None
        n_par = int(sizes[j - 1])
        offsets = np.empty(n_par + 1, np.int64)
        order = _NONE
        if not _k.csr_offsets(par, n_par, offsets):  # children not in parent order
            order = np.empty(int(sizes[j]), np.int64)
            _k.csr_order(par, offsets, order)
        # the finest level's weights are all its measurement variance (_wls)
        w, wc = (_NO_WEIGHTS, var[j]) if j == L - 1 else (V[j], 0.0)
        k = x[j].shape[1]
        out_i = np.empty((int(sizes[j]), k) if integer else (0, k), np.int64)
        out_f = np.empty((0, k) if integer else (int(sizes[j]), k), np.float64)
        args = (np.ascontiguousarray(prev, dtype=np.float64), x[j], w, float(wc),
                offsets, order, bool(nonnegative), bool(integer), out_f, out_i)
        if int(sizes[j]) < _keys.SERIAL_ROWS:  # small: nothing parallel to compile
            _k.split_children_serial(*args)
        else:
            _k.split_children(*args, _keys._threads())
        est = out_i if integer else out_f
        estimates.append(est)
        prev = est
    return estimates


def check_parents(parents: Sequence[np.ndarray], sizes: Sequence[int]) -> list[np.ndarray]:
    """Parent arrays read from a state (levels ``1 .. L-1``), checked before a kernel reads
    them: int64, one per unit of the level, every value a unit of the level above and every
    unit above with at least one child (ValueError otherwise)."""
    if len(parents) != len(sizes) - 1:
        raise ValueError("state's parents must hold one array per level below the root")
    out = []
    for j, p in enumerate(parents, start=1):
        p = np.ascontiguousarray(p)
        if p.dtype != np.int64 or p.shape != (int(sizes[j]),):
            raise ValueError(f"state's parents[{j}] must be int64 of shape ({sizes[j]},)")
        if p.size and (int(p.min()) < 0 or int(p.max()) >= int(sizes[j - 1])):
            raise ValueError(f"state's parents[{j}] must lie in [0, {sizes[j - 1]})")
        if np.bincount(p, minlength=int(sizes[j - 1])).min(initial=1) < 1:
            raise ValueError(f"state's parents[{j}] leave a unit of level {j - 1} without "
                             "children")
        out.append(p)
    return out
