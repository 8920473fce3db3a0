"""A pytest plugin that runs a whole session with :func:`dpfast.compat.diffprivlib.install`.

``python -m pytest path/to/diffprivlib/tests -p dpfast.compat.diffprivlib._pytest_plugin``
patches diffprivlib before any test module is imported (so ``from diffprivlib.mechanisms
import Laplace`` in a test gets dpfast's class, as in a user's program) and restores it at the
end of the session.  This is how the project checks the drop-in against diffprivlib's own test
suite (tests/test_compat_diffprivlib_suite.py).
"""

from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    """Install the backend before collection."""
    from dpfast.compat.diffprivlib import install

    install()


def pytest_unconfigure(config: Any) -> None:
    """Undo the session's :func:`install`."""
    from dpfast.compat.diffprivlib import is_installed, uninstall

    if is_installed():
        uninstall()


def pytest_report_header(config: Any) -> str:
    """Say in the header that the session runs on dpfast."""
    return "dpfast.compat.diffprivlib.install() active for the whole session"
