"""PipelineDP on Beam's DirectRunner in multi-process mode: the worker-side hook
(``beam_plugins=["dpfast.compat.pipeline_dp.worker"]``) makes the worker processes draw
their noise from dpfast; without it they run PipelineDP's own (PyDP) noise even when the
driver has ``install()``-ed dpfast."""

from __future__ import annotations

import collections
import json
import os
import pathlib
import subprocess
import sys

import pytest

from tests.helpers import SUBPROCESS_TIMEOUT_S

pytest.importorskip("pipeline_dp")
pytest.importorskip("apache_beam")

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROBE = "tests.pipeline_dp_beam_probe"
HOOK = "dpfast.compat.pipeline_dp.worker"
pytestmark = pytest.mark.slow


def _run(plugins: list[str], tmp_path: pathlib.Path) -> tuple[dict, int, list[tuple[int, str]]]:
    """(results by partition, driver pid, probe records) of one multi-process pipeline."""
    probe = tmp_path / f"probe-{len(plugins)}.txt"
    out = tmp_path / f"results-{len(plugins)}.txt"
    env = dict(os.environ, DPFAST_BEAM_PROBE=str(probe), DPFAST_BEAM_RESULTS=str(out))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run([sys.executable, "-m", "tests.pipeline_dp_beam_driver",
                           ",".join(plugins)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = {r[0]: r[1:] for r in map(json.loads, out.read_text().splitlines())}
    driver = next(int(line.split()[1]) for line in proc.stdout.splitlines()
                  if line.startswith("DRIVER "))
    records = [(int(p), w) for p, w in (line.split() for line in probe.read_text().splitlines())
               ] if probe.exists() else []
    return results, driver, records


def _check_results(results: dict) -> None:
    assert sorted(results) == ["p0", "p1", "p2", "p3"]
    for k, (count, total, median) in results.items():
        true = [float(uid % 10) for uid in range(400) if uid % 4 == int(k[1])]
        assert abs(count - 100) < 25  # Laplace b = 0.75
        assert abs(total - sum(true)) < 250  # Laplace b = 7.5
        assert 0.0 <= median <= 10.0 and abs(median - sorted(true)[49]) <= 4


def test_workers_draw_from_dpfast_with_the_hook(tmp_path: pathlib.Path) -> None:
    results, driver, records = _run([PROBE, HOOK], tmp_path)
    _check_results(results)
    by_kind = collections.Counter(w for _, w in records)
    workers = {p for p, _ in records}
    assert by_kind["dpfast"] >= 1 and by_kind["pydp"] == 0  # no PyDP noise anywhere
    assert by_kind["quantile"] == 4  # PERCENTILE: one dpfast draw per partition
    assert driver not in workers  # the noise was drawn in the worker processes


def test_without_the_hook_workers_run_pydp(tmp_path: pathlib.Path) -> None:
    """The control: install() in the driver does not reach Beam's worker processes (the
    QuantileCombiner the driver built is dpfast's and is shipped as such: PERCENTILE stays
    dpfast's)."""
    results, driver, records = _run([PROBE], tmp_path)
    _check_results(results)
    kinds = collections.Counter(w for _, w in records)
    assert kinds["pydp"] >= 8 and kinds["dpfast"] == 0  # 4 partitions x (count, sum)
    assert kinds["quantile"] == 4
    assert driver not in {p for p, _ in records}
