"""Contribution bounds chosen for the user (issue 39, part 3): ``dpfast.tables.tune``,
``aggregate(..., max_partitions="auto")`` and ``dpfast tune``.

Exact formulas for the predictions (public-sample path: no noise), one charge and the
composed event for "auto", refusals before any charge, the CLI, and the recommendation's
measured gain on a heavy-tailed set at a fixed key."""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpfast
from dpfast import tables
from dpfast._core.rounding import float_down, float_up
from dpfast.accounting import PureDpAccountant
from dpfast.accounting import events as ev
from dpfast.tables import (
    _quantile_em,
    _tune_predict,
    _tune_summary,
    _tune_values,
    bounding,
    multi,
    statistics,
)
from dpfast.tables import plan as _plan
from dpfast.tables import run as _run
from dpfast.tables.autobounds import split
from tests.helpers import KEY


def _people(seed: int = 0, n_people: int = 400, n_keys: int = 8) -> pd.DataFrame:
    """A small table: person i holds 1..n_keys keys with 1..6 rows each."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_people):
        held = rng.choice(n_keys, size=int(rng.integers(1, n_keys + 1)), replace=False)
        for k in held:
            for _ in range(int(rng.integers(1, 7))):
                rows.append((p, f"k{k}", float(rng.normal(50, 10))))
    return pd.DataFrame(rows, columns=["person", "key", "x"])


def _heavy(seed: int = 3) -> pd.DataFrame:
    """Heavy-tailed contributions: Zipf number of keys and of rows per key."""
    rng = np.random.default_rng(seed)
    n_people, n_keys = 3000, 20
    l0 = np.minimum(rng.zipf(1.6, n_people), n_keys)
    rows = []
    for p in range(n_people):
        for k in rng.choice(n_keys, size=int(l0[p]), replace=False):
            r = int(min(rng.zipf(1.8), 200))
            rows += [(p, int(k))] * r
    return pd.DataFrame(rows, columns=["person", "key"])


def test_public_sample_predictions_are_the_exact_formulas_and_charge_nothing() -> None:
    df = _people()
    domain = [f"k{j}" for j in range(8)]
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    res = tables.tune(df, by="key", privacy_id="person",
                      metrics=["count", "privacy_id_count", ("mean", "x")], epsilon=1.0,
                      bounds={"x": (0.0, 100.0)}, domain=domain, public_sample=df,
                      max_partitions=[2, 5], max_per_partition=[3], budget=budget)
    assert budget.history() == [] and res.event is None and res.epsilon == 0.0
    assert res.release_epsilon == 1.0
    # the exact formulas, by hand
    pair = df.groupby(["person", "key"]).size()
    l0 = pair.groupby(level=0).size()
    w = 1.0 / l0.reindex(pair.index.get_level_values(0)).to_numpy()
    r = pair.to_numpy()
    for cand in res.candidates:
        k, c = cand.max_partitions, cand.max_per_partition
        pairs_k = float(np.minimum(l0.to_numpy(), k).sum())
        per_pair = float((np.minimum(r, c) * w).sum() / w.sum())
        kept = pairs_k * per_pair
        all_rows = float(l0.sum()) * float((r * w).sum() / w.sum())
        spec = multi.aggregate_spec(
            ["count", "privacy_id_count", ("mean", "x")], statistics.metric_parts(),
            bounds={"x": (0.0, 100.0)}, weights=None, candidates=None,
            available=list(df.columns), by=("key",), privacy_unit="person", epsilon=1.0,
            max_partitions=k, max_per_partition=c, domain=domain)
        rows = _run.Rows(df["key"], df["person"], columns={"x": df["x"]}, domain=domain)
        parts = multi.plan_of(spec, rows, statistics.metric_parts()).metrics.parts
        var_n = parts["count"].part.law.std() ** 2
        var_s = parts["csum:x"].part.law.std() ** 2
        p = cand.predictions
        assert p["count"].bias == pytest.approx(-(all_rows - kept) / 8, rel=1e-12)
        assert p["count"].variance == pytest.approx(var_n, rel=1e-12)
        assert p["privacy_id_count"].bias == pytest.approx(
            -(l0.sum() - pairs_k) / 8, rel=1e-12)
        assert p["privacy_id_count"].variance == pytest.approx(
            parts["ids"].part.law.std() ** 2, rel=1e-12)
        # each key by its own size a = rows / mean rows (the sample's), then the mean
        a = df.groupby("key").size().reindex(domain).to_numpy(float)
        a = a / a.mean()
        n = np.maximum(a * kept / 8, 1.0)  # kept and all rows of each key
        full = np.maximum(a * all_rows / 8, n)
        v = (var_s / 4 + 25.0 ** 2 * var_n) / n ** 2 + 25.0 ** 2 * (1 / n - 1 / full)
        cap = 2.5 * 25.0 ** 2  # a drowned key's (the midpoint or a clamped bound)
        assert p["mean_x"].bias == 0.0 and p["mean_x"].unit == "value"
        assert p["mean_x"].variance == pytest.approx(  # noise, then sampling (sd = 100/4)
            float((v * cap / (v + cap)).mean()), rel=1e-12)
        assert p["count"].error == pytest.approx(math.hypot(p["count"].bias,
                                                            math.sqrt(var_n)))
    best = min(res.candidates, key=lambda t: t.score)
    assert (res.max_partitions, res.max_per_partition) == (best.max_partitions,
                                                           best.max_per_partition)
    assert res.params == {"max_partitions": res.max_partitions,
                          "max_per_partition": res.max_per_partition,
                          "bounds": {"x": (0.0, 100.0)}}
    table = res.to_pandas()
    assert len(table) == 2 and {"count_error", "count_bias", "mean_x_std"} <= set(table)


def test_private_tune_charges_its_share_once_with_its_event() -> None:
    df = _people(1)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    res = tables.tune(df, by="key", privacy_id="person", metrics=["count", ("median", "x")],
                      epsilon=1.0, share=0.1, bounds={"x": (0.0, 100.0)},
                      domain=[f"k{j}" for j in range(8)], rng=dpfast.default_rng(KEY),
                      budget=budget, note="t")
    h = budget.history()
    assert len(h) == 1 and h[0].event == res.event
    assert res.event == ev.with_neighbouring(ev.Epsilon(res.epsilon), ev.ADD_REMOVE)
    assert res.epsilon <= 0.1 and Fraction(res.epsilon) + Fraction(res.release_epsilon) <= 1
    assert res.summary.private and res.summary.n_keys == 8.0
    again = tables.tune(df, by="key", privacy_id="person", metrics=["count", ("median", "x")],
                        epsilon=1.0, share=0.1, bounds={"x": (0.0, 100.0)},
                        domain=[f"k{j}" for j in range(8)], rng=dpfast.default_rng(KEY))
    np.testing.assert_array_equal(again.summary.l0_weights, res.summary.l0_weights)


def test_private_tune_without_bounds_chooses_them_from_a_value_histogram() -> None:
    df = _people(2)
    res = tables.tune(df, by="key", privacy_id="person", metrics=[("mean", "x")],
                      epsilon=4.0, share=0.5, rng=KEY, domain=[f"k{j}" for j in range(8)])
    eps_t = 2.0
    first, second = res.event.events  # the summary, then the value histogram of x
    # two parts for the summary, one for the histogram of x: 3 parts of eps_t, rounded down
    assert first == ev.with_neighbouring(ev.Epsilon(float_down(Fraction(4, 3))),
                                         ev.ADD_REMOVE)
    assert second == ev.with_neighbouring(ev.Epsilon(float_down(Fraction(2, 3))),
                                          ev.ADD_REMOVE)
    assert PureDpAccountant().compose(res.event).get_epsilon(0.0) <= eps_t
    values = res.values["x"]
    m = values.grid.shape[0]
    assert values.private and values.floor == pytest.approx(  # the upper floor
        float_up(Fraction(1) / Fraction(float_down(Fraction(2, 3))))
        * math.log(m / _tune_values.BETA))
    lo, hi = res.bounds["x"]
    assert lo < hi and any(c.bounds["x"] == (lo, hi) for c in res.candidates)
    assert 0.0 <= res.beyond["x"] < 0.5 and lo <= 50.0 <= hi  # x ~ N(50, 10)


def test_summary_histograms_count_one_unit_per_person() -> None:
    df = _people(4, n_people=50)
    data, _ = tables._inputs._validate(df["key"], df["person"], None, None, None)
    ex = _tune_summary.exact(data, np.zeros(8, np.uint32))
    assert ex.l0.sum() == ex.linf.sum() == 50  # one unit per person in each
    l0 = df.groupby("person")["key"].nunique().to_numpy()
    expect = np.bincount(np.searchsorted(_tune_summary.EDGES, l0, side="right") - 1,
                         minlength=_tune_summary.EDGES.shape[0])
    np.testing.assert_array_equal(ex.l0, expect)
    assert 1 <= ex.keys <= 8


def test_auto_is_one_charge_of_the_composed_event_known_before_the_rows() -> None:
    df = _people(5)
    domain = [f"k{j}" for j in range(8)]
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    kw = dict(by="key", privacy_id="person", metrics=["count", ("mean", "x")], epsilon=1.0,
              bounds={"x": (0.0, 100.0)}, domain=domain, max_partitions="auto",
              max_per_partition="auto")
    rel = tables.aggregate(df, **kw, rng=KEY, budget=budget, note="auto")
    h = budget.history()
    assert len(h) == 1 and h[0].event == rel.event
    eps_h, eps_rest = split(1.0, multi.TUNE_SHARE * 2)  # the summary's two parts
    assert rel.event == ev.with_neighbouring(
        ev.Composed((ev.Epsilon(eps_h), ev.Epsilon(eps_rest))), ev.ADD_REMOVE)
    assert PureDpAccountant().compose(rel.event).get_epsilon(0.0) <= 1.0
    assert all(m.event == rel.event for m in rel.metrics.values())
    t = rel.tuning
    assert t.event == rel.event and t.epsilon == eps_h
    assert rel["count"].sensitivity["max_partitions"] == t.max_partitions
    # the event is the plan's, made from the spec and the schema: no row is read
    spec = multi.aggregate_spec(
        kw["metrics"], statistics.metric_parts(), bounds=kw["bounds"], weights=None,
        candidates=None, available=list(df.columns), by=("key",), privacy_unit="person",
        epsilon=1.0, max_partitions="auto", max_per_partition="auto", domain=domain)
    empty = _run.Rows(np.array([], object), np.array([], np.int64),
                      columns={"x": np.array([], np.float64)}, domain=domain)
    assert _plan.plan(spec, empty).event == rel.event
    assert spec.query_id() != dataclasses.replace(spec, options=tuple(
        o for o in spec.options if o[0] != "tune")).query_id()


def test_auto_with_a_fixed_max_per_partition_keeps_it() -> None:
    df = _people(6)
    rel = tables.aggregate(df, by="key", privacy_id="person", metrics=["count"],
                           epsilon=1.0, domain=[f"k{j}" for j in range(8)],
                           max_partitions="auto", max_per_partition=2, rng=KEY)
    assert rel.tuning.max_per_partition == 2
    assert {c.max_per_partition for c in rel.tuning.candidates} == {2}


@pytest.mark.parametrize("kw, exc, words", [
    ({"max_partitions": "all"}, TypeError, "max_partitions"),
    ({"max_partitions": "auto", "rho": 0.5, "epsilon": None}, ValueError, "needs epsilon"),
    ({"max_partitions": "auto", "metrics": [("variance", "x")]}, ValueError, "variance"),
    ({"max_per_partition": "auto", "bounds": None}, ValueError, "bounds"),
])
def test_auto_refusals_come_before_the_charge(kw: dict, exc: type, words: str) -> None:
    df = _people(7, n_people=30)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    args = dict(by="key", privacy_id="person", metrics=["count", ("mean", "x")],
                epsilon=1.0, bounds={"x": (0.0, 100.0)}, domain=[f"k{j}" for j in range(8)],
                rng=KEY, budget=budget)
    args.update(kw)
    with pytest.raises(exc, match=words):
        tables.aggregate(df, **args)
    assert budget.history() == []


@pytest.mark.parametrize("kw, exc, words", [
    ({"share": 1.5}, ValueError, "share"),
    ({"share": "x"}, TypeError, "share"),
    ({"epsilon": 0.0}, ValueError, "epsilon"),
    ({"max_partitions": [0, 2]}, ValueError, "max_partitions"),
    ({"max_per_partition": "auto"}, TypeError, "max_per_partition"),
    ({"metrics": [("std", "x")]}, ValueError, "std"),
    ({"metrics": [("mean", "nope")]}, ValueError, "nope"),
    ({"bounds": [0, 1]}, TypeError, "bounds"),
    ({"by": "nope"}, ValueError, "by"),
    ({"public_sample": pd.DataFrame({"key": ["a"]}), "sample_fraction": 1.0}, ValueError,
     "privacy_id"),
    ({"public_sample": "same", "sample_fraction": 0.0}, ValueError, "sample_fraction"),
])
def test_tune_refusals_come_before_the_charge(kw: dict, exc: type, words: str) -> None:
    df = _people(8, n_people=30)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    args = dict(by="key", privacy_id="person", metrics=["count", ("mean", "x")],
                epsilon=1.0, bounds={"x": (0.0, 100.0)}, rng=KEY, budget=budget,
                domain=[f"k{j}" for j in range(8)])
    args.update(kw)
    if isinstance(args.get("public_sample"), str):
        args["public_sample"] = df
    with pytest.raises(exc, match=words):
        tables.tune(df, **args)
    assert budget.history() == []


def test_dask_aggregate_refuses_auto_before_the_charge() -> None:
    dd = pytest.importorskip("dask.dataframe")
    from dpfast import dask as dpdask

    df = _people(9, n_people=30)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    with pytest.raises(ValueError, match="one machine"):
        dpdask.aggregate(dd.from_pandas(df, npartitions=2), "key", "person",
                         metrics=["count"], epsilon=1.0, max_partitions="auto",
                         domain=[f"k{j}" for j in range(8)], rng=KEY, budget=budget)
    assert budget.history() == []


def test_the_recommendation_beats_the_defaults_on_heavy_tailed_contributions() -> None:
    """Count MAE per key over the public domain, fixed key: the tuned release (its 10% of ε
    included) against dpfast's defaults (max_partitions = max_per_partition = 1)."""
    df = _heavy()
    domain = list(range(20))
    truth = df.groupby("key").size().reindex(domain).to_numpy(np.float64)
    gen = dpfast.default_rng(KEY)
    maes = {"auto": [], "default": []}
    for _ in range(3):
        auto = tables.aggregate(df, by="key", privacy_id="person", metrics=["count"],
                                epsilon=1.0, domain=domain, max_partitions="auto",
                                max_per_partition="auto", rng=gen)
        base = tables.aggregate(df, by="key", privacy_id="person", metrics=["count"],
                                epsilon=1.0, domain=domain, rng=gen)
        maes["auto"].append(np.abs(auto["count"].values - truth).mean())
        maes["default"].append(np.abs(base["count"].values - truth).mean())
        assert auto.tuning.max_per_partition > 1
    assert max(maes["auto"]) < min(maes["default"])
    assert np.mean(maes["auto"]) < 0.9 * np.mean(maes["default"])


def test_plot_draws_every_candidate_and_marks_the_recommendation(tmp_path) -> None:
    mpl = pytest.importorskip("matplotlib")
    mpl.use("Agg")
    import matplotlib.pyplot as plt

    df = _people(10, n_people=100)
    res = tables.tune(df, by="key", privacy_id="person", metrics=["count"], epsilon=1.0,
                      domain=[f"k{j}" for j in range(8)], public_sample=df,
                      max_partitions=[1, 2, 4], max_per_partition=[1, 3])
    ax = res.plot()
    assert ax.get_xlabel() == "max_partitions" and "recommended" in ax.get_title()
    assert len(ax.lines) == 3  # one line per max_per_partition, and the star
    star = ax.lines[-1]
    assert list(star.get_xdata()) == [res.max_partitions]
    ax.figure.savefig(tmp_path / "tune.png", format="png", dpi=60)
    plt.close(ax.figure)
    assert (tmp_path / "tune.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_tune_charges_the_ledger_and_writes_the_result(tmp_path, capsys) -> None:
    from dpfast.cli import main

    df = _people(11, n_people=200)
    df["x"] = df["x"].round().astype(int)
    df.to_csv(tmp_path / "in.csv", index=False)
    pd.DataFrame({"key": [f"k{j}" for j in range(8)]}).to_csv(tmp_path / "dom.csv",
                                                              index=False)
    (tmp_path / "key").write_bytes(KEY)
    out = tmp_path / "t.json"
    rc = main(["tune", str(tmp_path / "in.csv"), "--key", "key", "--id", "person",
               "--metric", "count", "--metric", "mean:x", "--bounds", "x", "0", "100",
               "--epsilon", "1", "--domain", str(tmp_path / "dom.csv"),
               "--ledger", str(tmp_path / "l.db"), "--budget-epsilon", "2",
               "--seed-key-file", str(tmp_path / "key"), "-o", str(out)])
    assert rc == 0
    text = capsys.readouterr().out
    assert "recommended: --max-partitions" in text and "spent epsilon 0.1" in text
    got = json.loads(out.read_text())
    assert got["bounds"] == {"x": [0, 100]} and got["epsilon"] == pytest.approx(0.1)
    # every candidate of the default grid (count and a mean: max_per_partition matters)
    assert len(got["candidates"]) == len(_tune_predict.K_GRID) * len(_tune_predict.C_GRID)
    assert dpfast.Budget.from_ledger(str(tmp_path / "l.db")).spent().epsilon == \
        pytest.approx(0.1)
    rc = main(["tune", str(tmp_path / "in.csv"), "--key", "key", "--id", "person",
               "--metric", "quantile:x:0.9", "--epsilon", "1", "--delta", "1e-5",
               "--public-sample", str(tmp_path / "in.csv")])
    assert rc == 0 and "nothing charged" in capsys.readouterr().out


def test_summary_sensitivity_on_neighbours() -> None:
    """The summary's sensitivity (the Privacy section's L1 = 3): removing any one person
    changes each part (keys per person, rows of the keyed chosen key, distinct chosen keys)
    by at most 1, with the same bounding sub-key."""
    df = _people(12, n_people=60)
    sub = bounding.subkey(dpfast.default_rng(KEY))

    def exact(d: pd.DataFrame) -> _tune_summary.Exact:
        data, _ = tables._inputs._validate(d["key"].to_numpy(), d["person"].to_numpy(),
                                           None, None, None)
        return _tune_summary.exact(data, sub)

    full = exact(df)
    for p in range(60):
        ex = exact(df[df["person"] != p])
        assert np.abs(full.l0 - ex.l0).sum() == 1
        assert np.abs(full.linf - ex.linf).sum() == 1
        assert abs(full.keys - ex.keys) <= 1


def test_tune_refuses_a_largest_candidate_beyond_exact_sums_before_the_charge() -> None:
    df = _people(13, n_people=30)
    df["x"] = df["x"].round().astype(np.int64)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    tables.tune(df, by="key", privacy_id="person", metrics=[("sum", "x")], epsilon=1.0,
                bounds={"x": (0, 1 << 40)}, domain=[f"k{j}" for j in range(8)],
                max_per_partition=[1, 2], public_sample=df)  # (1, 1) and (64, 2) run
    with pytest.raises(ValueError, match="noise scale"):  # (64, 1024) cannot
        tables.tune(df, by="key", privacy_id="person", metrics=[("sum", "x")], epsilon=1.0,
                    bounds={"x": (0, 1 << 40)}, domain=[f"k{j}" for j in range(8)],
                    max_per_partition=[1, 1024], rng=KEY, budget=budget)
    assert budget.history() == []


def test_log_sum_terms_move_by_at_most_its_units() -> None:
    """The sensitivity of ``G`` (the Privacy section's 16): one more person on a key moves
    its term ``floor(16 log2(1 + x))`` by 0..16, for every count a key can hold here (and
    a key new to the chosen keys adds exactly 16)."""
    x = np.arange(0, 2_000_001, dtype=np.int64)
    t = np.floor(_tune_summary.LOG_UNITS * np.log2(1.0 + x.astype(np.float64)))
    d = np.diff(t)
    assert d.min() >= 0 and d.max() <= _tune_summary.LOG_UNITS and t[1] - t[0] == 16
    pw = 2.0 ** np.arange(0, 21)  # the exact powers of two: integer terms, no rounding
    assert np.array_equal(np.floor(16 * np.log2(pw)), 16 * np.arange(0, 21))


@pytest.mark.parametrize("domain", [None, [f"k{j}" for j in range(8)] + ["empty"]])
def test_log_sum_sensitivity_on_neighbours(domain: list[str] | None) -> None:
    """Removing any one person moves ``G`` by at most 16 (one key's term), with and
    without a public domain (a domain key no one holds adds 0)."""
    df = _people(14, n_people=60)
    sub = bounding.subkey(dpfast.default_rng(KEY))

    def g(d: pd.DataFrame) -> int:
        data, _ = tables._inputs._validate(d["key"].to_numpy(), d["person"].to_numpy(),
                                           None, None, domain)
        return _tune_summary.exact(data, sub).logsum

    full = g(df)
    assert full > 0
    for p in range(60):
        assert abs(full - g(df[df["person"] != p])) <= _tune_summary.LOG_UNITS


def test_summary_split_rounds_down_and_spends_the_share() -> None:
    """The cells' and ``G``'s shares never exceed the summary's ε (exact arithmetic)."""
    for e in (0.05, 1 / 3, 0.1, 1e-3, 2.0 / 7):
        ec, eg = _tune_summary.split(e)
        assert Fraction(ec) + Fraction(eg) <= Fraction(e) and ec > 0 and eg > 0
        assert abs(ec + eg - e) < 1e-12 and abs(eg - e / 3) < 1e-12


def test_spread_recovers_a_log_normal_key_size() -> None:
    """``spread`` inverts ``ln E(1 + x) - E ln(1 + x) = σ²/2`` on exact ``G`` (no noise),
    for log-normal people per key."""
    rng = np.random.default_rng(5)
    for sigma in (0.5, 1.0, 2.0):
        x = np.floor(np.exp(rng.normal(6.0, sigma, 20000))).astype(np.int64)
        got = _tune_summary.spread(float(_tune_summary.logsum(x)), float(x.sum()),
                                   float(x.size))
        assert got == pytest.approx(sigma, abs=0.05)
    shares, w = _tune_summary.lognormal_shares(1.5)
    assert float(np.dot(shares, w)) == pytest.approx(1.0) and w.sum() == pytest.approx(1.0)
    assert np.array_equal(_tune_summary.lognormal_shares(0.0)[0], np.ones(1))


def _unequal(seed: int = 21) -> pd.DataFrame:
    """8 big keys and 8 small ones (1/20 of the rows); each person 1..4 keys, 1..5 rows of
    each; values N(50, 25) clamped to [0, 100] (sd about (hi - lo)/4 as the model takes)."""
    rng = np.random.default_rng(seed)
    p_key = np.r_[np.full(8, 20.0), np.full(8, 1.0)]
    p_key /= p_key.sum()
    rows = []
    for p in range(1500):
        for k in rng.choice(16, size=int(rng.integers(1, 5)), replace=False, p=p_key):
            for _ in range(int(rng.integers(1, 6))):
                rows.append((p, int(k), float(np.clip(rng.normal(50, 25), 0, 100))))
    return pd.DataFrame(rows, columns=["person", "key", "x"])


def test_mean_and_median_predictions_match_a_direct_simulation_over_the_keys() -> None:
    """The predicted root mean square error over the keys (the public sample's own key
    sizes) against the release run 40 times at a fixed key, at two candidates: the mean
    within 25% and the median (in quantiles) within 35%; and closer than the model of one
    key of typical size (the old model, which misses the small keys: it FAILS this)."""
    df = _unequal()
    domain = list(range(16))
    metrics = [("mean", "x"), ("median", "x")]
    kw = dict(by="key", privacy_id="person", metrics=metrics, bounds={"x": (0.0, 100.0)},
              domain=domain)
    res = tables.tune(df, epsilon=1.0, public_sample=df, max_partitions=[1, 3],
                      max_per_partition=[1, 3], **kw)
    typical = dataclasses.replace(res.summary, key_shares=np.ones(1),
                                  key_weights=np.ones(1))
    spec = multi.aggregate_spec(metrics, statistics.metric_parts(),
                                bounds={"x": (0.0, 100.0)}, weights=None, candidates=None,
                                available=list(df.columns), by=("key",),
                                privacy_unit="person", epsilon=1.0, domain=domain)
    rows = _run.Rows(df["key"], df["person"], columns={"x": df["x"]}, domain=domain)
    truth = df.groupby("key")["x"].mean().reindex(domain).to_numpy()
    sorted_x = [np.sort(df.loc[df["key"] == j, "x"].to_numpy()) for j in domain]
    gen = dpfast.default_rng(KEY)
    for cand in res.candidates:
        if (cand.max_partitions, cand.max_per_partition) not in ((1, 1), (3, 3)):
            continue
        err_mean, err_q = [], []
        for _ in range(40):
            out = tables.aggregate(df, epsilon=1.0, max_partitions=cand.max_partitions,
                                   max_per_partition=cand.max_per_partition, rng=gen, **kw)
            err_mean.append(np.asarray(out["mean_x"].values) - truth)
            med = np.asarray(out["median_x"].values)
            err_q.append([np.searchsorted(s, m, side="right") / s.size - 0.5
                          for s, m in zip(sorted_x, med, strict=True)])
        sim_mean = float(np.sqrt(np.mean(np.square(err_mean))))
        sim_q = float(np.sqrt(np.mean(np.square(err_q))))
        old = tables._tune_predict.predict(spec, rows, typical, cand.max_partitions,
                                           cand.max_per_partition).predictions
        new = cand.predictions
        assert new["mean_x"].error == pytest.approx(sim_mean, rel=0.25)
        assert abs(new["mean_x"].error - sim_mean) < abs(old["mean_x"].error - sim_mean)
        # the median: pessimistic (the exponential mechanism's rank error is its union
        # bound over the grid), within a factor 1.6 above the simulation
        assert sim_q <= new["median_x"].error <= 1.6 * sim_q


def _normal_people(seed: int = 0) -> pd.DataFrame:
    """2,000 people, 20,000 rows over 8 cities, ``x ~ N(10, 3)``: no bounds given."""
    rng = np.random.default_rng(seed)
    n = 20_000
    return pd.DataFrame({"p": rng.integers(0, 2000, n), "city": rng.choice(list("abcdefgh"), n),
                         "x": rng.normal(10.0, 3.0, n)})


def test_default_share_gives_missing_bounds_a_histogram_of_their_values() -> None:
    """The default share with one column without bounds: 15% (two parts of 5% for the
    summary, one for the column's value histogram); the bounds hold the values' bulk and
    their clamping is in the predictions; with every column bounded the share is 10%."""
    df = _normal_people()
    budget = dpfast.Budget(epsilon=5.0, delta=1e-5, accounting="basic")
    for j in range(3):
        res = tables.tune(df, "city", "p", metrics=["count", ("mean", "x")], epsilon=1.0,
                          delta=1e-5, budget=budget, rng=bytes([j + 1]) * 32,
                          max_partitions=[1, 4], max_per_partition=[1, 4])
        lo, hi = res.bounds["x"]
        mass = float(np.mean((df["x"] >= lo) & (df["x"] <= hi)))
        assert mass >= 0.5 and lo <= 10.0 <= hi, (lo, hi)
        assert res.epsilon == pytest.approx(0.15) and res.release_epsilon == pytest.approx(0.85)
        eh, eb = float_down(Fraction(3, 20) * 2 / 3), float_down(Fraction(3, 20) / 3)
        assert res.event == ev.with_neighbouring(
            ev.Composed((ev.Epsilon(eh), ev.Epsilon(eb))), ev.ADD_REMOVE)
        assert 0.0 <= res.beyond["x"] < 0.5
        assert math.isfinite(res.predicted["mean_x"].error) and res.uninformative == []
    assert budget.spent().epsilon == pytest.approx(3 * 0.15)
    # with every column bounded the default share is the summary's two parts
    res = tables.tune(df, "city", "p", metrics=[("mean", "x")], epsilon=1.0, delta=1e-5,
                      bounds={"x": (0.0, 20.0)}, rng=KEY)
    assert res.epsilon == pytest.approx(0.1) and res.beyond == {} and res.values == {}


def test_junk_bounds_are_predicted_as_bad() -> None:
    """Closes: bounds chosen with too few people for their ε were predicted as a tiny
    error.  A value histogram with no cell above its noise (ε_b = 0.001 for 2,000 people)
    gives an infinite predicted error of every metric of its column, ``beyond`` 1.0."""
    df = _normal_people()
    res = tables.tune(df, "city", "p", metrics=[("mean", "x"), ("sum", "x"), ("median", "x")],
                      epsilon=1.0, delta=1e-5, share=0.003, rng=KEY)
    assert res.values["x"].empty and res.beyond == {"x": 1.0}
    assert res.predicted["mean_x"].error == math.inf
    assert res.predicted["sum_x"].error == math.inf
    assert res.predicted["median_x"].error == math.inf
    assert res.to_dict()["beyond"] == {"x": 1.0}
    assert res.uninformative == ["x"] and "may miss the data" in repr(res)


def test_value_histogram_formulas() -> None:
    """The clamped moments, the quantiles (uniform within a cell), the candidates and the
    share beyond the bounds of an exact histogram, by hand."""
    g = np.array([-4.0, -2.0, 0.0, 2.0, 4.0, 8.0])
    w = np.array([0.0, 10.0, 30.0, 40.0, 20.0, 0.0])  # cells [-2,0) [0,2) [2,4) [4,8)
    v = _tune_values.Values(g, w, False, False)
    mid, within = np.array([-1.0, 1.0, 3.0, 6.0]), np.array([4, 4, 4, 16]) / 12.0
    p = w[1:5] / 100.0
    mu = float(p @ mid)
    assert v.spread[0] == pytest.approx(mu)
    assert v.spread[1] == pytest.approx(math.sqrt(float(p @ ((mid - mu) ** 2 + within))))
    # clamped to [0, 4] (indices 2, 4): [-2, 0) -> 0, [4, 8) -> 4
    x = np.array([0.0, 1.0, 3.0, 4.0])
    vin = np.array([0.0, 4 / 12, 4 / 12, 0.0])
    mc = float(p @ x)
    assert v.moments(2, 4) == pytest.approx((mc, float(p @ ((x - mc) ** 2 + vin))))
    assert v.quantile(0.5) == pytest.approx(2.0 + (0.5 - 0.4) / 0.4 * 2.0)
    assert v.quantile(0.05, 2, 4) == 0.0  # -1.0, clamped
    assert v.beyond(2, 4) == pytest.approx(0.2)
    # lower edges up to the median's cell [2, 4), upper edges from it
    assert v.candidates() == [(a, b) for a in (1, 2, 3) for b in (4, 5)]
    assert _tune_values.Values(g, np.zeros(6), False, True).candidates() == [(2, 3)]
    # exact cells: a value at a grid point falls in the cell it starts
    slots = _quantile_em.slots_of(np.array([-4.0, -3.0, 0.0, 1.5, 8.0]), g)
    np.testing.assert_array_equal(_tune_values.exact(slots, 6), [2, 0, 2, 0, 0, 1])


def test_default_share_refuses_too_many_unbounded_columns_before_a_charge() -> None:
    """Eighteen columns without bounds would take the whole ε by default (2 + 18 parts of
    5%): a ValueError naming ``bounds``, nothing charged."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"p": rng.integers(0, 50, 200), "k": rng.choice(list("ab"), 200),
                       **{f"v{j}": rng.normal(size=200) for j in range(18)}})
    budget = dpfast.Budget(epsilon=5.0, accounting="basic")
    with pytest.raises(ValueError, match="bounds"):
        tables.tune(df, "k", "p", metrics=[("mean", f"v{j}") for j in range(18)],
                    epsilon=1.0, domain=["a", "b"], budget=budget, rng=KEY)
    assert budget.history() == []


def test_cli_tune_says_when_chosen_bounds_may_miss_the_data(tmp_path, capsys) -> None:
    """Closes: ``dpfast tune`` printed bounds that clamp every value with a tiny predicted
    error; now it prints an infinite error and says to pass --bounds or a larger --share."""
    from dpfast.cli import main

    _normal_people().to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "key").write_bytes(KEY)
    rc = main(["tune", str(tmp_path / "in.csv"), "--key", "city", "--id", "p",
               "--metric", "mean:x", "--epsilon", "1", "--delta", "1e-5", "--share", "0.003",
               "--seed-key-file", str(tmp_path / "key")])
    text = capsys.readouterr().out
    assert rc == 0 and "the bounds of x may miss the data" in text and "inf" in text


def test_publish_keeps_the_bulk_and_drops_isolated_low_cells() -> None:
    """Closes: one empty cell's noise above ``t ln m`` (about half the time somewhere among
    187 cells) was published, a spurious far value that moves the values' mean anywhere.
    Now an isolated cell needs the upper floor ``t ln(m / BETA)``; below it a cell is kept
    only next to a kept one."""
    t, m = 10.0, 20
    lower, upper = t * math.log(m), t * math.log(m / _tune_values.BETA)
    w = np.zeros(m)
    w[[5, 6, 7]] = [upper + 1, lower + 1, lower + 1]  # the bulk and its low neighbours
    w[15] = lower + 1  # isolated: noise of an empty cell, far out
    w[9] = upper - 1  # isolated, just below the upper floor
    out, lim = _tune_values.publish(w, t)
    assert lim == pytest.approx(upper)
    np.testing.assert_array_equal(np.flatnonzero(out), [5, 6, 7])
    np.testing.assert_array_equal(out[[5, 6, 7]], w[[5, 6, 7]])


def _skewed(seed: int = 12) -> pd.DataFrame:
    """600 people over 12 keys of very different sizes, values ~ 10 + Exp(5): the public
    bounds (-1000, 1000) are far too wide for the small keys."""
    rng = np.random.default_rng(seed)
    sizes = np.array([400, 300, 200, 150, 100, 60, 40, 30, 20, 10, 6, 4])
    keys = np.repeat(np.arange(12), sizes)
    people = rng.integers(0, 600, keys.shape[0])
    return pd.DataFrame({"p": people, "k": keys, "x": 10.0 + rng.exponential(5.0, keys.size)})


def test_aggregate_bounds_auto_is_one_charge_and_beats_wide_public_bounds() -> None:
    """``bounds={"x": "auto"}`` with ``max_partitions="auto"``: one charge of the composed
    event (the summary, the value histogram, the release), known before the rows; the
    release is made at the bounds the tuning chose (its median on their grid); and at a
    fixed key its mean and median beat those of the same release at wide public bounds
    (the truth: the exact unclamped statistic)."""
    df = _skewed()
    domain = list(range(12))
    budget = dpfast.Budget(epsilon=10.0, accounting="basic")
    kw = dict(by="k", privacy_id="p", metrics=[("mean", "x"), ("median", "x")], epsilon=1.0,
              domain=domain, max_partitions="auto", max_per_partition="auto")
    gen = dpfast.default_rng(KEY)
    rel = tables.aggregate(df, bounds={"x": "auto"}, rng=gen, budget=budget, **kw)
    h = budget.history()
    assert len(h) == 1 and h[0].event == rel.event
    eps_t, eps_rest = split(1.0, multi.TUNE_SHARE * 3)  # two parts and one
    e = Fraction(eps_t) / 3
    assert rel.event == ev.with_neighbouring(ev.Composed((
        ev.Epsilon(float_down(2 * e)), ev.Epsilon(float_down(e)), ev.Epsilon(eps_rest))),
        ev.ADD_REMOVE)
    t = rel.tuning
    lo, hi = t.bounds["x"]
    assert t.epsilon == eps_t and t.values["x"].private and lo < hi
    med = np.asarray(rel["median_x"].values)
    assert ((med >= lo) & (med <= hi)).all() and rel["median_x"].grid[0] == lo
    spec = multi.aggregate_spec(
        kw["metrics"], statistics.metric_parts(), bounds={"x": "auto"}, weights=None,
        candidates=None, available=list(df.columns), by=("k",), privacy_unit="p",
        epsilon=1.0, max_partitions="auto", max_per_partition="auto", domain=domain)
    empty = _run.Rows(np.array([], np.int64), np.array([], np.int64),
                      columns={"x": np.array([], np.float64)}, domain=domain)
    assert _plan.plan(spec, empty).event == rel.event
    g = df.groupby("k")["x"]
    truth = {"mean_x": g.mean().to_numpy(), "median_x": g.median().to_numpy()}
    err: dict[str, dict[str, list[float]]] = {"auto": {}, "wide": {}}
    for _ in range(3):
        runs = {"auto": tables.aggregate(df, bounds={"x": "auto"}, rng=gen, **kw),
                "wide": tables.aggregate(df, bounds={"x": (-1000.0, 1000.0)}, rng=gen, **kw)}
        for name, r in runs.items():
            for m in truth:
                err[name].setdefault(m, []).append(
                    float(np.abs(np.asarray(r[m].values) - truth[m]).mean()))
    for m in truth:
        assert max(err["auto"][m]) < min(err["wide"][m]), (m, err)


@pytest.mark.parametrize("kw, exc, words", [
    ({"bounds": "all"}, TypeError, "bounds"),
    ({"bounds": {"x": "some"}}, TypeError, "bounds"),
    ({"bounds": {"x": "auto"}, "rho": 0.5, "epsilon": None}, ValueError, "needs epsilon"),
    ({"bounds": "auto", "metrics": [("variance", "x")]}, ValueError, "variance"),
])
def test_bounds_auto_refusals_come_before_the_charge(kw: dict, exc: type, words: str) -> None:
    df = _people(7, n_people=30)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    args = dict(by="key", privacy_id="person", metrics=["count", ("mean", "x")],
                epsilon=1.0, domain=[f"k{j}" for j in range(8)], rng=KEY, budget=budget)
    args.update(kw)
    with pytest.raises(exc, match=words):
        tables.aggregate(df, **args)
    assert budget.history() == []


def test_dask_aggregate_refuses_bounds_auto_before_the_charge() -> None:
    dd = pytest.importorskip("dask.dataframe")
    from dpfast import dask as dpdask

    df = _people(9, n_people=30)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    with pytest.raises(ValueError, match="one machine"):
        dpdask.aggregate(dd.from_pandas(df, npartitions=2), "key", "person",
                         metrics=[("mean", "x")], epsilon=1.0, bounds={"x": "auto"},
                         domain=[f"k{j}" for j in range(8)], rng=KEY, budget=budget)
    assert budget.history() == []


def test_value_histogram_counts_one_value_per_person() -> None:
    """The exact histogram the tuning noises holds one value per person (sensitivity 1),
    whatever their rows: the keyed pooling at ``k = c = 1``."""
    df = _people(4, n_people=50)
    res_rows = _run.Rows(df["key"], df["person"], columns={"x": df["x"]}, domain=None)
    from dpfast.tables import _autobounds, _tune_plan

    _d, g, integer, kept = _autobounds._pooled_partials(
        _run.Rows(df["key"], df["person"], df["x"]), np.zeros(8, np.uint32), None, None, 0)
    counts = _tune_plan.pooled_counts(kept, g)
    assert counts.sum() == 50 and not integer and res_rows.columns is not None
    # every value of N(50, 10) lies in the cells [16, 32), [32, 64) or [64, 128)
    assert set(np.flatnonzero(counts).tolist()) <= {
        int(np.searchsorted(g, x)) for x in (16.0, 32.0, 64.0)}


def test_candidates_are_never_empty_at_the_grid_edges() -> None:
    """Closes a failure after the charge: every published value in the grid's last cell
    (an integer column at or beyond ``2**40``) left no candidate pair and an
    AssertionError inside ``finish`` (the whole ε lost).  The last cell alone gives its
    lower edge and the edge, flagged as clamped at the edge; the first cell alone and one
    middle cell alone give their cell, the first flagged too."""
    g = np.array([-4.0, -2.0, 0.0, 2.0, 4.0, 8.0])
    m = g.shape[0]
    for cell, want, edge in ((m - 1, (m - 2, m - 1), True), (0, (0, 1), True),
                             (3, (3, 4), False)):
        w = np.zeros(m)
        w[cell] = 50.0
        v = _tune_values.Values(g, w, False, True)
        assert v.candidates() == [want]
        assert v.at_edge(*want) is edge
    w = np.zeros(m)
    w[[2, m - 1]] = 50.0  # a cell below the last: no fallback needed, (2, m-1) at the edge
    v = _tune_values.Values(g, w, False, True)
    assert v.candidates() == [(2, 3), (2, m - 1)] and v.at_edge(2, m - 1)
    assert not v.at_edge(2, 3)


def _epoch_ms(n: int = 3000, people: int = 500) -> pd.DataFrame:
    """Epoch milliseconds (about ``2**40.6``: beyond the integer grid's edge)."""
    rng = np.random.default_rng(0)
    return pd.DataFrame({"person": rng.integers(0, people, n),
                         "key": rng.choice(list("abcd"), n),
                         "x": (1_700_000_000_000 + rng.integers(0, 10**9, n)).astype(np.int64)})


def test_bounds_auto_with_every_value_beyond_the_grid_ends_in_a_dp_answer() -> None:
    """Closes a failure after the charge (AssertionError, a ``failed`` ledger row with the
    whole ε): ``bounds="auto"`` and ``tune`` on a column whose every value lies beyond the
    integer grid's edge release, and say the column was clamped at the edge."""
    df = _epoch_ms()
    budget = dpfast.Budget(epsilon=100.0, accounting="basic")
    rel = tables.aggregate(df, "key", "person", metrics=[("mean", "x")], epsilon=10.0,
                           bounds={"x": "auto"}, domain=list("abcd"), rng=KEY, budget=budget)
    tuning = rel.tuning  # type: ignore[attr-defined]
    # the upper bound is the grid's edge; the lower one is a DP choice of a fresh release
    # (a raw key: new release ids each run), (2^39, 2^40) in ~95% of runs
    lo, hi = tuning.bounds["x"]
    assert hi == 1 << 40 and lo < hi and tuning.at_edge == ["x"]
    assert "x" in tuning.uninformative and "grid's edge" in repr(tuning)
    assert np.isfinite(np.asarray(rel["mean_x"].values, dtype=float)).all()
    res = tables.tune(df, by="key", privacy_id="person", metrics=[("mean", "x")],
                      epsilon=10.0, domain=list("abcd"), rng=KEY, budget=budget)
    assert res.at_edge == ["x"] and res.to_dict()["at_edge"] == ["x"]
    assert [h.status for h in budget.history()] == ["charged", "charged"]


def test_tune_with_an_unbounded_column_checks_its_candidates_before_the_charge() -> None:
    """Closes a refusal on public parameters after the charge: with a column left without
    bounds the largest candidate's plan was not checked, so candidates no bound could
    release ended in ValueError after ``share·ε`` was charged (a ``failed`` row).  Now
    refused before any charge (nothing in the ledger), for ``tune`` and ``aggregate``."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"person": rng.integers(0, 300, 3000),
                       "key": rng.choice(list("abcd"), 3000),
                       "x": rng.integers(0, 100, 3000), "y": rng.normal(50, 10, 3000)})
    budget = dpfast.Budget(epsilon=10.0, accounting="basic")
    with pytest.raises(ValueError, match="noise scale"):
        tables.tune(df, by="key", privacy_id="person", metrics=[("sum", "x"), ("mean", "y")],
                    epsilon=1.0, bounds={"x": (0, 1 << 40)}, domain=list("abcd"),
                    max_partitions=[64], max_per_partition=[1024], rng=KEY, budget=budget)
    assert budget.history() == []
    with pytest.raises(ValueError, match="noise scale"):
        tables.aggregate(df, "key", "person", metrics=[("sum", "x"), ("mean", "y")],
                         epsilon=1.0, bounds={"x": (0, 1 << 40), "y": "auto"},
                         domain=list("abcd"), max_partitions=64, max_per_partition=1024,
                         rng=KEY, budget=budget)
    assert budget.history() == []


def test_an_unbounded_integer_sum_no_bound_of_the_grid_can_release_is_refused_first() -> None:
    """The check of the candidates with the columns without bounds at the widest bounds
    the tuning can choose (``±2**40``): the smallest candidate must release at them, so
    the search after the charge always has one; where it cannot, refused before the
    charge, naming the column and what to pass."""
    df = _people(13, n_people=30)
    df["x"] = df["x"].round().astype(np.int64)
    budget = dpfast.Budget(epsilon=1.0, accounting="basic")
    with pytest.raises(ValueError, match="may choose for x.*pass public bounds"):
        tables.tune(df, by="key", privacy_id="person", metrics=[("sum", "x")],
                    epsilon=1e-4, domain=[f"k{j}" for j in range(8)], rng=KEY, budget=budget)
    assert budget.history() == []
