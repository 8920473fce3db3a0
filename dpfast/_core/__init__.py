"""The bottom layer: argument checks, directed rounding, DP conversions, error types.

Everything in dpfast may import this package; it imports nothing of dpfast.  Its modules:

``errors``
    One exception type per kind of failure (:class:`UnsupportedEventError`,
    :class:`NeighbouringRelationError`).
``validate``
    Argument checks with one signature, ``check_x(value, name, ...)``; errors name the
    parameter.  Standard library only (the privacy events import it).
``rounding``
    Directed rounding of privacy arithmetic (epsilon, rho, delta, sigma go up).
    Standard library only.
``conversions``
    The DP conversions, written once: RDP -> (epsilon, delta) and zCDP -> (epsilon, delta)
    (Canonne, Kamath, Steinke 2020, Prop. 12 / Cor. 13).  Uses numpy; import it explicitly.

The package ``__init__`` imports nothing, so ``import dpfast._core.validate`` stays cheap.
"""
