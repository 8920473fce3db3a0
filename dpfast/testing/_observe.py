"""What an analyst observes of one run of a release: its shape and its published cells.

:func:`observe` turns whatever a release returned (a :class:`~dpfast.tables.TableRelease`,
an aggregate, a quantile or TopDown release, a session's SQL answer, a histogram's arrays,
local-DP reports, an exception, nested in tuples, lists and dicts) into an
:class:`Observation`: a hashable *shape* (the types, names, public parameters and events:
everything but the published keys and values) and a list of :class:`Cells` tables (the
published keys and values, with the sensitivity that the release states for them).  The
neighbour audit (:func:`dpfast.testing.audit`) compares two observations.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

__all__ = ["Cells", "Chosen", "Observation", "Raised", "observe"]



def _additive(statistic: object) -> bool:
    """Whether a statistic's published values are the true aggregate plus additive noise:
    its registry class says so (``law_interval``: each value plus or minus its noise law's
    half-width), so a new statistic is audited as such with no edit here."""
    from dpfast.tables.statistics import REGISTRY

    cls = REGISTRY.get(statistic) if isinstance(statistic, str) else None
    return cls is not None and cls.law_interval


_GRID_LAWS = ("laplace", "gaussian")  # float laws: the value is rounded to the grid first


@dataclasses.dataclass(frozen=True)
class Raised:
    """A run that ended in an exception: its type and message (all an analyst sees)."""

    type: str
    message: str

    @classmethod
    def of(cls, exc: BaseException) -> Raised:
        return cls(f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc))


@dataclasses.dataclass(frozen=True)
class Cells:
    """One published table of a release.

    Attributes
    ----------
    name : str
        Where the table sits in the result (``""``, ``"metrics.count"``, ``"[2]"``...).
    cells : dict
        Published key -> value (a float; a tuple of floats for several quantiles).
    additive : bool
        Whether each value is the true aggregate plus noise addressed by its key, so that
        with the same generator key a neighbour moves it by at most ``linf``.
    linf, l1, l2 : float or None
        The stated sensitivity: the most one person moves one cell, all cells together
        (L1), and their Euclidean norm (L2).  None where not stated.
    tolerance : float
        The rounding of the output grid per cell (float laws: the granularity ``g``; the
        value is rounded to the grid before the noise, which adds at most ``g``).
    selected : bool
        Whether the keys are chosen privately (otherwise they are public and must be equal
        on neighbours).
    delta : float
        The release's δ (what key selection may spend on publishing a person's own key).
    censored : float
        Post-processing that publishes a noisy cell below this public threshold as 0 (a
        DP summary's empty buckets): a cell published on both sides moves by at most
        ``linf``; published as 0 on one side and as ``v`` on the other, its noisy value
        was below ``censored`` there, so ``v`` must be below ``censored + linf`` (it then
        counts ``max(0, v - censored)`` towards the L1 and L2 movements).  0: none.
    """

    name: str
    cells: dict[Any, Any]
    additive: bool = False
    linf: float | None = None
    l1: float | None = None
    l2: float | None = None
    tolerance: float = 0.0
    selected: bool = False
    delta: float = 0.0
    censored: float = 0.0


@dataclasses.dataclass(frozen=True)
class Chosen:
    """A choice the release makes from its own DP output (post-processing), which the rest
    of the release depends on: the bounds that ``aggregate(max_partitions="auto")``'s
    tuning recommends, the value bounds a tuning chooses privately.  Adaptive composition
    allows it to differ on D and D' (the noise of the DP summary does not hide the person
    from a replay with the same key); the audit then compares the tables published before
    it and stops there (:attr:`dpfast.testing.AuditReport.branched`): what follows is a
    release with other public parameters, audited where the choice agrees.

    ``tables_before``: how many tables of the observation precede the choice (set by
    :func:`observe`)."""

    name: str
    value: Any
    tables_before: int = 0


@dataclasses.dataclass(frozen=True)
class Observation:
    """The shape (hashable, compared for equality) and the published tables of a run."""

    shape: tuple[Any, ...]
    tables: tuple[Cells, ...]

    @property
    def raised(self) -> Raised | None:
        return self.shape[0] if self.shape and isinstance(self.shape[0], Raised) else None


def observe(result: Any, sensitivity: Any = None) -> Observation:
    """The :class:`Observation` of ``result`` (an exception is observed as :class:`Raised`;
    a :class:`Cells` is taken as the table it describes, for results of your own types).

    ``sensitivity`` states the sensitivity of cells the result does not state itself
    (plain arrays and scalars): a number (the per-cell L∞ bound) or a dict with keys
    among ``"linf"``, ``"l1"``, ``"l2"``.  A dict also overrides what a release states.
    """
    shape: list[Any] = []
    tables: list[Cells] = []
    _walk(result, "", shape, tables, _stated(sensitivity))
    return Observation(tuple(shape), tuple(tables))


def _stated(sensitivity: Any) -> dict[str, float] | None:
    if sensitivity is None:
        return None
    if isinstance(sensitivity, dict):
        unknown = set(sensitivity) - {"linf", "l1", "l2"}
        if unknown:
            raise ValueError(f"sensitivity: unknown keys {sorted(unknown)}; use linf, l1, l2")
        return {k: float(v) for k, v in sensitivity.items()}
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, (int, float)):
        raise TypeError("sensitivity must be a number or a dict of linf/l1/l2")
    if not sensitivity >= 0:
        raise ValueError(f"sensitivity must be >= 0, got {sensitivity!r}")
    return {"linf": float(sensitivity)}


def _scalar(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (list, tuple, np.ndarray)):
        return tuple(_scalar(x) for x in np.asarray(v, dtype=object).ravel().tolist())
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return v


def _keys_of(keys: Any) -> list[Any]:
    if isinstance(keys, tuple):
        return [tuple(_scalar(x) for x in row) for row in zip(*(k.tolist() for k in keys))]
    return [_scalar(k) for k in np.asarray(keys).tolist()]


def _event_delta(event: Any, selection: Any = None) -> float:
    """The δ that key selection may spend: the selection's own, else the event's."""
    d = getattr(selection, "delta", None)
    if d is None:
        d = getattr(event, "delta", None)
    return float(d) if isinstance(d, (int, float)) else 0.0


def _table_release(rel: Any, name: str, shape: list[Any], tables: list[Cells],
                   stated: dict[str, float] | None) -> None:
    shape.append((name, "TableRelease", rel.statistic, repr(rel.event), repr(rel.law),
                  tuple(sorted(rel.sensitivity.items())), rel.threshold))
    sens = dict(rel.sensitivity)
    l1, l2 = float(sens.get("l1", math.inf)), float(sens.get("l2", math.inf))
    linf = min(l1, l2)
    if stated:
        linf, l1, l2 = stated.get("linf", linf), stated.get("l1", l1), stated.get("l2", l2)
    keys = _keys_of(rel.keys)
    selected, delta = rel.selection is not None, _event_delta(rel.event, rel.selection)
    tables.append(Cells(name, dict(zip(keys, map(_scalar, rel.values))),
                        additive=_additive(rel.statistic), linf=linf, l1=l1, l2=l2,
                        tolerance=_grid(rel.law), selected=selected, delta=delta))
    parts = getattr(rel, "_mean_parts", None)
    if parts is not None and not stated:
        # a mean is post-processing of two additive parts, each noised by key: the sum of
        # (2 v - lo - hi) (the release's stated sensitivity) and the count (c per key)
        s, n, law_s, law_n = parts[:4]
        k, c = float(sens.get("max_partitions", 1)), float(sens.get("max_per_partition", 1))
        tables.append(Cells(f"{name}.parts.sum", dict(zip(keys, map(_scalar, s))),
                            additive=True, linf=linf, l1=l1, l2=l2, tolerance=_grid(law_s),
                            selected=selected, delta=delta))
        tables.append(Cells(f"{name}.parts.count", dict(zip(keys, map(_scalar, n))),
                            additive=True, linf=c, l1=k * c, l2=math.sqrt(k) * c,
                            tolerance=_grid(law_n), selected=selected, delta=delta))


def _grid(law: Any) -> float:
    return float(law.granularity) if law.kind in _GRID_LAWS else 0.0


def _walk(obj: Any, name: str, shape: list[Any], tables: list[Cells],
          stated: dict[str, float] | None) -> None:
    kind = type(obj).__name__
    if isinstance(obj, BaseException):
        obj = Raised.of(obj)
    if isinstance(obj, Raised):
        shape.append(obj)
    elif isinstance(obj, Chosen):  # a choice the caller describes itself
        shape.append(Chosen(name + obj.name, obj.value, len(tables)))
    elif isinstance(obj, Cells):  # a table the caller describes itself
        shape.append((name, "Cells", obj.name, obj.additive, obj.selected))
        tables.append(dataclasses.replace(obj, name=name + obj.name))
    elif kind == "TableRelease":
        _table_release(obj, name, shape, tables, stated)
    elif kind == "AggregateRelease":
        shape.append((name, kind, repr(obj.event), obj.threshold))
        tuning = getattr(obj, "tuning", None)  # aggregate(max_partitions="auto")
        if tuning is not None:
            _walk(tuning, f"{name}.tuning", shape, tables, None)
            # the metrics are released at the bounds the DP summary recommends
            shape.append(Chosen(f"{name}.tuning.used", (tuning.max_partitions,
                                                        tuning.max_per_partition),
                                len(tables)))
        for m, rel in obj.metrics.items():
            _walk(rel, f"{name}.{m}", shape, tables, stated)
    elif kind == "TuneResult":
        _tune_result(obj, name, shape, tables)
    elif kind == "SqlRelease":
        shape.append((name, kind, tuple(obj.key_names), obj.rule))
        for m, rel in obj.releases.items():
            _walk(rel, f"{name}.{m}", shape, tables, stated)
    elif kind == "QuantileRelease":
        shape.append((name, kind, tuple(obj.q), repr(obj.event), obj.threshold))
        tables.append(Cells(name, dict(zip(_keys_of(obj.keys), map(_scalar, obj.values))),
                            selected=obj.selection is not None,
                            delta=_event_delta(obj.event, obj.selection)))
    elif kind == "TopDownRelease":
        _topdown_release(obj, name, shape, tables)
    elif kind in ("AutoBounds",):
        shape.append((name, kind, repr(getattr(obj, "event", None))))
        tables.append(Cells(name, {"bounds": _scalar((obj.lo, obj.hi))}))
    elif kind.endswith("Batch") or kind.endswith("Reports"):  # local-DP reports
        shape.append((name, kind, len(obj)))
    elif isinstance(obj, (tuple, list)):
        shape.append((name, type(obj).__name__, len(obj)))
        for i, x in enumerate(obj):
            _walk(x, f"{name}[{i}]", shape, tables, stated)
    elif isinstance(obj, dict):
        shape.append((name, "dict", tuple(sorted(map(str, obj)))))
        for k in sorted(obj, key=str):
            _walk(obj[k], f"{name}[{k!r}]", shape, tables, stated)
    elif hasattr(obj, "compute") and hasattr(obj, "dask"):  # a dask collection
        _walk(obj.compute(), name, shape, tables, stated)
    elif isinstance(obj, (bool, np.bool_, str, bytes)) or obj is None:
        shape.append((name, kind, obj))  # exact, compared whole
    elif isinstance(obj, np.ndarray) or isinstance(obj, (int, float, np.number)):
        arr = np.asarray(obj)
        shape.append((name, "array", arr.dtype.str, arr.shape))
        cells = {i: _scalar(v) for i, v in np.ndenumerate(arr)} if arr.ndim else \
            {(): _scalar(arr)}
        s = stated or {}
        tables.append(Cells(name, cells, additive="linf" in s or "l1" in s or "l2" in s,
                            linf=s.get("linf", s.get("l2", s.get("l1"))), l1=s.get("l1"),
                            l2=s.get("l2")))
    else:
        # anything else is compared whole (strings, None, public metadata)
        shape.append((name, kind, obj if _hashable(obj) else repr(obj)))


def _bits(arrays: Any) -> tuple[Any, ...]:
    """Arrays compared bit for bit (in the shape: what must not depend on the rows)."""
    out: list[Any] = []
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        arr = np.ascontiguousarray(a)
        out.append((arr.dtype.str, arr.shape, arr.tobytes()))
    return tuple(out)


#: the level of the intervals the audit observes
_ALPHA = 0.05


def _topdown_release(obj: Any, name: str, shape: list[Any], tables: list[Cells]) -> None:
    """A TopDown release: the noisy measurements are additive (per level, the stated L2
    sensitivity); every estimate is their post-processing (keys only); the per-unit error
    variances (:attr:`stderr`) and the intervals' half-widths must be functions of the
    hierarchy and the noise parameters alone (bit for bit in the shape), and the published
    interval is ``consistent ± half-width`` where the estimate is not rounded (its
    published half-widths are checked to move by nothing beyond float rounding), else
    contains it and the estimate."""
    half = obj.confidence_halfwidth(_ALPHA)
    ci = obj.confidence_interval(_ALPHA)
    contains = []
    for c, est, h, (low, high) in zip(obj.consistent, obj.estimates, half, ci):
        c = np.asarray(c, np.float64)
        hh = h if c.ndim == 1 else h[:, None]
        e = np.asarray(est, np.float64)
        lo_needed = np.minimum(c - hh, e)
        if obj.nonnegative:
            lo_needed = np.maximum(lo_needed, 0.0)
        contains.append(bool(np.all(low <= lo_needed) and np.all(high >= np.maximum(c + hh, e))))
    shape.append((name, "TopDownRelease", repr(obj.event), tuple(obj.sensitivity),
                  tuple(None if a is None else a.shape for a in obj.noisy), obj.estimator,
                  obj.nonnegative, obj.integer, obj.total_invariant, _bits(obj.variances),
                  _bits(obj.stderr), _bits(half), repr(obj.report(_ALPHA)),
                  ("interval contains consistent ± half-width and the estimate",
                   tuple(contains))))
    for lev, (noisy, sens) in enumerate(zip(obj.noisy, obj.sensitivity)):
        if noisy is None:  # an exact root (total_invariant): not measured
            continue
        tables.append(Cells(f"{name}.noisy[{lev}]", dict(enumerate(map(_scalar, noisy))),
                            additive=True, linf=float(sens), l2=float(sens)))
    for lev, est in enumerate(obj.estimates):
        tables.append(Cells(f"{name}.estimates[{lev}]", dict(enumerate(map(_scalar, est)))))
    for lev, c in enumerate(obj.consistent):
        tables.append(Cells(f"{name}.consistent[{lev}]", dict(enumerate(map(_scalar, c)))))
    rounded = obj.nonnegative or obj.integer
    for lev, ((low, high), c) in enumerate(zip(ci, obj.consistent)):
        tables.append(Cells(f"{name}.interval[{lev}]",
                            dict(enumerate(map(_scalar, zip(low, high))))))
        if not rounded:  # c ± h: the published half-width moves by float rounding only
            width = (np.asarray(high, np.float64) - np.asarray(low, np.float64)) / 2.0
            tol = 1e-12 * (1.0 + float(np.max(np.abs(c), initial=0.0))
                           + float(np.max(width, initial=0.0)))
            tables.append(Cells(f"{name}.interval_halfwidth[{lev}]",
                                dict(enumerate(map(_scalar, width))), additive=True,
                                linf=0.0, tolerance=tol))


def _first_epsilon(event: Any) -> float | None:
    """The ε of the first pure-DP part of ``event`` (the tuning's histograms)."""
    while event is not None and type(event).__name__ == "Composed":
        event = event.events[0] if event.events else None
    eps = getattr(event, "epsilon", None)
    return float(eps) if isinstance(eps, (int, float)) else None


def _summary_floor(obj: Any) -> float:
    """The public floor below which the tuning's noisy buckets are published as 0: the
    summary's own ``floor`` where it states one, else the documented rule
    (:func:`dpfast.tables.tune`, Privacy): discrete Laplace of scale ``3 / ε_h`` (at most:
    ``2 / ε_h`` with a public domain) times ``ln`` of the two histograms' cells, taken on
    the safe side (a larger floor only allows more)."""
    stated = getattr(obj.summary, "floor", None)
    if isinstance(stated, (int, float)) and not isinstance(stated, bool):
        return float(stated)
    eps_h = _first_epsilon(obj.event)
    if eps_h is None or not eps_h > 0:
        return math.inf
    t = math.nextafter(3.0 / eps_h, math.inf)
    return t * math.log(2 * len(obj.summary.l0_values)) * (1.0 + 1e-9)


def _tune_result(obj: Any, name: str, shape: list[Any], tables: list[Cells]) -> None:
    """A tuning (:func:`dpfast.tables.tune`, or ``aggregate``'s ``.tuning``): its
    contribution summary is additive -- three histograms of one unit per person
    (L∞ 1, L1 3 with the key count, L2 √3), censored below the public floor -- and exact
    (moving by nothing) from a public sample; the bounds it chose privately are a
    :class:`Chosen`; the recommendation, predictions and candidates are post-processing
    (values free, the candidates' keys compared)."""
    s = obj.summary
    shape.append((name, "TuneResult", repr(obj.event), obj.epsilon, obj.release_epsilon,
                  s.private, tuple(s.l0_values.tolist()), tuple(s.linf_values.tolist())))
    cells: dict[Any, Any] = {("l0", float(v)): float(w) for v, w in
                             zip(s.l0_values.tolist(), s.l0_weights.tolist())}
    cells.update({("linf", float(v)): float(w) for v, w in
                  zip(s.linf_values.tolist(), s.linf_weights.tolist())})
    cells["n_keys"] = float(s.n_keys)
    if s.private:
        tables.append(Cells(f"{name}.summary", cells, additive=True, linf=1.0, l1=3.0,
                            l2=math.sqrt(3.0), censored=_summary_floor(obj)))
    else:  # a public sample: the private data are not read
        tables.append(Cells(f"{name}.summary", cells, additive=True, linf=0.0, l1=0.0,
                            l2=0.0))
    for col, v in sorted(getattr(obj, "values", {}).items()):  # a column's value histogram
        cells = {float(x): float(w) for x, w in zip(v.grid.tolist(), v.weights.tolist())}
        # one value per person: one cell moves by at most 1 (nothing from a public sample)
        one = 1.0 if v.private else 0.0
        tables.append(Cells(f"{name}.values[{col}]", cells, additive=True, linf=one, l1=one,
                            l2=one, censored=float(v.floor or 0.0)))
    shape.append(Chosen(f"{name}.bounds", tuple(sorted((c, _scalar(b)) for c, b in
                                                       obj.bounds.items())), len(tables)))
    tables.append(Cells(f"{name}.recommended", {"max_partitions": float(obj.max_partitions),
                                                "max_per_partition":
                                                    float(obj.max_per_partition)}))
    tables.append(Cells(f"{name}.predicted", {
        (m, f): float(getattr(p, f)) for m, p in obj.predicted.items()
        for f in ("bias", "variance", "error")}))
    tables.append(Cells(f"{name}.candidates", {
        (float(c.max_partitions), float(c.max_per_partition)): float(c.score)
        for c in obj.candidates}))


def _hashable(obj: Any) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True
