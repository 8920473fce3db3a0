"""The release object of :func:`dpfast.tables.topdown` (estimates, noisy measurements,
event, intervals, accuracy report)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypedDict, cast

import numpy as np

from dpfast import mechanisms as _mechanisms
from dpfast.accounting import events as _events
from dpfast.tables import metrics as _metrics
from dpfast.tables import state as _state

from ._law import _alpha as _alpha
from .release import AccuracySummary

if TYPE_CHECKING:
    import numpy.typing as npt
    import pandas as pd
    from matplotlib.axes import Axes
    from typing_extensions import NotRequired, Unpack

__all__ = ["TopDownRelease"]


def _delta(delta: object) -> float:
    """``delta`` in ``(0, 1)`` (ValueError naming it otherwise)."""
    from dpfast._core.validate import check_probability

    return check_probability(delta, "delta")


class TopDownFields(TypedDict):
    """The fields a :class:`TopDownRelease` is made of (its attributes)."""

    estimates: list[np.ndarray]
    noisy: list[np.ndarray | None]
    consistent: list[np.ndarray]
    variances: list[np.ndarray]
    sigma: list[float]
    rho: list[float]
    event: _events.Composed
    rho_total: float
    total_invariant: bool
    nonnegative: bool
    integer: bool
    mechanisms: list[_mechanisms.DiscreteGaussianMechanism | None]
    release_id: NotRequired[int | None]
    privacy_unit: NotRequired[str]
    sensitivity: NotRequired[list[float]]
    l2sq: NotRequired[list[int]]
    estimator: NotRequired[str]


class TopDownRelease:
    """The result of :func:`topdown`.

    Attributes
    ----------
    estimates : list of ndarray
        One array per level, shape ``(n_j,)`` or ``(n_j, n_cells)``: the released tables
        (int64 when ``integer``, else float64).  Every parent equals the sum of its
        children exactly (for float output: up to float rounding).
    noisy : list of ndarray or None
        The noisy measurements per level (int64), saved so a release can be audited
        (``noisy[0]`` is None with ``total_invariant``: the root is not measured).
    consistent : list of ndarray
        The least-squares estimates (float64) before non-negativity and rounding; unbiased,
        with error variance at most :attr:`variances`.  With ``estimator="blue"``: the
        BLUE (weighted by the noise's exact variances).
    variances : list of ndarray
        Per unit, an upper bound on the error variance of :attr:`consistent` (exact for
        measurement variance ``sigma_j^2``; the discrete Gaussian's variance is below it).
        With ``estimator="blue"``: the exact error variance of the BLUE (from the discrete
        Gaussians' exact variances, rounded up; float rounding of the two passes aside).
    estimator : {"topdown", "blue"}
        How :attr:`consistent` was weighted and which intervals the release states
        (:meth:`confidence_interval`).  A ``"blue"`` release's :attr:`estimates` are the
        BLUE itself unless it was made by :meth:`rounded`.
    sigma, rho : list of float
        Per level: the noise parameter and the zCDP budget (0 for an unmeasured root).
    event : dpfast.accounting.events.Composed
        One ``DiscreteGaussian(noise_multiplier=sigma_j, sensitivity=1,
        neighbouring="add_remove")`` per measured level (level order), composed: exactly
        what each level's noise does to its one changed coordinate (:func:`topdown`,
        Privacy), so
        :class:`~dpfast.accounting.PldAccountant` accounts it exactly, and RDP / zCDP
        accountants as ``sum_j 1 / (2 sigma_j^2)``-zCDP.  (Earlier versions: a single
        ``Zcdp(rho_total)``; ledgers and states holding such records still load.)  A
        release rebuilt by :meth:`from_state` carries the event its ``sigma`` and
        :attr:`sensitivity` imply (a state whose event disagrees is refused).
    rho_total : float
        ``sum_j 1 / (2 sigma_j^2)``, the zCDP ``rho`` actually spent (exact sum, rounded up
        once; ``<= rho``): the ``rho`` of the former ``Zcdp`` event.
    total_invariant : bool
        True when the level-0 totals are released exactly (not DP for them).
    privacy_unit : str
        Whom the guarantee protects: ``"record"`` (one record added or removed), or
        ``"person (privacy_ids; max_partitions=k, max_per_partition=c, ...)"`` (all records
        of one person, after per-person bounding).
    sensitivity : list of float
        Per level, the L2 sensitivity the noise was calibrated for (1 per record).
    release_id : int or None
        The fresh release id of a release made with a raw key (its noise is that of the
        generator ``dpfast.tables.keynoise.keyed_generator(key, release_id)``); None when
        ``rng`` was a generator.  Not secret.
    """

    def __init__(self, **kw: Unpack[TopDownFields]) -> None:
        self.estimates: list[np.ndarray] = kw["estimates"]
        self.noisy: list[np.ndarray | None] = kw["noisy"]
        self.consistent: list[np.ndarray] = kw["consistent"]
        self.variances: list[np.ndarray] = kw["variances"]
        self.sigma: list[float] = kw["sigma"]
        self.rho: list[float] = kw["rho"]
        self.event: _events.Composed = kw["event"]
        self.rho_total: float = kw["rho_total"]
        self.total_invariant: bool = kw["total_invariant"]
        self.nonnegative: bool = kw["nonnegative"]
        self.integer: bool = kw["integer"]
        self._mechs: list[_mechanisms.DiscreteGaussianMechanism | None] = kw["mechanisms"]
        self.release_id: int | None = kw.get("release_id")
        # who the guarantee is about: "record", or "person (privacy_ids; ...)"
        self.privacy_unit: str = kw.get("privacy_unit", "record")
        # per level, the L2 sensitivity the noise was calibrated for (1 per record)
        self.sensitivity: list[float] = kw.get("sensitivity", [1.0] * len(self.estimates))
        # per level, the exact squared L2 sensitivity (sensitivity[j] its float(sqrt)),
        # kept in the state; None where unknown (a state written before it was stored)
        self._l2sq: list[int] | None = kw.get("l2sq")
        self.estimator: str = kw.get("estimator", "topdown")
        # (an unrounded blue release) the hierarchy's parent arrays, level by level
        # (parents[0] None), for rounded(); public, kept in the state
        self._parents: list[np.ndarray | None] | None = None
        # and the upward pass's subtree variances (the rounding's weights; a rebuilt
        # release recomputes them from the parents and the variances, the same bits)
        self._subtree_var: list[np.ndarray] | None = None
        # the BLUE's half-widths per alpha (they depend on the variances and sigma only)
        self._halfwidths: dict[float, list[np.ndarray]] = {}

    def to_state(self) -> dict[str, object]:
        """The release as JSON-able data (no pickle); :meth:`from_state` rebuilds an
        equal release (bit for bit): the result cache of :class:`dpfast.Session`."""
        return {"version": _state.STATE_VERSION, "type": "TopDownRelease",
                "estimates": _arrays(self.estimates), "noisy": _arrays(self.noisy),
                "consistent": _arrays(self.consistent), "variances": _arrays(self.variances),
                "sigma": [_state.encode_scalar(float(s)) for s in self.sigma],
                "rho": [_state.encode_scalar(float(r)) for r in self.rho],
                "event": self.event.to_dict(), "rho_total": _state.encode_scalar(self.rho_total),
                "total_invariant": bool(self.total_invariant),
                "nonnegative": bool(self.nonnegative), "integer": bool(self.integer),
                "release_id": self.release_id,
                # each level mechanism's own rho (per person: rho_j / Δ_j², rounded down);
                # the mechanisms are rebuilt from them (DiscreteGaussianMechanism(rho=rho_j,
                # max_changed=1), as dpfast.tables.topdown makes them)
                "mech_rho": [None if m is None else _state.encode_scalar(float(cast(float, m.rho)))
                             for m in self._mechs],
                "privacy_unit": self.privacy_unit,
                "sensitivity": [_state.encode_scalar(float(x)) for x in self.sensitivity],
                # the exact integers the sensitivities are the roots of (a float's square
                # does not give them back above 2^52); older states: recovered on load
                **({} if self._l2sq is None else {"l2sq": [int(d) for d in self._l2sq]}),
                **({} if self.estimator == "topdown" else {"estimator": self.estimator}),
                **({} if self._parents is None else
                   {"parents": _arrays(self._parents[1:])})}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> TopDownRelease:
        """Rebuild a release from :meth:`to_state` (ValueError for anything else, naming
        the field: :func:`dpfast.tables._topdown_state.read_state` checks every field alone
        and against the others, e.g. the ``event`` against the ``sigma``)."""
        state = _state.check_header(state, "TopDownRelease")
        from ._topdown_state import read_state

        # every field checked, alone and against the others, before any kernel reads it
        # (ValueError naming the field)
        fields, parents = read_state(state)
        rel = cls(**fields)
        rel._parents = parents  # (an unrounded BLUE's hierarchy: rounded() works)
        return rel

    @property
    def n_levels(self) -> int:
        return len(self.estimates)

    def epsilon(self, delta: float, *, accounting: str = "zcdp") -> float:
        """The ``epsilon`` of an ``(epsilon, delta)``-DP guarantee of the release.

        Parameters
        ----------
        delta : float
            In ``(0, 1)``.
        accounting : {"zcdp", "pld", "rdp"}, default "zcdp"
            ``"zcdp"``: CKS20 Cor. 13 on :attr:`rho_total` (rounded up; as before the
            exact event).  ``"pld"``: :class:`~dpfast.accounting.PldAccountant` on
            :attr:`event`, the exact privacy-loss distribution of the levels' discrete
            Gaussians (an upper bound within about 5e-4 relative of the exact value; the
            smallest of the three, e.g. 6.551 instead of 6.84 for six levels at
            ``rho = 0.5``, ``delta = 1e-10``, exact 6.549).  ``"rdp"``:
            :class:`~dpfast.accounting.RdpAccountant` on :attr:`event`.

        Raises
        ------
        ValueError
            An unknown ``accounting``, or ``delta`` outside ``(0, 1)``; with ``"pld"``
            also a level whose noise is beyond the accountant's range
            (:class:`~dpfast.accounting.pld.UnsupportedEventError`: ``sigma_j`` above
            about 1e5).
        """
        if accounting == "zcdp":
            from dpfast.accounting.zcdp import zcdp_epsilon

            return zcdp_epsilon(self.rho_total, delta)
        if accounting == "pld":
            from dpfast.accounting import PldAccountant

            return PldAccountant().compose(self.event).get_epsilon(_delta(delta))
        if accounting == "rdp":
            from dpfast.accounting import RdpAccountant

            return RdpAccountant().compose(self.event).get_epsilon(_delta(delta))
        raise ValueError(f"accounting must be 'zcdp', 'pld' or 'rdp', got {accounting!r}")

    def noisy_confidence_interval(self, alpha: float) -> list[int]:
        """Per level, the exact half-width ``w_j`` with ``P(|noisy - true| <= w_j) >= 1 -
        alpha`` for every unit's raw measurement (0 for an unmeasured exact root)."""
        return [0 if m is None else m.confidence_interval(alpha) for m in self._mechs]

    @property
    def stderr(self) -> list[np.ndarray]:
        """Per level and unit, the standard error ``sqrt(variances)`` of :attr:`consistent`
        (exact for ``estimator="blue"``, an upper bound otherwise)."""
        return [np.sqrt(f) for f in self.variances]

    def confidence_halfwidth(self, alpha: float = 0.05) -> list[np.ndarray]:
        """Per level and unit, a half-width ``h`` with ``P(|consistent - true| <= h) >= 1 -
        alpha`` for the least-squares estimates :attr:`consistent`.

        ``estimator="topdown"``: rigorous, not exact: the estimate's error is a fixed
        linear combination ``sum_k a_k Z_k`` of independent discrete Gaussians, each
        ``sigma_k^2``-subgaussian (CKS20, Sec. 2), so it is subgaussian with variance proxy
        ``F = sum a_k^2 sigma_k^2`` (:attr:`variances`) and ``P(|error| > h) <= 2 exp(-h^2
        / (2F))``: ``h = sqrt(2 F ln(2/alpha))``, rounded up (conservative: about 99.3%
        coverage at a nominal 95%).

        ``estimator="blue"``: from the BLUE's exact variance ``F``: on a level with
        ``sigma_j >= 16``, normal, ``h = z_(1 - alpha/2) sqrt(F)``; below, the smallest
        ``h`` with ``P(|a Z + R| > h) <= alpha`` where ``a Z`` is the unit's own
        measurement's noise with its exact discrete law (``a = F / v_j``) and ``R ~ N(0, F
        - a^2 v_j)`` the rest (:func:`dpfast.tables._topdown_blue.lattice_halfwidth`; the
        rule reads the noise parameters only).  The coverage is ``1 - alpha`` up to that
        approximation of a sum of discrete Gaussians (measured 94-96% at 95% per level
        in the tests, fixed key, 60-250 repetitions, ``sigma_j`` from 0.5 up, fan-out 3
        to 25; the plain normal interval covered about 91% at ``sigma_j = 0.5``); not a
        guarantee.  Cached per ``alpha`` (they depend on ``F`` and ``sigma`` only).
        """
        a = float(_alpha(alpha))
        if self.estimator == "blue":
            if a not in self._halfwidths:
                from ._topdown_blue import halfwidths

                self._halfwidths[a] = halfwidths(self.variances, self.sigma, a)
            return [h.copy() for h in self._halfwidths[a]]
        c = 2.0 * math.log(2.0 / a) * (1.0 + 1e-12)
        return [np.sqrt(f * c) * (1.0 + 1e-12) for f in self.variances]

    def confidence_interval(self, alpha: float = 0.05) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per level, ``(low, high)`` arrays: each unit's true value lies in ``[low, high]``
        with probability ``>= 1 - alpha`` (over the noise, unit by unit).

        ``consistent -/+ h`` with :meth:`confidence_halfwidth` (rigorous for
        ``estimator="topdown"``, normal for ``"blue"``), widened to contain the released
        estimate and clipped at 0 from below when ``nonnegative`` (the truth is a count).
        The released estimates differ from :attr:`consistent` by the projection and
        rounding step only (each integer within 1 of its projected value).  For the
        unrounded BLUE the interval is exactly ``consistent ± h``; for a rounded BLUE
        (:meth:`rounded`) it contains that interval, so its coverage is at least the
        BLUE's (a bound: a conservative interval for the rounded values, which are
        biased, have no exact variance of their own).
        """
        out = []
        for j, h in enumerate(self.confidence_halfwidth(alpha)):
            c = self.consistent[j]
            hh = h if c.ndim == 1 else h[:, None]
            est = np.asarray(self.estimates[j], dtype=np.float64)
            low = np.minimum(c - hh, est)
            high = np.maximum(c + hh, est)
            if self.nonnegative:
                low = np.maximum(low, 0.0)
            out.append((low, high))
        return out

    def rounded(self, *, nonnegative: bool = True, integer: bool = True) -> TopDownRelease:
        """The BLUE made non-negative and integral top down: a separate post-processing
        step (no new noise, no new charge) of an ``estimator="blue"`` release.

        The roots are rounded, then each parent's children projected onto ``{c >= 0, sum
        c = parent}`` (weighted by their subtree variances) and rounded by largest
        remainders, as the default ``topdown`` (the same kernels), but from the BLUE: where
        the exact variances are proportional to ``sigma_j^2`` (every ``sigma_j`` equal, or
        all above about 2) the result is the default release bit for bit.
        Works on a release rebuilt by :meth:`from_state` (the session's result cache): the
        state holds the hierarchy's parent arrays (public), and the rounding's weights are
        rebuilt from them and the noise's variances, the same bits.  The returned release's
        :attr:`estimates` are the rounded tables; :attr:`consistent`, :attr:`variances`
        and :attr:`stderr` stay the BLUE's, and :meth:`confidence_interval` is the BLUE's
        normal interval widened to contain each rounded value and clipped at 0: an
        interval *around* the rounded value whose coverage is at least the BLUE's (the
        rounded values are biased and have no exact variance of their own).

        Raises
        ------
        ValueError
            Not an ``estimator="blue"`` release, already rounded, or rebuilt from a state
            written before the state held the hierarchy.
        TypeError
            ``nonnegative`` or ``integer`` not a bool.
        """
        for name, flag in (("nonnegative", nonnegative), ("integer", integer)):
            if not isinstance(flag, bool | np.bool_):
                raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
        if self.estimator != "blue" or self._parents is None:
            raise ValueError("rounded() needs an unrounded estimator='blue' release (as "
                             "returned by topdown, or rebuilt from its state), not a "
                             "rounded one")
        if not nonnegative and not integer:
            est = self.consistent
        else:
            est = self._round(bool(nonnegative), bool(integer))
        out = TopDownRelease(
            estimates=est, noisy=self.noisy, consistent=self.consistent,
            variances=self.variances, sigma=self.sigma, rho=self.rho, event=self.event,
            rho_total=self.rho_total, total_invariant=self.total_invariant,
            nonnegative=bool(nonnegative), integer=bool(integer), mechanisms=self._mechs,
            release_id=self.release_id, privacy_unit=self.privacy_unit,
            sensitivity=self.sensitivity, estimator="blue")
        out._l2sq = self._l2sq
        out._halfwidths = self._halfwidths  # the same variances: the same half-widths
        return out

    def _round(self, nonnegative: bool, integer: bool) -> list[np.ndarray]:
        """:func:`dpfast.tables._topdown_round.round_tree` on the BLUE: the weights rebuilt
        from the hierarchy and the noise's exact variances (public), the root exact with an
        invariant total (the BLUE's root is then the exact total)."""
        from ._topdown_blue import estimator_weights
        from ._topdown_round import round_tree, subtree_variances

        assert self._parents is not None
        sizes = [int(x.shape[0]) for x in self.consistent]
        one_d = self.consistent[0].ndim == 1
        x = [c.reshape(-1, 1) if one_d else c for c in self.consistent]
        var, _ = estimator_weights(self.sigma, "blue")  # as topdown weighted
        V = self._subtree_var
        if V is None:
            V = subtree_variances(self._parents, sizes, var)
        root = x[0] if self.total_invariant else None
        est = round_tree(sizes, self._parents, x, V, var, root, nonnegative, integer)
        return [e[:, 0] for e in est] if one_d else est

    def accuracy(self, truth: Sequence[npt.ArrayLike] | None = None, *, alpha: float = 0.05,
                 floor: float = 1.0) -> list[AccuracySummary]:
        """Per level, the accuracy summary of the released estimates
        (:class:`dpfast.tables.AccuracySummary`, as for :func:`dpfast.tables.count`).

        From the noise law alone: ``expected_rmse`` is the least-squares estimates' RMSE
        bound ``sqrt(mean F)`` (:attr:`variances`) and ``expected_mae`` the same bound
        (``MAE <= RMSE``); ``ci_halfwidth`` is the mean half-width of
        :meth:`confidence_interval`.  With ``truth`` (one true table per level, e.g.
        :func:`aggregate_levels`; for evaluation only) the measured errors of
        :attr:`estimates` and the intervals' coverage.  :meth:`report` compares the raw,
        least-squares and released errors level by level.
        """
        if truth is not None and len(truth) != self.n_levels:
            raise ValueError(f"truth must hold one table per level ({self.n_levels})")
        out = []
        for j, (low, high) in enumerate(self.confidence_interval(alpha)):
            bound = float(np.sqrt(np.mean(self.variances[j])))
            hw = float(np.mean((high - low) / 2))
            if truth is None:
                out.append(AccuracySummary(int(self.estimates[j].shape[0]), float(alpha),
                                           bound, bound, hw))
                continue
            t = self._truth(truth, j)
            est = np.asarray(self.estimates[j], dtype=np.float64)
            out.append(AccuracySummary(
                int(est.shape[0]), float(alpha), bound, bound, hw,
                mae=_metrics.mae(est, t), rmse=_metrics.rmse(est, t),
                relative_error=_metrics.relative_error(est, t, floor=floor),
                coverage=_metrics.ci_coverage(low, high, t),
                utility_ratio=_metrics.utility_ratio(est, t)))
        return out

    def _truth(self, truth: Sequence[npt.ArrayLike], j: int) -> np.ndarray:
        t = np.asarray(truth[j], dtype=np.float64)
        if t.shape != self.estimates[j].shape:
            raise ValueError(f"truth[{j}] must have shape {self.estimates[j].shape}, "
                             f"got {t.shape}")
        return t

    def report(self, alpha: float = 0.05,
               truth: Sequence[npt.ArrayLike] | None = None) -> list[dict[str, float]]:
        """One row per level comparing the raw measurements, the least-squares estimates
        and the released ones.

        From the noise law alone (no true data): ``sigma``, the raw measurements' exact
        ``(1 - alpha)`` half-width, the least-squares estimates' RMSE bound
        ``sqrt(mean F)`` and their mean ``(1 - alpha)`` half-width.  With ``truth``: the
        measured RMSE and mean absolute error of all three.
        """
        noisy_w = self.noisy_confidence_interval(alpha)
        ci = self.confidence_halfwidth(alpha)
        rows: list[dict[str, float]] = []
        if truth is not None and len(truth) != self.n_levels:
            raise ValueError(f"truth must hold one table per level ({self.n_levels})")
        for j in range(self.n_levels):
            row: dict[str, float] = {
                "level": j,
                "units": int(self.estimates[j].shape[0]),
                "rho": self.rho[j],
                "sigma": self.sigma[j],
                "noisy_halfwidth": noisy_w[j],
                "consistent_rmse_bound": float(np.sqrt(np.mean(self.variances[j]))),
                "consistent_halfwidth": float(np.mean(ci[j])),
            }
            if truth is not None:
                t = self._truth(truth, j)
                for name, arr in (("noisy", self.noisy[j]), ("consistent", self.consistent[j]),
                                  ("released", self.estimates[j])):
                    if arr is None:
                        row[f"{name}_rmse"] = row[f"{name}_mae"] = 0.0
                        continue
                    a = np.asarray(arr, dtype=np.float64)
                    row[f"{name}_rmse"] = _metrics.rmse(a, t)
                    row[f"{name}_mae"] = _metrics.mae(a, t)
            rows.append(row)
        return rows

    def to_columns(self, level: int, alpha: float = 0.05) -> dict[str, np.ndarray]:
        """Level ``level`` as columns: ``unit`` (the id), ``released`` (the published,
        consistent estimate), ``measured`` (the raw noisy measurement, for audit; the
        released one where the level was not measured), ``ci_low``, ``ci_high`` (the
        released value's interval); one suffix ``_<c>`` per cell for 2-D tables."""
        if isinstance(level, bool) or not isinstance(level, numbers.Integral) or \
                not 0 <= int(level) < self.n_levels:
            raise ValueError(f"level must be an integer in [0, {self.n_levels}), got {level!r}")
        j = int(level)
        est = self.estimates[j]
        low, high = self.confidence_interval(alpha)[j]
        noisy = self.noisy[j]
        cols: dict[str, np.ndarray] = {"unit": np.arange(est.shape[0])}
        if est.ndim == 1:
            cols["released"] = est
            cols["measured"] = noisy if noisy is not None else np.asarray(est, np.float64)
            cols["ci_low"], cols["ci_high"] = low, high
            return cols
        for c in range(est.shape[1]):
            cols[f"released_{c}"] = est[:, c]
            cols[f"measured_{c}"] = noisy[:, c] if noisy is not None else est[:, c]
            cols[f"ci_low_{c}"], cols[f"ci_high_{c}"] = low[:, c], high[:, c]
        return cols

    def to_pandas(self, level: int, alpha: float = 0.05) -> pd.DataFrame:
        """:meth:`to_columns` as a pandas DataFrame indexed by ``unit`` (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - pandas is in the test extra
            raise ImportError("to_pandas needs pandas: pip install 'dpfast[pandas]'") from exc
        return pd.DataFrame(self.to_columns(level, alpha)).set_index("unit")

    def summary(self, alpha: float = 0.05, truth: Sequence[npt.ArrayLike] | None = None
                ) -> str:
        """The privacy spent and :meth:`accuracy` as printable text."""
        from dpfast._core.errors import UnsupportedEventError

        try:
            pld = f"; {self.epsilon(1e-10, accounting='pld'):.4g} by PLD"
        except UnsupportedEventError:  # a level's noise beyond the PLD accountant's range
            pld = ""
        lines = [f"TopDown release: {self.n_levels} levels, rho = {self.rho_total:.6g} zCDP "
                 f"(epsilon = {self.epsilon(1e-10):.4g} at delta = 1e-10{pld})",
                 f"guarantee per {self.privacy_unit} (add/remove one); level L2 "
                 f"sensitivities {', '.join(f'{s:.4g}' for s in self.sensitivity)}"]
        if self.total_invariant:
            lines.append("level 0 released exactly (invariant: not differentially private)")
        for r in self.report(alpha, truth):
            s = (f"level {r['level']}: {r['units']} units, rho {r['rho']:.4g}, sigma "
                 f"{r['sigma']:.4g}, raw +-{r['noisy_halfwidth']} ({1 - alpha:.0%}), "
                 + (f"BLUE RMSE = {r['consistent_rmse_bound']:.4g}" if self.estimator == "blue"
                    else f"consistent RMSE <= {r['consistent_rmse_bound']:.4g}"))
            if truth is not None:
                s += (f"; measured RMSE raw {r['noisy_rmse']:.4g}, consistent "
                      f"{r['consistent_rmse']:.4g}, released {r['released_rmse']:.4g}")
            lines.append(s)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """Jupyter's view: :meth:`summary`."""
        from dpfast.tables import _plot

        return _plot.topdown_html(self)

    def plot(self, alpha: float = 0.05, *, truth: Sequence[npt.ArrayLike] | None = None,
             ax: Axes | None = None) -> Axes:
        """Plot the error by level: the raw measurements' ``1 - alpha`` half-width and the
        released estimates' RMSE bound (from the noise law), and with ``truth`` (one true
        table per level; evaluation only, it is sensitive) the measured RMSE; returns
        the matplotlib Axes.  Needs matplotlib (``pip install 'dpfast[plot]'``)."""
        from dpfast.tables import _plot

        return _plot.plot_topdown(self, alpha=alpha, truth=truth, ax=ax)

    def __repr__(self) -> str:
        sizes = ", ".join(str(e.shape[0]) for e in self.estimates)
        return f"TopDownRelease(units=[{sizes}], rho={self.rho_total!r})"


def _arrays(xs: Sequence[np.ndarray | None]) -> list[dict[str, object] | None]:
    return [None if x is None else _state.encode_array(x) for x in xs]
