"""A pytest plugin that runs a whole session with :func:`dpfast.compat.pipeline_dp.install`.

``python -m pytest tests analysis -p dpfast.compat.pipeline_dp._pytest_plugin`` (in a
PipelineDP checkout) patches PipelineDP before any test module is imported and restores it
at the end of the session.  This is how the project checks the drop-in against
PipelineDP's own test suite (tests/test_compat_pipeline_dp_suite.py).
"""

from __future__ import annotations

from dpfast.compat._suite_plugin import session_hooks

pytest_configure, pytest_unconfigure, pytest_report_header = session_hooks(
    "dpfast.compat.pipeline_dp")
