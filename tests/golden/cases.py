"""The golden cases: every public release function on one fixed synthetic table.

Shared by ``tests/golden/record.py`` (writes ``tests/golden/outputs.json``) and
``tests/test_golden.py`` (recomputes every case and asserts bit-for-bit equality).  Each
case is a name and a callable that runs one release with a *fresh*
``dpfast.default_rng(KEY)``; :func:`encode` turns its result into JSON-able data with every
float as an exact hex string, every key as its ``repr`` (so ``'a'``, ``3`` and ``3.0``
stay apart) and every event as its ``to_dict()``.  A call that raises ValueError by design
(a combination the function refuses, e.g. ``rho`` with private key selection) is recorded
as ``{"raises": ..., "message": ...}``: the golden file lists what was skipped and the
test checks that it still raises.

See docs/design.md, "Golden outputs".
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import tempfile
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

import dpfast
import dpfast.tables as dpt

KEY = bytes(range(32))  # the fixed generator key of every case
SEED = 12345  # numpy seed of the synthetic table
DATASET_VERSION = 1  # bump (and re-record) if the table below changes

Case = tuple[str, Callable[[], Any]]


# ----------------------------------------------------------------------------- the data
def _make_data() -> dict[str, np.ndarray]:
    """389 rows: 150 people with 1-7 rows and 1-3 keys each; skewed keys."""
    g = np.random.default_rng(SEED)
    skeys = np.array([f"k{i:02d}" for i in range(20)])
    sw = 1.0 / np.arange(1, 21) ** 1.3
    sw /= sw.sum()
    items = np.array([f"item{i:02d}" for i in range(25)])
    iw = 1.0 / np.arange(1, 26) ** 0.8
    iw /= iw.sum()
    cols: dict[str, list[Any]] = {"pid": [], "s": [], "ik": [], "item": [], "ival": [],
                                  "fval": []}
    for p in range(150):
        n_rows = 1 + int(g.poisson(1.7))
        n_keys = min(1 + int(g.integers(0, 3)), n_rows)
        own = g.choice(20, size=n_keys, replace=False, p=sw)
        own_ik = np.minimum(g.geometric(0.45, size=n_keys) - 1, 5)
        for _ in range(n_rows):
            j = int(g.integers(0, n_keys))
            cols["pid"].append(1000 + 7 * p)
            cols["s"].append(str(skeys[own[j]]))
            cols["ik"].append(int(own_ik[j]))
            cols["item"].append(str(items[g.choice(25, p=iw)]))
            cols["ival"].append(int(g.integers(-5, 61)))
            cols["fval"].append(float(np.round(g.normal(10.0, 7.0), 6)))
    return {"pid": np.array(cols["pid"], dtype=np.int64),
            "s": np.array(cols["s"], dtype=object),
            "ik": np.array(cols["ik"], dtype=np.int64),
            "item": np.array(cols["item"], dtype=object),
            "ival": np.array(cols["ival"], dtype=np.int64),
            "fval": np.array(cols["fval"], dtype=np.float64)}


D = _make_data()
# public domains: all but one key seen in the data (its rows are dropped) plus one key
# without rows (a noisy zero), in a fixed non-sorted order
S_DOMAIN = np.array([f"k{i:02d}" for i in (3, 0, 1, 2)] + [f"k{i:02d}" for i in range(4, 19)]
                    + ["zz"], dtype=object)
IK_DOMAIN = np.array([5, 4, 3, 2, 1, 0, 9], dtype=np.int64)
IBOUNDS = (0, 50)
FBOUNDS = (-5.0, 25.0)
DELTA = 1e-5
EPS = 5.0  # large enough that private key selection keeps a few keys


def frame() -> Any:
    """The table as a pandas DataFrame (a new one per call: no case sees another's)."""
    import pandas as pd

    return pd.DataFrame({k: v.copy() for k, v in D.items()})


def dask_frame() -> Any:
    """The table as a dask DataFrame of 3 partitions."""
    import dask.dataframe as dd

    return dd.from_pandas(frame(), npartitions=3, sort=False)


RID = (1 << 127) + 12345  # the release id a raw-key case gets (pinned, see raw_key)


@contextlib.contextmanager
def raw_key() -> Iterator[bytes]:
    """:data:`KEY` as a raw key, with the release's fresh id pinned to :data:`RID`: a raw
    key normally draws its release id from ``os.urandom`` (two releases with one key never
    share noise), which is non-deterministic by design; pinning it records the keyed noise
    addresses ``(KEY, RID)`` of :func:`dpfast.tables.keynoise.keyed_generator`."""
    from unittest import mock

    from dpfast.tables import keynoise

    with mock.patch.object(keynoise, "fresh_release_id", lambda: RID):
        yield KEY


def rng() -> dpfast.Generator:
    """A fresh generator rebuilt from :data:`KEY`: every case replays its own noise."""
    return dpfast.default_rng(KEY)


# ----------------------------------------------------------------------------- privacy
#: the privacy targets crossed with every function that takes them
PRIVACY: dict[str, dict[str, Any]] = {
    "laplace": {"epsilon": EPS},
    "gaussian": {"epsilon": EPS, "delta": DELTA, "noise": "gaussian"},
    "rho": {"rho": 2.0},
}
DOMAINS = ("public", "private")


def _target(priv: str, dom: str, domain: Any) -> dict[str, Any]:
    kw = dict(PRIVACY[priv])
    if dom == "public":
        kw["domain"] = domain
    else:
        kw["domain"] = None
        if "epsilon" in kw:
            kw["delta"] = DELTA
    return kw


# ----------------------------------------------------------------------------- encoding
def _scalar(x: Any) -> Any:
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x).hex()
    if isinstance(x, Fraction):
        return f"Fraction({x.numerator}/{x.denominator})"
    if isinstance(x, (str, bytes)) or x is None:
        return x if not isinstance(x, bytes) else "bytes:" + x.hex()
    raise TypeError(f"cannot encode {type(x).__name__}")


def encode(x: Any) -> Any:
    """``x`` as JSON-able data, exactly: floats as hex strings, arrays as
    ``{"dtype", "shape", "data"}``, dataclasses as their fields, Fractions exactly."""
    if isinstance(x, np.ndarray):
        if x.dtype == object:
            data = [repr(v) for v in x.ravel().tolist()]
        else:
            data = [_scalar(v) for v in x.ravel().tolist()]
        return {"dtype": str(x.dtype), "shape": list(x.shape), "data": data}
    if isinstance(x, dict):
        return {str(k): encode(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [encode(v) for v in x]
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        out = {f.name: encode(getattr(x, f.name)) for f in dataclasses.fields(x)}
        out["__class__"] = type(x).__name__
        return out
    if hasattr(x, "to_dict") and hasattr(x, "__class__") and type(x).__module__.startswith(
            "dpfast.accounting"):
        return {"event": encode(x.to_dict())}
    return _scalar(x)


def keys_of(keys: Any) -> Any:
    """Released keys as lists of ``repr`` (one list per key column)."""
    cols = keys if isinstance(keys, tuple) else (keys,)
    return [[repr(v) for v in np.asarray(c).tolist()] for c in cols]


def _event(ev: Any) -> Any:
    return encode(ev.to_dict())


def _digest(x: Any) -> Any:
    """Long lists (a selection's keep probabilities) as their length and SHA-256: exact,
    and the golden file stays small."""
    if isinstance(x, dict):
        return {k: _digest(v) for k, v in x.items()}
    if isinstance(x, list):
        if len(x) > 8:
            text = json.dumps(x, sort_keys=True)
            return {"len": len(x), "sha256": hashlib.sha256(text.encode()).hexdigest()}
        return [_digest(v) for v in x]
    return x


def _selection(sel: Any) -> Any:
    if sel is None:
        return None
    return {"describe": sel.describe(), "fields": _digest(encode(sel))}


def table(rel: Any) -> dict[str, Any]:
    """A :class:`dpfast.tables.TableRelease`."""
    out = {"type": type(rel).__name__, "statistic": rel.statistic, "keys": keys_of(rel.keys),
           "values": encode(np.asarray(rel.values)), "event": _event(rel.event),
           "threshold": encode(rel.threshold), "law": encode(rel.law),
           "release_id": encode(rel.release_id), "sensitivity": encode(rel.sensitivity),
           "selection": _selection(rel.selection),
           "ci95": encode(rel.confidence_interval(0.05))}
    for extra in ("bounds", "auto_bounds"):
        if hasattr(rel, extra):
            out[extra] = encode(getattr(rel, extra))
    return out


def quantiles(rel: Any) -> dict[str, Any]:
    """A :class:`dpfast.tables.QuantileRelease`."""
    grid = np.ascontiguousarray(rel.grid)
    return {"type": type(rel).__name__, "keys": keys_of(rel.keys),
            "values": encode(np.asarray(rel.values)), "q": encode(rel.q),
            "grid": {"dtype": str(grid.dtype), "n": int(grid.size),
                     "sha256": hashlib.sha256(grid.tobytes()).hexdigest(),
                     "first": encode(grid[:1]), "last": encode(grid[-1:])},
            "epsilon_per_key": encode(rel.epsilon_per_key),
            "sensitivity": encode(rel.sensitivity), "max_partitions": rel.max_partitions,
            "event": _event(rel.event), "threshold": encode(rel.threshold),
            "selection": _selection(rel.selection), "release_id": encode(rel.release_id),
            "rank_utility": rel.rank_utility, "rank_error95": rel.rank_error(0.05)}


def aggregate_rel(rel: Any) -> dict[str, Any]:
    """A :class:`dpfast.tables.AggregateRelease`: every metric encoded on its own."""
    return {"type": type(rel).__name__, "keys": keys_of(rel.keys),
            "metrics": {n: result(m) for n, m in rel.metrics.items()},
            "event": _event(rel.event), "threshold": encode(rel.threshold),
            "selected_on": rel.selected_on, "shares": encode(rel.shares),
            "laws": encode(rel.laws), "noisy_parts": encode(rel.noisy_parts),
            "release_id": encode(rel.release_id)}


def topdown_rel(rel: Any) -> dict[str, Any]:
    """A :class:`dpfast.tables.TopDownRelease`."""
    return {"type": type(rel).__name__, "estimates": encode(rel.estimates),
            "noisy": encode(rel.noisy), "consistent": encode(rel.consistent),
            "variances": encode(rel.variances), "sigma": encode(rel.sigma),
            "rho": encode(rel.rho), "event": _event(rel.event),
            "rho_total": encode(rel.rho_total), "total_invariant": rel.total_invariant,
            "release_id": encode(rel.release_id), "privacy_unit": rel.privacy_unit,
            "ci95": encode(rel.confidence_interval(0.05))}


def result(rel: Any) -> dict[str, Any]:
    """Any release object of dpfast as JSON-able data (TypeError for anything else)."""
    name = type(rel).__name__
    if name == "TableRelease":
        return table(rel)
    if name == "QuantileRelease":
        return quantiles(rel)
    if name == "AggregateRelease":
        return aggregate_rel(rel)
    if name == "TopDownRelease":
        return topdown_rel(rel)
    if name == "AutoBounds":
        out = encode(rel)
        out["event"] = _event(rel.event)
        return out
    if name == "SqlRelease":
        return {"type": name, "key_names": list(rel.key_names), "rule": rel.rule,
                "releases": {n: result(r) for n, r in rel.releases.items()}}
    if isinstance(rel, tuple) and len(rel) == 3 and type(rel[2]).__name__ == "TableRelease":
        return {"type": "histogram", "hist": encode(rel[0]), "edges": encode(rel[1]),
                "release": table(rel[2])}
    raise TypeError(f"no golden encoding for {name}")


def run_case(fn: Callable[[], Any]) -> dict[str, Any]:
    """The golden record of one case: its encoded result, or the ValueError it raises."""
    try:
        got = fn()
    except ValueError as e:
        return {"raises": type(e).__name__, "message": str(e)}
    return {"result": result(got)}


# ----------------------------------------------------------------------------- tables
def _tables_cases() -> Iterator[Case]:
    s, ik, pid = D["s"], D["ik"], D["pid"]
    ival, fval, item = D["ival"], D["fval"], D["item"]
    kp = {"max_partitions": 2, "max_per_partition": 2}

    def crossed(name: str, call: Callable[..., Any], privs: tuple[str, ...], domain: Any
                ) -> Iterator[Case]:
        for priv in privs:
            for dom in DOMAINS:
                kw = _target(priv, dom, domain)
                yield (f"tables.{name}[{priv},{dom}]",
                       lambda call=call, kw=kw: call(rng=rng(), **kw))

    every = ("laplace", "gaussian", "rho")
    yield from crossed("count", lambda **kw: dpt.count(s, pid, **kp, **kw), every, S_DOMAIN)
    yield from crossed("count_ik", lambda **kw: dpt.count(ik, pid, max_partitions=3, **kw),
                       ("laplace", "gaussian"), IK_DOMAIN)
    yield from crossed("sum_int", lambda **kw: dpt.sum(ival, s, pid, bounds=IBOUNDS, **kp,
                                                       **kw), every, S_DOMAIN)
    yield from crossed("sum_float", lambda **kw: dpt.sum(fval, s, pid, bounds=FBOUNDS,
                                                         max_partitions=3, **kw),
                       every, S_DOMAIN)
    yield from crossed("mean_int", lambda **kw: dpt.mean(ival, s, pid, bounds=IBOUNDS, **kp,
                                                         **kw), every, S_DOMAIN)
    yield from crossed("mean_float", lambda **kw: dpt.mean(fval, s, pid, bounds=FBOUNDS, **kp,
                                                           **kw), every, S_DOMAIN)
    yield from crossed("variance", lambda **kw: dpt.variance(fval, s, pid, bounds=FBOUNDS,
                                                             **kp, **kw), every, S_DOMAIN)
    yield from crossed("std", lambda **kw: dpt.std(ival, s, pid, bounds=IBOUNDS, **kp, **kw),
                       every, S_DOMAIN)
    for pol in ("uniform", "frequent", "l2"):
        yield from crossed(f"privacy_id_count_{pol}",
                           lambda pol=pol, **kw: dpt.privacy_id_count(
                               s, pid, max_partitions=2, bounding=pol, **kw),
                           every, S_DOMAIN)
    yield from crossed("count_distinct", lambda **kw: dpt.count_distinct(
        item, s, pid, max_partitions=2, max_per_partition=3, **kw), every, S_DOMAIN)
    # the rank statistics are pure-DP: epsilon only (delta for private selection)
    yield from crossed("quantile_q", lambda **kw: dpt.quantile(
        fval, s, pid, q=0.75, bounds=FBOUNDS, n_candidates=64, **kp, **kw),
        ("laplace",), S_DOMAIN)
    yield from crossed("quantile_list", lambda **kw: dpt.quantile(
        ival, s, pid, q=[0.1, 0.5, 0.9], bounds=IBOUNDS, **kp, **kw),
        ("laplace",), S_DOMAIN)
    yield from crossed("median", lambda **kw: dpt.median(fval, s, pid, bounds=FBOUNDS, **kw),
                       ("laplace",), S_DOMAIN)
    yield from crossed("min", lambda **kw: dpt.min(ival, s, pid, bounds=IBOUNDS, **kp, **kw),
                       ("laplace",), S_DOMAIN)
    yield from crossed("max", lambda **kw: dpt.max(fval, ik, pid, bounds=FBOUNDS, **kw),
                       ("laplace",), IK_DOMAIN)
    yield from crossed("aggregate", lambda **kw: dpt.aggregate(
        frame(), "s", "pid", metrics=AGG_METRICS, bounds=AGG_BOUNDS, weights=AGG_WEIGHTS,
        candidates={"ival": 64}, **kp, **kw), every, S_DOMAIN)
    yield from crossed("aggregate_norank", lambda **kw: dpt.aggregate(
        frame(), "s", "pid", metrics=AGG_NORANK, bounds=AGG_BOUNDS, **kp, **kw),
        every, S_DOMAIN)
    # bounds="auto" (epsilon targets only)
    yield from crossed("sum_auto", lambda **kw: dpt.sum(fval, s, pid, bounds="auto", **kw),
                       ("laplace",), S_DOMAIN)
    yield from crossed("mean_auto", lambda **kw: dpt.mean(ival, s, pid, bounds="auto", **kp,
                                                          **kw), ("laplace",), S_DOMAIN)
    yield ("tables.auto_bounds[float]",
           lambda: dpt.auto_bounds(fval, s, pid, epsilon=1.0, rng=rng()))
    yield ("tables.auto_bounds[int,k2]",
           lambda: dpt.auto_bounds(ival, s, pid, epsilon=0.5, quantiles=(0.05, 0.95), **kp,
                                   rng=rng()))
    # count: every selection rule (private keys), a record-level count, multi-column keys
    for sel in ("geometric", "gaussian", "weighted_gaussian", "laplace"):
        yield (f"tables.count_selection[{sel}]",
               lambda sel=sel: dpt.count(s, pid, epsilon=EPS, delta=DELTA, max_partitions=3,
                                         selection=sel, rng=rng()))
    yield ("tables.count_records[laplace,public]",
           lambda: dpt.count(s, epsilon=EPS, domain=S_DOMAIN, rng=rng()))
    yield ("tables.count_frequent[laplace,private]",
           lambda: dpt.count(s, pid, epsilon=EPS, delta=DELTA, bounding="frequent", **kp,
                             rng=rng()))
    yield ("tables.count_two_keys[laplace,public]",
           lambda: dpt.count((s, ik), pid, epsilon=EPS, domain=TWO_DOMAIN, **kp, rng=rng()))
    yield ("tables.sum_two_keys[gaussian,private]",
           lambda: dpt.sum(fval, (s, ik), pid, bounds=FBOUNDS, epsilon=EPS, delta=DELTA,
                           noise="gaussian", **kp, rng=rng()))
    yield ("tables.aggregate_two_keys[laplace,public]",
           lambda: dpt.aggregate(frame(), ["s", "ik"], "pid", metrics=AGG_NORANK,
                                 bounds=AGG_BOUNDS, epsilon=EPS, domain=TWO_DOMAIN, **kp,
                                 rng=rng()))
    # a raw 32-byte key (release id pinned): release_id recorded, noise keyed by (KEY, RID)
    yield ("tables.count_raw_key[laplace,public]", _with_raw_key(
        lambda key: dpt.count(s, pid, epsilon=EPS, domain=S_DOMAIN, **kp, rng=key)))
    yield ("tables.sum_float_raw_key[gaussian,private]", _with_raw_key(
        lambda key: dpt.sum(fval, s, pid, bounds=FBOUNDS, epsilon=EPS, delta=DELTA,
                            noise="gaussian", **kp, rng=key)))
    yield ("tables.topdown_raw_key[records]", _with_raw_key(
        lambda key: dpt.topdown(LEAF_COUNTS, TD_LEVELS, rho=1.0, rng=key)))
    # topdown: record level (counts per leaf) and per person (one leaf per record)
    yield ("tables.topdown[records]",
           lambda: dpt.topdown(LEAF_COUNTS, TD_LEVELS, rho=1.0, rng=rng()))
    yield ("tables.topdown[records,rho_list,total_invariant]",
           lambda: dpt.topdown(LEAF_COUNTS, TD_LEVELS, rho=[0.0, 0.3, 0.7],
                               total_invariant=True, rng=rng()))
    yield ("tables.topdown[privacy_ids]",
           lambda: dpt.topdown(LEAF_OF_ROW, TD_LEVELS, rho=1.0, privacy_ids=pid,
                               max_partitions=2, max_per_partition=2, rng=rng()))
    # dpfast.histogram (a release: a noisy count per bin)
    yield ("histogram[laplace]",
           lambda: dpfast.histogram(fval, bins=8, range=FBOUNDS, epsilon=EPS,
                                    privacy_ids=pid, max_per_partition=3, rng=rng(),
                                    return_release=True))
    yield ("histogram[rho,weights]",
           lambda: dpfast.histogram(fval, bins=6, range=FBOUNDS, weights=ival.astype(float),
                                    weight_bounds=(0.0, 50.0), rho=0.5, privacy_ids=pid,
                                    max_partitions=2, rng=rng(), return_release=True))


def _with_raw_key(call: Callable[[bytes], Any]) -> Callable[[], Any]:
    def go() -> Any:
        with raw_key() as key:
            return call(key)
    return go


AGG_METRICS = {"n": "count", "people": "privacy_id_count", "total": ("sum", "ival"),
               "avg": ("mean", "fval"), "var": ("variance", "fval"),
               "med": ("median", "ival"), "p90": ("quantile", "fval", 0.9),
               "lo": ("min", "ival")}
AGG_WEIGHTS = {"n": 1.0, "people": 0.5, "total": 2.0, "avg": 1.0, "var": 1.0, "med": 1.5,
               "p90": 1.0, "lo": 0.5}
AGG_NORANK = ["count", "privacy_id_count", ("sum", "fval"), ("mean", "ival"),
              ("std", "fval")]
AGG_BOUNDS = {"ival": IBOUNDS, "fval": FBOUNDS}
TWO_DOMAIN = (np.array(["k00", "k00", "k01", "k02", "k05"], dtype=object),
              np.array([0, 1, 0, 2, 0], dtype=np.int64))

# topdown: leaf = the string key's index; level 1 groups of 5 leaves; level 0 one root
_LEAVES = [f"k{i:02d}" for i in range(20)]
LEAF_OF_ROW = np.array([_LEAVES.index(v) for v in D["s"]], dtype=np.int64)
LEAF_COUNTS = np.bincount(LEAF_OF_ROW, minlength=20).astype(np.int64)
TD_LEVELS = [np.zeros(20, dtype=np.int64), np.arange(20, dtype=np.int64) // 5,
             np.arange(20, dtype=np.int64)]


# ----------------------------------------------------------------------------- dask
@contextlib.contextmanager
def _synchronous() -> Iterator[None]:
    import dask

    with dask.config.set(scheduler="synchronous"):
        yield


def _dask_cases() -> Iterator[Case]:
    kp = {"max_partitions": 2, "max_per_partition": 2}

    def crossed(name: str, call: Callable[..., Any], privs: tuple[str, ...], domain: Any
                ) -> Iterator[Case]:
        for priv in privs:
            for dom in DOMAINS:
                kw = _target(priv, dom, domain)

                def run(call: Callable[..., Any] = call, kw: dict[str, Any] = kw) -> Any:
                    import dpfast.dask as dkd

                    with _synchronous():
                        return call(dkd, dask_frame(), rng=rng(), **kw)

                yield (f"dask.{name}[{priv},{dom}]", run)

    every = ("laplace", "gaussian", "rho")
    yield from crossed("count", lambda m, f, **kw: m.count(f, "s", "pid", **kp, **kw),
                       every, S_DOMAIN)
    yield from crossed("count_ik", lambda m, f, **kw: m.count(f, "ik", "pid", max_partitions=3,
                                                              **kw),
                       ("laplace", "gaussian"), IK_DOMAIN)
    yield from crossed("sum_int", lambda m, f, **kw: m.sum(f, "s", "ival", "pid",
                                                           bounds=IBOUNDS, **kp, **kw),
                       every, S_DOMAIN)
    yield from crossed("sum_float", lambda m, f, **kw: m.sum(f, "s", "fval", "pid",
                                                             bounds=FBOUNDS,
                                                             max_partitions=3, **kw),
                       every, S_DOMAIN)
    yield from crossed("mean_int", lambda m, f, **kw: m.mean(f, "s", "ival", "pid",
                                                             bounds=IBOUNDS, **kp, **kw),
                       every, S_DOMAIN)
    yield from crossed("mean_float", lambda m, f, **kw: m.mean(f, "s", "fval", "pid",
                                                               bounds=FBOUNDS, **kp, **kw),
                       every, S_DOMAIN)
    yield from crossed("variance", lambda m, f, **kw: m.variance(f, "s", "fval", "pid",
                                                                 bounds=FBOUNDS, **kp, **kw),
                       every, S_DOMAIN)
    yield from crossed("std", lambda m, f, **kw: m.std(f, "s", "ival", "pid", bounds=IBOUNDS,
                                                       **kp, **kw),
                       every, S_DOMAIN)
    for pol in ("uniform", "frequent", "l2"):
        yield from crossed(f"privacy_id_count_{pol}",
                           lambda m, f, pol=pol, **kw: m.privacy_id_count(
                               f, "s", "pid", max_partitions=2, bounding=pol, **kw),
                           every, S_DOMAIN)
    yield from crossed("count_distinct", lambda m, f, **kw: m.count_distinct(
        f, "s", "item", "pid", max_partitions=2, max_per_partition=3, **kw), every, S_DOMAIN)
    yield from crossed("quantile_q", lambda m, f, **kw: m.quantile(
        f, "s", "fval", "pid", q=0.75, bounds=FBOUNDS, n_candidates=64, **kp, **kw),
        ("laplace",), S_DOMAIN)
    yield from crossed("quantile_list", lambda m, f, **kw: m.quantile(
        f, "s", "ival", "pid", q=[0.1, 0.5, 0.9], bounds=IBOUNDS, **kp, **kw),
        ("laplace",), S_DOMAIN)
    yield from crossed("median", lambda m, f, **kw: m.median(f, "s", "fval", "pid",
                                                             bounds=FBOUNDS, **kw),
                       ("laplace",), S_DOMAIN)
    yield from crossed("min", lambda m, f, **kw: m.min(f, "s", "ival", "pid", bounds=IBOUNDS,
                                                       **kp, **kw), ("laplace",), S_DOMAIN)
    yield from crossed("max", lambda m, f, **kw: m.max(f, "ik", "fval", "pid", bounds=FBOUNDS,
                                                       **kw), ("laplace",), IK_DOMAIN)
    yield from crossed("aggregate", lambda m, f, **kw: m.aggregate(
        f, "s", "pid", metrics=AGG_METRICS, bounds=AGG_BOUNDS, weights=AGG_WEIGHTS,
        candidates={"ival": 64}, **kp, **kw), every, S_DOMAIN)
    yield from crossed("aggregate_norank", lambda m, f, **kw: m.aggregate(
        f, "s", "pid", metrics=AGG_NORANK, bounds=AGG_BOUNDS, **kp, **kw), every, S_DOMAIN)
    # dpfast.dask has no bounds="auto" (a TypeError: bounds must be a pair), no
    # auto_bounds, topdown or histogram

    def run(call: Callable[[Any, Any], Any]) -> Callable[[], Any]:
        def go() -> Any:
            import dpfast.dask as dkd

            with _synchronous():
                return call(dkd, dask_frame())
        return go

    for sel in ("geometric", "gaussian", "weighted_gaussian", "laplace"):
        yield (f"dask.count_selection[{sel}]",
               run(lambda m, f, sel=sel: m.count(f, "s", "pid", epsilon=EPS, delta=DELTA,
                                                 max_partitions=3, selection=sel,
                                                 rng=rng())))
    yield ("dask.count_frequent[laplace,private]",
           run(lambda m, f: m.count(f, "s", "pid", epsilon=EPS, delta=DELTA,
                                    bounding="frequent", **kp, rng=rng())))
    yield ("dask.count_raw_key[laplace,public]", _with_raw_key(
        lambda key: run(lambda m, f: m.count(f, "s", "pid", epsilon=EPS, domain=S_DOMAIN,
                                             **kp, rng=key))()))
    yield ("dask.sum_float_raw_key[gaussian,private]", _with_raw_key(
        lambda key: run(lambda m, f: m.sum(f, "s", "fval", "pid", bounds=FBOUNDS,
                                           epsilon=EPS, delta=DELTA, noise="gaussian", **kp,
                                           rng=key))()))
    yield ("dask.count_two_keys[laplace,public]",
           run(lambda m, f: m.count(f, ["s", "ik"], "pid", epsilon=EPS, domain=TWO_DOMAIN,
                                    **kp, rng=rng())))
    yield ("dask.sum_two_keys[gaussian,private]",
           run(lambda m, f: m.sum(f, ["s", "ik"], "fval", "pid", bounds=FBOUNDS, epsilon=EPS,
                                  delta=DELTA, noise="gaussian", **kp, rng=rng())))


#: dask case -> the tables case it must equal bit for bit (dpfast.dask's promise)
def dask_twins(names: list[str]) -> dict[str, str]:
    out = {}
    for n in names:
        if n.startswith("dask."):
            twin = "tables." + n[len("dask."):]
            if twin in names:
                out[n] = twin
    return out


# ----------------------------------------------------------------------------- session
def _session_cases() -> Iterator[Case]:
    def run(call: Callable[[Any], Any]) -> Callable[[], Any]:
        def go() -> Any:
            from dpfast.session import Session

            with tempfile.TemporaryDirectory() as tmp:
                sess = Session(frame(), privacy_unit="pid",
                               bounds={"ival": IBOUNDS, "fval": FBOUNDS},
                               domains={"s": S_DOMAIN}, epsilon=50.0, delta=1e-5,
                               ledger=Path(tmp) / "ledger.db", rng=rng(),
                               max_partitions=2, max_per_partition=2)
                try:
                    return call(sess)
                finally:
                    sess.close()
        return go

    yield ("session.count[method,public]", run(lambda s: s.count("s", epsilon=EPS)))
    yield ("session.count[sql,public]",
           run(lambda s: s.sql("SELECT s, COUNT(*) AS n FROM data GROUP BY s", epsilon=EPS)))
    yield ("session.sum[method,private]",
           run(lambda s: s.sum("ival", "ik", epsilon=EPS, delta=DELTA)))
    yield ("session.sum[sql,private]",
           run(lambda s: s.sql("SELECT ik, SUM(ival) AS t FROM data GROUP BY ik",
                               epsilon=EPS, delta=DELTA)))
    yield ("session.mean[method,public,gaussian]",
           run(lambda s: s.mean("fval", "s", epsilon=EPS, delta=DELTA, noise="gaussian")))
    yield ("session.median[method,public]",
           run(lambda s: s.median("fval", "s", epsilon=EPS)))
    yield ("session.sql[count+mean,public]",
           run(lambda s: s.sql("SELECT s, COUNT(*) AS n, AVG(fval) AS m FROM data "
                               "GROUP BY s", epsilon=EPS)))


def cases() -> list[Case]:
    """Every golden case, in a fixed order (names are unique)."""
    out = list(_tables_cases()) + list(_dask_cases()) + list(_session_cases())
    names = [n for n, _ in out]
    assert len(set(names)) == len(names), "duplicate golden case names"
    return out


CASES: list[Case] = cases()
OUTPUTS = Path(__file__).with_name("outputs.json")
