"""DP-SGD accounting: epsilon of the Poisson-subsampled Gaussian and sigma calibration.

Both functions use the RDP accountant's exact subsampled-Gaussian curve
(:func:`~dpfast.accounting.rdp.subsampled_gaussian_rdp`) and the tight CKS20
conversion, vectorised over the orders (no mpmath on the hot path), with the
fractional orders evaluated only where convexity bounds say they can win.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from dpfast._core.search import smallest_true
from dpfast._core.validate import check_real as _check_real
from dpfast._core.validate import check_whole as _check_whole

from .rdp.orders import _as_orders, _orders_info
from .rdp.subsampled_gaussian import _sgm_epsilon

__all__ = ["dpsgd_epsilon", "calibrate_noise_multiplier"]

#: relative bracket width at which calibration stops (the result is within 0.05%)
_CAL_RTOL = 5e-4


def _check_common(delta: float, sampling_rate: float, steps: int) -> tuple[float, float, int]:
    d = _check_real(delta, "delta")
    if not (0.0 < d < 1.0):
        raise ValueError(f"delta must lie in (0, 1), got {d!r}")
    q = _check_real(sampling_rate, "sampling_rate")
    if not (0.0 < q <= 1.0):
        raise ValueError(f"sampling_rate must lie in (0, 1], got {q!r}")
    t = _check_whole(steps, "steps")
    if t <= 0:
        raise ValueError(f"steps must be > 0, got {t}")
    return d, q, t


def _check_accountant(accountant: object) -> str:
    if not isinstance(accountant, str):
        raise TypeError(f"accountant must be a str, got {type(accountant).__name__}")
    if accountant not in ("rdp", "pld"):
        raise ValueError(f"accountant must be 'rdp' or 'pld', got {accountant!r}")
    return accountant


def dpsgd_epsilon(
    sampling_rate: float,
    noise_multiplier: float,
    steps: int,
    delta: float,
    *,
    orders: Iterable[float] | None = None,
    accountant: str = "rdp",
) -> float:
    """Epsilon of DP-SGD: ``steps`` Poisson-subsampled Gaussian steps, at ``delta``.

    Parameters
    ----------
    sampling_rate : float
        Poisson sampling probability ``q`` in ``(0, 1]`` (batch size / dataset size).
    noise_multiplier : float
        ``sigma / clip_norm`` (> 0).
    steps : int
        Number of steps (> 0).
    delta : float
        Target ``delta`` in ``(0, 1)``.
    orders : sequence of float, optional
        RDP orders; default :data:`~dpfast.accounting.rdp.DEFAULT_ORDERS`.
    accountant : {"rdp", "pld"}, default "rdp"
        ``"pld"``: the privacy-loss-distribution accountant
        (:class:`~dpfast.accounting.PldAccountant`), tighter (5-30% smaller epsilon in
        typical settings) and slower (tens of milliseconds to a second).

    Returns
    -------
    float
        ``epsilon`` such that the training run is ``(epsilon, delta)``-DP.

    Raises
    ------
    ValueError
        ``delta`` outside ``(0, 1)``, ``sampling_rate`` outside ``(0, 1]``,
        ``steps <= 0``, ``noise_multiplier <= 0``, or NaN.

    Privacy
    -------
    RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019), composed
    over ``steps`` (Abadi et al. 2016; Mironov 2017), converted with CKS20
    Proposition 12.  Add/remove-one neighbouring relation.  The same bound as
    ``RdpAccountant(orders).compose(PoissonSampled(Gaussian(s), q), steps).get_epsilon(delta)``
    up to rounding: both round up, but along different paths (this function multiplies the
    per-step curve by ``steps`` once and skips fractional orders that cannot win), so the
    two may differ in the last bits; each is a valid upper bound.
    With ``accountant="pld"``: ``PldAccountant().compose(...).get_epsilon(delta)``, an
    upper bound on the exact epsilon of the add/remove pair (see its Privacy section).

    Numerics
    --------
    Exact curve (see :mod:`dpfast.accounting.rdp`), rounded up.
    """
    d, q, t = _check_common(delta, sampling_rate, steps)
    s = _check_real(noise_multiplier, "noise_multiplier")
    if not (0.0 < s < math.inf):
        raise ValueError(f"noise_multiplier must be finite and > 0, got {s!r}")
    if _check_accountant(accountant) == "pld":
        from .pld.dpsgd import pld_dpsgd_epsilon

        return pld_dpsgd_epsilon(q, s, t, d)
    info = _orders_info(_as_orders(orders))
    return _sgm_epsilon(q, s, t, d, info)[0]


def calibrate_noise_multiplier(
    target_epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    orders: Iterable[float] | None = None,
    accountant: str = "rdp",
) -> float:
    """Smallest noise multiplier (to within 0.05%) for an ``(target_epsilon, delta)`` DP-SGD run.

    Parameters
    ----------
    target_epsilon : float
        Target ``epsilon`` (> 0, finite).
    delta : float
        Target ``delta`` in ``(0, 1)``.
    sampling_rate : float
        Poisson sampling probability in ``(0, 1]``.
    steps : int
        Number of steps (> 0).
    orders : sequence of float, optional
        RDP orders; default :data:`~dpfast.accounting.rdp.DEFAULT_ORDERS`.
    accountant : {"rdp", "pld"}, default "rdp"
        ``"pld"``: calibrate against :class:`~dpfast.accounting.PldAccountant`
        (bracketed by RDP first; typically 3-6 PLD evaluations).

    Returns
    -------
    float
        ``sigma`` with ``dpsgd_epsilon(sampling_rate, sigma, steps, delta) <= target_epsilon``
        (always), and ``sigma <= 1.0005 * sigma_min`` where ``sigma_min`` is the smallest
        noise multiplier meeting the target.

    Raises
    ------
    ValueError
        Invalid inputs (see :func:`dpsgd_epsilon`), ``target_epsilon <= 0`` or infinite.

    Privacy
    -------
    Same accounting as :func:`dpsgd_epsilon`; the returned value is the upper end of a
    bisection bracket, so the guarantee holds for it by construction.

    Numerics
    --------
    Geometric bisection on ``sigma`` (epsilon decreases in sigma: more noise is
    post-processing), stopped when the bracket's ratio is below ``1 + 5e-4``.
    """
    d, q, t = _check_common(delta, sampling_rate, steps)
    target = _check_real(target_epsilon, "target_epsilon")
    if not (0.0 < target < math.inf):
        raise ValueError(f"target_epsilon must be finite and > 0, got {target!r}")
    mode = _check_accountant(accountant)
    info = _orders_info(_as_orders(orders))
    if mode == "pld":
        from .pld.dpsgd import pld_calibrate_noise_multiplier

        s_rdp = calibrate_noise_multiplier(target, d, q, t, orders=orders)
        return pld_calibrate_noise_multiplier(target, d, q, t, s_rdp, _CAL_RTOL)[0]

    def eps(s: float) -> float:
        return _sgm_epsilon(q, s, t, d, info)[0]

    # initial guess from the small-q approximation eps ~ 2 q sqrt(T log(1/delta)) / sigma
    # (log(1/delta) as -log(delta): no overflow for subnormal delta)
    guess = min(max(2.0 * q * math.sqrt(t * -math.log(d)) / target, 0.5), 1e12)
    what = (f"calibrate_noise_multiplier(target_epsilon={target_epsilon!r}, delta={delta!r}, "
            f"sampling_rate={sampling_rate!r}, steps={steps!r})")
    # bounded: sigma in [1e-6, 1e12] (ValueError naming the arguments outside)
    return smallest_true(lambda s: eps(s) <= target, guess, rtol=_CAL_RTOL, what=what,
                         hi_limit=1e12, lo_limit=1e-6)
