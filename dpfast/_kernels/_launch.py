"""Launches of the kernels: serialised ``parallel=True`` ones on a threading layer that is
not thread-safe, and chunked serial ones on Python threads.

numba's ``workqueue`` threading layer keeps one global work queue: a parallel region
launched while another one runs (from a second Python thread) terminates the process
(numba detects the concurrent access and raises ``SIGABRT``).  TBB and OpenMP are thread-safe.
Every ``parallel=True`` kernel that Python calls is wrapped in :func:`guarded`: until the
layer numba loaded is known to be thread-safe, a launch holds one process-wide lock, so
concurrent calls from many Python threads take turns instead of aborting.  Once the
first launch has shown the layer to be TBB or OpenMP, calls go straight to the kernel.

The wrapper forwards every attribute to the numba dispatcher (``_cache``,
``signatures``, ...); kernels call each other only as plain ``njit`` functions, never as
guarded ones.

A kernel whose work is independent chunks (the bounding: an id's rows; a grouping pass: a
block of rows; the noise samplers, below: a stream and its own cells) needs no parallel
region: :func:`chunked` runs its one serial ``nogil`` compilation on Python threads, each
taking ranges of chunks as it becomes free.  One compilation serves the serial and the parallel
launch (a ``parallel=True`` kernel compiles in about twice the time of the same code
without it, and a process that launched both compiled both); no threading layer is
involved, so these launches are thread-safe on every layer.  The helper threads are a
persistent pool (a thread started per launch cost 0.1-0.7 ms, a tenth of a threaded
2*10^6-cell sampler call), and the ranges are guided: large first, one chunk at the end,
so the threads finish together.

The samplers' kernels go one step further (:func:`claimed`): a kernel takes a ``claim``
argument, a one-cell int64 counter shared by the threads of a launch, and takes its
chunks one at a time from it (:func:`next_chunk`, an atomic fetch-and-add) until none is
left; an empty ``claim`` (:data:`NO_CLAIM`) runs every chunk in order.  Each thread of a
launch makes one call of the kernel over the whole arguments: no per-range dispatch, no
GIL hand-off between chunks, and single-chunk scheduling from the first chunk, as a
``parallel=True`` loop with chunk size 1 has, from the same one serial compilation.
"""

from __future__ import annotations

import threading
from typing import Any

import numba
import numpy as np
from numba.core import types
from numba.extending import intrinsic

__all__ = ["guarded", "serialised", "reset_after_fork", "chunked", "claimed", "NO_CLAIM",
           "next_chunk"]

THREAD_SAFE_LAYERS = ("tbb", "omp")

_lock = threading.Lock()
_safe = False  # True once the loaded layer is known to be thread-safe


def _settle() -> None:
    """After a launch: whether numba's loaded layer lets launches run concurrently."""
    global _safe
    try:
        name = numba.threading_layer()
    except ValueError:  # no parallel region has run (the kernel ran serially)
        return
    _safe = str(name) in THREAD_SAFE_LAYERS


def serialised() -> bool:
    """Whether parallel launches are serialised now (the layer is not known to be safe)."""
    return not _safe


def reset_after_fork() -> None:
    """A forked child gets a fresh lock (the parent's may be held by a thread the child
    does not have) and no helper pool (its threads are not in the child); the layer is
    rechecked at its first launch."""
    global _lock, _safe, _pool, _pool_lock
    _lock = threading.Lock()
    _safe = False
    _pool_lock = threading.Lock()
    _pool = None


class _Guarded:
    """A parallel numba dispatcher whose launches hold the lock until the layer is known
    to be thread-safe."""

    def __init__(self, dispatcher: Any) -> None:
        self._dispatcher = dispatcher
        self.__wrapped__ = dispatcher
        self.__name__ = getattr(dispatcher, "__name__", "kernel")
        self.__qualname__ = getattr(dispatcher, "__qualname__", self.__name__)
        self.__doc__ = getattr(dispatcher, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _safe:
            return self._dispatcher(*args, **kwargs)
        with _lock:
            out = self._dispatcher(*args, **kwargs)
            _settle()
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._dispatcher, name)

    def __repr__(self) -> str:
        return f"guarded({self._dispatcher!r})"


def guarded(dispatcher: Any) -> Any:
    """Wrap a ``parallel=True`` dispatcher (decorate above ``@numba.njit(parallel=True)``)."""
    return _Guarded(dispatcher)


def thread_count() -> int:
    """The threads of a chunked launch: numba's thread count of the calling thread (what
    ``numba.set_num_threads`` and dpfast's caps chose)."""
    return int(numba.get_num_threads())


#: the first range of a chunked launch holds 1 / (GUIDED * threads) of the chunks, each
#: next one that share of what is left, down to one chunk (guided self-scheduling: the
#: ranges are taken as threads become free, so a thread slowed down by another process
#: does not hold up the others, and the last ranges are single chunks, so the threads
#: finish within about one chunk of each other)
GUIDED = 4

class _Job:
    """One helper's share of a launch, queued on the pool: run once, or cancelled while
    still queued (the state is guarded by the pool's lock)."""

    __slots__ = ("fn", "state", "done")

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.state = 0  # 0 queued, 1 taken by a helper, 2 cancelled
        self.done = threading.Event()


class _Pool:
    """Persistent daemon helper threads (at most ``size``), started as jobs need them and
    then waiting for the next job: a threaded launch hands its helpers' shares to threads
    that already run (starting a thread per launch cost 0.1-0.7 ms)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._cv = threading.Condition(threading.Lock())
        self._jobs: list[_Job] = []
        self._threads = 0
        self._idle = 0

    def submit(self, fn: Any) -> _Job:
        job = _Job(fn)
        with self._cv:
            self._jobs.append(job)
            if self._idle > len(self._jobs) - 1:
                self._cv.notify()
            elif self._threads < self._size:
                threading.Thread(target=self._serve, name="dpfast-kernel", daemon=True).start()
                self._threads += 1
        return job

    def cancel(self, job: _Job) -> bool:
        """True if ``job`` was still queued (it will never run), False if a helper took it."""
        with self._cv:
            if job.state == 0:
                job.state = 2
                self._jobs.remove(job)
                return True
            return False

    def _serve(self) -> None:
        while True:
            with self._cv:
                while not self._jobs:
                    self._idle += 1
                    self._cv.wait()
                    self._idle -= 1
                job = self._jobs.pop(0)
                job.state = 1
            try:
                job.fn()
            finally:
                job.done.set()


_pool_lock = threading.Lock()
_pool: _Pool | None = None


def _helpers() -> _Pool:
    """The persistent helper threads of chunked launches (numba's thread count less the
    calling thread; started on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            # numba's stubs do not declare its config attributes
            _pool = _Pool(max(1, numba.config.NUMBA_NUM_THREADS - 1))  # type: ignore[attr-defined]
        return _pool


def ranges(n: int, threads: int) -> list[tuple[int, int]]:
    """The guided ranges ``[a, b)`` of a launch of ``n`` chunks on ``threads`` threads
    (see :data:`GUIDED`): contiguous, in order, covering ``[0, n)``."""
    out: list[tuple[int, int]] = []
    a = 0
    while a < n:
        b = a + max(1, -(-(n - a) // (GUIDED * threads)))
        out.append((a, min(n, b)))
        a = b
    return out


def _fan_out(work: Any, nt: int, failed: list[BaseException]) -> None:
    """Run ``work`` on the calling thread and on ``nt - 1`` helpers of the pool, then wait
    and re-raise the first exception a thread recorded in ``failed``.  A helper still
    queued (the pool busy with another launch) finds nothing left to take: cancelled, it is
    not waited for; one that started is waited for (it may still run its last chunk)."""
    helpers: list[_Job] = []
    pool = _helpers()
    try:
        for _ in range(nt - 1):
            helpers.append(pool.submit(work))
    except RuntimeError:  # interpreter shutdown: no new threads, the caller does it all
        pass
    work()
    for h in helpers:
        if not pool.cancel(h):
            h.done.wait()
    if failed:
        raise failed[0]


class _Launch:
    """What the chunked and the claimed launches share: they stand in for the serial
    ``nogil`` kernel they launch (its name, docstring and attributes; ``__wrapped__`` is the
    kernel), and a plain call launches on ``numba.get_num_threads()`` threads."""

    _what = "launch"

    def __init__(self, kernel: Any, count: Any) -> None:
        self._kernel = kernel
        self._count = count
        self.__wrapped__ = kernel
        self.__name__ = getattr(kernel, "__name__", "kernel")
        self.__doc__ = getattr(kernel, "__doc__", None)

    def __call__(self, *args: Any) -> None:
        self.launch(args, thread_count())

    def launch(self, args: tuple, threads: int) -> None:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)

    def __repr__(self) -> str:
        return f"{self._what}({self._kernel!r})"


class _Chunked(_Launch):
    """A chunked launch: ``kernel(*split(args, a, b))`` over ranges ``[a, b)`` covering
    the ``count(args)`` chunks, on up to ``numba.get_num_threads()`` threads (the
    calling one included).  Each chunk's output depends on its own arguments only, so
    the output is that of one call over all chunks, whatever the threads."""

    _what = "chunked"

    def __init__(self, kernel: Any, count: Any, split: Any) -> None:
        super().__init__(kernel, count)
        self._split = split

    def launch(self, args: tuple, threads: int) -> None:
        """The launch on at most ``threads`` threads."""
        n = self._count(args)
        nt = min(threads, n)
        if nt <= 1:
            self._kernel(*self._split(args, 0, n))
            return
        items = iter(ranges(n, nt))
        take = threading.Lock()
        failed: list[BaseException] = []

        def work() -> None:
            try:
                while not failed:
                    with take:
                        item = next(items, None)
                    if item is None:
                        return
                    self._kernel(*self._split(args, item[0], item[1]))
            except BaseException as exc:  # re-raised in the calling thread
                failed.append(exc)

        _fan_out(work, nt, failed)



def chunked(kernel: Any, count: Any, split: Any) -> Any:
    """The parallel launch of a serial ``nogil`` kernel over independent chunks:
    ``count(args)`` chunks, ``split(args, a, b)`` the arguments of chunks ``[a, b)``
    (views: what the kernel writes lands in the caller's arrays)."""
    return _Chunked(kernel, count, split)


#: the ``claim`` of a kernel run on the calling thread alone: every chunk, in order
NO_CLAIM = np.zeros(0, np.int64)


@intrinsic
def _fetch_add_one(typingctx, ctr):  # type: ignore[no-untyped-def]
    """``ctr[0] += 1`` atomically, returning the value before (an int64 array)."""
    if not (isinstance(ctr, types.Array) and ctr.dtype == types.int64):
        return None
    sig = types.int64(ctr)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        one = context.get_constant(types.int64, 1)
        return builder.atomic_rmw("add", ary.data, one, "seq_cst")

    return sig, codegen


@numba.njit(cache=True, _nrt=False, inline="always")  # type: ignore[call-overload]
def next_chunk(claim, c):  # type: ignore[no-untyped-def]
    """The chunk a kernel runs after chunk ``c`` (``c = -1``: its first): ``c + 1`` for
    an empty ``claim`` (:data:`NO_CLAIM`), else the next unclaimed chunk of the launch,
    taken from the shared counter ``claim[0]`` (each chunk goes to exactly one thread).
    The kernel stops at the first value >= its chunk count."""
    if claim.shape[0] == 0:
        return c + 1
    return _fetch_add_one(claim)


class _Claimed(_Launch):
    """A claimed launch: ``kernel(*prepare(args), claim)`` on up to
    ``numba.get_num_threads()`` threads (the calling one included), each call taking the
    ``count(args)`` chunks one at a time from the shared counter ``claim``.  Each chunk's
    output depends on its own arguments only, so the output is that of one call over all
    chunks, whatever the threads and whichever thread takes which chunk."""

    _what = "claimed"

    def __init__(self, kernel: Any, count: Any, prepare: Any = None) -> None:
        super().__init__(kernel, count)
        self._prepare = prepare

    def launch(self, args: tuple, threads: int) -> None:
        """The launch on at most ``threads`` threads."""
        if self._prepare is not None:
            args = self._prepare(args)
        nt = min(threads, self._count(args))
        if nt <= 1:
            self._kernel(*args, NO_CLAIM)
            return
        claim = np.zeros(1, np.int64)
        failed: list[BaseException] = []

        def work() -> None:
            try:
                self._kernel(*args, claim)
            except BaseException as exc:  # re-raised in the calling thread
                failed.append(exc)

        _fan_out(work, nt, failed)


def claimed(kernel: Any, count: Any, prepare: Any = None) -> Any:
    """The parallel launch of a serial ``nogil`` kernel whose last argument is a
    ``claim`` (see :func:`next_chunk`): ``count(args)`` chunks; ``prepare(args)`` (if
    given) the arguments every call gets, the ``claim`` appended."""
    return _Claimed(kernel, count, prepare)
