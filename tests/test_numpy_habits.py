"""numpy / pandas habits: dtype and memory order kept, rng= errors that say what to pass,
dropna= for missing keys, one shape of confidence interval for mechanisms and tables."""

from __future__ import annotations

import numpy as np
import pytest

import dpfast
from dpfast import tables
from tests.helpers import KEY


@pytest.mark.parametrize("fn", [dpfast.laplace, dpfast.gaussian])
def test_float32_stays_float32_and_is_the_float64_result_rounded(fn) -> None:
    x = np.linspace(-3, 3, 600, dtype=np.float32).reshape(20, 30)
    y = fn(x, 1.5, rng=KEY)
    assert y.dtype == np.float32 and y.shape == x.shape
    ref = fn(x.astype(np.float64), 1.5, rng=KEY)  # same key: the same noise per cell
    np.testing.assert_array_equal(y, ref.astype(np.float32))
    assert fn(np.float32(1.0), 1.5, rng=KEY).dtype == np.float32  # scalars too


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.float32])
def test_fortran_order_is_kept_with_the_same_noise_per_cell(dtype) -> None:
    x = np.asfortranarray(np.arange(60, dtype=dtype).reshape(6, 10))
    fn = dpfast.discrete_laplace if np.dtype(dtype).kind == "i" else dpfast.laplace
    y = fn(x, 2.0, rng=KEY)
    assert y.flags.f_contiguous and not y.flags.c_contiguous and y.dtype == dtype
    np.testing.assert_array_equal(y, fn(np.ascontiguousarray(x), 2.0, rng=KEY))
    assert x.tolist() == np.arange(60, dtype=dtype).reshape(6, 10).tolist()  # not mutated


@pytest.mark.parametrize("bad, words", [
    (np.random.default_rng(0), "numpy Generator"),
    (np.random.PCG64(0), "numpy PCG64"),
    (42, "the int 42"),
    ("seed", "got str"),
])
def test_rng_errors_say_what_to_pass(bad, words) -> None:
    with pytest.raises(TypeError) as info:
        dpfast.discrete_laplace(np.zeros(3, np.int64), 1.0, rng=bad)
    msg = str(info.value)
    assert words in msg
    for hint in ("rng=None", "rng=dpfast.default_rng()", "os.urandom(32)"):
        assert hint in msg
    with pytest.raises(TypeError, match="os.urandom"):
        tables.count(np.array([1, 2]), epsilon=1.0, domain=[1, 2], rng=bad)


def test_dropna_drops_rows_with_a_missing_key() -> None:
    pd = pytest.importorskip("pandas")
    city = pd.Series(["a", None, "b", "a", np.nan, "b", pd.NA], name="city")
    person = np.arange(7)
    big = 1e6  # noise far below 1: the exact counts
    # issue 36: a missing key is never an error (it would depend on the private rows):
    # its row is dropped whatever dropna says
    dflt = tables.count(city, person, epsilon=big, domain=["a", "b"], rng=KEY)
    assert dflt.to_dict() == {"a": 2, "b": 2}
    rel = tables.count(city, person, epsilon=big, domain=["a", "b"], rng=KEY, dropna=True)
    assert rel.to_dict() == {"a": 2, "b": 2}
    same = tables.count(np.array(["a", "b", "a", "b"]), person[[0, 2, 3, 5]], epsilon=big,
                        domain=["a", "b"], rng=KEY)
    np.testing.assert_array_equal(rel.values, same.values)
    # several key columns: a row goes if any of its keys is missing; values follow
    df = pd.DataFrame({"k": [1.0, np.nan, 2.0, 1.0], "s": ["x", "y", None, "x"]})
    v = np.array([1, 5, 7, 2])
    rel = tables.sum(v, df, bounds=(0, 8), epsilon=big, rng=KEY, dropna=True,
                     domain=(np.array([1.0, 2.0]), np.array(["x", "y"])))
    assert rel.to_dict() == {(1.0, "x"): 3, (2.0, "y"): 0}
    assert df["s"].isna().sum() == 1  # the caller's frame is not modified
    with pytest.raises(TypeError, match="dropna"):
        tables.count(city, epsilon=1.0, domain=["a"], dropna="yes")
    nan_keys = np.array([1.0, np.nan, 1.0])
    assert tables.mean(np.array([1.0, 2.0, 3.0]), nan_keys, bounds=(0.0, 4.0), epsilon=big,
                       domain=[1.0], rng=KEY, dropna=True).values[0] == pytest.approx(2.0,
                                                                                      abs=0.01)


@pytest.mark.parametrize("mech, x", [
    (dpfast.DiscreteLaplaceMechanism(1.0), np.arange(5)),
    (dpfast.DiscreteGaussianMechanism(epsilon=1.0, delta=1e-6), np.arange(5)),
    (dpfast.LaplaceMechanism(1.0, sensitivity=1.0), np.linspace(0, 1, 5)),
    (dpfast.GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0), np.linspace(0, 1, 5)),
])
def test_mechanism_interval_has_the_shape_of_a_table_interval(mech, x) -> None:
    y = mech(x, rng=KEY)
    w = mech.confidence_interval(0.05)
    lo, hi = mech.confidence_interval(0.05, y)
    assert lo.shape == hi.shape == y.shape and lo.dtype == y.dtype
    extra = getattr(mech, "granularity", 0) / 2 if y.dtype.kind == "f" else 0
    assert np.all(lo <= y - (w + extra)) and np.all(hi >= y + (w + extra))
    assert np.all(hi - lo <= 2 * (w + extra) * (1 + 1e-12) + 1e-300)
    s_lo, s_hi = mech.confidence_interval(0.05, y[0])  # a scalar: numbers
    assert isinstance(s_lo, (int, float)) and s_lo == lo[0] and s_hi == hi[0]
    rel = tables.count(np.array([1, 1, 2]), epsilon=1.0, domain=[1, 2], rng=KEY)
    t_lo, t_hi = rel.confidence_interval(0.05)
    assert t_lo.shape == rel.values.shape  # the same (low, high) shape
    with pytest.raises(TypeError, match="released"):
        mech.confidence_interval(0.05, np.array(["a"]))


def test_mechanism_interval_covers_the_truth() -> None:
    """Coverage of (low, high) around the released values: >= 1 - alpha (exact law)."""
    mech = dpfast.DiscreteLaplaceMechanism(0.5)
    x = np.zeros(200_000, np.int64)
    lo, hi = mech.confidence_interval(0.1, mech(x, rng=KEY))
    cover = float(np.mean((lo <= 0) & (0 <= hi)))
    assert cover >= 0.9 - 4 * np.sqrt(0.09 / x.size)
