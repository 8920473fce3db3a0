"""A pytest plugin that runs a whole session with :func:`dpfast.compat.pipeline_dp.install`.

``python -m pytest tests analysis -p dpfast.compat.pipeline_dp._pytest_plugin`` (in a
PipelineDP checkout) patches PipelineDP before any test module is imported and restores it
at the end of the session.  This is how the project checks the drop-in against
PipelineDP's own test suite (tests/test_compat_pipeline_dp_suite.py).
"""

from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    """Install the backend before collection."""
    from dpfast.compat.pipeline_dp import install

    install()


def pytest_unconfigure(config: Any) -> None:
    """Undo the session's :func:`install`."""
    from dpfast.compat.pipeline_dp import is_installed, uninstall

    if is_installed():
        uninstall()


def pytest_report_header(config: Any) -> str:
    """Say in the header that the session runs on dpfast."""
    return "dpfast.compat.pipeline_dp.install() active for the whole session"
