"""Shared pieces of the mechanisms: argument checks, directed rounding, the grid fixed
point, exact helpers and the base class."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Generic, TypeVar, overload

import mpmath
import numpy as np

from dpfast import noise as _noise
from dpfast._core.validate import check_exact, check_exact_positive
from dpfast.accounting import events as _events

# precision (bits) of the mpmath evaluations behind the confidence intervals
_PREC = 256

#: the range of the discrete samplers' scale / sigma (``dpfast.discrete_laplace`` and
#: ``dpfast.discrete_gaussian`` refuse values outside it): beyond ``2**50`` a noisy int64
#: value could not hold the noise (its tail at ``2**62`` is below ``exp(-4096)``), below
#: ``2**-100`` the noise is zero with probability ``1 - 2**-(2**100)``
DISCRETE_SCALE_RANGE = (2.0 ** -100, 2.0 ** 50)


def check_discrete_scale(scale: float, what: str) -> None:
    """ValueError unless ``scale`` lies in :data:`DISCRETE_SCALE_RANGE`; ``what`` names the
    privacy parameter that gave it (``"epsilon=1e-20 with sensitivity 1"``).  Raised when
    the mechanism is built, so a release refuses it before it charges a budget."""
    lo, hi = DISCRETE_SCALE_RANGE
    if not lo <= scale <= hi:
        side = "too small" if scale > hi or not math.isfinite(scale) else "too large"
        raise ValueError(f"{what} gives the noise scale {scale:g}, outside the supported "
                         "range [2**-100, 2**50] of the discrete samplers (int64 noise): "
                         f"the privacy parameter is {side}")


# --------------------------------------------------------------------------- validation
# (the checks are dpfast._core's; these add the ranges of the mechanisms, value first like _core)


def _positive_int(value: Any, name: str) -> int:
    q = check_exact_positive(value, name)
    if q.denominator != 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(q)


def _open_unit(value: Any, name: str) -> Fraction:
    q = check_exact(value, name)
    if not (0 < q < 1):
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return q


def _delta(value: Any) -> Fraction:
    return _open_unit(value, "delta")


def _alpha(value: Any) -> Fraction:
    return _open_unit(value, "alpha")


def _privacy_mode(
    epsilon: Any, delta: Any, rho: Any
) -> tuple[str, Fraction | None, Fraction | None, Fraction | None]:
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise ValueError("pass either (epsilon, delta) or rho, not both")
        return "zcdp", None, None, check_exact_positive(rho, "rho")
    if epsilon is None:
        raise ValueError("pass (epsilon, delta) or rho")
    eps = check_exact_positive(epsilon, "epsilon")
    if delta is None:
        raise ValueError(
            "delta is required with epsilon for Gaussian noise (use a Laplace mechanism "
            "for pure epsilon-DP, or pass rho for zCDP)"
        )
    return "approx", eps, _delta(delta), None


def _granularity_fixed_point(
    need: Any, start: float, what: str
) -> tuple[float, float]:
    """A float ``s >= start`` with ``s >= need(g(s), s)`` where ``g = granularity``.

    ``need(g, s)`` is the (rounded-up) scale required when the grid is ``g`` and the scale
    is ``s``.  The iterates ``s_{k+1} = need(g(s_k), s_k)`` increase until one satisfies
    the condition, which is then returned: the guarantee is checked for the returned pair
    ``(s, g(s))`` itself, so correctness does not depend on monotonicity (which only
    makes the result the smallest fixed point for the Laplace case).
    """
    s = start
    for _ in range(400):
        if not math.isfinite(s):
            break
        g = float(_noise.granularity(s))
        n = need(g, s)
        if n <= s:
            # tighten: step down while the smaller candidate still satisfies the condition
            for _ in range(100):
                if n == s:
                    break
                g_n = float(_noise.granularity(n))
                if need(g_n, n) > n:
                    break
                s, g = n, g_n
                n = need(g, s)
            return s, g
        s = n
    raise ValueError(
        f"{what}: the grid term does not converge (noise scale {s!r}): the privacy "
        "parameter is too small for a float noise scale with a grid of about 2^-40 times "
        "it (use a discrete mechanism)"
    )


def _mpf(q: Fraction | float | int) -> mpmath.mpf:
    q = Fraction(q)
    return mpmath.mpf(q.numerator) / q.denominator


def _exp_upper(x: Fraction) -> Fraction:
    """A rational upper bound on ``exp(x)`` (relative error < 2^-100)."""
    with mpmath.workprec(_PREC):
        v = mpmath.exp(_mpf(x)) * (1 + mpmath.mpf(2) ** -120)
        m, e = mpmath.frexp(v)
        num = int(mpmath.ceil(mpmath.ldexp(m, 200)))
        return Fraction(num) * Fraction(2) ** (int(e) - 200)


# --------------------------------------------------------------------------- base


def interval_around(released: Any, w: Any, extra: Any = 0) -> tuple[Any, Any]:
    """``(released - (w + extra), released + (w + extra))``: the per-value interval of a
    mechanism's output, in the shape :meth:`dpfast.tables.TableRelease.confidence_interval`
    returns (arrays for arrays, numbers for a scalar), in the output's dtype."""
    arr = np.asarray(released)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"released must be the mechanism's numeric output, got dtype "
                        f"{arr.dtype}")
    half = w + extra
    if arr.dtype.kind in "iu":
        h = np.asarray(half, dtype=np.int64 if arr.dtype.kind == "i" else arr.dtype)
        low, high = arr - h, arr + h
    else:  # directed: the float bounds never shrink the interval
        h = np.asarray(float(half), dtype=arr.dtype)
        low = np.nextafter(arr - h, -np.inf)
        high = np.nextafter(arr + h, np.inf)
    if arr.ndim == 0:
        return low.item(), high.item()
    return low, high


#: the type of a mechanism's noise half-width (int for the discrete mechanisms)
W = TypeVar("W", int, float)


class _Mechanism(Generic[W]):
    """Shared behaviour: repr and the confidence interval (``W``: the half-width's type)."""

    event: _events.DpEvent
    #: added to the noise's half-width in an interval around a release (the grid
    #: mechanisms' rounding of ``x`` to the grid: ``granularity / 2``)
    _rounding: float = 0.0

    def _halfwidth(self, alpha: float) -> W:  # pragma: no cover - overridden
        raise NotImplementedError

    @overload
    def confidence_interval(self, alpha: float) -> W: ...
    @overload
    def confidence_interval(self, alpha: float, released: Any) -> tuple[Any, Any]: ...

    def confidence_interval(self, alpha: float, released: Any = None) -> Any:
        """The noise's half-width ``w`` at level ``1 - alpha``, or with ``released`` (this
        mechanism's output) the per-value interval ``(low, high)``.

        Without ``released``: the smallest ``w`` of the noise law with
        ``P(|noise| <= w) >= 1 - alpha`` (the mechanism's own docs say how it is computed).
        With it: ``(low, high)`` arrays (numbers for a scalar) covering the true value
        with probability ``>= 1 - alpha`` each -- the same shape of answer as
        :meth:`dpfast.tables.TableRelease.confidence_interval`; the grid mechanisms add
        the rounding of ``x`` to the grid (``granularity / 2``), float bounds are rounded
        outwards.
        """
        w = self._halfwidth(alpha)
        if released is None:
            return w
        return interval_around(released, w, self._rounding)

    def _params(self) -> dict[str, Any]:  # pragma: no cover - overridden
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"
