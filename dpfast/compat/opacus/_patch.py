"""install() / uninstall() / patched(): route Opacus's noise and Poisson sampling to dpfast."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import numpy as np
import opacus
import opacus.optimizers  # noqa: F401  (imports every optimizer module)
import torch
from opacus import privacy_engine as _pe
from opacus.accountants import registry as _registry
from opacus.optimizers import optimizer as _opt
from opacus.optimizers import optimizer_fast_gradient_clipping as _fgc
from opacus.utils import uniform_sampler as _us

import dpfast
from dpfast.compat._patching import Patches
from dpfast.compat.opacus import _accountant, _noise

__all__ = ["install", "uninstall", "patched", "is_installed", "generator", "poisson_mask"]

_PATCHES = Patches()
_STATE: dict[str, Any] = {"gen": None}

# the originals, taken before anything is patched (delegation for noise_multiplier == 0)
_ORIGINAL_GENERATE_NOISE = _opt._generate_noise
_ORIGINAL_ADD_NOISE = {cls: vars(cls)["add_noise"]
                       for cls in (_opt.DPOptimizer, _fgc.DPOptimizerFastGradientClipping)}
_ORIGINAL_ENGINE_INIT = vars(_pe.PrivacyEngine)["__init__"]

# optimizer modules that bind ``_generate_noise`` by name (``from .optimizer import ...``)
_NOISE_MODULES = ("optimizer", "optimizer_fast_gradient_clipping", "ddp_perlayeroptimizer",
                  "adaclipoptimizer", "fsdpoptimizer_fast_gradient_clipping")


def generator() -> Any:
    """The :class:`dpfast.Generator` the patched Opacus draws from.

    Raises
    ------
    RuntimeError
        When :func:`install` is not active.
    """
    return _current()


def _current() -> Any:
    gen = _STATE["gen"]
    if gen is None:
        raise RuntimeError("dpfast.compat.opacus is not installed; call install() first")
    return gen


# ------------------------------------------------------------------ replacements: noise
def _generate_noise(std: float, reference: torch.Tensor, generator: Any = None,
                    secure_mode: bool = False) -> torch.Tensor:
    """Opacus's ``_generate_noise`` drawing ``g Z`` from dpfast (``generator`` and
    ``secure_mode`` are ignored: the noise is always exact and from ChaCha20)."""
    return _noise.noise_tensor(std, reference, _current())


def _n_params(params: list[torch.Tensor]) -> int:
    return max(sum(int(p.numel()) for p in params), 1)


def _fused_add_noise(self: Any) -> None:
    """``add_noise`` of ``DPOptimizer`` and ``DPOptimizerFastGradientClipping``:
    ``p.grad = round_g(p.summed_grad) + g Z`` in one exact step per parameter."""
    z = getattr(self, "_adjusted_noise_multiplier", self.noise_multiplier)
    if float(z) * float(self.max_grad_norm) == 0:
        for cls in type(self).__mro__:  # Opacus's own (its noise is zeros then)
            if cls in _ORIGINAL_ADD_NOISE:
                return _ORIGINAL_ADD_NOISE[cls](self)
    c = _noise.clip_norm_of(self.max_grad_norm, getattr(self, "max_grad_norms", None))
    sigma, g = _noise.fused_sigma(float(z), c, _n_params(self.params))
    gen = _current()
    for p in self.params:
        _opt._check_processed_flag(p.summed_grad)
        p.grad = _noise.noisy_tensor(p.summed_grad, sigma, g, gen).view_as(p)
        _opt._mark_as_processed(p.summed_grad)


# ------------------------------------------------------------------ replacements: sampling
def poisson_mask(n: int, rate: float, gen: Any) -> np.ndarray:
    """``n`` independent exact Bernoulli(``rate``) draws (``rate`` as the binary rational
    its float encodes), from 64-bit ChaCha20 words compared with ``rate``'s expansion;
    a word equal to its prefix (probability ``2**-64``) continues with further words."""
    q = float(rate)
    if not 0 <= q <= 1:  # NaN included
        raise ValueError(f"sample_rate must lie in [0, 1], got {rate!r}")
    r = Fraction(q)
    if r == 1:
        return np.ones(n, bool)
    scaled = r * 2**64
    t = int(scaled)  # floor
    words = np.asarray(gen.random_raw(n), np.uint64).reshape(-1)
    mask = words < np.uint64(t)
    if scaled != t:
        for i in np.flatnonzero(words == np.uint64(t)):
            rest = scaled - t  # in (0, 1): keep comparing with the next 64 bits
            while True:
                rest *= 2**64
                w, k = int(gen.random_raw()), int(rest)
                if w != k or rest == k:
                    mask[i] = w < k
                    break
                rest -= k
    return mask


def _uniform_iter(self: Any) -> Iterator[list[int]]:
    gen = _current()
    for _ in range(self.steps):
        yield np.flatnonzero(poisson_mask(self.num_samples, self.sample_rate, gen)).tolist()


def _distributed_iter(self: Any) -> Iterator[torch.Tensor]:
    if self.shuffle:  # the public split of the data among replicas, as in Opacus
        g = torch.Generator()
        g.manual_seed(self.shuffle_seed + self.epoch)
        indices = torch.randperm(self.total_size, generator=g)
    else:
        indices = torch.arange(self.total_size)
    indices = indices[self.rank:self.total_size:self.num_replicas]
    gen = _current()
    for _ in range(self.num_batches):
        chosen = np.flatnonzero(poisson_mask(self.num_samples, self.sample_rate, gen))
        if chosen.size:
            yield indices[torch.from_numpy(chosen)]


# ------------------------------------------------------------------ replacements: engine
def _engine_init(self: Any, *, accountant: str = "prv", secure_mode: bool = False) -> None:
    """``PrivacyEngine.__init__`` that accepts ``secure_mode=True`` without torchcsprng."""
    if not secure_mode or importlib.util.find_spec("torchcsprng") is not None:
        return _ORIGINAL_ENGINE_INIT(self, accountant=accountant, secure_mode=secure_mode)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Secure RNG turned off")
        _ORIGINAL_ENGINE_INIT(self, accountant=accountant, secure_mode=False)
    self.secure_mode = True
    # used only by Opacus code that dpfast does not replace: the shuffling of a data
    # loader made with poisson_sampling=False (see the module docstring)
    rng = torch.Generator()
    rng.manual_seed(int.from_bytes(os.urandom(8), "little"))
    self.secure_rng = rng


# ------------------------------------------------------------------ install
def _targets() -> list[tuple[Any, str, Any]]:
    out: list[tuple[Any, str, Any]] = []
    for name in _NOISE_MODULES:
        mod = sys.modules.get(f"opacus.optimizers.{name}")
        if mod is not None and vars(mod).get("_generate_noise") is _ORIGINAL_GENERATE_NOISE:
            out.append((mod, "_generate_noise", _generate_noise))
    for cls in _ORIGINAL_ADD_NOISE:
        out.append((cls, "add_noise", _fused_add_noise))
    out.append((_us.UniformWithReplacementSampler, "__iter__", _uniform_iter))
    out.append((_us.DistributedUniformWithReplacementSampler, "__iter__", _distributed_iter))
    out.append((_pe.PrivacyEngine, "__init__", _engine_init))
    accountants = dict(_registry._ACCOUNTANTS)
    accountants.update(_accountant.REGISTRY)
    out.append((_registry, "_ACCOUNTANTS", accountants))
    return out


def install(key: bytes | None = None) -> None:
    """Make Opacus draw its noise and its Poisson batches from dpfast.

    Parameters
    ----------
    key : bytes, optional
        32-byte key for a replayable run (tests and audits only: **whoever holds the key
        can remove the noise**).  Default: keyed from ``os.urandom``.

    Notes
    -----
    Calls nest (each needs one :func:`uninstall`); the outermost call's key is used.  The
    accountants ``"dpfast_pld"`` and ``"dpfast_rdp"`` are registered with Opacus for as
    long as the patches are installed (in a copy of Opacus's registry: an accountant
    registered meanwhile is gone after the last :func:`uninstall`).  Every replacement and
    its guarantee is described in :mod:`dpfast.compat.opacus`.

    Privacy
    -------
    Add/remove-one neighbouring relation (Opacus's).  A DP-SGD step of the fused path
    releases ``round_g(S) + g Z`` with ``Z`` a vector of independent discrete Gaussians of
    parameter ``sigma / g`` and ``sigma >= z (C + sqrt(d) g)``: the L2 distance of the grid
    points of neighbouring clipped sums is at most ``C + sqrt(d) g``, so each step is the
    (discrete) Gaussian mechanism with noise multiplier ``>= z``; with Poisson sampling at
    exactly rate ``q`` a run of ``T`` steps is ``SelfComposed(PoissonSampled(Gaussian(z),
    q), T)`` (Abadi et al. 2016), what Opacus's and dpfast's accountants bound.  As for
    :func:`dpfast.dpsgd.clip_and_noise <dpfast.mechanisms.dpsgd.clip_and_noise>`, the
    subsampled-Gaussian analysis is proven for continuous noise; the discrete Gaussian used
    has ``sigma / g >= 2**39`` grid steps (CKS20; the convention of OpenDP's and Google's
    secure samplers).  Casting to the parameter dtype and everything after is
    post-processing.
    """
    if key is not None:
        key = bytes(key)

    def start() -> None:
        _STATE["gen"] = dpfast.default_rng(key=key)

    _PATCHES.install(_targets, before=start)


def uninstall() -> None:
    """Undo one :func:`install`; the last one restores Opacus exactly (the same function
    objects and the same accountant registry as before)."""
    _PATCHES.uninstall(after=lambda: _STATE.update(gen=None))


def is_installed() -> bool:
    """Whether Opacus is currently patched."""
    return _PATCHES.installed


@contextlib.contextmanager
def patched(key: bytes | None = None) -> Iterator[None]:
    """``with patched(): ...`` -- :func:`install` for the block, then :func:`uninstall`."""
    install(key)
    try:
        yield
    finally:
        uninstall()


_ = opacus  # the package itself must be importable before the submodules
