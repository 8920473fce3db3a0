"""Error measures that data publishers report for a noisy table against the true one.

All functions take array-likes of equal shape (the noisy release and the truth), never
modify them, and return Python floats.  They are for *evaluation*: the truth is the
sensitive data, so these numbers are not differentially private.

* :func:`mae` -- mean absolute error ``mean |noisy - truth|``;
* :func:`rmse` -- root mean squared error ``sqrt(mean (noisy - truth)^2)``;
* :func:`relative_error` -- ``mean |noisy - truth| / max(|truth|, floor)``: the floor
  (default 1) keeps cells whose truth is 0 (or tiny) from dividing by zero; with integer
  counts a floor of 1 means "absolute error" for empty cells;
* :func:`ci_coverage` -- fraction of cells whose interval ``[low, high]`` contains the truth;
* :func:`utility_ratio` -- signal-to-noise ratio ``sqrt(mean truth^2) / rmse``: how many
  times the typical true value exceeds the typical error (``inf`` for an exact release).

Public as ``dpfast.metrics`` (the top-level facade); numpy only.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

__all__ = ["mae", "rmse", "relative_error", "ci_coverage", "utility_ratio", "summary"]


def _pair(noisy: npt.ArrayLike, truth: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(noisy)
    b = np.asarray(truth)
    for name, x in (("noisy", a), ("truth", b)):
        if x.dtype == np.bool_ or x.dtype.kind not in "iuf":
            raise TypeError(f"{name} must be a real array, got dtype {x.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"noisy has shape {a.shape}, truth has shape {b.shape}")
    if a.size == 0:
        raise ValueError("noisy and truth are empty: no error to measure")
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("noisy and truth must be finite (no NaN or inf)")
    return a, b


def mae(noisy: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """Mean absolute error ``mean |noisy - truth|``."""
    a, b = _pair(noisy, truth)
    return float(np.mean(np.abs(a - b)))


def rmse(noisy: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """Root mean squared error ``sqrt(mean (noisy - truth)^2)``."""
    a, b = _pair(noisy, truth)
    return float(math.sqrt(np.mean((a - b) ** 2)))


def relative_error(noisy: npt.ArrayLike, truth: npt.ArrayLike, *, floor: float = 1.0) -> float:
    """Mean relative error ``mean |noisy - truth| / max(|truth|, floor)``.

    Parameters
    ----------
    floor : float, default 1.0
        Positive floor of the denominator, so a zero truth gives ``|noisy| / floor``
        instead of a division by zero.
    """
    if isinstance(floor, bool) or not isinstance(floor, (int, float)):
        raise TypeError(f"floor must be a real number, got {type(floor).__name__}")
    if not (floor > 0 and math.isfinite(floor)):
        raise ValueError(f"floor must be finite and > 0, got {floor!r}")
    a, b = _pair(noisy, truth)
    return float(np.mean(np.abs(a - b) / np.maximum(np.abs(b), floor)))


def ci_coverage(low: npt.ArrayLike, high: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """Fraction of cells with ``low <= truth <= high``."""
    lo, t = _pair(low, truth)
    hi, _ = _pair(high, truth)
    if np.any(lo > hi):
        raise ValueError("low must be <= high in every cell")
    return float(np.mean((lo <= t) & (t <= hi)))


def utility_ratio(noisy: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """Signal-to-noise ratio ``sqrt(mean truth^2) / rmse(noisy, truth)``.

    Above 1 the table's values stand out from the noise; ``inf`` if there is no error,
    0 if the truth is all zeros.
    """
    a, b = _pair(noisy, truth)
    err = math.sqrt(np.mean((a - b) ** 2))
    sig = math.sqrt(np.mean(b ** 2))
    if err == 0.0:
        return math.inf if sig > 0 else math.nan
    return float(sig / err)


def summary(noisy: npt.ArrayLike, truth: npt.ArrayLike, low: npt.ArrayLike | None = None,
            high: npt.ArrayLike | None = None, *, floor: float = 1.0) -> dict[str, float]:
    """All measures at once: ``{"mae", "rmse", "relative_error", "utility_ratio"}`` and,
    with intervals, ``"coverage"``."""
    out = {"mae": mae(noisy, truth), "rmse": rmse(noisy, truth),
           "relative_error": relative_error(noisy, truth, floor=floor),
           "utility_ratio": utility_ratio(noisy, truth)}
    if low is not None and high is not None:
        out["coverage"] = ci_coverage(low, high, truth)
    return out
