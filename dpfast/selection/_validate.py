"""Validation, constants and the exact-path test hook shared by the selection mechanisms."""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numba
import numpy as np

from dpfast._core.validate import check_exact_positive
from dpfast._kernels import selection as _ks
from dpfast.noise import _drive

_SEG = 1 << 16
# makes _drive.batches size each chunk's buffer to exactly CHUNK words (one per cell)
_WORDS_PER_CELL = 0.79921875
_MIN_C = 2.0 ** -1000  # c = epsilon / (2 sensitivity) must be a normal float
_INF = math.inf

_force = threading.local()
_NUM_THREADS = numba.get_num_threads


# --------------------------------------------------------------------------- test hook
@contextlib.contextmanager
def force_exact() -> Iterator[None]:
    """Test hook: send every selection drawn in this thread through the exact path.

    Inside the ``with`` block the float certificate is declared undecided for every row
    (Gumbel-max) and every coin (permute-and-flip), so all decisions are taken by the
    exact continuation: lazily refined uniforms and integer interval arithmetic.  The
    output distribution is the same; only the speed differs.
    """
    old = getattr(_force, "on", False)
    _force.on = True
    try:
        yield
    finally:
        _force.on = old


def _forced() -> bool:
    return bool(getattr(_force, "on", False))


_PARALLEL_WORK = 1 << 16  # cells below which a kernel runs on the calling thread
_SMALL_CELLS = 4096  # utilities up to this size are checked with numpy on the calling thread
_MIN_PARALLEL_ROWS = 16  # rows below which row_max runs on the calling thread
# the Gumbel scan costs ~2 ns per cell (most cells are skipped by one table lookup): a
# 10^6-candidate scan takes ~2 ms on one thread, below the ~20 ms a parallel launch was
# measured to wait for a worker on a loaded 2-core host
_PARALLEL_SCAN = 1 << 22


def _threads(cells: int, threshold: int | None = None) -> contextlib.AbstractContextManager[None]:
    """Run a parallel kernel on one thread below ``threshold`` cells
    (:func:`dpfast.noise._drive.threads_for`): waking the thread team costs more than the work
    (milliseconds on a busy machine, where a worker waits for a time slice).  Results
    never depend on the thread count."""
    return _drive.threads_for(2 if cells >= (_PARALLEL_WORK if threshold is None else threshold)
                              else 1)


# --------------------------------------------------------------------------- validation
def _check_utilities(utilities: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """(float64 C-contiguous (rows, n) array -- possibly the caller's, never written to --,
    row maxima, input was 1-D)."""
    arr = np.asarray(utilities)
    if arr.dtype == np.float64 and arr.ndim in (1, 2) and 0 < arr.size <= _SMALL_CELLS:
        # small call: numpy's max on the calling thread (no kernel launch, no thread switch)
        f2 = np.ascontiguousarray(arr.reshape(1, -1) if arr.ndim == 1 else arr)
        if np.isfinite(f2).all():
            return f2, f2.max(axis=1), arr.ndim == 1
    if arr.dtype == np.bool_:
        raise TypeError("utilities must be real numbers, got dtype bool")
    if arr.dtype.kind in "iu":
        f = arr.astype(np.float64)
        if f.size and np.any(np.abs(f) >= 2.0 ** 53):
            raise ValueError("utilities: integer utilities must have magnitude < 2**53 "
                             "(larger integers are not exactly representable as float64)")
    elif arr.dtype.kind == "f" and arr.dtype.itemsize <= 8:
        f = arr.astype(np.float64, copy=False)  # read only from here on
    else:
        raise TypeError(f"utilities must be real numbers (int or float up to 64 bits), "
                        f"got dtype {arr.dtype}")
    if f.ndim not in (1, 2):
        raise ValueError(f"utilities must be 1-D (candidates) or 2-D (batch, candidates), "
                         f"got {f.ndim} dimensions")
    if f.size == 0:
        raise ValueError(f"utilities must be non-empty, got shape {f.shape}")
    one_d = f.ndim == 1
    f2 = np.ascontiguousarray(f.reshape(1, -1) if one_d else f)
    umax = np.empty(f2.shape[0])
    bad = np.empty(f2.shape[0], np.uint8)
    # parallel over rows only: a few long rows run on the calling thread (a 10^6-candidate
    # row takes ~1 ms; waking the team for one busy worker cost up to 15 ms when loaded)
    with _threads(f2.size if f2.shape[0] >= _MIN_PARALLEL_ROWS else 0):
        _ks.row_max(f2.reshape(-1), f2.shape[1], umax, bad)
    if bad.any():
        raise ValueError("utilities must be finite (no NaN or inf)")
    return f2, umax, one_d


def _coefficient(epsilon: Any, sensitivity: Any, denom: int) -> tuple[Fraction, float]:
    """(exact c, float c) with c = epsilon / (denom * sensitivity).  Cached for plain
    float / int parameters (the result depends only on their exact values; errors are
    raised again, never cached)."""
    if type(epsilon) in _PLAIN and type(sensitivity) in _PLAIN:
        return _coefficient_cached(epsilon, sensitivity, denom)
    return _coefficient_of(epsilon, sensitivity, denom)


_PLAIN = (float, int)


@functools.lru_cache(maxsize=1024)
def _coefficient_cached(epsilon: float | int, sensitivity: float | int, denom: int
                        ) -> tuple[Fraction, float]:
    return _coefficient_of(epsilon, sensitivity, denom)


def _coefficient_of(epsilon: Any, sensitivity: Any, denom: int) -> tuple[Fraction, float]:
    eps = check_exact_positive(epsilon, "epsilon")
    sens = check_exact_positive(sensitivity, "sensitivity")
    c = eps / (denom * sens)
    try:
        c_f = float(c)  # correctly rounded (integer true division)
    except OverflowError:
        c_f = _INF
    if not _MIN_C <= c_f < _INF:
        raise ValueError(f"epsilon / sensitivity = {float(eps / sens):g} is out of the supported "
                         "range [2**-999, 2**1023]")
    return c, c_f


def _check_flag(value: Any, name: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


_NOISES = ("exponential", "gumbel")


def _check_noise(noise: Any) -> str:
    if not isinstance(noise, str):
        raise TypeError(f"noise must be 'exponential' or 'gumbel', got {type(noise).__name__}")
    if noise not in _NOISES:
        raise ValueError(f"noise must be 'exponential' or 'gumbel', got {noise!r}")
    return noise
