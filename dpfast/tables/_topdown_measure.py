"""TopDown's per-level measurements and its estimator: each level's budget, mechanism and
event, the noise, and the estimate made from the noisy levels.

:func:`dpfast.tables.topdown` validates the hierarchy and plans the release
(:mod:`dpfast.tables.hierarchy`); this module does what follows from the plan:

* **The budget per level** (:func:`rho_levels`): one ``rho_j`` per level, or a total split
  equally over the measured levels, rounded down so the parts never sum above it.
* **The mechanisms and the event** (:func:`record_mechanisms`; per person
  :func:`dpfast.tables._topdown_units.level_mechanisms`): level ``j``'s discrete Gaussian
  of ``sigma_j``, and the release's event and ``rho_total``, a function of the ``sigma_j``
  and the squared L2 sensitivities alone (:mod:`dpfast.tables._topdown_events`, which a
  release rebuilt from its state is checked against, :mod:`dpfast.tables._topdown_state`).
* **The measurement and the estimator** (:func:`measure`): the noise (after the charge),
  then the least squares, weighted by ``sigma_j^2`` (``estimator="topdown"``) or by the
  noise's exact variances (``"blue"``;
  :func:`dpfast.tables._topdown_blue.estimator_weights`), and for the default the
  non-negative integer rounding (:mod:`dpfast.tables._topdown_round`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from dpfast import mechanisms as _mechanisms
from dpfast import noise as _noise
from dpfast.accounting import events as _events
from dpfast.random import Generator

from . import _topdown_blue as _blue
from . import _topdown_events as _tevents
from . import _topdown_round as _round
from . import _wls
from ._topdown_release import TopDownRelease

__all__ = ["rho_levels", "post_flags", "record_mechanisms", "measure"]

Mechs = list[_mechanisms.DiscreteGaussianMechanism | None]


def rho_levels(rho: object, n_levels: int, total_invariant: bool) -> list[float]:
    """One ``rho_j`` per level (0 for an unmeasured root): ``rho`` per level, checked, or a
    total split equally over the measured levels, rounded down so the parts never sum
    above it (TypeError / ValueError naming ``rho``)."""
    measured = list(range(1 if total_invariant else 0, n_levels))
    if not measured:
        raise ValueError("total_invariant=True needs at least one level below the root")
    if isinstance(rho, numbers.Real) and not isinstance(rho, bool):
        r = float(rho)
        if not (math.isfinite(r) and r > 0):
            raise ValueError(f"rho must be a finite number > 0, got {rho!r}")
        share = r / len(measured)
        while Fraction(share) * len(measured) > Fraction(r):  # never spend more than rho
            share = math.nextafter(share, 0.0)
        if share == 0.0:
            raise ValueError(f"rho={rho!r} is too small to split over {len(measured)} levels")
        out = [0.0] * n_levels
        for j in measured:
            out[j] = share
        return out
    if isinstance(rho, str | bytes) or not isinstance(rho, Sequence | np.ndarray):
        raise TypeError("rho must be a number or a sequence with one value per level")
    vals = list(np.asarray(rho, dtype=object).reshape(-1))
    if len(vals) != n_levels:
        raise ValueError(f"rho must have one value per level ({n_levels}), got {len(vals)}")
    out = []
    for j, v in enumerate(vals):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"rho[{j}] must be a real number, got {type(v).__name__}")
        f = float(v)
        if j == 0 and total_invariant:
            if f != 0.0:
                raise ValueError("with total_invariant=True level 0 is not measured: rho[0] "
                                 f"must be 0, got {v!r}")
        elif not (math.isfinite(f) and f > 0):
            raise ValueError(f"rho[{j}] must be a finite number > 0, got {v!r}")
        out.append(f)
    return out


def post_flags(estimator: object, nonnegative: object, integer: object
               ) -> tuple[object, object]:
    """``nonnegative`` and ``integer`` for ``estimator`` (None: its default), checked:
    the BLUE is released unrounded (ValueError naming the parameter)."""
    if estimator not in _blue.ESTIMATORS:
        raise ValueError(f"estimator must be 'topdown' or 'blue', got {estimator!r}")
    if estimator == "topdown":
        return (True if nonnegative is None else nonnegative,
                True if integer is None else integer)
    for name, flag in (("nonnegative", nonnegative), ("integer", integer)):
        if flag is not None and flag is not False:
            raise ValueError(f"estimator='blue' releases the unrounded estimate: {name} "
                             f"must be False or None, got {flag!r} (round it afterwards "
                             "with TopDownRelease.rounded(), a post-processing step)")
    return False, False


def record_mechanisms(rhos: Sequence[float]
                      ) -> tuple[Mechs, list[int], _events.Composed, float]:
    """Per level (one record is the unit): the mechanism whose ``sigma`` noises it (None:
    not measured) and the squared L2 sensitivity (1: one record changes one cell of one
    unit per level, by 1); the release's event and ``rho_total`` (rounded up)."""
    mechs: Mechs = []
    for r in rhos:
        # max_changed=1: with rho it only fills the event's sensitivity, sigma is the same
        mechs.append(None if r == 0.0 else
                     _mechanisms.DiscreteGaussianMechanism(rho=r, max_changed=1))
    l2sq = [1] * len(mechs)
    sigma = [0.0 if m is None else float(m.sigma) for m in mechs]
    for m in mechs:  # the mechanism's own event is the level's (sensitivity 1: exact)
        if m is not None and m.event != _events.DiscreteGaussian(
                noise_multiplier=m.sigma, sensitivity=1):  # pragma: no cover - invariant
            raise RuntimeError(f"topdown: unexpected level event {m.event!r}")
    event, rho_total = _tevents.release_event(sigma, l2sq)
    return mechs, l2sq, event, rho_total


def measure(tree: _wls.Tree, leaves: np.ndarray, mechs: Mechs, sigma: list[float],
            rhos: list[float], event: _events.Composed, rho_total: float, gen: Generator,
            nonnegative: bool, integer: bool, total_invariant: bool, one_d: bool,
            release_id: int | None, estimator: str = "topdown") -> TopDownRelease:
    """Noise every measured level, then estimate: the least squares (weighted as
    ``estimator`` says) and, for the default, the rounding (the budget has been
    charged)."""
    L = len(tree.sizes)
    tables = _wls.aggregate(tree, leaves)
    root_exact = tables[0].copy() if total_invariant else None
    noisy: list[np.ndarray | None] = []
    for j in range(L):
        if mechs[j] is None:
            noisy.append(None)
            tables[j] = np.empty((0, 0), np.int64)
            continue
        noisy.append(_noise.discrete_gaussian(tables[j], sigma[j], rng=gen, out=tables[j]))
    del tables
    blue = estimator == "blue"
    var, scale = _blue.estimator_weights(sigma, estimator)
    x, F, V = _wls.least_squares(tree, noisy, var, root_exact)
    if scale != 1.0:  # the exact variances: F scales with the common factor (rounded up)
        F = [_blue.scale_up(f, scale) for f in F]

    estimates: list[np.ndarray]
    if blue or (not nonnegative and not integer):
        estimates = x
    else:
        estimates = _round.round_tree(tree.sizes, tree.parent, x, V, var, root_exact,
                                      nonnegative, integer)
    if one_d:
        estimates = [e[:, 0] for e in estimates]
        noisy = [None if n is None else n[:, 0] for n in noisy]
        x = [e[:, 0] for e in x]
    rel = TopDownRelease(
        estimates=estimates, noisy=noisy, consistent=x, variances=F, sigma=sigma, rho=rhos,
        event=event, total_invariant=bool(total_invariant), nonnegative=bool(nonnegative),
        integer=bool(integer), mechanisms=mechs, rho_total=rho_total, release_id=release_id,
        estimator="blue" if blue else "topdown",
    )
    if blue:  # what rounded() needs besides the release: the hierarchy (public)
        rel._parents = list(tree.parent)
        rel._subtree_var = V  # (rounded() rebuilds the same bits from the two above)
    return rel
