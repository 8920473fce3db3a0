"""The geography tree of a TopDown release: validation, aggregation, least squares.

A hierarchy is given per leaf: ``levels[j][i]`` is the id (``0 .. n_j - 1``) of leaf
``i``'s unit at level ``j``, coarse to fine.  :func:`build_tree` checks that the levels
nest (every unit of level ``j + 1`` lies in exactly one unit of level ``j``) and that every
id is used, and returns the parent arrays.  :func:`aggregate` sums the leaves to every
level (integers, exact).  :func:`least_squares` is the generalized least-squares estimate
of every unit's value from independent noisy measurements of every unit with a per-level
variance, under the constraint that every parent equals the sum of its children: two
linear passes over the tree (Hay, Rastogi, Miklau, Suciu, "Boosting the accuracy of
differentially private histograms through consistency", VLDB 2010, Sec. 4, there with
equal variances; with per-node variances it is the Kalman/Rauch-Tung-Striebel smoother on
the tree).

Upward pass (finest level first): ``z_v`` is the best estimate of unit ``v`` from its own
subtree, with variance ``V_v``::

    leaf:      z_v = y_v,  V_v = s_v^2
    internal:  S = sum_c z_c,  W = sum_c V_c,
               z_v = (y_v / s_v^2 + S / W) / (1 / s_v^2 + 1 / W),  V_v = 1 / (1/s_v^2 + 1/W)

Downward pass: ``x_root = z_root`` (or the exact total when it is an invariant) and every
child ``x_c = z_c + (V_c / W)(x_v - S)``.  The estimate is linear and unbiased, and its
error variance (with measurement variances ``s^2``) is ``F_root = V_root`` (0 for an
invariant) and ``F_c = V_c - V_c^2 / W + (V_c / W)^2 F_v`` (the variance given the
subtree and the parent, plus the parent's uncertainty carried by the weight ``V_c / W``).

This is the GLS (and by Gauss--Markov the BLUE) for the variances given, for any fan-out
and any per-level variances (proof: :func:`dpfast.tables.topdown`, Notes); ``F`` is its
exact error variance when ``var`` are the noise's true variances.  The default release
passes ``sigma_j^2`` (an upper bound on the discrete Gaussian's variance, equal to it in
float64 from ``sigma_j ~ 2``); ``estimator="blue"`` passes the exact variances
(:mod:`dpfast.tables._topdown_blue`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dpfast._kernels import topdown as _k
from dpfast.tables import _keys


@dataclass(frozen=True)
class Tree:
    """Validated hierarchy: ``ids[j]`` (leaf -> unit at level j), ``sizes[j] = n_j``,
    ``parent[j]`` (unit of level j -> unit of level j-1; ``parent[0]`` is None).
    ``leaf_units``: the finest level's ids are ``0 .. n_leaves - 1`` in order (each leaf is
    its own finest unit, the usual case), so its parent map is ``ids[-2]`` itself."""

    ids: list[np.ndarray]
    sizes: list[int]
    parent: list[np.ndarray | None]
    leaf_units: bool = False


def _id_array(value: npt.ArrayLike, j: int, n_leaves: int) -> tuple[np.ndarray, int, bool]:
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" or arr.dtype == np.bool_:
        raise TypeError(f"levels[{j}] must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != n_leaves:
        raise ValueError(
            f"levels[{j}] must have shape ({n_leaves},) (one id per leaf), got {arr.shape}"
        )
    if n_leaves == 0:
        raise ValueError("leaf_counts must have at least one leaf")
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) >= 2**63:
        raise ValueError(f"levels[{j}]: id {int(arr.max())} is too large")  # would wrap
    a64 = np.ascontiguousarray(arr, dtype=np.int64)  # no copy for C-ordered int64 ids
    lo, hi, ident = _k.min_max_identity(a64)  # one pass
    if lo < 0:
        raise ValueError(f"levels[{j}] must hold ids >= 0, got {int(lo)}")
    if hi >= 2**62:
        raise ValueError(f"levels[{j}]: id {int(hi)} is too large")
    return a64, int(hi) + 1, bool(ident)


def build_tree(levels: Sequence[npt.ArrayLike], n_leaves: int) -> Tree:
    """Validate ``levels`` (coarse to fine) and return the tree; raises ValueError naming
    the level and a leaf where the nesting breaks or an id is unused.

    A level whose ids are ``arange(n_leaves)`` (one unit per leaf, in order) nests and
    uses every id by construction: its parent map is the coarser level's ids, no pass."""
    if isinstance(levels, np.ndarray) and levels.ndim == 2:
        levels = list(levels)
    if not isinstance(levels, Sequence) or isinstance(levels, str | bytes):
        raise TypeError("levels must be a sequence of integer arrays (coarse to fine)")
    if len(levels) == 0:
        raise ValueError("levels must hold at least one level")
    ids: list[np.ndarray] = []
    sizes: list[int] = []
    ident: list[bool] = []
    for j, lev in enumerate(levels):
        arr, n, one_each = _id_array(lev, j, n_leaves)
        ids.append(arr)
        sizes.append(n)
        ident.append(one_each)
    parent: list[np.ndarray | None] = [None]
    for j in range(1, len(ids)):
        if ident[j]:  # unit i is leaf i: its parent is leaf i's unit one level up
            parent.append(ids[j - 1])
            continue
        par = np.full(sizes[j], -1, np.int64)
        bad = _k.parents(ids[j], ids[j - 1], par)
        if bad >= 0:
            raise ValueError(
                f"levels do not nest: unit {int(ids[j][bad])} of level {j} lies in units "
                f"{int(par[ids[j][bad]])} and {int(ids[j - 1][bad])} of level {j - 1} "
                f"(leaf {bad})"
            )
        parent.append(par)
    for j in range(len(ids)):
        if ident[j]:
            continue
        par_j = parent[j]
        used: np.ndarray
        if par_j is None:
            used = np.zeros(sizes[j], np.bool_)
            if len(ids) > 1:  # the level-0 ids of the leaves are those of level 1's units
                p1 = parent[1]
                assert p1 is not None
                used[p1[p1 >= 0]] = True
            else:
                used[ids[0]] = True
        else:
            used = par_j >= 0
        if not used.all():
            missing = int(np.flatnonzero(~used)[0])
            raise ValueError(
                f"levels[{j}] ids must be 0..{sizes[j] - 1} with every id used; "
                f"id {missing} has no leaf"
            )
    return Tree(ids=ids, sizes=sizes, parent=parent, leaf_units=ident[-1])


def aggregate(tree: Tree, leaves: np.ndarray) -> list[np.ndarray]:
    """Exact int64 tables ``(n_j, k)`` per level from leaf counts ``(n_leaves, k)`` (the
    caller has checked that the total fits int64)."""
    L = len(tree.sizes)
    k = leaves.shape[1]
    out: list[np.ndarray] = [np.empty(0)] * L
    if tree.leaf_units:  # one leaf per finest unit, in order
        finest = leaves.copy()
    else:
        finest = np.zeros((tree.sizes[-1], k), np.int64)
        _k.group_sum_int(tree.ids[-1], leaves, finest)
    out[-1] = finest
    for j in range(L - 2, -1, -1):
        t = np.zeros((tree.sizes[j], k), np.int64)
        par = tree.parent[j + 1]
        assert par is not None
        _k.group_sum_int(par, out[j + 1], t)
        out[j] = t
    return out


def least_squares(
    tree: Tree,
    noisy: list[np.ndarray | None],
    var: list[float],
    root_exact: np.ndarray | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Consistent estimates ``x[j]`` (float64, ``(n_j, k)``), their error variances
    ``F[j]`` (``(n_j,)``) and the subtree variances ``V[j]`` (below a root, the finest
    level's ``V`` is its measurement variance ``var[-1]`` for every unit: a read-only
    broadcast of that one value).

    ``noisy[j]``: level ``j``'s measurements (``noisy[0]`` may be None when
    ``root_exact`` gives level 0 exactly); ``var[j]``: their variance.
    """
    L = len(tree.sizes)
    z: list[np.ndarray] = [np.empty(0)] * L
    V: list[np.ndarray] = [np.empty(0)] * L
    S: list[np.ndarray] = [np.empty(0)] * L  # S[j]: sum over children of level-j units
    W: list[np.ndarray] = [np.empty(0)] * L
    y_last = noisy[-1]
    assert y_last is not None
    if L == 1:
        z[-1] = y_last.astype(np.float64)
        V[-1] = np.full(tree.sizes[-1], float(var[-1]))
    else:  # the finest level: z = y (int64, read as float64), V = var (one value)
        z[-1] = y_last
        V[-1] = np.broadcast_to(np.float64(var[-1]), (tree.sizes[-1],))
    for j in range(L - 2, -1, -1):
        par = tree.parent[j + 1]
        assert par is not None
        k = z[j + 1].shape[1]
        s = np.zeros((tree.sizes[j], k), np.float64)
        w: np.ndarray
        if j == L - 2:
            w = np.zeros(tree.sizes[j], np.float64)
            _k.upward_leaf(par, z[j + 1], float(var[-1]), s, w)
        else:
            _k.group_sum_float(par, z[j + 1], s)
            w = np.bincount(par, weights=V[j + 1], minlength=tree.sizes[j])
        S[j], W[j] = s, w
        y = noisy[j]
        if y is None:  # an exact invariant: z is not needed
            z[j] = s
            V[j] = w
            continue
        inv_v = 1.0 / float(var[j])
        inv_w = 1.0 / w
        prec = inv_v + inv_w
        z[j] = (y * inv_v + s * inv_w[:, None]) / prec[:, None]
        V[j] = 1.0 / prec
    x: list[np.ndarray] = [np.empty(0)] * L
    F: list[np.ndarray] = [np.empty(0)] * L
    if root_exact is not None:
        x[0] = root_exact.astype(np.float64)
        F[0] = np.zeros(tree.sizes[0])
    else:
        x[0] = z[0]
        F[0] = V[0].copy()
    for j in range(L - 1):
        par = tree.parent[j + 1]
        assert par is not None
        if par.shape[0] >= _keys.SERIAL_ROWS:  # fused: no level-sized temporaries
            x[j + 1] = np.empty(z[j + 1].shape, np.float64)
            F[j + 1] = np.empty(par.shape[0])
            if j + 1 == L - 1:
                _k.downward_leaf(par, z[j + 1], float(var[-1]), W[j], S[j], x[j], F[j],
                                 x[j + 1], F[j + 1])
            else:
                _k.downward(par, z[j + 1], V[j + 1], W[j], S[j], x[j], F[j], x[j + 1],
                            F[j + 1])
        else:  # small: numpy (no parallel kernel to compile), the same operations
            gain = V[j + 1] / W[j][par]
            d = x[j] - S[j]
            x[j + 1] = z[j + 1] + gain[:, None] * d[par]
            F[j + 1] = V[j + 1] - V[j + 1] * gain + gain * gain * F[j][par]
        z[j + 1] = np.empty(0)  # free as we go
    return x, F, V
