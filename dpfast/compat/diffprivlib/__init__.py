"""dpfast as a drop-in backend for IBM's diffprivlib.

Mechanisms with diffprivlib's names, constructor signatures and behaviour -- each a subclass
of diffprivlib's own class, so ``isinstance`` checks keep working -- whose noise comes from
dpfast's exact samplers on ChaCha20, and whose ``randomise`` also takes numpy arrays::

    from dpfast.compat import diffprivlib as dpl
    mech = dpl.Geometric(epsilon=0.5)
    noisy = mech.randomise(np.array([10, 20, 30]))     # one call, independent noise

    dpl.install()                                      # diffprivlib's tools/models use dpfast
    hist, edges = diffprivlib.tools.histogram(x, epsilon=1.0, bins=100_000, range=(0, 1))
    dpl.uninstall()                                    # or: with dpl.patched(): ...

Where diffprivlib's float mechanism cannot be exact as specified (continuous Laplace and
Gaussian) the replacement is dpfast's secure grid version; each class's **Privacy** section
states the guarantee and how it differs.  ``random_state``: None keys from ``os.urandom``;
an int or a numpy generator gives a replayable key -- whoever knows the seed can remove the
noise (tests only).  Requires ``pip install 'dpfast[compat]'``.
"""

from __future__ import annotations

try:
    import diffprivlib as _diffprivlib  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpfast.compat.diffprivlib needs diffprivlib: "
                      "pip install 'dpfast[compat]'") from exc

from dpfast.compat.diffprivlib._additive import (
    GaussianAnalytic,
    GaussianDiscrete,
    Geometric,
    GeometricFolded,
    GeometricTruncated,
    Laplace,
    LaplaceFolded,
    LaplaceTruncated,
)
from dpfast.compat.diffprivlib._bounded import LaplaceBoundedDomain
from dpfast.compat.diffprivlib._patch import (
    REPLACEMENTS,
    histogram,
    histogramdd,
    install,
    is_installed,
    patched,
    uninstall,
)
from dpfast.compat.diffprivlib._select import Exponential, PermuteAndFlip, Snapping

for _cls in (Laplace, LaplaceTruncated, LaplaceFolded, LaplaceBoundedDomain, Geometric,
             GeometricTruncated, GeometricFolded, GaussianAnalytic, GaussianDiscrete, Snapping,
             Exponential, PermuteAndFlip):
    _cls.__module__ = __name__  # repr: dpfast.compat.diffprivlib.Laplace(...)

__all__ = [
    "Laplace", "LaplaceTruncated", "LaplaceFolded", "LaplaceBoundedDomain", "Geometric",
    "GeometricTruncated", "GeometricFolded", "GaussianAnalytic", "GaussianDiscrete", "Snapping",
    "Exponential", "PermuteAndFlip", "install", "uninstall", "patched", "is_installed", "histogram",
    "histogramdd", "REPLACEMENTS",
]
