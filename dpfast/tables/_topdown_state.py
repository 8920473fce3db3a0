"""The reading of a :class:`~dpfast.tables.TopDownRelease` state
(:meth:`~dpfast.tables.TopDownRelease.from_state`, :func:`read_state`): every field a user
or the session's result cache hands in is checked here, before any kernel (the rounding of
:meth:`~dpfast.tables.TopDownRelease.rounded`, the lattice half-widths of
:meth:`~dpfast.tables.TopDownRelease.confidence_halfwidth`) reads it.  Those numba kernels
do no bounds checks: a level with more columns than its parents, a non-finite value, or a
value beyond int64 after rounding would read out of bounds, return garbage or never end.

The fields are also checked against each other (:func:`check_relations`), wherever one is a
function of others: the privacy ``event`` and ``rho_total`` are what the per-level ``sigma``
and sensitivities imply (:func:`dpfast.tables._topdown_events.release_event`, the same
rounding; the squared sensitivities are the state's exact ``l2sq``, whose roots the stated
``sensitivity`` must be, or for an older state without it those recovered by
:func:`dpfast.tables._topdown_l2sq.recover_l2sq`), each level's mechanism is the one its
``rho`` and sensitivity make, the measured levels are the ones the invariant leaves, the
variances lie below the noise's, the estimates are the consistent ones where nothing
post-processed them (non-negative where stated, and with integer estimates every level sums to
the same total), and a state with the hierarchy (an unrounded BLUE) holds the least squares
of its own noisy measurements. A state whose published standard errors and intervals (from
``sigma`` and the variances) disagree with the accounting record (``event``) is refused, as
is any other such mismatch.
"""

from __future__ import annotations

import binascii
import math
import numbers
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from dpfast import mechanisms as _mechanisms
from dpfast._core.rounding import float_down
from dpfast.accounting import events as _events
from dpfast.tables import state as _state

from . import _topdown_blue as _blue
from . import _topdown_events as _tevents
from . import _topdown_round as _round
from . import _wls
from ._topdown_l2sq import check_l2sq, l2sq_of

if TYPE_CHECKING:
    from ._topdown_release import TopDownFields

__all__ = ["LevelArrays", "check_levels", "check_flag", "check_scalars", "decode_field",
           "check_relations", "read_state", "MAX_EXACT", "RTOL"]

#: values that :meth:`~dpfast.tables.TopDownRelease.rounded` casts to int64 must lie below
#: this in magnitude (every integer up to it is a float64, and the rounding's sums stay
#: far from int64's range)
MAX_EXACT = 2.0 ** 53

#: the relative tolerance of the checks that recompute floats another way (the variances'
#: bound, the least squares of a state with its hierarchy): float rounding of the two
#: passes is ~1e-15 relative, a tampered value is off by far more
RTOL = 1e-9


def decode_field(d: object, name: str) -> np.ndarray:
    """One array of the state (ValueError naming ``name`` when it is not an encoded
    array)."""
    if not isinstance(d, dict):
        raise ValueError(f"state's {name} must be an encoded array")
    try:
        return _state.decode_array(d)
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise ValueError(f"state's {name} is not a valid encoded array") from exc


def _list(state: dict[str, Any], name: str, n: int | None = None) -> list[Any]:
    x = state.get(name)
    if not isinstance(x, list):
        raise ValueError(f"state's {name} must be a list")
    if n is not None and len(x) != n:
        raise ValueError(f"state's {name} must hold one entry per level ({n}), got {len(x)}")
    return x


def _finite(a: np.ndarray, name: str) -> None:
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise ValueError(f"state's {name} must be finite")


class LevelArrays:
    """The per-level arrays of a state, checked: ``consistent`` and ``variances`` float64,
    ``estimates`` int64 (``integer``) or float64, ``noisy`` int64 or None; every level of
    one ndim (1 or 2) and one column count; ``estimates[j]`` and ``noisy[j]`` of
    ``consistent[j]``'s shape, ``variances[j]`` of shape ``(n_j,)``; all finite,
    variances ``>= 0``.  ``sizes``: the level sizes ``n_j``."""

    def __init__(self, state: dict[str, Any], integer: bool) -> None:
        raw = _list(state, "consistent")
        if not raw:
            raise ValueError("state's consistent must hold at least one level")
        L = len(raw)
        self.consistent = [decode_field(d, f"consistent[{j}]") for j, d in enumerate(raw)]
        first = self.consistent[0]
        if first.ndim not in (1, 2):
            raise ValueError("state's consistent[0] must be 1-D or 2-D")
        for j, c in enumerate(self.consistent):
            name = f"consistent[{j}]"
            if c.dtype != np.float64:
                raise ValueError(f"state's {name} must be float64, got {c.dtype}")
            if c.ndim != first.ndim or c.shape[1:] != first.shape[1:]:
                raise ValueError(f"state's {name} must have consistent[0]'s ndim and "
                                 f"columns {first.shape[1:]}, got shape {c.shape}")
            _finite(c, name)
        self.sizes = [int(c.shape[0]) for c in self.consistent]
        est_dtype = np.dtype(np.int64) if integer else np.dtype(np.float64)
        self.estimates = []
        for j, d in enumerate(_list(state, "estimates", L)):
            e = decode_field(d, f"estimates[{j}]")
            self._like(e, j, f"estimates[{j}]", est_dtype)
            self.estimates.append(e)
        self.noisy: list[np.ndarray | None] = []
        for j, d in enumerate(_list(state, "noisy", L)):
            if d is None:
                self.noisy.append(None)
                continue
            n = decode_field(d, f"noisy[{j}]")
            self._like(n, j, f"noisy[{j}]", np.dtype(np.int64))
            self.noisy.append(n)
        self.variances = []
        for j, d in enumerate(_list(state, "variances", L)):
            name = f"variances[{j}]"
            v = decode_field(d, name)
            if v.dtype != np.float64 or v.shape != (self.sizes[j],):
                raise ValueError(f"state's {name} must be float64 of shape ({self.sizes[j]},) "
                                 f"(one per unit of consistent[{j}]), got {v.dtype} "
                                 f"{v.shape}")
            _finite(v, name)
            if (v < 0).any():
                raise ValueError(f"state's {name} must be >= 0")
            self.variances.append(v)

    def _like(self, a: np.ndarray, j: int, name: str, dtype: np.dtype[Any]) -> None:
        if a.dtype != dtype or a.shape != self.consistent[j].shape:
            raise ValueError(f"state's {name} must be {dtype} of consistent[{j}]'s shape "
                             f"{self.consistent[j].shape}, got {a.dtype} {a.shape}")
        _finite(a, name)

    def check_roundable(self) -> None:
        """The values :meth:`~dpfast.tables.TopDownRelease.rounded` casts to int64 (the
        BLUE, :attr:`consistent`) of magnitude below ``2^53`` (ValueError otherwise)."""
        for j, c in enumerate(self.consistent):
            if c.size and float(np.abs(c).max()) >= MAX_EXACT:
                raise ValueError(f"state's consistent[{j}] must be below 2^53 in magnitude "
                                 "(rounded() casts it to integers)")


def check_levels(state: dict[str, Any], integer: bool) -> LevelArrays:
    """:class:`LevelArrays` of ``state`` (ValueError naming the field)."""
    return LevelArrays(state, integer)


def check_scalars(values: object, name: str, n: int, *, allow_none: bool = False
                  ) -> list[Any]:
    """``values`` decoded: one finite number ``>= 0`` per level (``n``), or None where
    ``allow_none`` (ValueError naming ``name`` otherwise)."""
    if not isinstance(values, list) or len(values) != n:
        got = len(values) if isinstance(values, list) else type(values).__name__
        raise ValueError(f"state's {name} must hold one entry per level ({n}), got {got}")
    out: list[Any] = []
    for j, x in enumerate(values):
        if x is None and allow_none:
            out.append(None)
            continue
        try:
            v = _state.decode_scalar(x)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"state's {name}[{j}] is not a number") from exc
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or \
                not (math.isfinite(float(v)) and float(v) >= 0):
            raise ValueError(f"state's {name}[{j}] must be a finite number >= 0, got {v!r}")
        out.append(float(v))
    return out


def check_flag(state: dict[str, Any], name: str) -> bool:
    """``state[name]``, a bool (ValueError otherwise)."""
    v = state.get(name)
    if not isinstance(v, bool):
        raise ValueError(f"state's {name} must be a bool, got {v!r}")
    return v


def read_state(state: dict[str, Any]
               ) -> tuple[TopDownFields, list[np.ndarray | None] | None]:
    """The fields of a release (:class:`~dpfast.tables._topdown_release.TopDownFields`) and
    its hierarchy's parent arrays (``parents[0]`` None; None when the state holds none),
    from a state of :meth:`~dpfast.tables.TopDownRelease.to_state` whose header is checked:
    every field alone, then the fields against each other (ValueError naming the field)."""
    integer = check_flag(state, "integer")
    lv = check_levels(state, integer)
    L = len(lv.sizes)
    rho = check_scalars(state.get("rho"), "rho", L)
    mech_rho = check_scalars(
        state.get("mech_rho", [None if r == 0.0 else _state.encode_scalar(r)
                               for r in rho]), "mech_rho", L, allow_none=True)
    sigma = check_scalars(state.get("sigma"), "sigma", L)
    sensitivity = check_scalars(state.get("sensitivity", [1.0] * L), "sensitivity", L)
    mechs = []
    for j, r in enumerate(mech_rho):
        if r is not None and r <= 0.0:
            raise ValueError(f"state's mech_rho[{j}] must be > 0 or None")
        mechs.append(None if r is None
                     else _mechanisms.DiscreteGaussianMechanism(rho=r, max_changed=1))
    for j, (m, s, n) in enumerate(zip(mechs, sigma, lv.noisy)):
        if m is None:
            if s != 0.0 or n is not None:
                raise ValueError(f"state's level {j} is unmeasured: its sigma must be 0 "
                                 "and its noisy None")
        elif float(m.sigma) != s:
            raise ValueError(f"state's sigma[{j}] does not match its rho (not the sigma of "
                             f"mech_rho[{j}]'s mechanism)")
        elif n is None:
            raise ValueError(f"state's noisy[{j}] is missing for a measured level")
    rid = state.get("release_id")
    if rid is not None and (isinstance(rid, bool) or not isinstance(rid, int)):
        raise ValueError(f"state's release_id must be an int or None, got {rid!r}")
    unit = state.get("privacy_unit", "record")
    if not isinstance(unit, str):
        raise ValueError("state's privacy_unit must be a str")
    estimator = state.get("estimator", "topdown")
    if estimator not in _blue.ESTIMATORS:
        raise ValueError(f"state's estimator must be 'topdown' or 'blue', got {estimator!r}")
    try:
        event = _events.from_dict(state["event"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError("state's event is not a valid event") from exc
    fields: TopDownFields = {
        "estimates": lv.estimates, "noisy": lv.noisy, "consistent": lv.consistent,
        "variances": lv.variances, "sigma": sigma, "rho": rho,
        "event": event,  # type: ignore[typeddict-item]  # (a legacy Zcdp: see below)
        "rho_total": check_scalars([state.get("rho_total")], "rho_total", 1)[0],
        "total_invariant": check_flag(state, "total_invariant"),
        "nonnegative": check_flag(state, "nonnegative"), "integer": integer,
        "mechanisms": mechs, "release_id": rid, "privacy_unit": unit,
        "sensitivity": sensitivity, "estimator": str(estimator)}
    if "l2sq" in state:  # (written since the field exists; older states: recovered)
        fields["l2sq"] = check_l2sq(state["l2sq"], L)
    parents: list[np.ndarray | None] | None = None
    if "parents" in state:  # an unrounded BLUE: rounded() works on the rebuilt release
        if estimator != "blue" or fields["nonnegative"] or integer:
            raise ValueError("state's parents belong to an unrounded estimator='blue' "
                             "release")
        raw = state["parents"]
        if not isinstance(raw, list):
            raise ValueError("state's parents must be a list")
        lv.check_roundable()  # rounded() casts the BLUE to int64
        arrays = [decode_field(p, f"parents[{j}]") for j, p in enumerate(raw, 1)]
        parents = [None, *_round.check_parents(arrays, lv.sizes)]
    check_relations(fields, mech_rho, parents)
    return fields, parents


def check_relations(f: TopDownFields, mech_rho: list[float | None],
                    parents: list[np.ndarray | None] | None) -> None:
    """The fields of a state against each other (ValueError naming the field that
    disagrees): what the module's docstring lists, each with the release's own rule."""
    sigma, rho, L = f["sigma"], f["rho"], len(f["sigma"])
    l2sq = l2sq_of(f, mech_rho)
    if f.get("privacy_unit", "record") == "record" and any(d != 1 for d in l2sq):
        raise ValueError("state's sensitivity must be 1 at every level for privacy_unit "
                         "'record'")
    for j in range(L):
        unmeasured = f["total_invariant"] and j == 0  # the only level that may be
        if (mech_rho[j] is None) != unmeasured or (rho[j] == 0.0) != unmeasured:
            raise ValueError(f"state's rho[{j}] must be {'0' if unmeasured else '> 0'} "
                             f"(total_invariant={f['total_invariant']}): only an invariant "
                             "root is unmeasured")
        if not unmeasured and mech_rho[j] != float_down(Fraction(rho[j]) / l2sq[j]):
            raise ValueError(f"state's mech_rho[{j}] is not rho[{j}] / sensitivity[{j}]^2 "
                             "(rounded down), the level's mechanism")
    # the accounting record against the noise: the same function, the same rounding
    event, rho_total = _tevents.release_event(sigma, l2sq)
    if f["rho_total"] != rho_total:
        raise ValueError(f"state's rho_total ({f['rho_total']!r}) is not the one its sigma "
                         f"implies ({rho_total!r})")
    legacy = isinstance(f["event"], _events.Zcdp) and f["event"].rho == rho_total
    if f["event"] != event and not legacy:  # (legacy: the former single Zcdp(rho_total))
        raise ValueError("state's event does not match its sigma (the noise of its "
                         "levels, from which its standard errors and intervals are "
                         "computed)")
    _check_estimates(f)
    blue = f.get("estimator", "topdown") == "blue"
    for j, (v, s) in enumerate(zip(f["variances"], sigma)):
        if s == 0.0:
            if v.any():
                raise ValueError(f"state's variances[{j}] must be 0 (an exact invariant "
                                 "level)")
            continue
        # the least squares is at least as good as the level's own measurement
        bound = (_blue.level_variance(s) if blue else s * s) * (1.0 + RTOL)
        if v.size and float(v.max()) > bound:
            raise ValueError(f"state's variances[{j}] exceed level {j}'s noise variance "
                             f"(sigma[{j}]^2 = {s * s!r})")
    if parents is not None:
        _check_least_squares(f, parents)


def _check_estimates(f: TopDownFields) -> None:
    """The released estimates against the consistent ones and each other."""
    est, con = f["estimates"], f["consistent"]
    if f["total_invariant"]:
        c0 = con[0]
        if not (np.array_equal(c0, np.rint(c0)) and np.array_equal(est[0], c0)):
            raise ValueError("state's estimates[0] and consistent[0] must be the exact "
                             "(integer) totals of an invariant root")
    if not f["nonnegative"] and not f["integer"]:  # nothing post-processed them
        for j, (e, c) in enumerate(zip(est, con)):
            if e.tobytes() != c.tobytes():
                raise ValueError(f"state's estimates[{j}] must equal consistent[{j}] "
                                 "(neither nonnegative nor integer)")
        return
    if f["nonnegative"]:
        for j, e in enumerate(est):
            if e.size and e.min() < 0:
                raise ValueError(f"state's estimates[{j}] must be >= 0 (nonnegative)")
    if f["integer"]:  # every parent the exact sum of its children: equal level totals
        totals = [_column_totals(e) for e in est]
        for j, t in enumerate(totals[1:], 1):
            if t != totals[0]:
                raise ValueError(f"state's estimates[{j}] must sum to the totals of "
                                 "estimates[0] (each parent the sum of its children)")


def _column_totals(e: np.ndarray) -> list[int]:
    """Per column, the exact sum of an int64 level (Python ints: no overflow)."""
    e2 = e.reshape(e.shape[0], -1)
    if e2.shape[0] == 0:
        return [0] * e2.shape[1]
    big = int(np.abs(e2).max()) if e2.size else 0
    if big * e2.shape[0] < 2 ** 62:  # the int64 sum is exact
        return [int(x) for x in e2.sum(axis=0)]
    return [sum(int(v) for v in e2[:, c].tolist()) for c in range(e2.shape[1])]


def _check_least_squares(f: TopDownFields, parents: list[np.ndarray | None]) -> None:
    """A state with its hierarchy (an unrounded BLUE): ``consistent`` and ``variances``
    are the least squares of its ``noisy`` measurements with its ``sigma``'s weights
    (recomputed with :func:`dpfast.tables._wls.least_squares`, to :data:`RTOL`)."""
    con = f["consistent"]
    sizes = [int(c.shape[0]) for c in con]
    one_d = con[0].ndim == 1
    tree = _wls.Tree(ids=[], sizes=sizes, parent=parents)
    noisy = [None if n is None else
             np.ascontiguousarray(n.reshape(-1, 1) if one_d else n, np.int64)
             for n in f["noisy"]]
    root = (con[0].reshape(-1, 1) if one_d else con[0]) if f["total_invariant"] else None
    var, scale = _blue.estimator_weights(f["sigma"], f.get("estimator", "topdown"))
    x, F, _ = _wls.least_squares(tree, noisy, var, root)
    for j in range(len(sizes)):
        xj = x[j][:, 0] if one_d else x[j]
        tol = RTOL * max(1.0, float(np.abs(xj).max(initial=0.0)))
        if not np.allclose(con[j], xj, rtol=RTOL, atol=tol):
            raise ValueError(f"state's consistent[{j}] is not the least squares of its "
                             "noisy measurements")
        if not np.allclose(f["variances"][j], F[j] * scale, rtol=RTOL, atol=0.0):
            raise ValueError(f"state's variances[{j}] are not the least squares' error "
                             "variances for its sigma")
