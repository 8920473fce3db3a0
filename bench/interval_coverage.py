"""Measured coverage of dpfast's 95% intervals, per release kind (issue 39, part 4).

Every kind is repeated with fixed keys (the run is deterministic) over more trials than
``tests/test_coverage.py`` and printed as one markdown table: the measured coverage,
the trials, the binomial standard error and what the interval claims (calibrated:
nominal within sampling; conservative: at least nominal).  The count-mean sketches use
ONE fixed set of hash functions for every run (the server's situation) and also show
the random-hash variance they published before (``sk.variance`` with the candidates'
plug-in counts) for comparison.  Also measured: every metric of
:func:`dpfast.tables.aggregate` (and its published keys under private key selection),
``bounds="auto"`` releases given their released bounds, histograms, ``count_distinct``,
quantiles / min / max rank errors, the trimmed mean, the planned half-widths of
:func:`dpfast.epsilon_to_accuracy`, :func:`dpfast.tables.auto_bounds`' two per-bound
guarantees, the heavy hitters' and RAPPOR detection's family-wise error (least
favourable case) and the monitor's predicted standard error.  TopDown's intervals are
measured in the BLUE section of docs/benchmarks.md.

Run: .venv/bin/python bench/interval_coverage.py [step ...]   (about 10 minutes on one
core; name steps, e.g. ``aggregate planning``, to run only those)
(Not named ``coverage.py``: run as a script, or under ``pytest bench/``, that name would
shadow the ``coverage`` package that numba imports.)
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time

import numpy as np
from scipy import stats

import dpfast
import dpfast.local as L
from dpfast import tables as dpt

KEY = bytes(range(32))
Z = float(stats.norm.isf(0.025))
ROWS: list[tuple[str, float, int, str, float | None]] = []


def _key(r: int) -> bytes:
    return r.to_bytes(4, "little") + KEY[4:]


def _exact(kind: str, scale: float, granularity: float, w: float) -> float:
    """``P(|noise| <= w)`` of an exact law (what a calibrated interval of half-width ``w``
    covers: ``1 - alpha`` plus the law's mass at ``+-w``; the float grid laws' rounding of
    the value to the grid is below ``g / 2`` and ignored)."""
    t = scale / granularity
    wk = math.floor(w / granularity + 1e-6)  # the half-width in steps of the law
    if kind.endswith("laplace"):
        return 1.0 - 2.0 * math.exp(-(wk + 1) / t) / (1.0 + math.exp(-1.0 / t))
    if t > 1e4:  # the grid's discrete Gaussian of a huge scale: the continuous law
        return math.erf((wk + 0.5) / (t * math.sqrt(2.0)))
    k = np.arange(-(wk + int(40 * t) + 1), wk + int(40 * t) + 2, dtype=np.float64)
    pmf = np.exp(-k * k / (2 * t * t))
    return float(pmf[np.abs(k) <= wk].sum() / pmf.sum())


def _law_exact(law, alpha: float = 0.05, w: float | None = None) -> float:
    """:func:`_exact` of a release's :class:`~dpfast.tables._law.NoiseLaw` at its own
    half-width (or ``w``)."""
    return _exact(law.kind, law.scale, law.granularity,
                  law.halfwidth(alpha) if w is None else w)


def _row(kind: str, hits: np.ndarray, claim: str, exact: float | None = None) -> None:
    h = np.asarray(hits, bool).ravel()
    ROWS.append((kind, float(h.mean()), int(h.size), claim, exact))
    print(f"  {kind}: {h.mean():.4f} ({h.size} trials)"
          + ("" if exact is None else f", exact {exact:.4f}"), file=sys.stderr)


# ----------------------------------------------------------------------------- tables
def tables(reps: int = 5) -> None:
    d, rows = 20000, 100_000
    acc: dict[str, list[np.ndarray]] = {}
    exact: dict[str, float] = {}
    for r in range(reps):
        rng = np.random.default_rng(r)
        keys = rng.integers(0, d, rows)
        vals = rng.uniform(0.0, 10.0, rows)
        dom = np.arange(d)
        n = np.bincount(keys, minlength=d)
        s = np.bincount(keys, weights=vals, minlength=d)
        for noise, kw, kwm in [("laplace", {"epsilon": 0.05}, {"epsilon": 1.0}),
                               ("gaussian", {"epsilon": 0.2, "delta": 1e-6},
                                {"epsilon": 1.0, "delta": 1e-6})]:
            rel = dpt.count(keys, domain=dom, noise=noise, rng=dpfast.default_rng(_key(r)),
                            **kw)
            lo, hi = rel.confidence_interval(0.05)
            acc.setdefault(f"count, {noise}", []).append((lo <= n) & (n <= hi))
            exact[f"count, {noise}"] = _law_exact(rel.law)
            rel = dpt.sum(vals, keys, bounds=(0, 10), domain=dom, noise=noise,
                          rng=dpfast.default_rng(_key(r)), **kw)
            lo, hi = rel.confidence_interval(0.05)
            acc.setdefault(f"sum, {noise}", []).append((lo <= s) & (s <= hi))
            exact[f"sum, {noise}"] = _law_exact(rel.law)
            lo, hi = dpt.mean(vals, keys, bounds=(0, 10), domain=dom, noise=noise,
                              rng=dpfast.default_rng(_key(r)), **kwm).confidence_interval(0.05)
            m = s / np.maximum(n, 1)
            acc.setdefault(f"mean, {noise}", []).append(((lo <= m) & (m <= hi))[n > 0])
        acc.setdefault("median, rank error", []).append(_median(keys, vals, dom, r))
    for kind, hits in acc.items():
        claim = ("conservative (box of two intervals)" if kind.startswith("mean")
                 else "conservative (union bound)" if kind.startswith("median")
                 else "calibrated (exact noise law)")
        _row(f"tables: {kind}", np.concatenate(hits), claim, exact.get(kind))


def _median(keys: np.ndarray, vals: np.ndarray, dom: np.ndarray, r: int) -> np.ndarray:
    rel = dpt.median(vals, keys, bounds=(0, 10), domain=dom, epsilon=0.5,
                     rng=dpfast.default_rng(_key(r)))
    return _rank_ok(keys, vals, rel, rel.rank_error(0.05))


def _rank_ok(keys: np.ndarray, vals: np.ndarray, rel, err: int, q: float = 0.5,
             col: int = 0) -> np.ndarray:
    """Per published key with rows: the released grid point's rank distance to ``q n``
    is within ``d* + err`` (``d*``: the best grid point's), from one bincount of
    (key, slot) (as tests/test_coverage.py)."""
    grid = np.asarray(rel.grid, np.float64)
    m = grid.size
    g = np.asarray(rel.values, np.float64).reshape(len(rel), -1)[:, col]
    rk = np.asarray(rel.keys)
    i = np.searchsorted(grid, vals, side="left")
    slot = 2 * i + ((i < m) & (grid[np.minimum(i, m - 1)] == vals))
    nk = int(max(rk.max(), keys.max())) + 1
    cs = np.bincount(keys * (2 * m + 1) + slot, minlength=nk * (2 * m + 1)
                     ).reshape(nk, 2 * m + 1)[rk].cumsum(axis=1)
    a, b, n = cs[:, 0:2 * m:2], cs[:, 1:2 * m:2], cs[:, -1]
    t = q * n[:, None]
    dist = np.maximum(np.maximum(a - t, t - b), 0)
    got = dist[np.arange(rk.size), np.searchsorted(grid, g)]
    return (got <= dist.min(axis=1) + err)[n > 0]


# ----------------------------------------------------------------------------- local DP
def binary_rr() -> None:
    rng = np.random.default_rng(1)
    x = rng.random((300, 100_000)) < rng.uniform(0.05, 0.95, 100_000)
    est = L.randomized_response_estimate(L.randomized_response(x, 1.0, rng=KEY), 1.0,
                                         axis=0)
    _row("local: binary randomized response",
         np.abs(est.counts - x.sum(axis=0)) <= Z * est.std_error, "calibrated (normal)")


def pure(runs: int = 500) -> None:
    for name, proto, n in [("k-ary randomized response (k = 100)",
                            L.GeneralizedRandomizedResponse(100, 2.0), 20000),
                           ("OUE (k = 100)", L.OptimizedUnaryEncoding(100, 2.0), 5000),
                           ("OLH (k = 100)", L.OptimalLocalHashing(100, 2.0), 5000)]:
        rng = np.random.default_rng(2)
        w = 1.0 / np.arange(1, 101) ** 0.8
        hits = []
        for r in range(runs):
            vals = rng.choice(100, size=n, p=w / w.sum())
            est = L.Aggregator(proto).add(L.randomize(proto, vals, rng=_key(r))).estimate()
            true = np.bincount(vals, minlength=100)[np.array(est.items)]
            hits.append((est.low <= true) & (true <= est.high))
        _row(f"local: {name}", np.concatenate(hits), "calibrated (normal)")


def sketches() -> None:
    regimes = [("noise-dominated: eps 2, k 64, m 1024, 10^5 users, Zipf 1.1 over 10^4, "
                "top 1000 candidates", 2.0, 64, 1024, 100_000, 10_000, 1.1, 1000, 20),
               ("collision-dominated: eps 4, k 32, m 256, 4 * 10^4 users, Zipf 1.5 over 50",
                4.0, 32, 256, 40_000, 50, 1.5, 50, 400)]
    for cls, short in [(L.CountMeanSketch, "CMS"), (L.HadamardCountMeanSketch, "HCMS")]:
        for label, eps, k, m, n, items, zipf, ncand, runs in regimes:
            rng = np.random.default_rng(1)
            w = 1.0 / np.arange(1, items + 1) ** zipf
            vals = rng.choice(items, size=n, p=w / w.sum())
            true = np.bincount(vals, minlength=items)[:ncand]
            sk = cls(eps, k, m, hash_seed=7)
            new, old = [], []
            for r in range(runs):
                e = sk.estimate(sk.perturb(vals, rng=_key(r)), np.arange(ncand))
                err = np.abs(e.counts - true)
                new.append(err <= Z * e.std_error)
                c = np.clip(e.counts, 0, n)
                s2 = float(np.sum(c * c)) - c * c + max(0.0, n - float(c.sum()))
                old.append(err <= Z * np.sqrt([sk.variance(n, a, b) for a, b in zip(c, s2)]))
            per_item = np.mean(new, axis=0)
            _row(f"local: {short}, {label}", np.array(new),
                 f"conservative (fixed-hash MSE); worst item {per_item.min():.2f}")
            _row(f"local: {short}, same, random-hash variance (before)", np.array(old),
                 f"worst item {np.mean(old, axis=0).min():.2f}")


def mechanisms(reps: int = 5) -> None:
    from dpfast import mechanisms as M

    for name, mech in [("Laplace", M.LaplaceMechanism(0.05, 1.0)),
                       ("Gaussian", M.GaussianMechanism(0.2, 1e-6, sensitivity=1.0)),
                       ("discrete Laplace", M.DiscreteLaplaceMechanism(0.05)),
                       ("discrete Gaussian", M.DiscreteGaussianMechanism(0.2, 1e-6)),
                       ("snapping", M.SnappingMechanism(0.05, 1.0, 1000.0))]:
        x = np.random.default_rng(4).integers(-50, 50, 20000)
        hits = []
        for r in range(reps):
            arg = x if "discrete" in name else x.astype(np.float64)
            lo, hi = mech.confidence_interval(0.05, mech(arg, rng=_key(r)))
            hits.append((lo <= x) & (x <= hi))
        claim = ("conservative (rigorous bound, snap rounding added whole)"
                 if name == "snapping" else "calibrated (exact noise law)")
        ex = None if name == "snapping" else _exact(
            name.lower().replace(" ", "_"), getattr(mech, "sigma", getattr(mech, "scale", 0.0)),
            getattr(mech, "granularity", 1.0), float(mech.confidence_interval(0.05)))
        _row(f"mechanism: {name}", np.concatenate(hits), claim, ex)


def variance(reps: int = 3) -> None:
    hits = []
    for r in range(reps):
        rng = np.random.default_rng(r)
        d = 20000
        keys = rng.integers(0, d, 400_000)
        vals = rng.uniform(0.0, 10.0, keys.size)
        lo, hi = dpt.variance(vals, keys, bounds=(0, 10), domain=np.arange(d), epsilon=1.0,
                              rng=dpfast.default_rng(_key(r))).confidence_interval(0.05)
        n = np.bincount(keys, minlength=d)
        m1 = np.bincount(keys, weights=vals, minlength=d) / np.maximum(n, 1)
        m2 = np.bincount(keys, weights=vals * vals, minlength=d) / np.maximum(n, 1)
        tv = m2 - m1 * m1
        hits.append(((lo <= tv) & (tv <= hi))[n > 1])
    _row("tables: variance, laplace (epsilon only)", np.concatenate(hits),
         "conservative (stated)")


def rappor(runs: int = 300) -> None:
    rng = np.random.default_rng(3)
    n, items = 4000, 20
    vals = rng.choice(items, size=n)
    true = np.bincount(vals, minlength=items)
    rap = L.Rappor(64, 2, 8, f=0.0, p=0.25, q=0.75, hash_seed=5)
    ids = np.arange(n, dtype=np.int64)
    hits = []
    for r in range(runs):
        dec = rap.decode(rap.encode(vals, ids, _key(r), rng=_key(10_000 + r)),
                         list(range(items)))
        ok = np.isfinite(dec.std_errors)
        hits.append((np.abs(dec.counts - true) <= Z * dec.std_errors)[ok])
    _row("local: RAPPOR (64 bits, 2 hashes, 8 cohorts, selected candidates)",
         np.concatenate(hits), "approximate (regression, homoscedastic)")


# ----------------------------------------------------------------------------- many metrics
def aggregate(reps: int = 5) -> None:
    import pandas as pd

    d, rows = 20000, 100_000
    acc: dict[str, list[np.ndarray]] = {}
    exact: dict[str, float] = {}
    for r in range(reps):
        rng = np.random.default_rng(100 + r)
        keys = rng.integers(0, d, rows)
        x = rng.uniform(0.0, 10.0, rows)
        y = rng.integers(0, 11, rows)
        df = pd.DataFrame({"k": keys, "x": x, "y": y})
        n = np.bincount(keys, minlength=d)
        nn = np.maximum(n, 1)
        truth = {"count": n, "privacy_id_count": n}
        for c, v in (("x", x), ("y", y.astype(np.float64))):
            s1 = np.bincount(keys, weights=v, minlength=d)
            s2 = np.bincount(keys, weights=v * v, minlength=d)
            var = np.maximum(s2 / nn - (s1 / nn) ** 2, 0.0)
            truth.update({f"sum_{c}": s1, f"mean_{c}": s1 / nn, f"variance_{c}": var,
                          f"std_{c}": np.sqrt(var)})
        for noise, kw in (("laplace", {}), ("gaussian", {"delta": 1e-6})):
            rel = dpt.aggregate(df, "k", metrics=[
                "count", "privacy_id_count", ("sum", "x"), ("mean", "x"), ("variance", "x"),
                ("std", "x"), ("sum", "y"), ("mean", "y"), ("median", "x")],
                bounds={"x": (0, 10), "y": (0, 10)}, domain=np.arange(d), noise=noise,
                epsilon=1.0, rng=dpfast.default_rng(_key(r)), **kw)
            for name in rel.metrics:
                if name == "median_x":
                    med = rel[name]
                    acc.setdefault(f"median x, rank error, {noise}", []).append(
                        _rank_ok(keys, x, med, med.rank_error(0.05)))
                    continue
                lo, hi = rel.confidence_interval(name, 0.05)
                if name.startswith(("count", "privacy", "sum")):
                    exact[f"{name}, {noise}"] = _law_exact(rel[name].law)
                t = truth[name]
                tol = 1e-9 * np.maximum(1.0, np.abs(t))
                ok = (lo <= t + tol) & (t - tol <= hi)
                least = 1 if name.startswith(("variance", "std")) else (
                    0 if name.startswith("mean") else -1)
                acc.setdefault(f"{name}, {noise}", []).append(ok[n > least])
        # private key selection: the published keys
        kk = np.repeat(np.arange(10_000), rng.integers(1, 80, 10_000))
        xx = rng.uniform(0.0, 10.0, kk.size)
        rel = dpt.aggregate(pd.DataFrame({"k": kk, "x": xx}), "k",
                            metrics=["count", ("sum", "x")], bounds={"x": (0, 10)},
                            epsilon=1.0, delta=1e-6, rng=dpfast.default_rng(_key(r)))
        k = np.asarray(rel.keys)
        for name, t in (("count", np.bincount(kk)[k]),
                        ("sum_x", np.bincount(kk, weights=xx)[k])):
            lo, hi = rel.confidence_interval(name)
            acc.setdefault(f"{name}, private key selection (published keys)", []).append(
                (lo <= t) & (t <= hi))
            exact[f"{name}, private key selection (published keys)"] = _law_exact(
                rel[name].law)
    for kind, hits in acc.items():
        claim = ("conservative (union bound)" if kind.startswith("median")
                 else "conservative (box of two intervals)" if kind.startswith("mean")
                 else "conservative (box of three intervals)"
                 if kind.startswith(("variance", "std"))
                 else "calibrated (exact noise law)")
        _row(f"aggregate: {kind}", np.concatenate(hits), claim, exact.get(kind))


def auto_release(reps: int = 5) -> None:
    d = 20000
    acc: dict[str, list[np.ndarray]] = {}
    for r in range(reps):
        rng = np.random.default_rng(200 + r)
        keys = rng.integers(0, d, 100_000)
        x = rng.normal(50.0, 10.0, keys.size)
        n = np.bincount(keys, minlength=d)
        for stat in ("sum", "mean"):
            rel = getattr(dpt, stat)(x, keys, bounds="auto", domain=np.arange(d),
                                     epsilon=1.0, rng=dpfast.default_rng(_key(r)))
            lo_b, hi_b = rel.bounds
            t = np.bincount(keys, weights=np.clip(x, lo_b, hi_b), minlength=d)
            if stat == "mean":
                t = t / np.maximum(n, 1)
            lo, hi = rel.confidence_interval(0.05)
            acc.setdefault(stat, []).append(((lo <= t) & (t <= hi))[n > 0])
            if stat == "sum":
                ex = _law_exact(rel.law)
    _row("tables: sum, bounds='auto' (given the released bounds)",
         np.concatenate(acc["sum"]), "calibrated (exact noise law)", ex)
    _row("tables: mean, bounds='auto' (given the released bounds)",
         np.concatenate(acc["mean"]), "conservative (box of two intervals)")


def other_tables(reps: int = 5) -> None:
    from dpfast.tables import run, statistics
    from dpfast.tables.histogram import histogram
    from dpfast.tables.statistics import trimmed

    d = 20000
    dom = np.arange(d)
    acc: dict[str, list[np.ndarray]] = {}
    exact: dict[str, float] = {}
    for r in range(reps):
        rng = np.random.default_rng(300 + r)
        a = rng.integers(0, d, 100_000).astype(np.float64) + 0.5
        for nonneg in (False, True):
            _, edges, rel = histogram(a, bins=d, range=(0, d), epsilon=0.05,
                                      nonnegative=nonneg, return_release=True,
                                      rng=dpfast.default_rng(_key(r)))
            t = np.histogram(a, bins=edges)[0]
            lo, hi = rel.confidence_interval(0.05)
            acc.setdefault(f"histogram{', nonnegative' if nonneg else ''}", []).append(
                (lo <= t) & (t <= hi))
            exact["histogram"] = _law_exact(rel.law)
        keys = rng.integers(0, d, 100_000)
        vals = rng.uniform(0.0, 10.0, keys.size)
        v = rng.integers(0, 3, keys.size)
        rel = dpt.count_distinct(v, keys, domain=dom, epsilon=0.1,
                                 rng=dpfast.default_rng(_key(r)))
        t = np.bincount(np.unique(keys * 3 + v) // 3, minlength=d)
        lo, hi = rel.confidence_interval(0.05)
        acc.setdefault("count_distinct", []).append((lo <= t) & (t <= hi))
        exact["count_distinct"] = _law_exact(rel.law)
        rel = dpt.quantile(vals, keys, q=[0.1, 0.9], bounds=(0, 10), domain=dom,
                           epsilon=1.0, rng=dpfast.default_rng(_key(r)))
        for col, q in enumerate((0.1, 0.9)):
            acc.setdefault(f"quantile q = {q}, rank error", []).append(
                _rank_ok(keys, vals, rel, rel.rank_error(0.05, q), q, col))
        for fn, q in ((dpt.min, 0.0), (dpt.max, 1.0)):
            rel = fn(vals, keys, bounds=(0, 10), domain=dom, epsilon=1.0,
                     rng=dpfast.default_rng(_key(r)))
            acc.setdefault(f"{fn.__name__}, rank error", []).append(
                _rank_ok(keys, vals, rel, rel.rank_error(0.05), q))
        # trimmed mean: the noiseless phase-2 estimate given the released clamps
        keys = rng.integers(0, d, 200_000)
        vals = rng.uniform(0.0, 10.0, keys.size)
        spec = statistics.get("trimmed_mean").make_spec(
            params={"trim": 0.1}, epsilon=2.0, bounds=(0.0, 10.0), domain=dom)
        grid = statistics.get("trimmed_mean").plan(
            spec, run.Rows(keys, None, vals, domain=dom)).rank.grid
        rel = dpt.trimmed_mean(vals, keys, bounds=(0.0, 10.0), epsilon=2.0, domain=dom,
                               trim=0.1, rng=dpfast.default_rng(_key(r)))
        ia, ib = rel._interval.a, rel._interval.b
        a_, b_ = ia[keys], ib[keys]
        p = np.searchsorted(grid, vals)
        top = grid.size - 1
        rep = np.where(grid[np.minimum(p, top)] == vals, vals,
                       (grid[np.maximum(p - 1, 0)] + grid[np.minimum(p, top)]) / 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            w = np.where(b_ > a_, np.floor(trimmed.W * (np.clip(rep, a_, b_) - a_)
                                           / (b_ - a_)), 0.0)
        n = np.bincount(keys, minlength=d)
        est = ia + (ib - ia) * np.bincount(keys, weights=w, minlength=d) / (
            trimmed.W * np.maximum(n, 1))
        lo, hi = rel.confidence_interval(0.05)
        acc.setdefault("trimmed mean (given the released clamps)", []).append(
            ((lo - 1e-9 <= est) & (est <= hi + 1e-9))[n > 0])
    for kind, hits in acc.items():
        claim = ("conservative (union bound)" if "rank error" in kind
                 else "conservative (box of two intervals)" if kind.startswith("trimmed")
                 else "calibrated (exact noise law)" if kind != "histogram, nonnegative"
                 else "calibrated; the clipping only moves towards the truth")
        _row(f"tables: {kind}", np.concatenate(hits), claim,
             exact.get(kind) if kind != "histogram, nonnegative" else None)


# ----------------------------------------------------------------------------- planning
def planning(reps: int = 5) -> None:
    from dpfast import mechanisms as M

    d = people = 20000
    for mech, delta, eps, eps1 in (("discrete_laplace", 0.0, 0.7, 0.12),
                                   ("laplace", 0.0, 0.7, 0.12),
                                   ("discrete_gaussian", 1e-6, 1.2, 0.33),
                                   ("gaussian", 1e-6, 1.2, 0.33)):
        kw = {"mechanism": mech, "delta": delta}
        w = dpfast.epsilon_to_accuracy(eps, 0.05, max_partitions=3, max_per_partition=2, **kw)
        w1 = dpfast.epsilon_to_accuracy(eps1, 0.05, **kw)
        if mech == "discrete_laplace":
            m = M.DiscreteLaplaceMechanism(eps1)
        elif mech == "laplace":
            m = M.LaplaceMechanism(eps1, 1.0)
        elif mech == "discrete_gaussian":
            m = M.DiscreteGaussianMechanism(epsilon=eps1, delta=delta, sensitivity=1,
                                            max_changed=1)
        else:
            m = M.GaussianMechanism(eps1, delta, sensitivity=1.0)
        table, single = [], []
        for r in range(reps):
            rng = np.random.default_rng(400 + r)
            ids = np.repeat(np.arange(people), 6)
            base = rng.integers(0, d, people)[:, None]
            keys = np.repeat((base + np.arange(3)) % d, 2, axis=1).ravel()
            common = {"domain": np.arange(d), "epsilon": eps, "max_partitions": 3,
                      "max_per_partition": 2, "rng": dpfast.default_rng(_key(r)),
                      "noise": "laplace" if mech.endswith("laplace") else "gaussian",
                      **({"delta": delta} if delta else {})}
            if mech.startswith("discrete"):
                rel = dpt.count(keys, ids, **common)
                t = np.bincount(keys, minlength=d)
            else:
                x = rng.uniform(0.0, 1.0, keys.size)
                rel = dpt.sum(x, keys, ids, bounds=(0, 1), **common)
                t = np.bincount(keys, weights=x, minlength=d)
            table.append(np.abs(rel.values - t) <= w)
            ex_t = _law_exact(rel.law, w=w)
            x = rng.integers(-50, 50, 20000)
            out = m(x if mech.startswith("discrete") else x.astype(np.float64), rng=_key(r))
            single.append(np.abs(np.asarray(out, np.float64) - x) <= w1)
        _row(f"planning: {mech}, table release (3 keys x 2 rows; w = {w:.4g})",
             np.concatenate(table), "calibrated (exact law's smallest w)", ex_t)
        _row(f"planning: {mech}, single query (w = {w1:.4g})", np.concatenate(single),
             "calibrated (exact law's smallest w)",
             _exact(mech, getattr(m, "sigma", getattr(m, "scale", 0.0)),
                    getattr(m, "granularity", 1.0), w1))


# ----------------------------------------------------------------------------- autobounds
def autobounds(runs: int = 2000) -> None:
    from fractions import Fraction

    from dpfast.tables import _bounds_em
    from dpfast.tables.autobounds import auto_bounds, default_grid

    x = np.random.default_rng(9).normal(50.0, 10.0, 2000)
    g = default_grid(False)
    xs = np.sort(x)
    below, at_most = np.searchsorted(xs, g, "left"), np.searchsorted(xs, g, "right")
    ranks_ok, steps_ok = [], []
    for r in range(runs):
        ab = auto_bounds(x, epsilon=1.0, rng=dpfast.default_rng(_key(r)))
        idx = np.flatnonzero(_bounds_em.kept(g, ab.scale[1]))
        gk = g[idx]
        jc = int(np.searchsorted(gk, ab.centre[0]))
        p = np.arange(idx.size)
        steps = np.maximum(np.maximum(jc - p, p - (jc + 1)), 0)
        err, j, s = ab.rank_error(0.05), ab.steps_beyond(0.05), ab.penalty
        for q, v in zip(ab.quantiles, (ab.lo, ab.hi), strict=True):
            t = (Fraction(q).numerator * x.size) // Fraction(q).denominator
            dist = np.maximum(np.maximum(below[idx] - t, t - at_most[idx]), 0)
            best = np.flatnonzero(dist == dist.min())
            star = best[np.argmin(steps[best])]
            b = int(np.searchsorted(gk, v))
            ranks_ok.append(dist[b] <= dist[star] + err + s * max(steps[star] - steps[b], 0))
            steps_ok.append(steps[b] <= steps[star] + j)
    _row("auto_bounds: rank_error (per bound; N(50, 10), 2000 rows, epsilon 1)",
         np.array(ranks_ok), "conservative (union bound, base measure)")
    _row("auto_bounds: steps_beyond (per bound)", np.array(steps_ok),
         "conservative (geometric tail bound)")


# ----------------------------------------------------------------------------- local DP, more
def heavy_hitters(runs: int = 10_000) -> None:
    k, m0 = 10, 100
    vals = np.repeat(np.arange(k), m0)
    for name, proto in (("k-ary RR", L.GeneralizedRandomizedResponse(k, 1.0)),
                        ("OUE", L.OptimizedUnaryEncoding(k, 1.0)),
                        ("OLH", L.OptimalLocalHashing(k, 1.0))):
        clean = [not L.Aggregator(proto).add(L.randomize(proto, vals, rng=_key(r)))
                 .heavy_hitters(min_count=m0) for r in range(runs)]
        _row(f"local: heavy_hitters, {name} (no false item; 10 items all at min_count)",
             np.array(clean), "conservative (Bonferroni, family-wise)")


def rappor_detection(runs: int = 300) -> None:
    rng = np.random.default_rng(3)
    n, items = 4000, 20
    vals = rng.choice(items, size=n)
    rap = L.Rappor(64, 2, 8, f=0.0, p=0.25, q=0.75, hash_seed=5)
    ids = np.arange(n, dtype=np.int64)
    clean = []
    for r in range(runs):
        dec = rap.decode(rap.encode(vals, ids, _key(r), rng=_key(10_000 + r)),
                         list(range(2 * items)))  # 20 held, 20 held by nobody
        clean.append(not dec.detected[items:].any())
    _row("local: RAPPOR detected (no absent candidate; 20 held + 20 absent)",
         np.array(clean), "conservative (Bonferroni, family-wise)")


def predictions(runs: int = 500) -> None:
    for name, proto in (("k-ary RR", L.GeneralizedRandomizedResponse(100, 2.0)),
                        ("OUE", L.OptimizedUnaryEncoding(100, 2.0)),
                        ("OLH", L.OptimalLocalHashing(100, 2.0))):
        rng = np.random.default_rng(11)
        w = 1.0 / np.arange(1, 101) ** 0.8
        hits = []
        for r in range(runs):
            v1 = rng.choice(100, size=2500, p=w / w.sum())
            v2 = rng.choice(100, size=10_000, p=w / w.sum())
            e1 = L.Aggregator(proto).add(L.randomize(proto, v1, rng=_key(r))).estimate()
            e2 = L.Aggregator(proto).add(L.randomize(proto, v2, rng=_key(10_000 + r))
                                         ).estimate()
            f2 = np.bincount(v2, minlength=100)[np.array(e2.items)] / 10_000
            hits.append(np.abs(e2.frequencies - f2) <= Z * e1.std_error_at(10_000))
        _row(f"local: predicted std error, {name} (std_error_at 10^4 from 2500 reports)",
             np.array(hits), "calibrated (normal, plug-in)")


def main() -> None:
    t0 = time.time()
    only = set(sys.argv[1:])
    for step in (tables, variance, aggregate, auto_release, other_tables, planning,
                 autobounds, mechanisms, binary_rr, pure, sketches, rappor, heavy_hitters,
                 rappor_detection, predictions):
        if not only or step.__name__ in only:
            step()
    host = f"{platform.node() or 'host'}, {platform.machine()}, {os.cpu_count()} CPUs"
    print(f"Coverage of 95% intervals; `python bench/interval_coverage.py`; {host}; "
          f"{time.time() - t0:.0f} s\n")
    print("| release kind | measured coverage | trials | ± s.e. | exact law's | claim |")
    print("|---|---|---|---|---|---|")
    for kind, cov, n, claim, ex in ROWS:
        se = math.sqrt(0.95 * 0.05 / n)
        exs = "" if ex is None else f"{ex:.4f}"
        print(f"| {kind} | {cov:.4f} | {n} | {se:.4f} | {exs} | {claim} |")
    print("| TopDown | — see the BLUE section | | | | |")


if __name__ == "__main__":
    main()
