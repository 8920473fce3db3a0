"""TopDown with a privacy unit: per-person bounding of records before the measurements.

:func:`dpfast.tables.topdown` with ``privacy_ids`` takes one leaf index per record and the
person (privacy unit) of each record.  Each person keeps at most ``max_partitions = k``
leaves and ``max_per_partition = c`` records per leaf (:mod:`dpfast.tables.bounding`,
keyed per person: a function of the person's own records only), then the bounded leaf
counts are measured as usual.

Sensitivity per level
---------------------
Adding or removing one person changes at most ``k`` distinct leaves by at most ``c``
each.  At level ``j`` the leaves fall into units; if ``m_u`` of the person's leaves lie
in unit ``u`` (``sum m_u <= k``, ``m_u <= s_u``, ``s_u`` the unit's number of leaves),
the level's table moves by at most ``c m_u`` in unit ``u``: squared L2 norm
``c^2 sum m_u^2``.  A convex function of ``m`` is largest at a vertex of that polytope:
fill the largest units first (:func:`level_l2sq`), exact for the given hierarchy (``k^2
c^2`` wherever one unit holds ``k`` leaves, e.g. the root; ``k c^2`` at a level whose
units are single leaves).  Level ``j`` gets discrete Gaussian noise of ``sigma_j`` with
``Δ_j^2 / (2 sigma_j^2) <= rho_j``: ``rho_j``-zCDP for add/remove one person (CKS20,
Thm. 14, the multivariate discrete Gaussian), event ``Zcdp(Δ_j^2 / (2 sigma_j^2))`` per
level (one person may move several coordinates of a level, so the scalar
``DiscreteGaussian`` event of the per-record release does not apply), composed.
"""

from __future__ import annotations

from fractions import Fraction
from typing import cast

import numpy as np
import numpy.typing as npt

from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.mechanisms import DiscreteGaussianMechanism
from dpfast.tables import _keys, bounding

from ._topdown_events import release_event

__all__ = ["bounded_leaf_counts", "level_l2sq", "level_mechanisms"]


def bounded_leaf_counts(records: npt.ArrayLike, privacy_ids: npt.ArrayLike | None,
                        n_leaves: int, k: int, c: int,
                        subkey: np.ndarray, policy: int) -> np.ndarray:
    """Bounded per-leaf counts (int64, ``n_leaves``) of the records' leaf indices.

    The NULL policy of the releases: a record with a missing leaf or privacy id, or a leaf
    index outside ``[0, n_leaves)`` (a unit the public hierarchy does not hold, like a key
    outside a public ``domain``), is dropped before bounding -- a per-record filter, never
    an error that would depend on the records."""
    leaf_in, ids_in, _ = _keys.drop_nulls(records, privacy_ids)
    privacy_ids = cast("npt.ArrayLike | None", ids_in)  # the same kind, NULL rows dropped
    leaf = _keys.column(leaf_in, "leaf_counts") if np.ndim(leaf_in) == 1 else \
        np.asarray(leaf_in)
    if leaf.ndim == 1 and leaf.dtype.kind == "f":  # (an integer column with NULLs)
        unit = np.isfinite(leaf) & (leaf == np.floor(leaf)) & (leaf >= 0) & (leaf < n_leaves)
        if not unit.all() and privacy_ids is not None and \
                _keys._rows_of(privacy_ids) == unit.shape[0]:
            privacy_ids = _keys._take(privacy_ids, unit)
        leaf = leaf[unit].astype(np.int64)
    if leaf.ndim != 1:
        raise ValueError("with privacy_ids, leaf_counts must be one leaf index per record "
                         f"(1-D), got shape {leaf.shape}")
    if leaf.dtype == np.bool_ or leaf.dtype.kind not in "iu":
        raise TypeError("with privacy_ids, leaf_counts must hold integer leaf indices, got "
                        f"dtype {leaf.dtype}")
    if leaf.size and (int(leaf.min()) < 0 or int(leaf.max()) >= n_leaves):
        inside = (leaf >= 0) & (leaf < n_leaves)
        leaf = leaf[inside]
        if privacy_ids is not None and _keys._rows_of(privacy_ids) == inside.shape[0]:
            privacy_ids = _keys._take(privacy_ids, inside)
    _, n, ids = _keys.keys_and_ids(leaf, privacy_ids)
    assert ids is not None
    codes = np.ascontiguousarray(leaf, np.int64)
    b = bounding.bound_codes(codes, n_leaves, ids, k, c, subkey, policy=policy)
    return b.counts


def level_l2sq(level: np.ndarray, k: int, c: int) -> int:
    """The largest squared L2 change of level ``level``'s table (``level[i]``: the unit of
    leaf ``i``) when one person changes at most ``k`` distinct leaves by at most ``c``."""
    sizes = np.sort(np.bincount(np.asarray(level, np.int64)))[::-1]
    left = int(k)
    total = 0
    for s in sizes.tolist():
        m = min(int(s), left)
        total += m * m
        left -= m
        if left == 0:
            break
    return total * int(c) * int(c)


def level_mechanisms(levels: list[np.ndarray], rhos: list[float], k: int, c: int
                     ) -> tuple[list[DiscreteGaussianMechanism | None], list[int],
                                _events.Composed, float]:
    """Per level: the mechanism whose ``sigma`` noises it (None: not measured), the
    squared L2 sensitivity; the release's event and ``rho_total`` (rounded up)."""
    mechs: list[DiscreteGaussianMechanism | None] = []
    l2sq: list[int] = []
    for lev, r in zip(levels, rhos):
        d2 = level_l2sq(lev, k, c)
        l2sq.append(d2)
        # the unit-sensitivity sigma at rho / Δ²: Δ² / (2 sigma²) <= rho
        mechs.append(None if r == 0.0 else
                     DiscreteGaussianMechanism(rho=float_down(Fraction(r) / d2), max_changed=1))
    # Δ² = 1 (k = c = 1): one coordinate by 1, the exact scalar pair as per record; above,
    # Zcdp(Δ² / (2 sigma²)) per level
    event, rho_total = release_event([0.0 if m is None else float(m.sigma) for m in mechs],
                                     l2sq)
    return mechs, l2sq, event, rho_total
