"""Serialised launches of the parallel kernels on a threading layer that is not thread-safe.

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
"""

from __future__ import annotations

import threading
from typing import Any

import numba

__all__ = ["guarded", "serialised", "reset_after_fork"]

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


def serial_twin(kernel: Any, name: str) -> Any:
    """``kernel``'s Python function compiled again without ``parallel=True``, as ``name``
    (its own cache files): for a launch over one chunk, where there is nothing to run in
    parallel, and whose first call then compiles in about half the time (no parfor
    passes).  ``prange`` is ``range`` there: the same chunks, the same output."""
    f = kernel.py_func
    twin = type(f)(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    twin.__qualname__ = name
    twin.__module__ = f.__module__
    twin.__doc__ = f"{f.__name__} in one thread (one chunk): see {f.__name__}."
    return numba.njit(cache=True, _nrt=False)(twin)


def guarded(dispatcher: Any) -> Any:
    """Wrap a ``parallel=True`` dispatcher (decorate above ``@numba.njit(parallel=True)``)."""
    return _Guarded(dispatcher)
