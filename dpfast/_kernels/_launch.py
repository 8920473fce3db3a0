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

A kernel whose work is independent chunks (the noise samplers: a stream and its own cells;
the bounding: an id's rows; a grouping pass: a block of rows) needs no parallel region:
:func:`chunked` runs its one serial ``nogil`` compilation on Python threads, each taking
ranges of chunks as it becomes free.  One compilation serves the serial and the parallel
launch (a ``parallel=True`` kernel compiles in about twice the time of the same code
without it, and a process that launched both compiled both); no threading layer is
involved, so these launches are thread-safe on every layer.
"""

from __future__ import annotations

import threading
from typing import Any

import numba

__all__ = ["guarded", "serialised", "reset_after_fork", "chunked"]

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
    does not have); the layer is rechecked at its first launch."""
    global _lock, _safe
    _lock = threading.Lock()
    _safe = False


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


#: work items per thread of a chunked launch (taken as threads become free: a thread
#: slowed down by another process does not hold up the others)
ITEMS_PER_THREAD = 4


class _Chunked:
    """A chunked launch: ``kernel(*split(args, a, b))`` over ranges ``[a, b)`` covering
    the ``count(args)`` chunks, on up to ``numba.get_num_threads()`` threads (the
    calling one included).  Each chunk's output depends on its own arguments only, so
    the output is that of one call over all chunks, whatever the threads."""

    def __init__(self, kernel: Any, count: Any, split: Any) -> None:
        self._kernel = kernel
        self._count = count
        self._split = split
        self.__wrapped__ = kernel
        self.__name__ = getattr(kernel, "__name__", "kernel")
        self.__doc__ = getattr(kernel, "__doc__", None)

    def __call__(self, *args: Any) -> None:
        self.launch(args, thread_count())

    def launch(self, args: tuple, threads: int) -> None:
        """The launch on at most ``threads`` threads."""
        n = self._count(args)
        nt = min(threads, n)
        if nt <= 1:
            self._kernel(*self._split(args, 0, n))
            return
        per = -(-n // (ITEMS_PER_THREAD * nt))
        items = iter([(a, min(n, a + per)) for a in range(0, n, per)])
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

        workers = [threading.Thread(target=work, name="dpfast-kernel", daemon=True)
                   for _ in range(nt - 1)]
        for t in workers:
            t.start()
        work()
        for t in workers:
            t.join()
        if failed:
            raise failed[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kernel, name)

    def __repr__(self) -> str:
        return f"chunked({self._kernel!r})"


def chunked(kernel: Any, count: Any, split: Any) -> Any:
    """The parallel launch of a serial ``nogil`` kernel over independent chunks:
    ``count(args)`` chunks, ``split(args, a, b)`` the arguments of chunks ``[a, b)``
    (views: what the kernel writes lands in the caller's arrays)."""
    return _Chunked(kernel, count, split)
