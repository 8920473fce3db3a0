"""The privacy-loss-distribution (PLD) accountant: :class:`PldAccountant`."""

from __future__ import annotations

import math

from dpfast._core.errors import UnsupportedEventError
from dpfast._core.validate import check_nonneg, check_positive, check_probability

from .. import events as ev
from ..base import Accountant
from . import _curves as cv
from . import _pmf as pm
from ._atomic import common_lattice
from ._keys import _SWAPPABLE, _curves, _key, _loss_moments
from ._lower import connect_dots_lower
from ._swap import MAX_HI, swap_pmf

__all__ = ["PldAccountant", "UnsupportedEventError"]

#: largest number of grid points of one distribution (8 MiB of float64; the FFT of a
#: composition of two such needs ~5 arrays of that size: ~64 MiB peak)
MAX_BINS = 2**20
#: tail mass truncated at each composition (added to delta, pessimistic side): at most
#: _TAU_SHARE of the queried delta (a power of ten), at least _TAU (delta unknown or 0)
_TAU = 1e-16
_TAU_SHARE = 1e-5
#: automatic grid: interval = _GRID_FRACTION * (smallest loss standard deviation)
_GRID_FRACTION = 0.05
#: the FFT power is redone in long double when its round-off bound exceeds this share
#: of the queried delta
_PRECISE_SHARE = 1e-3
#: the composed add direction is derived by the swap only below this largest swapped
#: loss (its ``err`` grows like ``e^hi``; the query's allowance decides beyond)
_SWAP_HI = 30.0


_Cost = tuple[tuple[tuple, int], ...]


def _tau_for(target: float | None) -> float:
    """The truncated tail mass per composition for a query at ``delta = target``: a power
    of ten at most ``_TAU_SHARE * target`` (narrower windows; all of it is added to
    ``delta``), or :data:`_TAU` where the target is unknown."""
    if target is None or target <= 0.0:
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


class PldAccountant(Accountant):
    """Privacy-loss-distribution accountant: the tightest ``(epsilon, delta)`` by FFT.

    Parameters
    ----------
    value_discretization_interval : float, optional
        Grid interval of the privacy loss.  Default (``None``): chosen per query from
        the composed events, ``0.05 x`` the smallest standard deviation of one event's
        loss (the discretisation then raises ``epsilon`` by about 0.02%),
        enlarged if needed so that no distribution exceeds :data:`MAX_BINS` points.
    neighbouring : {None, "add_remove", "replace_one"}
        The neighbouring relation (:class:`~dpfast.accounting.Accountant`): ``None``
        adopts the first one an event fixes; replace-one events (randomized response)
        and add/remove-one events (Poisson subsampling) do not mix (no group-privacy
        conversion here: ``NeighbouringRelationError``).

    Notes
    -----
    Supported events: :class:`~dpfast.accounting.events.Gaussian`, ``Laplace``,
    ``DiscreteGaussian(m, sensitivity=D)`` and ``DiscreteLaplace(m, sensitivity=D)``
    (a scalar integer query, or one changed coordinate, shifted by at most ``D``: their
    exact loss distributions, atoms at ``(D^2 - 2 D x) / (2 s^2)``, ``s = m D``, resp.
    ``(|x - D| - |x|) / t``, ``t = m D``; up to 2^21 atoms, i.e. ``s`` up to about
    10^5), ``DiscreteLaplace(m)`` without a sensitivity and the pure ``Epsilon`` /
    ``Snapping`` / ``Exponential`` (through randomized response with epsilon ``1 / m``
    resp. the same epsilon, which dominates every ``epsilon``-DP mechanism: Kairouz, Oh
    & Viswanath 2015), ``RandomizedResponse`` (``k``-ary), ``EpsilonDelta``,
    ``PoissonSampled`` of ``Gaussian`` or ``Laplace``, ``SelfComposed`` and ``Composed``
    of these.  Anything else raises :class:`UnsupportedEventError` (a ``ValueError``) and
    composes nothing, also an atomic pair with a privacy loss above 700 (pure ``epsilon``
    > 700, discrete noise that small: ``e^L`` would overflow); in particular
    ``DiscreteGaussian`` *without* ``sensitivity`` (a vector query of L2 sensitivity
    ``D``: its loss distribution depends on how the shift spreads over the coordinates,
    and neither the scalar pair nor the continuous Gaussian dominates the others) and
    ``Zcdp``: use :class:`~dpfast.accounting.RdpAccountant` for those.

    Atomic pairs (the discrete mechanisms, randomized response) are discretised exactly
    by :mod:`~dpfast.accounting.pld._atomic` (each atom split between its two grid
    neighbours, keeping its ``P``- and ``Q``-mass: connect-the-dots with no quadrature,
    vectorised), and when all the losses lie on one lattice the automatic grid divides
    it, so every atom sits on a grid point and the upper bound is exact up to the
    floating-point allowance and the tail truncation.

    ``compose`` only records events; the distributions are built and convolved at the
    first query and cached until the next ``compose``.  Both directions of the
    add/remove relation are tracked (Poisson subsampling makes them differ) and the
    larger ``delta`` is reported.

    Memory is bounded by construction: every distribution has at most
    :data:`MAX_BINS` (2^20) grid points, so one composition needs about 64 MiB
    whatever the setting (``epsilon = 0.01`` or ``50``); a user-given interval that
    would need more raises ``ValueError``.

    Privacy
    -------
    ``get_epsilon(delta)`` returns ``epsilon`` with everything composed
    ``(epsilon, delta)``-DP (adaptive composition; the relation of the events:
    add/remove for ``PoissonSampled``, replace-one for randomized response), i.e.
    ``delta(epsilon) = sup E_P[(1 - e^(epsilon - L))_+] + P(L = inf)`` over both
    directions is at most ``delta``.  It is an **upper bound** on the exact value:
    each event's loss is discretised pessimistically (connect-the-dots, Doroshenko
    et al. 2022), truncated tails are moved to ``+inf`` (their mass is added to
    ``delta``) and a bound on the FFT round-off is added too (rigorous under the
    standard floating-point model of the FFT: see Numerics).  How far above:
    :meth:`get_epsilon_bounds` also returns a valid lower bound, so the true value
    lies between and the measured gap ``upper - lower`` states how far above it can
    be.  The lower bound discretises each event from below (connect the dots from
    below, :mod:`~dpfast.accounting.pld._lower`: a convex curve with knots on the
    same grid, below the exact privacy curve and itself a valid one, so the exact
    pair dominates it and domination survives composition; at most one loss is then
    rounded down, which only lowers every composed delta), with tails dropped and
    round-off subtracted.  Measured gaps (default grid): 0.12% for q = 256/60000,
    sigma 1.1, 14,062 steps (lower 2.3793, upper 2.3821; losses rounded down gave
    0.70), 0.07% for the Abadi et al. setting (q 0.01, sigma 4, 10^4 steps), 0.3% for
    q 0.001, sigma 0.6, 10^5 steps at delta 1e-8, but 7% for q 0.004, sigma 0.8, 10^5
    steps.  The upper bound itself is about 2e-4 relative above the truth with the
    default grid (against a 5x finer grid; within 0.5% of dp_accounting's
    pessimistic PLD at interval 1e-4 on 32 DP-SGD settings; exact against Balle &
    Wang's closed form for the Gaussian to 1e-3 relative).

    The discrete Gaussian with ``sensitivity=D`` is accounted as the pair
    ``N_Z(0, s^2)``, ``N_Z(D, s^2)``: by Canonne, Kamath & Steinke 2020 ("The discrete
    Gaussian for differential privacy", Thm. 7) its hockey-stick divergence at every
    ``epsilon >= 0`` is at least that of every integer shift ``|k| <= D``, and it is
    symmetric (``x -> D - x``), so it bounds both directions of every scalar release of
    sensitivity ``D``; ``x`` is truncated to ``[-K, K + D]``, ``K = floor(sqrt(90) s)``,
    the ``P``-mass outside (< 1e-19) moved to ``+inf``.  The discrete Laplace with
    ``sensitivity=D``: the pair ``DLap(0, t)``, ``DLap(D, t)``, which bounds every shift
    ``|k| <= D`` by the same argument (log-concave noise: the loss is monotone in ``x``,
    the optimal set is a half-line, so ``delta_k(epsilon) = max_a F(a) - e^epsilon
    F(a - k)`` with ``F`` the distribution function, which grows with ``k``; negative
    shifts by symmetry).  Measured (lattice-aligned automatic grid): single discrete
    Gaussians above the exact ``delta`` (mpmath sums) by at most 1e-12 absolute (the
    floating-point allowance), 100 compositions (exact convolutions) by at most 3.4e-11
    (8e-7 relative for ``delta > 1e-8``); the discrete Laplace within 1e-5 of
    dp_accounting's pessimistic PLD (interval 1e-4).  The error allowances of the atoms
    (float masses and losses) also cover a noise scale up to ``2u`` above
    ``noise_multiplier * D``, the mechanisms' own (they round ``noise_multiplier`` down).

    Numerics
    --------
    float64; FFT by scipy.fft; self-composition by one FFT raised to the power ``count``
    over a Chernoff-bounded window; different events by linear FFT convolution.  The
    discretisation is pessimistic by construction: each chord slope is a quadrature
    plus an error bound, certified for the remove pairs (Gaussian: derivative bound of
    the 4-node Gauss-Legendre rule and node placement; Laplace: the integrals in closed
    form with their rounding bounded), rounded up by 64 ulps.  The add direction of the
    subsampled Gaussian / Laplace is derived exactly from the remove direction for
    ``q`` up to about 0.75 (beyond, it is discretised directly with ``|G4 - G3|``, an asymptotic
    estimate, as its quadrature error)
    (:mod:`~dpfast.accounting.pld._swap`), for one event and, where affordable, for the
    whole composition (swapping commutes with composition: one FFT power instead of
    two; its allowance grows like ``e^hi``, ``hi`` the composed remove pmf's lowest
    loss, and the ``Q``-mass of its truncated lower tail moves to ``+inf``; both must
    stay below 1e-3 of the queried ``delta``, else both directions are composed).
    The FFT round-off is bounded, not estimated: each output
    coefficient of an FFT of ``x`` is taken to be within ``10 u (log2 n + 1) ||x||_1``
    (the componentwise form of Higham 2002, Thm. 24.2, for mixed-radix Cooley-Tukey;
    pocketfft's implementation is assumed to satisfy it, not verified), propagated
    through the product or the power (which multiplies it by ``count``) and the
    inverse FFT to an L1 bound on the output masses, which bounds the change of
    ``delta``; it is added to ``delta``.  Size: ~5e-10 at 10^4 compositions, ~5e-9 at
    10^5; where it exceeds 1e-3 of the queried ``delta`` the power is redone in long
    double (x86-64: ~1e-10 left, mostly ``count`` times 8u per event).  Tails below
    ``1e-5 delta`` (a power of ten; ``1e-16`` for ``get_delta`` or ``delta = 0``) per
    truncation and ``1.2e-19`` per event are moved to ``+inf``.  See
    :mod:`dpfast.accounting.pld._pmf`.

    Examples
    --------
    >>> from dpfast.accounting import PldAccountant, events as ev
    >>> acct = PldAccountant().compose(ev.PoissonSampled(ev.Gaussian(1.1), 0.01), 1000)
    >>> round(acct.get_epsilon(1e-5), 2)  # doctest: +SKIP
    """

    def __init__(self, value_discretization_interval: float | None = None, *,
                 neighbouring: str | None = None) -> None:
        super().__init__(neighbouring=neighbouring)
        if value_discretization_interval is not None:
            value_discretization_interval = check_positive(
                value_discretization_interval, "value_discretization_interval")
        self._dx_user = value_discretization_interval
        self._counts: dict[tuple, int] = {}
        self._cache: dict[tuple[bool, str, float], tuple[float, list[pm.Pmf]] | None] = {}
        self._work: dict = {}  # per grid: one event's pmfs, composed directions

    # ------------------------------------------------------------------ contract
    # supports / compose come from Accountant: one dispatch on the event type through
    # _HANDLERS (below); a cost is a tuple of (distribution key, multiplicity) pairs.

    def _leaf(self, event: ev.DpEvent) -> _Cost:
        k = _key(event)
        return () if k is None else ((k, 1),)

    def _self_composed(self, event: ev.SelfComposed) -> _Cost:
        inner = self._cost(event.event)
        return tuple((k, m * event.count) for k, m in inner if event.count)

    def _composed(self, event: ev.Composed) -> _Cost:
        return tuple(part for e in event.events for part in self._cost(e))

    def _add(self, cost: _Cost, count: int) -> None:
        for k, m in cost:
            if m:
                self._counts[k] = self._counts.get(k, 0) + m * count
                self._cache.clear()
                self._work = {}

    def get_epsilon(self, delta: float) -> float:
        """Smallest ``epsilon`` (an upper bound, see Privacy) at ``delta``."""
        return self.get_epsilon_bounds(delta, lower=False)[1]

    def get_delta(self, epsilon: float) -> float:
        """Smallest ``delta`` (an upper bound) at ``epsilon``."""
        return self.get_delta_bounds(epsilon, lower=False)[1]

    def get_epsilon_bounds(self, delta: float, *, lower: bool = True) -> tuple[float, float]:
        """``(lower, upper)`` bounds on the exact ``epsilon`` at ``delta``.

        With ``lower=False`` the lower bound is not computed (returned as ``nan``).
        The lower bound comes from two discretisations from below (the larger is kept;
        see the class's Privacy section for measured gaps).
        """
        d = check_probability(delta, "delta", zero=True, one=True)
        if d >= 1.0:
            return 0.0, 0.0
        up = max(pm.epsilon(p, dx, d) for dx, p in self._pmfs(True, d, d))
        lo = (max(pm.epsilon(p, dx, d) for dx, p in self._pmfs(False, d, d)) if lower
              else math.nan)
        return lo, up

    def get_delta_bounds(self, epsilon: float, *, lower: bool = True) -> tuple[float, float]:
        """``(lower, upper)`` bounds on the exact ``delta`` at ``epsilon``."""
        e = check_nonneg(epsilon, "epsilon", allow_inf=True)
        if e == math.inf:
            return 0.0, max(p.inf + p.err for _, p in self._pmfs(True)) if self._counts else 0.0
        dx0, pmfs, slack = self._select(True)
        up = max(pm.delta(p, dx0, e) for p in pmfs)
        if up < 1.0 and slack > _PRECISE_SHARE * up:
            up = max(pm.delta(p, dx, e) for dx, p in self._pmfs(True, up))
        lo = max(pm.delta(p, dx, e) for dx, p in self._pmfs(False, up)) if lower else math.nan
        return lo, up

    @property
    def value_discretization_interval(self) -> float | None:
        """The grid interval of the last query (the user's, or the automatic one)."""
        if self._dx_user is not None:
            return self._dx_user
        for built in self._cache.values():
            if built is not None:
                return built[0]
        return None

    # ------------------------------------------------------------------ work

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
        dx = min(_GRID_FRACTION * sd_min, 0.01 * math.sqrt(var_tot) if var_tot > 0 else math.inf)
        # the composed distribution spans about 30 standard deviations: fit MAX_BINS
        floor = max(30.0 * math.sqrt(var_tot) / MAX_BINS, 2.0 * width / MAX_BINS, 1e-9)
        dx = max(dx, floor)
        # atomic losses on one lattice (discrete noise, randomized response): a grid
        # that divides the lattice puts every atom on a grid point, so the upper bound is
        # exact; the finest such grid not coarser than the automatic one (the lower bound
        # still rounds the top atom down by one step), or the lattice itself if at most
        # 4x finer
        lattice = common_lattice([cv_ for cs, _ in items for cv_ in cs])
        if lattice is not None and lattice >= max(0.25 * dx, floor):
            n = max(1, math.ceil(lattice / dx * (1.0 - 1e-12)))
            if lattice / n >= floor:
                dx = lattice / n
        return dx

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

    def __repr__(self) -> str:
        n = sum(self._counts.values())
        return (f"PldAccountant(value_discretization_interval={self._dx_user!r}, "
                f"{len(self._counts)} distinct events, {n} compositions)")


PldAccountant._HANDLERS = {
    **{cls: PldAccountant._leaf for cls in (
        ev.Gaussian, ev.Laplace, ev.DiscreteLaplace, ev.DiscreteGaussian,
        ev.RandomizedResponse, ev.Epsilon,
        ev.Snapping, ev.Exponential, ev.EpsilonDelta, ev.PoissonSampled)},
    ev.SelfComposed: PldAccountant._self_composed,
    ev.Composed: PldAccountant._composed,
}
