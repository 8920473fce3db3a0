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

Replaced (diffprivlib's names, installed by :func:`install`): ``Laplace``,
``LaplaceTruncated``, ``LaplaceFolded``, ``LaplaceBoundedDomain``, ``LaplaceBoundedNoise``
(exact grid truncated Laplace), ``Geometric``, ``GeometricTruncated``, ``GeometricFolded``,
``Gaussian`` (the classic one: diffprivlib's σ on the secure grid, certified), ``GaussianAnalytic``,
``GaussianDiscrete``, ``Staircase`` (exact discrete staircase on a grid), ``Snapping``,
``Exponential``, ``PermuteAndFlip``, ``Binary``, ``ExponentialCategorical``,
``ExponentialHierarchical``, ``Uniform`` and the tools ``histogram``/``histogramdd``.  The
models' and tools' own numpy draws (tree thresholds, shuffles, forest seeds, k-means centres,
``quantile``'s uniform) come from a numpy ``RandomState`` over dpfast's ChaCha20
(:mod:`~dpfast.compat.diffprivlib._numpy_rng`: ``check_random_state`` is rebound in
``diffprivlib.models.*`` and ``diffprivlib.tools.*``).

Not replaced (diffprivlib's own class runs; refused rather than weakened): ``Vector``
(objective perturbation, Chaudhuri et al. 2011: its privacy proof needs a continuous noise
density -- the Jacobian of the map from the noise to the minimiser -- which no grid or exact
discrete law provides) and ``Bingham`` (Kent et al.'s rejection sampler of a continuous
Bingham law on the sphere: no exact or certified sampler is known).  When a model hands them
its ``RandomState`` (``LogisticRegression``, ``PCA``), their float draws run on ChaCha20 bits.

Drop-in check: diffprivlib 0.6.6's own complete test suite (817 tests, from its sdist) runs
with :func:`install` active for the whole session (``pytest -p
dpfast.compat.diffprivlib._pytest_plugin``; tests/test_compat_diffprivlib_suite.py).  811
pass; the six that fail are the intentional differences below (:data:`DIFFERENCES`, one
table, also in docs/design.md), each where exactness or a safe-side calibration requires it,
or a statistical test that the exact sampler's bits fail for their fixed seed:

* ``tests/mechanisms/test_Laplace.py::TestLaplace::test_variance``
  exactness: variance() is the exact variance of the grid Laplace noise, whose scale is (1
  + g/Δ) times diffprivlib's to pay for the grid rounding: 2.000000000007 instead of 2.0

* ``tests/mechanisms/test_GaussianDiscrete.py::TestGaussianDiscrete::test_sanity_scale``
  rigorous calibration: sigma = 1.9573 for (eps=3, delta=4.009e-10) satisfies Canonne,
  Kamath & Steinke 2020 Thm. 7 (delta = 3.8e-10); diffprivlib's bisection stops at 2.0
  (Thm. 7's delta is not monotone in sigma), the test asserts 2.0

* ``tests/mechanisms/test_LaplaceBoundedDomain.py::TestLaplaceBoundedDomain::
  test_effective_epsilon_same``
  safe-side rounding: the scale is found with a 1e-12 relative margin below epsilon, so
  effective_epsilon() is 0.999999999999 instead of exactly 1.0

* ``tests/mechanisms/test_Snapping.py::TestSnapping::test_immediately_above_zero_effective_epsilon``
  guarantee kept: Mironov's Thm. 1 bound (1 + 2^-49 B) / lambda <= eps with lambda < B has
  no solution for eps <= 2^-48, so such eps is refused (ValueError); diffprivlib's looser
  effective-epsilon formula accepts 2^-52

* ``tests/mechanisms/test_PermuteAndFlip.py::TestPermuteAndFlip::test_monotonic_distrib``
  different noise bits: the test asserts that 1000 draws from each of two neighbouring
  monotonic mechanisms give count ratios <= e^eps + 0.1 = 2.1, where the exact probability
  ratio of the last candidate is exactly e^eps = 2 (10.4% vs 20.8%); with independent bits
  it fails with probability 0.34 (multinomial simulation), plain diffprivlib passes for its
  one fixed MT19937 seed, the exact sampler's bits fail it

* ``tests/models/test_PCA.py::TestPCA::test_big_epsilon``
  different noise bits: the test asserts that the eps=10 PCA's score is within 0.005 of
  scikit-learn's for one seed; over seeds 0-39 plain diffprivlib fails it for 17 and the
  installed backend for 13 (the same scales: the eigenvalues' [0, inf) bounded-domain
  Laplace is calibrated as diffprivlib's), and seed 2 is one that fails here
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
from dpfast.compat.diffprivlib._categorical import (
    Binary,
    ExponentialCategorical,
    ExponentialHierarchical,
)
from dpfast.compat.diffprivlib._differences import DIFFERENCES
from dpfast.compat.diffprivlib._gaussian import Gaussian
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
from dpfast.compat.diffprivlib._staircase import Staircase
from dpfast.compat.diffprivlib._truncated import LaplaceBoundedNoise
from dpfast.compat.diffprivlib._uniform import Uniform

for _cls in (Laplace, LaplaceTruncated, LaplaceFolded, LaplaceBoundedDomain, Geometric,
             GeometricTruncated, GeometricFolded, GaussianAnalytic, GaussianDiscrete, Snapping,
             Exponential, PermuteAndFlip, Binary, ExponentialCategorical,
             ExponentialHierarchical, Uniform, Gaussian, Staircase, LaplaceBoundedNoise):
    _cls.__module__ = __name__  # repr: dpfast.compat.diffprivlib.Laplace(...)

__all__ = [
    "Laplace", "LaplaceTruncated", "LaplaceFolded", "LaplaceBoundedDomain", "Geometric",
    "GeometricTruncated", "GeometricFolded", "GaussianAnalytic", "GaussianDiscrete", "Snapping",
    "Exponential", "PermuteAndFlip", "Binary", "ExponentialCategorical",
    "ExponentialHierarchical", "Uniform", "Gaussian", "Staircase", "LaplaceBoundedNoise",
    "install", "uninstall", "patched", "is_installed", "histogram", "histogramdd",
    "REPLACEMENTS", "DIFFERENCES",
]
