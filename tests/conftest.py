from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator

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


@pytest.fixture(autouse=True)
def _replayable_release_ids(request: pytest.FixtureRequest) -> Iterator[None]:
    """A release made with a raw key draws its release id from ``os.urandom`` (a raw key
    never replays noise), so a test passing ``rng=KEY`` would see different noise on every
    run and any outcome that holds with probability 97% would fail one CI run in 33.
    Within a test the ids come from :func:`dpfast.testing.replay` keyed by the test's id:
    still distinct within the test (the freshness tests hold), the same on every run."""
    from dpfast.testing import replay

    key = hashlib.blake2b(request.node.nodeid.encode(), digest_size=32).digest()
    with replay(key):
        yield
