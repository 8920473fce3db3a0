"""DP-SGD helpers: exact clipping, exact grid sum, noise level, validation."""

from __future__ import annotations

import importlib.util
import math

import numba
import numpy as np
import pytest

from dpfast import dpsgd
from dpfast._kernels import dpsgd as kernels

from .helpers import KEY


def need_noise():
    if importlib.util.find_spec("dpfast.noise") is None:
        pytest.skip("dpfast.noise has not landed yet (samplers issue)")
    return importlib.import_module("dpfast.noise")




def grads(rows=37, cols=11, seed=0, scale=3.0):
    g = np.random.default_rng(seed).normal(size=(rows, cols)) * scale
    g[0] = 0.0  # zero row
    g[1] *= 1e-3  # well inside the bound
    return g


def reference_clip(g, c):
    """Left-to-right sum of squares, factor min(1, c / norm): the documented formula."""
    s = np.zeros(g.shape[0])
    for j in range(g.shape[1]):
        s = s + g[:, j] * g[:, j]
    norm = np.sqrt(s)
    factor = np.where(norm <= c, 1.0, c / np.where(norm == 0, 1.0, norm))
    return g * factor[:, None]


# --------------------------------------------------------------------------- clipping


@pytest.mark.parametrize("c", [0.5, 1.0, 7.25])
def test_clip_matches_reference_bit_for_bit(c):
    g = grads()
    out = dpsgd.clip_per_example(g, c)
    np.testing.assert_array_equal(out, reference_clip(g, c))
    norms = np.linalg.norm(out, axis=1)
    assert np.all(norms <= c * (1 + 1e-14))
    inside = np.linalg.norm(g, axis=1) < c * (1 - 1e-12)
    np.testing.assert_array_equal(out[inside], g[inside])  # unchanged bit for bit
    clipped = ~inside
    np.testing.assert_allclose(norms[clipped & (np.linalg.norm(g, axis=1) > 0)], c, rtol=1e-14)


def test_clip_does_not_mutate_and_accepts_layouts():
    g = np.asfortranarray(grads().astype(np.float32))
    before = g.copy()
    out = dpsgd.clip_per_example(g, 1.0)
    np.testing.assert_array_equal(g, before)
    np.testing.assert_array_equal(out, reference_clip(before.astype(np.float64), 1.0))
    ints = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(
        dpsgd.clip_per_example(ints, 2.0), reference_clip(ints.astype(np.float64), 2.0)
    )


def test_grid_sum_is_exact_and_thread_independent():
    g = grads(rows=50, cols=5000, seed=3)
    c, inv_g = 1.0, 2.0**40
    norms = np.empty(50)
    factors = np.empty(50)
    kernels.clip_factors(g, c, norms, factors)
    ref = np.rint(reference_clip(g, c) * inv_g).astype(np.int64).sum(axis=0)
    out = np.empty(5000, np.int64)
    kernels.clipped_grid_sum(g, factors, inv_g, out)
    np.testing.assert_array_equal(out, ref)
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        out1 = np.empty(5000, np.int64)
        kernels.clipped_grid_sum(g, factors, inv_g, out1)
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(out1, ref)
    # the serial kernels used for small inputs agree bit for bit
    norms_s = np.empty(50)
    factors_s = np.empty(50)
    kernels.clip_factors_serial(g, c, norms_s, factors_s)
    np.testing.assert_array_equal(factors_s, factors)
    np.testing.assert_array_equal(norms_s, norms)
    out_s = np.empty(5000, np.int64)
    kernels.clipped_grid_sum_serial(g, factors, inv_g, out_s)
    np.testing.assert_array_equal(out_s, ref)
    big = grads(rows=64, cols=2048, seed=4)  # above PARALLEL_MIN: parallel clip_rows
    assert big.size >= kernels.PARALLEL_MIN
    np.testing.assert_array_equal(dpsgd.clip_per_example(big, 1.0), reference_clip(big, 1.0))


# --------------------------------------------------------------------------- noise level


def test_noise_sigma_is_safe_and_tight():
    need_noise()
    for c, z, p in [(1.0, 1.1, 31), (0.1, 4.0, 10**6), (3.0, 0.5, 1)]:
        sigma, g = dpsgd.noise_sigma(c, z, p)
        assert sigma >= z * c
        assert sigma <= z * c * (1 + 1e-6)
        m, _ = math.frexp(g)
        assert m == 0.5  # a power of two
        assert sigma / g >= 2.0**38
        # the sensitivity bound including the grid term, rounded up
        rho = float(dpsgd._clip_bound_factor(p))
        assert sigma >= z * (rho * c + math.sqrt(p) * g) * (1 - 1e-15)


def test_clip_and_noise_is_clipped_grid_sum_plus_noise():
    need_noise()
    g = grads(rows=40, cols=300, seed=5)
    c, z = 1.0, 1.5
    res = dpsgd.clip_and_noise(g, c, z, rng=KEY)
    res0 = dpsgd.clip_and_noise(np.zeros_like(g), c, z, rng=KEY)
    _, gran = dpsgd.noise_sigma(c, z, g.shape[1])
    total = np.rint(res * 40 / gran).astype(np.int64)
    noise = np.rint(res0 * 40 / gran).astype(np.int64)
    ref = np.rint(reference_clip(g, c) / gran).astype(np.int64).sum(axis=0)
    np.testing.assert_array_equal(total - noise, ref)
    # same key, same output; the input is untouched
    before = g.copy()
    np.testing.assert_array_equal(dpsgd.clip_and_noise(g, c, z, rng=KEY), res)
    np.testing.assert_array_equal(g, before)
    # batch_size divides instead of the row count
    res_b = dpsgd.clip_and_noise(g, c, z, rng=KEY, batch_size=80.0)
    np.testing.assert_allclose(res_b, res / 2, rtol=1e-15)


def test_noise_variance_matches_sigma():
    need_noise()
    p = 200_000
    c, z = 0.5, 1.3
    res = dpsgd.clip_and_noise(np.zeros((1, p)), c, z, rng=KEY)
    sigma = z * c
    se = sigma**2 * math.sqrt(2.0 / p)
    assert abs(res.var() - sigma**2) < 5 * se
    assert abs(res.mean()) < 5 * sigma / math.sqrt(p)
    # mean over a batch of 4: noise / 4
    res4 = dpsgd.clip_and_noise(np.zeros((4, p)), c, z, rng=KEY)
    assert abs(res4.var() - (sigma / 4) ** 2) < 5 * se / 16


def test_empty_batch_needs_batch_size():
    need_noise()
    with pytest.raises(ValueError, match="batch_size"):
        dpsgd.clip_and_noise(np.zeros((0, 3)), 1.0, 1.0, rng=KEY)
    out = dpsgd.clip_and_noise(np.zeros((0, 3)), 1.0, 1.0, rng=KEY, batch_size=10)
    assert out.shape == (3,) and np.isfinite(out).all()


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        (dict(per_example_grads=np.zeros(3)), ValueError, "per_example_grads"),
        (dict(per_example_grads=np.zeros((2, 2), bool)), TypeError, "per_example_grads"),
        (dict(per_example_grads=np.zeros((2, 2), complex)), TypeError, "per_example_grads"),
        (dict(per_example_grads=np.array([[1.0, np.nan]])), ValueError, "per_example_grads"),
        (dict(per_example_grads=np.array([[1.0, np.inf]])), ValueError, "per_example_grads"),
        (dict(per_example_grads=np.zeros((2, 0))), ValueError, "per_example_grads"),
        (dict(clip_norm=0.0), ValueError, "clip_norm"),
        (dict(clip_norm=-1.0), ValueError, "clip_norm"),
        (dict(clip_norm=float("nan")), ValueError, "clip_norm"),
        (dict(clip_norm=float("inf")), ValueError, "clip_norm"),
        (dict(clip_norm="1"), TypeError, "clip_norm"),
        (dict(noise_multiplier=0.0), ValueError, "noise_multiplier"),
        (dict(noise_multiplier=float("nan")), ValueError, "noise_multiplier"),
        (dict(noise_multiplier=True), TypeError, "noise_multiplier"),
        (dict(batch_size=0), ValueError, "batch_size"),
        (dict(batch_size=float("nan")), ValueError, "batch_size"),
    ],
)
def test_validation(kwargs, exc, word):
    need_noise()
    args = dict(per_example_grads=np.ones((2, 2)), clip_norm=1.0, noise_multiplier=1.0)
    args.update(kwargs)
    batch_size = args.pop("batch_size", None)
    with pytest.raises(exc, match=word):
        dpsgd.clip_and_noise(**args, rng=KEY, batch_size=batch_size)


def test_clip_validation():
    with pytest.raises(ValueError, match="clip_norm"):
        dpsgd.clip_per_example(np.ones((2, 2)), 2.0**-500)
    with pytest.raises(ValueError, match="per_example_grads"):
        dpsgd.clip_per_example(np.ones((2, 2, 2)), 1.0)
