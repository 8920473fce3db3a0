"""dpfast.dask array noising: lazy, bit-identical to the single-machine call for any
chunking (issue 12)."""

from __future__ import annotations

import numpy as np
import pytest

da = pytest.importorskip("dask.array")

import dpfast  # noqa: E402
import dpfast.dask as dkd  # noqa: E402
from dpfast import _drive, _exact  # noqa: E402
from dpfast.dask import arrays as A  # noqa: E402

from .helpers import KEY  # noqa: E402

X = np.arange(240_000, dtype=np.int64).reshape(480, 500) - 120_000


@pytest.mark.parametrize("chunks", [(480, 500), (100, 77), (13, 500), (480, 7)])
def test_discrete_laplace_any_chunking(chunks: tuple[int, int]) -> None:
    ref = dpfast.discrete_laplace(X, 3.0, rng=KEY)
    lazy = dkd.discrete_laplace(da.from_array(X, chunks=chunks), 3.0, rng=KEY)
    assert isinstance(lazy, da.Array)
    np.testing.assert_array_equal(lazy.compute(), ref)


def test_other_laws_dtypes_and_generator_sequence() -> None:
    x32 = X.astype(np.int32)
    ref = dpfast.discrete_gaussian(x32, 50.0, rng=KEY)
    got = dkd.discrete_gaussian(da.from_array(x32, chunks=(77, 100)), 50.0, rng=KEY)
    out = got.compute()
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref)
    xf = np.linspace(-5, 5, 2_100_000)  # three float slices of 2**20 cells
    np.testing.assert_array_equal(
        dkd.laplace(da.from_array(xf, chunks=700_001), 0.5, rng=KEY).compute(),
        dpfast.laplace(xf, 0.5, rng=KEY))
    np.testing.assert_array_equal(
        dkd.gaussian(da.from_array(xf[:50_000], chunks=7_001), 0.5, rng=KEY).compute(),
        dpfast.gaussian(xf[:50_000], 0.5, rng=KEY))
    # a generator's sequence of calls: ids are taken when the lazy call is made
    g1, g2 = dpfast.default_rng(KEY), dpfast.default_rng(KEY)
    a1 = dpfast.discrete_laplace(X, 2.0, rng=g1)
    b1 = dpfast.discrete_laplace(X, 40.0, rng=g1)
    a2 = dkd.discrete_laplace(da.from_array(X, chunks=(50, 50)), 2.0, rng=g2)
    b2 = dkd.discrete_laplace(da.from_array(X, chunks=(200, 500)), 40.0, rng=g2)
    np.testing.assert_array_equal(b2.compute(), b1)
    np.testing.assert_array_equal(a2.compute(), a1)


def test_undecided_cells_finished_in_the_drivers_order(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every cell forced through the exact continuation, blocks of one chunk: the
    continuation stream is consumed in the single-machine order."""
    monkeypatch.setattr(A, "_BLOCK", _drive.CHUNK)
    x = np.zeros(_drive.CHUNK + 300, np.int64)
    with _exact.force_exact(1):
        ref = dpfast.discrete_laplace(x, 0.7, rng=KEY)
        got = dkd.discrete_laplace(da.from_array(x, chunks=30_000), 0.7,
                                   rng=KEY).compute(scheduler="synchronous")
    np.testing.assert_array_equal(got, ref)


def test_bad_input_and_overflow() -> None:
    with pytest.raises(TypeError, match="dask array"):
        dkd.discrete_laplace(X, 1.0, rng=KEY)
    with pytest.raises(TypeError, match="integers"):
        dkd.discrete_laplace(da.zeros(3), 1.0, rng=KEY)
    with pytest.raises(ValueError, match="scale"):
        dkd.discrete_laplace(da.zeros(3, dtype=np.int64), -1.0, rng=KEY)
    with pytest.raises(TypeError, match="scalar"):
        dkd.discrete_laplace(da.zeros(3, dtype=np.int64), np.ones(3), rng=KEY)
    big = da.full(10, 127, dtype=np.int8, chunks=5)
    with pytest.raises(OverflowError):
        dkd.discrete_laplace(big, 1000.0, rng=KEY).compute()
