"""Per-key private medians (issue 23): dpfast.tables.median vs an insecure numpy baseline
and vs diffprivlib, ratios measured in the same run.

* ``median`` per key on 10^6 rows / 10^4 keys and 10^7 rows / 10^5 keys (public domain,
  one row per person, ε = 1, 256-point grid on the bounds) against the insecure numpy
  pipeline doing the ordinary steps: clamp, sort by (key, value) once (``np.lexsort``),
  take each group's middle element -- no privacy at all.  Ratio = numpy time / dpfast time.
* against diffprivlib's ``tools.median`` called once per key (its only per-group path),
  on 10^5 rows / 10^3 keys.  Ratio = diffprivlib time / dpfast time.
* against OpenDP's ``then_private_quantile`` (the same exponential mechanism on the same
  grid), one measurement call per key, same data size.  Ratio = OpenDP time / dpfast time.

Set ``DPFAST_BENCH_ROWS`` to scale the largest case down on a small machine.
"""

from __future__ import annotations

import os
import warnings

import _timing as _t
import numpy as np
import pytest

from dpfast import default_rng
from dpfast import tables as dpt

KEY = bytes(range(32))
EPS = 1.0
LO, HI = 0.0, 100.0


def _records(rows: int, n_keys: int, seed: int = 0):
    r = np.random.default_rng(seed)
    keys = r.integers(0, n_keys, rows)
    vals = r.normal(50.0, 15.0, rows) + keys % 7
    return keys.astype(np.int64), vals


def numpy_medians(keys: np.ndarray, vals: np.ndarray, n_keys: int) -> np.ndarray:
    """The insecure baseline: exact per-key medians by one sort."""
    v = np.clip(vals, LO, HI)
    order = np.lexsort((v, keys))
    sk, sv = keys[order], v[order]
    k = np.arange(n_keys)
    st = np.searchsorted(sk, k, "left")
    en = np.searchsorted(sk, k, "right")
    n = np.maximum(en - st, 1)
    return (sv[np.minimum(st + (n - 1) // 2, sv.shape[0] - 1)]
            + sv[np.minimum(st + n // 2, sv.shape[0] - 1)]) / 2


@pytest.mark.parametrize("rows,n_keys", [(10 ** 6, 10 ** 4), (10 ** 7, 10 ** 5)])
def test_median_vs_numpy(benchmark, report, rows: int, n_keys: int) -> None:
    cap = int(os.environ.get("DPFAST_BENCH_ROWS", 10 ** 7))
    if rows > cap:
        rows, n_keys = cap, max(1, cap // 100)
    keys, vals = _records(rows, n_keys)
    dom = np.arange(n_keys)
    gen = default_rng(KEY)

    def ours():
        return dpt.median(vals, keys, bounds=(LO, HI), epsilon=EPS, domain=dom, rng=gen)

    def naive():
        return numpy_medians(keys, vals, n_keys)

    rel = ours()  # compile / load kernels
    truth = naive()
    step = (HI - LO) / 255
    assert np.median(np.abs(rel.values - truth)) < 2 * step + 1.0  # the same table
    _p = _t.pairs([ours, naive], repeat=5)  # medians of interleaved rounds
    t_ours, t_np = _p.median(0), _p.median(1)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    ratio = t_np / t_ours
    benchmark.extra_info.update({"dpfast_s": t_ours, "numpy_s": t_np, "ratio": ratio})
    report(f"tables.median {rows:.0e} rows / {n_keys:.0e} keys",
           f"dpfast {t_ours:.3f} s vs insecure numpy sort {t_np:.3f} s: {ratio:.2f}x")


def test_median_vs_diffprivlib(benchmark, report) -> None:
    tools = pytest.importorskip("diffprivlib.tools")
    rows, n_keys = 10 ** 5, 10 ** 3
    keys, vals = _records(rows, n_keys, seed=1)
    dom = np.arange(n_keys)
    gen = default_rng(KEY)
    order = np.argsort(keys, kind="stable")
    groups = np.split(vals[order], np.searchsorted(keys[order], dom[1:]))

    def ours():
        return dpt.median(vals, keys, bounds=(LO, HI), epsilon=EPS, domain=dom, rng=gen)

    def theirs():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return [tools.median(g, epsilon=EPS, bounds=(LO, HI)) for g in groups]

    ours()
    t_dpl = _t.median_time(theirs, 1)
    t_ours = _t.median_time(ours, 5)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    ratio = t_dpl / t_ours
    benchmark.extra_info.update({"dpfast_s": t_ours, "diffprivlib_s": t_dpl, "ratio": ratio})
    report("tables.median 1e5 rows / 1e3 keys vs diffprivlib",
           f"dpfast {t_ours:.3f} s vs diffprivlib tools.median per key {t_dpl:.2f} s: "
           f"{ratio:.0f}x")


def test_median_vs_opendp(benchmark, report) -> None:
    """OpenDP's exponential-mechanism quantile on the same 256-point grid, one measurement
    per key (its per-group path without Polars), 10^5 rows / 10^3 keys, ε = 1 each."""
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    rows, n_keys = 10 ** 5, 10 ** 3
    keys, vals = _records(rows, n_keys, seed=2)
    dom = np.arange(n_keys)
    gen = default_rng(KEY)
    order = np.argsort(keys, kind="stable")
    groups = [g.tolist() for g in np.split(vals[order], np.searchsorted(keys[order], dom[1:]))]
    cands = np.linspace(LO, HI, 256).tolist()
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance()
    meas = space >> dp.t.then_clamp((LO, HI)) >> dp.m.then_private_quantile(
        dp.max_divergence(), candidates=cands, alpha=0.5, scale=1.0)
    assert meas.map(1) <= EPS

    def ours():
        return dpt.median(vals, keys, bounds=(LO, HI), epsilon=EPS, domain=dom, rng=gen)

    def theirs():
        return [meas(g) for g in groups]

    ours()
    t_odp = _t.median_time(theirs, 1)
    t_ours = _t.median_time(ours, 5)
    benchmark.pedantic(ours, rounds=1, iterations=1)
    ratio = t_odp / t_ours
    benchmark.extra_info.update({"dpfast_s": t_ours, "opendp_s": t_odp, "ratio": ratio})
    report("tables.median 1e5 rows / 1e3 keys vs OpenDP",
           f"dpfast {t_ours:.3f} s vs OpenDP private_quantile per key {t_odp:.2f} s: "
           f"{ratio:.0f}x")
