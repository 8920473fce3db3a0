"""The PLD accountant's build machinery: grid choice, build selection and composition.

:class:`_PldBuild` is the half of :class:`~dpfast.accounting.pld.PldAccountant` that turns
the recorded events (``_counts``: distribution key -> count) into composed privacy-loss
pmfs: the automatic grid interval (:meth:`_PldBuild._auto_dx`), the choice of the
cheapest build whose round-off allowance the query affords (:meth:`_PldBuild._select`:
swap, direct, long-double precise), and the per-direction compositions, cached per grid.
The public class, its queries and its documentation live in
:mod:`~dpfast.accounting.pld.accountant`.
"""

from __future__ import annotations

import math

from . import _curves as cv
from . import _pmf as pm
from ._atomic import common_lattice
from ._keys import _SWAPPABLE, _curves, _loss_moments
from ._lower import connect_dots_lower
from ._swap import MAX_HI, swap_pmf

#: largest number of grid points of one distribution (8 MiB of float64; the FFT of a
#: composition of two such needs ~5 arrays of that size: ~64 MiB peak)
MAX_BINS = 2**20
#: tail mass truncated at each composition (added to delta, pessimistic side): at most
#: _TAU_SHARE of the queried delta (a power of ten), at least _TAU (delta unknown or 0)
_TAU = 1e-16
_TAU_SHARE = 1e-5
#: automatic grid: interval = _GRID_FRACTION * (smallest loss standard deviation)
_GRID_FRACTION = 0.05
#: and at most _SPREAD_FRACTION of the composed loss's standard deviation; at most
#: _FEW_FRACTION of it when at most _FEW events are composed, with atoms but not all on a
#: lattice (errors at the atoms are not averaged out; the composed loss spans ~15,000 points)
_SPREAD_FRACTION = 0.01
_FEW_FRACTION = 0.002
_FEW = 32
#: the FFT power is redone in long double when its round-off bound exceeds this share
#: of the queried delta
_PRECISE_SHARE = 1e-3
#: the composed add direction is derived by the swap only below this largest swapped
#: loss (its ``err`` grows like ``e^hi``; the query's allowance decides beyond)
_SWAP_HI = 30.0


def _tau_for(target: float | None) -> float:
    """The truncated tail mass per composition for a query at ``delta = target``: a power
    of ten at most ``_TAU_SHARE * target`` (narrower windows; all of it is added to
    ``delta``), or :data:`_TAU` where the target is unknown."""
    if target is None or not _TAU_SHARE * target > 0.0:  # unknown, 0 or subnormal
        return _TAU
    return max(_TAU, 10.0 ** math.floor(math.log10(_TAU_SHARE * target)))


def _slack(mode: str, pmfs: list[pm.Pmf]) -> float:
    """What a build may add to ``delta`` beyond the exact composition of the discretised
    pairs: the round-off allowance, and for the swap the ``Q``-mass the composed remove
    pmf no longer carries (its truncated lower tail: tiny in ``P``, possibly not in
    ``Q``), i.e. the swapped ``+inf`` mass beyond the remove pmf's own."""
    out = max((p.err for p in pmfs), default=0.0)
    if mode == "swap":
        out = max(out, pmfs[1].err + max(pmfs[1].inf - pmfs[0].inf, 0.0))
    return out


class _PldBuild:
    """The build machinery of :class:`~dpfast.accounting.pld.PldAccountant` (a mixin: it
    reads the accountant's ``_dx_user``, ``_counts``, ``_cache`` and ``_work``)."""

    _dx_user: float | None
    _counts: dict[tuple, int]
    _cache: dict[tuple[bool, str, float], tuple[float, list[pm.Pmf]] | None]
    _work: dict

    def _auto_dx(self, items: list[tuple[tuple[cv.Curve, cv.Curve], int]]) -> float:
        sd_min, var_tot, width = math.inf, 0.0, 0.0
        for curves, c in items:
            v_dir = 0.0
            for curve in curves[:1] if curves[0] is curves[1] else curves:
                _, var = _loss_moments(curve)
                sd_min = min(sd_min, math.sqrt(var)) if var > 0 else sd_min
                v_dir = max(v_dir, var)
                width = max(width, curve.hi - curve.lo)
            var_tot += c * v_dir
        if not math.isfinite(sd_min):
            sd_min = max(width, 1e-3)
        # per event: a fraction of its loss's spread; few compositions: also a fraction
        # of the composed spread (the interpolation error is then not averaged out)
        dx = min(_GRID_FRACTION * sd_min,
                 _SPREAD_FRACTION * math.sqrt(var_tot) if var_tot > 0 else math.inf)
        # the composed distribution spans about 30 standard deviations: fit MAX_BINS
        floor = max(30.0 * math.sqrt(var_tot) / MAX_BINS, 2.0 * width / MAX_BINS, 1e-9)
        dx = max(dx, floor)
        # atoms on one lattice (discrete noise, randomized response: every loss; plain
        # Laplace: its two atoms): a grid that divides the lattice puts every atom on a
        # grid point, so connect-the-dots moves none up (atomic pairs: the upper bound is
        # exact); the finest such grid not coarser than the automatic one (the lower
        # bound still rounds the top atom down by one step), or the lattice itself if at
        # most 4x finer
        all_curves = [cv_ for cs, _ in items for cv_ in cs]
        lattice = common_lattice(all_curves)

        def aligned(dx: float) -> float | None:
            if lattice is not None and lattice >= max(0.25 * dx, floor):
                n = max(1, math.ceil(lattice / dx * (1.0 - 1e-12)))
                if lattice / n >= floor:
                    return lattice / n
            return None

        out = aligned(dx)
        if out is not None:
            return out
        # atoms off the grid, few events: each atom's rounding up is not averaged out, so
        # a finer grid (not for all-atomic pairs, whose allowance grows with the points,
        # nor for atomless Gaussians, smooth and tight already)
        atomic = all(getattr(cv_, "lattice", None) for cv_ in all_curves)
        smooth = all(getattr(cv_, "atomless", False) for cv_ in all_curves)
        if not (atomic or smooth) and sum(c for _, c in items) <= _FEW and var_tot > 0:
            dx = max(min(dx, _FEW_FRACTION * math.sqrt(var_tot)), floor)
            out = aligned(dx)
        return dx if out is None else out

    def _pmfs(self, pess: bool, delta: float = 1.0, target: float | None = None
              ) -> list[tuple[float, pm.Pmf]]:
        """The composed pmfs of :meth:`_select`, each with the grid interval."""
        dx, pmfs, _ = self._select(pess, delta, target)
        return [(dx, p) for p in pmfs]

    def _select(self, pess: bool, delta: float = 1.0, target: float | None = None
                ) -> tuple[float, list[pm.Pmf], float]:
        """``(dx, pmfs, slack)``: the composed pmfs from the cheapest build whose
        round-off allowance is at most ``_PRECISE_SHARE * delta``: pessimistic, the add
        direction derived from the composed remove direction by the swap (one FFT power
        instead of two; its ``err`` grows like ``e^hi``, see
        :mod:`~dpfast.accounting.pld._swap`), else both directions composed, else the
        long-double power (see :func:`~dpfast.accounting.pld._pmf.self_compose`).
        ``target``: the ``delta`` the answer is for (sets the truncated tail mass,
        :func:`_tau_for`); a build with a smaller truncation is reused.  ``slack``: what
        the build may add to ``delta`` (:func:`_slack`)."""
        if not self._counts:
            return 1.0, [pm.identity(pess)], 0.0
        modes = ("swap", "direct", "precise") if pess else ("direct", "precise")
        tau = _tau_for(target)
        for mode in modes:
            usable = [k for k in self._cache if k[:2] == (pess, mode) and k[2] <= tau]
            key = max(usable, key=lambda k: k[2]) if usable else (pess, mode, tau)
            if key not in self._cache:
                self._cache[key] = self._build(pess, mode, tau)
            built = self._cache[key]
            if built is None:  # the swap does not apply
                continue
            dx, pmfs = built
            slack = _slack(mode, pmfs)
            if mode == "precise" or slack <= _PRECISE_SHARE * delta:
                break
        return dx, pmfs, slack

    def _build(self, pess: bool, mode: str, tau: float = _TAU
               ) -> tuple[float, list[pm.Pmf]] | None:
        items = [(_curves(k), c) for k, c in sorted(self._counts.items(), key=repr)]
        dx = self._dx_user
        if dx is None:
            for cached in self._cache.values():
                if cached is not None:
                    dx = cached[0]
            if dx is None:
                dx = self._auto_dx(items)
        for _ in range(8):
            try:
                if pess:
                    out = self._compose_all(items, dx, True, mode, False, tau)
                    return None if out is None else (dx, out)
                # two lower bounds (see connect_dots_lower); the larger is reported
                return dx, [p for side in (False, True)
                            for p in self._compose_all(items, dx, False, mode, side, tau) or []]
            except pm.GridTooLargeError as exc:
                if self._dx_user is not None:
                    raise ValueError(f"{exc}: use a larger value_discretization_interval "
                                     f"(memory bound {MAX_BINS} points)") from None
                dx *= 2.0
        raise ValueError("PldAccountant: no grid fits the memory bound")  # pragma: no cover

    def _compose_all(self, items, dx: float, pess: bool, mode: str, one_sided: bool,
                     tau: float) -> list[pm.Pmf] | None:
        """One composed pmf per direction (remove, add), or one if all pairs are
        symmetric; ``None`` for ``mode == "swap"`` where it does not apply."""
        if self._work.get("dx") != dx:
            self._work = {"dx": dx}
        symmetric = all(cs[0] is cs[1] for cs, _ in items)
        if mode == "swap":
            # every add pair is the remove pair swapped (symmetric pairs: itself), so
            # the composed add pmf is the swap of the composed remove pmf
            if not pess or symmetric or not all(
                    cs[0] is cs[1] or isinstance(cs[0], _SWAPPABLE) for cs, _ in items):
                return None
            rem = self._direction(items, dx, pess, False, one_sided, 0, tau)
            hi = -rem.lo * dx
            if hi > _SWAP_HI or (rem.err + 1e-15) * math.exp(hi) > _PRECISE_SHARE:
                return None  # its err could not pass for any delta: compose directly
            return [rem, swap_pmf(rem, dx, exact_sums=False)]
        precise = mode == "precise"
        return [self._direction(items, dx, pess, precise, one_sided, d, tau)
                for d in ((0,) if symmetric else (0, 1))]

    def _direction(self, items, dx: float, pess: bool, precise: bool, one_sided: bool,
                   direction: int, tau: float) -> pm.Pmf:
        """The composition of all events in one direction (cached per grid)."""
        key = ("dir", pess, precise, one_sided, direction, tau)
        if key not in self._work:
            total = pm.identity(pess)
            for i, (curves, c) in enumerate(items):
                one = self._one(curves, i, dx, pess, one_sided, direction)
                total = pm.compose(total, pm.self_compose(one, c, tau, MAX_BINS, precise),
                                   tau, MAX_BINS)
            self._work[key] = total
        return self._work[key]

    def _one(self, curves: tuple[cv.Curve, cv.Curve], i: int, dx: float, pess: bool,
             one_sided: bool, direction: int) -> pm.Pmf:
        """One event's discretised pmf in one direction (cached per grid)."""
        if curves[0] is curves[1]:
            direction = 0
        key = ("one", pess, one_sided, direction, i)
        if key not in self._work:
            curve = curves[direction]
            if not pess:
                one = connect_dots_lower(curve, dx, MAX_BINS, one_sided)
            elif direction == 1 and isinstance(curves[0], _SWAPPABLE):
                # the add pair is the remove pair swapped (Poisson-subsampled Gaussian /
                # Laplace): its connect-the-dots pmf follows exactly
                rem = self._one(curves, i, dx, pess, one_sided, 0)
                one = (swap_pmf(rem, dx) if -rem.lo * dx <= MAX_HI
                       else pm.connect_dots(curve, dx, MAX_BINS))
            else:
                one = pm.connect_dots(curve, dx, MAX_BINS)
            self._work[key] = one
        return self._work[key]
