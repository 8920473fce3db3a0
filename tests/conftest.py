from __future__ import annotations

import os

import hypothesis
import pytest

from .helpers import KEY

# deadline=None and no too_slow health check: both time each example on the wall clock, and
# a loaded machine (other processes on the two cores) makes any example "slow" by chance.
# A test's own @settings(...) inherits these (hypothesis takes the loaded profile as the
# parent of every settings object made after it).
hypothesis.settings.register_profile(
    "dpfast", deadline=None, max_examples=60,
    suppress_health_check=[hypothesis.HealthCheck.too_slow])
hypothesis.settings.load_profile("dpfast")

# No compile notice and no compile-progress thread in the test processes and the
# subprocesses they start (which inherit the environment): a progress line is written by a
# background thread seconds after a compilation began, so it could land in the captured
# stderr of whichever test runs then.  The tests of the notice and of the progress lines
# remove the variable themselves (tests/test_coldstart.py).
os.environ["DPFAST_NO_COMPILE_NOTICE"] = "1"

__all__ = ["KEY"]


@pytest.fixture
def key() -> bytes:
    """The fixed 32-byte key of the statistical tests (:data:`tests.helpers.KEY`)."""
    return KEY
