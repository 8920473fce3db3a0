"""dpfast.compat.diffprivlib._fastcheck: the exact-type fast paths of diffprivlib's parameter
checks and constructors give exactly what diffprivlib's own code gives (value or error)."""

from __future__ import annotations

import math
import secrets
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("diffprivlib")
from diffprivlib import mechanisms as dm  # noqa: E402

from dpfast.compat import diffprivlib as dpl  # noqa: E402
from dpfast.compat.diffprivlib import _fastcheck  # noqa: E402
from dpfast.compat.diffprivlib._numpy_rng import check_random_state  # noqa: E402

# parameters of every kind diffprivlib's checks see or reject: plain and numpy numbers,
# signed zeros, NaN, infinities, huge ints, bools, other numpy widths, non-numbers
_ODD = [0, 1, -1, 0.0, -0.0, 0.5, 1.0, 2.0, -2.5, math.inf, -math.inf, math.nan, 10 ** 400,
        2 ** 63, -(2 ** 63) - 1, True, False, np.float64(0.25), np.float64(-1.0),
        np.float64(math.nan), np.int64(3), np.int64(-3), np.float32(0.5), np.int32(2),
        np.bool_(True), "1", None, [1.0], 1 + 0j]
values = st.one_of(st.sampled_from(_ODD), st.floats(allow_nan=True),
                   st.integers(-(2 ** 70), 2 ** 70), st.floats(-3, 3).map(np.float64),
                   st.integers(-5, 5).map(np.int64))
utilities = st.one_of(st.lists(values, max_size=4), st.sampled_from([(), "ab", None, 3]))
_CLASSES = [dpl.Laplace, dpl.LaplaceTruncated, dpl.LaplaceFolded, dpl.LaplaceBoundedDomain,
            dpl.Geometric, dpl.GeometricTruncated, dpl.GeometricFolded, dpl.GaussianAnalytic,
            dpl.Exponential, dpl.PermuteAndFlip]


def _outcome(fn, *args):
    """(result, None) or (None, (exception type, message)); numpy warnings as errors."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            return fn(*args), None
        except Exception as exc:  # noqa: BLE001 - comparing whatever diffprivlib raises
            return None, (type(exc), str(exc))


def _same(a, b) -> bool:
    (ra, ea), (rb, eb) = a, b
    if ea or eb:
        return ea == eb
    return type(ra) is type(rb) and repr(ra) == repr(rb)  # (repr: NaN, -0.0, element types)


def _both(fn, *args):
    _fastcheck.ENABLED = True
    try:
        fast = _outcome(fn, *args)
    finally:
        _fastcheck.ENABLED = False
    try:
        slow = _outcome(fn, *args)
    finally:
        _fastcheck.ENABLED = True
    return fast, slow


def test_fast_paths_attached_where_the_shadowed_check_is_known() -> None:
    modes = {c.__name__: c._fast_modes["_check_all"] for c in _CLASSES}
    assert modes == {"Laplace": "laplace", "LaplaceTruncated": "truncated",
                     "LaplaceFolded": None, "LaplaceBoundedDomain": "truncated",
                     "Geometric": "geometric", "GeometricTruncated": None,
                     "GeometricFolded": None, "GaussianAnalytic": None,
                     "Exponential": "exponential", "PermuteAndFlip": "exponential"}
    assert dpl.GaussianAnalytic._fast_modes["_check_epsilon_delta"] is None  # its own check


@settings(max_examples=300, deadline=None)
@given(cls=st.sampled_from(_CLASSES), a=values, b=values)
def test_classmethod_checks_equal_diffprivlibs(cls, a, b) -> None:
    for name, args in (("_check_epsilon_delta", (a, b)), ("_check_sensitivity", (a,)),
                       ("_check_bounds", (a, b))):
        fn = getattr(cls, name, None)
        if fn is not None:
            fast, slow = _both(fn, *args)
            assert _same(fast, slow), (cls.__name__, name, args, fast, slow)


@settings(max_examples=300, deadline=None)
@given(utility=utilities, candidates=st.sampled_from([None, ["x", "y"], "x"]),
       measure=st.sampled_from([None, [1.0, 2.0], [math.inf, 1.0]]))
def test_utility_check_equals_diffprivlibs(utility, candidates, measure) -> None:
    fast, slow = _both(dpl.PermuteAndFlip._check_utility_candidates_measure, utility,
                       candidates, measure)
    assert _same(fast, slow), (utility, candidates, measure, fast, slow)


def _valid(cls):
    kw = {"epsilon": 1.0, "sensitivity": 1}
    if cls in (dpl.LaplaceTruncated, dpl.LaplaceBoundedDomain, dpl.LaplaceFolded):
        kw.update(lower=0.0, upper=4.0)
    if cls in (dpl.GeometricTruncated, dpl.GeometricFolded):
        kw.update(lower=0, upper=4)
    if cls is dpl.GaussianAnalytic:
        kw.update(delta=1e-5)
    if cls in (dpl.Exponential, dpl.PermuteAndFlip):
        kw.update(utility=[3, 1])
    return cls(**kw, random_state=5)


@settings(max_examples=300, deadline=None)
@given(cls=st.sampled_from(_CLASSES), attr=st.sampled_from(
    ["epsilon", "delta", "sensitivity", "lower", "upper", "utility", None]),
    new=st.one_of(values, utilities), value=values)
def test_check_all_equals_diffprivlibs(cls, attr, new, value) -> None:
    """``_check_all`` (run before every draw) on parameters mutated after construction, and
    on every kind of value, gives diffprivlib's result or error."""
    mech = _valid(cls)
    if attr is not None and hasattr(mech, attr):
        setattr(mech, attr, new)
    for v in (value, None):
        fast, slow = _both(mech._check_all, v)
        assert _same(fast, slow), (cls.__name__, attr, new, v, fast, slow)


def _state(mech) -> dict:
    d = dict(vars(mech))
    rng = d.pop("_rng")
    d.pop("_gen"), d.pop("_buffer", None), d.pop("_buf", None)
    # a new SystemRandom per object when unseeded (diffprivlib's), else the same object
    return {k: repr(v) for k, v in d.items()} | {
        "_rng": type(rng) if isinstance(rng, secrets.SystemRandom) else id(rng)}


_RS = [None, check_random_state(None), check_random_state(7), np.random.mtrand._rand]


@settings(max_examples=200, deadline=None)
@given(eps=values, delta=values, sens=values, lower=values, upper=values,
       rs=st.sampled_from(range(len(_RS))))
def test_fast_laplace_truncated_init_equals_diffprivlibs(eps, delta, sens, lower, upper,
                                                         rs) -> None:
    def make():
        return dpl.LaplaceTruncated(epsilon=eps, delta=delta, sensitivity=sens, lower=lower,
                                    upper=upper, random_state=_RS[rs])
    fast, slow = _both(make)
    assert (fast[1] is None) == (slow[1] is None) and fast[1] == slow[1]
    if fast[0] is not None:
        assert _state(fast[0]) == _state(slow[0])
        assert list(vars(fast[0])) == list(vars(slow[0]))  # same attributes, same order


@settings(max_examples=200, deadline=None)
@given(eps=values, sens=values, utility=utilities, monotonic=st.sampled_from([True, False, 0]),
       candidates=st.sampled_from([None, ["x", "y"]]), rs=st.sampled_from(range(len(_RS))))
def test_fast_permute_and_flip_init_equals_diffprivlibs(eps, sens, utility, monotonic,
                                                        candidates, rs) -> None:
    def make():
        return dpl.PermuteAndFlip(epsilon=eps, sensitivity=sens, utility=utility,
                                  monotonic=monotonic, candidates=candidates,
                                  random_state=_RS[rs])
    fast, slow = _both(make)
    assert (fast[1] is None) == (slow[1] is None) and fast[1] == slow[1]
    if fast[0] is not None:
        assert _state(fast[0]) == _state(slow[0])
        assert list(vars(fast[0])) == list(vars(slow[0]))


def test_unbound_check_all_on_diffprivlibs_own_subclass_while_installed() -> None:
    """diffprivlib's ``LaplaceTruncated._check_all`` calls ``Laplace._check_all(self, v)``;
    installed, ``Laplace`` is dpfast's: an object of diffprivlib's own subclass
    (``Snapping`` before install, or a user's subclass) still gets diffprivlib's check."""
    own = dm.Snapping(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=2.0)
    with dpl.patched():
        assert own._check_all(1.0) is True
        with pytest.raises(TypeError, match="must be a number"):
            own._check_all("x")
        made = dm.LaplaceTruncated(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=2.0)
        assert type(made) is dpl.LaplaceTruncated and 0.0 <= made.randomise(1.0) <= 2.0
