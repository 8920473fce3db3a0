"""The ``use_case=`` check of the release functions (:mod:`dpfast.guidelines`)."""

from __future__ import annotations

from dpfast import guidelines as _guidelines


def check(use_case: str | None, epsilon: float | None, delta: float,
          rho: float | None) -> None:
    """Warn (``UserWarning``) when the release's epsilon leaves ``use_case``'s range.

    A zCDP target is converted at the release's ``delta`` (or at
    :data:`dpfast.guidelines.ZCDP_DELTA` when it is 0) with CKS20 Cor. 13.
    """
    if use_case is None:
        return
    if epsilon is None:
        from dpfast.accounting.zcdp import zcdp_epsilon

        d = delta if delta > 0 else _guidelines.ZCDP_DELTA
        epsilon = zcdp_epsilon(float(rho), d)  # type: ignore[arg-type]
        what = f"release epsilon (rho {rho:g} at delta {d:g})"
    else:
        what = "release epsilon"
    _guidelines.check_use_case(use_case, epsilon, what=what, stacklevel=4)
