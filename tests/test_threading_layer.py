"""Every numba threading layer works with dpfast, or is refused at import (issue 22, item 12).

Each layer runs in its own interpreter (numba picks the layer once per process): eight
Python threads call the parallel kernels at once, and every call must give the noise that
the same key gives on one thread.  Under ``workqueue`` (not thread-safe) that used to abort
the process; ``NUMBA_THREADING_LAYER=tbb`` used to fail to find the pip-installed TBB.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dpfast import _parallel
from tests.helpers import SUBPROCESS_TIMEOUT_S

_CODE = r"""
import json, threading
import numpy as np
import dpfast as dp
from dpfast._kernels import _launch
from dpfast.noise import addressed

x = np.zeros(300_000, dtype=np.int64)   # several chunks: a parallel region per call
f = np.zeros(300_000)

def run(i):
    g = dp.default_rng(bytes([i]) * 32)
    a = dp.discrete_laplace(x, 3.0, rng=g)
    b = dp.discrete_gaussian(x, 2.5, rng=g)
    c = dp.laplace(f, 1.5, rng=g)
    # a parallel=True kernel (the samplers' launches are chunked, no parallel region)
    d = addressed.laplace(f, 1.5, rng=g, stream=i)
    return [int(a.sum()), int(np.abs(a).sum()), int(b.sum()), int((b * b).sum()),
            float(c.sum()), float(np.abs(c).sum()), float(d.sum())]

want = [run(i) for i in range(8)]       # one thread
got = [None] * 8
barrier = threading.Barrier(8)

def worker(i):
    barrier.wait()
    for _ in range(3):
        got[i] = run(i)

ts = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
import numba
print(json.dumps({"layer": str(numba.threading_layer()), "same": got == want,
                  "serialised": _launch.serialised()}))
"""


def _run(layer: str | None, code: str = _CODE) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("NUMBA_THREADING_LAYER", None)
    if layer is not None:
        env["NUMBA_THREADING_LAYER"] = layer
    env["DPFAST_NO_COMPILE_NOTICE"] = "1"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S)


@pytest.mark.parametrize("layer", [None, "tbb", "omp", "workqueue", "threadsafe"])
def test_every_layer_runs_concurrent_calls_or_is_refused(layer: str | None) -> None:
    choice = layer or "default"
    loadable = [n for n in _parallel.LAYER_CHOICES[choice] if _parallel._loadable(n) is None]
    res = _run(layer)
    if not loadable:  # numba cannot load it here: refused at import, clearly
        assert res.returncode == 1, res.stderr
        assert "ImportError" in res.stderr and "NUMBA_THREADING_LAYER" in res.stderr
        return
    assert res.returncode == 0, f"rc={res.returncode}\n{res.stderr[-3000:]}"
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["same"], "concurrent calls changed the noise of a key"
    assert out["layer"] in loadable
    if "tbb" in loadable:
        assert out["layer"] == "tbb"  # found although pip-installed (numba does not look)
    # launches take turns exactly on the layer that is not thread-safe
    assert out["serialised"] == (out["layer"] == "workqueue")


def test_an_unknown_layer_is_refused_at_import() -> None:
    res = _run("no-such-layer", "import dpfast")
    assert res.returncode == 1
    assert "ImportError" in res.stderr
    assert "NUMBA_THREADING_LAYER='no-such-layer' is not a numba threading layer" in res.stderr


def test_a_layer_numba_cannot_load_is_refused_with_the_fix(monkeypatch) -> None:
    monkeypatch.setattr(_parallel, "_loadable", lambda name: f"lib{name} not found")
    with pytest.raises(ImportError, match=r"NUMBA_THREADING_LAYER='tbb'.*libtbb not found.*"
                                          r"pip install tbb"):
        _parallel.check_layer("tbb")
    with pytest.raises(ImportError, match=r"'omp'.*libomp not found\)\. Choose another"):
        _parallel.check_layer("omp")
    assert _parallel.check_layer("default") == "default"  # workqueue is always there



_FORK = r"""
import os, threading
import numpy as np
import dpfast as dp
from dpfast._kernels import _launch

x = np.zeros(200_000, dtype=np.int64)
dp.discrete_laplace(x, 3.0, rng=bytes(32))
hold = threading.Event(); release = threading.Event()
def holder():  # a thread inside the launch lock while the process forks
    with _launch._lock:
        hold.set(); release.wait()
t = threading.Thread(target=holder); t.start(); hold.wait()
pid = os.fork()
if pid == 0:  # the child: a fresh lock, kernels run (a deadlock dies of the alarm)
    import signal; signal.alarm(ALARM_S)
    ok = dp.discrete_laplace(x, 3.0, rng=bytes(32)).shape == x.shape
    os._exit(0 if ok else 3)
release.set(); t.join()
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_a_launch_holds_the_lock_still_runs_kernels() -> None:
    res = _run("workqueue", _FORK.replace("ALARM_S", str(SUBPROCESS_TIMEOUT_S // 2)))
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.stdout.strip().splitlines()[-1] == "child 0"
