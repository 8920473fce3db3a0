from __future__ import annotations

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

__all__ = ["KEY"]


@pytest.fixture
def key() -> bytes:
    """The fixed 32-byte key of the statistical tests (:data:`tests.helpers.KEY`)."""
    return KEY
