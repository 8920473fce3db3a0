"""The one release pipeline (issue 37): spec -> plan (event before any row) -> partials ->
the one charge -> finish, on the local and the Dask backend."""

from __future__ import annotations

import numpy as np
import pytest

import dpfast
from dpfast import tables
from dpfast.tables import groupby, run, spec, statistics

from .helpers import KEY


def _rows(n: int = 400, seed: int = 3) -> run.Rows:
    r = np.random.default_rng(seed)
    keys = r.integers(0, 12, n)
    ids = r.integers(0, 90, n)
    vals = r.integers(-4, 10, n)
    return run.Rows(keys, ids, vals, domain=None)


def _spec(stat: str, **kw: object) -> spec.ReleaseSpec:
    base: dict[str, object] = dict(epsilon=1.0, delta=1e-6, max_partitions=2,
                                   max_per_partition=3)
    if stat != "count":
        base["bounds"] = (-4, 10)
    base.update(kw)
    return spec.ReleaseSpec.make([spec.StatSpec(stat, None if stat == "count" else "v")],
                                 **base)  # type: ignore[arg-type]


@pytest.mark.parametrize("stat", ["count", "sum", "mean"])
def test_the_plan_knows_the_event_before_any_row(stat: str) -> None:
    """The event comes from the spec and the source's schema alone: the plan of a source
    whose rows would fail validation has the same event as the real release's."""
    rows = _rows()
    s = _spec(stat)
    p = statistics.get(stat).plan(s, rows)
    assert isinstance(p, run.Plan)
    rel = run.release(s, rows, rng=dpfast.default_rng(KEY))
    assert rel.event == p.event


@pytest.mark.parametrize("stat", ["count", "sum", "mean"])
def test_release_equals_the_public_function(stat: str) -> None:
    rows = _rows()
    s = _spec(stat)
    got = run.release(s, rows, rng=dpfast.default_rng(KEY))
    fn = getattr(tables, stat)
    args = (rows.keys, rows.privacy_ids) if stat == "count" else (
        rows.values, rows.keys, rows.privacy_ids)
    kw = dict(epsilon=1.0, delta=1e-6, max_partitions=2, max_per_partition=3)
    if stat != "count":
        kw["bounds"] = (-4, 10)
    ref = fn(*args, rng=dpfast.default_rng(KEY), **kw)
    np.testing.assert_array_equal(got.keys, ref.keys)
    np.testing.assert_array_equal(got.values, ref.values)
    assert got.event == ref.event


def test_failures_of_the_inputs_charge_nothing() -> None:
    """Validation happens in the partials step, before the charge."""
    budget = dpfast.Budget(epsilon=5.0, delta=1e-5)
    bad = run.Rows(np.arange(5), np.arange(4), np.arange(5))  # ids of the wrong length
    with pytest.raises(ValueError):
        run.release(_spec("sum"), bad, budget=budget, rng=dpfast.default_rng(KEY))
    assert budget.history() == []


def test_a_failure_after_the_charge_is_recorded_failed(monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    budget = dpfast.Budget(epsilon=5.0, delta=1e-5)

    def boom(*a: object, **k: object) -> None:
        raise MemoryError()

    monkeypatch.setattr(groupby, "release", boom)
    with pytest.raises(MemoryError):
        run.release(_spec("count"), _rows(), budget=budget, note="n",
                    rng=dpfast.default_rng(KEY))
    assert [(c.note, c.status) for c in budget.history()] == [("n", "failed")]


def test_a_refusal_releases_nothing_and_draws_no_release_id() -> None:
    """The release id (the noise stream) is drawn in ``finish``, after the charge: a
    refused release leaves the generator's allocator where it was."""
    budget = dpfast.Budget(epsilon=0.5, delta=1e-5)
    gen = dpfast.default_rng(KEY)
    with pytest.raises(dpfast.BudgetExceededError):
        run.release(_spec("count"), _rows(), budget=budget, rng=gen)
    assert budget.history() == []
    # the next release on this generator equals the first release on a fresh one
    a = run.release(_spec("count"), _rows(), rng=gen)
    b = run.release(_spec("count"), _rows(), rng=dpfast.default_rng(KEY))
    np.testing.assert_array_equal(a.values, b.values)


def test_spec_is_hashable_and_round_trips() -> None:
    s = _spec("mean", domain=np.arange(12), delta=0.0)
    assert hash(s) == hash(spec.ReleaseSpec.from_dict(s.to_dict()))
    assert spec.ReleaseSpec.from_dict(s.to_dict()) == s
    assert s.query_id() == spec.ReleaseSpec.from_dict(s.to_dict()).query_id()
    assert len(s.query_id()) == 32
    other = _spec("mean", domain=np.arange(11), delta=0.0)
    assert other.query_id() != s.query_id()  # the domain is part of the question
    assert _spec("mean", epsilon=1.0 + 2 ** -52).query_id() != _spec("mean").query_id()


def test_spec_checks_parameters_before_anything() -> None:
    with pytest.raises(ValueError, match="epsilon"):
        _spec("count", epsilon=-1.0)
    with pytest.raises(ValueError, match="max_partitions"):
        _spec("count", max_partitions=0)
    with pytest.raises(TypeError, match="StatSpec"):
        spec.ReleaseSpec.make(["count"], epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="statistic must be one of"):
        statistics.get("nope")


def test_registry_holds_the_ported_statistics() -> None:
    for name in ("count", "sum", "mean"):
        cls = statistics.REGISTRY[name]
        assert cls.name == name and cls.summary
    assert statistics.REGISTRY["sum"].bounds and not statistics.REGISTRY["count"].value
    with pytest.raises(TypeError, match="already registered"):
        type("Again", (statistics.Statistic,), {"name": "count"})


def test_dask_backend_equals_local_through_the_same_pipeline() -> None:
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    import dask

    from dpfast.dask.backend import DaskBackend, Frame

    rows = _rows(600)
    df = pd.DataFrame({"k": rows.keys, "id": rows.privacy_ids, "v": rows.values})
    for stat in ("count", "sum", "mean"):
        s = _spec(stat)
        ref = run.release(s, rows, rng=dpfast.default_rng(KEY))
        frame = Frame.make(dd.from_pandas(df, npartitions=3), "k", "id",
                           [] if stat == "count" else ["v"])
        with dask.config.set(scheduler="synchronous"):
            got = run.release(s, frame, backend=DaskBackend(2), rng=dpfast.default_rng(KEY))
        np.testing.assert_array_equal(got.keys, ref.keys)
        np.testing.assert_array_equal(got.values, ref.values)
        assert got.event == ref.event


def test_a_spec_and_a_source_must_agree_on_the_public_domain() -> None:
    """A spec planned for public keys (no key selection) over a source without them would
    publish the source's private keys unselected: refused before anything is read."""
    budget = dpfast.Budget(epsilon=5.0, delta=1e-5)
    public = _spec("count", domain=np.arange(12))
    with pytest.raises(ValueError, match="domain"):
        run.release(public, _rows(), budget=budget, rng=dpfast.default_rng(KEY))
    rows = _rows()
    with pytest.raises(ValueError, match="domain"):
        run.release(_spec("count"), run.Rows(rows.keys, rows.privacy_ids,
                                             domain=np.arange(12)), budget=budget)
    assert budget.history() == []
