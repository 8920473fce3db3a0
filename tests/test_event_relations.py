"""Every event dpfast's releases create states its neighbouring relation (issue 22, item 3).

A table / TopDown release's sensitivities are those of adding or removing one privacy id;
before, their events stated no relation and composed silently with replace-one charges
(randomized response): a budget certified eps = 0.95 where the truth under replace-one is
0.5 + 2 * 0.45 = 1.4.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpfast as dp
import dpfast.local as L
from dpfast import tables
from dpfast.accounting import PureDpAccountant, ZcdpAccountant
from dpfast.accounting import events as ev

from .helpers import KEY

KEYS = np.array(["a", "b", "a", "c", "b", "a"])
IDS = np.array([1, 1, 2, 3, 4, 5])
VALS = np.array([1.5, 2.0, 0.25, 3.0, 1.0, 2.5])
IVALS = np.array([1, 2, 0, 3, 1, 2])
DOMAIN = ["a", "b", "c"]


def _leaves(event: ev.DpEvent) -> list[ev.DpEvent]:
    """The events inside ``event`` that carry a guarantee (not Composed / SelfComposed)."""
    if isinstance(event, ev.Composed):
        return [x for e in event.events for x in _leaves(e)]
    if isinstance(event, ev.SelfComposed):
        return _leaves(event.event)
    return [event]


def _table_releases() -> list[tuple[str, ev.DpEvent]]:
    out = []
    for noise, kw in (("laplace", {"epsilon": 0.5}), ("gaussian", {"rho": 0.2}),
                      ("gaussian", {"epsilon": 0.5, "delta": 1e-6})):
        for dom in (DOMAIN, None):
            if dom is None and noise == "gaussian":
                continue  # private selection needs Laplace noise
            extra = {"delta": 1e-6} if dom is None else {}
            kws = {**kw, **extra, "domain": dom, "noise": noise, "rng": KEY,
                   "max_partitions": 2}
            out.append((f"count {noise} {kw} {dom}", tables.count(KEYS, IDS, **kws).event))
            for v, b in ((VALS, (0.0, 4.0)), (IVALS, (0, 4))):
                out.append((f"sum {v.dtype}", tables.sum(v, KEYS, IDS, bounds=b, **kws).event))
                out.append((f"mean {v.dtype}",
                            tables.mean(v, KEYS, IDS, bounds=b, **kws).event))
                for fn in (tables.variance, tables.std):
                    out.append((f"{fn.__name__} {v.dtype}",
                                fn(v, KEYS, IDS, bounds=b, **kws).event))
            out.append(("privacy_id_count", tables.privacy_id_count(KEYS, IDS, **kws).event))
            if noise == "laplace":  # quantiles and automatic bounds are pure-DP mechanisms
                qkw = {k: v for k, v in kws.items() if k != "noise"}
                out.append(("quantile", tables.quantile(VALS, KEYS, IDS, q=[0.25, 0.5],
                                                        bounds=(0.0, 4.0), **qkw).event))
                out.append(("sum auto", tables.sum(VALS, KEYS, IDS, bounds="auto",
                                                   **kws).event))
                out.append(("auto_bounds", tables.auto_bounds(
                    VALS, KEYS, IDS, epsilon=0.5, max_partitions=2, rng=KEY).event))
            out.append(("count_distinct", tables.count_distinct(IVALS, KEYS, IDS, **kws).event))
            pd = pytest.importorskip("pandas")
            frame = pd.DataFrame({"k": KEYS, "id": IDS, "v": VALS, "w": IVALS})
            out.append(("aggregate", tables.aggregate(
                frame, "k", "id", metrics=["count", "privacy_id_count", ("mean", "v"),
                                           ("variance", "w"), ("sum", "v")],
                bounds={"v": (0.0, 4.0), "w": (0, 4)}, **kws).event))
            if noise == "laplace":  # the tuning's summary is pure DP (discrete Laplace)
                out.append(("aggregate auto", tables.aggregate(
                    frame, "k", "id", metrics=["count", ("mean", "v")],
                    bounds={"v": (0.0, 4.0)}, **{**kws, "max_partitions": "auto",
                                                 "max_per_partition": "auto"}).event))
                tkw = {k: v for k, v in kws.items() if k not in ("rng", "max_partitions")}
                out.append(("tune", tables.tune(
                    frame, "k", "id", metrics=["count", ("mean", "v")],
                    bounds={"v": (0.0, 4.0)}, rng=KEY, **tkw).event))
    *_, rel = dp.histogram(VALS, bins=4, range=(0.0, 4.0), epsilon=1.0, rng=KEY,
                           return_release=True)
    out.append(("histogram", rel.event))
    *_, rel = dp.histogram(VALS, bins=4, range=(0.0, 4.0), weights=VALS,
                           weight_bounds=(0.0, 4.0), rho=0.5, rng=KEY, return_release=True)
    out.append(("weighted histogram", rel.event))
    *_, rel = dp.histogram2d(VALS, VALS, bins=2, range=((0.0, 4.0), (0.0, 4.0)),
                             epsilon=1.0, privacy_ids=IDS, rng=KEY, return_release=True)
    out.append(("histogram2d", rel.event))
    *_, rel = dp.histogramdd(np.stack([VALS, VALS, VALS], axis=1), bins=2,
                             range=[(0.0, 4.0)] * 3, rho=0.5, rng=KEY, return_release=True)
    out.append(("histogramdd", rel.event))
    leaves = np.array([3, 0, 2, 5])
    levels = [np.zeros(4, int), np.array([0, 0, 1, 1]), np.arange(4)]
    out.append(("topdown", tables.topdown(leaves, levels, rho=1.0, rng=KEY).event))
    out.append(("topdown invariant",
                tables.topdown(leaves, levels, rho=1.0, rng=KEY, total_invariant=True).event))
    return out


def test_every_table_and_topdown_event_states_add_remove() -> None:
    releases = _table_releases()
    assert len(releases) > 20
    for what, event in releases:
        assert ev.relations_of(event) == {ev.ADD_REMOVE}, what
        for leaf in _leaves(event):  # every part, not only one of them
            assert leaf.neighbouring == ev.ADD_REMOVE, (what, leaf)
        assert ev.from_dict(event.to_dict()) == event  # the relation survives a ledger


def test_dask_tables_state_add_remove() -> None:
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dpfast.dask as dkd

    df = dd.from_pandas(pd.DataFrame({"k": KEYS, "id": IDS, "v": VALS}), npartitions=2)
    for rel in (dkd.count(df, "k", "id", epsilon=1.0, delta=1e-6, rng=KEY),
                dkd.sum(df, "k", "v", "id", bounds=(0.0, 4.0), epsilon=1.0, domain=DOMAIN,
                        rng=KEY),
                dkd.mean(df, "k", "v", "id", bounds=(0.0, 4.0), rho=1.0, domain=DOMAIN,
                         rng=KEY),
                dkd.aggregate(df, "k", "id", metrics=["count", ("variance", "v")],
                              bounds={"v": (0.0, 4.0)}, epsilon=1.0, delta=1e-6, rng=KEY),
                dkd.variance(df, "k", "v", "id", bounds=(0.0, 4.0), rho=1.0, domain=DOMAIN,
                             rng=KEY),
                dkd.std(df, "k", "v", "id", bounds=(0.0, 4.0), epsilon=1.0, domain=DOMAIN,
                        rng=KEY),
                dkd.privacy_id_count(df, "k", "id", epsilon=1.0, delta=1e-6, rng=KEY),
                dkd.count_distinct(df, "k", "v", "id", epsilon=1.0, domain=DOMAIN,
                                   rng=KEY),
                dkd.quantile(df, "k", "v", "id", q=0.5, bounds=(0.0, 4.0), epsilon=1.0,
                             delta=1e-6, rng=KEY)):
        assert all(e.neighbouring == ev.ADD_REMOVE for e in _leaves(rel.event)), rel.event


def test_every_local_protocol_states_replace_one() -> None:
    protocols = [L.GeneralizedRandomizedResponse(4, 1.0), L.OptimizedUnaryEncoding(4, 1.0),
                 L.OptimalLocalHashing(8, 1.0), L.CountMeanSketch(1.0, 4, 16, hash_seed=KEY),
                 L.HadamardCountMeanSketch(1.0, 4, 16, hash_seed=KEY),
                 L.Rappor(16, 2, 2, hash_seed=KEY)]
    events = [p.event for p in protocols] + [protocols[-1].longitudinal_event]
    for e in events:
        assert e.neighbouring == ev.REPLACE_ONE, e
    # every public protocol with an event is among those checked
    with_event = {n for n in L.__all__ if isinstance(getattr(L, n), type)
                  and hasattr(getattr(L, n), "event")}
    assert with_event == {type(p).__name__ for p in protocols}


def _registered() -> list[str]:
    from dpfast.tables.statistics import REGISTRY

    return sorted(REGISTRY)


@pytest.mark.parametrize("name", _registered())
def test_every_registered_statistic_states_add_remove(name: str) -> None:
    """Every statistic of the registry, locally and on Dask, with its example parameters:
    every part of its event is stated for add/remove-one-person neighbours (a new statistic
    is walked here with no edit)."""
    from dpfast.tables.statistics import REGISTRY

    stat = REGISTRY[name]
    opts: dict[str, object] = dict(epsilon=1.0, domain=DOMAIN, rng=KEY, **stat.example)
    if stat.bounds:
        opts["bounds"] = (0.0, 4.0)
    cols = (KEYS, IDS) if not stat.value else (VALS, KEYS, IDS)
    rel = getattr(tables, name)(*cols, **opts)
    for leaf in _leaves(rel.event):
        assert leaf.neighbouring == ev.ADD_REMOVE, (name, leaf)
    if stat.dask:
        dd = pytest.importorskip("dask.dataframe")
        pd = pytest.importorskip("pandas")
        import dpfast.dask as dkd

        df = dd.from_pandas(pd.DataFrame({"k": KEYS, "id": IDS, "v": VALS}), npartitions=2)
        dcols = ("k", "id") if not stat.value else ("k", "v", "id")
        drel = getattr(dkd, name)(df, *dcols, **opts)
        assert drel.event == rel.event


def test_every_charging_release_function_is_walked() -> None:
    # a new release function (one that takes budget=) must be added to the walk above
    import importlib
    import inspect

    pytest.importorskip("dask")
    dkd = importlib.import_module("dpfast.dask")
    hist = importlib.import_module("dpfast.tables.histogram")  # (dpfast.histogram: the function)

    walked = {"dpfast.tables": {"count", "sum", "mean", "topdown", "variance", "std",
                                "privacy_id_count", "count_distinct", "aggregate",
                                "quantile", "auto_bounds", "tune"},
              "dpfast.dask": {"count", "sum", "mean", "aggregate", "variance", "std",
                              "privacy_id_count", "count_distinct", "quantile"},
              "dpfast.tables.histogram": {"histogram", "histogram2d", "histogramdd"}}
    for mod in (tables, dkd, hist):
        charging = {n for n in mod.__all__ if inspect.isfunction(getattr(mod, n))
                    and ("budget" in inspect.signature(getattr(mod, n)).parameters
                         or n.startswith("histogram"))}
        registered = set(_registered()) & charging  # walked by the test above
        assert charging == walked[mod.__name__] | registered, mod.__name__


def test_mixed_relations_scenario_is_refused() -> None:
    # the repro: a replace-one RR charge, then a table release (add/remove one person)
    b = dp.Budget(1.0, 1e-6, accounting="basic")
    b.spend(ev.RandomizedResponse(0.5, 2), note="local RR survey")
    with pytest.raises(dp.NeighbouringRelationError, match="add_remove"):
        tables.count(KEYS, IDS, epsilon=0.45, max_partitions=2, domain=DOMAIN, budget=b,
                     rng=KEY)
    assert b.spent().epsilon == 0.5  # nothing was recorded
    # and the other order, with TopDown
    b = dp.Budget(1.0, 1e-6, accounting="zcdp")
    tables.topdown(np.array([3, 0, 2, 5]), [np.zeros(4, int), np.arange(4)], rho=0.01,
                   rng=KEY, budget=b)
    with pytest.raises(dp.NeighbouringRelationError, match="replace_one"):
        b.spend(ev.RandomizedResponse(0.5, 2))
    # table events compose with other add/remove charges as before
    b = dp.Budget(1.0, 1e-6, accounting="basic")
    b.spend(ev.PoissonSampled(ev.Laplace(10.0), 0.1))
    tables.count(KEYS, IDS, epsilon=0.45, domain=DOMAIN, budget=b, rng=KEY)


def test_the_relation_survives_reopening_the_ledger(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "budget.sqlite")
    b = dp.Budget(1.0, 1e-6, accounting="basic", ledger=path)
    tables.count(KEYS, IDS, epsilon=0.2, domain=DOMAIN, budget=b, rng=KEY)
    b.close()
    b = dp.Budget(1.0, 1e-6, accounting="basic", ledger=path)
    with pytest.raises(dp.NeighbouringRelationError):
        b.spend(ev.RandomizedResponse(0.5, 2))
    b.close()


def test_accountants_convert_a_table_event_to_replace_one_correctly() -> None:
    # under replace-one the table release costs 2 * 0.45 (group privacy of size two)
    rel = tables.count(KEYS, IDS, epsilon=0.45, max_partitions=2, domain=DOMAIN, rng=KEY)
    acct = PureDpAccountant(neighbouring=ev.REPLACE_ONE)
    acct.compose(ev.RandomizedResponse(0.5, 2)).compose(rel.event)
    assert acct.epsilon == pytest.approx(1.4) and acct.epsilon >= 1.4
    # an accountant that adopted add/remove-one from the table event refuses replace-one
    with pytest.raises(dp.NeighbouringRelationError):
        PureDpAccountant().compose(rel.event).compose(ev.RandomizedResponse(0.5, 2))
    with pytest.raises(dp.NeighbouringRelationError):  # and one event mixing both
        PureDpAccountant().compose(ev.Composed((rel.event, ev.RandomizedResponse(0.5, 2))))
    top = tables.topdown(np.array([3, 0, 2, 5]), [np.zeros(4, int), np.arange(4)],
                         rho=0.5, rng=KEY)
    z = ZcdpAccountant(neighbouring=ev.REPLACE_ONE).compose(top.event)
    assert z.rho >= 4 * top.rho_total * (1 - 1e-12)  # group privacy: 4 rho


@pytest.mark.parametrize("cls", [c for c in ev.EVENT_TYPES
                                 if "neighbouring" in c.__dataclass_fields__])
def test_the_field_is_checked_and_serialised(cls: type[ev.DpEvent]) -> None:
    fields = [f for f in cls.__dataclass_fields__.values()
              if f.name != "neighbouring" and f.default is not None]
    args = {f.name: (0.5 if f.name == "delta" else 1.0) for f in fields}
    e = cls(**args, neighbouring=ev.REPLACE_ONE)
    assert e.neighbouring == ev.REPLACE_ONE and ev.relations_of(e) == {ev.REPLACE_ONE}
    assert ev.from_dict(e.to_dict()) == e and "neighbouring" in repr(e)
    assert cls(**args).neighbouring is None and "neighbouring" not in repr(cls(**args))
    assert "neighbouring" not in cls(**args).to_dict()  # older ledgers' records unchanged
    with pytest.raises(ValueError, match="neighbouring must be None"):
        cls(**args, neighbouring="replace")
    assert ev.with_neighbouring(cls(**args), ev.ADD_REMOVE).neighbouring == ev.ADD_REMOVE
    with pytest.raises(ValueError, match="stated for 'replace_one'"):
        ev.with_neighbouring(e, ev.ADD_REMOVE)


def test_with_neighbouring_covers_every_event_type() -> None:
    # every concrete event either takes the field, fixes a relation, or nests events
    for cls in ev.EVENT_TYPES:
        fixed = cls in (ev.RandomizedResponse, ev.PoissonSampled,
                        ev.SampledWithoutReplacement)
        nests = cls in (ev.Composed, ev.SelfComposed)
        assert ("neighbouring" in cls.__dataclass_fields__) != (fixed or nests), cls
    nested = ev.SelfComposed(ev.Composed((ev.Laplace(1.0), ev.PoissonSampled(
        ev.Gaussian(1.0), 0.1))), 3)
    out = ev.with_neighbouring(nested, ev.ADD_REMOVE)
    assert [e.neighbouring for e in _leaves(out)] == [ev.ADD_REMOVE, ev.ADD_REMOVE]
    with pytest.raises(ValueError, match="relation must be"):
        ev.with_neighbouring(nested, None)  # type: ignore[arg-type]


def test_parallel_composition_keeps_the_relation() -> None:
    from dpfast.accounting import parallel_composition

    rel = tables.count(KEYS, IDS, epsilon=0.45, domain=DOMAIN, rng=KEY)
    out = parallel_composition([rel.event, ev.Laplace(1.0)])
    assert out == ev.Epsilon(1.0, neighbouring=ev.ADD_REMOVE)  # was Epsilon(1.0): lost
    assert parallel_composition([ev.Laplace(1.0), ev.Epsilon(0.5)]) == ev.Epsilon(1.0)
    with pytest.raises(dp.NeighbouringRelationError):
        parallel_composition([rel.event, ev.RandomizedResponse(0.5)])
