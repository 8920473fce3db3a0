"""numba's threading layer and fork safety (the only place dpfast touches either).

numba runs ``parallel=True`` kernels on one of three threading layers: TBB (thread- and
fork-safe), OpenMP (thread-safe; GNU OpenMP is *not* fork-safe: numba terminates a forked
child that launches a parallel region after its parent did) and workqueue (fork-safe,
not thread-safe: two concurrent launches abort the process).  dpfast's policy:

* Unless the user chose a layer without TBB (``NUMBA_THREADING_LAYER=omp`` or
  ``workqueue``), dpfast makes TBB loadable when the ``tbb`` package is installed (a
  dependency on x86-64 Linux and Windows: pip puts ``libtbb`` under ``sys.prefix/lib``,
  where numba does not look); by default numba then picks TBB first.
* Every layer works: on one that is not thread-safe (workqueue) the kernels' launches
  take turns (:mod:`dpfast._kernels._launch`), so many Python threads may call dpfast
  at once.  A ``NUMBA_THREADING_LAYER`` numba cannot load (TBB not installed, an unknown
  name) is refused at ``import dpfast`` with an ImportError (:func:`check_layer`).
* Threads: numba starts one per CPU of the process's affinity mask; a container's CPU
  quota (cgroup ``cpu.max`` / ``cpu.cfs_quota_us``, e.g. ``docker --cpus 2``) is not seen
  there, and more busy threads than the quota allows stall each parallel region on the
  throttled ones.  Unless the user chose (``NUMBA_NUM_THREADS``), dpfast's parallel
  regions use at most ``ceil(quota)`` threads (:func:`thread_cap`).
* After ``os.fork()`` the child drops inherited thread pools and locks (see
  :func:`register_after_fork`); if the parent had started GNU OpenMP, dpfast refuses to
  launch a kernel in the child with a clear :class:`RuntimeError` instead of letting
  numba terminate it.  Use TBB, ``NUMBA_THREADING_LAYER=workqueue`` (single-threaded
  programs only) or the ``spawn``/``forkserver`` start methods in that case.
"""

from __future__ import annotations

import ctypes
import importlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable

__all__ = ["check_fork_safe", "register_after_fork", "layer", "cpu_quota", "thread_cap",
           "check_layer", "chosen_layer"]

_OMP_FORKED = False
_HOOKS: list[Callable[[], None]] = []


LAYER_ENV = "NUMBA_THREADING_LAYER"
# what numba accepts: a layer, or a property numba picks a layer for ("default": TBB, then
# OpenMP, then workqueue); each maps to the layers that satisfy it (first loadable wins)
LAYER_CHOICES = {
    "default": ("tbb", "omp", "workqueue"),
    "tbb": ("tbb",),
    "omp": ("omp",),
    "workqueue": ("workqueue",),
    "safe": ("tbb",),
    "threadsafe": ("tbb", "omp"),
    "forksafe": ("tbb", "workqueue") if sys.platform.startswith("linux")
    else ("tbb", "omp", "workqueue"),
}


def chosen_layer() -> str:
    """The threading layer the user asked numba for (``NUMBA_THREADING_LAYER``, lower
    case; ``"default"`` when unset).  numba reads it once, when it is imported."""
    cfg = sys.modules.get("numba.core.config")
    value = getattr(cfg, "THREADING_LAYER", None) if cfg is not None else None
    if value is None:
        value = os.environ.get(LAYER_ENV, "")
    return str(value).strip().lower() or "default"


def _loadable(name: str) -> str | None:
    """None if numba can load threading layer ``name``, else the reason it cannot."""
    try:
        if name == "tbb":
            from numba.np.ufunc import parallel

            parallel._check_tbb_version_compatible()
        importlib.import_module(f"numba.np.ufunc.{name}" + ("" if name == "workqueue"
                                                           else "pool"))
    except ImportError as exc:
        return str(exc) or type(exc).__name__
    return None


def check_layer(choice: str | None = None) -> str:
    """Refuse, with a clear ImportError, a ``NUMBA_THREADING_LAYER`` that numba would fail
    on at the first parallel kernel; return the choice.

    Every layer works with dpfast: TBB and OpenMP are thread-safe, and the kernels'
    launches are serialised (:mod:`dpfast._kernels._launch`) on a layer that is not
    (workqueue).  Only an explicit choice is checked (importing numba to do so); the
    default always has workqueue to fall back on."""
    choice = chosen_layer() if choice is None else choice
    if choice not in LAYER_CHOICES:
        raise ImportError(
            f"{LAYER_ENV}={choice!r} is not a numba threading layer; use one of "
            f"{', '.join(sorted(LAYER_CHOICES))} (or unset it)")
    if choice == "default":
        return choice
    reasons = []
    for name in LAYER_CHOICES[choice]:
        why = _loadable(name)
        if why is None:
            return choice
        reasons.append(f"{name}: {why}")
    fix = "Install the 'tbb' package (pip install tbb), choose" \
        if "tbb" in LAYER_CHOICES[choice] else "Choose"
    raise ImportError(
        f"{LAYER_ENV}={choice!r}, but numba cannot load that threading layer "
        f"({'; '.join(reasons)}). {fix} another layer or unset {LAYER_ENV}")


def _preload_tbb() -> None:
    if "tbb" not in LAYER_CHOICES.get(chosen_layer(), ()):
        return  # the user chose a layer other than TBB
    names = {"linux": "libtbb.so.12", "win32": "tbb12.dll"}
    name = names.get(sys.platform)
    if name is None:
        return
    for base in (sys.prefix, sys.base_prefix):
        for sub in ("lib", "Library/bin", ""):
            path = os.path.join(base, sub, name)
            if os.path.exists(path):
                try:
                    ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
                except OSError:
                    continue
                return


_preload_tbb()
check_layer()


def layer() -> str | None:
    """The threading layer numba has started, or None if no parallel kernel ran yet."""
    from numba.np.ufunc import parallel

    if not getattr(parallel, "_is_initialized", False):
        return None
    import numba

    return str(numba.threading_layer())


def _before_fork() -> None:
    global _FORK_LAYER
    try:
        _FORK_LAYER = layer()
    except Exception:  # pragma: no cover - numba internals moved
        _FORK_LAYER = None


_FORK_LAYER: str | None = None


def _after_fork_in_child() -> None:
    global _OMP_FORKED
    if _FORK_LAYER == "omp" and sys.platform.startswith("linux"):
        _OMP_FORKED = True
    launch = sys.modules.get("dpfast._kernels._launch")  # loaded with the first kernel
    if launch is not None:
        launch.reset_after_fork()
    for hook in _HOOKS:
        hook()


def register_after_fork(hook: Callable[[], None]) -> None:
    """Run ``hook`` in a forked child (reset pools, locks, caches)."""
    _HOOKS.append(hook)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def check_fork_safe() -> None:
    """Raise instead of letting numba kill a forked child whose parent used GNU OpenMP."""
    if _OMP_FORKED:
        raise RuntimeError(
            "dpfast cannot run its parallel kernels in a process forked after its parent "
            "used numba's GNU OpenMP threading layer (numba would terminate it). Install "
            "'tbb' (fork-safe), or start workers with the 'spawn' or 'forkserver' method")


# ----------------------------------------------------------------------------- CPU quota
def _read(path: str) -> str | None:
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return None


def _cgroup_paths(root: str) -> tuple[str | None, str | None]:
    """(the v2 cgroup path, the v1 ``cpu`` controller path) of this process."""
    v2 = v1 = None
    for line in (_read(os.path.join(root, "proc/self/cgroup")) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            v2 = parts[2]
        elif "cpu" in parts[1].split(","):
            v1 = parts[2]
    return v2, v1


def _ancestors(path: str) -> list[str]:
    """``/a/b`` -> ``["/a/b", "/a", "/"]`` (a parent's limit applies to its children)."""
    out = [path.rstrip("/") or "/"]
    while out[-1] != "/":
        out.append(os.path.dirname(out[-1]) or "/")
    return out


def cpu_quota(root: str = "/") -> float | None:
    """The CPU time this process may use, in CPUs, from its cgroup's quota (v2
    ``cpu.max``, v1 ``cpu.cfs_quota_us / cpu.cfs_period_us``, the smallest over the cgroup
    and its ancestors); None when there is no quota or it cannot be read."""
    v2, v1 = _cgroup_paths(root)
    best: float | None = None

    def take(q: float) -> None:
        nonlocal best
        if q > 0 and (best is None or q < best):
            best = q

    base2 = os.path.join(root, "sys/fs/cgroup")
    for rel in _ancestors(v2) if v2 is not None else ["/"]:
        text = _read(os.path.join(base2, rel.lstrip("/"), "cpu.max"))
        if text:
            fields = text.split()
            if len(fields) == 2 and fields[0] != "max":
                try:
                    take(int(fields[0]) / int(fields[1]))
                except (ValueError, ZeroDivisionError):
                    pass
    for mount in ("sys/fs/cgroup/cpu,cpuacct", "sys/fs/cgroup/cpu"):
        base1 = os.path.join(root, mount)
        for rel in _ancestors(v1) if v1 is not None else ["/"]:
            d = os.path.join(base1, rel.lstrip("/"))
            quota, period = _read(os.path.join(d, "cpu.cfs_quota_us")), \
                _read(os.path.join(d, "cpu.cfs_period_us"))
            if quota and period:
                try:
                    q, per = int(quota), int(period)
                except ValueError:
                    continue
                if q > 0 and per > 0:
                    take(q / per)
    return best


_CAP: list[int | None] = []


def thread_cap() -> int | None:
    """The most threads dpfast's parallel regions use: ``ceil`` of the cgroup CPU quota
    (at least 1), or None (no cap: no quota, or the user set ``NUMBA_NUM_THREADS``).
    Read once per process."""
    if not _CAP:
        q = None if os.environ.get("NUMBA_NUM_THREADS") else cpu_quota()
        _CAP.append(None if q is None else max(1, math.ceil(q - 1e-9)))
    return _CAP[0]


def _reset_cap() -> None:
    _CAP.clear()  # a forked child may live in another cgroup


register_after_fork(_reset_cap)


# ----------------------------------------------------------------------------- compile notice
NOTICE_ENV = "DPFAST_NO_COMPILE_NOTICE"
NOTICE = ("dpfast: compiling kernels (one time, cached for later runs; 'dpfast warmup' "
          f"compiles them all ahead; set {NOTICE_ENV}=1 to hide this)\n")
#: seconds between two progress lines while kernels compile (the one-line notice says a
#: compilation started; these say it goes on: never more than ~5 s without a line)
PROGRESS_S = 4.0
PROGRESS_ENV = "DPFAST_COMPILE_PROGRESS_S"
_NOTICE_DONE = False
_LISTENER: list[object] = []


def _is_dpfast_kernel(dispatcher: object) -> bool:
    func = getattr(dispatcher, "py_func", None)
    return str(getattr(func, "__module__", "")).startswith("dpfast.")


def _kernel_name(dispatcher: object) -> str:
    func = getattr(dispatcher, "py_func", None)
    name = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"
    return name.removeprefix("dpfast._kernels.")


def notice(dispatcher: object) -> None:
    """Once per process, when numba starts compiling a dpfast kernel (it found no cached
    machine code for it on disk), say so on stderr: a first call after installation
    takes seconds to tens of seconds.  Silenced by ``DPFAST_NO_COMPILE_NOTICE=1``."""
    global _NOTICE_DONE
    if _NOTICE_DONE or not _is_dpfast_kernel(dispatcher):
        return
    _NOTICE_DONE = True
    if os.environ.get(NOTICE_ENV):
        return
    sys.stderr.write(NOTICE)
    sys.stderr.flush()


def skip_notice() -> None:
    """No one-line notice in this process (a caller that says it compiles, such as
    ``dpfast warmup``); the progress lines still come."""
    global _NOTICE_DONE
    _NOTICE_DONE = True


class _Progress:
    """A progress line on stderr every :data:`PROGRESS_S` seconds while dpfast kernels
    compile: a daemon thread started by the first compilation of a burst, which ends when
    an interval passes with no compilation (a cached kernel sends no event: nothing runs).
    numba sends nested events (a kernel compiles its callees inside its own compilation);
    ``_stack`` records which of them are dpfast's."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """No thread, no burst (also after ``fork``: the child has no progress thread)."""
        self.lock = threading.Lock()
        self._stack: list[str | None] = []  # the kernel names compiling (None: not ours)
        self.thread: threading.Thread | None = None
        self.t0 = 0.0
        self.done = 0
        self.busy = False  # a compilation ran since the last line

    def start(self, dispatcher: object) -> None:
        name = _kernel_name(dispatcher) if _is_dpfast_kernel(dispatcher) else None
        with self.lock:
            self._stack.append(name)
            if name is None:
                return
            self.busy = True
            if self.thread is None and not os.environ.get(NOTICE_ENV):
                self.t0 = time.monotonic()
                self.thread = threading.Thread(target=self._run, daemon=True,
                                               name="dpfast-compile-progress")
                self.thread.start()

    def end(self) -> None:
        with self.lock:
            if self._stack and self._stack.pop() is not None:
                self.done += 1

    def tick(self) -> str | None:
        """The progress line due now, or ``None`` when the burst is over (no dpfast
        kernel compiled during the last interval and none is compiling)."""
        with self.lock:
            ours = [name for name in self._stack if name is not None]
            if not (ours or self.busy):
                return None
            self.busy = bool(ours)
            now = f"; now {ours[-1]}" if ours else ""
            return (f"dpfast: compiling kernels, {time.monotonic() - self.t0:.0f} s so far "
                    f"({self.done} compiled{now})\n")

    def _run(self) -> None:
        try:
            interval = float(os.environ.get(PROGRESS_ENV) or PROGRESS_S)
        except ValueError:
            interval = PROGRESS_S
        me = threading.current_thread()
        while True:
            time.sleep(max(interval, 0.01))
            line = self.tick()
            if os.environ.get(NOTICE_ENV):  # silenced meanwhile: end without a word
                line = None
                with self.lock:
                    self.busy = False
                    self._stack = [None] * len(self._stack)
            if line is None:
                with self.lock:
                    if self.thread is me and not self.busy and \
                            all(name is None for name in self._stack):
                        self.thread = None
                        return
                continue
            try:
                sys.stderr.write(line)
                sys.stderr.flush()
            except (OSError, ValueError):  # stderr closed: say nothing more
                return


PROGRESS = _Progress()
register_after_fork(PROGRESS.reset)


def install_compile_notice() -> None:
    """Listen to numba's ``numba:compile`` event, which numba sends only when it compiles
    (a kernel found in the on-disk cache is loaded without it): :func:`notice` once, then
    a progress line every few seconds while dpfast kernels compile (:class:`_Progress`).
    Idempotent; the modules that load dpfast's C code and kernels call it at import."""
    if _LISTENER:
        return
    from numba.core import event

    class _Notice(event.Listener):
        def on_start(self, ev: event.Event) -> None:
            data = ev.data
            dispatcher = data.get("dispatcher") if isinstance(data, dict) else None
            notice(dispatcher)
            PROGRESS.start(dispatcher)

        def on_end(self, ev: event.Event) -> None:
            PROGRESS.end()

    listener = _Notice()
    event.register("numba:compile", listener)
    _LISTENER.append(listener)
