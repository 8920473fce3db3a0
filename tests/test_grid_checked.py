"""The float mechanisms refuse an unfit ``x`` (a NaN, an infinity, or ``x / g`` beyond the
largest double) on every path: checked in a pass before anything is written where the
output may overwrite ``x`` (in place, or an ``out`` overlapping it), else by the kernels
on every cell as they read it (``run_discrete``'s ``lim``; no pass of its own).  Either way
the same ``ValueError``; in place ``x`` is left as it was."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpfast
from dpfast._kernels import samplers as _sk
from dpfast.noise import _chunks, _exact

KEY = bytes(range(32))
DBL_MAX = float(np.finfo(np.float64).max)
CHUNK = _chunks.CHUNK
NOT_FINITE = "x must be finite"
OVERFLOWS = "x / granularity overflows"

# (mechanism, scale, granularity): the envelope table (default grid) and, for a
# Laplace scale / g below 1, the geometric kernel
PATHS = [(dpfast.laplace, 10.0, None), (dpfast.gaussian, 10.0, None),
         (dpfast.laplace, 0.3, 0.5), (dpfast.gaussian, 2.0**-20, 2.0**-10)]
BAD = [(np.nan, NOT_FINITE), (np.inf, NOT_FINITE), (-np.inf, NOT_FINITE), ("over", OVERFLOWS)]


def _granularity(scale: float, gran: float | None) -> float:
    return dpfast.noise.granularity(scale) if gran is None else gran


def _x(n: int, at: int, bad, g: float) -> np.ndarray:
    x = np.random.default_rng(at).normal(0.0, 100.0, n)
    x[at] = np.nextafter(DBL_MAX * g, np.inf) if bad == "over" else bad
    return x


def _outputs(x: np.ndarray):
    """(name, out, the array that must be unchanged after a refusal or None)."""
    n = x.size
    yield "new", None, None
    yield "out", np.full(n, 7.0), None
    yield "out32", np.full(n, 7.0, np.float32), None
    yield "strided out", np.full(2 * n, 7.0)[::2], None
    y = x.copy()
    yield "in place", y, y
    z = np.concatenate([x, [1.0]])
    yield "overlap", z[1:], z  # out overlaps x in part


@pytest.mark.parametrize("bad,msg", BAD)
@pytest.mark.parametrize("fn,scale,gran", PATHS)
def test_unfit_x_is_refused_whatever_the_output(monkeypatch, fn, scale, gran, bad, msg) -> None:
    """Over several batches of chunks (the unfit cell in a later batch): every output."""
    monkeypatch.setattr(_chunks, "REFILL_BATCH", 2)
    g = _granularity(scale, gran)
    n = 3 * CHUNK + 100
    for at in (0, 2 * CHUNK + 77, n - 1):
        x = _x(n, at, bad, g)
        for name, out, kept in _outputs(x):
            src = x if name not in ("in place", "overlap") else (
                out if name == "in place" else kept[:-1])
            before = None if kept is None else kept.copy()
            with pytest.raises(ValueError, match=msg):
                fn(src, scale, rng=KEY, out=out, granularity=gran)
            if kept is not None:  # checked before anything was written
                assert np.array_equal(kept, before, equal_nan=True), name


@pytest.mark.parametrize("forced", [1, 3])
@pytest.mark.parametrize("fn,scale,gran", PATHS)
def test_unfit_x_is_refused_by_the_exact_continuation(fn, scale, gran, forced) -> None:
    """Every cell finished exactly in Python (the forced modes): the kernels' check still
    sees every cell they pass."""
    g = _granularity(scale, gran)
    with _exact.force_exact(forced):
        for bad, msg in BAD:
            x = _x(3000, 1234, bad, g)
            with pytest.raises(ValueError, match=msg):
                fn(x, scale, rng=KEY, granularity=gran)
            with pytest.raises(ValueError, match=msg):
                fn(x, scale, rng=KEY, granularity=gran, out=np.empty(3000))


@pytest.mark.parametrize("fn,scale,gran", PATHS)
def test_x_at_the_limit_is_noised_on_both_checks(fn, scale, gran) -> None:
    """|x| = max double * g (x / g is exactly the largest double) is fit: the kernels'
    check and the pass agree, and so do the outputs."""
    g = _granularity(scale, gran)
    x = _x(5000, 10, 0.0, g)
    x[[3, 4000]] = DBL_MAX * min(g, 1.0), -DBL_MAX * min(g, 1.0)
    ref = fn(x, scale, rng=KEY, granularity=gran)  # the kernels check
    y = x.copy()
    fn(y, scale, rng=KEY, granularity=gran, out=y)  # the pass checks
    assert np.array_equal(ref, y)
    assert np.all(np.isfinite(ref))


def test_integer_x_whose_quotient_overflows_is_refused() -> None:
    """An integer x is converted into the output and noised there (the output is what the
    kernel reads): checked in the pass first."""
    x = np.array([0, 0, 1], np.int64)  # 1 / 2^-1072 = 2^1072
    with pytest.raises(ValueError, match=OVERFLOWS):
        dpfast.laplace(x, 2.0**-1022, rng=KEY, granularity=2.0**-1072)
    assert np.all(np.isfinite(dpfast.laplace(x[:2], 2.0**-1022, rng=KEY, granularity=2.0**-1072)))


@settings(max_examples=25, deadline=None)
@given(at=st.integers(0, 2 * CHUNK + 9), bad=st.sampled_from(BAD),
       law=st.sampled_from([dpfast.laplace, dpfast.gaussian]),
       out32=st.booleans())
def test_an_unfit_cell_anywhere_is_refused(at: int, bad, law, out32: bool) -> None:
    x = _x(2 * CHUNK + 10, at, bad[0], dpfast.noise.granularity(1.0))
    out = np.empty(x.size, np.float32 if out32 else np.float64)
    with pytest.raises(ValueError, match=bad[1]):
        law(x, 1.0, rng=KEY, out=out)


@numba.njit(cache=False)
def _unfit(x, top):  # the kernels' check over a whole array
    return _sk.unfit(x, 0, x.size, top)


_FLOATS = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(_FLOATS, min_size=1, max_size=40),
       lim=st.floats(0.0, DBL_MAX, allow_subnormal=True), f32=st.booleans())
def test_unfit_is_abs_x_beyond_lim(values, lim: float, f32: bool) -> None:
    """The bit-max check against its definition: some cell is NaN or has |x| > lim, in
    float64 and in float32 (whose values widen exactly; lim rounded down to float32)."""
    dt = np.float32 if f32 else np.float64
    with np.errstate(over="ignore"):
        x = np.array(values, np.float64).astype(dt)
    expect = not bool(np.all(np.abs(x.astype(np.float64)) <= lim))
    assert _unfit(x, _sk.unfit_top(lim, x.dtype)) == expect


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, None])
def test_max_abs_pass_of_both_widths(dtype, bad) -> None:
    """The in-place pass (the blocks' bit max, float64 and float32 alike) against numpy."""
    from dpfast.noise import _inputs

    x = np.random.default_rng(3).normal(0.0, 1e3, 3 * CHUNK + 5).astype(dtype)
    x[CHUNK + 7] = -7e4
    if bad is not None:
        x[2 * CHUNK + 1] = bad
    got = _inputs.max_abs(x)
    if bad is None:
        assert got == float(np.max(np.abs(x))) == 7e4
    else:
        assert not np.isfinite(got)
    before = x.copy()
    if bad is None:
        dpfast.laplace(x, 1.0, rng=KEY, out=x)  # fit: noised in place
        assert not np.array_equal(x, before)
        return
    with pytest.raises(ValueError, match=NOT_FINITE):
        dpfast.laplace(x, 1.0, rng=KEY, out=x)
    assert np.array_equal(x, before, equal_nan=True)  # checked before anything was written


@pytest.mark.parametrize("fn,scale,gran", PATHS)
def test_an_unfit_cell_fails_the_call_after_every_batch(monkeypatch, fn, scale, gran) -> None:
    """An unfit cell in the first batch: the later batches still run (when the call fails
    does not depend on where the cell lies), so the separate out's last batch is written."""
    monkeypatch.setattr(_chunks, "REFILL_BATCH", 2)
    g = _granularity(scale, gran)
    x = _x(3 * CHUNK + 100, 5, np.nan, g)
    out = np.full(x.size, np.nan)  # the kernels write no NaN for a fit x
    with pytest.raises(ValueError, match=NOT_FINITE):
        fn(x, scale, rng=KEY, out=out, granularity=gran)
    assert np.count_nonzero(np.isnan(out[2 * CHUNK:])) < 10  # the last batch ran
