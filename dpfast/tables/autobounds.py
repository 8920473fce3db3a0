"""``bounds="auto"``: clamping bounds chosen by private quantiles, at a stated share of ε.

:func:`auto_bounds` releases ``(lo, hi)`` alone (reusable by any bounded statistic);
:func:`dpfast.tables.sum` / :func:`~dpfast.tables.mean` with ``bounds="auto"`` run the
two-phase plan of :mod:`dpfast.tables._autobounds` (:class:`~dpfast.tables._autobounds.AutoPlan`):
``AUTO_SHARE`` (10%) of ε picks the bounds, the rest releases the statistic with them,
and the composed event -- the plan's, known before any row is read -- is charged once by
:func:`dpfast.tables.run.release`, before anything is drawn.

The bounds are the ``quantiles`` (default the 1st and 99th percentiles) of the pooled rows:
one row per person (with privacy ids: the release's keyed bounding at ``k = c = 1``, its
bounding policy; without: every row), so one person moves any rank by at most 1 (pooling
``k c`` rows per person instead gives ``k c`` times the rows but ``k c`` times the
sensitivity: never a better signal).  On a public grid: the signed powers of two
``0, ±2**e`` (``e`` in ``[-30, 62]`` for floats, ``[0, 40]`` for integers) unless
``candidates`` are given.  The mechanism (:mod:`dpfast.tables._bounds_em`): a private
*scale* (the median magnitude's octave, ε_b/6), which sets the candidates (0 and the grid
points of magnitude at least ``2**-8`` times it), a private *centre* interval of them (the
mid quantile, ε_b/6), then each bound by the exponential mechanism whose base measure
decays by at least ``λ = 1`` nat per candidate step away from the centre (ε_b/3 each).
The base measure is data-independent (it does not change the sensitivity); it makes the
candidates beyond the data, which all tie on rank, exponentially unlikely the farther out
they are, where the plain mechanism picked uniformly among them (measured before:
``lo = -1.8e13`` for N(50, 10) at 2·10⁵ rows).

Guarantee (:meth:`AutoBounds.steps_beyond`, :meth:`AutoBounds.rank_error`): with
probability ``1 - α`` each bound is at most ``j(α)`` candidate steps (``j = 5`` at
α = 0.05; on the default grid: octaves) farther from the centre than the candidate whose
rank is nearest the target, and its rank error exceeds that candidate's by at most
``r(α) + s·(steps it lies closer to the centre)`` (``s = ceil(2/ε_q)`` ranks per step,
``ε_q = ε_b / 3``).  The scale and the centre are right when ``n`` (people, or rows
without privacy ids) is well above ``(4/ε_s) ln(m/α)`` (``ε_s = ε_b / 6``: about 1,800 at
ε = 1); with fewer, a weak data-independent prior (0.1 nat a step towards 0) decides them
and the bounds fall near 0 (narrow: clamping bias; measured for N(50, 10) at 1,000 rows and
ε_b = 0.1: 74% near 0, 4.5% beyond 10⁴).  With a weak rank signal the base measure
pulls each bound towards the centre (tighter bounds, more clamping), never out to the far
plateau.  Pass public ``bounds`` when the range is known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from dpfast._core.validate import check_real
from dpfast.random import RngLike
from dpfast.tables import _bounds_em as _bem  # noqa: F401  (autobounds._bem: the mechanism)
from dpfast.tables import _quantile_em as _em
from dpfast.tables import bounding
from dpfast.tables import run as _run
from dpfast.tables import spec as _spec
from dpfast.tables._autobounds import (
    AUTO_SHARE,
    DEFAULT_QUANTILES,
    AutoBounds,
    BoundsPlan,
    _check_quantiles,
    bounds_event,
    default_grid,
    split,
)

if TYPE_CHECKING:
    import numpy.typing as npt

    from dpfast.tables.spec import Charger

__all__ = ["auto_bounds", "AutoBounds", "AUTO_SHARE", "default_grid", "bounds_event", "split"]


def auto_bounds(values: npt.ArrayLike,
                keys: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None = None,
                privacy_ids: npt.ArrayLike | None = None, *,
                epsilon: float, quantiles: tuple[float, float] = DEFAULT_QUANTILES,
                max_partitions: int = 1, max_per_partition: int = 1,
                candidates: npt.ArrayLike | None = None, rng: RngLike = None,
                budget: Charger | None = None,
                note: str = "") -> AutoBounds:
    """Choose clamping bounds privately: the ``quantiles`` of all rows (pooled).

    Parameters
    ----------
    values : array_like
        One number per row.
    keys, privacy_ids, max_partitions, max_per_partition
        The rows and bounding of the release the bounds are for (as in
        :func:`dpfast.tables.sum`); the pooled rows are one per person (``k = c = 1``
        of that bounding), whatever ``max_partitions`` / ``max_per_partition`` (still
        validated).  ``keys=None``: one key.
    epsilon : float
        Spent on the scale and the centre (``epsilon / 6`` each) and the two bounds
        (``epsilon / 3`` each).
    quantiles : (float, float)
        ``(q_lo, q_hi)`` with ``0 <= q_lo < q_hi <= 1``.
    candidates : array_like, optional
        The public grid (default :func:`default_grid`: signed powers of two).
    rng, budget, note
        As in :func:`dpfast.tables.count` (``budget`` charged with :attr:`AutoBounds.event`).

    Returns
    -------
    AutoBounds
        ``.lo <= .hi`` (``lo < hi``: a single chosen point is widened to the next grid
        point), ``.event``.

    Privacy
    -------
    ``epsilon``-DP under add/remove one person.  After bounding (one row per person) the
    pooled rows change by at most one, so ``n``, the rows below / at most any grid point
    or magnitude, and ``t = floor(q n)`` move by at most ``Δ = 1``, and every rank utility
    ``-max(a - t, t - b, 0)`` (of a point or an interval) by at most 1.  Steps 1 and 2
    (scale, centre) are exponential mechanisms at ``ε/6`` each (rounded down), their weak
    priors towards 0 public, the centre's candidates depending only on the released scale;
    given scale and centre, each bound is the exponential mechanism at ``ε_q = ε/3`` over
    the candidates with the base measure ``μ_p ∝ exp(-ε_q s d_p / 2)``, ``d_p`` the
    candidate steps from ``p`` to the centre: public values only (grid, ``ε``, scale,
    centre), so for neighbours ``x, x'``
    ``P(p | x) / P(p | x') = e^{c (u_p(x) - u_p(x'))} Z(x') / Z(x) <= e^{c} e^{c}
    = e^{ε_q}`` with ``c = ε_q / 2`` and ``Z = Σ_q μ_q e^{c u_q}`` (McSherry & Talwar
    2007, whose proof holds for any data-independent base measure).  Adaptive composition:
    ``2 ε/6 + 2 ε/3 <= ε``; event ``Composed((SelfComposed(Exponential(ε/6), 2),
    SelfComposed(Exponential(ε/3), 2)))`` (each also bounded-range at its ε).  Sorting
    and widening the pair is post-processing.

    Notes
    -----
    Accuracy, per bound, with probability ``1 - α``: at most :meth:`AutoBounds.steps_beyond`
    grid steps farther from the centre than the grid point of largest rank utility, and a
    rank error at most :meth:`AutoBounds.rank_error` beyond that point's, plus
    ``s`` per step it lies closer to the centre.
    """
    qs = _check_quantiles(quantiles)
    bounding.positive_int(max_partitions, "max_partitions")
    bounding.positive_int(max_per_partition, "max_per_partition")
    eps = check_real(epsilon, "epsilon")
    if not 0.0 < eps < float("inf"):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    if not isinstance(note, str):
        raise TypeError(f"note must be a str, got {type(note).__name__}")
    plan = BoundsPlan(float(eps), qs, None if candidates is None else
                      _em.grid(None, 1, candidates, False))
    spec = _spec.ReleaseSpec(
        (_spec.StatSpec("auto_bounds", params=(("quantiles", qs),)),), epsilon=float(eps),
        options=(("candidates", None if plan.candidates is None
                  else tuple(plan.candidates.tolist())),))
    # keys None: the bounds plan's rows are one key (it reads the values' length)
    rows = _run.Rows(cast("npt.ArrayLike", keys), privacy_ids, values)
    out: AutoBounds = _run.release(spec, rows, budget=budget,
                                   note=note, rng=rng, plan=plan)
    return out
