"""The intentional differences between dpfast's PipelineDP backend and PipelineDP 0.3.1.

One table, keyed by the node id of the PipelineDP test (repository snapshot vendored in
tests/vendor/pipelinedp_suite/) that fails when that suite runs with
:func:`dpfast.compat.pipeline_dp.install` active for the whole session, with the reason.
The package docstring shows the same table; tests/test_compat_pipeline_dp_suite.py checks
that every failure of the suite is listed here.
"""

from __future__ import annotations

__all__ = ["DIFFERENCES", "PLAIN_FAILURES"]

#: tests that fail with plain PipelineDP 0.3.1 too: the vendored snapshot is the last
#: repository commit before the 0.3.1 wheel, whose PERCENTILE/PLD code changed
PLAIN_FAILURES: dict[str, str] = {}

DIFFERENCES: dict[str, str] = {}
