"""The public surfaces generated from the statistic registry (issue 37): the functions of
``dpfast.tables``, the ``dpfast release`` command, ``dpfast warmup`` and the API reference.
"""

from __future__ import annotations

import inspect
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import dpfast
from dpfast import tables
from dpfast.tables import facade, run
from dpfast.tables.statistics import COMMON, REGISTRY, REQUIRED, Statistic
from tests.helpers import KEY, SUBPROCESS_TIMEOUT_S

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: the signatures of the hand-written functions before the facade (they must not change)
SIGNATURES = {
    "count": "(keys: 'Any', privacy_ids: 'Any' = None, *, epsilon: 'float | None' = None, "
             "delta: 'float' = 0.0, rho: 'float | None' = None, max_partitions: 'int' = 1, "
             "max_per_partition: 'int' = 1, domain: 'Any' = None, noise: 'str | None' = None, "
             "rng: 'RngLike' = None, budget: 'Any' = None, note: 'str' = '', "
             "use_case: 'str | None' = None, dropna: 'bool' = False, "
             "selection: 'str' = 'auto', bounding: 'str' = 'uniform') -> 'TableRelease'",
    "sum": "(values: 'Any', keys: 'Any', privacy_ids: 'Any' = None, *, "
           "bounds: 'tuple[float, float] | str', epsilon: 'float | None' = None, "
           "delta: 'float' = 0.0, rho: 'float | None' = None, max_partitions: 'int' = 1, "
           "max_per_partition: 'int' = 1, domain: 'Any' = None, noise: 'str | None' = None, "
           "rng: 'RngLike' = None, budget: 'Any' = None, note: 'str' = '', "
           "use_case: 'str | None' = None, dropna: 'bool' = False, "
           "selection: 'str' = 'auto', bounding: 'str' = 'uniform') -> 'TableRelease'",
}
SIGNATURES["mean"] = SIGNATURES["sum"]


def _python(code: str) -> str:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env=env, timeout=SUBPROCESS_TIMEOUT_S).stdout


# ----------------------------------------------------------------------------- imports
def test_the_facades_import_no_kernel() -> None:
    """``import dpfast.tables`` and ``import dpfast.dask`` load no numba: the registry and
    the generated functions load on first use."""
    out = _python("import sys, dpfast.tables, dpfast.dask\n"
                  "print('numba' in sys.modules, 'dpfast.tables.statistics' in sys.modules)")
    assert out.split() == ["False", "False"]


GENERATED = sorted(REGISTRY)


def test_every_registered_statistic_is_generated() -> None:
    """No hand-written release function is left for a registered statistic (issue 37: the
    rank statistics were the last): every one states its docstring, and the facades list
    no statistic by hand."""
    assert all(s.doc for s in REGISTRY.values())
    import dpfast.dask as dkd

    assert not set(REGISTRY) & set(tables._PUBLIC)
    assert not set(REGISTRY) & set(dkd._PUBLIC)
    for name in REGISTRY:
        assert inspect.isfunction(getattr(tables, name)) and name in tables.__all__
        assert getattr(tables, name).__module__ == "dpfast.tables"


#: the rank statistics' hand-written functions before they were generated: their
#: parameters (name -> default; all after ``*`` keyword-only); median / min / max took
#: the same as ``**kwargs``, but ``q``
RANK_PARAMS = {"q": inspect.Parameter.empty, "bounds": None,
               "epsilon": inspect.Parameter.empty, "delta": 0.0, "max_partitions": 1,
               "max_per_partition": 1, "n_candidates": 256, "candidates": None,
               "domain": None, "rng": None, "budget": None, "note": "", "dropna": False,
               "selection": "auto", "bounding": "uniform"}


@pytest.mark.parametrize("name", ["quantile", "median", "min", "max"])
def test_rank_functions_keep_their_parameters(name: str) -> None:
    """The generated rank functions take what the hand-written ones took (the same
    positional head, keyword-only names and defaults; median / min / max now spell out
    what their ``**kwargs`` took), locally and on Dask (columns by name, ``npartitions``,
    no ``dropna``)."""
    import dpfast.dask as dkd

    want = {k: v for k, v in RANK_PARAMS.items() if name == "quantile" or k != "q"}
    for fn, head, drop, add in (
            (getattr(tables, name), ["values", "keys", "privacy_ids"], set(), {}),
            (getattr(dkd, name), ["ddf", "key", "value", "privacy_id"], {"dropna"},
             {"npartitions": None})):
        params = inspect.signature(fn).parameters
        assert [p for p in params if params[p].kind is not params[p].KEYWORD_ONLY] == head
        kw = {p: params[p].default for p in params if params[p].kind is params[p].KEYWORD_ONLY}
        assert kw == {k: v for k, v in want.items() if k not in drop} | add


# ----------------------------------------------------------------------------- functions
@pytest.mark.parametrize("name", ["count", "sum", "mean"])
def test_generated_functions_keep_their_signatures(name: str) -> None:
    assert str(inspect.signature(getattr(tables, name))) == SIGNATURES[name]


@pytest.mark.parametrize("name", GENERATED)
def test_every_registered_statistic_is_a_real_public_function(name: str) -> None:
    stat = REGISTRY[name]
    fn = getattr(tables, name)
    assert inspect.isfunction(fn) and fn is getattr(tables, name)
    assert (fn.__name__, fn.__qualname__, fn.__module__) == (name, name, "dpfast.tables")
    assert fn.__doc__ == stat.doc and "\n    Privacy\n    -------\n" in stat.doc
    assert name in tables.__all__ and name in dir(tables)
    params = inspect.signature(fn).parameters
    head = [p for p in params if params[p].kind is not inspect.Parameter.KEYWORD_ONLY]
    assert head == (["values"] if stat.value else []) + ["keys", "privacy_ids"]
    assert ("bounds" in params) == stat.bounds
    for p, default in stat.params.items():
        want = inspect.Parameter.empty if default is REQUIRED else default
        assert params[p].default == want and params[p].kind is params[p].KEYWORD_ONLY
    assert {p for p in params if p in COMMON} == set(stat.common)


def test_a_generated_function_is_the_one_pipeline() -> None:
    """``tables.sum`` is its spec run through ``run.release``: bit-identical releases and
    events from the same generator key."""
    rng = np.random.default_rng(3)
    keys, ids, vals = rng.integers(0, 4, 500), rng.integers(0, 90, 500), rng.random(500) * 9
    rel = tables.sum(vals, keys, ids, bounds=(0.0, 9.0), epsilon=0.5, max_partitions=2,
                     domain=np.arange(4), rng=dpfast.default_rng(KEY))
    spec = REGISTRY["sum"].make_spec(bounds=(0.0, 9.0), epsilon=0.5, max_partitions=2,
                                     domain=np.arange(4))
    ref = run.release(spec, run.Rows(keys, ids, vals, domain=np.arange(4)),
                      rng=dpfast.default_rng(KEY))
    assert rel.values.tobytes() == ref.values.tobytes() and rel.event == ref.event


def test_python_reports_a_missing_or_unknown_argument() -> None:
    """The generated functions are real: Python's own messages, nothing charged."""
    budget = dpfast.Budget(1.0, 1e-6)
    with pytest.raises(TypeError, match="required keyword-only argument: 'bounds'"):
        tables.sum([1.0], [1], epsilon=1.0, budget=budget)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bound'"):
        tables.mean([1.0], [1], bound=(0, 1), epsilon=1.0, budget=budget)
    with pytest.raises(TypeError, match="dropna must be True or False"):
        tables.count([1], epsilon=1.0, domain=[1], dropna="yes", budget=budget)
    assert budget.history() == []


def test_the_registry_refuses_a_malformed_statistic() -> None:
    """Names the surfaces could not offer are refused when the class is defined."""
    with pytest.raises(TypeError, match="public identifier"):
        type("Bad", (Statistic,), {"name": "two words"})
    with pytest.raises(TypeError, match="release parameters"):
        type("Bad", (Statistic,), {"name": "bad_clash", "params": {"epsilon": 1.0}})
    with pytest.raises(TypeError, match="unknown parameters"):
        type("Bad", (Statistic,), {"name": "bad_common", "common": ("epsilon", "eps")})
    with pytest.raises(TypeError, match="already registered"):
        type("Bad", (Statistic,), {"name": "count"})
    assert not any(n.startswith("bad") or " " in n for n in REGISTRY)


def test_parameters_without_rho_make_epsilon_required() -> None:
    class _Eps(Statistic):  # not registered (no name): only its parameters are read
        common = ("epsilon", "delta", "rng")
        params = {"q": REQUIRED, "n": 3}

    names = [(p.name, p.default) for p in facade.parameters(_Eps)]
    assert names == [("keys", REQUIRED), ("privacy_ids", None), ("q", REQUIRED),
                     ("epsilon", REQUIRED), ("delta", 0.0), ("rng", None), ("n", 3)]
    dask = [p.name for p in facade.parameters(_Eps, "dask")]
    assert dask == ["ddf", "key", "privacy_id", "q", "epsilon", "delta", "rng",
                    "npartitions", "n"]


# ----------------------------------------------------------------------------- dask
@pytest.mark.parametrize("name", [n for n in GENERATED if REGISTRY[n].dask])
def test_every_registered_statistic_is_a_dask_function(name: str) -> None:
    import dpfast.dask as dkd

    stat = REGISTRY[name]
    fn = getattr(dkd, name)
    assert inspect.isfunction(fn) and fn is getattr(dkd, name) and name in dkd.__all__
    assert (fn.__name__, fn.__module__) == (name, "dpfast.dask")
    assert "\n    Privacy\n    -------\n" in fn.__doc__
    params = inspect.signature(fn).parameters
    head = [p for p in params if params[p].kind is not inspect.Parameter.KEYWORD_ONLY]
    assert head == ["ddf", "key"] + (["value"] if stat.value else []) + ["privacy_id"]
    assert "npartitions" in params and "dropna" not in params


def test_a_statistic_without_dask_steps_is_local_only() -> None:
    """``dask = False`` (a port to one machine first): ``dpfast.tables`` offers it,
    ``dpfast.dask`` does not generate it (a legacy Dask function of that name stays)."""
    import dpfast.dask as dkd

    type("_LocalOnly", (Statistic,), {"name": "facade_local_only", "dask": False,
                                      "doc": "Local only.\n\n    Privacy\n    -------\n"})
    try:
        assert inspect.isfunction(tables.facade_local_only)
        assert "facade_local_only" not in dkd.__all__
        with pytest.raises(AttributeError):
            dkd.facade_local_only  # noqa: B018
    finally:
        REGISTRY.pop("facade_local_only")


def test_dask_signatures_are_kept() -> None:
    """The Dask forms keep their parameters (names, kinds, defaults) as they were."""
    import dpfast.dask as dkd

    for name in ("count", "sum", "mean"):
        local = str(inspect.signature(getattr(tables, name)))
        want = (local.replace("values: 'Any', keys: 'Any', privacy_ids: 'Any' = None",
                              "ddf: 'Any', key: 'Any', value: 'str', "
                              "privacy_id: 'str | None' = None")
                .replace("keys: 'Any', privacy_ids: 'Any' = None",
                         "ddf: 'Any', key: 'Any', privacy_id: 'str | None' = None")
                .replace("rng: 'RngLike'", "rng: 'Any'")
                .replace(" | str', epsilon", "', epsilon")
                .replace("use_case: 'str | None' = None, dropna: 'bool' = False",
                         "use_case: 'str | None' = None, npartitions: 'int | None' = None"))
        assert str(inspect.signature(getattr(dkd, name))) == want, name


def test_the_dask_form_is_the_local_release() -> None:
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    import dpfast.dask as dkd

    rng = np.random.default_rng(5)
    df = pd.DataFrame({"k": rng.integers(0, 5, 700), "p": rng.integers(0, 150, 700),
                       "v": rng.integers(-3, 9, 700)})
    ddf = dd.from_pandas(df, npartitions=4)
    budget = dpfast.Budget(10.0, 1e-5)
    got = dkd.sum(ddf, "k", "v", "p", bounds=(-3, 8), epsilon=1.0, delta=1e-6,
                  max_partitions=2, rng=dpfast.default_rng(KEY), budget=budget, note="d")
    want = tables.sum(df.v.to_numpy(), df.k.to_numpy(), df.p.to_numpy(), bounds=(-3, 8),
                      epsilon=1.0, delta=1e-6, max_partitions=2, rng=dpfast.default_rng(KEY))
    assert got.values.tobytes() == want.values.tobytes() and list(got.keys) == list(want.keys)
    assert [(h.note, h.event) for h in budget.history()] == [("d", want.event)]
    with pytest.raises(ValueError, match="npartitions must be a positive int"):
        dkd.count(ddf, "k", "p", epsilon=1.0, domain=[0], npartitions=0, budget=budget)
    with pytest.raises(ValueError, match="value column 'w' is not in the DataFrame"):
        dkd.mean(ddf, "k", "w", "p", bounds=(0, 1), epsilon=1.0, domain=[0], budget=budget)
    assert len(budget.history()) == 1


# ----------------------------------------------------------------------------- the CLI
@pytest.fixture
def visits(tmp_path):
    r = np.random.default_rng(1)
    path = tmp_path / "visits.csv"
    lines = ["person,city,stay"] + [f"p{r.integers(0, 200)},{'ABC'[r.integers(0, 3)]},"
                                    f"{r.integers(0, 12)}" for _ in range(800)]
    path.write_text("\n".join(lines) + "\n")
    (tmp_path / "cities.csv").write_text("city\nA\nB\nC\n")
    (tmp_path / "key.bin").write_bytes(KEY)
    return tmp_path


def _cli(argv: list[str]) -> int:
    from dpfast.cli import main

    return main(argv)


@pytest.mark.parametrize("name", ["count", "sum", "mean"])
def test_dpfast_release_equals_its_alias(name: str, visits, capsys) -> None:
    """``dpfast release NAME`` writes exactly what ``dpfast NAME`` writes (same key)."""
    opts = [str(visits / "visits.csv"), "--key", "city", "--id", "person", "--epsilon", "1",
            "--domain", str(visits / "cities.csv"), "--seed-key-file",
            str(visits / "key.bin")]
    if name != "count":
        opts += ["--value", "stay", "--bounds", "0", "10"]
    assert _cli(["release", name, *opts, "-o", str(visits / "a.csv")]) == 0
    assert _cli([name, *opts, "-o", str(visits / "b.csv")]) == 0
    a, b = (visits / "a.csv").read_text(), (visits / "b.csv").read_text()
    assert a == b and a.splitlines()[0].split(",")[0] == "city" and len(a.splitlines()) == 4
    out = capsys.readouterr().out
    assert out.count(f"released the {name} of 3 keys") == 2


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_statistic_releases_from_the_command_line(name: str, visits,
                                                                   capsys) -> None:
    """``dpfast release NAME`` for every registered statistic, its options from the class
    (value, bounds, example parameters); the summary names the intervals it has."""
    stat = REGISTRY[name]
    argv = ["release", name, str(visits / "visits.csv"), "--key", "city", "--id", "person",
            "--epsilon", "1", "--domain", str(visits / "cities.csv"), "-o",
            str(visits / "o.csv")]
    if stat.value:
        argv += ["--value", "stay"]
    if stat.bounds:
        argv += ["--bounds", "0", "12"]
    for p, v in stat.example.items():
        argv += ["--" + p.replace("_", "-"), repr(v)]
    assert _cli(argv) == 0
    lines = (visits / "o.csv").read_text().splitlines()
    assert len(lines) == 4 and lines[0].startswith("city,")
    out = capsys.readouterr().out
    assert f"released the {name} of 3 keys" in out
    assert ("interval half-width" in out) == stat.law_interval


@pytest.mark.parametrize("grid", [["--n-candidates", "13"], ["--candidates", "[0, 2, 5, 9]"]])
def test_dpfast_release_quantile_takes_its_grid(grid: list[str], visits, capsys) -> None:
    """The rank statistics' grid parameters are options of ``dpfast release`` (from the
    class's ``params``, no rank code in the CLI) and give what ``dpfast.tables.quantile``
    gives with the same key."""
    import csv

    argv = ["release", "quantile", str(visits / "visits.csv"), "--key", "city", "--id",
            "person", "--value", "stay", "--q", "[0.25, 0.75]", "--epsilon", "1",
            "--domain", str(visits / "cities.csv"), "--seed-key-file",
            str(visits / "key.bin"), "-o", str(visits / "q.csv"), *grid]
    if grid[0] == "--n-candidates":
        argv += ["--bounds", "0", "12"]
    assert _cli(argv) == 0
    with (visits / "q.csv").open() as f:
        rows = list(csv.reader(f))
    with (visits / "visits.csv").open() as f:
        recs = list(csv.DictReader(f))
    kw = ({"n_candidates": 13, "bounds": (0, 12)} if grid[0] == "--n-candidates"
          else {"candidates": [0, 2, 5, 9]})
    want = tables.quantile(np.array([int(r["stay"]) for r in recs]),
                           np.array([r["city"] for r in recs]),
                           np.array([r["person"] for r in recs]), q=[0.25, 0.75],
                           epsilon=1.0, domain=np.array(["A", "B", "C"]),
                           rng=dpfast.default_rng(KEY), **kw)
    got = [[float(x) for x in r[1:3]] for r in rows[1:]]
    assert got == [[float(x) for x in v] for v in want.values]
    assert "released the quantile of 3 keys" in capsys.readouterr().out


def test_dpfast_release_binds_the_ledger_to_its_privacy_unit(visits, capsys) -> None:
    """Channel 10 (a ledger's total is for one privacy unit) through ``dpfast release``:
    the ledger is bound to ``--id`` as ``dpfast count`` binds it, and a release with
    another unit is refused before anything is read or charged (without the command in
    the CLI's unit commands the second release was charged to the same ledger)."""
    ledger = visits / "l.sqlite"
    opts = [str(visits / "visits.csv"), "--key", "city", "--epsilon", "0.5", "--domain",
            str(visits / "cities.csv"), "--ledger", str(ledger), "--budget-epsilon", "2"]
    assert _cli(["release", "count", *opts, "--id", "person", "-o",
                 str(visits / "a.csv")]) == 0
    capsys.readouterr()
    assert _cli(["release", "count", *opts, "--record-level", "-o",
                 str(visits / "b.csv")]) == 2
    assert "no --id (one row is one person)" in capsys.readouterr().err
    assert not (visits / "b.csv").exists()
    budget = dpfast.Budget.from_ledger(str(ledger))
    assert len(budget.history()) == 1
    budget.close()


def test_dpfast_release_help_lists_every_registered_statistic(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        _cli(["release", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for name, stat in REGISTRY.items():
        assert f"    {name}" in text and stat.summary in text, name
    with pytest.raises(SystemExit):
        _cli(["--help"])
    assert "release" in capsys.readouterr().out


def test_dpfast_release_options_follow_the_statistic(capsys) -> None:
    from dpfast.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["release", "count", "f.csv", "--key", "k", "--epsilon", "1",
                              "--nonnegative", "-o", "o.csv"])
    assert (args.cmd, args.statistic, args.nonnegative) == ("release", "count", True)
    with pytest.raises(SystemExit):  # a count reads no value column
        parser.parse_args(["release", "count", "f.csv", "--key", "k", "--epsilon", "1",
                           "--value", "v", "-o", "o.csv"])
    with pytest.raises(SystemExit):  # a sum needs its bounds
        parser.parse_args(["release", "sum", "f.csv", "--key", "k", "--epsilon", "1",
                           "--value", "v", "-o", "o.csv"])
    assert "--bounds" in capsys.readouterr().err


# ----------------------------------------------------------------------------- warmup, docs
def test_warmup_has_a_step_per_registered_statistic() -> None:
    from dpfast.cli import warmup

    names = [n for n, _ in warmup.steps()]
    assert [n for n in names if n.startswith("tables.") and n[7:] in REGISTRY] == \
        [f"tables.{n}" for n in REGISTRY]
    assert len(names) == len(set(names)) and names[-2:] == ["demo", "bench"]
    dict(warmup.steps())["tables.mean"]()  # runs (compiles) the mean's kernels


def test_the_reference_is_generated_from_the_registry() -> None:
    """docs/api/tables.rst lists the statistics' functions through the registry: the
    marker line expands to one entry per registered statistic, each once."""
    page = (ROOT / "docs" / "api" / "tables.rst").read_text()
    assert ".. dpfast-statistics:: dpfast.tables" in page
    text = facade.expand_reference(page)
    for name in REGISTRY:
        assert text.count(f".. autofunction:: dpfast.tables.{name}\n") == 1, name
    assert ".. dpfast-statistics::" not in text
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert 'app.connect("source-read", _registry_reference)' in conf
    with pytest.raises(ValueError, match="module must be"):
        facade.reference("dpfast.session")
