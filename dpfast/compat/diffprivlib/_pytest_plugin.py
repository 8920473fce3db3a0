"""A pytest plugin that runs a whole session with :func:`dpfast.compat.diffprivlib.install`.

``python -m pytest path/to/diffprivlib/tests -p dpfast.compat.diffprivlib._pytest_plugin``
patches diffprivlib before any test module is imported (so ``from diffprivlib.mechanisms
import Laplace`` in a test gets dpfast's class, as in a user's program) and restores it at the
end of the session.  This is how the project checks the drop-in against diffprivlib's own test
suite (tests/test_compat_diffprivlib_suite.py).
"""

from __future__ import annotations

from dpfast.compat._suite_plugin import session_hooks

pytest_configure, pytest_unconfigure, pytest_report_header = session_hooks(
    "dpfast.compat.diffprivlib")
