"""dpfast as the noise backend of PipelineDP.

``install()`` / ``uninstall()`` (and ``with patched(): ...``) route PipelineDP's noise
through dpfast's exact samplers on ChaCha20, keeping every privacy parameter and
PipelineDP's budget accounting unchanged::

    import pipeline_dp
    from dpfast.compat import pipeline_dp as dpf_pdp
    dpf_pdp.install()            # DPEngine.aggregate(...) now draws its noise with dpfast

What is replaced, and the guarantee of each replacement (neighbouring relation:
PipelineDP's, one privacy unit added or removed, its contributions bounded by
``max_partitions_contributed`` = ``l0`` partitions and the per-partition bounds):

* **Scalar noise** (``AdditiveMechanism.add_noise``: count, privacy-id count, sum, mean's
  parts).  Laplace: :class:`dpfast.LaplaceMechanism` at PipelineDP's ``ε = Δ₁ / b`` (``b``
  PyDP's scale) with ``max_changed = l0``: the value is rounded to a power-of-two grid ``g
  ≈ b / 2^40`` and ``g`` times exact discrete Laplace noise added, the scale grown to
  ``(Δ₁ + l0 g) / ε`` so that the exact privacy loss stays ``<= ε`` -- **at least as strong**
  as stated, free of floating-point attacks.  Gaussian: grid discrete Gaussian with
  ``σ' = σ (Δ₂ + sqrt(l0) g) / Δ₂``: its Rényi divergences ``α Δ₂'² / (2σ'²)`` equal the
  continuous Gaussian's ``α Δ₂² / (2σ²)`` (Canonne, Kamath & Steinke 2020, Thm. 4), so
  RDP/zCDP accounting is unchanged; when PipelineDP gave ``(ε, δ)`` (naive accounting) σ is
  also at least :class:`dpfast.GaussianMechanism`'s rigorous ``(ε, δ)`` calibration.  **The
  one difference**: with PLD accounting (σ given, no ε), the tight ``(ε, δ)`` profile of the
  discrete Gaussian may exceed the continuous one by ``η <= (1 + e^ε) sqrt(l0) 0.8 g / σ'``
  (about ``1e-12``) in δ.  When PipelineDP gives only a total L1/L2 sensitivity (the
  ``max_contributions`` mode) ``l0`` is unknown: integer values (counts) are on the grid and
  need no rounding term; other values keep PyDP's own (secure, C++) noise.
* **Vector noise** (``add_noise_vector``): one vectorized call.  Laplace:
  :class:`dpfast.LaplaceMechanism` with PipelineDP's ε and sensitivity and ``max_changed =
  l0 · d`` -- rigorous ε-DP as stated.  Gaussian: PipelineDP's σ inflated for the ``l0 · d``
  grid roundings as above (same RDP curve), and at least dpfast's rigorous ``(ε, δ)``
  calibration where that exists (its discretisation term grows with ``d``: for very long
  vectors only the RDP statement and the η note apply).
* **Thresholding** (Laplace / Gaussian partition selection): PyDP's threshold ``T`` and
  noise parameter (Laplace ``b = l0 / ε``; Gaussian σ of the ``(ε, δ/2)`` Gaussian with
  ``Δ₂ = sqrt(l0)``) with grid noise on the integer count (no rounding), released iff
  ``n + noise >= T + g``.  Raising the threshold by one grid step makes every keep
  probability at most the continuous one (``P[1 + gZ >= T + g] <= P[1 + L >= T]`` for
  both noises), so the thresholding δ is at most PyDP's; the Laplace noise is exactly
  ``l0/b``-DP, the Gaussian noise has the continuous RDP curve (same η note as above).
  Truncated-geometric selection keeps with PyDP's ``probability_of_keep(n)`` decided
  exactly against ChaCha20 bits.  With ``pre_threshold`` ``p`` (PyDP's wrapper): a partition
  with ``n < p`` privacy units is dropped, otherwise the same replaced strategy decides on
  ``n - p + 1`` units -- PyDP's own definition (its ``probability_of_keep`` is that shift),
  so the guarantee is the base strategy's.
* **Exponential mechanism** (``ExponentialMechanism.apply``, numpy's ``default_rng().choice``
  on float probabilities in PipelineDP): :func:`dpfast.exponential`, exact, same ε,
  sensitivity and monotonicity.
* **PERCENTILE** (``combiners.QuantileCombiner``, PyDP's C++ quantile tree): replaced by
  :class:`dpfast.compat.pipeline_dp._quantile.QuantileCombiner`, the exact exponential
  mechanism over the 65536 cells of a public grid of ``[min_value, max_value]`` (PyDP's
  tree has 16^4 leaves), ``ε / (l0 · L)``-DP per partition and percentile (``L``
  percentiles, utility sensitivity ``max_contributions_per_partition``): the metric is
  pure ``ε``-DP, at least PipelineDP's ``(ε, δ)``.  With PLD accounting and Laplace
  noise, ``ε = ln(2 e^{√2/(2σ)} - 1)``, so that the mechanism is dominated by the
  sensitivity-1 Laplace mechanism the PLD accountant composes (with Gaussian noise the
  largest ``ε`` found whose randomized response is dominated by that Gaussian, checked on
  a grid).

Selection strategies and quantile combiners created while installed keep the generator of
that installation and keep working after :func:`uninstall`; PipelineDP's mechanism objects
then add PipelineDP's own noise again (their class is restored).

* **Contribution bounding's sampling** (``LocalBackend.sample_fixed_per_key``,
  ``sampling_utils.choose_from_list_without_replacement``: numpy's global Mersenne Twister in
  PipelineDP): a partial Fisher-Yates shuffle on ChaCha20 words with exactly uniform indices,
  :mod:`dpfast.compat.pipeline_dp._sampling` -- the same law (a uniformly random ordered
  subset of the bound's size), secure bits.  Beam's and Spark's backends sample with their
  own transforms (not replaced).

Not replaced: ``apply_laplace_mechanism`` / ``apply_gaussian_mechanism`` called directly.
``install(key=...)`` makes the noise (and the sampling) replayable (tests only: whoever
holds the key can remove the noise).

**Beam workers.**  ``install()`` patches the current process only.  PipelineDP on
Beam runs its combiners and partition selection in worker processes: list the worker hook
:mod:`dpfast.compat.pipeline_dp.worker` in the pipeline's options,
``PipelineOptions(beam_plugins=["dpfast.compat.pipeline_dp.worker"], ...)``: every Beam SDK
worker imports it at start-up, which calls :func:`install` there (a fresh ``os.urandom``
key per worker process: never two workers on one stream; a driver's ``key=`` is not
shipped, so keyed replay is per process only).  Checked on Beam's ``DirectRunner`` in
``multi_processing`` mode (tests/test_compat_pipeline_dp_beam.py).  Spark executors would
need the same import (not tested: Spark is not in the test extra).

**Drop-in check.**  PipelineDP's own ``tests/`` and ``analysis/`` run with :func:`install`
active for the whole session (tests/test_compat_pipeline_dp_suite.py, the plugin
``dpfast.compat.pipeline_dp._pytest_plugin``).  Every failure is one of these intentional
differences (:data:`DIFFERENCES`, node id: reason) or a test not run
(:data:`NOT_APPLICABLE`); the two tables follow (generated from those dictionaries).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pipeline_dp import combiners as _cb
from pipeline_dp import dp_computations as _dc
from pipeline_dp import partition_selection as _ps
from pipeline_dp import pipeline_backend as _pb
from pipeline_dp import sampling_utils as _su

import dpfast
from dpfast.compat.pipeline_dp import _state
from dpfast.compat.pipeline_dp._differences import DIFFERENCES, NOT_APPLICABLE
from dpfast.compat.pipeline_dp._noise import (
    _add_noise,
    _add_noise_vector,
    _add_random_noise,
    _create_additive_mechanism,
    _exponential_apply,
)
from dpfast.compat.pipeline_dp._quantile import QuantileCombiner
from dpfast.compat.pipeline_dp._sampling import (
    choose_from_list_without_replacement,
    sample_fixed_per_key,
)
from dpfast.compat.pipeline_dp._selection import _create_partition_selection_strategy

__all__ = ["install", "uninstall", "patched", "is_installed", "DIFFERENCES", "NOT_APPLICABLE"]


def _table(title: str, rows: dict[str, str]) -> str:
    return "\n".join([f"**{title}**", "", *(f"* ``{k}``: {v}." for k, v in rows.items()), ""])


__doc__ = "\n".join([__doc__ or "", _table("Intentional differences", DIFFERENCES),
                      _table("Not applicable (not run)", NOT_APPLICABLE)])

_PATCHES = [
    (_dc.AdditiveMechanism, "add_noise", _add_noise),
    (_dc, "create_additive_mechanism", _create_additive_mechanism),
    (_dc, "add_noise_vector", _add_noise_vector),
    (_dc, "_add_random_noise", _add_random_noise),
    (_dc.ExponentialMechanism, "apply", _exponential_apply),
    (_ps, "create_partition_selection_strategy", _create_partition_selection_strategy),
    (_cb, "QuantileCombiner", QuantileCombiner),
    (_pb.LocalBackend, "sample_fixed_per_key", sample_fixed_per_key),
    (_su, "choose_from_list_without_replacement", choose_from_list_without_replacement),
]


def install(key: bytes | None = None) -> None:
    """Route PipelineDP's noise through dpfast (see the module docstring).

    Parameters
    ----------
    key : bytes, optional
        32-byte key for replayable noise (tests and audits only: whoever holds the key can
        remove the noise).  Default: keyed from ``os.urandom``.

    Calls nest (each needs one :func:`uninstall`); the outermost call's key is used.
    """
    def start() -> None:
        # blocks drawn by an earlier installation's generator are discarded (their tag holds
        # id(generator), which a new generator may reuse: a keyed run must replay exactly)
        _state.SCALAR_BUFFERS.clear()
        _state.STATE["gen"] = dpfast.default_rng(key=key)

    _state.INSTALLED.install(lambda: _PATCHES, before=start)


def uninstall() -> None:
    """Undo one :func:`install` (the last one restores PipelineDP exactly)."""
    _state.INSTALLED.uninstall(after=lambda: _state.STATE.update(gen=None))


def is_installed() -> bool:
    """Whether PipelineDP is currently patched."""
    return _state.INSTALLED.installed


@contextlib.contextmanager
def patched(key: bytes | None = None) -> Iterator[None]:
    """``with patched(): ...`` -- :func:`install` for the block, then :func:`uninstall`."""
    install(key)
    try:
        yield
    finally:
        uninstall()
