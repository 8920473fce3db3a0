"""A separate preallocated ``out`` is written in one pass, like ``out=x`` (issue 40).

Into a separate ``out`` the integer samplers used to draw every cell's noise twice (a
checking pass, then a replay that writes), so ``out=`` ran slower than allocating.  Now
x's range is read first (one pass over x); when every cell lies ``DIRECT_MARGIN`` scales
inside the dtype, out is written in one pass, bit for bit what allocating gives.  Near
the dtype's limits (int8 / uint8 always, for scales >= 0.5) the check-first path (out
untouched on overflow) stays.
"""

from __future__ import annotations

import numpy as np
import pytest

import dpfast
from dpfast.noise import _drive, _windows, integers

from .helpers import KEY


def _count(monkeypatch, owner, name: str) -> list[int]:
    calls: list[int] = []
    real = getattr(owner, name)

    def spy(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(owner, name, spy)
    return calls


@pytest.mark.parametrize("fn,param", [(dpfast.discrete_laplace, 3.0),
                                      (dpfast.discrete_laplace, np.full(200_000, 0.4)),
                                      (dpfast.discrete_gaussian, 2.5)])
@pytest.mark.parametrize("dtype", ["i8", "i4", ">i8", "u2", "i2"])
def test_separate_out_is_written_in_one_pass(monkeypatch, fn, param, dtype) -> None:
    """Fails on the old code: a separate out drew the noise twice (replay) for every
    dtype.  The result is bit for bit the allocating call's."""
    n = 200_000
    info = np.iinfo(dtype)
    mid = (int(info.min) + int(info.max)) // 2
    x = (np.arange(n) % 20 + mid).astype(dtype)
    want = fn(x, param, rng=KEY)
    out = np.full_like(x, 7)
    runs = _count(monkeypatch, _drive, "run_discrete")
    replays = _count(monkeypatch, _windows.WindowedNoise, "replay")
    got = fn(x, param, rng=KEY, out=out)
    assert got is out
    assert np.array_equal(out, want)
    assert not replays
    if np.dtype(dtype) == np.int64 and np.dtype(dtype).isnative:
        assert len(runs) == 1  # straight into out, no window buffer


def test_near_the_limits_out_is_checked_first(monkeypatch) -> None:
    """x within DIRECT_MARGIN scales of its dtype's limit: the check-first path (the noise
    drawn, checked, then replayed into out), so an overflow leaves out untouched."""
    x = np.full(100_000, 50, np.int16)
    x[-1] = np.iinfo(np.int16).max - integers.DIRECT_MARGIN * 3 + 1
    replays = _count(monkeypatch, _windows.WindowedNoise, "replay")
    out = np.empty_like(x)
    dpfast.discrete_laplace(x, 3.0, rng=KEY, out=out)
    assert len(replays) == 1
    assert np.array_equal(out, dpfast.discrete_laplace(x, 3.0, rng=KEY))
    x[-1] -= 1  # now exactly DIRECT_MARGIN scales inside: one pass
    dpfast.discrete_laplace(x, 3.0, rng=KEY, out=out)
    assert len(replays) == 1


@pytest.mark.parametrize("dtype", ["i8", "i4", "u1"])
def test_int_range(dtype) -> None:
    for n in (1, 5, 70_000, 200_001):
        x = np.random.default_rng(n).integers(np.iinfo(dtype).min, np.iinfo(dtype).max,
                                              n, dtype=dtype, endpoint=True)
        assert integers._int_range(x) == (int(x.min()), int(x.max()))
