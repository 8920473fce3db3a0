"""The pytest hooks that run a whole session with a compat backend installed.

A backend's ``_pytest_plugin`` module binds them for its package, so that
``python -m pytest ... -p dpfast.compat.<backend>._pytest_plugin`` patches the peer library
before any test module is imported and restores it at the end of the session.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def session_hooks(package: str) -> tuple[Callable[[Any], None], Callable[[Any], None],
                                         Callable[[Any], str]]:
    """``(pytest_configure, pytest_unconfigure, pytest_report_header)`` for the backend
    ``package`` (a module with ``install``, ``uninstall`` and ``is_installed``)."""

    def pytest_configure(config: Any) -> None:
        """Install the backend before collection."""
        importlib.import_module(package).install()

    def pytest_unconfigure(config: Any) -> None:
        """Undo the session's ``install()``."""
        backend = importlib.import_module(package)
        if backend.is_installed():
            backend.uninstall()

    def pytest_report_header(config: Any) -> str:
        """Say in the header that the session runs on dpfast."""
        return f"{package}.install() active for the whole session"

    return pytest_configure, pytest_unconfigure, pytest_report_header
