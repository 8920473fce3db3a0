"""docs/extending.md: its example statistic, defined by the page's code alone, works through
every generated surface -- ``dpfast.tables``, the command line, ``dpfast warmup``, the API
reference (and ``dpfast.dask`` / the Session where they are generated from the registry).

The page's blocks are ``{code-block} python`` fences (not run by tests/test_docs.py, whose
fresh namespaces would register the statistic for the rest of the session): this module
runs them once and unregisters the statistic afterwards.
"""

from __future__ import annotations

import inspect
import pathlib
import re
import sys
import types
from typing import Any

import numpy as np
import pytest

import dpfast
from dpfast import tables
from dpfast.tables import facade
from dpfast.tables.statistics import REGISTRY
from tests.helpers import KEY

PAGE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "extending.md"
BLOCK = re.compile(r"^```\{code-block\} python\n(.*?)^```", re.S | re.M)
NAME = "count_above"


def _blocks() -> list[str]:
    return BLOCK.findall(PAGE.read_text())


@pytest.fixture(scope="module")
def example() -> Any:
    """The page's statistic module, executed as written (its first block) as a module."""
    assert NAME not in REGISTRY
    module = types.ModuleType("docs_extending_example")
    sys.modules[module.__name__] = module
    try:
        exec(compile(_blocks()[0], str(PAGE), "exec"), module.__dict__)
        yield module.__dict__
    finally:
        REGISTRY.pop(NAME, None)
        del sys.modules[module.__name__]


def _data(n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r = np.random.default_rng(seed)
    return r.integers(0, 10, n), r.choice(np.array(["A", "B", "C"]), n), r.integers(0, 400, n)


def test_the_page_defines_one_statistic_module_and_its_use() -> None:
    blocks = _blocks()
    assert len(blocks) == 2 and "class CountAbove(Statistic)" in blocks[0]
    assert "dpfast.tables.count_above(" in blocks[1]


def test_the_usage_block_runs(example, capsys) -> None:
    exec(compile(_blocks()[1], str(PAGE), "exec"), {"__name__": "__main__"})
    out = capsys.readouterr().out
    assert "Lyon" in out and "Release the number of rows per key whose value" in out


def test_it_is_a_generated_tables_function(example) -> None:
    fn = tables.count_above
    assert inspect.isfunction(fn) and fn.__module__ == "dpfast.tables"
    assert fn.__doc__ == example["CountAbove"].doc and NAME in tables.__all__
    sig = inspect.signature(fn)
    assert list(sig.parameters)[:3] == ["values", "keys", "privacy_ids"]
    assert sig.parameters["threshold"].default is inspect.Parameter.empty
    assert sig.parameters["threshold"].annotation == "float"


def test_it_releases_the_rows_above_the_threshold(example) -> None:
    """Without noise to speak of and bounding that does not bind (one row per person and
    key kept), the release is the exact count of rows above the threshold; its event is
    the count's on the same spec (known before any row is read)."""
    vals, keys, _ = _data()
    rel = tables.count_above(vals, keys, threshold=6, epsilon=1e7, domain=["A", "B", "C"],
                             rng=dpfast.default_rng(KEY))
    want = [int(np.sum((keys == k) & (vals > 6))) for k in "ABC"]
    np.testing.assert_array_equal(rel.values, want)
    ref = tables.count(keys[vals > 6], epsilon=1e7, domain=["A", "B", "C"],
                       rng=dpfast.default_rng(KEY))
    assert rel.values.tobytes() == ref.values.tobytes() and rel.event == ref.event


def test_it_is_charged_once_and_refuses_bad_input_before(example) -> None:
    vals, keys, ids = _data()
    budget = dpfast.Budget(1.0, 1e-5)
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        tables.count_above(vals, keys, ids, threshold=float("nan"), epsilon=0.5,
                           domain=["A", "B", "C"], budget=budget)
    with pytest.raises(TypeError, match="values"):  # strings: the schema, before the charge
        tables.count_above(keys, keys, ids, threshold=1, epsilon=0.5,
                           domain=["A", "B", "C"], budget=budget)
    with pytest.raises(TypeError, match="required keyword-only argument: 'threshold'"):
        tables.count_above(vals, keys, ids, epsilon=0.5, budget=budget)
    assert budget.history() == []
    rel = tables.count_above(vals, keys, ids, threshold=3, epsilon=0.5, delta=1e-6,
                             max_partitions=2, budget=budget, note="above", rng=KEY)
    assert [(h.note, h.event) for h in budget.history()] == [("above", rel.event)]


def test_missing_values_are_not_above(example) -> None:
    """A missing value (None, NaN) is a row below the threshold, never an error (an error
    would depend on the rows)."""
    vals = np.array([5, None, 7, np.nan, 1], dtype=object)
    rel = tables.count_above(vals, np.array(list("AABBB")), threshold=2, epsilon=1e7,
                             domain=["A", "B"], rng=dpfast.default_rng(KEY))
    np.testing.assert_array_equal(rel.values, [1, 1])


def test_it_is_a_dask_function_equal_to_the_local_release(example) -> None:
    """``dpfast.dask.count_above`` (generated) releases bit for bit what the local form
    releases on the same rows with the same key, for public and private keys."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dpfast.dask as dkd

    vals, keys, ids = _data()
    fn = dkd.count_above
    assert inspect.isfunction(fn) and fn.__module__ == "dpfast.dask"
    assert list(inspect.signature(fn).parameters)[:4] == ["ddf", "key", "value", "privacy_id"]
    assert "Privacy" in fn.__doc__ and NAME in dkd.__all__
    df = pd.DataFrame({"stay": vals, "city": keys, "person": ids})
    ddf = dd.from_pandas(df, npartitions=3)
    for kw in ({"domain": ["A", "B", "C"]}, {"delta": 1e-6}):
        got = fn(ddf, "city", "stay", "person", threshold=4, epsilon=1.0, max_partitions=2,
                 rng=dpfast.default_rng(KEY), **kw)
        want = tables.count_above(vals, keys, ids, threshold=4, epsilon=1.0,
                                  max_partitions=2, rng=dpfast.default_rng(KEY), **kw)
        assert list(got.keys) == list(want.keys)
        assert got.values.tobytes() == want.values.tobytes() and got.event == want.event
    with pytest.raises(TypeError, match="must hold numbers"):  # the schema, before anything
        fn(ddf, "city", "city", "person", threshold=4, epsilon=1.0, domain=["A"])


def test_it_is_a_release_subcommand(example, tmp_path, capsys) -> None:
    from dpfast.cli import main

    vals, keys, ids = _data(600)
    (tmp_path / "v.csv").write_text(
        "person,city,stay\n" + "".join(f"p{i},{k},{v}\n" for v, k, i in zip(vals, keys, ids)))
    (tmp_path / "d.csv").write_text("city\nA\nB\nC\n")
    with pytest.raises(SystemExit):
        main(["release", "--help"])
    assert NAME in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["release", NAME, "--help"])
    assert "count the rows whose value is greater" in capsys.readouterr().out
    code = main(["release", NAME, str(tmp_path / "v.csv"), "--value", "stay", "--threshold",
                 "6", "--key", "city", "--id", "person", "--epsilon", "1", "--nonnegative",
                 "--domain", str(tmp_path / "d.csv"), "-o", str(tmp_path / "o.csv")])
    assert code == 0
    lines = (tmp_path / "o.csv").read_text().splitlines()
    assert lines[0] == "city,count,ci_low,ci_high" and len(lines) == 4
    assert all(float(x) >= 0 for line in lines[1:] for x in line.split(",")[1:])
    assert "released the count_above of 3 keys" in capsys.readouterr().out


def test_it_is_warmed_up_and_in_the_reference(example) -> None:
    from dpfast.cli import warmup

    steps = dict(warmup.steps())
    steps[f"tables.{NAME}"]()  # its example threshold; compiles what it runs
    assert f".. autofunction:: dpfast.tables.{NAME}" in facade.reference("dpfast.tables")


def test_it_is_a_session_method_where_the_session_reads_the_registry(example) -> None:
    """The Session builds its methods from the registry: the page's statistic is
    ``session.count_above`` (listed by ``dir``), the same release as ``dpfast.tables``,
    answered from the cache the second time (one charge)."""
    pd = pytest.importorskip("pandas")
    stay, city, person = _data(1200)
    df = pd.DataFrame({"stay": stay, "city": city, "person": person})
    s = dpfast.Session(df, privacy_unit="person", epsilon=5.0, delta=1e-5, name="visits",
                       bounds={"stay": (0, 9)}, domains={"city": ["A", "B", "C"]},
                       rng=dpfast.default_rng(KEY))
    assert NAME in dir(s)
    rel = getattr(s, NAME)("stay", "city", threshold=4, epsilon=0.5)
    direct = getattr(tables, NAME)(stay, city.astype(object), person, threshold=4,
                                   epsilon=0.5, domain=["A", "B", "C"],
                                   rng=dpfast.default_rng(KEY))
    assert rel.values.tobytes() == direct.values.tobytes() and rel.event == direct.event
    again = getattr(s, NAME)("stay", "city", threshold=4, epsilon=0.5)
    assert again.values.tobytes() == rel.values.tobytes()
    assert len(s.budget.history()) == 1
