"""Integer factorization over a sparse range (issue 40): hashed, with the sorted codes
np.unique gives (a Dask combine's ids span the whole id range: 6*10^6 rows over 10^8)."""

from __future__ import annotations

import numpy as np
import pytest

from dpfast.tables import _keys


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint64, np.uint32, np.int16,
                                   np.uint8])
def test_sparse_integer_codes_equal_numpy_unique(dtype: type) -> None:
    info = np.iinfo(dtype)
    r = np.random.default_rng(7)
    n = _keys.SERIAL_ROWS + 1000  # the hashed path (large and sparse)
    x = r.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x[:50] = info.max
    x[50:100] = info.min
    codes, uniques = _keys.factorize_column(x)
    ref_u, ref_c = np.unique(x, return_inverse=True)
    assert codes.dtype == np.int64 and uniques.dtype == x.dtype
    np.testing.assert_array_equal(codes, ref_c.reshape(-1))
    np.testing.assert_array_equal(uniques, ref_u)
