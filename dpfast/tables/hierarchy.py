"""TopDown: a geographic hierarchy released consistent, non-negative and integral.

The 2020 US Census published every geographic level from noisy measurements that were
post-processed so that all levels agree (Abowd et al., "The 2020 Census Disclosure
Avoidance System TopDown Algorithm", Harvard Data Science Review 2022).  This module does
the same, exactly and in linear time:

1. **Measure**: every unit of every level gets exact discrete Gaussian noise of variance
   parameter ``sigma_j^2 = 1 / (2 rho_j)`` (:func:`dpfast.discrete_gaussian`, all cores).
2. **Least squares**: the consistent (every parent = sum of its children, per cell)
   weighted least-squares estimate from all measurements, in two linear passes over the
   tree (Hay, Rastogi, Miklau, Suciu 2010), with per-level variances
   (:mod:`dpfast.tables._wls`).
3. **Non-negativity and integers, top down**: the roots are rounded; then, level by level,
   each parent's children are projected onto ``{c >= 0, sum c = parent}`` (weighted by
   their least-squares variances; Michelot's active-set algorithm) and rounded by largest
   remainders, which keeps ``sum c = parent`` exactly (numba kernels,
   :mod:`dpfast._kernels.topdown`).

This module holds the public entry points (:func:`topdown`, :func:`aggregate_levels`), the
checks of the public input and the plan (:class:`TopDownPlan`: the hierarchy, the per-level
mechanisms and the event, before any count is read).  What follows from the plan -- the
per-level budgets, mechanisms, noise and the estimator -- is
:mod:`dpfast.tables._topdown_measure`; the event as a function of the noise,
:mod:`dpfast.tables._topdown_events`; the release object,
:mod:`dpfast.tables._topdown_release`, and the reading of its state,
:mod:`dpfast.tables._topdown_state`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import numpy.typing as npt

from dpfast import mechanisms as _mechanisms
from dpfast._kernels import topdown as _k
from dpfast.accounting import events as _events
from dpfast.random import Generator, RngLike

from . import _topdown_blue as _blue
from . import _topdown_l2sq as _l2sq
from . import _topdown_measure as _measure
from . import _topdown_units as _units
from . import _wls
from . import bounding as _bounding
from . import run as _run
from . import spec as _spec
from ._law import _alpha as _alpha
from ._topdown_release import TopDownRelease

if TYPE_CHECKING:
    from .spec import Charger

__all__ = ["topdown", "TopDownRelease", "aggregate_levels", "TopDownPlan", "plan_topdown"]

# --------------------------------------------------------------------------- validation


def _leaf_schema(leaf_counts: object) -> tuple[np.ndarray, bool]:
    """The leaf counts' public checks (dtype and shape) and their 2-D view."""
    arr = np.asarray(leaf_counts)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"leaf_counts must be an integer array, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2):
        raise ValueError(
            f"leaf_counts must have shape (n_leaves,) or (n_leaves, n_cells), got {arr.shape}"
        )
    one_d = arr.ndim == 1
    if one_d:
        arr = arr.reshape(-1, 1)
    if arr.shape[1] == 0:
        raise ValueError("leaf_counts must have at least one cell per leaf")
    return arr, one_d


def _leaf_values(arr: np.ndarray) -> np.ndarray:
    """The counts' checks (``>= 0``, totals within int64) and their int64 C-ordered form
    (a copy unless already int64 C order; never modified)."""
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= 2**62:
        raise OverflowError("leaf_counts: a count does not fit int64 with room for noise")
    arr = np.ascontiguousarray(arr, dtype=np.int64)  # a copy unless already int64 C order
    if arr.size:
        lo, hi, _ = _k.min_max_identity(arr.reshape(-1))  # one pass
        if lo < 0:
            raise ValueError("leaf_counts must be >= 0 (counts)")
        # every level total must fit int64 with room for the noise
        mx = int(hi)
        if mx * arr.shape[0] >= 2**62:
            col_totals = [sum(int(v) for v in np.add.reduceat(arr[:, c].astype(object),
                          np.arange(0, arr.shape[0], 1 << 16))) for c in range(arr.shape[1])]
            if max(col_totals) >= 2**62:
                raise OverflowError("leaf_counts: the total count does not fit int64")
    return arr


def _leaf_array(leaf_counts: object) -> tuple[np.ndarray, bool]:
    arr, one_d = _leaf_schema(leaf_counts)
    return _leaf_values(arr), one_d


def aggregate_levels(leaf_counts: npt.ArrayLike, levels: Sequence[npt.ArrayLike]
                     ) -> list[np.ndarray]:
    """The exact (not private) table of every level: ``out[j][u]`` = the sum of the
    leaves in unit ``u`` of level ``j`` (int64, shape ``(n_j,)`` or ``(n_j, n_cells)``).

    For evaluation (e.g. ``release.accuracy(truth=aggregate_levels(...))``) and for
    baselines; validates the hierarchy exactly as :func:`topdown` does.
    """
    leaves, one_d = _leaf_array(leaf_counts)
    tree = _wls.build_tree(levels, leaves.shape[0])
    tables = _wls.aggregate(tree, leaves)
    return [t[:, 0] for t in tables] if one_d else tables


# --------------------------------------------------------------------------- the release


def topdown(
    leaf_counts: npt.ArrayLike,
    levels: Sequence[npt.ArrayLike],
    *,
    rho: float | npt.ArrayLike,
    nonnegative: bool | None = None,
    integer: bool | None = None,
    total_invariant: bool = False,
    rng: RngLike = None,
    budget: Charger | None = None,
    note: str = "",
    use_case: str | None = None,
    privacy_ids: npt.ArrayLike | None = None,
    max_partitions: int = 1,
    max_per_partition: int = 1,
    bounding: str = "uniform",
    estimator: str = "topdown",
) -> TopDownRelease:
    """Release a geographic hierarchy: noisy, then consistent, non-negative and integral.

    Parameters
    ----------
    leaf_counts : array_like of int, shape (n_leaves,) or (n_leaves, n_cells)
        Non-negative counts per leaf (a histogram of ``n_cells`` cells per leaf).  Several
        leaves may share a finest-level unit (they are summed).  Never modified.
    levels : sequence of integer arrays, coarse to fine
        ``levels[j][i]`` is the id (``0 .. n_j - 1``, every id used) of leaf ``i``'s unit
        at level ``j``; units must nest (each unit of level ``j + 1`` in one unit of
        level ``j``).  Level 0 may have several units (a forest).
    rho : float or sequence of float
        zCDP budget: one value per level, or a total split equally over the measured
        levels (rounded down so the parts never sum above it).  With ``total_invariant``
        ``rho[0]`` must be 0.
    nonnegative : bool, optional
        Released values are ``>= 0`` (default True; with ``estimator="blue"`` the only
        value allowed is False: round a BLUE release with :meth:`TopDownRelease.rounded`).
    integer : bool, optional
        Released values are integers (int64) (default True; as ``nonnegative`` for
        ``estimator="blue"``).
    total_invariant : bool, default False
        Release the level-0 totals exactly (not measured, not private; see Privacy).
    rng : None, Generator or 32-byte key, optional
        The noise source.  A raw key gets a fresh release id per release (no two releases
        with one key share noise; :func:`dpfast.tables.keynoise.release_generator`); a
        generator rebuilt from a key replays its sequence of releases (whoever holds the
        key can remove the noise).
    budget : dpfast.Budget, optional
        Charged :attr:`TopDownRelease.event` (with ``note``) before any noise is drawn (the
        RDP / zCDP filters charge it as ``sum_j 1 / (2 sigma_j^2)``-zCDP: ``rho_total`` up
        to float rounding, upwards); a refusal raises
        :class:`dpfast.BudgetExceededError` and nothing is computed.
    use_case : str, optional
        A use case of :mod:`dpfast.guidelines`: a ``UserWarning`` if the release's
        ``epsilon`` (at ``delta = 1e-10``) leaves its conventional range.
    privacy_ids : array_like, optional
        The person (privacy unit) of each record.  Then ``leaf_counts`` is read as one
        leaf index per record (integers in ``[0, n_leaves)``, ``n_leaves = len(levels[0])``),
        each person keeps at most ``max_partitions`` leaves and ``max_per_partition``
        records per leaf (:func:`dpfast.tables.bound_contributions`, keyed per person with
        ``rng``), and the guarantee is per person (see Privacy).  None: one record is the
        unit (``leaf_counts`` are counts).
    max_partitions, max_per_partition : int
        The per-person bounds ``k`` and ``c`` (only with ``privacy_ids``).
    bounding : {"uniform", "frequent"}
        Which leaves a person keeps when they have more than ``max_partitions``.
    estimator : {"topdown", "blue"}, default "topdown"
        ``"topdown"``: the least-squares estimates made non-negative and integral top down
        (``nonnegative``, ``integer``), with rigorous (conservative) intervals.
        ``"blue"``: the best linear unbiased estimate (the tree GLS weighted by the noise's
        exact variances), unrounded float64 and consistent, with its exact per-unit
        standard errors :attr:`TopDownRelease.stderr` and normal intervals
        :meth:`TopDownRelease.confidence_interval`; non-negative integer rounding is a
        separate post-processing step, :meth:`TopDownRelease.rounded`.  The same
        measurements, the same charge (see Privacy and Notes).

    Returns
    -------
    TopDownRelease
        ``.estimates``, ``.noisy``, ``.consistent``, ``.event`` (one exact discrete
        Gaussian event per measured level, composed), ``.rho_total``,
        ``.epsilon(delta, accounting=)``,
        ``.confidence_interval(alpha)``, ``.accuracy(truth, alpha=)``, ``.report()``,
        ``.summary()``.

    Raises
    ------
    TypeError, ValueError
        Bad input (naming the parameter): non-integer or negative counts, levels of the
        wrong length, ids that do not nest or leave gaps, invalid ``rho``.
    OverflowError
        A total does not fit int64.

    Privacy
    -------
    Neighbouring relation: add or remove one record, which changes one leaf's count in one
    cell by 1, hence at every level exactly one unit's count in one cell by 1: each level's
    query is a histogram whose neighbours differ in *one coordinate*, by 1.  Level ``j``'s
    measurement adds independent discrete Gaussian noise ``N_Z(0, sigma_j^2)`` to every
    cell, ``sigma_j`` the smallest float with ``1 / (2 sigma_j^2) <= rho_j``.  Its privacy
    loss is that of the one changed coordinate (the others have the same law on both
    sides), i.e. exactly the scalar pair ``N_Z(0, sigma_j^2)`` vs ``N_Z(1, sigma_j^2)``
    (Canonne, Kamath, Steinke 2020, Thm. 7; symmetric, so both directions), and the
    levels' noises are independent, so the release's privacy loss is the sum of the
    levels' losses.  :attr:`TopDownRelease.event` states exactly this:
    ``Composed(DiscreteGaussian(sigma_j, sensitivity=1, neighbouring="add_remove") for each
    measured level)``, which
    :class:`~dpfast.accounting.PldAccountant` accounts exactly (its tightest
    ``(epsilon, delta)``) and the RDP / zCDP accountants as ``sum_j 1 / (2 sigma_j^2)
    <= rho = sum_j rho_j``-zCDP (CKS20, Thm. 4; Bun & Steinke 2016, Lemma 2.3).  Every
    later step reads only the noisy measurements (post-processing; ``estimator="blue"``
    and :meth:`TopDownRelease.rounded` included: the same measurements, the same event,
    the same charge as the default; the BLUE's intervals read the variances and the
    ``sigma_j`` only, and its state adds the hierarchy's parent arrays, which are the
    public question, not data).  ``(epsilon, delta)``:
    :meth:`TopDownRelease.epsilon` (CKS20 Cor. 13 on the total ``rho`` by default, or the
    PLD / RDP accountant on :attr:`~TopDownRelease.event`).  For a record that may *move*
    between leaves (replace-one neighbours) up to two units per level change, by 1 each
    (two independent coordinates): the release is then covered by ``SelfComposed`` of the
    same levels stated for ``neighbouring="replace_one"``, twice (``2 rho``-zCDP;
    sensitivity ``sqrt(2)``), not by ``event`` itself, which states add/remove-one (a
    budget refuses to compose it with replace-one charges).
    With ``privacy_ids``: neighbouring datasets differ by all records of one person, who
    after bounding changes at most ``k`` leaves by at most ``c``; level ``j``'s table moves
    by at most ``Δ_j`` in L2, ``Δ_j^2 = c^2 max sum_u m_u^2`` over the ways to put ``k``
    distinct leaves into level ``j``'s units (exact, :mod:`dpfast.tables._topdown_units`;
    ``k c`` where a unit holds ``k`` leaves), and ``sigma_j`` satisfies
    ``Δ_j^2 / (2 sigma_j^2) <= rho_j``: the release is ``rho``-zCDP per person (CKS20,
    Thm. 14), :attr:`TopDownRelease.event` ``Composed(Zcdp(Δ_j^2 / (2 sigma_j^2)))``
    (the exact scalar events when ``k = c = 1``), and :meth:`TopDownRelease.summary` names
    the unit.
    With ``total_invariant=True`` the level-0 totals are published exactly: the release is
    **not** differentially private for them (as the 2020 Census's invariants); the
    measurements of the other levels remain ``rho``-zCDP (``event`` composes those levels
    only) and the estimates are their post-processing together with the exact totals.

    Numerics
    --------
    The noise is exact.  Least squares runs in float64 (two linear passes); the projection
    is exact up to float rounding of the weights; integer rounding works on int64 and
    repairs any float error so that every parent is the exact sum of its children and every
    released value is ``>= 0`` (with ``nonnegative``).  Accuracy: the least-squares
    estimate of every unit has error variance at most its raw measurement's
    (``variances[j] <= sigma_j^2``); the non-negative integer release is within the
    projection and one unit of it.  Above the leaves the released error is no worse than
    the raw measurement's whenever the tree's gain exceeds the rounding's ``1/12``
    (tested on a census-shaped tree).  At the leaves the least-squares estimate is no
    worse than raw (exact); the released leaves are better than raw on sparse data (the
    projection removes negative noise: tested on census-like blocks, a third empty), while
    on dense leaves with ``sigma_j`` near 1 rounding can cost up to about ``1/12`` in
    variance.  Linear time and memory in the number of leaves.

    Notes
    -----
    **The least squares is the BLUE.**  Write every unit's measurement as ``y_v = x_v +
    e_v``, ``e_v`` independent with variance ``s_v^2`` (per level), ``x`` consistent.  The
    two passes of :mod:`dpfast.tables._wls` compute the GLS estimate for these variances,
    for any fan-out (not only Hay et al.'s uniform ``k``-ary tree with equal variances):
    by induction from the leaves, ``z_v`` (the inverse-variance combination of ``y_v`` and
    ``S_v = sum_c z_c``) is the BLUE of ``x_v`` from the measurements of ``v``'s subtree
    with variance ``V_v`` (the children's subtrees are disjoint, so their ``z_c`` are
    independent and ``S_v`` is the BLUE of ``sum_c x_c = x_v`` from them, variance
    ``W_v = sum_c V_c``); the downward step ``x_c = z_c + (V_c / W_v)(x_v - S_v)`` is the
    GLS update of the children given the parent's full-data estimate (the
    Rauch--Tung--Striebel smoother on the tree), and ``F_c = V_c - V_c^2 / W_v + (V_c /
    W_v)^2 F_v`` its exact error variance (``z_c - (V_c/W_v) S_v`` is uncorrelated with
    the parent's error).  A dense solve ``(A^T Σ^-1 A)^-1 A^T Σ^-1 y`` agrees to 1e-9
    (tested), and Gauss--Markov makes the GLS the BLUE -- *for the variances it is
    given*.  The default uses ``sigma_j^2``, while the discrete Gaussian's variance is
    slightly smaller (relative gap ``~ 4 pi^2 sigma_j^2 exp(-2 pi^2 sigma_j^2)``: 1e-3 at
    ``sigma_j = 0.7``, below float64 resolution from ``sigma_j ~ 1.9``); the default is
    therefore the BLUE up to that gap in the weights and its
    :attr:`~TopDownRelease.variances` are upper bounds.  ``estimator="blue"`` weights
    with the exact variances (rounded up), so its estimate is the BLUE and its variances
    are exact up to float rounding, rounded up where they are scaled by the common factor
    (its estimates equal to the default's consistent estimates wherever every ``sigma_j``
    is above about 2).  Its error is a fixed linear combination ``a Z + R`` of independent
    discrete Gaussians, where ``a Z`` is the unit's own measurement's noise (``a = F /
    v_j``, the GLS coefficient) and ``R`` the rest.  The intervals use the exact variance
    ``F``; on a level with ``sigma_j >= 16`` they are normal, ``x ± z_(1-alpha/2)
    sqrt(F)``; below (a data-independent rule), the law of ``a Z`` is taken exactly (its
    lattice, which the normal law misses where the own measurement dominates: small
    ``sigma_j``, wide fan-out) and ``R`` as normal with its exact variance ``F - a^2
    v_j`` (:func:`dpfast.tables._topdown_blue.lattice_halfwidth`).  Both are
    approximations of the error's law, not bounds; coverage measured in the tests (fixed
    key, 60-250 repetitions): 94-96% at 95% per level from ``sigma_j = 0.5`` up, per
    person too, where the normal interval covered about 91% at ``sigma_j = 0.5`` and 98%
    at ``sigma_j = 0.71`` on a tree of fan-out 25.  With ``privacy_ids`` the truth they
    cover is the bounded leaf counts (per-person bounding is not noise).
    :meth:`TopDownRelease.rounded` rounds the BLUE with the default's rounding (the same
    kernel, weighted by the BLUE's subtree variances).  Where the exact variances are
    proportional to ``sigma_j^2`` (every ``sigma_j`` equal, as with a total ``rho``
    split equally, or every ``sigma_j`` above about 2) the GLS is the same estimator and
    is computed with the default's arithmetic, so the BLUE is the default's least squares
    and its rounding the default release, bit for bit
    (:func:`dpfast.tables._topdown_blue.gls_weights`); elsewhere they differ.  It works
    on a release rebuilt from its state (the state holds the hierarchy's parent arrays,
    which are public).

    Examples
    --------
    >>> import numpy as np, dpfast.tables as tables
    >>> leaves = np.array([5, 0, 3, 7, 1, 0])
    >>> state = np.array([0, 0, 0, 1, 1, 1]); county = np.array([0, 0, 1, 2, 3, 3])
    >>> r = tables.topdown(leaves, [np.zeros(6, int), state, county, np.arange(6)],
    ...                    rho=1.0, rng=bytes(32))
    >>> int(r.estimates[0][0]) == int(r.estimates[3].sum())
    True
    """
    nonneg, integral = _measure.post_flags(estimator, nonnegative, integer)
    for name, flag in (("nonnegative", nonneg), ("integer", integral),
                       ("total_invariant", total_invariant)):
        if not isinstance(flag, bool | np.bool_):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
    if not isinstance(note, str):
        raise TypeError(f"note must be a string, got {type(note).__name__}")
    plan = plan_topdown(leaf_counts, levels, rho, bool(nonneg), bool(integral),
                        bool(total_invariant), privacy_ids is not None, max_partitions,
                        max_per_partition, bounding, estimator=estimator)
    out: TopDownRelease = _run.release(
        plan.spec(), _run.Rows(leaf_counts, privacy_ids), budget=budget,
        note=note or f"topdown: {len(plan.tree.sizes)} levels", rng=rng, use_case=use_case,
        plan=plan)
    return out


# --------------------------------------------------------------------------- the plan


@dataclasses.dataclass
class TopDownPlan:
    """The data-independent part of a TopDown release (:class:`dpfast.tables.run.Plan`):
    the validated hierarchy, the per-level mechanisms and the composed per-level
    :attr:`event` -- all from public information (the hierarchy, ``rho``, ``k``, ``c``
    and the leaf counts' shape), before any count is read."""

    tree: _wls.Tree
    rhos: list[float]
    mechs: list[_mechanisms.DiscreteGaussianMechanism | None]
    sigma: list[float]
    l2sq: list[int]
    event: _events.Composed
    rho_total: float
    nonnegative: bool
    integer: bool
    total_invariant: bool
    one_d: bool
    unit: str
    per_person: tuple[int, int, int] | None  # (k, c, bounding policy code) with privacy_ids
    bounding: str = "uniform"
    estimator: str = "topdown"

    def spec(self) -> _spec.ReleaseSpec:
        """The release's spec: the question (the hierarchy's level sizes, per-level
        ``rho``, post-processing, the per-person bounds) with ``rho`` its total.  The
        hierarchy's ids are not hashed here (a census tree has millions of leaves per
        level): a cache keyed by the spec adds :meth:`fingerprint`."""
        k, c, _ = self.per_person or (1, 1, 0)
        options = {"rho_levels": tuple(self.rhos), "nonnegative": self.nonnegative,
                   "integer": self.integer, "total_invariant": self.total_invariant,
                   "per_person": self.per_person is not None,
                   "level_sizes": tuple(self.tree.sizes)}
        if self.estimator != "topdown":  # (the default's spec, and query id, unchanged)
            options["estimator"] = self.estimator
        return _spec.ReleaseSpec(
            (_spec.StatSpec("topdown"),), rho=self.rho_total, max_partitions=k,
            max_per_partition=c, bounding=self.bounding,
            options=tuple(sorted(options.items())))

    def fingerprint(self) -> str:
        """32 hex digits of BLAKE2b-128 over the hierarchy's validated ids, level by
        level (linear in the leaves)."""
        h = hashlib.blake2b(digest_size=16)
        for ids in self.tree.ids:
            h.update(np.ascontiguousarray(ids, np.int64).tobytes())
            h.update(b"|")
        return h.hexdigest()

    def local_partials(self, rows: _run.Rows, subkey: np.ndarray) -> np.ndarray:
        """The leaf counts (checked), or with privacy ids the bounded per-leaf counts of
        the records (keyed per person with ``subkey``)."""
        if self.per_person is None:
            return _leaf_values(_leaf_schema(rows.keys)[0])
        k, c, pol = self.per_person
        n_leaves = len(self.tree.ids[0])
        leaves = cast("npt.ArrayLike", rows.keys)  # topdown's records: one leaf column
        return _units.bounded_leaf_counts(leaves, rows.privacy_ids, n_leaves, k, c,
                                          subkey, pol).reshape(-1, 1)

    def finish(self, leaves: np.ndarray, gen: Generator, release_id: int | None
               ) -> TopDownRelease:
        rel = _measure.measure(self.tree, leaves, self.mechs, self.sigma, self.rhos,
                               self.event, self.rho_total, gen, self.nonnegative,
                               self.integer, self.total_invariant, self.one_d, release_id,
                               self.estimator)
        rel.privacy_unit = self.unit
        rel.sensitivity = [_l2sq.stated_root(d) if d else 0.0 for d in self.l2sq]
        rel._l2sq = list(self.l2sq)  # (exact, kept in the state)
        return rel


def plan_topdown(leaf_counts: object, levels: Sequence[npt.ArrayLike], rho: object,
                 nonnegative: bool,
                 integer: bool, total_invariant: bool, per_person: bool,
                 max_partitions: object = 1, max_per_partition: object = 1,
                 bounding: object = "uniform", *, estimator: object = "topdown"
                 ) -> TopDownPlan:
    """The plan of :func:`topdown` (ValueError / TypeError naming the parameter)."""
    if estimator not in _blue.ESTIMATORS:
        raise ValueError(f"estimator must be 'topdown' or 'blue', got {estimator!r}")
    if estimator == "blue" and (nonnegative or integer):
        raise ValueError("estimator='blue' releases the unrounded estimate: nonnegative "
                         "and integer must be False")
    person = None
    if per_person:
        k = _bounding.positive_int(max_partitions, "max_partitions")
        c = _bounding.positive_int(max_per_partition, "max_per_partition")
        pol = _bounding.policy_code(bounding)
        n_leaves = len(np.asarray(levels[0])) if len(levels) else 0
        tree = _wls.build_tree(levels, n_leaves)
        person = (k, c, pol)
    else:
        leaves, one_d = _leaf_schema(leaf_counts)
        tree = _wls.build_tree(levels, leaves.shape[0])
    L = len(tree.sizes)
    rhos = _measure.rho_levels(rho, L, bool(total_invariant))
    unit = "record"
    if person is not None:
        k, c, _ = person
        lv = [np.asarray(x, np.int64) for x in levels]
        mechs, l2sq, event, rho_total = _units.level_mechanisms(lv, rhos, k, c)
        one_d = True
        unit = (f"person (privacy_ids; max_partitions={k}, max_per_partition={c}, "
                f"bounding={bounding!r})")
    else:
        mechs, l2sq, event, rho_total = _measure.record_mechanisms(rhos)
    sigma = [0.0 if m is None else float(m.sigma) for m in mechs]
    return TopDownPlan(tree, rhos, mechs, sigma, l2sq, event, rho_total, nonnegative,
                       integer, total_invariant, one_d, unit, person,
                       bounding if isinstance(bounding, str) else "uniform", str(estimator))
