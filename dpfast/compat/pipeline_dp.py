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

Not replaced: contribution bounding's sampling (PipelineDP's numpy/``random`` sampling of
rows, not noise), quantile trees (PERCENTILE: PyDP's C++ quantile tree adds its own noise
inside C++), ``apply_laplace_mechanism`` / ``apply_gaussian_mechanism`` called directly.
``install(key=...)`` makes the noise replayable (tests only: whoever holds the key can
remove the noise).
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np

import dpfast
from dpfast._core.rounding import float_down, float_up
from dpfast.compat._patching import Patches
from dpfast.compat._random_state import NoiseBuffer, SharedNoiseBuffers, words_for

try:
    import pipeline_dp as _pdp
    from pipeline_dp import aggregate_params as _ap
    from pipeline_dp import dp_computations as _dc
    from pipeline_dp import partition_selection as _ps
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("dpfast.compat.pipeline_dp needs pipeline-dp: "
                      "pip install 'dpfast[compat]'") from exc

__all__ = ["install", "uninstall", "patched", "is_installed"]

_INSTALLED = Patches()
_STATE: dict[str, Any] = {"gen": None}
_EXACT_INT = float(2 ** 53)
# scalar noise blocks shared by every mechanism object (PipelineDP builds one per partition
# and metric); keyed by the law, its parameters and the installed generator
_SCALAR_BUFFERS = SharedNoiseBuffers()


def _gen() -> Any:
    return _STATE["gen"]


def _on_integers(x: np.ndarray) -> bool:
    if x.ndim == 0:  # a scalar (the per-partition path): no array reductions
        v = float(x)
        return math.isfinite(v) and v == round(v) and abs(v) < _EXACT_INT
    return bool(np.all(np.isfinite(x)) and np.all(x == np.rint(x))
                and np.all(np.abs(x) < _EXACT_INT))


# ----------------------------------------------------------------------------- additive noise
@functools.lru_cache(maxsize=4096)
def _laplace_params(eps: float, sens: float, m: int) -> tuple[float, float]:
    """(scale, g) of :class:`dpfast.LaplaceMechanism` (cached: no per-call calibration)."""
    mech = dpfast.LaplaceMechanism(epsilon=eps, sensitivity=sens, max_changed=m)
    return mech.scale, mech.granularity


@functools.lru_cache(maxsize=4096)
def _laplace_epsilon(sens: float, b: float) -> float:
    """PipelineDP's ``ε = Δ₁ / b`` rounded down (cached: a new mechanism per partition)."""
    return float_down(Fraction(sens) / Fraction(b))


@functools.lru_cache(maxsize=4096)
def _gaussian_params(sigma: float, sens: float, m: int, eps: float, delta: float
                     ) -> tuple[float, float]:
    """(σ_final, g): RDP-preserving inflation of σ for the grid, and at least dpfast's
    rigorous (ε, δ) calibration when (ε, δ) are known (cached by parameters)."""
    sigma_cal, g = 0.0, dpfast.granularity(sigma)
    if eps > 0 and 0 < delta < 1 and m <= (1 << 20):
        with contextlib.suppress(ValueError):
            mech = dpfast.GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens,
                                            max_changed=m)
            sigma_cal, g = mech.sigma, mech.granularity
    root_m = math.isqrt(m - 1) + 1 if m > 1 else 1  # ceil(sqrt(m))
    inflated = float_up(Fraction(sigma) * (Fraction(sens) + root_m * Fraction(g))
                         / Fraction(sens))
    return max(sigma_cal, inflated), g


def _draw(kind: str, scale: float, g: float, n: int, gen: Any = None) -> np.ndarray:
    fn = dpfast.laplace if kind == "laplace" else dpfast.gaussian
    return fn(np.zeros(n), scale, rng=_gen() if gen is None else gen, granularity=g)


def _scalar_noise(kind: str, scale: float, g: float) -> float:
    """One grid noise value from the shared pre-drawn blocks of the installed generator."""
    gen = _gen()
    return float(_SCALAR_BUFFERS.take((kind, scale, g, id(gen)),
                                      lambda n: _draw(kind, scale, g, n, gen)))


def _noise_params(mech: Any, x: np.ndarray) -> tuple[str, float, float] | None:
    """(kind, scale, grid) for ``mech`` on ``x``, or None to keep PyDP's noise."""
    l0 = getattr(mech, "_dpfast_l0", None)
    # (changed coordinates, whether the grid must be <= 1): integers lie on every grid g <= 1
    candidates = [(1, True)] if _on_integers(x) else []
    if l0 is not None:
        candidates.append((int(l0) * max(1, x.size), False))
    sens = float(mech.sensitivity)
    for m, fine in candidates:
        if isinstance(mech, _dc.LaplaceMechanism):
            params = ("laplace", *_laplace_params(
                _laplace_epsilon(sens, float(mech.noise_parameter)), sens, m))
        else:
            pydp = mech._mechanism
            params = ("gaussian", *_gaussian_params(float(mech.std), sens, m,
                                                    float(pydp.epsilon), float(pydp.delta)))
        if not fine or params[2] <= 1:
            return params
    return None


def _add_noise(self: Any, value: Any) -> Any:
    """dpfast replacement of ``AdditiveMechanism.add_noise`` (see the module docstring)."""
    x = np.asarray(value, dtype=np.float64)
    if self.sensitivity == 0:
        return x.copy() if isinstance(value, np.ndarray) else float(x)
    params = _noise_params(self, x)
    if params is None:
        return _ORIGINAL["add_noise"](self, value)
    kind, scale, g = params
    if isinstance(value, np.ndarray):
        fn = dpfast.laplace if kind == "laplace" else dpfast.gaussian
        return fn(x, scale, rng=_gen(), granularity=g)
    noise = _scalar_noise(kind, scale, g)
    q = float(x) / g
    if not math.isfinite(q):
        raise ValueError("value / granularity overflows; value is too large for this noise")
    return float(round(q)) * g + float(noise)


def _create_additive_mechanism(mechanism_spec: Any, sensitivities: Any) -> Any:
    mech = _ORIGINAL["create_additive_mechanism"](mechanism_spec, sensitivities)
    if sensitivities.l0 is not None:
        mech._dpfast_l0 = int(sensitivities.l0)
    return mech


def _vector_sensitivity(vec: np.ndarray, p: Any) -> float:
    l0, noise, norm = p.l0_sensitivity, p.noise_kind, p.norm_kind
    if noise == _ap.NoiseKind.LAPLACE:
        if norm == _ap.NormKind.L1:
            return p.max_norm * l0
        if norm == _ap.NormKind.Linf:
            return p.max_norm * vec.size * l0
        raise ValueError(f"Unknown or invalid norm kind {norm} for Laplace mechanism.")
    if noise == _ap.NoiseKind.GAUSSIAN:
        if norm == _ap.NormKind.L2:
            return p.max_norm * math.sqrt(l0)
        if norm == _ap.NormKind.Linf:
            return p.max_norm * math.sqrt(vec.size) * math.sqrt(l0)
        raise ValueError(f"Unknown or invalid norm kind {norm} for Gaussian mechanism.")
    raise ValueError("Unknown noise kind.")


def _add_noise_vector(vec: np.ndarray, noise_params: Any) -> np.ndarray:
    """dpfast replacement of ``dp_computations.add_noise_vector``: PipelineDP's sensitivity,
    one vectorized dpfast mechanism with ``max_changed = l0 · d`` (rigorous)."""
    x = np.asarray(vec, dtype=np.float64)
    sens = _vector_sensitivity(x, noise_params)
    m = int(math.ceil(noise_params.l0_sensitivity)) * max(1, x.size)
    if noise_params.noise_kind == _ap.NoiseKind.LAPLACE:
        mech = dpfast.LaplaceMechanism(epsilon=noise_params.eps, sensitivity=sens, max_changed=m)
        return mech(x, rng=_gen())
    eps, delta = noise_params.eps, noise_params.delta
    sigma, g = _gaussian_params(_dc.compute_sigma(eps, delta, sens), sens, m, eps, delta)
    return dpfast.gaussian(x, sigma, rng=_gen(), granularity=g)


def _add_random_noise(value, eps, delta, l0_sensitivity, linf_sensitivity, noise_kind):
    """dpfast replacement of ``dp_computations._add_random_noise`` (mean/variance parts)."""
    m = int(math.ceil(l0_sensitivity))
    if noise_kind == _ap.NoiseKind.LAPLACE:
        sens = float(_dc.compute_l1_sensitivity(l0_sensitivity, linf_sensitivity))
        kind, (scale, g) = "laplace", _laplace_params(float(eps), sens, m)
    elif noise_kind == _ap.NoiseKind.GAUSSIAN:
        sens = float(_dc.compute_l2_sensitivity(l0_sensitivity, linf_sensitivity))
        kind, (scale, g) = "gaussian", _gaussian_mech_params(float(eps), float(delta), sens, m)
    else:
        raise ValueError("Noise kind must be either Laplace or Gaussian.")
    v = float(value)
    if sens == 0 or not math.isfinite(v):
        return v
    q = v / g
    if not math.isfinite(q):
        raise ValueError("value / granularity overflows; value is too large for this noise")
    return float(round(q)) * g + _scalar_noise(kind, scale, g)


@functools.lru_cache(maxsize=4096)
def _gaussian_mech_params(eps: float, delta: float, sens: float, m: int) -> tuple[float, float]:
    """(sigma, g) of :class:`dpfast.GaussianMechanism` (cached by parameters)."""
    mech = dpfast.GaussianMechanism(epsilon=eps, delta=delta, sensitivity=sens, max_changed=m)
    return mech.sigma, mech.granularity


# ----------------------------------------------------------------------------- exponential
def _exponential_apply(self: Any, eps: float, inputs_to_score_col: list) -> Any:
    """dpfast replacement of ``ExponentialMechanism.apply``: exact exponential mechanism."""
    f = self._scoring_function
    scores = np.array([f.score(k) for k in inputs_to_score_col], dtype=np.float64)
    i = dpfast.exponential(scores, epsilon=eps, sensitivity=f.global_sensitivity,
                           monotonic=bool(f.is_monotonic), rng=_gen())
    return inputs_to_score_col[int(i)]


# ----------------------------------------------------------------------------- thresholding
def _bernoulli(p: float, gen: Any = None) -> bool:
    """Exactly Bernoulli(p) for the float p, on ChaCha20 words (lazy binary comparison)."""
    r = Fraction(p)
    if r <= 0:
        return False
    if r >= 1:
        return True
    words = words_for(_gen() if gen is None else gen)  # blocks of words, handed out once
    while True:
        r *= 1 << 64
        d = int(r)
        r -= d
        w = words.next()
        if w != d:
            return w < d
        if r == 0:
            return False


class _Strategy:
    """A PyDP partition-selection strategy whose random decisions are drawn by dpfast."""

    def __init__(self, inner: Any, name: str, epsilon: float, delta: float, l0: int) -> None:
        self._inner = inner
        self._name = name
        self._kind = None
        # the generator installed now: the strategy keeps working after uninstall()
        self._gen = _gen()
        if name == "laplace":
            self._kind, self._scale = "laplace", l0 / epsilon
        elif name == "gaussian":
            from pydp.algorithms import numerical_mechanisms as _nm
            self._kind = "gaussian"
            self._scale = _nm.GaussianMechanism(epsilon, delta / 2, math.sqrt(l0)).std
        if self._kind is not None:
            # counts are integers: a grid g <= 1 (a power of two) holds them exactly
            self._g = min(dpfast.granularity(self._scale), 1.0)
            self._buffer = NoiseBuffer()

    def __getattr__(self, name: str) -> Any:  # threshold, epsilon, delta, probability_of_keep
        return getattr(self._inner, name)

    def noised_value_if_should_keep(self, num_privacy_units: int) -> float | None:
        n = int(num_privacy_units)
        if self._kind is None:
            keep = _bernoulli(self._inner.probability_of_keep(n), self._gen)
            return float(n) if keep else None
        kind, scale, g, gen = self._kind, self._scale, self._g, self._gen
        noise = self._buffer.take((kind, scale, g), lambda k: _draw(kind, scale, g, k, gen))
        value = float(n) + float(noise)
        return value if value >= self._inner.threshold + self._g else None

    def should_keep(self, num_privacy_units: int) -> bool:
        return self.noised_value_if_should_keep(num_privacy_units) is not None


def _create_partition_selection_strategy(strategy, epsilon, delta, max_partitions_contributed,
                                         pre_threshold=None):
    if pre_threshold is None:
        inner = _ORIGINAL["create_partition_selection_strategy"](
            strategy, epsilon, delta, max_partitions_contributed)
        name = _ps.PARTITION_STRATEGY_ENUM_TO_STR[strategy]
        return _Strategy(inner, name, epsilon, delta, int(max_partitions_contributed))
    wrapped = _ORIGINAL["create_partition_selection_strategy"](
        strategy, epsilon, delta, max_partitions_contributed, pre_threshold)
    base = _create_partition_selection_strategy(strategy, epsilon, delta,
                                                max_partitions_contributed)
    return _PreThresholded(wrapped, base, int(pre_threshold))


class _PreThresholded:
    """PyDP's pre-thresholding: a partition with fewer than ``pre_threshold`` privacy units
    is dropped; otherwise the base strategy decides on ``n - pre_threshold + 1`` units
    (PyDP's ``probability_of_keep`` is exactly that shift), drawn here by :class:`_Strategy`.
    """

    def __init__(self, wrapped: Any, base: _Strategy, pre_threshold: int) -> None:
        self._wrapped = wrapped  # PyDP's object: its attributes and probability_of_keep
        self._base = base
        self.pre_threshold = pre_threshold

    def __getattr__(self, name: str) -> Any:  # epsilon, delta, probability_of_keep, ...
        return getattr(self._wrapped, name)

    def should_keep(self, num_privacy_units: int) -> bool:
        n = int(num_privacy_units)
        return n >= self.pre_threshold and self._base.should_keep(n - self.pre_threshold + 1)


# ----------------------------------------------------------------------------- install
_ORIGINAL: dict[str, Any] = {
    "add_noise": _dc.AdditiveMechanism.add_noise,
    "create_additive_mechanism": _dc.create_additive_mechanism,
    "create_partition_selection_strategy": _ps.create_partition_selection_strategy,
}
_PATCHES: list[tuple[Any, str, Any]] = [
    (_dc.AdditiveMechanism, "add_noise", _add_noise),
    (_dc, "create_additive_mechanism", _create_additive_mechanism),
    (_dc, "add_noise_vector", _add_noise_vector),
    (_dc, "_add_random_noise", _add_random_noise),
    (_dc.ExponentialMechanism, "apply", _exponential_apply),
    (_ps, "create_partition_selection_strategy", _create_partition_selection_strategy),
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
        _SCALAR_BUFFERS.clear()
        _STATE["gen"] = dpfast.default_rng(key=key)

    _INSTALLED.install(lambda: _PATCHES, before=start)


def uninstall() -> None:
    """Undo one :func:`install` (the last one restores PipelineDP exactly)."""
    _INSTALLED.uninstall(after=lambda: _STATE.update(gen=None))


def is_installed() -> bool:
    """Whether PipelineDP is currently patched."""
    return _INSTALLED.installed


@contextlib.contextmanager
def patched(key: bytes | None = None) -> Iterator[None]:
    """``with patched(): ...`` -- :func:`install` for the block, then :func:`uninstall`."""
    install(key)
    try:
        yield
    finally:
        uninstall()


_ = _pdp  # the package itself must be importable (and initialised) before the submodules
