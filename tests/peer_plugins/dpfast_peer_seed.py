"""A pytest plugin for the peer suites run under ``install()`` (PipelineDP's, diffprivlib's):
before each of their tests, numpy's global generator is seeded from the test's node id.

Their own Monte Carlo checks and test data draw from ``np.random`` unseeded (e.g.
PipelineDP's ``compute_sum_laplace_gaussian_quantiles`` test, a 0.99 quantile of 4 * 10^6
samples within 0.015: a few failures in a thousand runs), on paths the backends do not
replace -- dpfast's noise never comes from numpy's generator.  Seeded, such a test has the
same outcome on every run, so a failure of the suite is the backend's, not chance.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_numpy_global_generator(request: pytest.FixtureRequest) -> Iterator[None]:
    digest = hashlib.blake2b(request.node.nodeid.encode(), digest_size=4).digest()
    np.random.seed(int.from_bytes(digest, "little"))  # noqa: NPY002 - the suites draw from it
    yield
