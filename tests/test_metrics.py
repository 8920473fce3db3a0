"""dpfast.metrics: error measures against exact hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpfast import metrics


def test_values() -> None:
    noisy = np.array([12, 0, 7, -1])
    truth = np.array([10, 0, 8, 0])
    assert metrics.mae(noisy, truth) == 1.0  # (2 + 0 + 1 + 1) / 4
    assert metrics.rmse(noisy, truth) == pytest.approx(math.sqrt(6 / 4))
    # relative: 2/10, 0/1 (floor), 1/8, 1/1 (floor)
    assert metrics.relative_error(noisy, truth) == pytest.approx((0.2 + 0 + 0.125 + 1) / 4)
    assert metrics.relative_error(noisy, truth, floor=2.0) == pytest.approx(
        (0.2 + 0 + 0.125 + 0.5) / 4)
    assert metrics.utility_ratio(noisy, truth) == pytest.approx(
        math.sqrt((100 + 64) / 4) / math.sqrt(6 / 4))
    assert metrics.ci_coverage([9, 0, 8, 1], [11, 1, 9, 2], truth) == 0.75
    s = metrics.summary(noisy, truth, [9, 0, 8, 1], [11, 1, 9, 2])
    assert s["coverage"] == 0.75 and s["mae"] == 1.0


def test_edge_cases() -> None:
    assert metrics.utility_ratio([1, 2], [1, 2]) == math.inf
    assert metrics.utility_ratio([1, 2], [0, 0]) == 0.0


@pytest.mark.parametrize("call,exc", [
    (lambda: metrics.mae([1, 2], [1]), ValueError),
    (lambda: metrics.mae([], []), ValueError),
    (lambda: metrics.mae(["a"], [1]), TypeError),
    (lambda: metrics.rmse([np.nan], [1]), ValueError),
    (lambda: metrics.relative_error([1], [1], floor=0), ValueError),
    (lambda: metrics.relative_error([1], [1], floor="1"), TypeError),
    (lambda: metrics.ci_coverage([2], [1], [1]), ValueError),
])
def test_bad_input(call, exc) -> None:
    with pytest.raises(exc):
        call()


def test_inputs_not_modified() -> None:
    a = np.array([1.0, 2.0])
    b = np.array([1.5, 2.0])
    a.flags.writeable = False
    b.flags.writeable = False
    metrics.summary(a, b, a, b + 1)
