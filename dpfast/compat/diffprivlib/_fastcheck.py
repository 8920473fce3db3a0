"""Fast acceptance paths for diffprivlib's parameter checks (same results, same errors).

diffprivlib validates every parameter with ``isinstance(x, numbers.Real)`` (an ABC check,
~0.3 us each) in ``__init__`` and again in every ``randomise``; its tools and trees build a new
mechanism per call or per leaf, so these checks cost more than the noise.  :class:`FastChecks`
is mixed in front of diffprivlib's class: each check first tries a test on the *exact* type
(``float``, ``int``, ``numpy.float64``, ``numpy.int64``) that accepts only inputs for which
diffprivlib's own check is known to return a given value, and returns that value; every other
input (wrong types, out-of-range values, NaN, subclasses) is passed to diffprivlib's check,
which raises or returns exactly as it always does.

A fast path is attached only where the check it shadows is the diffprivlib function it was
written against (identified by function object when a class is created); otherwise the class
uses diffprivlib's check unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from diffprivlib.mechanisms import base as _base
from diffprivlib.mechanisms import exponential as _exp
from diffprivlib.mechanisms import geometric as _geo
from diffprivlib.mechanisms import laplace as _lap

from dpfast.compat.diffprivlib._numpy_rng import DpfastRandomState

__all__ = ["FastChecks", "ENABLED", "secure_rng", "init_laplace_truncated",
           "init_permute_and_flip"]

ENABLED = True  # test hook: False sends every check to diffprivlib's own (equivalence tests)

# exact types (no subclasses) that are numbers.Real / numbers.Integral
_INT = (int, np.int64)
_INT64_MIN, _INT64_END = -(1 << 63), 1 << 63
_EXACT = 1 << 53  # Python ints accepted on the fast paths: |x| < 2^53 (float(x) exact)


def _real(x: Any) -> bool:
    """``x`` is a ``float``, ``numpy.float64``, ``numpy.int64`` or a Python ``int`` below
    2^53 in magnitude (so diffprivlib's ``float(x)`` cannot overflow): numbers.Real."""
    t = type(x)
    return (t is float or t is np.float64 or t is np.int64
            or (t is int and -_EXACT < x < _EXACT))


def _func(cls: type, name: str) -> Any:
    return cls.__dict__[name].__func__


# shadowed diffprivlib check -> the fast path that mirrors it
_MODES: dict[str, dict[Any, str]] = {
    "_check_epsilon_delta": {
        _func(_base.DPMechanism, "_check_epsilon_delta"): "any",
        _func(_exp.Exponential, "_check_epsilon_delta"): "pure",  # delta == 0, then the base
        _func(_geo.Geometric, "_check_epsilon_delta"): "pure",
    },
    "_check_sensitivity": {
        _func(_lap.Laplace, "_check_sensitivity"): "real",  # Real, >= 0, float(s)
        _func(_exp.Exponential, "_check_sensitivity"): "real",
        _func(_geo.Geometric, "_check_sensitivity"): "int",  # Integral, >= 0, s
    },
    "_check_bounds": {
        _func(_base.TruncationAndFoldingMixin, "_check_bounds"): "real",  # Real, lower <= upper
    },
    "_check_utility_candidates_measure": {
        _func(_exp.Exponential, "_check_utility_candidates_measure"): "plain",
    },
}


_CHECK_ALL = {  # diffprivlib's _check_all -> (mode, the check modes its fast path needs)
    _lap.Laplace.__dict__["_check_all"]: ("laplace", {"_check_epsilon_delta": "any",
                                                      "_check_sensitivity": "real"}),
    _lap.LaplaceTruncated.__dict__["_check_all"]: ("truncated", {
        "_check_epsilon_delta": "any", "_check_sensitivity": "real", "_check_bounds": "real"}),
    _exp.Exponential.__dict__["_check_all"]: ("exponential", {
        "_check_epsilon_delta": "pure", "_check_sensitivity": "real",
        "_check_utility_candidates_measure": "plain"}),
    _geo.Geometric.__dict__["_check_all"]: ("geometric", {"_check_epsilon_delta": "pure",
                                                          "_check_sensitivity": "int"}),
}


def _eps_delta_ok(epsilon: Any, delta: Any, pure: bool) -> bool:
    """Whether diffprivlib's base check accepts (epsilon, delta) (and delta == 0 if pure),
    decided on exact types only (False: ask diffprivlib)."""
    return (_real(epsilon) and _real(delta) and epsilon >= 0
            and 0 <= delta <= 1 and epsilon + delta != 0 and (not pure or delta == 0))


def _original(cls: type, name: str) -> Any:
    """The function ``cls``'s MRO resolves ``name`` to above ``cls`` itself, seen through
    dpfast's fast versions (their ``dpfast_original``): what diffprivlib would call."""
    for klass in cls.__mro__[1:]:
        attr = klass.__dict__.get(name)
        if attr is not None:
            func = getattr(attr, "__func__", attr)
            return getattr(func, "dpfast_original", func)
    return None


def _fast_classmethod(name: str, mode: str, original: Any) -> Any:
    """A classmethod ``name`` that accepts on exact types what diffprivlib's ``original``
    accepts (returning what it returns) and otherwise calls ``original``."""
    check: Callable[..., Any]
    if name == "_check_epsilon_delta":
        pure = mode == "pure"

        def eps_delta(cls, epsilon, delta):
            if ENABLED and _eps_delta_ok(epsilon, delta, pure):
                return float(epsilon), float(delta)
            return original(cls, epsilon, delta)
        check = eps_delta
    elif name == "_check_sensitivity" and mode == "real":
        def sensitivity_real(cls, sensitivity):
            if ENABLED and _real(sensitivity) and sensitivity >= 0:
                return float(sensitivity)
            return original(cls, sensitivity)
        check = sensitivity_real
    elif name == "_check_sensitivity":
        def sensitivity_int(cls, sensitivity):
            if ENABLED and type(sensitivity) in _INT and sensitivity >= 0:
                return sensitivity
            return original(cls, sensitivity)
        check = sensitivity_int
    elif name == "_check_bounds":
        def bounds(cls, lower, upper):
            if ENABLED and _real(lower) and _real(upper) and not lower > upper:
                return lower, upper
            return original(cls, lower, upper)
        check = bounds
    else:  # _check_utility_candidates_measure
        def utility(cls, utility, candidates, measure):
            if ENABLED and _utility_ok(utility, candidates, measure):
                return utility, candidates, measure
            return original(cls, utility, candidates, measure)
        check = utility
    check.__name__ = check.__qualname__ = name
    check.__doc__ = original.__doc__
    check.dpfast_original = original  # type: ignore[attr-defined,union-attr]
    return classmethod(check)


class FastChecks:
    """Mixin of dpfast's diffprivlib classes: each subclass gets, in its own ``__dict__``,
    a fast version of every diffprivlib check it inherits whose code is known (see the
    module docstring).  Attached per class, not inherited from the mixin, because
    diffprivlib's code also calls checks unbound (``Laplace._check_all(self, value)``), which
    under ``install()`` finds dpfast's ``Laplace`` for objects of other classes: those
    (without ``_fast_all``) get diffprivlib's function."""

    _fast_modes: dict[str, str | None] = {}
    _fast_all: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        modes: dict[str, str | None] = {}
        for name, known in _MODES.items():
            original = _original(cls, name)
            modes[name] = mode = known.get(original)
            if mode is not None and name not in cls.__dict__:
                setattr(cls, name, _fast_classmethod(name, mode, original))
        # the check_all modes whose checks this class has (see _fast_check_all)
        cls._fast_all = frozenset(m for m, needs in _CHECK_ALL.values()
                                  if all(modes[k] == v for k, v in needs.items()))
        original = _original(cls, "_check_all")
        all_mode = _CHECK_ALL.get(original, (None, {}))[0]
        modes["_check_all"] = all_mode if all_mode in cls._fast_all else None
        if all_mode is not None and all_mode in cls._fast_all and "_check_all" not in cls.__dict__:
            cls._check_all = _fast_check_all(all_mode, original)  # type: ignore[attr-defined]
        cls._fast_modes = modes

    @property
    def _fast(self) -> dict[str, str | None]:
        return self._fast_modes if ENABLED else _OFF


def _fast_check_all(mode: str, original: Any) -> Any:
    """A ``_check_all`` that accepts on exact types what diffprivlib's ``original`` accepts
    (returning what it returns) and otherwise calls ``original``.  It is attached to each
    class (not inherited from the mixin) because diffprivlib's code also calls it unbound,
    ``Laplace._check_all(self, value)``, which under ``install()`` finds dpfast's ``Laplace``
    for an object of another class: such an object (without ``_fast_all``) gets
    ``original``."""

    def _check_all(self, value):
        d: Any = self
        if ENABLED and mode in getattr(type(self), "_fast_all", ()):
            if mode == "laplace" or mode == "truncated":
                if (_real(value) and _eps_delta_ok(d.epsilon, d.delta, False)
                        and _real(d.sensitivity) and d.sensitivity >= 0
                        and (mode == "laplace" or (_real(d.lower)
                                                   and _real(d.upper)
                                                   and not d.lower > d.upper))):
                    return True
            elif mode == "exponential":
                if (value is None and _eps_delta_ok(d.epsilon, d.delta, True)
                        and _real(d.sensitivity) and d.sensitivity >= 0
                        and _utility_ok(d.utility, d.candidates, d.measure)):
                    return True
            elif mode == "geometric":
                if (type(value) in _INT and _eps_delta_ok(d.epsilon, d.delta, True)
                        and type(d.sensitivity) in _INT and d.sensitivity >= 0):
                    return None  # (diffprivlib's Geometric._check_all returns None)
        return original(self, value)

    _check_all.__doc__ = original.__doc__
    _check_all.dpfast_original = original  # type: ignore[attr-defined]
    return _check_all


_OFF: dict[str, str | None] = {}


def secure_rng(random_state: Any) -> Any:
    """What ``DPMechanism.__init__`` stores as ``_rng``: diffprivlib's
    ``check_random_state(random_state, True)``, which returns a numpy ``RandomState`` (so a
    :class:`~dpfast.compat.diffprivlib._numpy_rng.DpfastRandomState`) unchanged."""
    if type(random_state) is DpfastRandomState:
        return random_state
    return _base.check_random_state(random_state, True)


def init_laplace_truncated(mech: Any, epsilon: Any, delta: Any, sensitivity: Any, lower: Any,
                           upper: Any, random_state: Any) -> bool:
    """diffprivlib's ``LaplaceTruncated.__init__`` (the attributes it sets, in its order) for
    exact-type parameters that its checks accept; False (nothing set): call diffprivlib's."""
    fast = mech._fast
    if not (fast.get("_check_all") == "truncated"
            and _eps_delta_ok(epsilon, delta, False) and _real(sensitivity)
            and sensitivity >= 0 and _real(lower) and _real(upper)
            and not lower > upper):
        return False
    mech.epsilon, mech.delta = float(epsilon), float(delta)
    mech.random_state = random_state
    mech._rng = secure_rng(random_state)
    mech.sensitivity = float(sensitivity)
    mech._scale = None
    mech.lower, mech.upper = lower, upper
    return True


def init_permute_and_flip(mech: Any, epsilon: Any, sensitivity: Any, utility: Any,
                          monotonic: Any, candidates: Any, random_state: Any) -> bool:
    """diffprivlib's ``PermuteAndFlip.__init__`` (via ``Exponential.__init__`` and
    ``DPMechanism.__init__``: the attributes they set, in their order) for exact-type
    parameters that its checks accept; False (nothing set): call diffprivlib's."""
    if not (mech._fast.get("_check_all") == "exponential"
            and _eps_delta_ok(epsilon, 0.0, True) and _real(sensitivity)
            and sensitivity >= 0 and _utility_ok(utility, candidates, None)):
        return False
    mech.epsilon, mech.delta = float(epsilon), 0.0
    mech.random_state = random_state
    mech._rng = secure_rng(random_state)
    mech.sensitivity = float(sensitivity)
    mech.utility, mech.candidates, mech.measure = utility, candidates, None
    mech.monotonic = bool(monotonic)
    mech._probabilities = mech._find_probabilities(mech.epsilon, mech.sensitivity, utility,
                                                   mech.monotonic, None)
    return True


def _utility_ok(utility: Any, candidates: Any, measure: Any) -> bool:
    return (type(utility) is list and len(utility) > 0 and candidates is None
            and measure is None and _plain_finite(utility))


def _plain_finite(values: list) -> bool:
    """Every element a finite ``float``/``numpy.float64`` or an ``int``/``numpy.int64`` in the
    int64 range (diffprivlib's ``np.isinf(utility)`` then builds a numeric array, all False)."""
    for v in values:
        t = type(v)
        if t is np.int64:
            continue
        if t is int:
            if not _INT64_MIN <= v < _INT64_END:
                return False
        elif t is float or t is np.float64:
            if math.isinf(v):
                return False
        else:
            return False
    return True
