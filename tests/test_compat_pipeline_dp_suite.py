"""PipelineDP's own test suite (``tests/`` and ``analysis/``), with dpfast installed for the
whole session.

tests/vendor/pipelinedp_suite is PipelineDP's repository snapshot (README there: the commit
and why), unchanged.  It runs in a subprocess with ``-p
dpfast.compat.pipeline_dp._pytest_plugin``, which calls :func:`dpfast.compat.pipeline_dp.install`
before collection -- so every local and Beam ``DirectRunner`` pipeline of the suite draws
its noise from dpfast, as a user's program does.  Every failure must be an intentional
difference listed (with its reason) in :data:`dpfast.compat.pipeline_dp.DIFFERENCES`; the
tests in :data:`dpfast.compat.pipeline_dp.NOT_APPLICABLE` are not run; every folder must pass
at least 98% of what it runs.

Runtime: by default the tests in :data:`SLOW` (long, and on no path the backend replaces)
are deselected; ``DPFAST_PEER_SUITE=full`` runs them too.
"""

from __future__ import annotations

import collections
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

pipeline_dp = pytest.importorskip("pipeline_dp")
pytest.importorskip("apache_beam")

from dpfast.compat import pipeline_dp as pdp  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "vendor" / "pipelinedp_suite"
MIN_RATE = 0.98
# tests collected from each folder of the snapshot, Spark files excluded (pipeline-dp 0.3.1,
# apache-beam installed): 610 in tests/, 170 in analysis/
COLLECTED = {"tests": 610, "analysis": 170}
FULL = os.environ.get("DPFAST_PEER_SUITE") == "full"
pytestmark = pytest.mark.slow

_NO_NOISE = "no path the backend replaces"
#: deselected unless DPFAST_PEER_SUITE=full: the longest tests (seconds measured on the
#: 2-core CI host under install()), none of which reaches a replaced path (``--deselect``
#: matches node-id prefixes: no entry may be a prefix of another test's id)
SLOW: dict[str, str] = {
    "tests/dp_engine_test.py::DpEngineTest::test_select_partitions_weighted_gaussian0":
        "6 s; PipelineDP's own weighted-Gaussian selection (numpy noise, not replaced)",
    "tests/dp_engine_test.py::DpEngineTest::test_select_partitions_weighted_gaussian1":
        "84 s; PipelineDP's own weighted-Gaussian selection (numpy noise, not replaced)",
    "tests/dp_engine_test.py::DpEngineTest::test_select_partitions_weighted_gaussian2":
        "11 s; PipelineDP's own weighted-Gaussian selection (numpy noise, not replaced)",
    "tests/dp_computations_test.py::DPComputationsTest::test_apply_laplace_mechanism":
        "21 s; apply_laplace_mechanism called directly (not replaced)",
    "tests/dp_computations_test.py::DPComputationsTest::test_apply_gaussian_mechanism":
        "19 s; apply_gaussian_mechanism called directly (not replaced)",
    "tests/budget_accounting_test.py::PLDBudgetAccountantTest::"
    "test_compute_budgets_gaussian_thresholding": f"7 s; PLD accounting only, {_NO_NOISE}",
}


def _folder(node_id: str) -> str:
    return node_id.split("/")[0]


def _node(case: ET.Element) -> str:
    module, _, cls = case.get("classname", "").rpartition(".")
    if not cls[:1].isupper():  # a module-level test function
        module, cls = case.get("classname", ""), ""
    return module.replace(".", "/") + ".py::" + (cls + "::" if cls else "") + case.get("name", "")


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``{node id: outcome}`` of the suite run under ``install()``."""
    report = tmp_path_factory.mktemp("pdp_suite") / "report.xml"
    env = dict(os.environ)
    # tests/peer_plugins: the numpy seeding plugin (a name of its own: the suite's cwd has
    # its own ``tests`` package)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "peer_plugins"),
                                         *filter(None, [env.get("PYTHONPATH")])])
    skip = [*pdp.NOT_APPLICABLE, *([] if FULL else SLOW)]
    cmd = [sys.executable, "-m", "pytest", "tests", "analysis", "-p", "no:cacheprovider",
           "-c", "pytest.ini", "--confcutdir", ".",
           "-p", "dpfast.compat.pipeline_dp._pytest_plugin", "-p", "dpfast_peer_seed",
           f"--junitxml={report}"]
    for node in skip:
        cmd += ["--ignore", node] if "::" not in node else ["--deselect", node]
    proc = subprocess.run(cmd, cwd=SUITE, env=env, capture_output=True, text=True, timeout=1800)
    assert report.exists(), proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "install() active for the whole session" in proc.stdout
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        outcomes[_node(case)] = ("failed" if kinds & {"failure", "error"}
                                 else "skipped" if "skipped" in kinds else "passed")
        for child in case:
            if child.tag in ("failure", "error"):  # shown by the test that fails on it
                _MESSAGES[_node(case)] = (child.get("message") or "")[:300] + "\n" + (
                    child.text or "")[-1500:]
    return outcomes


#: the failure message of each failed test of the suite run (node id -> text)
_MESSAGES: dict[str, str] = {}


def test_every_test_collected(suite_results: dict[str, str]) -> None:
    """Nothing lost: the counts of the unchanged snapshot less what was deselected."""
    counts = collections.Counter(_folder(n) for n in suite_results)
    deselected = collections.Counter(
        _folder(n) for n in [*pdp.NOT_APPLICABLE, *([] if FULL else SLOW)] if "::" in n)
    assert dict(counts) == {f: n - deselected[f] for f, n in COLLECTED.items()}
    assert not set(suite_results) & set(pdp.NOT_APPLICABLE)


def test_every_failure_is_a_documented_difference(suite_results: dict[str, str]) -> None:
    failed = sorted(n for n, o in suite_results.items() if o == "failed")
    new = [n for n in failed if n not in pdp.DIFFERENCES]
    assert new == [], "\n\n".join(f"{n}:\n{_MESSAGES.get(n, '')}" for n in new)


@pytest.mark.parametrize("folder", sorted(COLLECTED))
def test_pass_rate_per_folder(suite_results: dict[str, str], folder: str) -> None:
    outcomes = [o for n, o in suite_results.items() if _folder(n) == folder]
    assert outcomes.count("passed") / len(outcomes) >= MIN_RATE


def test_percentile_tests_run_on_dpfast(suite_results: dict[str, str]) -> None:
    """The suite's PERCENTILE tests pass with dpfast's exact quantile in place of PyDP's
    tree (tolerance 0.1 on 0..1000, the tree's resolution)."""
    quantile = {n: o for n, o in suite_results.items() if "QuantileCombinerTest" in n}
    assert len(quantile) >= 2 and set(quantile.values()) == {"passed"}


def test_differences_table_is_documented() -> None:
    """One table: every entry names a test (or file) that exists and appears in the package
    docstring."""
    doc = "".join((pdp.__doc__ or "").split())  # wrapped lines rejoined
    for node in [*pdp.DIFFERENCES, *pdp.NOT_APPLICABLE, *SLOW]:
        path, _, name = node.partition("::")
        assert (SUITE / path).is_file(), node
        test = name.split("::")[-1]  # absl appends parameter names/indices to the function's
        text = (SUITE / path).read_text()
        assert not name or any(f"def {test[:i]}(" in text for i in range(len(test), 4, -1)), node
    for node in [*pdp.DIFFERENCES, *pdp.NOT_APPLICABLE]:
        assert node in doc, node
