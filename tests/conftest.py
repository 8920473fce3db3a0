from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys
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

#: the warm-up's heaviest families (about half of a cold warm-up), compiled in one process
#: while the other compiles the rest (:func:`pytest_configure`)
_WARM_FIRST = ("bench", "tables.quantile", "tables.count", "demo")


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, the controller has every kernel compiled once, by ``dpfast
    warmup`` in two processes, before it starts the workers.  numba's cache is shared, but
    otherwise each worker compiles the kernels it meets first itself -- the same ones on
    both workers, spread over whichever tests come first (a cold run: a clean clone in
    CI).  Skipped where numba's cache already holds a kernel of dpfast's (a warm-up would
    only load them, seconds a run).  A failing warm-up changes nothing: the tests compile
    what they need, as before."""
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    root = pathlib.Path(__file__).resolve().parents[1]
    where = os.environ.get("NUMBA_CACHE_DIR")
    cached = pathlib.Path(where).rglob("*.nbi") if where else root.glob("dpfast/**/*.nbi")
    if next(iter(cached), None) is not None:
        return
    from dpfast.cli.warmup import steps

    names = [name for name, _ in steps()]
    first = [n for n in names if n in _WARM_FIRST]
    rest = [n for n in names if n not in _WARM_FIRST]
    procs = [subprocess.Popen([sys.executable, "-m", "dpfast", "warmup", "--only", ",".join(g)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for g in (first, rest) if g]
    for proc in procs:
        proc.wait()


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
