"""Mechanisms with stated guarantees: calibrated noise, an event, and error bars.

Each mechanism turns a privacy target (``epsilon``, ``(epsilon, delta)`` or ``rho``) and
a sensitivity into a noise scale, states what one release costs as an event of
:mod:`dpfast.accounting.events` (which accountants and :class:`dpfast.Budget` consume),
draws the noise with the exact samplers of :mod:`dpfast.noise`, and reports the exact
half-width of a confidence interval for the noise::

    mech = dpfast.GaussianMechanism(epsilon=1.0, delta=1e-6, sensitivity=1.0)
    noisy = mech(values)                       # secure float noise on a 2^k grid
    half = mech.confidence_interval(0.05)      # |noise| <= half with prob. >= 95%

Calibration is exact or rounds to the safe side (noise up, epsilon up): every float
derived from a privacy parameter is computed with rational arithmetic (or with a
certified error bound) and rounded in the direction that keeps the stated guarantee.

The float mechanisms (:class:`LaplaceMechanism`, :class:`GaussianMechanism`) round
their input to a grid of spacing ``g`` (a power of two, ``scale / 2^40 <= g < scale /
2^39``, :func:`dpfast.granularity`) before
adding ``g`` times integer noise, which defeats floating-point attacks (Mironov 2012).
The rounding can move each coordinate by up to ``g/2``, so two neighbouring inputs can
differ after rounding by ``g`` more per differing coordinate; the calibration includes
this term.  ``max_changed`` (keyword-only, default 1) is the number of coordinates in
which neighbouring inputs may differ (1 for a scalar, or for a histogram where one
record changes one cell; pass ``x.size`` when every coordinate may change).

Modules: :mod:`.laplace` (Laplace, discrete Laplace), :mod:`.gaussian` (Gaussian, discrete
Gaussian), :mod:`.snapping` (snapping), :mod:`.dpsgd` (DP-SGD's clipping and noise,
public as ``dpfast.dpsgd``; not imported here); ``_common`` (checks, rounding, grid fixed
point, base class) and ``_tails`` (exact confidence intervals) are private.
"""

from __future__ import annotations

from dpfast.mechanisms.gaussian import DiscreteGaussianMechanism, GaussianMechanism
from dpfast.mechanisms.laplace import DiscreteLaplaceMechanism, LaplaceMechanism
from dpfast.mechanisms.snapping import SnappingMechanism

__all__ = [
    "LaplaceMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "DiscreteGaussianMechanism",
    "SnappingMechanism",
]
