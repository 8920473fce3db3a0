"""dpfast: exact, secure differential privacy at numpy speed.

dpfast turns data about people into statistics you can publish under differential
privacy (DP): group-by tables from raw records (``dpfast.tables``), numpy-style
histograms, noise for arrays you computed yourself (``dpfast.discrete_laplace``,
``dpfast.gaussian``, ...), a privacy budget that refuses an overspend
(``dpfast.Budget``), and accountants that say what a sequence of releases cost
(``dpfast.RdpAccountant``, ``dpfast.PldAccountant``). Every sampler draws exactly its
target distribution, from a cryptographic random number generator (ChaCha20).

Examples
--------
Count visits per city from raw records (many rows per person), at epsilon = 1:

>>> import numpy as np
>>> import dpfast
>>> r = np.random.default_rng(0)
>>> city = r.choice(["Lyon", "Nice", "Paris"], 5000)  # one row per visit
>>> person = r.integers(0, 2000, 5000)                # who made it (the privacy unit)
>>> visits = dpfast.tables.count(city, person, epsilon=1.0, max_partitions=2,
...                              domain=["Lyon", "Nice", "Paris"])
>>> visits.keys
array(['Lyon', 'Nice', 'Paris'], dtype='<U5')
>>> lo, hi = visits.confidence_interval(0.05)         # visits.counts lies in [lo, hi]

``visits.counts`` holds the noisy counts, ``visits.to_pandas()`` the table with its 95%
intervals. The first call compiles dpfast's kernels once (cached afterwards).

Where to go next
----------------
* ``help(dpfast.tables.count)``, ``help(dpfast.Budget)``, ``help(dpfast.discrete_laplace)``:
  every public function documents its parameters and, in a *Privacy* section, the
  guarantee it gives.
* ``python -m dpfast demo`` runs a worked release end to end; ``dpfast --help`` lists the
  command-line tools.
* The documentation site (user guide, API reference, security model, benchmarks) is in
  the source tree's ``docs/`` folder; build it with
  ``pip install -e '.[docs]' && python -m sphinx -b html docs docs/_build/html``.

Main modules: ``dpfast.tables`` (releases from records), ``dpfast.noise`` (exact
samplers), ``dpfast.mechanisms``, ``dpfast.selection``, ``dpfast.local`` (local DP),
``dpfast.budget``, ``dpfast.accounting``, ``dpfast.histogram``, ``dpfast.dask``
(clusters), ``dpfast.compat`` (diffprivlib and PipelineDP backends).
"""

# Implementation note: public names are loaded lazily from their modules (the _PUBLIC
# and _SUBMODULES maps below, through dpfast._core.lazy.attach), so that ``import dpfast``
# stays cheap and numba kernels compile (or load from cache) only when first used.

from __future__ import annotations

from typing import TYPE_CHECKING

from dpfast._core.lazy import attach as _attach

__version__ = "0.1.0"

# numba's threading layer, before any kernel can run: TBB made loadable, a
# NUMBA_THREADING_LAYER numba cannot load refused here (numba is imported only to check an
# explicit choice)
from dpfast import _parallel as _parallel  # noqa: E402

if TYPE_CHECKING:  # the lazy namespace, visible to type checkers and IDEs
    from dpfast import accounting as accounting
    from dpfast import budget as budget
    from dpfast import compat as compat
    from dpfast import guidelines as guidelines
    from dpfast import local as local
    from dpfast import mechanisms as mechanisms
    from dpfast import noise as noise
    from dpfast import planning as planning
    from dpfast import random as random
    from dpfast import selection as selection
    from dpfast import session as session
    from dpfast import tables as tables
    from dpfast.accounting import (
        Accountant,
        NeighbouringRelationError,
        PldAccountant,
        PureDpAccountant,
        RdpAccountant,
        UnsupportedEventError,
        ZcdpAccountant,
        advanced_composition,
        calibrate_noise_multiplier,
        dpsgd_epsilon,
        optimal_composition,
        parallel_composition,
    )
    from dpfast.accounting import events as events
    from dpfast.budget import (
        Budget,
        BudgetExceededError,
        LedgerError,
    )
    from dpfast.mechanisms import (
        DiscreteGaussianMechanism,
        DiscreteLaplaceMechanism,
        GaussianMechanism,
        LaplaceMechanism,
        SnappingMechanism,
    )
    from dpfast.mechanisms import dpsgd as dpsgd
    from dpfast.noise import (
        discrete_gaussian,
        discrete_laplace,
        gaussian,
        granularity,
        laplace,
        snapping,
        snapping_epsilon,
    )
    from dpfast.planning import (
        accuracy_to_epsilon,
        epsilon_to_accuracy,
    )
    from dpfast.random import (
        ChaCha20,
        Generator,
        RngLike,
        default_rng,
        keystream,
    )
    from dpfast.selection import (
        exponential,
        exponential_event,
        permute_and_flip,
        permute_and_flip_event,
        report_noisy_max,
        report_noisy_max_event,
        top_k,
        top_k_event,
    )
    from dpfast.session import Session
    from dpfast.tables import metrics as metrics
    from dpfast.tables.histogram import (
        histogram,
        histogram2d,
        histogramdd,
    )

# name -> module that defines it
_PUBLIC: dict[str, str] = {
    # randomness
    "Generator": "dpfast.random",
    "ChaCha20": "dpfast.random",
    "default_rng": "dpfast.random",
    # samplers / noising
    "discrete_laplace": "dpfast.noise",
    "discrete_gaussian": "dpfast.noise",
    "laplace": "dpfast.noise",
    "gaussian": "dpfast.noise",
    "snapping": "dpfast.noise",
    "granularity": "dpfast.noise",
    "snapping_epsilon": "dpfast.noise",
    "keystream": "dpfast.random",
    # mechanisms
    "LaplaceMechanism": "dpfast.mechanisms",
    "DiscreteLaplaceMechanism": "dpfast.mechanisms",
    "GaussianMechanism": "dpfast.mechanisms",
    "DiscreteGaussianMechanism": "dpfast.mechanisms",
    "SnappingMechanism": "dpfast.mechanisms",
    # selection
    "exponential": "dpfast.selection",
    "permute_and_flip": "dpfast.selection",
    "report_noisy_max": "dpfast.selection",
    "top_k": "dpfast.selection",
    "exponential_event": "dpfast.selection",
    "permute_and_flip_event": "dpfast.selection",
    "report_noisy_max_event": "dpfast.selection",
    "top_k_event": "dpfast.selection",
    "RngLike": "dpfast.random",
    # accounting
    "Accountant": "dpfast.accounting",
    "UnsupportedEventError": "dpfast.accounting",
    "NeighbouringRelationError": "dpfast.accounting",
    "RdpAccountant": "dpfast.accounting",
    "ZcdpAccountant": "dpfast.accounting",
    "PureDpAccountant": "dpfast.accounting",
    "PldAccountant": "dpfast.accounting",
    "dpsgd_epsilon": "dpfast.accounting",
    "calibrate_noise_multiplier": "dpfast.accounting",
    "advanced_composition": "dpfast.accounting",
    "optimal_composition": "dpfast.accounting",
    "parallel_composition": "dpfast.accounting",
    # histograms (numpy-style)
    "histogram": "dpfast.tables.histogram",
    "histogram2d": "dpfast.tables.histogram",
    "histogramdd": "dpfast.tables.histogram",
    # budget
    "Budget": "dpfast.budget",
    "BudgetExceededError": "dpfast.budget",
    "LedgerError": "dpfast.budget",
    # sessions over a data store (the session extra: DuckDB, sqlglot)
    "Session": "dpfast.session",
    # planning (accuracy-first calibration)
    "accuracy_to_epsilon": "dpfast.planning",
    "epsilon_to_accuracy": "dpfast.planning",
}

# modules reachable as attributes (name -> module); every module listed here must exist
# (a test imports each one).  Three live below their package: "events", and the topic
# modules that moved into their layer ("dpsgd", "metrics")
_SUBMODULES: dict[str, str] = {
    **{name: f"dpfast.{name}" for name in (
        "random", "noise", "mechanisms", "selection", "local", "accounting", "budget",
        "tables", "guidelines", "planning", "dask", "compat", "session", "testing")},
    "events": "dpfast.accounting.events",
    "dpsgd": "dpfast.mechanisms.dpsgd",
    "metrics": "dpfast.tables.metrics",
}

# literal, so that type checkers see the re-exports (a test keeps it equal to _PUBLIC)
__all__ = [
    "Accountant",
    "Budget",
    "BudgetExceededError",
    "ChaCha20",
    "DiscreteGaussianMechanism",
    "DiscreteLaplaceMechanism",
    "GaussianMechanism",
    "Generator",
    "LaplaceMechanism",
    "LedgerError",
    "NeighbouringRelationError",
    "PldAccountant",
    "PureDpAccountant",
    "RdpAccountant",
    "RngLike",
    "Session",
    "SnappingMechanism",
    "UnsupportedEventError",
    "ZcdpAccountant",
    "accuracy_to_epsilon",
    "advanced_composition",
    "calibrate_noise_multiplier",
    "default_rng",
    "discrete_gaussian",
    "discrete_laplace",
    "dpsgd_epsilon",
    "epsilon_to_accuracy",
    "exponential",
    "exponential_event",
    "gaussian",
    "granularity",
    "histogram",
    "histogram2d",
    "histogramdd",
    "keystream",
    "laplace",
    "optimal_composition",
    "parallel_composition",
    "permute_and_flip",
    "permute_and_flip_event",
    "report_noisy_max",
    "report_noisy_max_event",
    "snapping",
    "snapping_epsilon",
    "top_k",
    "top_k_event",
    "__version__",
]


# __all__ above stays literal (for type checkers); a test keeps it equal to _PUBLIC
__getattr__, __dir__, _ = _attach(__name__, _PUBLIC, _SUBMODULES)
del _
