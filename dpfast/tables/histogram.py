"""numpy-style private histograms: ``dpfast.histogram``, ``histogram2d``, ``histogramdd``.

Public as ``dpfast.histogram`` / ``dpfast.histogram2d`` / ``dpfast.histogramdd`` (the
top-level facade); the module lives in the release layer it is built on.

Drop-in replacements for :func:`numpy.histogram` / :func:`numpy.histogram2d` /
:func:`numpy.histogramdd` (and diffprivlib's ``tools.histogram``) when each row of the
data is an individual's value: the same bin edges and the same assignment of values to
bins as numpy (values equal to the last edge go to the last bin, values outside the range
-- NaN and ±inf included, never an error -- are dropped; NaN weights drop their row, ±inf
weights are clamped to ``weight_bounds``), then exact discrete noise, released as the
registry's ``count`` / ``sum`` with the bins as the public domain (the spec
:func:`dpfast.tables.count` / :func:`dpfast.tables.sum` would build, run by
:func:`dpfast.tables.run.release`: contribution bounding, the budget and the release object
are the same as for tables).  :func:`plan_histogram` plans a :func:`histogram` call from its
public parameters and its columns' types alone -- its checks, edges and event, before any
row is read (what a :class:`dpfast.Session` charges).

The edges must not depend on the data: give ``range`` with an integer ``bins``, or the
edges themselves (numpy would otherwise take the data's min and max, which is not
private, and its string estimators look at the data too).
"""

from __future__ import annotations

import builtins
import dataclasses
import math
import numbers
import sys
import types
from collections.abc import Sequence, Sized
from typing import TYPE_CHECKING, Any, Literal, cast, overload

import numpy as np
import numpy.typing as npt

from dpfast.random import RngLike
from dpfast.tables import _plan, _usecase
from dpfast.tables import run as _run
from dpfast.tables.plan import plan as _make_plan
from dpfast.tables.spec import check_charger
from dpfast.tables.statistics import get as _statistic

if TYPE_CHECKING:
    from dpfast.accounting.events import DpEvent
    from dpfast.tables.release import TableRelease
    from dpfast.tables.spec import Charger, ReleaseSpec

#: a histogram's ``range`` per dimension (None: that dimension's bins are edges)
Ranges = Sequence["tuple[float, float] | None"]

__all__ = ["histogram", "histogram2d", "histogramdd", "HistogramPlan", "plan_histogram"]

_PRIVACY_DOC = """
    Privacy
    -------
    Neighbouring relation: add or remove one person.  Without ``privacy_ids`` a person is
    one row, which changes one bin by 1 (count; L1 = L2 sensitivity 1) or by at most
    ``B = max(|lo|, |hi|)`` with ``weights`` clamped to ``weight_bounds = (lo, hi)``.
    With ``privacy_ids`` each person keeps at most ``max_partitions`` bins and
    ``max_per_partition`` rows per bin (:func:`dpfast.tables.count`): L1 sensitivity
    ``k c`` (times ``B``), L2 ``sqrt(k) c`` (times ``B``).  The bins are public (they come
    from ``bins`` and ``range`` only), so every bin is released: ``epsilon``-DP with
    discrete Laplace noise (Ghosh et al. 2009; Canonne, Kamath, Steinke 2020), ``rho``-zCDP
    with discrete Gaussian noise (CKS20).  ``nonnegative``, ``integer`` and ``density`` are
    post-processing and cost nothing.
"""


def _check_range(rng_: object, name: str) -> tuple[float, float]:
    if not isinstance(rng_, (tuple, list)) or len(rng_) != 2:
        raise TypeError(f"{name} must be a pair (lo, hi)")
    lo, hi = rng_
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.number)):
            raise TypeError(f"{name} must hold real numbers, got {type(v).__name__}")
        if not math.isfinite(float(v)):
            raise ValueError(f"{name} must be finite, got {rng_!r}")
    if float(lo) > float(hi):
        raise ValueError(f"{name} must have lo <= hi, got {rng_!r}")
    return lo, hi


def _edges_1d(a: np.ndarray, bins: int | npt.ArrayLike, range: tuple[float, float] | None,
              name: str) -> np.ndarray:  # noqa: A002
    if isinstance(bins, str):
        raise TypeError(f"{name}: a string estimator ({bins!r}) chooses the bins from the "
                        "data, which is not private; give an int with range, or the edges")
    if np.ndim(bins) == 0:
        if isinstance(bins, bool) or not isinstance(bins, (numbers.Integral, np.integer)):
            raise TypeError(f"{name} must be an int or an array of edges, got "
                            f"{type(bins).__name__}")
        if range is None:
            raise ValueError(f"range must be given with an integer {name}: numpy would take "
                             "the data's min and max, which is not private")
        _check_range(range, "range")
    edges = np.histogram_bin_edges(a, bins=bins, range=range)
    return edges


def _check_data(x: object, name: str) -> np.ndarray:
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError(f"{name} is a masked array; its mask would be ignored: pass "
                        f"{name}.compressed() (with the weights of the same rows)")
    arr = np.asarray(x)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be numbers, got dtype {arr.dtype}")
    return arr  # NaN / ±inf: no bin (numpy's rule), weights: the NULL / clamp policy


def _cells(cols: list[np.ndarray], edges: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """numpy's assignment (histogramdd): per dimension ``searchsorted(edges, x, 'right')``,
    values on the last edge moved into the last bin; returns (flat cell, in-range mask)."""
    n = cols[0].shape[0]
    shape = tuple(len(e) - 1 for e in edges)
    ok = np.ones(n, np.bool_)
    idx = []
    for x, e in zip(cols, edges):
        i = np.searchsorted(e, x, side="right")
        i[x == e[-1]] -= 1
        ok &= (i >= 1) & (i <= len(e) - 1)
        idx.append(i - 1)
    cell = np.zeros(n, np.int64)
    if n:
        clipped = [np.clip(i, 0, s - 1) for i, s in zip(idx, shape)]
        cell = np.ravel_multi_index(clipped, shape).astype(np.int64)
    return cell, ok


def _spec(n_cells: int, weighted: bool, kw: dict[str, object]) -> ReleaseSpec:
    """The spec of a histogram's release over ``n_cells`` cells (the public domain
    ``0 .. n_cells - 1``): the registry's ``count`` of the rows per cell, or with weights
    its ``sum`` of the weights clamped to ``weight_bounds`` -- as
    :func:`dpfast.tables.count` / :func:`dpfast.tables.sum` build it.  The one place a
    histogram's release (and so its event, the plan's) is defined: :func:`histogram`,
    :func:`histogramdd` and :func:`plan_histogram` all make it here."""
    wb = kw["weight_bounds"]
    if not weighted and wb is not None:
        raise ValueError("weight_bounds applies to weights only")
    if weighted and wb is None:
        raise ValueError("weights need weight_bounds=(lo, hi): the sensitivity of a weighted "
                         "histogram is max(|lo|, |hi|)")
    stat = _statistic("sum" if weighted else "count")
    return stat.make_spec(params={}, bounds=wb if weighted else None,
                          domain=np.arange(n_cells), epsilon=kw["epsilon"], delta=kw["delta"],
                          rho=kw["rho"], noise=kw["noise"], max_partitions=kw["max_partitions"],
                          max_per_partition=kw["max_per_partition"])


def _release(cell: np.ndarray, ok: np.ndarray, shape: tuple[int, ...],
             weights: np.ndarray | None, privacy_ids: npt.ArrayLike | None,
             kw: dict[str, object]) -> TableRelease:
    n_cells = int(np.prod(shape))
    ids = None
    if privacy_ids is not None:
        ids = np.asarray(privacy_ids)
        if ids.shape != cell.shape:
            raise ValueError(f"privacy_ids has shape {ids.shape}, the data have "
                             f"{cell.shape[0]} rows")
        ids = ids[ok]
    w = None
    if weights is not None:
        w = _check_data(weights, "weights")
        if w.shape != cell.shape:
            raise ValueError(f"weights has shape {w.shape}, the data have {cell.shape[0]} "
                             "rows")
        w = w[ok]
    spec = _spec(n_cells, weights is not None, kw)
    rows = _run.Rows(cell[ok], ids, w, domain=np.arange(n_cells))
    out: TableRelease = _run.release(
        spec, rows, budget=cast("Charger | None", kw["budget"]), note=cast("str", kw["note"]),
        rng=kw["rng"], use_case=cast("str | None", kw["use_case"]))
    return out


def _post(rel: TableRelease, shape: tuple[int, ...], edges: list[np.ndarray], density: bool,
          nonnegative: bool, integer: bool) -> np.ndarray:
    h = rel.values.reshape(shape)
    if nonnegative:
        h = np.maximum(h, 0)
    if integer and h.dtype.kind == "f":
        h = np.rint(h)
    if density:
        vol = np.ones(shape)
        for j, e in enumerate(edges):
            d = np.diff(e).astype(np.float64)
            vol = vol * d.reshape([-1 if i == j else 1 for i in builtins.range(len(shape))])
        total = float(h.sum())
        with np.errstate(divide="ignore", invalid="ignore"):
            h = h / (total * vol) if total > 0 else np.full(shape, np.nan)
    return h


def _kwargs(epsilon: float | None, delta: float, rho: float | None,
            weight_bounds: tuple[float, float] | None, max_partitions: int,
            max_per_partition: int, noise: str | None, rng: RngLike, budget: Charger | None,
            note: str, use_case: str | None = None) -> dict[str, object]:
    return dict(epsilon=epsilon, delta=delta, rho=rho, weight_bounds=weight_bounds,
                max_partitions=max_partitions, max_per_partition=max_per_partition,
                noise=noise, rng=rng, budget=budget, note=note, use_case=use_case)


@overload
def histogram(a: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
              range: tuple[float, float] | None = None,  # noqa: A002
              weights: npt.ArrayLike | None = None,
              density: bool = False, *, epsilon: float | None = None, delta: float = 0.0,
              rho: float | None = None, weight_bounds: tuple[float, float] | None = None,
              privacy_ids: npt.ArrayLike | None = None, max_partitions: int = 1,
              max_per_partition: int = 1,
              nonnegative: bool = False, integer: bool = False, noise: str | None = None,
              rng: RngLike = None, budget: Charger | None = None, note: str = "",
              return_release: Literal[False] = False,
              use_case: str | None = None) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def histogram(a: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
              range: tuple[float, float] | None = None,  # noqa: A002
              weights: npt.ArrayLike | None = None,
              density: bool = False, *, epsilon: float | None = None, delta: float = 0.0,
              rho: float | None = None, weight_bounds: tuple[float, float] | None = None,
              privacy_ids: npt.ArrayLike | None = None, max_partitions: int = 1,
              max_per_partition: int = 1,
              nonnegative: bool = False, integer: bool = False, noise: str | None = None,
              rng: RngLike = None, budget: Charger | None = None, note: str = "",
              return_release: Literal[True],
              use_case: str | None = None) -> tuple[np.ndarray, np.ndarray, TableRelease]: ...


@overload
def histogram(a: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
              range: tuple[float, float] | None = None,  # noqa: A002
              weights: npt.ArrayLike | None = None,
              density: bool = False, *, epsilon: float | None = None, delta: float = 0.0,
              rho: float | None = None, weight_bounds: tuple[float, float] | None = None,
              privacy_ids: npt.ArrayLike | None = None, max_partitions: int = 1,
              max_per_partition: int = 1,
              nonnegative: bool = False, integer: bool = False, noise: str | None = None,
              rng: RngLike = None, budget: Charger | None = None, note: str = "",
              return_release: bool,
              use_case: str | None = None) -> (
        tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, TableRelease]): ...


def histogram(a: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
              range: tuple[float, float] | None = None,  # noqa: A002
              weights: npt.ArrayLike | None = None,
              density: bool = False, *, epsilon: float | None = None, delta: float = 0.0,
              rho: float | None = None, weight_bounds: tuple[float, float] | None = None,
              privacy_ids: npt.ArrayLike | None = None, max_partitions: int = 1,
              max_per_partition: int = 1,
              nonnegative: bool = False, integer: bool = False, noise: str | None = None,
              rng: RngLike = None, budget: Charger | None = None, note: str = "",
              return_release: bool = False, use_case: str | None = None) -> (
        tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, TableRelease]):
    """Private :func:`numpy.histogram`: ``(noisy_counts, bin_edges)``.

    Parameters
    ----------
    a : array_like
        The data (flattened), one value per row.
    bins : int or array_like
        Number of equal-width bins in ``range`` (which is then required), or the edges.
    range : (float, float), optional
        Lower and upper edge; needed with an integer ``bins``.
    weights : array_like, optional
        One weight per value; needs ``weight_bounds`` (clamping).  Integer weights with
        integer bounds get exact discrete noise, float weights the secure grid noise.
    density : bool
        As numpy: ``noisy / (noisy.sum() * bin widths)`` (post-processing; NaN if the noisy
        total is not positive).
    epsilon, delta, rho, noise, rng, budget, note, use_case
        As :func:`dpfast.tables.count` (the bins are the public domain).
    privacy_ids, max_partitions, max_per_partition
        Several rows per person: contribution bounding as in :func:`dpfast.tables.count`.
    nonnegative : bool
        Clip negative noisy values to 0 (post-processing).
    integer : bool
        Round weighted (float) output to integers (post-processing; counts are integers).
    return_release : bool
        Also return the :class:`dpfast.tables.TableRelease` (event, intervals, accuracy).

    Returns
    -------
    hist : ndarray
        int64 noisy counts (float64 for float weights or ``density``).
    bin_edges : ndarray
        Exactly ``numpy.histogram``'s edges.
    release : TableRelease
        Only with ``return_release=True``.

    Numerics
    --------
    Bin assignment is numpy's (``searchsorted`` on the edges, the last edge inclusive), so
    the noiseless table equals ``numpy.histogram``'s exactly; the noise is exact.
    """
    _plan.privacy(epsilon, delta, rho, noise, False)  # before any work on the bins
    arr = _check_data(a, "a").reshape(-1)
    edges = _edges_1d(arr, bins, range, "bins")
    w = None if weights is None else _check_data(weights, "weights").reshape(-1)
    cell, ok = _cells([arr], [edges])
    kw = _kwargs(epsilon, delta, rho, weight_bounds, max_partitions, max_per_partition,
                 noise, rng, budget, note, use_case)
    ids = None if privacy_ids is None else np.asarray(privacy_ids).reshape(-1)
    rel = _release(cell, ok, (len(edges) - 1,), w, ids, kw)
    h = _post(rel, (len(edges) - 1,), [edges], density, nonnegative, integer)
    return (h, edges, rel) if return_release else (h, edges)


@dataclasses.dataclass(frozen=True)
class HistogramPlan:
    """The plan of one :func:`histogram` call, made from its public parameters and its
    columns' types (:func:`plan_histogram`): the bin ``edges``, the release's ``spec``
    (:class:`dpfast.tables.spec.ReleaseSpec`) and its ``plan``
    (:func:`dpfast.tables.plan.plan`), whose :attr:`event` the histogram charges."""

    edges: np.ndarray
    spec: ReleaseSpec
    plan: _run.Plan

    @property
    def event(self) -> DpEvent:
        """The privacy event :func:`histogram` charges for these parameters."""
        return self.plan.event


def plan_histogram(a: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
                   range: tuple[float, float] | None = None,  # noqa: A002
                   weights: npt.ArrayLike | None = None, *, epsilon: float | None = None,
                   delta: float = 0.0, rho: float | None = None,
                   weight_bounds: tuple[float, float] | None = None,
                   privacy_ids: npt.ArrayLike | None = None, max_partitions: int = 1,
                   max_per_partition: int = 1, noise: str | None = None,
                   note: str = "", use_case: str | None = None) -> HistogramPlan:
    """The plan of :func:`histogram` with these arguments, **without reading a row**: the
    checks :func:`histogram` makes before its charge (ValueError / TypeError naming the
    parameter, in its order), the edges and the event.

    Only the dtypes of ``a`` and ``weights`` and whether ``privacy_ids`` is given are read
    (pass empty columns of the right types: a session passes its table's schema), so the
    event is a function of public information.  :func:`histogram` charges exactly
    ``plan_histogram(...).event`` for the same arguments (both make the release's spec
    with one function).
    """
    _plan.privacy(epsilon, delta, rho, noise, False)
    arr = _check_data(a, "a").reshape(-1)[:0]  # the dtype only
    edges = _edges_1d(arr, bins, range, "bins")
    w = None if weights is None else _check_data(weights, "weights").reshape(-1)[:0]
    kw = _kwargs(epsilon, delta, rho, weight_bounds, max_partitions, max_per_partition,
                 noise, None, None, note, use_case)
    n_cells = len(edges) - 1
    spec = _spec(n_cells, w is not None, kw)
    ids = None if privacy_ids is None else np.asarray(privacy_ids).reshape(-1)[:0]
    rows = _run.Rows(np.zeros(0, np.int64), ids, w, domain=np.arange(n_cells))
    check_charger(None, note)
    p = _make_plan(spec, rows)
    _usecase.check(use_case, spec.epsilon, spec.delta, spec.rho)
    return HistogramPlan(edges, spec, p)


def _dd_edges(sample: np.ndarray, bins: int | npt.ArrayLike,
              range: Ranges | None) -> list[np.ndarray]:  # noqa: A002
    d = sample.shape[1]
    if isinstance(bins, str):
        raise TypeError("bins: a string estimator chooses the bins from the data, which is not "
                        "private; give ints with range, or the edges")
    per: Sequence[int | npt.ArrayLike] | np.ndarray = \
        bins if isinstance(bins, (list, tuple, np.ndarray)) else [bins] * d
    if len(per) != d:
        raise ValueError(f"bins has {len(per)} entries for {d} dimensions")
    if range is not None and len(range) != d:
        raise ValueError(f"range has {len(range)} entries for {d} dimensions")
    edges = []
    for i in builtins.range(d):
        b = per[i]
        r = None if range is None else range[i]
        if np.ndim(b) == 0:
            if isinstance(b, bool) or not isinstance(b, (numbers.Integral, np.integer)):
                raise TypeError(f"bins[{i}] must be an int or an array of edges")
            if b < 1:
                raise ValueError(f"bins[{i}] must be >= 1, got {b}")
            if r is None:
                raise ValueError(f"range[{i}] must be given with an integer bins[{i}]: numpy "
                                 "would take the data's min and max, which is not private")
            lo, hi = _check_range(r, f"range[{i}]")
            lo, hi = float(lo), float(hi)
            if lo == hi:  # numpy's convention
                lo, hi = lo - 0.5, hi + 0.5
            edges.append(np.linspace(lo, hi, int(b) + 1))
        else:
            e = np.asarray(b)
            if e.ndim != 1 or e.size < 2 or np.any(e[:-1] > e[1:]):
                raise ValueError(f"bins[{i}] must be a monotonically increasing 1-D array")
            edges.append(e)
    return edges


@overload
def histogramdd(sample: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
                range: Ranges | None = None,  # noqa: A002
                weights: npt.ArrayLike | None = None, density: bool = False, *,
                epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                weight_bounds: tuple[float, float] | None = None,
                privacy_ids: npt.ArrayLike | None = None,
                max_partitions: int = 1, max_per_partition: int = 1,
                nonnegative: bool = False, integer: bool = False, noise: str | None = None,
                rng: RngLike = None, budget: Charger | None = None, note: str = "",
                return_release: Literal[False] = False,
                use_case: str | None = None) -> tuple[np.ndarray, list[np.ndarray]]: ...


@overload
def histogramdd(sample: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
                range: Ranges | None = None,  # noqa: A002
                weights: npt.ArrayLike | None = None, density: bool = False, *,
                epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                weight_bounds: tuple[float, float] | None = None,
                privacy_ids: npt.ArrayLike | None = None,
                max_partitions: int = 1, max_per_partition: int = 1,
                nonnegative: bool = False, integer: bool = False, noise: str | None = None,
                rng: RngLike = None, budget: Charger | None = None, note: str = "",
                return_release: Literal[True],
                use_case: str | None = None
                ) -> tuple[np.ndarray, list[np.ndarray], TableRelease]: ...


@overload
def histogramdd(sample: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
                range: Ranges | None = None,  # noqa: A002
                weights: npt.ArrayLike | None = None, density: bool = False, *,
                epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                weight_bounds: tuple[float, float] | None = None,
                privacy_ids: npt.ArrayLike | None = None,
                max_partitions: int = 1, max_per_partition: int = 1,
                nonnegative: bool = False, integer: bool = False, noise: str | None = None,
                rng: RngLike = None, budget: Charger | None = None, note: str = "",
                return_release: bool,
                use_case: str | None = None) -> (
        tuple[np.ndarray, list[np.ndarray]]
        | tuple[np.ndarray, list[np.ndarray], TableRelease]): ...


def histogramdd(sample: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
                range: Ranges | None = None,  # noqa: A002
                weights: npt.ArrayLike | None = None, density: bool = False, *,
                epsilon: float | None = None, delta: float = 0.0, rho: float | None = None,
                weight_bounds: tuple[float, float] | None = None,
                privacy_ids: npt.ArrayLike | None = None,
                max_partitions: int = 1, max_per_partition: int = 1,
                nonnegative: bool = False, integer: bool = False, noise: str | None = None,
                rng: RngLike = None, budget: Charger | None = None, note: str = "",
                return_release: bool = False, use_case: str | None = None) -> (
        tuple[np.ndarray, list[np.ndarray]]
        | tuple[np.ndarray, list[np.ndarray], TableRelease]):
    """Private :func:`numpy.histogramdd`: ``(noisy_hist, edges)``.

    ``sample`` is an ``(N, D)`` array or a sequence of ``D`` arrays of length ``N``;
    ``bins`` an int, a sequence of ints (each with its ``range`` entry) or a sequence of
    edge arrays.  Other parameters as :func:`histogram`; one row is one point.
    """
    _plan.privacy(epsilon, delta, rho, noise, False)  # before any work on the bins
    if isinstance(sample, (list, tuple)) and sample and np.ndim(sample[0]) == 1:
        cols = [_check_data(s, f"sample[{i}]") for i, s in enumerate(sample)]
        n = len(cols[0])
        if any(len(c) != n for c in cols):
            raise ValueError("the sample's coordinate arrays have different lengths")
        arr = np.stack(cols, axis=1) if cols else np.zeros((0, 0))
    else:
        arr = _check_data(sample, "sample")
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(f"sample must be (N, D), got {arr.ndim} dimensions")
    edges = _dd_edges(arr, bins, range)
    cell, ok = _cells([arr[:, i] for i in builtins.range(arr.shape[1])], edges)
    shape = tuple(len(e) - 1 for e in edges)
    kw = _kwargs(epsilon, delta, rho, weight_bounds, max_partitions, max_per_partition,
                 noise, rng, budget, note, use_case)
    rel = _release(cell, ok, shape,
                   None if weights is None else _check_data(weights, "weights"),
                   privacy_ids, kw)
    h = _post(rel, shape, edges, density, nonnegative, integer)
    return (h, edges, rel) if return_release else (h, edges)


def histogram2d(x: npt.ArrayLike, y: npt.ArrayLike, bins: int | npt.ArrayLike = 10,
                range: Ranges | None = None,  # noqa: A002
                weights: npt.ArrayLike | None = None, density: bool = False, **kwargs: Any) -> Any:
    """Private :func:`numpy.histogram2d`: ``(noisy_hist, xedges, yedges)``.

    ``bins``: an int, ``[nx, ny]``, ``[xedges, yedges]`` or one edge array for both; keyword
    parameters as :func:`histogramdd` (``epsilon=...`` required).
    """
    xa = _check_data(x, "x")
    ya = _check_data(y, "y")
    if xa.shape != ya.shape or xa.ndim != 1:
        raise ValueError(f"x and y must be 1-D of equal length, got {xa.shape}, {ya.shape}")
    try:  # numpy's convention: one edge array (not of length 1 or 2) serves both axes
        nb_ = len(bins) if isinstance(bins, Sized) else 1
    except TypeError:
        nb_ = 1
    if nb_ not in (1, 2):
        bins = [np.asarray(bins), np.asarray(bins)]
    out = histogramdd([xa, ya], bins, range, weights, density, **kwargs)
    if kwargs.get("return_release"):
        h, edges, rel = out
        return h, edges[0], edges[1], rel
    h, edges = out
    return h, edges[0], edges[1]


for _f in (histogram, histogramdd, histogram2d):
    _f.__doc__ = (_f.__doc__ or "") + _PRIVACY_DOC
del _f


class _CallableModule(types.ModuleType):
    """``histogram`` is both this module and the function: importing the module
    (``import dpfast.tables.histogram``) binds the package attribute
    ``dpfast.tables.histogram`` to the module, so the module itself is callable and forwards
    to :func:`histogram` (``dpfast.histogram``, through the top-level facade, is the
    function)."""

    __call__ = staticmethod(histogram)


sys.modules[__name__].__class__ = _CallableModule
