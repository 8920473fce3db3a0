"""Privacy events of the selection mechanisms (epsilon rounded up)."""

from __future__ import annotations

import numpy as np

from dpfast._core.rounding import float_up
from dpfast._core.validate import check_exact_positive
from dpfast.accounting import events as _events
from dpfast.selection._validate import _check_noise


def exponential_event(epsilon: float) -> _events.Exponential:
    """Privacy event of one :func:`exponential` selection (one row).

    Returns ``dpfast.accounting.events.Exponential(epsilon)``: ``epsilon``-DP and
    ``epsilon``-bounded-range (McSherry & Talwar 2007; Cesar & Rogers 2021).  A
    rational ``epsilon`` that is not a float is rounded up.
    """
    return _events.Exponential(float_up(check_exact_positive(epsilon, "epsilon")))



def permute_and_flip_event(epsilon: float) -> _events.Epsilon:
    """Privacy event of one :func:`permute_and_flip` selection: pure ``epsilon``-DP."""
    return _events.Epsilon(float_up(check_exact_positive(epsilon, "epsilon")))



def report_noisy_max_event(epsilon: float, noise: str = "exponential") -> _events.DpEvent:
    """Event of one :func:`report_noisy_max`: ``Epsilon`` (exponential noise) or
    ``Exponential`` (Gumbel noise, also bounded-range)."""
    if _check_noise(noise) == "gumbel":
        return exponential_event(epsilon)
    return permute_and_flip_event(epsilon)



def top_k_event(epsilon: float, k: int) -> _events.SelfComposed:
    """Event of one :func:`top_k` call: ``SelfComposed(Exponential(epsilon), k)``."""
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k must be an integer, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return _events.SelfComposed(exponential_event(epsilon), int(k))


