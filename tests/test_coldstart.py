"""Start-up: the compile notice (against real numba, fresh cache directories) and
``dpfast warmup``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dpfast import _parallel
from tests.helpers import SUBPROCESS_TIMEOUT_S

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTICE = "dpfast: compiling kernels (one time"


def _python(code: str, cache: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != _parallel.NOTICE_ENV}
    full.update(NUMBA_CACHE_DIR=cache, PYTHONPATH=ROOT, **env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S, cwd=ROOT)


# numba's compile event, recorded in a subprocess: (function, parallel=True?, the part of
# the program running when it compiled)
LISTENER = ("import json\n"
            "from numba.core import event\n"
            "seen = []\n"
            "PART = ['']\n"
            "class L(event.Listener):\n"
            "    def on_start(self, ev):\n"
            "        d = ev.data.get('dispatcher')\n"
            "        f = getattr(d, 'py_func', None)\n"
            "        seen.append((f'{f.__module__}.{f.__qualname__}' if f else '?',\n"
            "                     bool(getattr(d, 'targetoptions', {}).get('parallel')),\n"
            "                     PART[0]))\n"
            "    def on_end(self, ev):\n"
            "        pass\n"
            "event.register('numba:compile', L())\n")


def _cold_code() -> str:
    """One first-use program: the first calls of bench/coldstart.py's TARGETED (small
    inputs), a second sampler specialization (int32), then a first call on 2*10^5 cells of
    the grid Laplace (new output, then in place) and of the discrete Laplace into a
    separate ``out``; it prints what compiled in which part."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import coldstart as bc
    finally:
        sys.path.pop(0)
    return (LISTENER + "PART[0] = 'small'\n"
            + bc.PRELUDE + "\n".join(bc.CASES[name] for name in bc.TARGETED) + "\n"
            "dpfast.discrete_laplace(np.zeros(4, np.int32), 2.0, rng=K)\n"
            "PART[0] = 'large'\n"
            "x = np.arange(200_000) % 50\n"
            "dpfast.laplace(x.astype(float), 2.0, rng=K)\n"
            "y = x.astype(float)\n"
            "dpfast.laplace(y, 2.0, rng=K, out=y)\n"  # in place: the max |x| pass first
            "dpfast.discrete_laplace(x, 2.0, rng=K, out=np.empty_like(x))\n"
            "print(json.dumps(seen))\n")


@pytest.fixture(scope="module")
def cold(tmp_path_factory) -> dict:
    """The first-use program run twice on one fresh cache directory (the notice on, a
    progress line due every 0.2 s): ``first`` compiles every kernel it calls, for real;
    ``second`` loads them all from the cache ``first`` filled.  The tests of the notice,
    of the progress lines and of what a first call compiles read these two runs (one cold
    compile for all of them, not one each)."""
    cache = str(tmp_path_factory.mktemp("cold") / "cache")
    code = _cold_code()
    first = _python(code, cache, **{_parallel.PROGRESS_ENV: "0.2"})
    listed = os.listdir(cache) if os.path.isdir(cache) else []
    second = _python(code, cache, **{_parallel.PROGRESS_ENV: "0.2"})
    seen = (json.loads(first.stdout.strip().splitlines()[-1])
            if first.returncode == 0 else [])
    return {"cache": cache, "code": code, "first": first, "second": second,
            "listed": listed, "seen": seen}


@pytest.mark.slow
def test_notice_once_when_compiling_and_never_from_the_cache(cold) -> None:
    """A fresh cache directory: the first process compiles (many kernels, the int64 and
    int32 samplers among them) and says so once; the second loads from the cache and says
    nothing; the variable silences a new specialization's compile."""
    first, second = cold["first"], cold["second"]
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(NOTICE) == 1
    assert cold["listed"]  # numba wrote its cache there
    assert second.returncode == 0, second.stderr
    assert NOTICE not in second.stderr
    code = ("import numpy as np, dpfast\n"
            "dpfast.discrete_laplace(np.zeros(4, np.int16), 2.0, rng=bytes(32))\n")
    quiet = _python(code, cold["cache"],
                    **{_parallel.NOTICE_ENV: "1"})  # a new specialization compiles: silenced
    assert quiet.returncode == 0, quiet.stderr
    assert NOTICE not in quiet.stderr


@pytest.mark.slow
def test_notice_for_a_topdown_kernel_compiled_for_real(tmp_path) -> None:
    """Another family than the samplers, compiled for real in a fresh cache directory."""
    code = ("import numpy as np\n"
            "from dpfast._kernels import topdown\n"
            "out = np.full(3, -1, np.int64)\n"
            "assert topdown.parents(np.arange(3), np.zeros(3, np.int64), out) == -1\n")
    cache = str(tmp_path / "cache")
    first = _python(code, cache)
    assert first.returncode == 0, first.stderr
    assert first.stderr.count(NOTICE) == 1
    second = _python(code, cache)
    assert second.returncode == 0 and NOTICE not in second.stderr


# the noise layer's sampler kernels run their serial twins on one chunk (a small input)
SAMPLER_SERIAL = {"dpfast._kernels.table.table_kernel_serial",
                  "dpfast._kernels.samplers.discrete_kernel_serial"}


@pytest.mark.slow
def test_a_first_small_call_compiles_no_parallel_kernel(cold) -> None:
    """The five first calls the cold-start target is for, in a fresh cache directory:
    nothing they compile is a ``parallel=True`` kernel (each costs seconds of LLVM; the
    noise samplers have none since issue 41), and neither the
    numba ChaCha20 copy nor a numba hash (the refills and the keys' BLAKE2b are C).  What
    compiles, not how long (no timing in unit tests)."""
    assert cold["first"].returncode == 0, cold["first"].stderr
    seen = [(name, par) for name, par, part in cold["seen"] if part == "small"]
    ours = [name for name, _ in seen if name.startswith("dpfast.")]
    assert "dpfast._kernels.table.table_kernel_serial" in ours  # it did compile, for real
    assert {name for name, par in seen if par} == set()
    assert set(ours) & SAMPLER_SERIAL
    assert not [n for n in ours if n.endswith(("chacha_words", "block_into"))
                or ".blake2b." in n]


@pytest.mark.slow
def test_a_first_large_out_call_compiles_no_parallel_kernel(cold) -> None:
    """A first call on 2*10^5 cells of the grid Laplace (new output, in place) and of the
    discrete Laplace into a separate ``out``, in a fresh cache directory, compiles no
    ``parallel=True`` kernel.
    Fails on the old code: the max |x| check of the grid samplers was a ``parallel=True``
    kernel (seconds of LLVM at first use); now it is a chunked launch of a serial kernel,
    as the samplers are.  (The small first calls ran before it in the same process:
    nothing of either part is ``parallel=True``.)"""
    assert cold["first"].returncode == 0, cold["first"].stderr
    ours = {name for name, _, part in cold["seen"]
            if part == "large" and name.startswith("dpfast.")}
    assert "dpfast._kernels.grid._max_abs_blocks" in ours  # it did compile, for real
    assert {name for name, par, _ in cold["seen"] if par} == set()


KERNEL_MODULES = ["samplers", "tables", "grouping", "topdown", "topdown_round", "local",
                  "local_aggregate", "local_tally", "quantile",
                  "selection", "grid", "table", "uniform", "dpsgd", "rappor", "chacha",
                  "convex", "fixed", "rows", "sparse_group", "pages"]
# modules of the kernel package that hold no kernel (the parallel-launch guard)
NOT_KERNELS = {"__init__", "_launch"}


def _installs_the_notice(module: str) -> str:
    return (f"import dpfast._kernels.{module}\n"
            "from dpfast import _parallel\n"
            "from numba.core import event\n"
            "assert _parallel._LISTENER, 'not installed'\n"
            "assert _parallel._LISTENER[0] in event._registered['numba:compile']\n")


@pytest.fixture(scope="module")
def module_imports(tmp_path_factory) -> dict[str, subprocess.CompletedProcess[str]]:
    """Each kernel module imported first in a process of its own (a fresh cache directory):
    one forked child per module of a parent that imported numpy and numba only (never
    dpfast: the first job checks it), as ``python -c`` would run it (tests/forkrun.py);
    :data:`KERNEL_MODULES`' first module also in a true fresh interpreter."""
    from tests.forkrun import run_forked

    cache = str(tmp_path_factory.mktemp("imports"))
    env = {k: v for k, v in os.environ.items() if k != _parallel.NOTICE_ENV}
    env.update(NUMBA_CACHE_DIR=cache, PYTHONPATH=ROOT)
    clean = ("import sys\n"
             "assert not [m for m in sys.modules if m.split('.')[0] == 'dpfast'], 'imported'\n")
    jobs = [{"code": clean}] + [{"code": _installs_the_notice(m)} for m in KERNEL_MODULES]
    res = run_forked(jobs, preload=["numpy", "numba", "numba.core.event"], env=env, cwd=ROOT,
                     timeout=SUBPROCESS_TIMEOUT_S)
    assert res[0]["returncode"] == 0, res[0]["stderr"]
    out = {m: subprocess.CompletedProcess([], r["returncode"], r["stdout"], r["stderr"])
           for m, r in zip(KERNEL_MODULES, res[1:], strict=True)}
    out["(subprocess)"] = _python(_installs_the_notice(KERNEL_MODULES[0]), cache)
    return out


@pytest.mark.parametrize("module", [*KERNEL_MODULES, "(subprocess)"])
def test_every_kernel_module_installs_the_notice(module_imports, module: str) -> None:
    """Importing any kernel module (they all load through the dpfast._kernels package)
    registers the listener before its first kernel can compile."""
    done = module_imports[module]
    assert done.returncode == 0, done.stderr


def test_all_jitted_code_is_in_the_kernels_package() -> None:
    """So the notice covers every kernel family: nothing outside dpfast/_kernels jits."""
    import pathlib
    import re

    pkg = pathlib.Path(ROOT) / "dpfast"
    jit = re.compile(r"@(numba\.)?(njit|jit|vectorize|guvectorize|cfunc)\b|numba\.(njit|jit)\(")
    found = sorted(str(p.relative_to(pkg)) for p in pkg.rglob("*.py")
                   if "_kernels" not in p.parts and jit.search(p.read_text()))
    assert found == []
    assert {p.stem for p in (pkg / "_kernels").glob("*.py")} - NOT_KERNELS == \
        set(KERNEL_MODULES)


def test_notice_fires_for_a_real_compile_of_each_kernel_module(monkeypatch, capsys) -> None:
    """numba's compile event, as numba sends it, for a dispatcher of each kernel module
    (tables, TopDown, local, selection, samplers...): the notice fires once; a
    non-dpfast function never triggers it."""
    import numba
    from numba.core import event

    from dpfast import _kernels  # noqa: F401
    from dpfast._kernels import local, samplers, selection, tables, topdown

    _parallel.install_compile_notice()
    mods = [tables, topdown, local, selection, samplers]
    disps = [next(v for v in vars(m).values() if isinstance(v, numba.core.registry.CPUDispatcher)
                  and v.py_func.__module__ == m.__name__) for m in mods]

    @numba.njit
    def user_fn(x):  # not dpfast's
        return x + 1

    monkeypatch.delenv(_parallel.NOTICE_ENV, raising=False)
    monkeypatch.setattr(_parallel, "_NOTICE_DONE", False)
    with event.trigger_event("numba:compile", data={"dispatcher": user_fn}):
        pass
    assert capsys.readouterr().err == ""
    for d in disps:
        monkeypatch.setattr(_parallel, "_NOTICE_DONE", False)
        with event.trigger_event("numba:compile", data={"dispatcher": d}):
            pass
        with event.trigger_event("numba:compile", data={"dispatcher": d}):
            pass
        assert capsys.readouterr().err.count(NOTICE) == 1, d
    monkeypatch.setattr(_parallel, "_NOTICE_DONE", False)
    monkeypatch.setenv(_parallel.NOTICE_ENV, "1")
    with event.trigger_event("numba:compile", data={"dispatcher": disps[0]}):
        pass
    assert capsys.readouterr().err == ""


def test_install_is_idempotent() -> None:
    from numba.core import event

    _parallel.install_compile_notice()
    _parallel.install_compile_notice()
    mine = [x for x in event._registered["numba:compile"] if x in _parallel._LISTENER]
    assert len(mine) == 1


def test_warmup_progress_lines_and_only(tmp_path, capsys) -> None:
    """``dpfast warmup --only``: one progress line per family, a summary, exit 0; an
    unknown family is a one-line error, refused before anything runs (the CLI's ``main`` in
    this process: nothing compiles) (the full run is timed by bench/coldstart.py)."""
    from dpfast.cli import main

    env = dict(os.environ, PYTHONPATH=ROOT, NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "dpfast", "warmup", "--only", "histogram"],
                          env=env, capture_output=True, text=True,
                          timeout=SUBPROCESS_TIMEOUT_S, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "dpfast warmup: [1/1] histogram ..." in done.stderr
    assert "dpfast warmup: [1/1] histogram done, " in done.stderr
    assert "1 kernel families compiled and cached" in done.stdout
    assert NOTICE not in done.stderr  # the progress line says it already
    capsys.readouterr()
    assert main(["warmup", "--only", "nope"]) == 2
    bad = capsys.readouterr()
    assert bad.out == ""
    assert bad.err.strip().count("\n") == 0 and "unknown family nope" in bad.err


def test_sort_rows_is_a_stable_sort_by_key_then_value() -> None:
    """The bounding kernels' loop sort (smaller to compile than np.sort / np.argsort)
    orders rows exactly as numpy's stable sort by (key, value) did."""
    import numpy as np

    from dpfast._kernels import grouping as _kg

    r = np.random.default_rng(5)
    for trial in range(200):
        m = int(r.integers(0, 300))
        a = r.integers(0, 1 + int(r.integers(1, 50)), m).astype(np.int64)
        v = r.integers(-5, 5, m).astype(np.float64) * (1.0 if trial % 2 else -0.0)
        lo = int(r.integers(0, m + 1))
        hi = int(r.integers(lo, m + 1))
        a1, v1 = a.copy(), v.copy()
        _kg._sort_pairs(a1, v1, lo, hi)
        o1 = np.argsort(v[lo:hi], kind="mergesort")
        ka, kv = a[lo:hi][o1], v[lo:hi][o1]
        o2 = np.argsort(ka, kind="mergesort")
        a2, v2 = a.copy(), v.copy()
        a2[lo:hi], v2[lo:hi] = ka[o2], kv[o2]
        assert np.array_equal(a1, a2) and np.array_equal(np.signbit(v1), np.signbit(v2))
        assert np.array_equal(v1, v2)
        a3 = a.copy()
        _kg._sort_keys(a3, lo, hi)
        assert np.array_equal(a3[lo:hi], np.sort(a[lo:hi])) and np.array_equal(a3[:lo], a[:lo])


def test_coldstart_profile_nests_compilations_and_splits_self_time() -> None:
    """``bench/coldstart.py --profile``: every compilation of a first call, nested
    as numba compiles callees inside their callers, self time = inclusive - nested."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "coldstart", os.path.join(ROOT, "bench", "coldstart.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    snippet = ("import numba, numpy as np\n"
               "@numba.njit\ndef inner(x):\n    return x.sum()\n"
               "@numba.njit\ndef outer(x):\n    return inner(x) + 1.0\n"
               "outer(np.ones(3))\n")
    total, rows = mod.profile_code(snippet)
    mine = {r[0].rsplit(".", 1)[-1]: r for r in rows if r[0].startswith("__main__.")}
    assert set(mine) == {"inner", "outer"}
    (_, d_in, incl_in, self_in, args_in), (_, d_out, incl_out, self_out, _) = \
        mine["inner"], mine["outer"]
    assert (d_in, d_out) == (1, 0) and "float64" in args_in
    assert rows.index(mine["inner"]) < rows.index(mine["outer"])  # completion order
    assert 0 <= self_in <= incl_in and 0 <= self_out <= incl_out
    nested = sum(r[2] for r in rows if r[1] == 1 and rows.index(r) < rows.index(mine["outer"]))
    assert abs(incl_out - self_out - nested) < 1e-6  # self = inclusive - direct children
    assert incl_out <= total


def _a_kernel() -> object:
    import numba

    from dpfast._kernels import samplers

    return next(v for v in vars(samplers).values()
                if isinstance(v, numba.core.registry.CPUDispatcher))


def test_progress_lines_name_the_kernel_compiling_and_end_with_the_burst(monkeypatch) -> None:
    """Issue 41 item 3 (no silent compile): the progress line due at each interval names
    the dpfast kernel compiling now (not numba's helpers nested inside it); after the
    burst one more line, then none (the thread ends).  The lines' content, not their
    timing (``tick`` is called directly, no thread)."""
    import numba

    monkeypatch.setenv(_parallel.NOTICE_ENV, "1")  # no thread: this test ticks itself
    prog = _parallel._Progress()
    kernel = _a_kernel()

    @numba.njit
    def helper(x):  # not dpfast's
        return x

    assert prog.tick() is None  # nothing compiled: nothing to say
    prog.start(kernel)
    prog.start(helper)
    line = prog.tick()
    name = _parallel._kernel_name(kernel)
    assert line.startswith("dpfast: compiling kernels, ") and line.endswith(f"now {name})\n")
    assert "(0 compiled;" in line
    prog.end()  # the helper
    prog.end()  # the kernel
    last = prog.tick()
    assert "(1 compiled)" in last and "now" not in last  # the interval saw a compilation
    assert prog.tick() is None  # a quiet interval ends the burst


def test_progress_thread_writes_while_compiling_and_stops(monkeypatch, capsys) -> None:
    """The thread a first compilation starts writes a progress line while compiling and
    ends once an interval passes with no compilation (waits are hang guards only)."""
    import time

    monkeypatch.delenv(_parallel.NOTICE_ENV, raising=False)
    monkeypatch.setenv(_parallel.PROGRESS_ENV, "0.01")
    prog = _parallel._Progress()
    prog.start(_a_kernel())
    thread = prog.thread
    assert thread is not None and thread.daemon
    deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S
    err = ""
    while "dpfast: compiling kernels, " not in err and time.monotonic() < deadline:
        time.sleep(0.01)
        err += capsys.readouterr().err
    assert "dpfast: compiling kernels, " in err
    prog.end()
    thread.join(SUBPROCESS_TIMEOUT_S)
    assert not thread.is_alive() and prog.thread is None


def test_progress_thread_is_silenced_by_the_notice_variable(monkeypatch) -> None:
    """``DPFAST_NO_COMPILE_NOTICE=1`` silences the progress lines too (even when set after
    the thread started: it ends without a word)."""
    monkeypatch.setenv(_parallel.NOTICE_ENV, "1")
    prog = _parallel._Progress()
    prog.start(_a_kernel())
    assert prog.thread is None
    prog.end()
    monkeypatch.delenv(_parallel.NOTICE_ENV)
    monkeypatch.setenv(_parallel.PROGRESS_ENV, "0.01")
    prog.start(_a_kernel())
    thread = prog.thread
    monkeypatch.setenv(_parallel.NOTICE_ENV, "1")  # the kernel is still compiling
    thread.join(SUBPROCESS_TIMEOUT_S)
    assert not thread.is_alive() and prog.thread is None


@pytest.mark.slow
def test_a_real_first_compile_prints_progress_and_a_cached_run_does_not(cold) -> None:
    """A first tables.count (among the first calls) in a fresh cache directory compiles
    for seconds: with a short interval, progress lines come; the same calls from the cache
    print none (nothing at all on stderr)."""
    first, second = cold["first"], cold["second"]
    assert first.returncode == 0, first.stderr
    assert "tables.count(" in cold["code"]
    assert first.stderr.count(NOTICE) == 1
    assert "dpfast: compiling kernels, " in first.stderr
    assert second.returncode == 0 and second.stderr == ""


CASES_NOISE = ["table laplace", "table gauss", "discrete laplace < 1", "discrete per-cell",
               "grid laplace", "table int add", "bernoulli exp"]


def _draw(case: str, n: int):
    import numpy as np

    import dpfast

    key = bytes(range(32))
    if case == "table laplace":
        return dpfast.discrete_laplace(np.arange(n), 7.0, rng=key)
    if case == "table gauss":
        return dpfast.discrete_gaussian(np.arange(n), 3.5, rng=key)
    if case == "discrete laplace < 1":
        return dpfast.discrete_laplace(np.arange(n), 0.4, rng=key)
    if case == "discrete per-cell":
        return dpfast.discrete_gaussian(np.arange(n), np.linspace(0.5, 9.0, n), rng=key)
    if case == "table int add":  # MODE_ADD into a caller's out
        out = np.full(n, 5, np.int64)
        return dpfast.discrete_laplace(np.arange(n), 300.0, rng=key, out=out)
    if case == "bernoulli exp":
        return dpfast.default_rng(key).bernoulli_exp(np.linspace(0.0, 3.0, n))
    return dpfast.laplace(np.linspace(-3.0, 3.0, n), 2.0, rng=key)


@pytest.mark.parametrize("case", CASES_NOISE)
def test_threaded_launches_draw_the_calling_threads_noise(case: str, monkeypatch) -> None:
    """Issue 41 (cold start): the samplers' kernels are compiled once, without
    ``parallel=True``, and a launch over many chunks runs that one compilation on several
    Python threads (``_launch.claimed``).  Over 5 chunks on 3 threads (forced, whatever
    the host's cores) the noise is bit for bit that of every chunk on the calling thread
    (``serial_launch`` forced true).  (Which thread runs which chunk is up to the
    scheduler: not asserted.)"""
    import numpy as np

    from dpfast._kernels import _launch
    from dpfast._kernels import samplers as sk
    from dpfast._kernels import table as tk

    n = 5 * (1 << 16) - 123  # 5 chunks, the last one short
    for mod in (sk, tk):
        monkeypatch.setattr(mod, "serial_launch", lambda streams: True)
    one = _draw(case, n)
    monkeypatch.undo()
    monkeypatch.setattr(_launch, "thread_count", lambda: 3)
    parts: list[int] = []
    for launcher in (tk.table_kernel, sk.discrete_kernel, sk.bernoulli_exp_kernel):
        kernel = launcher._kernel

        def counted(*args, _k=kernel):
            parts.append(int(args[-1].shape[0]))
            return _k(*args)

        monkeypatch.setattr(launcher, "_kernel", counted)
    many = _draw(case, n)
    # the threaded launch ran: every call took its chunks from a shared claim counter
    # (the threads take the chunks as they come; a helper may find none left)
    assert parts and set(parts) == {1}
    assert one.dtype == many.dtype
    assert np.array_equal(one, many) and one.tobytes() == many.tobytes()


@pytest.mark.slow
def test_sampler_and_bounding_kernels_compile_once_and_never_parallel() -> None:
    """Issue 41 (the demo's 48.8 s cold start, about 45 kernels): a process drawing int64
    and float64 noise, small and large, and bounding small and large tables compiled each
    sampler kernel twice (int64 and float64 stores) and each of them again with
    ``parallel=True``, and the grouping and bounding kernels in parallel too.  Now the
    envelope-table kernel has one signature for both outputs, and none of these families
    has a ``parallel=True`` kernel (their launches run a ``nogil`` kernel on threads).
    Checked in a fresh interpreter (the cache may be warm: what is loaded counts)."""
    import json

    code = ("import json, numba, numpy as np, dpfast\n"
            "from dpfast import tables\n"
            "from dpfast._kernels import grouping, samplers, table, tables as kt\n"
            "K = bytes(32)\n"
            "for n in (1000, 300_000):\n"
            "    dpfast.discrete_laplace(np.zeros(n, np.int64), 10.0, rng=K)\n"
            "    dpfast.laplace(np.zeros(n), 10.0, rng=K)\n"
            "    dpfast.gaussian(np.zeros(n), 10.0, rng=K)\n"
            "    dpfast.discrete_laplace(np.zeros(n, np.int64), 0.5, rng=K)\n"
            "    tables.count(np.arange(n) % 7, np.arange(n) // 3, epsilon=1.0,\n"
            "                 domain=list(range(7)), rng=K)\n"
            "    tables.mean(np.arange(n) % 5, np.arange(n) % 7, np.arange(n) // 3,\n"
            "                bounds=(0, 4), epsilon=1.0, domain=list(range(7)), rng=K)\n"
            "par = sorted(f'{m.__name__}.{k}' for m in (grouping, samplers, table, kt)\n"
            "             for k, v in vars(m).items()\n"
            "             if isinstance(v, numba.core.registry.CPUDispatcher)\n"
            "             and v.targetoptions.get('parallel') and v.signatures)\n"
            "print(json.dumps({'table': len(table.table_kernel_serial.signatures),\n"
            "                  'parallel': par}))\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=ROOT, **{_parallel.NOTICE_ENV: "1"})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=SUBPROCESS_TIMEOUT_S, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out == {"table": 1, "parallel": []}


def test_warmup_runs_every_bench_entry_once(monkeypatch) -> None:
    """Issue 41 item 3: ``dpfast warmup`` left kernels for ``dpfast bench --quick`` to
    compile.  Its bench family runs dpfast's side of every entry once at the quick sizes
    (what compiles is then exactly what the gate runs), tears each down, and skips an
    entry whose optional module is missing, as the gate does."""
    from dpfast.cli import warmup
    from dpfast.perf import Entry

    calls: list[str] = []

    def setup_of(name: str):
        def setup(quick: bool):
            assert quick
            calls.append(f"setup {name}")
            return (lambda: calls.append(f"base {name}"), lambda: calls.append(f"cand {name}"),
                    lambda: calls.append(f"teardown {name}"))
        return setup

    entries = [Entry("a", "", "", setup_of("a")),
               Entry("b", "", "", setup_of("b"), needs=("no_such_module_dpfast",)),
               Entry("c", "", "", setup_of("c"), needs=("numpy",))]
    monkeypatch.setattr("dpfast.perf.ENTRIES", entries)
    warmup._bench()
    assert calls == ["setup a", "cand a", "teardown a", "setup c", "cand c", "teardown c"]
    names = [name for name, _ in warmup.STEPS]
    assert names[-2:] == ["demo", "bench"] and len(names) == len(set(names))


def test_serial_launch_is_for_few_cells_in_all() -> None:
    """One chunk, or at most SERIAL_CELLS cells over every chunk, runs serially."""
    import numpy as np

    from dpfast._kernels import chacha as ck
    from dpfast._kernels import samplers as sk

    def streams(sizes: list[int]) -> tuple:
        st = np.zeros((len(sizes), ck.ST_COLS), np.int64)
        st[:, ck.ST_END] = np.cumsum(sizes)
        st[:, ck.ST_CELL] = st[:, ck.ST_END] - np.array(sizes)
        return (np.zeros((len(sizes), 4), np.uint64), st)

    assert sk.serial_launch(streams([1 << 20]))  # one chunk, however long
    assert sk.serial_launch(streams([1] * 7))  # a small table's keys
    assert sk.serial_launch(streams([sk.SERIAL_CELLS // 2] * 2))
    assert not sk.serial_launch(streams([sk.SERIAL_CELLS // 2 + 1] * 2))
    assert not sk.serial_launch(streams([1] * (sk.SERIAL_CELLS + 1)))


def test_a_small_table_launches_only_the_serial_sampler_twins(monkeypatch) -> None:
    """A small tables.count (addressed noise: a chunk per key) runs the serial twins only,
    so its first call compiles no parallel sampler kernel."""
    import numpy as np

    from dpfast import tables
    from dpfast._kernels import samplers as sk
    from dpfast._kernels import table as tk

    calls: list[str] = []
    for mod, name in ((tk, "table_kernel"), (tk, "table_kernel_serial"),
                      (sk, "discrete_kernel"), (sk, "discrete_kernel_serial")):
        kernel = getattr(mod, name)

        def counted(*args, _k=kernel, _name=name):
            calls.append(_name)
            return _k(*args)

        monkeypatch.setattr(mod, name, counted)
    keys = np.arange(3000) % 7
    tables.count(keys, np.arange(3000) // 3, epsilon=1.0, domain=list(range(7)),
                 rng=bytes(32))
    assert calls and set(calls) <= {"table_kernel_serial", "discrete_kernel_serial"}


@pytest.mark.parametrize("values", [False, True])
def test_one_row_per_id_bounds_without_a_kernel(values: bool, monkeypatch) -> None:
    """Issue 41 (the demo's cold start): a session probes each release's charge on one
    synthetic row, and that compiled the serial bounding kernels (about 3 CPU s) though
    one row per id has nothing to bound.  Such input keeps every row without calling the
    kernel, with exactly the kernel's output (compared with the kernel on the same
    arrays); a second row of one id still runs the kernel."""
    import numpy as np

    from dpfast._kernels import tables as kt

    n = 6
    off = np.arange(n + 1, dtype=np.int64)
    keys = np.array([4, 1, 4, 0, 2, 1], np.int64)
    vals = np.array([3, -1, 7, 0, 2, 5], np.int64)
    hashes = np.arange(1, n + 1, dtype=np.uint64)
    skey = np.arange(8, dtype=np.uint32)

    def run(kernel_ok: bool) -> tuple[np.ndarray, ...]:
        gk, gcnt, nkeep, graw = keys.copy(), np.full(n, -9), np.full(n, -9), np.full(n, -9)
        gsum = np.full(n, -9)
        with monkeypatch.context() as m:
            if not kernel_ok:
                def refuse(*args):
                    raise AssertionError("kernel called")
                m.setattr(kt, "_bound_values_serial" if values else "_bound_counts_serial",
                          refuse)
            if values:
                kt.bound_values_sorted(off, gk, vals.copy(), hashes, skey, 2, 1, gsum, gcnt,
                                       nkeep, None, graw)
            else:
                kt.bound_counts_sorted(off, gk, hashes, skey, 2, 1, gcnt, nkeep, None, graw)
        return gk, gcnt, nkeep, graw, gsum

    fast = run(kernel_ok=False)
    monkeypatch.setattr(kt, "_one_row_each", lambda off, k, c: False)
    slow = run(kernel_ok=True)
    for a, b in zip(fast, slow):
        assert np.array_equal(a, b)
    monkeypatch.undo()
    two = np.array([0, 2, 3, 4, 5, 6], np.int64)  # id 0 has two rows
    assert not kt._one_row_each(two, 2, 1) and kt._one_row_each(off, 2, 1)
    assert not kt._one_row_each(off, 0, 1)


def test_the_large_warm_up_inputs_reach_the_threaded_kernels() -> None:
    """``dpfast warmup`` and the demo's compile-ahead size their large inputs without
    reading a private name of dpfast.tables: the size must stay at or above its serial
    threshold, or they would compile the serial kernels only."""
    from dpfast.cli import demo
    from dpfast.tables import _keys

    assert demo.LARGE_ROWS >= _keys.SERIAL_ROWS
