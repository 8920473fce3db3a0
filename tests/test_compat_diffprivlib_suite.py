"""diffprivlib 0.6.6's own complete test suite, with dpfast installed for the whole session.

tests/vendor/diffprivlib_suite/tests is diffprivlib's ``tests/`` folder, unchanged.  It runs in
a subprocess with ``-p dpfast.compat.diffprivlib._pytest_plugin``, which calls
:func:`dpfast.compat.diffprivlib.install` before collection -- so the suite's imports and
diffprivlib's tools and models all get dpfast's classes, as a user's program does.  Every
failure must be an intentional difference listed (with its reason) in
:data:`dpfast.compat.diffprivlib.DIFFERENCES`, and every folder must pass at least 98%.
"""

from __future__ import annotations

import collections
import os
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

diffprivlib = pytest.importorskip("diffprivlib")
sklearn = pytest.importorskip("sklearn")

from dpfast.compat import diffprivlib as dpl  # noqa: E402
from tests.helpers import SUBPROCESS_TIMEOUT_S  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SUITE = ROOT / "tests" / "vendor" / "diffprivlib_suite"
MIN_RATE = 0.98
# test counts of the unchanged suite (plain diffprivlib 0.6.6 passes all of them)
EXPECTED = {"mechanisms": 426, "models": 132, "tools": 181, "top": 78}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(diffprivlib.__version__ != "0.6.6",
                       reason="the vendored suite is diffprivlib 0.6.6's"),
    pytest.mark.skipif(tuple(int(p) for p in sklearn.__version__.split(".")[:2]) >= (1, 8),
                       reason="diffprivlib 0.6.6 needs scikit-learn < 1.8 (the compat extra "
                              "pins it): its LogisticRegression passes multi_class="),
]


def _folder(node_id: str) -> str:
    parts = node_id.split("/")
    return parts[1] if len(parts) > 2 else "top"


@pytest.fixture(scope="module")
def suite_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``{node id: outcome}`` of the whole suite run under ``install()``."""
    report = tmp_path_factory.mktemp("dpl_suite") / "report.xml"
    env = dict(os.environ)
    # tests/peer_plugins: the numpy seeding plugin (a name of its own: the suite's cwd has
    # its own ``tests`` package)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "tests" / "peer_plugins"),
                                         *filter(None, [env.get("PYTHONPATH")])])
    cmd = [sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider",
           "-c", "pytest.ini", "--confcutdir", ".",
           "-p", "dpfast.compat.diffprivlib._pytest_plugin", "-p", "dpfast_peer_seed",
           f"--junitxml={report}"]
    proc = subprocess.run(cmd, cwd=SUITE, env=env, capture_output=True, text=True,
                          timeout=max(1800, SUBPROCESS_TIMEOUT_S))
    assert report.exists(), proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "install() active for the whole session" in proc.stdout
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        module, _, cls = case.get("classname", "").rpartition(".")
        if not cls[:1].isupper():  # a module-level test function
            module, cls = case.get("classname", ""), ""
        node = module.replace(".", "/") + ".py::" + (cls + "::" if cls else "") + case.get("name")
        kinds = {child.tag for child in case}
        outcomes[node] = ("failed" if kinds & {"failure", "error"}
                          else "skipped" if "skipped" in kinds else "passed")
    return outcomes


def test_every_test_collected(suite_results: dict[str, str]) -> None:
    counts = collections.Counter(_folder(n) for n in suite_results)
    assert dict(counts) == EXPECTED


def test_every_failure_is_a_documented_difference(suite_results: dict[str, str]) -> None:
    failed = sorted(n for n, o in suite_results.items() if o == "failed")
    assert [n for n in failed if n not in dpl.DIFFERENCES] == []


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_pass_rate_per_folder(suite_results: dict[str, str], folder: str) -> None:
    outcomes = [o for n, o in suite_results.items() if _folder(n) == folder]
    assert outcomes.count("passed") / len(outcomes) >= MIN_RATE


def test_differences_table_is_documented() -> None:
    """One table: every entry names a test that exists and appears in the package docs."""
    for node in dpl.DIFFERENCES:
        path, _, name = node.partition("::")
        assert (SUITE / path).is_file() and name.split("::")[-1] in (SUITE / path).read_text()
        assert node in "".join((dpl.__doc__ or "").split())  # wrapped lines rejoined


def test_every_documented_difference_still_differs(suite_results: dict[str, str]) -> None:
    """The table lists exactly the tests that fail: an entry whose test now passes (a fixed
    difference) must leave the table, so the documentation never overstates them."""
    passing = sorted(n for n in dpl.DIFFERENCES if suite_results.get(n) == "passed")
    assert passing == []
